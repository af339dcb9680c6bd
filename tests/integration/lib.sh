# Shared shell for integration tests: TAP output, temporary directories,
# daemons started with timeouts and always cleaned up.
# shellcheck shell=bash
set -u

: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_srcdir:=$top_builddir}"
RPD="$top_builddir/daemon/rdmaproxyd"
HELPERS="$top_builddir/tests/helpers"
# wait_settled, wait_steady
. "$top_srcdir/tests/settle.sh"

T_N=0
T_FAIL=0
T_PIDS=()
T_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rp-test.XXXXXX")

t_cleanup() {
	local p
	for p in "${T_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	sleep 0.2
	for p in "${T_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$T_DIR"
}
trap t_cleanup EXIT

ok() { # ok COND-EXIT-STATUS NAME
	T_N=$((T_N + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $T_N - $2"
	else
		echo "not ok $T_N - $2"
		T_FAIL=$((T_FAIL + 1))
	fi
}

# free_ports N: N distinct free TCP ports on 127.0.0.1, one per line. All are
# bound at once: ports taken one at a time can repeat (the kernel may hand
# out a port again as soon as it is released), and two daemons told to
# listen on the same port broke test-peers.sh now and then.
free_ports() {
	python3 -c 'import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss:
    s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in ss))' "$1"
}
diag() { sed 's/^/# /' "$@"; }

# The huge page pool (vm.nr_hugepages) is the machine's: the tests that size
# it, take all of it or need much of it take turns (make check runs tests in
# parallel). huge_lock before setting it, huge_unlock after restoring it.
huge_lock() {
	exec {T_HUGE_FD}>"${TMPDIR:-/tmp}/rdmaproxy-tests-hugepages.lock"
	flock "$T_HUGE_FD"
}
huge_unlock() {
	flock -u "$T_HUGE_FD"
	exec {T_HUGE_FD}>&-
}

# metric_of SOCKET NAME: the value of the daemon's metric NAME (no labels).
metric_of() {
	"$top_builddir/tools/ctl/rdmaproxyctl" -s "$1" metrics | awk -v n="$2" '$1 == n {print $2}'
}

t_done() {
	echo "1..$T_N"
	[ "$T_FAIL" -eq 0 ]
}

# write_conf FILE [extra lines...]: a tcp-transport config on private paths.
write_conf() {
	local f=$1
	shift
	{
		echo "[daemon]"
		echo "node_name = testnode"
		echo "socket = $T_DIR/rp.sock"
		echo "transport = ${RP_TEST_TRANSPORT:-tcp}"
		echo "listen = none"
		echo "log_level = debug"
		printf '%s\n' "$@"
	} >"$f"
}

# start_daemon LOG ARGS...: runs rdmaproxyd in the foreground in the background.
start_daemon() {
	local log=$1
	shift
	"$RPD" --foreground "$@" >"$log" 2>&1 &
	T_LAST_PID=$!
	T_PIDS+=("$T_LAST_PID")
}

# stop_daemon PID: SIGTERM, wait up to 10 s, return its exit status.
stop_daemon() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null
	for i in $(seq 200); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	wait "$pid"
}
