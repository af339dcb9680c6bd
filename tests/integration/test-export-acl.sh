#!/bin/bash
# Per-export access control (issue 12, point 4), with real daemons and real
# users: three daemons A, B and C peered over tcp on loopback; clients of
# root, of nobody, and of uids that exist nowhere (4243) on B. Locally only
# the owner's uid and root may open an export unless it names more users or
# groups (primary or supplementary); remotely only the peers it names, or
# that B's config grants exports (exports = all, export_users), and a reload
# that takes a grant away withdraws the handles, also from a peer D that
# ignores the withdrawal (a test build of the daemon: on verbs only its own MR
# of the export going stops it). A peer that guesses export ids it was never
# given is refused. Endpoints bound with an access list take messages only
# from whom it names. Names B's config reserves ([names]) are published by
# the users it lists only. Every refusal has its own error code,
# a log line and a count in the metrics; non-admins list only what they may
# open. Runs clients as other users with setpriv, so it needs root.
# RP_TEST_TRANSPORT=verbs and RP_TEST_ADDR (an rxe address) run the daemons
# on the verbs transport (tests/vm/test-vm-export-acl.sh); the raw peer that
# guesses ids speaks tcp only and is skipped then.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1 ||
	! getent passwd nobody >/dev/null || ! command -v jq >/dev/null 2>&1; then
	echo "1..0 # SKIP needs root, setpriv, jq and user nobody"
	exit 0
fi

RAW="$top_builddir/tests/integration/test-peers-raw"
TRANSPORT=${RP_TEST_TRANSPORT:-tcp}
ADDR=${RP_TEST_ADDR:-127.0.0.1}
DENIED=-4123 # -RP_EEXPORT_DENIED: RP_EBASE + 27, fixed by the ABI
DENIED_TEXT="export access denied"
NOBODY=$(id -u nobody)

# Private copies other users may run (the build tree may be closed to them),
# with the library beside them.
chmod 755 "$T_DIR"
mkdir "$T_DIR/bin"
cp "$top_builddir/tests/integration/test-peers-io" "$top_builddir/tools/ctl/rdmaproxyctl" \
	"$top_builddir/examples/rp-demo" "$T_DIR/bin/"
