#!/bin/bash
# Runs inside the Soft-RoCE guest(s): rdmaproxyd peers over the verbs
# transport (rdma_cm, one RC QP per peer). Prints TAP. Needs top_builddir.
#   one guest:  daemons A and B on the same rxe device, peered with each other
#   two guests: B on g0, A on g1, peered over the virtio-net RoCE link
# Checks: remote write/read/send/notify with checksums from 1 B to 64 MiB;
# `rdma resource show qp|mr` list the daemons' QPs and MRs while clients are
# attached and return to baseline; a client killed mid-transfer leaves no MR
# and does not disturb another client; 1000 notifying writes (WRITE_WITH_IMM)
# each notified once; 8 B and 300 B writes from a hugetlb page punched out
# with the pool empty (locally and to the peer) go by reference, not inline,
# and the daemon survives them, as it does holes on both ends of the link
# (a SEND into one fails with -EFAULT); exporting 512 MiB and a peer's first
# LOOKUP of it register their MRs off the loop, withdrawing it deregisters
# them off the loop (another client's writes go on), also when the exporter
# leaves meanwhile; a connection has at most 4 EXPORTs registering at once; a
# withdrawn export fails later writes with
# RP_EUNEXPORTED while the link stays up and co-tenants are untouched; one
# made while the link is briefly down reaches the importer on the next link;
# one the importer could not hear of in time makes the device refuse a
# write: it is reported precisely, the ops flushed behind it are replayed on
# the next link; a peer
# daemon SIGKILLed mid-transfer: every op reported exactly once,
# reconnection, old handles fail with RP_ESTALE, transfers resume. An
# unauthenticated connector cannot write into B; B sets its connection up and
# tears it down as jobs off its loop thread. A peer known by a host name that
# takes seconds to look up does not stop the daemon serving its clients.
# Connectors that never authenticate cannot keep a daemon's own dials from
# the CQ room they need.
set -u
B=${top_builddir:?}
. "${top_srcdir:?}/tests/vm/vm-lib.sh"
RPD=$B/daemon/rdmaproxyd
IO=$B/tests/integration/test-peers-io
G=${RP_VM_GUEST:-0}
NG=${RP_VM_GUESTS:-1}
SYNC=${RP_VM_SYNC:-}
SIZES=${RP_TEST_PEER_SIZES:-"1 4096 65536 1048576 67108864"}
D=$(mktemp -d)
n=0 fail=0
declare -A PID PORT ADDR SP_PID SP_FD
hang_watch "${RP_TEST_HANG_AFTER:-1500}" "$D" # rp-vm stops the guest at 1800 s

ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=1; fi
	[ "$1" -eq 0 ]
}
diag() { sed 's/^/# /' "$@"; }
mrs() { rdma resource show mr 2>/dev/null | grep -c 'comm rdmaproxyd'; }
qps() { rdma resource show qp 2>/dev/null | grep 'comm rdmaproxyd' | grep -c 'type RC'; }
jobs_total() { "$B/tools/ctl/rdmaproxyctl" -s "$D/$1.sock" metrics | awk '$1 == "rdmaproxy_jobs_total" {print $2}'; }
jobs_are() { [ "$(jobs_total "$1")" = "$2" ]; }
mrs_are() { [ "$(mrs)" -eq "$1" ]; }
res_are() { [ "$(qps)" -eq "$1" ] && [ "$(mrs)" -eq "$2" ]; }
dump() {
	echo "# --- rdma link"; rdma link | diag
	echo "# --- rdma resource show"; rdma resource show | diag
	echo "# --- rdma resource show qp"; rdma resource show qp | diag
	echo "# --- rdma resource show mr"; rdma resource show mr | diag
	echo "# --- ibv_devinfo"; ibv_devinfo | diag
	for f in "$D"/*.log; do echo "# --- $f"; tail -n 150 "$f" | diag; done
}

if [ "$NG" -eq 2 ]; then
	ADDR[A]=10.99.0.2 ADDR[B]=10.99.0.1
	ME=$([ "$G" -eq 0 ] && echo B || echo A)
else
	ADDR[A]=${RP_VM_ADDR:-10.99.0.1} ADDR[B]=${RP_VM_ADDR:-10.99.0.1}
fi
PORT[A]=7471 PORT[B]=7472
printf 'shared-secret-key-for-tests-0001\n' >"$D/good.key"
chmod 600 "$D/good.key"

conf() { # conf NODE PEER
	printf '[daemon]\nnode_name = %s\nsocket = %s/%s.sock\ntransport = verbs\n' "$1" "$D" "$1"
	printf 'listen = %s:%s\nlog_level = debug\n' "${ADDR[$1]}" "${PORT[$1]}"
	printf '[peer "%s"]\naddress = %s:%s\nkey_file = %s/good.key\n' "$2" "${ADDR[$2]}" \
		"${PORT[$2]}" "$D"
}
# Children must not inherit the write ends of other clients' fifos, or those
# clients never see their stdin close.
nofifos() {
	local f
	for f in "${SP_FD[@]}"; do eval "exec $f>&-"; done
	exec "$@"
}
start() { # start NODE (a SIGKILLed daemon leaves its socket file behind)
	rm -f "$D/$1.sock"
	(nofifos "$RPD" --foreground -c "$D/$1.conf" >>"$D/$1.log" 2>&1) &
	PID[$1]=$!
	wait_for 10 test -S "$D/$1.sock"
}
lines() { wc -l <"$D/$1.log"; }
up() { # up NODE PEER [SECONDS] [FROM-LINE]
	wait_for "${3:-20}" sh -c "tail -n +${4:-1} '$D/$1.log' | grep -q 'peer $2: .* -> up'"
}
# NODE's daemon shows its link to PEER up in rdmaproxyctl peers.
peer_up() { # peer_up NODE PEER
	"$B/tools/ctl/rdmaproxyctl" -s "$D/$1.sock" --json peers 2>/dev/null | tr '{' '\n' |
		grep "\"name\": *\"$2\"" | grep -q "\"state\": *\"up\""
}
# The link is up and stays up (a reconnect can bring up a link that the
# duplicate the other side dialled supersedes a moment later).
steady_up() { # steady_up NODE PEER [SECONDS]
	SETTLE_SAMPLES=20 wait_steady "${3:-30}" peer_up "$1" "$2"
}
io() { (RDMAPROXY_SOCKET="$D/$1.sock" nofifos timeout "${RP_TEST_IO_TIMEOUT:-300}" "$IO" "${@:2}"); }
spawn() { # spawn TAG NODE ARGS...: background client, stdin from a fifo kept open
	local tag=$1 fd
	rm -f "$D/$tag.in" "$D/$tag.out"
	mkfifo "$D/$tag.in"
	(RDMAPROXY_SOCKET="$D/$2.sock" nofifos "$IO" "${@:3}" <"$D/$tag.in" >"$D/$tag.out" 2>&1) &
	SP_PID[$tag]=$!
	exec {fd}>"$D/$tag.in"
	SP_FD[$tag]=$fd
}
said() { wait_for "${3:-20}" grep -q "$2" "$D/$1.out"; }
finish() { # a client leaves when its stdin closes
	exec {SP_FD[$1]}>&-
	reap 60 "${SP_PID[$1]}" 2>/dev/null
}
# Two guests: marker files in the shared sync dir.
mark() { [ -n "$SYNC" ] && echo "${2:-}" >"$SYNC/$1"; }
await() { wait_for "${2:-120}" test -e "$SYNC/$1"; }

mr0=$(wait_settled 20 mrs)
qp0=$(wait_settled 20 qps)

# ---------------------------------------------------------------- one guest
one_guest() {
	conf A B >"$D/A.conf"
	conf B A >"$D/B.conf"
	start A && start B
	up A B && up B A
	ok $? "A and B on one rxe device connect over verbs and authenticate" || return
	grep -q "over verbs" "$D/A.log"
	ok $? "the link runs on the verbs transport"
	# Each daemon: [verbs] local_queue_pairs (default 4) loopback QPs and one peer QP.
	wait_for 10 sh -c "[ \$(rdma resource show qp | grep 'comm rdmaproxyd' | grep -c 'type RC') -eq $((qp0 + 10)) ]"
	ok $? "rdma resource show qp: 2 x 4 loopback + 2 peer RC QPs ($(qps), baseline $qp0)"
	base_mr=$(wait_settled 20 mrs)

	# A connector that never authenticates cannot touch any MR of B's.
	mark_a=$(lines A)
	mark_b=$(lines B)
	jobs_b=$(jobs_total B)
	"$B/tests/helpers/vp-intruder" "${ADDR[B]}" "${PORT[B]}" >"$D/intruder.out" 2>&1
	rc=$?
	diag "$D/intruder.out"
	[ $rc -eq 0 ]
	ok $? "an unauthenticated verbs connector's RDMA WRITE is refused by B's QP (no access before the handshake)"
	kill -0 "${PID[B]}" && wait_for 10 sh -c "tail -n +$mark_b '$D/B.log' | grep -q 'connection closed'"
	ok $? "B survives it and drops that connection" || tail -n +"$mark_b" "$D/B.log" | diag
	# Making that connection's QP and buffers, and destroying them, take
	# milliseconds each on rxe: B does both as jobs off its loop thread, and
	# nothing else of B's runs a job meanwhile.
	wait_for 10 jobs_are B $((jobs_b + 2)) &&
		tail -n +"$mark_b" "$D/B.log" | grep -q "QP and buffers set up off the loop thread in .* (ok)"
	ok $? "B set that connection up and tore it down as 2 jobs off its loop thread (rdmaproxy_jobs_total $jobs_b -> $(jobs_total B))" ||
		tail -n +"$mark_b" "$D/B.log" | diag
	! tail -n +"$mark_a" "$D/A.log" | grep -q "link .* lost"
	ok $? "the authenticated link A-B is unaffected"

	[ -n "${RP_TEST_PEER_SKIP_IO:-}" ] && SIZES=""
	for sz in $SIZES; do
		spawn exp B export "x$sz" "$sz" 1
		said exp ready
		out=$(io A xfer B "x$sz" "$sz" 77 2>&1)
		rc=$?
		sum=$(echo "$out" | sed -n 's/^write status=0 sum=\([0-9a-f]*\).*/\1/p')
		said exp "^recv" 60
		[ "$sz" = 67108864 ] && held=$(mrs)
		finish exp
		got_notify=$(sed -n 's/^notify imm=77 .*sum=//p' "$D/exp.out")
		got_recv=$(sed -n 's/^recv status=0 .*sum=//p' "$D/exp.out")
		[ $rc -eq 0 ] && [ -n "$sum" ]
		ok $? "$sz B: remote WRITE, READ back, SEND, precise bounds/endpoint errors" ||
			{ echo "$out" | diag; }
		[ "$got_notify" = "$sum" ] && [ "$got_recv" = "$sum" ]
		ok $? "$sz B: exporter notified after the data landed; message received; checksums match" ||
			diag "$D/exp.out"
		echo "$out" | grep time= | diag
	done
	[ "${held:-0}" -gt "$base_mr" ]
	ok $? "rdma resource show mr lists the client regions and the export MR while attached ($base_mr -> ${held:-?})"
	wait_steady 20 mrs_are "$base_mr"
	ok $? "and returns to the daemons' baseline after the clients left ($(mrs) = $base_mr)"

	# Writes from a hugetlb region whose page was punched out while the pool
	# is empty: the daemon's mapping of the hole raises SIGBUS, so a payload
	# small enough to go inline must not be copied from it (VMR_MAY_FAULT).
	hp=/proc/sys/vm/nr_hugepages
	old_hp=$(cat $hp)
	if echo 4 >$hp && [ "$(cat $hp)" -ge 2 ]; then
		spawn hs B export hsx 4096 0
		said hs ready
		RDMAPROXY_SOCKET="$D/A.sock" "$B/tests/helpers/hostile" hugesrc >"$D/hsl.out" 2>&1
		RDMAPROXY_SOCKET="$D/A.sock" "$B/tests/helpers/hostile" hugesrc B hsx >"$D/hsp.out" 2>&1
		finish hs
		echo "$old_hp" >$hp
		for w in hsl:"to a local export (loopback QP)" hsp:"to B's export (peer QP)"; do
			grep -q '^before_status=0$' "$D/${w%%:*}.out" &&
				grep -q '^write_status=0$' "$D/${w%%:*}.out" &&
				grep -q '^write300_status=0$' "$D/${w%%:*}.out"
			ok $? "8 B and 300 B from a punched-out huge page, pool empty, ${w#*:}: the device reads the pinned page" ||
				diag "$D/${w%%:*}.out"
		done
		kill -0 "${PID[A]}" && peer_up A B
		ok $? "A survives both and its link to B stays up" || tail -n 40 "$D/A.log" | diag
		# Holes on both ends: the devices read and write the pinned pages;
		# only a SEND is copied by B's CPU into the posted receive.
		echo 8 >$hp
		"$B/tests/helpers/hostile" hugepeer "$D/A.sock" "$D/B.sock" B >"$D/hp.out" 2>&1
		echo "$old_hp" >$hp
		bad=$(grep '_hole' "$D/hp.out" | grep -v '^send_into_hole=' | grep -cvx '[a-z_0-9]*=0')
		[ "$(grep -c '_hole' "$D/hp.out")" -eq 10 ] && [ "$bad" -eq 0 ] &&
			grep -qx 'send_into_hole=-14' "$D/hp.out" && grep -qx 'plain_write=0' "$D/hp.out"
		ok $? "holes on both ends of the link: one-sided ops use the pinned pages, a SEND into one fails with -EFAULT" ||
			diag "$D/hp.out"
		kill -0 "${PID[A]}" && kill -0 "${PID[B]}" && peer_up A B && peer_up B A
		ok $? "A and B survive it, the link stays up" || tail -n 40 "$D/B.log" | diag
	else
		echo "$old_hp" >$hp
		for _ in 1 2 3 4 5; do n=$((n + 1)); echo "ok $n # SKIP no huge pages in this guest"; done
	fi

	# Registering an MR pins every page of its region, unmapping a region
	# frees them: tens and hundreds of milliseconds for 512 MiB in this
	# guest. A does both off its loop thread (its own MR of an export, the
	# MR B gets at its first LOOKUP, the region's teardown), so a local
	# client of A keeps writing meanwhile. On the loop it got 1-2 (export)
	# and 1 (free) writes in 10 runs; off it, 17-53 and 145-597. (B's
	# LOOKUP gave 1-6 on the loop and 7-40 off it, a withdrawal 2-8 and
	# 5-65: B's daemon and the deregistering threads take the writer's CPU,
	# so neither is a test.)
	RDMAPROXY_SOCKET="$D/A.sock" "$B/tests/helpers/hostile" bigexport 512 "$D/B.sock" A B \
		>"$D/bx.out" 2>&1
	for w in export:during_export:6:"exporting 512 MiB registers its MR" \
		free:until_freed:30:"freeing it unpins and unmaps it"; do
		IFS=: read -r what key least text <<<"$w"
		got=$(sed -n "s/^writes_$key=//p" "$D/bx.out")
		grep -q "^${what}_status=0$" "$D/bx.out" && [ "${got:-0}" -ge "$least" ]
		ok $? "$text off A's loop: another client's writes go on (${got:-?}, at least $least)" ||
			diag "$D/bx.out"
	done
	grep -q '^open_status=0$' "$D/bx.out" && grep -q '^opens_alike=4 of 4$' "$D/bx.out"
	ok $? "4 opens of it at once from B, waiting for one registration of B's MR, all succeed" ||
		diag "$D/bx.out"
	# A raw client that pipelines EXPORTs has at most 4 registering at once.
	read -r pok pbusy <<<"$(sed -n 's/^pipelined_exports=6 ok=\([0-9]*\) busy=\([0-9]*\) other=0$/\1 \2/p' "$D/bx.out")"
	[ "${pok:-0}" -ge 4 ] && [ "${pbusy:-0}" -ge 1 ] && [ $((pok + pbusy)) -eq 6 ]
	ok $? "6 EXPORTs sent at once: 4 register, the others are answered -EBUSY ($(grep '^pipelined' "$D/bx.out"))" ||
		diag "$D/bx.out"
	# The exporter leaves while its export's MR is being registered, and
	# again while B's is: nothing crashes, no MR is left behind.
	RDMAPROXY_SOCKET="$D/A.sock" "$B/tests/helpers/hostile" bigexport 256 "$D/B.sock" A B quit \
		>"$D/bxq.out" 2>&1
	grep -q '^export_status=0$' "$D/bxq.out" && grep -q '^open_status=' "$D/bxq.out" &&
		kill -0 "${PID[A]}" && kill -0 "${PID[B]}" && peer_up A B && wait_steady 30 mrs_are "$base_mr"
	ok $? "an exporter that leaves while its MRs are being registered: answered, A and B up, MRs back to baseline ($(mrs) = $base_mr)" ||
		{ diag "$D/bxq.out"; tail -n 40 "$D/A.log" | diag; }

	spawn st B export st 16M 0
	said st ready
	io A stress B st 8 20 1M >"$D/st.out" 2>&1
	ok $? "8 clients at once write and read back their own 1 MiB slices through one QP" ||
		diag "$D/st.out"

	# 16 clients keep writes (half of them notifying) and read-backs in flight to B.
	spawn ld B count-notify ld 16M
	said ld ready
	io A load B ld 16 10 64K 4 >"$D/load.out" 2>&1
	rc=$?
	finish ld
	got=$(sed -n 's/^notified=\([0-9]*\) distinct=\([0-9]*\)$/\1 \2/p' "$D/ld.out")
	want=$(awk -F'notified_ok=' '/^load/ { split($2, a, " "); s += a[1] } END { print s + 0 }' \
		"$D/load.out")
	[ $rc -eq 0 ] && [ "$(grep -c '^load client=' "$D/load.out")" -eq 16 ] &&
		[ "$got" = "$want $want" ]
	ok $? "16 clients for 10 s through one QP: every op reported once, every byte right, each of the $want notifying writes notified once ($got)" ||
		diag "$D/load.out"

	# A client killed in the middle of transfers; another client on the same peer.
	io A storm B st 8 1M 16 >"$D/victim.out" 2>&1 &
	victim=$!
	spawn st2 B export st2 1M 0
	said st2 ready
	io A stress B st2 2 100 64K >"$D/other.out" 2>&1 &
	other=$!
	wait_for 120 grep -q flowing "$D/victim.out"
	kill -KILL $victim
	wait $victim 2>/dev/null
	wait $other
	ok $? "a client SIGKILLed mid-transfer does not disturb another client's transfers" ||
		diag "$D/other.out"
	finish st
	finish st2
	wait_steady 20 mrs_are "$base_mr"
	ok $? "the killed client leaves no MR behind ($(mrs) = $base_mr)"

	# Many notifying writes at once: WRITE_WITH_IMM into the 64-slot notify ring.
	spawn nb B export nb 4096 0
	said nb ready
	io A notify-burst B nb 1000 48 >"$D/burst.out" 2>&1
	rc=$?
	said nb "imm=999 " 20
	finish nb
	got=$(grep -c '^notify imm=' "$D/nb.out")
	uniq=$(sed -n 's/^notify imm=\([0-9]*\) .*/\1/p' "$D/nb.out" | sort -un | wc -l)
	[ $rc -eq 0 ] && [ "$got" -eq 1000 ] && [ "$uniq" -eq 1000 ]
	ok $? "1000 notifying writes, 48 in flight: each acknowledged, each notified once ($got notifications, $uniq distinct)" ||
		diag "$D/burst.out"

	# Withdrawal while the link is up: REVOKE, then the MR goes; the QP never fails.
	spawn e1 B export e1 64K 0
	said e1 ready
	spawn e2 B export e2 1M 2 # one receive per xfer below
	said e2 ready
	spawn hold A hold B e1
	said hold opened
	mark_a=$(lines A)
	finish e1
	io A storm B e2 4 64K 8 >"$D/cotenant.out" 2>&1 &
	co=$!
	wait_for 120 grep -q flowing "$D/cotenant.out"
	echo go >&"${SP_FD[hold]}"
	said hold "status="
	finish hold
	diag "$D/hold.out"
	grep -q "status=$((-4096 - 5)) " "$D/hold.out"
	ok $? "a WRITE to a withdrawn export fails with RP_EUNEXPORTED"
	wait $co
	rc=$?
	echo "# co-tenant during the withdrawal: $(grep '^storm' "$D/cotenant.out")"
	[ $rc -eq 0 ] && grep -q "ok=[1-9][0-9]* peerdown=0 outcome=0 stale=0 other=0 duplicate=0" "$D/cotenant.out"
	ok $? "the co-tenant's ops on the same QP all succeed" || diag "$D/cotenant.out"
	! tail -n +"$mark_a" "$D/A.log" | grep -q "link .* lost\|connection closed"
	ok $? "the link stayed up: the withdrawal was confirmed (REVOKE_R), not discovered by the device" ||
		tail -n +"$mark_a" "$D/A.log" | diag
	io A xfer B e2 64K 3 >/dev/null 2>&1
	ok $? "the link is usable after the withdrawal"

	# Withdrawal while the link is down for a moment: B keeps the MR and sends
	# the REVOKE when the link is back, before A can use the handle.
	spawn e3 B export e3 64K 0
	said e3 ready
	spawn hold3 A hold B e3
	said hold3 opened
	mark_a=$(lines A)
	mark_b=$(lines B)
	kill -STOP "${PID[A]}"
	wait_for 20 sh -c "tail -n +$mark_b '$D/B.log' | grep -q 'peer A: link .* lost'"
	ok $? "B drops the link to a stopped A (keepalive)"
	finish e3
	kill -CONT "${PID[A]}"
	up A B 40 "$mark_a"
	ok $? "A reconnects after it resumes"
	echo go >&"${SP_FD[hold3]}"
	said hold3 "status=" 30
	finish hold3
	grep -q "status=$((-4096 - 5)) " "$D/hold3.out"
	ok $? "a withdrawal made while the link was down reaches A on the next link: RP_EUNEXPORTED" ||
		diag "$D/hold3.out"
	! tail -n +"$mark_a" "$D/A.log" | grep -q "remote access error"
	ok $? "and A never wrote into the deregistered MR (no remote access error)" ||
		tail -n +"$mark_a" "$D/A.log" | diag

	# Withdrawal the importer cannot hear of in time: A stays stopped past
	# B's 5 s wait, and B deregisters A's MR of the export. B still sends
	# the withdrawal as soon as A's next link is up: A's next WRITE (made
	# once that link is steady) ends RP_EUNEXPORTED without meeting the
	# device, and nobody's QP fails. (An op A replays the moment the link is
	# up could still get there first.)
	# (A peer that ignores withdrawals does meet it: test-vm-export-acl.)
	spawn e5 B export e5 64K 0
	said e5 ready
	spawn hold5 A hold B e5
	said hold5 opened
	mark_a=$(lines A)
	mark_b=$(lines B)
	kill -STOP "${PID[A]}"
	wait_for 20 sh -c "tail -n +$mark_b '$D/B.log' | grep -q 'peer A: link .* lost'"
	finish e5
	wait_for 20 sh -c "tail -n +$mark_b '$D/B.log' | grep -q 'did not confirm the withdrawal'"
	ok $? "B gives up waiting for A to confirm the withdrawal and deregisters the MR"
	kill -CONT "${PID[A]}"
	up A B 40 "$mark_a"
	steady_up A B
	mark_a=$(lines A)
	io A storm B e2 4 64K 8 >"$D/cotenant2.out" 2>&1 &
	co=$!
	wait_for 120 grep -q flowing "$D/cotenant2.out"
	echo go >&"${SP_FD[hold5]}"
	said hold5 "status=" 30
	finish hold5
	diag "$D/hold5.out"
	grep -q "status=$((-4096 - 5)) " "$D/hold5.out"
	ok $? "a WRITE into the deregistered MR fails with RP_EUNEXPORTED"
	wait $co
	rc=$?
	echo "# co-tenant during the late withdrawal: $(grep '^storm' "$D/cotenant2.out")"
	tail -n +"$mark_a" "$D/A.log" | grep -E "remote access|sent again|lost" | diag
	! tail -n +"$mark_a" "$D/A.log" | grep -q "remote access error"
	ok $? "the withdrawal reached A on its new link first: the write never met B's device"
	[ $rc -eq 0 ] && grep -q "ok=[1-9][0-9]* peerdown=0 outcome=0 stale=0 other=0 duplicate=0" "$D/cotenant2.out"
	ok $? "the co-tenant's ops on the link all succeed" ||
		diag "$D/cotenant2.out"
	up A B 30 "$mark_a"
	io A xfer B e2 64K 3 >/dev/null 2>&1
	ok $? "the link is usable after the late withdrawal"
	finish e2

	# A peer daemon killed mid-transfer, then restarted.
	spawn k B export k 1M 0
	said k ready
	spawn hold2 A hold B k
	said hold2 opened
	# The storm runs until its stdin closes: from its first successful op
	# until after A has seen the link go, however slow the machine is.
	spawn storm A storm B k 0 64K 32
	said storm flowing 120
	mark_a=$(lines A)
	kill -KILL "${PID[B]}"
	wait "${PID[B]}" 2>/dev/null
	wait_for 60 sh -c "tail -n +$mark_a '$D/A.log' | grep -q 'verbs peer .*: connection closed'"
	seen=$?
	finish storm
	rc=$?
	diag "$D/storm.out"
	[ $rc -eq 0 ] && grep -q "ok=[1-9]" "$D/storm.out"
	ok $? "peer killed mid-transfer: every op reported exactly once (ok, peer down or outcome unknown)"
	finish k
	[ $seen -eq 0 ]
	ok $? "A's transport saw the connection go ($(tail -n +"$mark_a" "$D/A.log" | grep -m1 -o 'connection closed: .*'))"
	start B
	up A B 30 "$mark_a"
	ok $? "A reconnects when B returns"
	echo go >&"${SP_FD[hold2]}"
	said hold2 "status="
	finish hold2
	grep -q "status=$((-4096 - 25)) " "$D/hold2.out"
	ok $? "a handle from B's old incarnation fails cleanly (RP_ESTALE)" || diag "$D/hold2.out"
	spawn k3 B export k 64K 1
	said k3 ready
	io A xfer B k 64K 9 >/dev/null 2>&1
	ok $? "transfers to the restarted B work again"
	finish k3

	for x in A B; do
		kill -TERM "${PID[$x]}"
		reap 60 "${PID[$x]}"
		ok $? "daemon $x exits cleanly"
	done
	wait_steady 20 res_are "$qp0" "$mr0"
	ok $? "QPs and MRs back to the boot baseline ($(qps)/$qp0 QPs, $(mrs)/$mr0 MRs)"
}

