#!/bin/bash
# The daemon's life cycle on the tcp transport: options, config checks,
# systemd notifications and watchdog, reload, socket activation, stale and
# live sockets, bad client input.
. "$(dirname "$0")/lib.sh"

PROBE="$HELPERS/rp-probe"
SOCK="$T_DIR/rp.sock"
CONF="$T_DIR/rp.conf"
LOG="$T_DIR/daemon.log"

# --- options -------------------------------------------------------------
"$RPD" --version | grep -q '^rdmaproxyd [0-9]'
ok $? "--version prints the version"
"$RPD" --help | grep -q -- '--check-config'
ok $? "--help lists the options"
"$RPD" --bogus >/dev/null 2>&1
[ $? -eq 2 ]
ok $? "an unknown option exits 2"

# --- --check-config ------------------------------------------------------
"$RPD" --check-config -c "$top_srcdir/conf/rdmaproxy.conf" >/dev/null
ok $? "the shipped config passes --check-config"
printf '[daemon]\nnode_name = a\nbogus = 1\n' >"$T_DIR/bad.conf"
out=$("$RPD" --check-config -c "$T_DIR/bad.conf" 2>&1)
rc=$?
[ $rc -eq 1 ] && [ "$out" = "${out#*$'\n'}" ] && echo "$out" | grep -q "^$T_DIR/bad.conf:3: "
ok $? "a bad config gives FILE:LINE and exit 1 ($out)"
"$RPD" --check-config -c "$T_DIR/missing.conf" 2>&1 | grep -q "missing.conf: No such file"
ok $? "a missing config is named"

# --- peer keys are secrets -------------------------------------------------
printf 'shared-secret-key-for-tests-0001\n' >"$T_DIR/peer.key"
write_conf "$T_DIR/key.conf" '[peer "p"]' 'address = 127.0.0.1:9' "key_file = $T_DIR/peer.key"
for mode in 644 640 604; do
	chmod "$mode" "$T_DIR/peer.key"
	out=$("$RPD" --check-config -c "$T_DIR/key.conf" 2>&1)
	rc=$?
	[ $rc -eq 1 ] && echo "$out" | grep -q "key file $T_DIR/peer.key: mode 0$mode lets group or others"
	ok $? "a peer key of mode 0$mode is refused, naming the file and the mode ($out)"
done
chmod 600 "$T_DIR/peer.key"
"$RPD" --check-config -c "$T_DIR/key.conf" >/dev/null
ok $? "the same key with mode 0600 is accepted"

# --- systemd-analyze verify ----------------------------------------------
if [ -n "${SYSTEMD_ANALYZE:-}" ]; then
	mkdir -p "$T_DIR/units"
	sed -e "s|^ExecStart=[^ ]*|ExecStart=$RPD|" "$top_builddir/systemd/rdmaproxy.service" \
		>"$T_DIR/units/rdmaproxy.service"
	cp "$top_srcdir/systemd/rdmaproxy.socket" "$T_DIR/units/"
	"$SYSTEMD_ANALYZE" verify --man=no "$T_DIR/units/rdmaproxy.service" \
		"$T_DIR/units/rdmaproxy.socket" >"$T_DIR/verify.log" 2>&1
	rc=$?
	[ $rc -eq 0 ] && ! grep -q rdmaproxy "$T_DIR/verify.log"
	ok $? "systemd-analyze verify accepts both units"
	[ $rc -eq 0 ] || diag "$T_DIR/verify.log"
else
	echo "ok $((T_N += 1)) # SKIP systemd-analyze is not installed"
fi

