#!/bin/bash
# Three daemons (A, B, C) on loopback with the tcp peer transport: remote
# write/read/send/notify with checksums at several sizes, many clients at
# once, a peer SIGKILLed in the middle of transfers (exactly-once reports,
# survivor healthy, reconnection, stale handles), wrong key and unknown peer
# rejected, peers removed and added by a SIGHUP reload. Misbehaving peers
# (test-peers-raw): unauthenticated HELLOs naming a configured peer disturb
# no genuine link; a peer flooding requests it never reads the replies of
# leaves the daemon's memory bounded and is dropped. A client's hugetlb
# region with a hole punched in it (pool empty) costs its own operations
# -EFAULT, in either direction, never a daemon or the link. A message into
# a receive whose region is freed mid-way fails its SEND. An unexport
# returns only once a peer's WRITE into the export has ended.
. "$(dirname "$0")/lib.sh"

IO="$top_builddir/tests/integration/test-peers-io"
RAW="$top_builddir/tests/integration/test-peers-raw"
CTL="$top_builddir/tools/ctl/rdmaproxyctl"
SIZES=${PEER_TEST_SIZES:-"1 4096 1M 64M"}


declare -A PORT PID
ports=($(free_ports 7))
i=0
for n in A B C D E Y Z; do PORT[$n]=${ports[i++]}; done
# Where nobody listens (F is a raw client, N a wrong address): a port outside
# the ephemeral range, or a daemon dialling it could connect to itself (its
# connection's source port can be the port it dials), as happened once to F.
PORT[F]=9 PORT[N]=9
printf 'shared-secret-key-for-tests-0001\n' >"$T_DIR/good.key"
printf 'another-secret-that-does-not-fit\n' >"$T_DIR/bad.key"
chmod 600 "$T_DIR"/*.key

# conf NODE PEER[:KEYFILE]...: config of NODE, peers listed after it.
conf() {
	local n=$1 p k
	shift
	{
		echo "[daemon]"
		echo "node_name = $n"
		echo "socket = $T_DIR/$n.sock"
		echo "transport = tcp"
		echo "listen = 127.0.0.1:${PORT[$n]}"
		echo "log_level = debug"
		for p in "$@"; do
			k=${p#*:}
			[ "$k" = "$p" ] && k=good
			p=${p%%:*}
			echo "[peer \"$p\"]"
			echo "address = 127.0.0.1:${PORT[$p]}"
			echo "key_file = $T_DIR/$k.key"
		done
	} >"$T_DIR/$n.conf"
}

start() { # start NODE
	start_daemon "$T_DIR/$1.log" -c "$T_DIR/$1.conf"
	PID[$1]=$T_LAST_PID
	wait_for 10 test -S "$T_DIR/$1.sock"
}

up() { # up NODE PEER [SECONDS]: NODE's log says PEER is up (after LINE)
	local from=${4:-1}
	wait_for "${3:-15}" sh -c "tail -n +$from '$T_DIR/$1.log' | grep -q 'peer $2: .* -> up'"
}

lines() { wc -l <"$T_DIR/$1.log"; }

# state_is NODE PEER STATE: rdmaproxyctl on NODE says PEER is in STATE.
state_is() {
	if command -v jq >/dev/null 2>&1; then
		RDMAPROXY_SOCKET="$T_DIR/$1.sock" "$CTL" --json peers |
			jq -e ".peers[] | select(.name == \"$2\") | .state == \"$3\"" >/dev/null
	else
		RDMAPROXY_SOCKET="$T_DIR/$1.sock" "$CTL" peers | grep -Eq "^$2 +[^ ]+ +tcp +$3( |\$)"
	fi
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

io() { # io NODE ARGS...
	RDMAPROXY_SOCKET="$T_DIR/$1.sock" "$IO" "${@:2}"
}

# spawn TAG NODE ARGS...: a client in the background, stdin from a fifo kept
# open here (closing it ends "export"), stdout in $T_DIR/TAG.out.
declare -A SP_PID SP_FD
spawn() {
	local tag=$1 fd
	rm -f "$T_DIR/$tag.in" "$T_DIR/$tag.out"
	mkfifo "$T_DIR/$tag.in"
	io "$2" "${@:3}" <"$T_DIR/$tag.in" >"$T_DIR/$tag.out" 2>&1 &
	SP_PID[$tag]=$!
	exec {fd}>"$T_DIR/$tag.in"
	SP_FD[$tag]=$fd
}
said() { wait_for "${3:-10}" grep -q "$2" "$T_DIR/$1.out"; } # said TAG PATTERN [SECS]
finish() {
	exec {SP_FD[$1]}>&-
	wait "${SP_PID[$1]}" 2>/dev/null
}

conf A B C
conf B A C
conf C A B
start A
start B
start C
up A B && up A C && up B C && up C A
ok $? "three daemons connect to each other" || diag "$T_DIR/A.log"
grep -q "authenticated" "$T_DIR/A.log"
ok $? "links are authenticated"

# ---- write / read / send / notify at several sizes, A -> B and C -> B ----
for sz in $SIZES; do
	spawn exp B export "x$sz" "$sz" 1
	said exp ready
	out=$(io A xfer B "x$sz" "$sz" 77 2>&1)
	rc=$?
	echo "$out" | diag
	sum=$(echo "$out" | sed -n 's/^write status=0 sum=\([0-9a-f]*\).*/\1/p')
	said exp "^recv" 20
	finish exp
	diag "$T_DIR/exp.out"
	got_notify=$(sed -n 's/^notify imm=77 .*sum=//p' "$T_DIR/exp.out")
	got_recv=$(sed -n 's/^recv status=0 .*sum=//p' "$T_DIR/exp.out")
	[ "$rc" -eq 0 ] && [ -n "$sum" ]
	ok $? "size $sz: remote write, read-back checksum, send, precise errors"
	[ "$got_notify" = "$sum" ]
	ok $? "size $sz: exporter notified with imm, landed checksum matches"
	[ "$got_recv" = "$sum" ]
	ok $? "size $sz: message received on B's endpoint with the same checksum"