# A peer's host name is looked up off the loop thread. C's peer "far" has a
# name no name server answers for (C's resolver asks one behind the dummy
# link, 3 s a try), and C serves its clients meanwhile. With the lookup on
# the loop, a client's 4 s of sync writes took 26 s, one write 3.0 s.
name_lookup() {
	local max took
	mkdir -p "$D/dns"
	printf 'nameserver 10.99.0.77\noptions timeout:3 attempts:1\n' >"$D/dns/resolv.conf"
	printf '[daemon]\nnode_name = C\nsocket = %s/C.sock\ntransport = verbs\nlisten = none\n' "$D" >"$D/C.conf"
	printf 'log_level = debug\n' >>"$D/C.conf"
	for f in far far2 far3; do
		printf '[peer "%s"]\naddress = %s-peer.invalid:7479\nkey_file = %s/good.key\n' "$f" "$f" "$D"
	done >>"$D/C.conf"
	rm -f "$D/C.sock"
	# /etc/resolv.conf may be a link into /run (systemd-resolved), a fresh
	# tmpfs in the guest: the file it names is made there first.
	(nofifos unshare -m sh -c 't=$(readlink -f /etc/resolv.conf) &&
		{ [ -e "$t" ] || { mkdir -p "${t%/*}" && : >"$t"; }; } &&
		mount --bind "$1" "$t" && exec "$2" --foreground -c "$3"' sh "$D/dns/resolv.conf" \
		"$RPD" "$D/C.conf" >>"$D/C.log" 2>&1) &
	PID[C]=$!
	wait_for 10 test -S "$D/C.sock"
	ok $? "daemon C starts, its peer known by a host name only" || { diag "$D/C.log"; return; }
	RDMAPROXY_SOCKET="$D/C.sock" timeout 120 "$B/tools/perf/rdmaproxy-perf" --json --quiet -s 8 -D 4 \
		write_sync >"$D/c-sync.json" 2>"$D/c-sync.err"
	max=$(python3 -c 'import json, sys
print(int(json.load(open(sys.argv[1]))["results"][0]["lat_us"]["max"] / 1000))' "$D/c-sync.json" 2>/dev/null)
	wait_for 20 grep -q "cannot look up far-peer.invalid" "$D/C.log"
	took=$(sed -n 's/.*far-peer.invalid:7479: looked up off the loop thread in \([0-9]*\) ms.*/\1/p' \
		"$D/C.log" | head -n 1)
	[ "${took:-0}" -ge 2000 ] && [ -n "$max" ] && [ "$max" -lt 1500 ]
	ok $? "C looks the name up off its loop thread (${took:-?} ms) while a client's sync writes go on (worst ${max:-?} ms)" ||
		{ diag "$D/C.log"; diag "$D/c-sync.err"; }
	# Three peers known by such names, dialled at once: at most two lookups
	# run at a time, so lookups that wait out the resolver leave the daemon's
	# other jobs a thread.
	wait_for 20 sh -c "[ \$(grep -c 'peer.invalid:7479: looked up off' '$D/C.log') -ge 3 ]"
	seq=$(grep -o -e 'looking up its address' -e 'looked up off' "$D/C.log" | sed 's/looking.*/s/; s/looked.*/e/' | tr -d '\n')
	most=$(echo "$seq" | awk '{ for (i = 1; i <= length($0); i++) { n += substr($0, i, 1) == "s" ? 1 : -1; if (n > m) m = n } } END { print m + 0 }')
	[ "$most" -eq 2 ] && [ "$(echo "$seq" | tr -cd s | wc -c)" -ge 3 ]
	ok $? "C looks its three named peers up at most two at a time ($most at most; starts and ends: $seq)" ||
		diag "$D/C.log"
	kill -TERM "${PID[C]}"
	reap 60 "${PID[C]}"
	ok $? "daemon C exits cleanly"
	wait_steady 20 res_are "$qp0" "$mr0"
	ok $? "QPs and MRs back to the boot baseline ($(qps)/$qp0 QPs, $(mrs)/$mr0 MRs)"
}

# ------------------------------------------------- CQ room for our own dials
# Daemon E's device CQ has room for two peer connections, and four loops of
# connectors that never authenticate keep taking it (each comes straight
# back when dropped; max_failed_handshakes = 0 stands for an attacker with
# many addresses). E's link to a peer added by a reload still comes up: a
# dial that finds no room drops the oldest connector that has not
# authenticated for 2 s and takes its room before a connector can take it
# back. Before, every dial found the CQ full while the connectors held it.
# F never dials E (its address for E has no listener): the link can only
# be E's own dial.
cq_evict() {
	local i room hp=() evicted full held t0
	rm -f "$D/hold.stop"
	# local_queue_pairs = 1: 513 entries; a peer connection 256 + 64 = 320.
	printf '[daemon]\nnode_name = E\nsocket = %s/E.sock\ntransport = verbs\n' "$D" >"$D/E.conf"
	printf 'listen = %s:7476\nlog_level = debug\n' "${ADDR[A]}" >>"$D/E.conf"
	printf '[peers]\nmax_failed_handshakes = 0\n' >>"$D/E.conf"
	printf '[verbs]\nlocal_queue_pairs = 1\ncq_depth = 1253\n' >>"$D/E.conf"
	printf '[daemon]\nnode_name = F\nsocket = %s/F.sock\ntransport = verbs\n' "$D" >"$D/F.conf"
	printf 'listen = %s:7478\nlog_level = debug\n' "${ADDR[A]}" >>"$D/F.conf"
	printf '[peer "E"]\naddress = %s:7499\nkey_file = %s/good.key\n' "${ADDR[A]}" "$D" \
		>>"$D/F.conf"
	start E && start F
	room=$(sed -n 's/.*room for \([0-9]*\) connections in cq_depth 1253.*/\1/p' "$D/E.log" | head -n 1)
	[ "$room" = 2 ]
	ok $? "daemon E's CQ has room for 2 peer connections (${room:-?})" || diag "$D/E.log"
	for i in 1 2 3 4; do
		(while [ ! -e "$D/hold.stop" ]; do
			timeout 30 "$B/tests/helpers/vp-intruder" "${ADDR[A]}" 7476 hold
			sleep 0.05
		done) >"$D/hold$i.out" 2>&1 &
		hp+=($!)
	done
	wait_for 60 sh -c "[ \$(cat '$D'/hold?.out | grep -c '^connected') -ge 2 ]"
	ok $? "connectors that never authenticate hold E's CQ room" || diag "$D"/hold?.out
	printf '[peer "F"]\naddress = %s:7478\nkey_file = %s/good.key\n' "${ADDR[A]}" "$D" \
		>>"$D/E.conf"
	t0=$SECONDS
	"$B/tools/ctl/rdmaproxyctl" -s "$D/E.sock" reload >/dev/null
	up E F 90
	ok $? "E's link to peer F comes up while they keep at it ($((SECONDS - t0)) s after the reload)" ||
		{ grep "peer F\|dropping" "$D/E.log" | tail -n 20 | diag; }
	# A dial that finds the CQ full while connectors hold room waits for one to be dropped.
	full=$(grep -c "peer F: .*completion queue full" "$D/E.log")
	held=$(grep "peer F: .*completion queue full" "$D/E.log" |
		sed -n 's/.*; \([0-9]*\) unauthenticated inbound hold room.*/\1/p' |
		awk '$1 > 0' | wc -l)
	evicted=$(grep -c "dropping the connection from .* not authenticated after" "$D/E.log")
	[ "$held" -eq 0 ]
	ok $? "no dial of E's failed for a full CQ while connectors held room ($full failed for a full CQ, $held of them then; $evicted connector(s) dropped for a dial)" ||
		{ grep "peer F\|dropping" "$D/E.log" | tail -n 20 | diag; }
	touch "$D/hold.stop"
	for i in "${hp[@]}"; do reap 60 "$i"; done
	kill -TERM "${PID[E]}" "${PID[F]}"
	reap 60 "${PID[E]}" && reap 60 "${PID[F]}"
	ok $? "daemons E and F exit cleanly"
	wait_steady 20 res_are "$qp0" "$mr0"
	ok $? "QPs and MRs back to the boot baseline ($(qps)/$qp0 QPs, $(mrs)/$mr0 MRs)"
}

# ---------------------------------------------------------------- two guests
two_guests() {
	local other=$([ "$ME" = A ] && echo B || echo A)

	conf "$ME" "$other" >"$D/$ME.conf"
	start "$ME"
	up "$ME" "$other" 60
	ok $? "$ME ($RP_VM_ADDR) and $other connect over the two-host RoCE link" || return
	grep -q "over verbs" "$D/$ME.log"
	ok $? "the link runs on the verbs transport"
	if [ "$ME" = B ]; then
		for sz in $SIZES; do
			spawn "exp$sz" B export "x$sz" "$sz" 1
			said "exp$sz" ready
		done
		spawn st B export st 16M 0
		said st ready
		spawn k B export k 1M 0
		said k ready
		mark exports-ready
		await xfers-done 600
		for sz in $SIZES; do
			said "exp$sz" "^recv" 30
			finish "exp$sz"
			want=$(cat "$SYNC/sum$sz" 2>/dev/null)
			got_notify=$(sed -n 's/^notify imm=77 .*sum=//p' "$D/exp$sz.out")
			got_recv=$(sed -n 's/^recv status=0 .*sum=//p' "$D/exp$sz.out")
			[ -n "$want" ] && [ "$got_notify" = "$want" ] && [ "$got_recv" = "$want" ]
			ok $? "$sz B: notified after the data landed and received the message on g0, checksums match A's" ||
				diag "$D/exp$sz.out"
		done
		await storm-running 300
		kill -KILL "${PID[B]}"
		wait "${PID[B]}" 2>/dev/null
		finish st
		finish k
		await storm-done 120
		start B
		spawn k3 B export k 64K 1
		said k3 ready
		mark restarted
		await final 300
		finish k3
	else
		await exports-ready 300
		for sz in $SIZES; do
			out=$(io A xfer B "x$sz" "$sz" 77 2>&1)
			rc=$?
			sum=$(echo "$out" | sed -n 's/^write status=0 sum=\([0-9a-f]*\).*/\1/p')
			mark "sum$sz" "$sum"
			[ $rc -eq 0 ] && [ -n "$sum" ]
			ok $? "$sz B: remote WRITE, READ back, SEND to g0, checksums match" ||
				{ echo "$out" | diag; }
			echo "$out" | grep time= | diag
		done
		io A stress B st 8 20 1M >"$D/st.out" 2>&1
		ok $? "8 clients on g1 write and read back their own slices on g0 through one QP" ||
			diag "$D/st.out"
		mark xfers-done
		spawn hold2 A hold B k
		said hold2 opened
		mark_a=$(lines A)
		# Until its stdin closes: from its first successful op until A has
		# seen the link go (the kill on g0 lands mid-transfer, however slow).
		spawn storm A storm B k 0 64K 32
		said storm flowing 120
		mark storm-running
		wait_for 120 sh -c "tail -n +$mark_a '$D/A.log' | grep -q 'verbs peer .*: connection closed'"
		ok $? "A's transport saw the connection to the killed g0 go"
		finish storm
		rc=$?
		diag "$D/storm.out"
		mark storm-done
		[ $rc -eq 0 ] && grep -q "ok=[1-9]" "$D/storm.out"
		ok $? "peer on g0 killed mid-transfer: every op reported exactly once"
		await restarted 120
		up A B 60 "$mark_a"
		ok $? "A reconnects when B returns"
		echo go >&"${SP_FD[hold2]}"
		said hold2 "status="
		finish hold2
		grep -q "status=$((-4096 - 25)) " "$D/hold2.out"
		ok $? "a handle from B's old incarnation fails cleanly (RP_ESTALE)" || diag "$D/hold2.out"
		io A xfer B k 64K 9 >"$D/x9.out" 2>&1
		ok $? "transfers to the restarted B work again" || diag "$D/x9.out"
		mark final
	fi
	kill -TERM "${PID[$ME]}"
	reap 60 "${PID[$ME]}"
	ok $? "daemon $ME exits cleanly"
	wait_steady 20 res_are "$qp0" "$mr0"
	ok $? "QPs and MRs back to the boot baseline ($(qps)/$qp0 QPs, $(mrs)/$mr0 MRs)"
}

if [ "$NG" -eq 2 ]; then two_guests; else one_guest; name_lookup; cq_evict; fi
echo "1..$n"
[ $fail -eq 0 ] || dump
for p in "${PID[@]}"; do kill -KILL "$p" 2>/dev/null; done
kill "$HANG_WATCH" 2>/dev/null
[ -n "${RP_TEST_KEEP:-}" ] && cp -r "$D" "$RP_TEST_KEEP"; rm -rf "$D"
exit $fail