# --- notifications, watchdog, reload, stop ----------------------------------
write_conf "$CONF"
"$HELPERS/notify-listen" "$T_DIR/notify.sock" >"$T_DIR/notify.log" &
T_PIDS+=($!)
wait_for 5 test -S "$T_DIR/notify.sock"
NOTIFY_SOCKET="$T_DIR/notify.sock" WATCHDOG_USEC=200000 start_daemon "$LOG" -c "$CONF"
PID=$T_LAST_PID
wait_for 10 grep -q READY=1 "$T_DIR/notify.log"
ok $? "READY=1 is sent"
grep -q 'READY=1 STATUS=tcp transport, 0/0 peers up, 0 clients' "$T_DIR/notify.log"
ok $? "STATUS= comes with READY=1 and is one human line"
wait_for 5 grep -q WATCHDOG=1 "$T_DIR/notify.log"
ok $? "WATCHDOG=1 is sent when WATCHDOG_USEC is set"
# Every 100 ms: three within a couple of seconds even on a busy machine.
wait_for 3 sh -c "[ \$(grep -c WATCHDOG=1 '$T_DIR/notify.log') -ge 3 ]"
ok $? "WATCHDOG=1 repeats at half the interval"
"$PROBE" "$SOCK" status >"$T_DIR/probe.out"
ok $? "the daemon answers hello and status on its socket"
grep -q '^transport=tcp$' "$T_DIR/probe.out" && grep -q '^node=testnode$' "$T_DIR/probe.out"
ok $? "hello reports node name and transport"

# reload: a good config changes the log level
write_conf "$CONF"
sed -i 's/^log_level = debug/log_level = warning/' "$CONF"
kill -HUP "$PID"
wait_for 5 grep -q 'RELOADING=1' "$T_DIR/notify.log"
ok $? "SIGHUP sends RELOADING=1"
wait_for 5 sh -c "grep -A100 RELOADING=1 '$T_DIR/notify.log' | grep -q READY=1"
ok $? "READY=1 follows the reload"
"$PROBE" "$SOCK" status >/dev/null
ok $? "the daemon still answers after a good reload"
# the new level (warning) hides the debug line logged for each connection
n_before=$(grep -c 'connected: pid' "$LOG")
"$PROBE" "$SOCK" status >/dev/null
sleep 0.2
[ "$n_before" -gt 0 ] && [ "$(grep -c 'connected: pid' "$LOG")" -eq "$n_before" ]
ok $? "the reloaded log level is applied"

# nice: the engine's thread (the main one) gets -10 by default, or says why not
nice_of() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $17 }'; }
if [ "$(id -u)" -eq 0 ]; then
	[ "$(nice_of "$PID")" = -10 ]
	ok $? "the engine runs at nice -10 by default ($(nice_of "$PID"))"
else
	grep -q "cannot set the engine's nice value to -10" "$LOG"
	ok $? "without CAP_SYS_NICE the daemon says it cannot set nice -10, and runs on"
fi
write_conf "$CONF" "nice = 5"
sed -i 's/^log_level = debug/log_level = warning/' "$CONF"
kill -HUP "$PID"
nice_is() { [ "$(nice_of "$PID")" = "$1" ]; }
wait_for 5 nice_is 5
ok $? "a reload applies nice = 5 ($(nice_of "$PID"))"

# reload: a broken config is rejected and the running one kept
printf '[daemon]\nsocket = relative/path\n' >"$CONF"
kill -HUP "$PID"
wait_for 5 grep -q "reload rejected, keeping the running configuration: $CONF:2:" "$LOG"
ok $? "a broken config on SIGHUP is rejected with FILE:LINE"
"$PROBE" "$SOCK" status >/dev/null
ok $? "the daemon keeps serving after a rejected reload"

