#!/bin/bash
# Strangers on the peer port (issue 12, points 1 and 3). Idle connections
# from many processes and addresses (127.0.0.x) against a daemon with 128
# fds: the fd reserve, then the caps, hold them off while a client that was
# connected before keeps registering regions (passing fds) and transferring
# with checks, and new clients connect, register and transfer. 300 wrong-key
# handshakes write a bounded number of log lines, are counted in the
# metrics, get their address refused for a while, and then it works again.
# A request whose fd the kernel could not hand over (RLIMIT_NOFILE lowered
# under the daemon) fails alone with EMFILE; the client stays. Metrics
# scrapes add no info lines. Nothing here waits for a time: every check
# waits for a state.
. "$(dirname "$0")/lib.sh"

RAW="$top_builddir/tests/integration/test-peers-raw"
IO="$top_builddir/tests/integration/test-client-io"
CTL="$top_builddir/tools/ctl/rdmaproxyctl"
H="$HELPERS/hostile"
PROBE="$HELPERS/rp-probe"
SOCK="$T_DIR/rp.sock"
CONF="$T_DIR/rp.conf"
export RDMAPROXY_SOCKET="$SOCK"

PORT=$(free_ports 1)
# Where "friend" is said to listen: nobody does. Outside the ephemeral range,
# so the daemon's dial can never connect to itself.
DEAD=9
printf 'shared-secret-key-for-tests-0001\n' >"$T_DIR/good.key"
chmod 600 "$T_DIR/good.key"

# conf [LINES...]: a daemon listening for peers, "friend" configured; LINES go
# after [daemon] (a [peers] section).
conf() {
	{
		echo "[daemon]"
		echo "node_name = flood"
		echo "socket = $SOCK"
		echo "transport = tcp"
		echo "listen = 127.0.0.1:$PORT"
		echo "log_level = info"
		printf '%s\n' "$@"
		echo '[peer "friend"]'
		echo "address = 127.0.0.1:$DEAD"
		echo "key_file = $T_DIR/good.key"
	} >"$CONF"
}

# start NAME [NOFILE]: the daemon, log in $T_DIR/NAME.log, under RLIMIT_NOFILE.
start() {
	LOG="$T_DIR/$1.log"
	(
		[ -n "${2:-}" ] && ulimit -n "$2"
		exec "$RPD" --foreground -c "$CONF"
	) >"$LOG" 2>&1 &
	PID=$!
	T_PIDS+=("$PID")
	wait_for 30 "$PROBE" "$SOCK" status
}

metric() { # metric NAME{LABELS}: its value now, or nothing
	"$CTL" metrics 2>/dev/null | awk -v n="$1" '$1 == n { print $2; exit }'
}
metric_ge() { [ "$(metric "$1")" -ge "$2" ] 2>/dev/null; } # metric_ge NAME MIN
metric_is() { [ "$(metric "$1")" = "$2" ]; }
refused() { metric "rdmaproxy_peer_connections_refused_total{reason=\"$1\"}"; }
pending() { metric rdmaproxy_peer_unauthenticated_connections; }
lines() { wc -l <"$LOG"; }
# since MARK: the log after line MARK, less the daemon's own dialling of friend.
since() { tail -n +"$(($1 + 1))" "$LOG" | grep -v 'peer friend: '; }

# flood FIRST LAST PER SECONDS: one idle process per address 127.0.0.FIRST..LAST.
FLOOD=()
flood() {
	local i
	for i in $(seq "$1" "$2"); do
		"$RAW" idle "$PORT" "127.0.0.$i" "$3" "$4" >"$T_DIR/idle.$i" 2>&1 &
		FLOOD+=($!)
	done
	for i in $(seq "$1" "$2"); do
		wait_for 30 grep -q started "$T_DIR/idle.$i"
	done
}
stop_flood() {
	kill "${FLOOD[@]}" 2>/dev/null
	wait "${FLOOD[@]}" 2>/dev/null
	FLOOD=()
	wait_for 30 metric_is rdmaproxy_peer_unauthenticated_connections 0
}

# A client connected before the trouble: "reg" registers a region and
# transfers once through it; its answer line goes to $T_DIR/regs.out.
regs_start() {
	rm -f "$T_DIR/regs.in"
	mkfifo "$T_DIR/regs.in"
	"$H" regs <"$T_DIR/regs.in" >"$T_DIR/regs.out" 2>&1 &
	REGS=$!
	exec 8>"$T_DIR/regs.in"
	wait_for 20 grep -q ready "$T_DIR/regs.out"
}
regs_more() { [ "$(grep -c '^reg=' "$T_DIR/regs.out")" -gt "$1" ]; }
reg() { # reg: one more line; prints it
	local n
	n=$(grep -c '^reg=' "$T_DIR/regs.out")
	echo go >&8
	wait_for 60 regs_more "$n"
	grep '^reg=' "$T_DIR/regs.out" | tail -1
}
regs_stop() {
	exec 8>&-
	wait "$REGS"
}