done

# ---- many clients at once, from two daemons into one export ----
spawn st C export st 16M 0
said st ready
io A stress C st 8 20 1M >"$T_DIR/st1" 2>&1 &
s1=$!
io B stress C st 8 20 1M 8 >"$T_DIR/st2" 2>&1
r2=$?
wait "$s1"
r1=$?
diag "$T_DIR/st1" "$T_DIR/st2"
[ $r1 -eq 0 ] && [ $r2 -eq 0 ]
ok $? "16 clients on two daemons write and read back their own slices concurrently"
finish st

# ---- 16 clients keep writes (half notifying) and reads in flight to one peer ----
spawn ld B count-notify ld 16M
said ld ready
io A load B ld 16 5 64K 4 >"$T_DIR/load" 2>&1
r=$?
finish ld
got=$(sed -n 's/^notified=\([0-9]*\) distinct=\([0-9]*\)$/\1 \2/p' "$T_DIR/ld.out")
want=$(awk -F'notified_ok=' '/^load/ { split($2, a, " "); s += a[1] } END { print s + 0 }' "$T_DIR/load")
[ $r -eq 0 ] && [ "$(grep -c '^load client=' "$T_DIR/load")" -eq 16 ] && [ "$got" = "$want $want" ]
ok $? "16 clients for 5 s: every op reported once, every byte read back right, each of the $want notifying writes notified once ($got)"
diag "$T_DIR/load"