# bad client input ends that client, never the daemon
"$PROBE" "$SOCK" garbage >/dev/null
ok $? "a malformed message disconnects the client"
"$PROBE" "$SOCK" nohello
ok $? "a request before hello disconnects the client"
"$PROBE" "$SOCK" fd >/dev/null
ok $? "an fd on a message that takes none disconnects the client"
"$PROBE" "$SOCK" oversize >/dev/null
ok $? "an oversized message disconnects the client"
"$PROBE" "$SOCK" version 7 9 >"$T_DIR/ver.out"
[ $? -eq 1 ] && grep -q 'daemon_versions=1..4' "$T_DIR/ver.out"
ok $? "a protocol version mismatch is refused with the daemon's range"
grep -q 'speaks protocol 7..9' "$LOG"
ok $? "the daemon logs the version mismatch"
nfds() { ls "/proc/$PID/fd" | wc -l; }
fds_are() { [ "$(nfds)" -eq "$1" ]; }
fds_before=$(wait_settled 20 nfds)
for i in $(seq 20); do "$PROBE" "$SOCK" fd >/dev/null; done
wait_steady 20 fds_are "$fds_before"
ok $? "passed fds are closed: fd count unchanged ($fds_before -> $(nfds))"
"$PROBE" "$SOCK" status >/dev/null
ok $? "the daemon survives all of that"

# a second daemon must not steal a live socket
write_conf "$CONF"
"$RPD" --foreground -c "$CONF" >"$T_DIR/second.log" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "another rdmaproxyd is answering on $SOCK" "$T_DIR/second.log"
ok $? "a second daemon refuses to steal a live socket"

stop_daemon "$PID"
ok $? "SIGTERM stops the daemon with exit 0"
# The listener prints what it received when it next runs, which on a busy
# machine may be after the daemon is gone: wait for it.
wait_for 5 grep -q STOPPING=1 "$T_DIR/notify.log"
ok $? "STOPPING=1 is sent"
[ ! -e "$SOCK" ]
ok $? "the socket file is removed on exit"

# --- stale socket --------------------------------------------------------
start_daemon "$LOG" -c "$CONF"
PID=$T_LAST_PID
wait_for 10 test -S "$SOCK"
kill -KILL "$PID"
wait "$PID" 2>/dev/null
[ -S "$SOCK" ]
ok $? "a killed daemon leaves a stale socket file"
start_daemon "$LOG" -c "$CONF"
PID=$T_LAST_PID
wait_for 10 "$PROBE" "$SOCK" status
ok $? "a new daemon replaces a stale socket"
stop_daemon "$PID"

# --- a relative -c works once the daemon detached (it changes to /) ----------
write_conf "$T_DIR/rel.conf"
(cd "$T_DIR" && exec "$RPD" -c rel.conf) >"$T_DIR/detach.out" 2>&1
rc=$?
DPID=$("$PROBE" "$SOCK" status | sed -n 's/^daemon_pid=//p')
[ -n "$DPID" ] && T_PIDS+=("$DPID")
[ $rc -eq 0 ] && [ -n "$DPID" ] && [ "$(readlink "/proc/$DPID/cwd")" = / ]
ok $? "detached with a relative -c: ready, serving, and its directory is / (rc $rc)" ||
	diag "$T_DIR/detach.out"
sed -i 's/^log_level = debug/log_level = info/' "$T_DIR/rel.conf"
"$top_builddir/tools/ctl/rdmaproxyctl" -s "$SOCK" reload >"$T_DIR/rel-reload.txt" 2>&1
[ $? -eq 0 ] && grep -q "^reloaded $T_DIR/rel.conf: log level info" "$T_DIR/rel-reload.txt"
ok $? "and a reload re-reads the same file ($(cat "$T_DIR/rel-reload.txt"))"
if [ -n "$DPID" ]; then
	kill -TERM "$DPID"
	wait_for 10 sh -c "! kill -0 $DPID"
	ok $? "the detached daemon stops on SIGTERM"
else
	ok 1 "the detached daemon stops on SIGTERM"
fi

