#!/bin/bash
# Runs inside the two Soft-RoCE guests (rp-vm run --guests 2): rdmaproxyd B
# on g0 (10.99.0.1) with a sink client, A on g1 (10.99.0.2) with the
# driving clients (tests/helpers/fault-io), peered over the verbs transport
# on the virtio-net link, while the link misbehaves (tc netem on both
# guests' eth0, so both directions):
#   0  a clean link (the reference)      1  1 % of the packets lost
#   2  10 % lost                          3  20 ms +- 5 ms delay (in order)
#   4  cut for 10 s (100 % lost), with A restarted first with [verbs]
#      ack_timeout = 14 and retry_count = 6, so that A's device gives up
#      (IBV_WC_RETRY_EXC_ERR; rxe retries forever with the default 7)
#   5  1 % lost and B SIGKILLed mid-transfer, then restarted
# In each, writes of fresh data (half of them notifying), their read-backs
# and sends of checksummed messages, DEPTH at a time, 1 B to 256 KiB. Then:
# every op was reported exactly once; every OK read-back matches the OK
# write before it; every status is OK, "peer down" or "outcome unknown"
# (plus, where B restarted, "stale handle" and "no endpoint"; and "no
# receive posted" when the sink fell behind): no work-completion error
# leaks out as another code; the sink was notified of / received every OK
# notifying write / send exactly once, none that certainly failed, none
# twice, and every message arrived intact; both daemons show the link up
# again (rdmaproxyctl peers) and a new client's transfers all succeed; QPs
# and MRs return to their steady counts, and to the boot baseline once the
# daemons stop. Across the cut A's link must fail with "retry counter
# exceeded" and the same client's ops succeed again on the new link;
# across B's restart the old handle must fail with RP_ESTALE and a new one
# work. Per phase it prints ops submitted / OK / failed by status. g1
# drives and decides; g0 follows its numbered commands in $RP_VM_SYNC.
# Prints TAP. Needs top_builddir.
set -u
B=${top_builddir:?}
. "${top_srcdir:?}/tests/vm/vm-lib.sh"
RPD=$B/daemon/rdmaproxyd
CTL=$B/tools/ctl/rdmaproxyctl
FIO=$B/tests/helpers/fault-io
G=${RP_VM_GUEST:-0}
SYNC=${RP_VM_SYNC:-}
DEV=${RP_VM_NETDEV:-eth0}
DEPTH=${RP_TEST_FAULT_DEPTH:-8}
SLOT=${RP_TEST_FAULT_SLOT:-256K}
SECS=${RP_TEST_FAULT_SECONDS:-8} # traffic per phase
CUT=${RP_TEST_FAULT_CUT:-10}	 # seconds the link is cut
PHASES=" ${RP_TEST_FAULT_PHASES:-1 2 3 4 5} " # a subset, when debugging
export RDMAPROXY_WAIT=${RDMAPROXY_WAIT:-sleep} # one vCPU per guest: leave it to the daemon
D=$(mktemp -d)
hang_watch "${RP_TEST_HANG_AFTER:-2100}" "$D" # rp-vm stops the guest at 2400 s
n=0 fail=0
declare -A PID PORT ADDR

if [ "${RP_VM_GUESTS:-1}" -ne 2 ] || [ -z "$SYNC" ]; then
	echo "1..0 # SKIP needs two guests (rp-vm run --guests 2)"
	exit 0
