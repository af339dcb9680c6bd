#!/bin/bash
# Runs inside the Soft-RoCE guest: local transfers on the verbs transport,
# checked against what only the device can show — its packet counters and
# its MR table (rdma resource show). Prints TAP. Needs top_builddir.
set -u
B=${top_builddir:?}
. "${top_srcdir:?}/tests/vm/vm-lib.sh" # wait_settled, wait_steady, wait_for
RPD=$B/daemon/rdmaproxyd
IO=$B/tests/integration/test-client-io
D=$(mktemp -d)
hang_watch "${RP_TEST_HANG_AFTER:-1500}" "$D" # rp-vm stops the guest at 1800 s
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
printf '[verbs]\nlocal_queue_pairs = 3\n' >>"$D/c.conf"
mr0=$(wait_settled 20 mrs)
qp0=$(wait_settled 20 qps)
"$RPD" --foreground -c "$D/c.conf" >"$D/log" 2>&1 &
pid=$!
wait_for 30 grep -q "listening on $D/s.sock" "$D/log"
export RDMAPROXY_SOCKET=$D/s.sock
[ "$(qps)" -eq $((qp0 + 3)) ]
ok $? "the daemon's 3 loopback RC QPs (local_queue_pairs = 3) are listed by rdma resource show qp"

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

# As rdmaproxy.service runs it: another user than root, no capability and no
# way to gain one, only an unlimited locked-memory limit to register with.
N=$D/nonroot
mkdir -m 1777 "$N"
printf '[daemon]\nnode_name = g0\nsocket = %s/s.sock\nlisten = none\ntransport = verbs\n' "$N" \
	>"$D/n.conf"
chmod 755 "$D"
chmod 644 "$D/n.conf"
nonroot() { # nonroot MEMLOCK ARGS...: exec rdmaproxyd as user daemon (run it in "( ) &")
	exec prlimit --memlock="$1" setpriv --reuid=daemon --regid=daemon --clear-groups --inh-caps=-all \
		--bounding-set=-all --no-new-privs "$RPD" --foreground -c "$D/n.conf" "${@:2}"
}
(nonroot unlimited) >"$D/n.log" 2>&1 &
npid=$! # the daemon itself: the subshell became it
wait_for 30 grep -q "listening on $N/s.sock" "$D/n.log"
grep -q "verbs transport (rxe0" "$D/n.log" &&
	[ "$(awk '/^Uid:/ { print $3 }' /proc/$npid/status)" = "$(id -u daemon)" ] &&
	grep -q '^CapEff:[[:space:]]*0000000000000000$' /proc/$npid/status
rc=$?
ok $rc "as user daemon with no capability the daemon opens rxe0 (verbs transport)"
[ $rc -eq 0 ] || sed 's/^/# /' "$D/n.log"
# 4 regions of 16 MiB: twice the usual default limit of 8 MiB.
RDMAPROXY_SOCKET=$N/s.sock setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$IO" pair 16777216 >"$D/npair.out" 2>&1
rc=$?
ok $rc "it registers another user's 4 x 16 MiB regions and moves them (pair 16M)"
[ $rc -eq 0 ] || sed 's/^/# /' "$D/npair.out"
kill -TERM $npid
wait $npid
ok $? "and stops cleanly"
# With a small limit, a larger registration fails for that client alone.
(nonroot 16777216) >"$D/n2.log" 2>&1 &
npid=$!
wait_for 30 grep -q "listening on $N/s.sock" "$D/n2.log"
RDMAPROXY_SOCKET=$N/s.sock "$IO" regions 1 67108864 >"$D/nreg.out" 2>&1
grep -q '^allocated=0$' "$D/nreg.out" && ! grep -q '^error=none$' "$D/nreg.out" && kill -0 $npid
rc=$?
ok $rc "with a 16 MiB locked-memory limit a 64 MiB region is refused, the daemon lives ($(tr '\n' ' ' <"$D/nreg.out"))"
[ $rc -eq 0 ] || sed 's/^/# /' "$D/n2.log"
kill -TERM $npid
wait $npid
# Loopback QPs that would not fit the completion queue: fewer, and said so.
S=$D/small
mkdir "$S"
printf '[daemon]\nnode_name = g0\nsocket = %s/s.sock\nlisten = none\ntransport = verbs\n' "$S" \
	>"$D/s.conf"
printf '[verbs]\ncq_depth = 1024\nsend_queue_depth = 512\nlocal_queue_pairs = 4\n' >>"$D/s.conf"
"$RPD" --foreground -c "$D/s.conf" >"$D/s.log" 2>&1 &
spid=$!
wait_for 30 grep -q "listening on $S/s.sock" "$D/s.log"
grep -q "cq_depth 1024 holds 1 loopback QP(s) of 512 WRs, not 4 of 512: raise \[verbs\] cq_depth" \
	"$D/s.log" && [ "$(qps)" -eq $((qp0 + 1)) ] &&
	RDMAPROXY_SOCKET=$S/s.sock "$IO" pair 1048576 >"$D/spair.out" 2>&1
rc=$?
ok $rc "local_queue_pairs = 4 x 513 > cq_depth 1024: one loopback QP, a warning, transfers work ($(qps) QPs)"
[ $rc -eq 0 ] || sed 's/^/# /' "$D/s.log" "$D/spair.out"
kill -TERM $spid
wait $spid
# A completion queue bigger than the device allows (rxe: 32767 entries): as big as it allows.
B=$D/big
mkdir "$B"
printf '[daemon]\nnode_name = g0\nsocket = %s/b.sock\nlisten = none\ntransport = verbs\n' "$B" \
	>"$D/b.conf"
printf '[verbs]\ncq_depth = 1048576\n' >>"$D/b.conf"
"$RPD" --foreground -c "$D/b.conf" >"$D/b.log" 2>&1 &
bpid=$!
wait_for 30 grep -q "listening on $B/b.sock" "$D/b.log"
max=$(ibv_devinfo -v 2>/dev/null | sed -n 's/^[[:space:]]*max_cqe:[[:space:]]*\([0-9]*\).*/\1/p' | head -1)
grep -q "cq_depth 1048576 is more than the device's completion queues hold: using ${max:-none}\$" \
	"$D/b.log" && grep -q "verbs transport: .*room for" "$D/b.log" &&
	RDMAPROXY_SOCKET=$B/b.sock "$IO" pair 1048576 >"$D/bpair.out" 2>&1
rc=$?
ok $rc "cq_depth = 1048576 > the device's $max: the daemon uses $max, says so, transfers work"
[ $rc -eq 0 ] || sed 's/^/# /' "$D/b.log" "$D/bpair.out"
kill -TERM $bpid
wait $bpid
[ $fail -eq 0 ] || dump
echo "1..$n"
kill "$HANG_WATCH" 2>/dev/null
rm -rf "$D"
exit $fail