# --- transport selection without an RDMA device ---------------------------
if ! ls /sys/class/infiniband/* >/dev/null 2>&1; then
	write_conf "$CONF"
	sed -i 's/^transport = tcp/transport = verbs/' "$CONF"
	"$RPD" --foreground -c "$CONF" >"$T_DIR/verbs.log" 2>&1
	rc=$?
	[ $rc -eq 1 ] && grep -q 'transport = verbs, but no RDMA devices found' "$T_DIR/verbs.log"
	ok $? "transport = verbs without a device refuses to start and says why"
	sed -i 's/^transport = verbs/transport = auto/' "$CONF"
	start_daemon "$LOG" -c "$CONF"
	PID=$T_LAST_PID
	wait_for 10 "$PROBE" "$SOCK" status
	grep -q 'tcp transport (no usable RDMA device: no RDMA devices found' "$LOG"
	ok $? "transport = auto without a device says so and runs on tcp"
	stop_daemon "$PID"
else
	echo "ok $((T_N += 1)) # SKIP this host has an RDMA device"
	echo "ok $((T_N += 1)) # SKIP this host has an RDMA device"
fi

# --- socket activation ------------------------------------------------------
if [ -n "${SYSTEMD_SOCKET_ACTIVATE:-}" ]; then
	write_conf "$CONF"
	ASOCK="$T_DIR/activated.sock"
	"$SYSTEMD_SOCKET_ACTIVATE" --seqpacket -l "$ASOCK" \
		"$RPD" --foreground -c "$CONF" >"$T_DIR/act.log" 2>&1 &
	APID=$!
	T_PIDS+=("$APID")
	wait_for 10 test -S "$ASOCK"
	"$PROBE" "$ASOCK" status >/dev/null
	ok $? "socket-activated: serves on the passed socket"
	wait_for 5 grep -q "listening on $ASOCK (socket-activated)" "$T_DIR/act.log"
	ok $? "socket-activated: says so in the log"
	[ ! -e "$SOCK" ]
	ok $? "socket-activated: does not bind its configured path"
	stop_daemon "$APID"
	ok $? "socket-activated: SIGTERM gives exit 0"
	! grep -q 'socket_mode and socket_group do not apply' "$T_DIR/act.log"
	ok $? "socket-activated: no word about socket_mode when the config names none"
	write_conf "$CONF" "socket_mode = 0660"
	rm -f "$ASOCK"
	"$SYSTEMD_SOCKET_ACTIVATE" --seqpacket -l "$ASOCK" \
		"$RPD" --foreground -c "$CONF" >"$T_DIR/act.log" 2>&1 &
	APID=$!
	T_PIDS+=("$APID")
	wait_for 10 "$PROBE" "$ASOCK" status # the daemon starts at the first connection
	wait_for 10 grep -q "listening on $ASOCK" "$T_DIR/act.log"
	mode=$(stat -c %a "$ASOCK")
	grep -q "socket_mode and socket_group do not apply to the socket systemd passed: $ASOCK has mode 0$mode" \
		"$T_DIR/act.log" && [ "$mode" != 660 ]
	ok $? "socket-activated: a socket_mode the passed socket does not have is named, with the fix"
	stop_daemon "$APID"
else
	for i in 1 2 3 4 5 6; do echo "ok $((T_N += 1)) # SKIP systemd-socket-activate missing"; done
fi

# --- non-root fallback to $XDG_RUNTIME_DIR ------------------------------------
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	XDG="$T_DIR/xdg"
	mkdir -p "$XDG"
	chown nobody "$XDG"
	chmod 755 "$T_DIR"
	printf '[daemon]\nnode_name = n\ntransport = tcp\nlisten = none\n' >"$T_DIR/user.conf"
	chmod 644 "$T_DIR/user.conf"
	XDG_RUNTIME_DIR="$XDG" setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$RPD" --foreground -c "$T_DIR/user.conf" >"$T_DIR/user.log" 2>&1 &
	UPID=$!
	T_PIDS+=("$UPID")
	wait_for 10 test -S "$XDG/rdmaproxy/rdmaproxy.sock"
	ok $? "non-root: falls back to \$XDG_RUNTIME_DIR/rdmaproxy/rdmaproxy.sock"
	grep -q "listening on $XDG/rdmaproxy/rdmaproxy.sock instead" "$T_DIR/user.log"
	ok $? "non-root: says so in the log"
	stop_daemon "$UPID"
fi

t_done