fi

ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=1; fi
	[ "$1" -eq 0 ]
}
diag() { sed 's/^/# /' "$@"; }
mrs() { rdma resource show mr 2>/dev/null | grep -c 'comm rdmaproxyd'; }
qps() { rdma resource show qp 2>/dev/null | grep 'comm rdmaproxyd' | grep -c 'type RC'; }
res_are() { [ "$(qps)" -eq "$1" ] && [ "$(mrs)" -eq "$2" ]; }
counts() { echo "$(qps) $(mrs)"; }
counts_are() { [ "$(counts)" = "$1" ]; }
dump() {
	echo "# --- rdma resource show qp"; rdma resource show qp | diag
	echo "# --- tc qdisc"; tc qdisc show dev "$DEV" | diag
	for f in "$D"/*.log "$D"/*.out "$D"/*.err; do
		[ -s "$f" ] || continue
		echo "# --- $f"; tail -n 60 "$f" | diag
	done
}

ADDR[A]=10.99.0.2 ADDR[B]=10.99.0.1
PORT[A]=7471 PORT[B]=7472
ME=$([ "$G" -eq 0 ] && echo B || echo A)
OTHER=$([ "$ME" = A ] && echo B || echo A)
printf 'shared-secret-key-for-tests-0001\n' >"$D/good.key"
chmod 600 "$D/good.key"
conf() { # conf NODE PEER [VERBS-KEYS]
	printf '[daemon]\nnode_name = %s\nsocket = %s/%s.sock\ntransport = verbs\n' "$1" "$D" "$1"
	printf 'listen = %s:%s\nlog_level = debug\n' "${ADDR[$1]}" "${PORT[$1]}"
	[ -z "${3:-}" ] || printf '[verbs]\n%s\n' "$3"
	printf '[peer "%s"]\naddress = %s:%s\nkey_file = %s/good.key\n' "$2" "${ADDR[$2]}" \
		"${PORT[$2]}" "$D"
}
start() { # start NODE (a SIGKILLed daemon leaves its socket file behind)
	rm -f "$D/$1.sock"
	"$RPD" --foreground -c "$D/$1.conf" >>"$D/$1.log" 2>&1 &
	PID[$1]=$!
	# An ASan build in a TCG guest on a loaded host can take long to start.
	wait_for 60 test -S "$D/$1.sock"
}
# The peer's entry in `rdmaproxyctl peers` of this guest's daemon: FIELD's value.
peer_field() { # peer_field FIELD
	"$CTL" -s "$D/$ME.sock" --json peers 2>/dev/null |
		sed -n "s/.*\"$1\":\(\"[^\"]*\"\|[0-9.]*\|null\).*/\1/p" | tr -d '"'
}
link_up() { [ "$(peer_field state)" = up ]; }
lines() { wc -l <"$D/$1.log"; }
# Link losses A logged since line FROM (with REASON, a regex, if given).
lost_since() { # lost_since FROM [REASON]
	tail -n +"$1" "$D/A.log" | grep -c "peer B: link .* lost: .*${2:-}"
}
mark() { echo "${2:-}" >"$SYNC/$1.tmp" && mv "$SYNC/$1.tmp" "$SYNC/$1"; }
# Until marker NAME appears; fails at once when the other guest gave up.
there() { [ -e "$SYNC/$1" ] || [ -e "$SYNC/abort-$((1 - G))" ]; }
await() { # await NAME [SECONDS]
	wait_for "${2:-120}" there "$1" && [ -e "$SYNC/$1" ]
}
netem() { # netem ARGS... | netem clear
	if [ "$1" = clear ]; then
		tc qdisc del dev "$DEV" root 2>/dev/null
		return 0
	fi
	tc qdisc replace dev "$DEV" root netem "$@"
}

mr0=$(wait_settled 20 mrs)
qp0=$(wait_settled 20 qps)
conf "$ME" "$OTHER" >"$D/$ME.conf"
start "$ME"
wait_for 60 link_up
ok $? "$ME ($RP_VM_ADDR) and $OTHER connect over the RoCE link (rdmaproxyctl peers: $(peer_field state))" || {
	echo "1..$n"
	dump
	kill -KILL "${PID[$ME]}"
	mark "abort-$G"
	exit 1
}
qp1=$(wait_settled 20 qps) # steady: the daemon's own QPs and the peer link's
echo "# $ME is up with $OTHER at $SECONDS s"