# ---- 1. the fd reserve: a daemon with 128 fds, caps out of the way ----------
conf "[peers]" "max_unauthenticated = 100000" "max_unauthenticated_per_address = 100000" \
	"max_failed_handshakes = 0"
start fds 128
ok $? "a daemon under RLIMIT_NOFILE 128 is up" || diag "$LOG"
regs_start
[ "$(reg)" = "reg=0 error=none xfer=ok" ]
ok $? "a client registers and transfers before the flood"
# 16 processes, 8 idle connections each from 127.0.0.2-17: more than the
# 128 fds, and reopened as soon as the daemon closes them.
flood 2 17 8 600
wait_for 120 metric_ge 'rdmaproxy_peer_connections_refused_total{reason="fd_reserve"}' 1
ok $? "the flood reaches the fd reserve: refused ($(refused fd_reserve)), $(pending) held"
held=$(pending)
[ "${held:-0}" -ge 16 ] && [ "$held" -lt 96 ]
ok $? "idle connections hold fds, but never the reserve ($held held, fds below 96 of 128)"
good=0
for i in 1 2 3; do
	r=$(reg)
	echo "# $r"
	[ "$r" = "reg=0 error=none xfer=ok" ] && good=$((good + 1))
done
[ $good -eq 3 ]
ok $? "during the flood the connected client registers regions (fds) and transfers"
"$IO" regions 8 64K >"$T_DIR/regions.out" 2>&1
grep -q '^allocated=8$' "$T_DIR/regions.out"
ok $? "during the flood a new client registers 8 regions"
"$IO" pair 1M >"$T_DIR/pair.out" 2>&1
ok $? "during the flood two new clients write, read and send 1 MiB with checksums" ||
	diag "$T_DIR/pair.out"
wait_for 30 grep -q 'peer connections refused (file descriptors): suppressed [0-9]* similar' "$LOG"
ok $? "the refusals are summed up in the log"
n=$(grep -c 'refusing a peer connection from .*file descriptors' "$LOG")
echo "# fd refusals: $(refused fd_reserve), log lines naming one: $n"
[ "$n" -ge 1 ] && [ "$n" -lt "$(refused fd_reserve)" ]
ok $? "fewer refusal lines than refusals ($n < $(refused fd_reserve))"
stop_flood
ok $? "after the flood no connection waits for a handshake"
[ "$(reg)" = "reg=0 error=none xfer=ok" ]
ok $? "the client connected before the flood is still there and working"
regs_stop
! grep -q 'disconnected:' "$LOG"
ok $? "no client was disconnected (info and above)" || grep 'disconnected:' "$LOG" | head -3 | diag
stop_daemon "$PID"
ok $? "the daemon exits cleanly"

# ---- 2. the caps: 12 addresses x 12 idle connections against 64 / 8 ----------
conf "[peers]" "max_failed_handshakes = 0"
start caps
flood 20 31 12 600
wait_for 120 metric_ge 'rdmaproxy_peer_connections_refused_total{reason="total_limit"}' 1
ok $? "max_unauthenticated (64): further connections refused ($(refused total_limit))"
wait_for 60 metric_ge 'rdmaproxy_peer_connections_refused_total{reason="address_limit"}' 1
ok $? "max_unauthenticated_per_address (8): refused ($(refused address_limit))"
worst=0
for i in 1 2 3 4 5; do
	p=$(pending)
	[ "${p:-999}" -gt "$worst" ] && worst=${p:-999}
done
[ "$worst" -le 64 ]
ok $? "never more than 64 unauthenticated connections (at most $worst seen)"
"$IO" pair 64K >"$T_DIR/pair2.out" 2>&1
ok $? "meanwhile new clients connect and transfer with checksums" || diag "$T_DIR/pair2.out"
stop_flood
n=$(grep -c 'refusing a peer connection' "$LOG")
r=$(($(refused total_limit) + $(refused address_limit)))
echo "# refusals: $r, log lines naming one: $n"
[ "$n" -lt "$r" ]
ok $? "refusals are not logged one by one ($n lines for $r)"
stop_daemon "$PID"

# ---- 3. 300 wrong-key handshakes -------------------------------------------------
# A refusal that lasts an hour, so that it is still there when looked at;
# a reload shortens it, and the address is served again.
conf "[peers]" "refusal_seconds = 3600"
start badkey
mark=$(lines)
t0=$SECONDS
"$RAW" badauth "$PORT" 127.0.0.9 friend 300 10 >"$T_DIR/bad.out" 2>&1
took=$((SECONDS - t0))
diag "$T_DIR/bad.out"
grep -q 'tries=300 .*other=0' "$T_DIR/bad.out" && ! grep -q 'challenged=0 ' "$T_DIR/bad.out" &&
	! grep -q 'refused=0 ' "$T_DIR/bad.out"