# ---- hugetlb holes (page punched out, pool empty) on both ends of a link ----
hp=/proc/sys/vm/nr_hugepages
huge_lock
old_hp=$(cat $hp 2>/dev/null || echo 0)
if [ "$(id -u)" -eq 0 ] && echo 8 >$hp 2>/dev/null && [ "$(cat $hp)" -ge 4 ]; then
	"$top_builddir/tests/helpers/hostile" hugepeer "$T_DIR/A.sock" "$T_DIR/B.sock" B \
		>"$T_DIR/hp.out" 2>&1
	echo "$old_hp" >$hp
	diag "$T_DIR/hp.out"
	if grep -q '^huge=' "$T_DIR/hp.out"; then
		for _ in 1 2 3; do echo "ok $((T_N += 1)) # SKIP no huge pages for the client"; done
	else
		bad=$(grep -E '_hole' "$T_DIR/hp.out" | grep -cvx '[a-z_0-9]*=-14')
		[ "$(grep -c '_hole' "$T_DIR/hp.out")" -eq 10 ] && [ "$bad" -eq 0 ]
		ok $? "reads, writes and sends into, from and out of hugetlb holes on either end fail with -EFAULT ($bad did not)"
		kill -0 "${PID[A]}" && kill -0 "${PID[B]}" && state_is A B up && state_is B A up
		ok $? "both daemons survive them and the link stays up"
		grep -qx 'plain_write=0' "$T_DIR/hp.out"
		ok $? "a plain write over the same link then succeeds"
	fi
else
	echo "$old_hp" >$hp 2>/dev/null
	echo "ok $((T_N += 1)) # SKIP cannot reserve huge pages here (needs root)"
fi

# ---- big transfers of hugetlb memory (the daemons copy it, in pieces) ----
# B's export and receive and A's client's regions on huge pages: 80 MiB
# written (5 pieces of 16 MiB from one copy, notified once), read back (B
# copies each piece: more than the 64 MiB it may copy for one peer at once)
# and sent. Then 40 such writes in a row, every other one notifying (a copy
# not given back would use up the 256 MiB all copies may take after 16), and
# 300 MiB written from huge pages (more than that budget) into an export on
# normal pages.
if [ "$(id -u)" -eq 0 ] && echo 200 >$hp 2>/dev/null && [ "$(cat $hp)" -ge 200 ]; then
	export RP_TEST_HUGE=1
	spawn hx B export hx 80M 1
	said hx ready 30
	out=$(io A xfer B hx 80M 21 2>&1)
	rc=$?
	said hx "^recv" 30
	finish hx
	unset RP_TEST_HUGE
	echo "$out" | diag
	diag "$T_DIR/hx.out"
	sum=$(echo "$out" | sed -n 's/^write status=0 sum=\([0-9a-f]*\).*/\1/p')
	[ "$rc" -eq 0 ] && [ -n "$sum" ] &&
		[ "$(sed -n 's/^notify imm=21 .*sum=//p' "$T_DIR/hx.out")" = "$sum" ] &&
		[ "$(sed -n 's/^recv status=0 .*sum=//p' "$T_DIR/hx.out")" = "$sum" ]
	ok $? "80 MiB of hugetlb memory written (notified once), read back and sent over tcp, checksums match"
	spawn hw B export hw 80M 0
	said hw ready 30
	out=$(RP_TEST_HUGE=1 io A put B hw 80M 23 40 2>&1)
	rc=$?
	wait_for 30 sh -c "[ \$(grep -c '^notify imm=23 off=0 len=83886080 ' '$T_DIR/hw.out') -ge 20 ]"
	finish hw
	echo "$out" | diag
	sum=$(echo "$out" | sed -n 's/^write status=0 times=40 sum=//p')
	[ "$rc" -eq 0 ] && [ -n "$sum" ] && [ "$(grep -c '^notify' "$T_DIR/hw.out")" -eq 20 ] &&
		[ "$(sed -n 's/^notify imm=23 off=0 len=83886080 sum=//p' "$T_DIR/hw.out" | sort -u)" = "$sum" ]
	ok $? "40 writes of 80 MiB of hugetlb memory in a row (every other notifying): each lands, 20 notified once each for the whole write" ||
		tail -3 "$T_DIR/hw.out" | diag
	spawn hw B export hw 300M 0
	said hw ready 30
	out=$(RP_TEST_HUGE=1 io A put B hw 300M 22 2>&1)
	rc=$?
	said hw "^notify" 30
	finish hw
	echo "$out" | diag
	diag "$T_DIR/hw.out"
	sum=$(echo "$out" | sed -n 's/^write status=0 times=1 sum=//p')
	[ "$rc" -eq 0 ] && [ -n "$sum" ] &&
		[ "$(sed -n 's/^notify imm=22 off=0 len=314572800 sum=//p' "$T_DIR/hw.out")" = "$sum" ]
	ok $? "a 300 MiB write from hugetlb memory lands whole, notified once for the whole write"
	echo "$old_hp" >$hp