# ------------------------------------------------------------- g0: follower
# Commands from g1, one file each: $SYNC/cmd-N holds "netem ARGS", "flush",
# "kill", "restart", "up", "baseline", "steady" or "end"; done-N holds the
# answer. Waits for settled states happen here, each in one round trip.
follow() {
	local i=1 c sp r base
	start_sink() { # start_sink NTH: wait for its NTH "ready"
		("$FIO" sink s 64 "$SLOT" 64 <"$D/sink.in" >>"$D/sink.out" 2>>"$D/sink.err") &
		sp=$!
		exec {SINKFD}>"$D/sink.in"
		wait_for 30 sh -c "[ \$(grep -c '^ready' '$D/sink.out') -ge $1 ]"
	}
	mkfifo "$D/sink.in"
	RDMAPROXY_SOCKET=$D/B.sock start_sink 1
	ok $? "the sink exports its region and binds its endpoint on B" || diag "$D/sink.err"
	mark sink-ready
	while :; do
		await "cmd-$i" 900 || { echo "# no command $i from g1"; return 1; }
		c=$(cat "$SYNC/cmd-$i")
		r=
		case $c in
		netem*)
			# shellcheck disable=SC2086
			netem ${c#netem }
			r=$(tc qdisc show dev "$DEV" | head -n 1)
			;;
		flush)
			echo "flush $i" >&"$SINKFD"
			wait_for 60 grep -q "^flushed $i\$" "$D/sink.out"
			r=$?
			cp "$D/sink.out" "$SYNC/sink.log"
			;;
		kill) # B and its sink, which must see B go (and reap what B published first)
			kill -KILL "${PID[B]}"
			wait "${PID[B]}" 2>/dev/null
			wait_for 30 grep -q "^daemon gone" "$D/sink.out"
			r=$?
			exec {SINKFD}>&-
			wait $sp
			;;
		restart)
			start B && RDMAPROXY_SOCKET=$D/B.sock start_sink 2
			r=$?
			;;
		up) # "up" once B shows the link up (at most 120 s), and B's count of reconnects
			wait_for 120 link_up
			r="$(peer_field state) $(peer_field reconnects)"
			;;
		baseline) # B's QPs and MRs with the sink and the export's MR for A
			base=$(SETTLE_SAMPLES=10 wait_settled 30 counts)
			r=$base
			;;
		steady) # "0 QPS MRS" once they are back to the baseline for 0.5 s (at most 60 s)
			wait_steady 60 counts_are "$base"
			r="$? $(counts)"
			;;
		end) ;;
		esac
		mark "done-$i" "$r"
		i=$((i + 1))
		[ "$c" = end ] && break
	done
	exec {SINKFD}>&-
	wait $sp
	ok $? "the sink ends cleanly" || diag "$D/sink.err"
}