cp -L "$top_builddir/libclient/.libs/librdmaproxy.so.1" "$T_DIR/bin/"
chmod 755 "$T_DIR/bin" "$T_DIR"/bin/*
export LD_LIBRARY_PATH="$T_DIR/bin"
IO="$T_DIR/bin/test-peers-io"
CTL="$T_DIR/bin/rdmaproxyctl"

declare -A PORT PID
ports=($(free_ports 5))
i=0
for n in A B C R D; do PORT[$n]=${ports[i++]}; done
printf 'shared-secret-key-for-tests-0001\n' >"$T_DIR/k.key"
chmod 600 "$T_DIR/k.key"

# conf NODE "PEER[;KEY=VALUE...]"...: NODE's config; extra lines go in the peer's section.
conf() {
	local n=$1 p kv
	shift
	{
		printf '[daemon]\nnode_name = %s\nsocket = %s/%s.sock\ntransport = %s\n' "$n" "$T_DIR" \
			"$n" "$TRANSPORT"
		printf 'listen = %s:%s\nlog_level = debug\nadmin_group = 4244\n' "$ADDR" "${PORT[$n]}"
		for p in "$@"; do
			printf '[peer "%s"]\naddress = %s:%s\nkey_file = %s/k.key\n' \
				"${p%%;*}" "$ADDR" "${PORT[${p%%;*}]}" "$T_DIR"
			[ "$p" = "${p#*;}" ] || echo "${p#*;}" | tr ';' '\n'
		done
		printf '%s' "${NAMES[$n]-}"
	} >"$T_DIR/$n.conf"
}
# B reserves names starting with "svc." for uid 4243 and group 4242, and
# those starting with "svc.root." (first in the file: the longest prefix
# decides) for root.
declare -A NAMES
NAMES[B]=$'[names "svc.root."]\n[names "svc."]\nusers = 4243\ngroups = 4242\n'
conf A B
DGRANT="export_users = nobody" # B's grant to D, a peer that ignores withdrawals (below)
conf B A C R "D;$DGRANT"
conf C B
for n in A B C; do
	start_daemon "$T_DIR/$n.log" -c "$T_DIR/$n.conf"
	PID[$n]=$T_LAST_PID
done
wait_for 20 sh -c "grep -q 'peer B: .* -> up' '$T_DIR/A.log' && grep -q 'peer B: .* -> up' '$T_DIR/C.log' &&
	[ \$(grep -cE 'peer (A|C): .* -> up' '$T_DIR/B.log') -ge 2 ]"
ok $? "daemons A, B and C are up, B peered with A and C"

# Run as uid:gid (numbers; no user database needed) with these supplementary groups.
as() { # as UID GID GROUPS|- CMD...
	local u=$1 g=$2 gs=$3
	shift 3
	if [ "$gs" = - ]; then
		setpriv --reuid="$u" --regid="$g" --clear-groups "$@"
	else
		setpriv --reuid="$u" --regid="$g" --groups="$gs" "$@"
	fi
}
io() { # io NODE CMD...: test-peers-io against NODE's daemon
	RDMAPROXY_SOCKET="$T_DIR/$1.sock" "$IO" "${@:2}"
}

# spawn TAG NODE UID GID ARGS...: an exporter in the background until finish TAG.
# It must not inherit the write ends of the others' fifos, or they never end.
declare -A SP_PID SP_FD
spawn() {
	local tag=$1 node=$2 u=$3 g=$4 fd
	shift 4
	mkfifo "$T_DIR/$tag.in"
	chmod 666 "$T_DIR/$tag.in"
	(
		for fd in "${SP_FD[@]}"; do exec {fd}>&-; done
		exec setpriv --reuid="$u" --regid="$g" --clear-groups \
			env RDMAPROXY_SOCKET="$T_DIR/$node.sock" LD_LIBRARY_PATH="$T_DIR/bin" \
			"$IO" "$@" <"$T_DIR/$tag.in" >"$T_DIR/$tag.out" 2>&1
	) &
	SP_PID[$tag]=$!
	T_PIDS+=("$!")
	exec {fd}>"$T_DIR/$tag.in"
	SP_FD[$tag]=$fd
	wait_for 10 grep -q ready "$T_DIR/$tag.out"
}
finish() {
	exec {SP_FD[$1]}>&-
	wait "${SP_PID[$1]}" 2>/dev/null
}

# opens UID GID GROUPS NODE PEER NAME WANT: as that user, a client of NODE's
# daemon opening NAME on PEER gets WANT (0, or a negative code).
opens() {
	as "$1" "$2" "$3" env RDMAPROXY_SOCKET="$T_DIR/$4.sock" LD_LIBRARY_PATH="$T_DIR/bin" \
		"$IO" expect-open "$5" "$6" "$7" >"$T_DIR/open.out" 2>&1
}
metric() { # metric NODE FROM: rdmaproxy_export_opens_refused_total{from=FROM}
	RDMAPROXY_SOCKET="$T_DIR/$1.sock" "$CTL" metrics |
		sed -n "s/^rdmaproxy_export_opens_refused_total{from=\"$2\"} //p"
}

# ---- local: the owner, root, and nobody else by default ----------------------
spawn rpriv B 0 0 export rpriv 4096 1 private
spawn npriv B "$NOBODY" "$NOBODY" export npriv 4096 1 private
opens "$NOBODY" "$NOBODY" - B "" rpriv "$DENIED"
ok $? "nobody may not open root's private export: RP_EEXPORT_DENIED"
grep -q "open: $DENIED_TEXT" "$T_DIR/open.out"
ok $? "rp_strerror says why ($(cat "$T_DIR/open.out"))"
grep -q "uid $NOBODY test-peers-io): opening export 'rpriv' of uid 0 refused" "$T_DIR/B.log"
ok $? "B logs the refusal with the client's uid, the export and its owner"
[ "$(metric B local)" = 1 ]
ok $? "and counts it: rdmaproxy_export_opens_refused_total{from=\"local\"} 1"
opens 4243 4243 - B "" npriv "$DENIED"
ok $? "uid 4243 may not open nobody's private export"
opens "$NOBODY" 4243 - B "" npriv 0
ok $? "another client of nobody may (the owner's uid, whatever its group)"
opens 0 0 - B "" npriv 0
ok $? "root may open anybody's export"
as "$NOBODY" "$NOBODY" - env RDMAPROXY_SOCKET="$T_DIR/B.sock" LD_LIBRARY_PATH="$T_DIR/bin" \
	"$IO" xfer "" rpriv 4096 3 >"$T_DIR/x.out" 2>&1
[ $? -ne 0 ] && ! grep -q '^write status=0' "$T_DIR/x.out"
ok $? "nobody cannot write into root's private export either"

# ---- local: named users and groups -------------------------------------------
spawn ruser B 0 0 export ruser 64K 1 "user:$NOBODY,user:4245"
as "$NOBODY" "$NOBODY" - env RDMAPROXY_SOCKET="$T_DIR/B.sock" LD_LIBRARY_PATH="$T_DIR/bin" \
	"$IO" xfer "" ruser 64K 5 >"$T_DIR/x.out" 2>&1
ok $? "a user the export names writes, reads back and sends with matching sums"
diag "$T_DIR/x.out"
opens 4243 4243 - B "" ruser "$DENIED"
ok $? "a user it does not name may not open it"
spawn rgroup B 0 0 export rgroup 4096 1 group:4242
opens "$NOBODY" "$NOBODY" 4242 B "" rgroup 0
ok $? "a client with the named group as a supplementary group may open it"
opens 4243 4242 - B "" rgroup 0
ok $? "one with it as primary group may"
opens "$NOBODY" "$NOBODY" - B "" rgroup "$DENIED"
ok $? "one without it may not"
spawn rall B 0 0 export rall 4096 1 any-user
opens 4243 4243 - B "" rall 0
ok $? "an export for every user: any local user may open it"

# ---- listing: non-admins see what they may open --------------------------------
names() { # names UID GID: export names rdmaproxyctl regions shows that user, sorted
	as "$1" "$2" - env RDMAPROXY_SOCKET="$T_DIR/B.sock" LD_LIBRARY_PATH="$T_DIR/bin" \
		"$CTL" --json regions | jq -r '[.regions[].exports[].name] | sort | join(" ")'
}
got=$(names "$NOBODY" "$NOBODY")
[ "$got" = "npriv rall ruser" ]
ok $? "nobody lists its own export and those it may open, not root's others ($got)"
as "$NOBODY" "$NOBODY" - env RDMAPROXY_SOCKET="$T_DIR/B.sock" LD_LIBRARY_PATH="$T_DIR/bin" \
	"$CTL" --json regions | jq -e '[.regions[] | select(.uid == 0 and (.exports | length) == 0)] | length == 0' >/dev/null
ok $? "and none of root's regions without exports"
got=$(names 4243 4243)
[ "$got" = "rall" ]
ok $? "uid 4243 lists only the export for every user ($got)"
got=$(names 0 0)
[ "$got" = "npriv rall rgroup rpriv ruser" ]
ok $? "root (an admin) lists every export ($got)"
got=$(names 4243 4244)
[ "$got" = "npriv rall rgroup rpriv ruser" ]
ok $? "so does a member of admin_group ($got)"
root_exports() { # root_exports UID GID: root's exports in rdmaproxyctl clients for that user
	as "$1" "$2" - env RDMAPROXY_SOCKET="$T_DIR/B.sock" LD_LIBRARY_PATH="$T_DIR/bin" \
		"$CTL" --json clients | jq '[.clients[] | select(.uid == 0) | .exports] | add'
}
[ "$(root_exports "$NOBODY" "$NOBODY")" = 2 ] && [ "$(root_exports 0 0)" = 4 ]
ok $? "clients counts for nobody only root's exports it may open (2 of 4)"
RDMAPROXY_SOCKET="$T_DIR/B.sock" "$CTL" regions >"$T_DIR/regions.txt"
grep -q 'rpriv  *read,write  *owner$' "$T_DIR/regions.txt" &&
	grep -q 'ruser  *read,write  *users$' "$T_DIR/regions.txt" &&
	grep -q 'rgroup  *read,write  *users$' "$T_DIR/regions.txt" &&
	grep -q 'rall  *read,write  *anyone$' "$T_DIR/regions.txt"
ok $? "regions shows who else may open each export"
diag "$T_DIR/regions.txt"

# ---- peers: only those an export names ------------------------------------------
spawn bpriv B 0 0 export bpriv 4096 1 private
io A expect-open B bpriv "$DENIED" >"$T_DIR/open.out" 2>&1
ok $? "a client of root on peer A may not open B's private export (root is not special across daemons)"
grep -q "open: $DENIED_TEXT" "$T_DIR/open.out"
ok $? "the client gets the same error code and text ($(cat "$T_DIR/open.out"))"
grep -q "peer A: opening export 'bpriv' of uid 0 refused" "$T_DIR/B.log"
ok $? "B logs the refusal with the peer's name"
[ "$(metric B peer)" = 1 ]
ok $? "and counts it: rdmaproxy_export_opens_refused_total{from=\"peer\"} 1"
spawn fora B 0 0 export fora 1M 1 peer:A
io A xfer B fora 1M 7 >"$T_DIR/x.out" 2>&1
ok $? "an export naming A: A's client writes, reads back and sends, sums match"
diag "$T_DIR/x.out"
io C expect-open B fora "$DENIED" >"$T_DIR/open.out" 2>&1
ok $? "C, not named, may not open it"
grep -q "peer C: opening export 'fora' of uid 0 refused" "$T_DIR/B.log"
ok $? "and B logs that"
spawn anyp B 0 0 export anyp 4096 1 any-peer
io C expect-open B anyp 0 >"$T_DIR/open.out" 2>&1
ok $? "an export for every peer: C may open it"
opens 4243 4243 - B "" anyp "$DENIED"
ok $? "every peer is not every local user"
open_to() { # open_to NAME: the open_to list of export NAME on B, comma-separated
	RDMAPROXY_SOCKET="$T_DIR/B.sock" "$CTL" --json regions |
		jq -r ".regions[].exports[] | select(.name == \"$1\") | .open_to | join(\",\")"
}
[ "$(open_to bpriv)" = "" ] && [ "$(open_to fora)" = peers ] &&
	[ "$(open_to anyp)" = peers,all-peers ]
ok $? "regions --json: open_to of the private, the named-peer and the every-peer export"

# A configured peer that guesses export ids: fora has id 1 (A looked it up).
if [ "$TRANSPORT" = tcp ]; then
	"$RAW" guess "${PORT[B]}" R B "$T_DIR/k.key" fora 4 >"$T_DIR/guess.out" 2>&1
	grep -q "^lookup status=$DENIED$" "$T_DIR/guess.out"
	ok $? "a raw peer R that is not named is refused the lookup"
	! grep '^read id=' "$T_DIR/guess.out" | grep -q 'status=0$' &&
		grep -q "^read id=1 status=$DENIED$" "$T_DIR/guess.out"
	ok $? "and reading by guessed ids: refused, the id A was given with RP_EEXPORT_DENIED"
	diag "$T_DIR/guess.out"
	grep -q "peer R: operation on export id 1 refused: the peer was not given it" "$T_DIR/B.log"
	ok $? "B logs the guess"
else
	for i in 1 2 3; do echo "ok $((T_N += 1)) # SKIP the raw peer speaks tcp only"; done
fi

# ---- peers: what B's config grants, and a reload that takes it back ---------------
reload_b() { # reload_b "C-section lines": B's config with these in [peer "C"], reloaded
	local n
	n=$(grep -c "reloaded $T_DIR/B.conf" "$T_DIR/B.log")
	conf B A "C;$1" R "D;$DGRANT"
	kill -HUP "${PID[B]}"
	wait_for 10 sh -c "[ \$(grep -c 'reloaded $T_DIR/B.conf' '$T_DIR/B.log') -gt $n ]"
}
reload_b "exports = all"
ok $? "B reloads with [peer \"C\"] exports = all"
io C expect-open B bpriv 0 >"$T_DIR/open.out" 2>&1
ok $? "now C may open B's private export"
[ "$(open_to bpriv)" = peers ]
ok $? "and rdmaproxyctl regions says some peers may"
io A expect-open B bpriv "$DENIED" >"$T_DIR/open.out" 2>&1
ok $? "A still may not"
mkfifo "$T_DIR/hold.in"
(
	for fd in "${SP_FD[@]}"; do exec {fd}>&-; done
	exec env RDMAPROXY_SOCKET="$T_DIR/C.sock" "$IO" hold B bpriv
) <"$T_DIR/hold.in" >"$T_DIR/hold.out" 2>&1 &
HOLD=$!
T_PIDS+=("$HOLD")
exec 9>"$T_DIR/hold.in"
wait_for 10 grep -q opened "$T_DIR/hold.out"
ok $? "a client of C holds a handle to it"
before=$(grep -c "peer B withdrew its export" "$T_DIR/C.log")
reload_b "export_users = nobody"
ok $? "B reloads with [peer \"C\"] export_users = nobody instead"
wait_for 10 grep -q "peer C may no longer open 1 export it looked up ('bpriv'): its handles" \
	"$T_DIR/B.log" && wait_for 10 sh -c "[ \$(grep -c 'peer B withdrew its export' '$T_DIR/C.log') -gt $before ]"
ok $? "B withdraws C's handle to bpriv, says so, and C hears of it"
echo go >&9
exec 9>&-
wait "$HOLD"
grep -q "^status=-4101 " "$T_DIR/hold.out"
ok $? "C's next write through it fails: RP_EUNEXPORTED ($(tail -1 "$T_DIR/hold.out"))"
io C expect-open B bpriv "$DENIED" >"$T_DIR/open.out" 2>&1
ok $? "and C may not open bpriv again"
io C expect-open B npriv 0 >"$T_DIR/open.out" 2>&1
ok $? "but nobody's export, which export_users grants"
io C expect-open B rall "$DENIED" >"$T_DIR/open.out" 2>&1
ok $? "and not root's export for every local user"

# ---- endpoints: everyone by default; with a list, only whom it names ------------
EP_DENIED=-4124 # -RP_EENDPOINT_DENIED: RP_EBASE + 28
sends() { # sends UID GID GROUPS NODE PEER NAME WANT: as that user, an 8 B send gets WANT
	as "$1" "$2" "$3" env RDMAPROXY_SOCKET="$T_DIR/$4.sock" LD_LIBRARY_PATH="$T_DIR/bin" \
		"$IO" expect-send "$5" "$6" "$7" >"$T_DIR/send.out" 2>&1
}
send_metric() { # send_metric NODE FROM: rdmaproxy_endpoint_sends_refused_total{from=FROM}
	RDMAPROXY_SOCKET="$T_DIR/$1.sock" "$CTL" metrics |
		sed -n "s/^rdmaproxy_endpoint_sends_refused_total{from=\"$2\"} //p"
}
spawn epopen B "$NOBODY" "$NOBODY" bind epopen 3 open
sends 4243 4243 - B "" epopen 0
ok $? "an endpoint of nobody bound without a list: uid 4243 may send to it"
io A expect-send B epopen 0 >"$T_DIR/send.out" 2>&1 &&
	io C expect-send B epopen 0 >"$T_DIR/send.out" 2>&1
ok $? "and so may clients of peers A and C"
spawn eppriv B "$NOBODY" "$NOBODY" bind eppriv 2 private
sends 4243 4243 - B "" eppriv "$EP_DENIED"
ok $? "a private endpoint of nobody: uid 4243 may not send to it: RP_EENDPOINT_DENIED"
grep -q "send: endpoint access denied" "$T_DIR/send.out"
ok $? "rp_strerror says why ($(cat "$T_DIR/send.out"))"
grep -q "uid 4243 test-peers-io): send to endpoint 'eppriv' of uid $NOBODY refused" "$T_DIR/B.log"
ok $? "B logs the refusal with the sender's uid, the endpoint and its owner"
io A expect-send B eppriv "$EP_DENIED" >"$T_DIR/send.out" 2>&1
ok $? "a client of root on peer A may not send to it"
io C expect-send B eppriv "$EP_DENIED" >"$T_DIR/send.out" 2>&1
ok $? "nor may C's, although B's config grants C nobody's exports (those grants are about exports)"
grep -q "peer C: send to endpoint 'eppriv' of uid $NOBODY refused" "$T_DIR/B.log"
ok $? "B logs that with the peer's name"
sends "$NOBODY" 4243 - B "" eppriv 0
ok $? "another client of nobody may send to it"
sends 0 0 - B "" eppriv 0
ok $? "and root may"
ep_names() { # ep_names UID GID: the ep* endpoints rdmaproxyctl endpoints shows that user, sorted
	as "$1" "$2" - env RDMAPROXY_SOCKET="$T_DIR/B.sock" LD_LIBRARY_PATH="$T_DIR/bin" \
		"$CTL" --json endpoints |
		jq -r '[.endpoints[].name | select(startswith("ep"))] | sort | join(" ")'
}
got=$(ep_names 4243 4243)
[ "$got" = "epopen" ]
ok $? "rdmaproxyctl endpoints: uid 4243 lists only the one it may send to ($got)"
got=$(ep_names "$NOBODY" "$NOBODY")
[ "$got" = "epopen eppriv" ]
ok $? "nobody lists both of its own ($got)"
RDMAPROXY_SOCKET="$T_DIR/B.sock" "$CTL" endpoints >"$T_DIR/eps.txt"
grep -q ' eppriv  *0  *owner$' "$T_DIR/eps.txt" && grep -q ' epopen  *0  *anyone,all-peers$' "$T_DIR/eps.txt"
ok $? "root lists them with their receives posted and who may send"
diag "$T_DIR/eps.txt"
finish eppriv
grep -qx "received=2" "$T_DIR/eppriv.out" && [ "$(grep -c '^recv status=0 len=8$' "$T_DIR/eppriv.out")" = 2 ]
ok $? "the refused sends took none of its 2 receives: they held the 2 allowed messages"
diag "$T_DIR/eppriv.out"
spawn epnamed B 0 0 bind epnamed 4 "user:4243,group:4242,peer:A"
sends 4243 4243 - B "" epnamed 0
ok $? "an endpoint of root naming uid 4243: that user may send to it"
sends "$NOBODY" "$NOBODY" 4242 B "" epnamed 0
ok $? "a client with a group it names may"
sends "$NOBODY" "$NOBODY" - B "" epnamed "$EP_DENIED"
ok $? "a user it does not name may not"
io A expect-send B epnamed 0 >"$T_DIR/send.out" 2>&1
ok $? "peer A, which it names, may"
io C expect-send B epnamed "$EP_DENIED" >"$T_DIR/send.out" 2>&1
ok $? "peer C, which it does not, may not"
finish epnamed
grep -qx "received=3" "$T_DIR/epnamed.out"
ok $? "it got the 3 messages it allows (uid 4243, the group, peer A)"
spawn epany B 0 0 bind epany 2 any-user,any-peer
sends 4243 4243 - B "" epany 0 && io C expect-send B epany 0 >"$T_DIR/send.out" 2>&1
ok $? "an endpoint for every user and every peer: uid 4243 and peer C may send to it"
finish epany
[ "$(send_metric B local)" = 2 ] && [ "$(send_metric B peer)" = 3 ]
ok $? "B counts the refusals: rdmaproxy_endpoint_sends_refused_total local 2, peer 3"
io B bind epz 1 peer:Z </dev/null >"$T_DIR/bind.out" 2>&1
[ $? -eq 2 ] && grep -q "bind: .*peer" "$T_DIR/bind.out"
ok $? "a list naming a peer B does not know is refused at bind ($(cat "$T_DIR/bind.out"))"
finish epopen
grep -qx "received=3" "$T_DIR/epopen.out"
ok $? "the open endpoint got its 3 messages"

# ---- a peer that ignores a withdrawal loses its access anyway -------------------
# D runs a test build of the daemon that ignores B's withdrawals and keeps its
# handles. Over tcp B checks every op itself; over verbs D holds an rkey, and
# only deregistering D's own MR of the export takes it away.
conf D B
RPD="$top_builddir/tests/helpers/rdmaproxyd-stubborn" start_daemon "$T_DIR/D.log" -c "$T_DIR/D.conf"
PID[D]=$T_LAST_PID
wait_for 20 sh -c "grep -q 'peer B: .* -> up' '$T_DIR/D.log' && grep -q 'peer D: .* -> up' '$T_DIR/B.log'"
ok $? "daemon D (a test build that ignores withdrawals) is up and peered with B"
mkfifo "$T_DIR/dhold.in"
(
	for fd in "${SP_FD[@]}"; do exec {fd}>&-; done
	exec env RDMAPROXY_SOCKET="$T_DIR/D.sock" "$IO" hold B npriv
) <"$T_DIR/dhold.in" >"$T_DIR/dhold.out" 2>&1 &
DHOLD=$!
T_PIDS+=("$DHOLD")
exec 8>"$T_DIR/dhold.in"
wait_for 10 grep -q opened "$T_DIR/dhold.out"
ok $? "a client of D holds a handle to nobody's export, which B's config grants D (export_users = nobody)"
DGRANT=""
reload_b "export_users = nobody"
ok $? "B reloads without that grant"
wait_for 20 grep -q "peer D did not confirm the withdrawal of export" "$T_DIR/B.log" &&
	grep -q "peer B withdrew its export .*: ignored" "$T_DIR/D.log"
ok $? "D ignores the withdrawal; B stops waiting for its confirmation after 5 s"
echo go >&8
exec 8>&-
wait "$DHOLD"
# tcp: B refuses the op (RP_EEXPORT_DENIED); verbs: D's RDMA WRITE meets a
# deregistered rkey, and D reports the export withdrawn (RP_EUNEXPORTED).
[ "$TRANSPORT" = verbs ] && want=-4101 || want=$DENIED
grep -q "^status=$want " "$T_DIR/dhold.out"
ok $? "the write D's client then makes through its stale handle fails with $want ($(tail -1 "$T_DIR/dhold.out"))"
stop_daemon "${PID[D]}"
ok $? "daemon D exits cleanly"

# ---- [names "PREFIX"]: names B's config reserves for some users -----------------
EDENIED=-4107 # -RP_EDENIED: RP_EBASE + 11, fixed by the ABI
publishes() { # publishes UID GID GROUPS|- export|bind NAME WANT: as that user, on B
	as "$1" "$2" "$3" env RDMAPROXY_SOCKET="$T_DIR/B.sock" LD_LIBRARY_PATH="$T_DIR/bin" \
		"$IO" expect-publish "$4" "$5" "$6" >"$T_DIR/pub.out" 2>&1
}
publishes "$NOBODY" "$NOBODY" - export svc.a "$EDENIED"
ok $? "nobody may not export svc.a, reserved for uid 4243: RP_EDENIED ($(cat "$T_DIR/pub.out"))"
grep -q "uid $NOBODY test-peers-io): export 'svc.a' refused: the config reserves names starting with 'svc.' for other users" "$T_DIR/B.log"
ok $? "B logs the refusal with the client, the name and the prefix"
publishes "$NOBODY" "$NOBODY" - bind svc.a "$EDENIED"
ok $? "nor bind an endpoint svc.a"
publishes 4243 4243 - export svc.a 0
ok $? "uid 4243 may export svc.a"
publishes 4245 4245 4242 bind svc.b 0
ok $? "uid 4245 with supplementary group 4242 may bind svc.b"
publishes 4246 4242 - export svc.c 0
ok $? "uid 4246 with primary group 4242 may export svc.c"
publishes 4244 4244 - export svc.d "$EDENIED"
ok $? "a member of the admin group (4244) is not exempt: RP_EDENIED"
publishes 4243 4243 - export svc.root.x "$EDENIED"
ok $? "svc.root.x falls under the longer prefix, root's: uid 4243 may not export it"
publishes 0 0 - export svc.root.x 0
ok $? "root may"
publishes "$NOBODY" "$NOBODY" - export other.name 0
ok $? "a name no prefix covers: nobody may export it"
got=$(RDMAPROXY_SOCKET="$T_DIR/B.sock" "$CTL" metrics | sed -n 's/^rdmaproxy_names_refused_total //p')
[ "$got" = 4 ]
ok $? "rdmaproxy_names_refused_total counts the 4 refusals ($got)"
NAMES[B]=$'[names "svc."]\nusers = nobody\n'
reload_b "export_users = nobody"
ok $? "B reloads with svc. reserved for nobody instead"
publishes "$NOBODY" "$NOBODY" - export svc.a 0 && publishes 4243 4243 - bind svc.c "$EDENIED"
ok $? "after the reload nobody may export svc.a, and uid 4243 may not bind svc.c"

# ---- the demo across daemons: B's export names A's node --------------------------
RDMAPROXY_SOCKET= "$T_DIR/bin/rp-demo" "$T_DIR/A.sock" B "$T_DIR/B.sock" >"$T_DIR/demo.out" 2>&1
ok $? "rp-demo moves its 4 MiB from A to a client of B, whose export names A"
diag "$T_DIR/demo.out"

for t in rpriv npriv ruser rgroup rall bpriv fora anyp; do finish "$t"; done
for n in A B C; do
	stop_daemon "${PID[$n]}"
	ok $? "daemon $n exits cleanly after all that"
done
t_done
