#!/bin/bash
# rp_relax() while the CPUs are free: a client whose waits for completions
# last milliseconds sleeps on the completion doorbell too, but only once a
# wait has lasted 32 calls, and quickly-completing writes still cost the
# daemon no doorbell per completion (librdmaproxy(3), rp_relax). The daemon
# runs in a mount namespace of its own where /proc/loadavg is a file that
# says one task is runnable, so that it tells its clients the CPUs are free
# however busy this machine is; it runs on CPU 0 and test-client-relax
# (mode "free") on CPU 1, and the daemon's rdmaproxy_client_doorbells_total is read
# between the stages.
. "$(dirname "$0")/lib.sh"

RELAX="$top_builddir/tests/integration/test-client-relax"

printf '0.00 0.00 0.00 1/100 1\n' >"$T_DIR/loadavg"
if [ "$(nproc)" -lt 2 ] || ! command -v taskset >/dev/null || ! command -v unshare >/dev/null ||
	! unshare -m sh -c "mount --bind '$T_DIR/loadavg' /proc/loadavg" 2>/dev/null; then
	echo "1..0 # SKIP needs 2 CPUs, taskset and a mount namespace (unshare -m: root)"
	exit 0
fi
write_conf "$T_DIR/rp.conf"
# unshare and sh exec the daemon: $! is its pid.
unshare -m sh -c "mount --bind '$T_DIR/loadavg' /proc/loadavg &&
	exec taskset -c 0 '$RPD' --foreground -c '$T_DIR/rp.conf'" >"$T_DIR/d.log" 2>&1 &
DPID=$!
T_PIDS+=("$DPID")
export RDMAPROXY_SOCKET="$T_DIR/rp.sock"
wait_for 10 test -S "$RDMAPROXY_SOCKET"
ok $? "daemon started, reading a /proc/loadavg that says the CPUs are free"

doorbells() {
	kill -CONT "$DPID" 2>/dev/null # never query a daemon left stopped
	metric_of "$RDMAPROXY_SOCKET" rdmaproxy_client_doorbells_total
}
said() { wait_for 30 grep -qx "$1" "$T_DIR/h.out"; }

mkfifo "$T_DIR/h.in"
RP_TEST_DAEMON_PID=$DPID "$RELAX" free <"$T_DIR/h.in" >"$T_DIR/h.out" 2>&1 &
HP=$!
T_PIDS+=("$HP")
exec 8>"$T_DIR/h.in"
said ready
ok $? "the client connected and set up its regions"
d0=$(doorbells)
echo go >&8

said fast
ok $? "200 writes polled with rp_relax() between polls"
d=$(doorbells)
slow=$(sed -n 's/^slow //p' "$T_DIR/h.out")
slow50=$(sed -n 's/^slow50 //p' "$T_DIR/h.out")
[ -n "$d0" ] && [ -n "$d" ] && [ -n "$slow" ] && [ -n "$slow50" ] &&
	[ "$d" -le $((d0 + 2 * slow + slow50 + 20)) ]
ok $? "they cost the daemon no doorbell per completion ($d0 -> $d doorbells; of 200 waits $slow over 1 ms, $slow50 over 50 us)"
echo go >&8

said gone
ok $? "a new client's write waited for while the daemon was stopped"
dg=$(doorbells)
[ -n "$dg" ] && [ "$dg" -gt "$d" ]
ok $? "it slept on the doorbell, which the daemon rang once it ran ($d -> $dg doorbells)"
echo go >&8

said paced
ok $? "writes waited for 3 ms each (the daemon stopped)"
d=$(doorbells)
[ "$d" -gt "$dg" ]
ok $? "waits of milliseconds slept on the doorbell with the CPUs free ($dg -> $d doorbells)"
kill -STOP "$DPID"
echo go >&8

said slept
ok $? "a write to the stopped daemon, then rp_poll()/rp_relax() pairs"
kill -CONT "$DPID"
echo go >&8
wait "$HP"
ok $? "the helper's own checks held"
diag "$T_DIR/h.out"
exec 8>&-
d3=$(doorbells)
[ "$d3" = $((d + 1)) ]
ok $? "rp_relax() slept on the doorbell and the daemon rang it once ($d -> $d3)"

stop_daemon "$DPID"
ok $? "daemon stopped cleanly"
t_done