# -------------------------------------------------------------- g1: driver
echo 0 >"$D/cmd-seq"
remote() { # remote COMMAND: run it on g0, print its answer (also from a subshell)
	local i=$(($(cat "$D/cmd-seq") + 1))
	echo $i >"$D/cmd-seq"
	mark "cmd-$i" "$*"
	await "done-$i" 300 || { echo "# g0 did not answer '$*'" >&2; return 1; }
	cat "$SYNC/done-$i"
}
both() { # both netem ARGS...: on this guest's egress and on g0's
	"$@" && remote "$@" >/dev/null
}
drive() { # drive PHASE SECONDS [SETTLE] -> $D/drive-PHASE.{out,err,log}
	RDMAPROXY_SOCKET=$D/A.sock timeout 400 "$FIO" drive B s "$1" "$2" "$DEPTH" "$SLOT" \
		"$D/drive-$1.log" ${3:+"$3"} >"$D/drive-$1.out" 2>"$D/drive-$1.err"
}
# "write: submitted=.. ok=.. ...; read: ...; send: ..." from a drive's output.
summary() {
	sed -n 's/^result phase=[0-9]* kind=\([a-z]*\) \(.*\)/\1: \2/p' "$D/drive-$1.out" |
		sed 's/ \(peerdown\|outcome\|stale\|unexported\|noendpoint\|norecv\|other\)=0//g' |
		paste -sd ';' | sed 's/;/; /g'
}
# COUNT of class CLASS (ok, stale...) for KIND in a drive's output.
count() { # count PHASE KIND CLASS
	awk -v k="kind=$2" -v c="$3" '$1 == "result" && $3 == k {
		for (i = 4; i <= NF; i++) if (index($i, c "=") == 1) print substr($i, length(c) + 2) }' \
		"$D/drive-$1.out"
}
# The statuses of PHASE outside CLASSES (a regex: ok|peerdown|...), summed.
others() { # others PHASE CLASSES
	awk -v re="^($2)=" '$1 == "result" {
		for (i = 5; i <= NF; i++) if ($i !~ re) { split($i, kv, "="); s += kv[2] } }
		END { print s + 0 }' "$D/drive-$1.out"
}
# Every notifying write and send of PHASE against what the sink saw:
# OK -> seen once; peer down or a refusal -> never; outcome unknown -> at
# most once; nothing seen twice, nothing seen that was not sent, no bad sum.
# (-4097: -RP_EPEERDOWN, -4099: -RP_EOUTCOME.) This holds across B's
# death too: B publishes a notification or message in the sink's ring
# before it answers A, and the sink reaps its ring before it sees B gone.
crosscheck() { # crosscheck PHASE
	awk -v P="$1" '
		FNR == NR {
			if ($1 == "N" && int($2 / 16777216) == P) seen["W " $2]++
			if ($1 == "R" && $2 ~ "^" P ":") { seen["S " $2]++; if ($3 != "good") bad++ }
			next
		}
		{
			k = $1 " " $2; st = $3; c = seen[k] + 0; sent[k] = 1; total++
			if (st == 0 && c != 1) { err++; print "# " k ": OK, seen " c " times" }
			if (st == -4099 && c > 1) { err++; print "# " k ": outcome unknown, seen " c " times" }
			if (st == -4099) { unknown++; if (c) landed++ }
			if (st != 0 && st != -4099 && c != 0) { err++; print "# " k ": status " st ", yet seen " c " times" }
		}
		END {
			for (k in seen) if (!(k in sent)) { err++; print "# " k ": seen, never sent" }
			printf "# phase %s: %d notifying writes and sends, %d of the %d with unknown outcome landed", P, total, landed, unknown
			print ""
			if (bad) print "# " bad " messages arrived with a bad checksum"
			exit err || bad || !total
		}' "$SYNC/sink.log" "$D/drive-$1.log"
}
# QPs and MRs on both guests back to what they were after the clean run.
steady() {
	wait_steady 60 res_are "$qp1" "$mra" && g0_steady=$(remote steady) &&
		[ "${g0_steady%% *}" = 0 ]
}
# A and B both show the link up in rdmaproxyctl peers (at most 120 s each).
both_up() {
	wait_for 120 link_up && g0_up=$(remote up) && [ "${g0_up%% *}" = up ] &&
		SETTLE_SAMPLES=20 wait_steady 60 link_up
}
# "0" if every write and read of PHASE was OK, and every send delivered
# (or refused for want of a receive), and there were some of each.
all_ok() { # all_ok PHASE
	awk '$1 == "result" {
		for (i = 4; i <= NF; i++) { split($i, kv, "="); v[$3, kv[1]] = kv[2] }
	} END {
		w = "kind=write"; r = "kind=read"; s = "kind=send"
		print (v[w, "ok"] > 0 && v[w, "ok"] == v[w, "submitted"] &&
			v[r, "ok"] == v[r, "submitted"] && v[s, "ok"] > 0 &&
			v[s, "ok"] + v[s, "norecv"] == v[s, "submitted"]) ? 0 : 1
	}' "$D/drive-$1.out"
}
# A new client on the healed link: every write and read OK, every send
# delivered (or refused for want of a receive: the sink's pace, not the
# link's). A try may fail only if the link failed meanwhile (a failure
# that began while the fault was on); then it is tried again, up to 3 times.
fresh() { # fresh PHASE TITLE
	local rp=$(($1 + 100)) try=0 good m
	while :; do
		try=$((try + 1))
		both_up
		m=$(lines A)
		drive "$rp" 3 && [ "$(all_ok "$rp")" = 0 ]
		good=$?
		[ $good -eq 0 ] && break
		[ "$(lost_since "$m")" -gt 0 ] && [ $try -lt 3 ] || break
		echo "# $2: the link failed during a new client's run (try $try): $(summary "$rp")"
	done
	ok $good "$2: then a new client's transfers all succeed (try $try: $(summary "$rp"))" ||
		diag "$D/drive-$rp.err"
}
# The checks after phase NUM, whose drive ($DRIVER) ran while the fault was on.
phase() { # phase NUM TITLE CLASSES
	local p=$1 title=$2 rc
	wait "$DRIVER"
	rc=$?
	both netem clear
	echo "# phase $p ($title), $((SECONDS - t_phase)) s: $(summary "$p")"
	grep '^check' "$D/drive-$p.out" | diag
	[ $rc -eq 0 ] && [ "$(others "$p" "$3")" -eq 0 ]
	ok $? "$title: every op reported exactly once, OK read-backs byte-exact, statuses only $3" ||
		diag "$D/drive-$p.err"
	[ "$(remote flush)" = 0 ] && crosscheck "$p"
	ok $? "$title: the sink was notified of / received each OK op once, none that failed, none twice"
	lost=$(lost_since "$mark_a")
	tail -n +"$mark_a" "$D/A.log" | grep -o 'link .* lost: .*\|connection closed: .*' |
		sort | uniq -c | diag
	both_up
	ok $? "$title: A and B show the link up again in rdmaproxyctl peers ($lost link(s) lost meanwhile; B: ${g0_up:-?})" ||
		tail -n +"$mark_a" "$D/A.log" | grep -i 'peer\|verbs' | tail -n 30 | diag
	fresh "$p" "$title"
	steady
	ok $? "$title: QPs and MRs back to their steady counts (g1 $(qps)/$qp1 QPs $(mrs)/$mra MRs; g0 ${g0_steady:-?}, QPs MRs $g0_count)"
	echo "# phase $p ($title): $((SECONDS - t_phase)) s with its checks, done at $SECONDS s"
}
want() { [ "${PHASES/ $1 /}" != "$PHASES" ]; }
begin() { # begin NUM: mark A's log, start the clock
	mark_a=$(lines A)
	t_phase=$SECONDS
}