else
	echo "$old_hp" >$hp 2>/dev/null
	for _ in 1 2 3; do echo "ok $((T_N += 1)) # SKIP cannot reserve 200 huge pages here (needs root)"; done
fi
huge_unlock

# ---- a peer SIGKILLed in the middle of transfers ----
spawn k B export k 1M 0
said k ready
spawn hold A hold B k
said hold opened
# The storm runs until its stdin closes: from its first successful op until
# after A has noticed the death, however slow the machine is.
spawn storm A storm B k 0 64K 32
said storm flowing 60
kill -KILL "${PID[B]}"
wait_for 60 grep -q "peer B: .*keepalive\|peer B: link .* lost\|peer B: up -> backoff" "$T_DIR/A.log"
seen=$?
finish storm
rc=$?
diag "$T_DIR/storm.out"
[ $rc -eq 0 ] && grep -q "ok=[1-9]" "$T_DIR/storm.out"
ok $? "peer killed mid-transfer: every op reported exactly once (ok, peer down or outcome unknown)"
[ $seen -eq 0 ]
ok $? "survivor noticed the peer's death"
spawn k2 C export k2 64K 1
said k2 ready
io A xfer C k2 64K 5 >/dev/null 2>&1
ok $? "survivor healthy: A <-> C transfers still work"
finish k2
io A expect-open B k $((-4097))
ok $? "while B is down, opening its export says peer down"

mark=$(lines A)
start B
up A B 20 "$mark"
ok $? "A reconnects when B returns"
grep -q "peer B restarted" "$T_DIR/A.log"
ok $? "the new incarnation is noticed"
echo go >&"${SP_FD[hold]}"
said hold "status="
diag "$T_DIR/hold.out"
grep -q "status=$((-4096 - 25)) " "$T_DIR/hold.out"
ok $? "a handle from B's old incarnation fails cleanly (RP_ESTALE)"
finish hold
spawn k3 B export k 64K 1
said k3 ready
io A xfer B k 64K 9 >/dev/null 2>&1
ok $? "transfers to the restarted B work again"
finish k3

# ---- wrong key and unknown peer ----
conf D A:bad
sed -i "s|^\[peer \"C\"\]|[peer \"D\"]\naddress = 127.0.0.1:${PORT[D]}\nkey_file = $T_DIR/good.key\n[peer \"C\"]|" "$T_DIR/A.conf"
kill -HUP "${PID[A]}"
start D
wait_for 30 grep -q "shared key" "$T_DIR/D.log"
ok $? "wrong key: rejected, the dialling side logs why" || tail -n 40 "$T_DIR/D.log" | diag
wait_for 30 grep -q "handshake with D .*shared key\|rejected by the peer: .*shared key" "$T_DIR/A.log"
ok $? "wrong key: the other side logs it too" || grep -n 'peer D\|reload\|D:' "$T_DIR/A.log" | tail -n 40 | diag
! grep -q "peer D: .* -> up" "$T_DIR/A.log"
ok $? "wrong key: never up"
conf E A
start E
wait_for 10 grep -q "'E' is not a configured peer" "$T_DIR/A.log"
ok $? "unknown peer rejected with the reason logged"
wait_for 10 grep -q "rejected by the peer: .*not a configured peer" "$T_DIR/E.log"
ok $? "unknown peer: the rejected side logs the reason"

# ---- reload: remove C from A, then add it back ----
mark=$(lines A)
conf A B
kill -HUP "${PID[A]}"
wait_for 10 sh -c "tail -n +$mark '$T_DIR/A.log' | grep -q 'peer C removed'"
ok $? "reload: removed peer is drained and closed"
wait_for 10 sh -c "tail -n +$mark '$T_DIR/A.log' | grep -q 'peer connection from .* closed\|link .* lost'"
ok $? "reload: the connection to C is gone"
mark=$(lines A)
conf A B C
kill -HUP "${PID[A]}"
up A C 15 "$mark"
ok $? "reload: added peer connects"

