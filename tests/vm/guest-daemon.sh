#!/bin/bash
# Runs inside the Soft-RoCE guest (see rp-vm): rdmaproxyd on the verbs
# transport. Prints TAP. Expects top_builddir in the environment.
set -u
B=${top_builddir:?}
. "${top_srcdir:?}/tests/vm/vm-lib.sh"
RPD=$B/daemon/rdmaproxyd
PROBE=$B/tests/helpers/rp-probe
D=$(mktemp -d)
n=0 fail=0
ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=1; fi
}
res() { rdma resource show | awk '/rxe0/ { print $4, $6, $8, $12 }'; } # pd cq qp mr
res_is() { [ "$(res)" = "$1" ]; }
conf() {
	printf '[daemon]\nnode_name = g0\nsocket = %s/s.sock\nlisten = none\nlog_level = debug\n' "$D"
	printf 'transport = %s\n' "$1"
	[ -n "${2:-}" ] && printf '[verbs]\ndevice = %s\n' "$2"
}
wait_sock() { for _ in $(seq 200); do [ -S "$D/s.sock" ] && return 0; sleep 0.05; done; return 1; }
dump() {
	echo "# --- rdma link"; rdma link | sed 's/^/# /'
	echo "# --- rdma resource show"; rdma resource show | sed 's/^/# /'
	echo "# --- ibv_devinfo"; ibv_devinfo | sed 's/^/# /'
	echo "# --- daemon log"; sed 's/^/# /' "$D/log"
}

base=$(wait_settled 20 res)
conf verbs >"$D/c.conf"
"$RPD" --foreground -c "$D/c.conf" >"$D/log" 2>&1 &
pid=$!
wait_sock
ok $? "transport = verbs: the daemon starts and listens"
"$PROBE" "$D/s.sock" status >"$D/st" 2>&1
ok $? "it answers on its socket"
grep -q '^transport=verbs$' "$D/st" && grep -q '^device=rxe0$' "$D/st" &&
	grep -q '^port_state=active$' "$D/st"
ok $? "status reports verbs on rxe0, port active"
grep -q 'verbs transport (rxe0 port 1, active, MTU [0-9]*, writes up to 512 B inline)' "$D/log"
ok $? "the start-up line names transport, device, port, MTU and inline size (rxe takes inline_size's default, 512)"
running=$(res)
[ "$running" != "$base" ]
ok $? "rdma resource show lists the daemon's PD and CQ ($base -> $running)"

ip link set "${RP_VM_NETDEV:-rdma0}" down
for _ in $(seq 100); do grep -q 'RDMA device event: port error on port 1' "$D/log" && break; sleep 0.1; done
grep -q 'RDMA device event: port error on port 1' "$D/log"
ok $? "an async PORT_ERR reaches the loop and is logged by name"
ip link set "${RP_VM_NETDEV:-rdma0}" up
for _ in $(seq 100); do grep -q 'RDMA device event: port active on port 1' "$D/log" && break; sleep 0.1; done
grep -q 'RDMA device event: port active on port 1' "$D/log"
ok $? "PORT_ACTIVE follows when the link comes back"
"$PROBE" "$D/s.sock" status >/dev/null 2>&1
ok $? "the daemon still answers"

kill -TERM $pid
wait $pid
ok $? "SIGTERM: exit 0"
wait_steady 20 res_is "$base"
ok $? "every RDMA object is destroyed at exit ($(res) = $base)"
[ $fail -eq 0 ] || dump

conf verbs mlx5_9 >"$D/c.conf"
"$RPD" --foreground -c "$D/c.conf" >"$D/log" 2>&1
[ $? -eq 1 ] && grep -q 'no RDMA device named mlx5_9 (found: rxe0)' "$D/log"
ok $? "a configured device that does not exist is refused with what was found"

conf auto >"$D/c.conf"
"$RPD" --foreground -c "$D/c.conf" >"$D/log" 2>&1 &
pid=$!
wait_sock && "$PROBE" "$D/s.sock" status | grep -q '^transport=verbs$'
ok $? "transport = auto picks the active rxe device"
kill -TERM $pid
wait $pid
ok $? "and stops cleanly"

echo "1..$n"
rm -rf "$D"
exit $fail