driver() {
	await sink-ready 120
	ok $? "g0's sink is ready" || return
	mra=$(wait_settled 20 mrs)
	begin 0
	drive 0 3
	rc=$?
	[ $rc -eq 0 ] && [ "$(others 0 'ok|norecv')" -eq 0 ] && [ "$(count 0 write ok)" -gt 0 ]
	ok $? "clean link: every op reported exactly once and OK, byte-exact ($(summary 0))" ||
		diag "$D/drive-0.err"
	[ "$(remote flush)" = 0 ] && crosscheck 0
	ok $? "clean link: the sink saw each notifying write and send once"
	g0_count=$(remote baseline) # with the export's MR for A
	mra=$(wait_settled 20 mrs)

	if want 1; then
		begin 1
		both netem loss 1%
		drive 1 "$SECS" &
		DRIVER=$!
		phase 1 "1 % loss" "ok|peerdown|outcome|norecv"
	fi
	if want 2; then
		begin 2
		both netem loss 10%
		drive 2 "$SECS" &
		DRIVER=$!
		phase 2 "10 % loss" "ok|peerdown|outcome|norecv"
	fi
	if want 3; then
		begin 3
		# With a rate, netem keeps the packets in order while the delay
		# varies; without one, the jitter reorders them.
		both netem delay 20ms 5ms rate 1gbit
		drive 3 "$SECS" &
		DRIVER=$!
		phase 3 "20 ms +- 5 ms delay" "ok|peerdown|outcome|norecv"
	fi
	if want 4; then
		# A gives up on a silent path after 7 x 67 ms (B keeps the default:
		# its keepalive finds the cut after 5 s).
		kill -TERM "${PID[A]}"
		wait "${PID[A]}"
		r=$?
		conf A B "$(printf 'ack_timeout = 14\nretry_count = 6')" >"$D/A.conf"
		start A && both_up
		ok $? "A restarted (exit $r) with ack_timeout 14 and retry_count 6, the link is up again"
		# 100 % loss cuts the path silently, as a dead switch does. (An
		# "ip link set eth0 down" is seen by rxe: the QPs fail at once with
		# a local QP operation error and a port error event, and on this
		# kernel rdma_cm cannot connect again afterwards, not even rping.)
		begin 4
		rm -f "$D/p4-over"
		FIO_UNTIL=$D/p4-over drive 4 $((CUT + 6)) 16 &
		DRIVER=$!
		sleep 3
		both netem loss 100%
		sleep "$CUT"
		both netem clear
		touch "$D/p4-over" # traffic lasted through the whole cut, however slow g0 was
		phase 4 "a ${CUT} s link cut" "ok|peerdown|outcome|norecv"
		retry=$(lost_since "$mark_a" "retry counter exceeded")
		[ "$retry" -ge 1 ] && grep -q 'settled=1' "$D/drive-4.out"
		ok $? "${CUT} s link cut: A's device gave up (retry counter exceeded: $retry link(s) lost), the same client's ops succeed again on the new link"
	fi
	if want 5; then
		begin 5
		both netem loss 1%
		# Traffic goes on until B is back, however long the kill and the
		# restart take on a loaded machine: ops on the old handle must meet
		# the new B.
		rm -f "$D/p5-over"
		FIO_UNTIL=$D/p5-over drive 5 "$SECS" 16 &
		DRIVER=$!
		sleep 3
		r=$(remote kill)
		wait_for 60 sh -c "[ \$(tail -n +$mark_a '$D/A.log' | grep -c 'peer B: link .* lost') -gt 0 ]"
		r2=$?
		r3=$(remote restart)
		touch "$D/p5-over"
		[ "$r" = 0 ] && [ $r2 -eq 0 ] && [ "$r3" = 0 ]
		ok $? "B SIGKILLed mid-transfer (its sink saw it go: $r), A saw the link go ($r2), B and its sink restarted ($r3)"
		phase 5 "1 % loss, B killed and restarted" "ok|peerdown|outcome|stale|noendpoint|norecv"
		[ "$(count 5 write stale)" -ge 1 ] && grep -q 'reopened=1 settled=1' "$D/drive-5.out"
		ok $? "B killed and restarted: the old handle fails with RP_ESTALE ($(count 5 write stale) writes), a new one works"
	fi
}

if [ "$ME" = B ]; then
	follow
else
	driver
	remote end >/dev/null
fi

kill -TERM "${PID[$ME]}"
wait "${PID[$ME]}"
ok $? "daemon $ME exits cleanly"
wait_steady 30 res_are "$qp0" "$mr0"
ok $? "QPs and MRs back to the boot baseline ($(qps)/$qp0 QPs, $(mrs)/$mr0 MRs)"
echo "1..$n"
[ $fail -eq 0 ] || dump
[ $fail -eq 0 ] || mark "abort-$G"
for p in "${PID[@]}"; do kill -KILL "$p" 2>/dev/null; done
# Kept on the host with rp-vm --results (test-vm-faults.sh: RP_TEST_KEEP=DIR).
[ -n "${RP_VM_RESULTS:-}" ] && cp -r "$D"/. "$RP_VM_RESULTS/" 2>/dev/null
kill "$HANG_WATCH" 2>/dev/null
rm -rf "$D"
exit $fail