# ---- unauthenticated HELLOs naming a configured peer ----
# Z must dial Y (Y has a wrong address for Z), while a stranger keeps
# connections open to Z whose HELLO names Y and which never authenticate:
# they must neither close Z's own attempts nor hold back its dialling.
conf Z Y
conf Y Z
sed -i "s|^address = .*|address = 127.0.0.1:${PORT[N]}|" "$T_DIR/Y.conf"
start Z
"$RAW" hello "${PORT[Z]}" Y 20 >"$T_DIR/hello.out" 2>&1 &
hello=$!
wait_for 5 grep -q started "$T_DIR/hello.out"
sleep 0.5
start Y
wait_for 10 state_is Z Y up
ok $? "strangers' HELLOs naming Y: Z's link to Y still comes up" || diag "$T_DIR/Z.log"
wait_for 5 state_is Y Z up
ok $? "... and Y sees Z up"
spawn zy Y export zy 64K 1
said zy ready
io Z xfer Y zy 64K 11 >/dev/null 2>&1
ok $? "... and transfers Z -> Y work while the strangers stay connected"
finish zy
wait_for 6 grep -q "peer connection from .* (as Y) closed: handshake timeout" "$T_DIR/Z.log"
ok $? "the strangers' connections end by the handshake timeout"
kill "$hello" 2>/dev/null
wait "$hello" 2>/dev/null
for n in Y Z; do stop_daemon "${PID[$n]}"; done

# ---- a peer that floods requests and never reads the replies ----
# It authenticates as F (configured on A with the right key), looks an
# export up, then sends READs of it and never reads again. Before
# backpressure every READ queued a reply (and pinned the region) forever.
conf A B C F
kill -HUP "${PID[A]}"
spawn fl A export fl 1M 0
said fl ready
spawn fb B export fb 64K 2
said fb ready
wait_for 5 sh -c "grep -q 'peer F: .* -> backoff' '$T_DIR/A.log'"
mark=$(lines A)
rss0=$(wait_settled 20 rss_kb "${PID[A]}")
"$RAW" flood "${PORT[A]}" F A "$T_DIR/good.key" fl 200000 8 >"$T_DIR/flood.out" 2>&1 &
flood=$!
wait_for 10 grep -q ready "$T_DIR/flood.out"
ok $? "a raw client authenticates as F and looks the export up" || diag "$T_DIR/flood.out"
max=$rss0
xfer_rc=
t0=${EPOCHREALTIME/./}
while kill -0 "$flood" 2>/dev/null; do
	r=$(rss_kb "${PID[A]}")
	[ "${r:-0}" -gt "$max" ] && max=$r
	# By the clock, not by iterations: on a busy host an iteration can take long.
	if [ -z "$xfer_rc" ] && [ $((${EPOCHREALTIME/./} - t0)) -ge 1500000 ]; then
		# 1.5 s into the flood: A has long stopped reading from F.
		io A xfer B fb 64K 13 >/dev/null 2>&1
		xfer_rc=$?
	fi
	sleep 0.1
done
wait "$flood"
flood_rc=$?
diag "$T_DIR/flood.out"
echo "# A's VmRSS: $rss0 kB before the flood, at most $max kB during it"
[ $((max - rss0)) -lt 32768 ]
ok $? "flood of READs never read: A's memory grows by less than 32 MiB"
[ "$flood_rc" -eq 0 ] && tail -n +"$mark" "$T_DIR/A.log" | grep -q "peer F: link .* lost: the peer is not reading"
ok $? "A drops the flooding peer and logs why" ||
	tail -n +"$mark" "$T_DIR/A.log" | grep "peer F" | tail -5 | diag
[ "${xfer_rc:-1}" -eq 0 ]
ok $? "during the flood, A's clients still transfer to B"
io A xfer B fb 64K 14 >/dev/null 2>&1
ok $? "after it, too"
finish fb # first: its client holds fl's fifo open too
finish fl