ok $? "300 handshakes with a wrong key from 127.0.0.9: a few challenged, the rest refused"
wait_for 30 metric_is rdmaproxy_peer_unauthenticated_connections 0
f=$(metric rdmaproxy_peer_handshake_failures_total)
r=0
for why in total_limit address_limit failed_handshakes fd_reserve; do
	r=$((r + $(refused $why)))
done
echo "# handshake failures $f, refusals $r"
[ $((f + r)) -eq 300 ] && [ "$f" -ge 10 ]
ok $? "the metrics count every one of them: failures + refusals = 300"
grep -q 'refusing peer connections from 127.0.0.9 for 3600 s: 10 failed handshakes' "$LOG"
ok $? "the refusal of the address is logged"
sup='peer connections from 127.0.0.9 as friend: suppressed [0-9]* similar messages'
wait_for 30 grep -q "$sup" "$LOG"
ok $? "what was left out is summed up: $(grep -o "$sup" "$LOG" | head -1)"
n=$(since "$mark" | wc -l)
echo "# log lines for 300 wrong-key handshakes in $took s: $n"
since "$mark" | diag
# A few bursts of 5 and their summaries; a slow run adds at most a line or
# two per key every 10 s.
[ "$n" -le $((40 + took)) ]
ok $? "300 wrong-key handshakes: $n log lines (at most $((40 + took)))"
metric_is rdmaproxy_peer_refused_addresses 1
ok $? "one address is refused"
before=$(refused failed_handshakes)
"$RAW" badauth "$PORT" 127.0.0.9 friend 1 1 | grep -q 'refused=1 '
ok $? "a new connection from it is closed at once"
[ "$(refused failed_handshakes)" -gt "$before" ]
ok $? "... and counted as refused for failed handshakes"
"$RAW" badauth "$PORT" 127.0.0.10 friend 1 1 | grep -q 'challenged=1 '
ok $? "another address is still served"
conf "[peers]" "refusal_seconds = 1"
kill -HUP "$PID"
wait_for 30 sh -c "'$RAW' badauth $PORT 127.0.0.9 friend 1 1 | grep -q 'challenged=1 '"
ok $? "with refusal_seconds reloaded to 1 the address is served again"
"$RAW" auth "$PORT" 127.0.0.9 friend flood "$T_DIR/good.key" >"$T_DIR/auth.out" 2>&1
ok $? "and a peer with the right key authenticates from it" || diag "$T_DIR/auth.out"

# ---- 4. metrics scrapes are quiet ------------------------------------------------
mark=$(lines)
for i in $(seq 10); do
	"$CTL" metrics >"$T_DIR/metrics.txt" || break
done
n=$(since "$mark" | grep -c 'client')
ok "$n" "10 metrics scrapes: no client line at info ($n)"
if command -v promtool >/dev/null 2>&1; then
	promtool check metrics <"$T_DIR/metrics.txt" >"$T_DIR/promtool.out" 2>&1
	ok $? "promtool accepts the new families" || diag "$T_DIR/promtool.out"
else
	echo "ok $((T_N += 1)) # SKIP promtool is not installed"
fi

# ---- 5. a request whose fd cannot be received ------------------------------------
regs_start
[ "$(reg)" = "reg=0 error=none xfer=ok" ]
ok $? "a client registers a region"
soft=$(prlimit --pid "$PID" --nofile --output SOFT --noheadings | tr -d ' ')
# No fd above 3 can be opened now: the kernel cannot install the region's.
prlimit --pid "$PID" --nofile=3: && r=$(reg)
prlimit --pid "$PID" --nofile="$soft":
echo "# $r"
case $r in
"reg=-24 "*"xfer=ok") ok 0 "no fd left: the registration fails with EMFILE, transfers go on" ;;
*) ok 1 "no fd left: the registration fails with EMFILE, transfers go on ($r)" ;;
esac
[ "$(reg)" = "reg=0 error=none xfer=ok" ]
ok $? "fds back: the same connection registers again"
regs_stop
metric_is rdmaproxy_client_fd_lost_total 1
ok $? "counted in rdmaproxy_client_fd_lost_total"
grep -q 'region registration failed: the daemon has no file descriptor left' "$LOG"
ok $? "and logged"

stop_daemon "$PID"
ok $? "the daemon exits cleanly"
! grep -q "runtime error\|AddressSanitizer\|LeakSanitizer" "$T_DIR"/*.log
ok $? "no sanitizer reports"
if [ "$T_FAIL" -ne 0 ]; then
	keep="${TMPDIR:-/tmp}/rp-peer-flood-failed.$$"
	mkdir -p "$keep" && cp "$T_DIR"/*.log "$T_DIR"/*.out "$keep"/ 2>/dev/null &&
		echo "# logs kept in $keep"
fi
t_done
