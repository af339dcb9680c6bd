#!/bin/bash
# Hostile or unlucky local clients (from an independent review): none may
# crash the daemon, hold its fds, grow it without bound, or get a failure
# report for something that happened.
. "$(dirname "$0")/lib.sh"

H="$HELPERS/hostile"
SOCK="$T_DIR/rp.sock"
CONF="$T_DIR/rp.conf"
LOG="$T_DIR/daemon.log"
export RDMAPROXY_SOCKET="$SOCK"
chmod 755 "$T_DIR"

write_conf "$CONF" "[limits]" "max_regions = 6"
start_daemon "$LOG" -c "$CONF"
PID=$T_LAST_PID
wait_for 10 "$HELPERS/rp-probe" "$SOCK" status
ok $? "the daemon is up"

# --- exports are bounded per uid (by max_regions) ---------------------------
"$H" exports 10 >"$T_DIR/exports.out"
grep -q '^exported=6$' "$T_DIR/exports.out" &&
	grep -q '^last_error_text=per-user limit on exports' "$T_DIR/exports.out"
ok $? "exports: the limit (6) is reachable, the 7th is refused with its own error"
diag "$T_DIR/exports.out"

# --- a notification that cannot be delivered fails the write before it lands -
"$H" notifyfull 1100 >"$T_DIR/nf.out"
grep -q '^failed_but_landed=0$' "$T_DIR/nf.out" && grep -q '^other=0$' "$T_DIR/nf.out" &&
	! grep -q '^notify_full=0$' "$T_DIR/nf.out"
ok $? "notify into a full completion ring: refused writes did not land"
diag "$T_DIR/nf.out"

# --- a client's doorbells: nothing it does to its ends blocks the daemon ------
# With eventfds shared with the daemon, this client cleared O_NONBLOCK, filled
# the completion counter, and the daemon's next doorbell write blocked its loop.
mkfifo "$T_DIR/bell"
"$H" bellblock <"$T_DIR/bell" >"$T_DIR/bell.out" 2>&1 &
bell=$!
exec {bell_fd}>"$T_DIR/bell"
wait_for 60 grep -q '^attacked' "$T_DIR/bell.out"
r=$?
diag "$T_DIR/bell.out"
[ $r -eq 0 ] && ! grep -q '^stuck=' "$T_DIR/bell.out" &&
	timeout 10 "$HELPERS/rp-probe" "$SOCK" status >/dev/null
ok $? "a client that makes its doorbells blocking and fills them: 64 of its ops answered, others served"
exec {bell_fd}>&-
wait "$bell"

# --- a client that closes its doorbells at once, as rdmaproxyctl does ----------
# (With pipes for doorbells, the daemon's end of a closed one polled readable
# for ever, and the daemon's loop spun.) CPU over 2 s, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$PID/stat"; }
hz=$(getconf CLK_TCK)
mkfifo "$T_DIR/cb"
"$H" closebells <"$T_DIR/cb" >"$T_DIR/cb.out" 2>&1 &
cb=$!
exec {cb_fd}>"$T_DIR/cb"
wait_for 10 grep -q '^closed' "$T_DIR/cb.out"
t0=$(cpu_ticks)
sleep 2
t1=$(cpu_ticks)
"$HELPERS/rp-probe" "$SOCK" status >/dev/null
r=$?
exec {cb_fd}>&-
wait "$cb"
[ $r -eq 0 ] && [ $((t1 - t0)) -lt $((hz / 5)) ]
ok $? "a client that closed its doorbells at once: the daemon idles ($((t1 - t0)) of $((2 * hz)) ticks in 2 s)"

# --- connections that never say HELLO --------------------------------------------
nfds() { ls "/proc/$PID/fd" | wc -l; }
fds_at_most() { [ "$(nfds)" -le "$1" ]; }
base=$(wait_settled 20 nfds)
mkfifo "$T_DIR/hold"
setpriv --reuid=nobody --regid=nogroup --clear-groups "$H" hold 300 <"$T_DIR/hold" \
	>"$T_DIR/hold.out" 2>&1 &
HPID=$!
T_PIDS+=("$HPID")
exec 7>"$T_DIR/hold"
wait_for 20 grep -q holding "$T_DIR/hold.out"
kept() { echo >&7 && sleep 0.2 && [ "$(tail -1 "$T_DIR/hold.out")" = kept=256 ]; }
wait_for 30 grep -q 'dropping the oldest of uid 65534' "$LOG" && wait_for 30 kept
ok $? "at most 256 connections wait for HELLO: the holder's oldest are dropped ($(tail -1 "$T_DIR/hold.out"))"
[ "$(grep -c 'dropping the oldest of uid 65534' "$LOG")" -eq 1 ]
ok $? "the drop is logged once per burst"
start=$SECONDS
"$HELPERS/rp-probe" "$SOCK" status >/dev/null
ok $? "another user still connects and is served at once"
wait_for 10 grep -q 'no HELLO within 5 s' "$LOG"
ok $? "silent connections are closed after 5 s"
wait_steady 20 fds_at_most "$base" # counted afresh each try
ok $? "the daemon's fd count is back to its baseline ($base) while the client still holds"
exec 7>&-
wait "$HPID"