# ---- a message arriving into a receive whose region is freed: nobody got it ----
# B's client frees the receive's region once the first bytes of A's 64 MiB
# SEND land: the receive completes -ECANCELED and the SEND -RP_ENORECV (-4103).
# If the message was whole before the free (a busy host), both complete 0
# and it is tried again. A SEND told 0 for a cancelled receive fails.
rf=
for try in 1 2 3; do
	spawn rf B recv-free "rf$try" 64M
	said rf ready
	sent=$(io A send-big B "rf$try" 64M 2>&1)
	said rf "^recv" 60
	finish rf
	echo "$sent" | diag
	diag "$T_DIR/rf.out"
	rf="$(sed -n 's/^send status=//p' <<<"$sent")/$(sed -n 's/^recv status=\([-0-9]*\).*/\1/p' "$T_DIR/rf.out")"
	[ "$rf" = "0/0" ] || break
done
case $rf in
-4103/-125) ok 0 "a receive's region freed mid-message: the receive -ECANCELED, the SEND -RP_ENORECV" ;;
0/0) ok 0 "# SKIP the message was whole before each free (3 tries): both completed 0" ;;
*) ok 1 "a receive's region freed mid-message: SEND/receive $rf, not -4103/-125" ;;
esac
spawn rfok B bind rfok 1 open
said rfok ready
io A expect-send B rfok 0 >/dev/null 2>&1
ok $? "A's clients still send to B afterwards"
finish rfok

# ---- rp_region_unexport() returns only once incoming transfers have ended ----
# F (a raw peer that never confirms withdrawals) sends half of a 1 MiB
# WRITE, then the rest 1 KiB every 50 ms (26 s): past the 5 s A waits for it
# to confirm the withdrawal, and past the 10 s A lets a transfer of a
# withdrawn export go on before it closes the link.
rm -f "$T_DIR/uw.in" "$T_DIR/sw.in"
mkfifo "$T_DIR/uw.in" "$T_DIR/sw.in"
RDMAPROXY_SOCKET="$T_DIR/A.sock" "$top_builddir/tests/helpers/hostile" unexportwait uw 1048576 F \
	<"$T_DIR/uw.in" >"$T_DIR/uw.out" 2>&1 &
uw=$!
exec {uw_fd}>"$T_DIR/uw.in"
wait_for 10 grep -q ready "$T_DIR/uw.out"
"$RAW" slowwrite "${PORT[A]}" F A "$T_DIR/good.key" uw <"$T_DIR/sw.in" >"$T_DIR/sw.out" 2>&1 &
sw=$!
exec {sw_fd}>"$T_DIR/sw.in"
wait_for 10 grep -q half "$T_DIR/sw.out"
mark=$(lines A)
echo unexport >&$uw_fd
echo go >&$sw_fd
wait_for 30 grep -q unexported "$T_DIR/uw.out"
ok $? "unexport returns while a peer trickles a WRITE into the export"
exec {sw_fd}>&-
wait "$sw" # F's link is gone: its sends fail
echo done >&$uw_fd
exec {uw_fd}>&-
wait "$uw"
diag "$T_DIR/uw.out" "$T_DIR/sw.out"
landed=$(sed -n 's/^unexported status=0 landed=//p' "$T_DIR/uw.out")
[ -n "$landed" ] && [ "$landed" -lt 1048576 ] && grep -qx "later=$landed" "$T_DIR/uw.out"
ok $? "... once A closed that link: nothing landed after it returned (${landed:-?} of 1048576 B before)"
tail -n +"$mark" "$T_DIR/A.log" | grep -q "peer F: closing its link: a transfer of a withdrawn export did not end"
ok $? "A logs why it closed F's link"

for n in A B C; do
	stop_daemon "${PID[$n]}"
	ok $? "daemon $n exits cleanly"
done
grep -h "ERROR\|runtime error\|AddressSanitizer" "$T_DIR"/*.log | head -5 | diag
! grep -q "runtime error\|AddressSanitizer\|LeakSanitizer" "$T_DIR"/*.log
ok $? "no sanitizer reports"
if [ "$T_FAIL" -ne 0 ]; then
	keep="${TMPDIR:-/tmp}/rp-peers-failed.$$"
	mkdir -p "$keep" && cp "$T_DIR"/*.log "$T_DIR"/*.conf "$keep"/ && echo "# logs kept in $keep"
fi
t_done
