#!/bin/bash
# Runs inside the Soft-RoCE guest: local transfers on the verbs transport,
# checked against what only the device can show — its packet counters and
# its MR table (rdma resource show). Prints TAP. Needs top_builddir.
set -u
B=${top_builddir:?}
. "${top_srcdir:?}/tests/vm/vm-lib.sh"
RPD=$B/daemon/rdmaproxyd
IO=$B/tests/integration/test-client-io
D=$(mktemp -d)
n=0 fail=0
ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=1; fi
}
mrs() { rdma resource show mr 2>/dev/null | grep -c 'dev rxe0'; }
qps() { rdma resource show qp 2>/dev/null | grep -c 'link rxe0'; }
mrs_are() { [ "$(mrs)" -eq "$1" ]; }
res_are() { [ "$(mrs)" -eq "$1" ] && [ "$(qps)" -eq "$2" ]; }
pkts() { cat /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts; }
dump() {
	echo "# --- rdma link"; rdma link | sed 's/^/# /'
	echo "# --- rdma resource show"; rdma resource show | sed 's/^/# /'
	echo "# --- rdma resource show qp"; rdma resource show qp | sed 's/^/# /'
	echo "# --- rdma resource show mr"; rdma resource show mr | sed 's/^/# /'
	echo "# --- ibv_devinfo"; ibv_devinfo | sed 's/^/# /'
	echo "# --- daemon log"; sed 's/^/# /' "$D/log"
}

printf '[daemon]\nnode_name = g0\nsocket = %s/s.sock\nlisten = none\ntransport = verbs\n' "$D" \
	>"$D/c.conf"
mr0=$(wait_settled 20 mrs)
qp0=$(wait_settled 20 qps)
"$RPD" --foreground -c "$D/c.conf" >"$D/log" 2>&1 &
pid=$!
for _ in $(seq 200); do [ -S "$D/s.sock" ] && break; sleep 0.05; done
export RDMAPROXY_SOCKET=$D/s.sock
[ "$(qps)" -eq $((qp0 + 1)) ]
ok $? "the daemon's loopback RC QP is listed by rdma resource show qp"

for size in 1 4096 1048576 67108864; do
	p0=$(pkts)
	"$IO" pair "$size" >"$D/pair.out" 2>&1
	rc=$?
	p1=$(pkts)
	# WRITE + READ + SEND of SIZE bytes each, at most 4096 bytes per packet.
	want=$(((size + 4095) / 4096 * 2))
	[ $rc -eq 0 ] && [ $((p1 - p0)) -ge "$want" ]
	ok $? "write/notify, read, send at $size B: checksums match, the device sent $((p1 - p0)) packets (>= $want)"
	[ $rc -eq 0 ] || sed 's/^/# /' "$D/pair.out"
done

mkfifo "$D/hold"
"$IO" regions 4 65536 hold <"$D/hold" >"$D/regions.out" 2>&1 &
hpid=$!
exec 3>"$D/hold"
for _ in $(seq 200); do grep -q holding "$D/regions.out" && break; sleep 0.05; done
held=$(mrs)
[ "$held" -ge $((mr0 + 4)) ]
ok $? "rdma resource show mr lists the registered regions while a client holds them ($mr0 -> $held)"
exec 3>&-
wait $hpid
wait_steady 20 mrs_are "$mr0"
ok $? "and none is left after the client leaves ($(mrs) = $mr0)"

"$IO" loop 30 1048576 >"$D/victim.out" 2>&1 &
victim=$!
"$IO" loop 4 65536 >"$D/other.out" 2>&1 &
other=$!
sleep 1.5
kill -KILL $victim
wait $victim 2>/dev/null
wait $other
ok $? "a client SIGKILLed mid-transfer does not disturb another client's transfers"
grep -q FAIL "$D/other.out" && sed 's/^/# /' "$D/other.out"
wait_steady 20 mrs_are "$mr0"
ok $? "the killed client leaves no MR behind"
kill -0 $pid
ok $? "the daemon is still running"

kill -TERM $pid
wait $pid
ok $? "SIGTERM: exit 0"
wait_steady 20 res_are "$mr0" "$qp0"
ok $? "QPs and MRs back to baseline after the daemon exits"
[ $fail -eq 0 ] || dump
echo "1..$n"
rm -rf "$D"
exit $fail