# --- a large registration never stalls the others ----------------------------------
# A sparse 1 GiB memfd: the daemon's mapping allocates it, which takes a while.
"$H" bigreg 1024 >"$T_DIR/bigreg.out" 2>&1
grep -q '^reg_status=0$' "$T_DIR/bigreg.out" &&
	[ "$(sed -n 's/^writes_during=//p' "$T_DIR/bigreg.out")" -ge 3 ]
ok $? "while 1 GiB is mapped and registered, another client's writes complete ($(grep writes_during "$T_DIR/bigreg.out"))"
diag "$T_DIR/bigreg.out"

# --- a start-up burst: 64 processes of one user connect at the same moment ----------
# (max_connections is 64 per user: all of them fit, none may be turned away at HELLO.)
for i in $(seq 64); do
	(
		while [ ! -e "$T_DIR/burst.go" ]; do sleep 0.01; done
		"$HELPERS/rp-probe" "$SOCK" status >"$T_DIR/burst.$i" 2>&1
		echo $? >"$T_DIR/burst.$i.rc"
	) &
done
touch "$T_DIR/burst.go"
wait_for 60 sh -c "[ \$(ls '$T_DIR'/burst.*.rc 2>/dev/null | wc -l) -eq 64 ]"
bad=$(grep -Lx 0 "$T_DIR"/burst.*.rc | wc -l)
[ "$bad" -eq 0 ] && [ "$(ls "$T_DIR"/burst.*.rc | wc -l)" -eq 64 ]
ok $? "64 processes of one user connecting at once are all served ($bad failed)"
[ "$bad" -eq 0 ] || cat "$(grep -Lx 0 "$T_DIR"/burst.*.rc | head -1 | sed 's/\.rc$//')" | diag

# --- a hugetlb region with its page punched out (SIGBUS) ----------------------------
hp=/proc/sys/vm/nr_hugepages
huge_lock
old=$(cat $hp 2>/dev/null || echo 0)
if [ "$(id -u)" -eq 0 ] && echo 4 >$hp 2>/dev/null && [ "$(cat $hp)" -ge 2 ]; then
	"$H" hugebus >"$T_DIR/hb.out" 2>&1
	"$H" hugesrc >"$T_DIR/hs.out" 2>&1
	echo "$old" >$hp
	if grep -q '^huge=' "$T_DIR/hb.out"; then
		echo "ok $((T_N += 1)) # SKIP no huge pages for the client: $(cat "$T_DIR/hb.out")"
	else
		grep -q '^write_status=-14$' "$T_DIR/hb.out"
		ok $? "a write into a punched-out huge page fails with -EFAULT"
		diag "$T_DIR/hb.out"
		kill -0 "$PID" && "$HELPERS/rp-probe" "$SOCK" status >/dev/null
		ok $? "the daemon survives it"
		grep -q '^again_status=0$' "$T_DIR/hb.out"
		ok $? "and the same write works once huge pages are free again"
		grep -q '^before_status=0$' "$T_DIR/hs.out" && grep -q '^write_status=-14$' "$T_DIR/hs.out" &&
			grep -q '^write300_status=-14$' "$T_DIR/hs.out"
		ok $? "writes of 8 B and 300 B from a punched-out huge page fail with -EFAULT"
		diag "$T_DIR/hs.out"
		kill -0 "$PID" && "$HELPERS/rp-probe" "$SOCK" status >/dev/null
		ok $? "the daemon survives them too"
	fi
else
	echo "$old" >$hp 2>/dev/null
	echo "ok $((T_N += 1)) # SKIP cannot reserve huge pages here (needs root)"
fi
huge_unlock

stop_daemon "$PID"
ok $? "SIGTERM: exit 0"

# --- a client whose daemon dies while stalled on it --------------------------
# The client filled both rings without reaping (the daemon stopped taking its
# submissions); the daemon is killed; reaping then tells the stalled daemon
# through the submission doorbell, with nobody at the other end: that must
# not kill the client (SIGPIPE), which gets its completions and RP_EDAEMON.
start_daemon "$LOG.2" -c "$CONF"
PID=$T_LAST_PID
wait_for 10 "$HELPERS/rp-probe" "$SOCK" status
mkfifo "$T_DIR/sd"
"$H" stalldeath <"$T_DIR/sd" >"$T_DIR/sd.out" 2>&1 &
sd=$!
exec {sd_fd}>"$T_DIR/sd"
wait_for 60 grep -q '^stalled' "$T_DIR/sd.out"
kill -KILL "$PID"
wait "$PID" 2>/dev/null
echo go >&$sd_fd
wait "$sd"
r=$?
exec {sd_fd}>&-
diag "$T_DIR/sd.out"
[ $r -eq 0 ] && grep -q "^after ok=[0-9]* failed=[0-9]* last=-$((4096 + 10))$" "$T_DIR/sd.out"
ok $? "a client stalled on a daemon that dies survives its reaping and gets RP_EDAEMON (exit $r)"
t_done
