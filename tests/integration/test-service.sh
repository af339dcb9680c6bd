#!/bin/bash
# The hardened, non-root service (issue 12, point 9): the installed unit's
# systemd-analyze security exposure is at most 1.5, it runs as the user of
# the sysusers.d fragment with no capability, and the daemon does its job as
# such a user: socket-activated like under rdmaproxy.service, with no
# capability and no way to gain one, clients of two other users transfer
# data, root administers it, and its peer key belongs to it.
. "$(dirname "$0")/lib.sh"

UNIT="$top_builddir/systemd/rdmaproxy.service"
SOCKET_UNIT="$top_srcdir/systemd/rdmaproxy.socket"
SYSUSERS="$top_srcdir/systemd/rdmaproxy.sysusers"
PROBE="$HELPERS/rp-probe"
IO="$top_builddir/tests/integration/test-client-io"
CTL="$top_builddir/tools/ctl/rdmaproxyctl"

if [ -z "${SYSTEMD_ANALYZE:-}" ] || [ ! -x "$SYSTEMD_ANALYZE" ]; then
	echo "1..0 # SKIP systemd-analyze is not installed"
	exit 0
fi

# --- the unit as installed ---------------------------------------------------
# The service file is installed verbatim from the build tree, under this name.
mkdir -p "$T_DIR/unit"
cp "$UNIT" "$SOCKET_UNIT" "$T_DIR/unit/"
"$SYSTEMD_ANALYZE" security --offline=true --no-pager "$T_DIR/unit/rdmaproxy.service" \
	>"$T_DIR/security.txt" 2>&1
score=$(sed -n 's/.*Overall exposure level for rdmaproxy.service: \([0-9.]*\).*/\1/p' \
	"$T_DIR/security.txt")
echo "# systemd-analyze security --offline=true rdmaproxy.service: ${score:-?}"
grep '✗' "$T_DIR/security.txt" | sed 's/  */ /g' | diag
[ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 1.5) }'
ok $? "systemd-analyze security --offline=true scores the unit ${score:-?} (at most 1.5)" ||
	diag "$T_DIR/security.txt"
"$SYSTEMD_ANALYZE" security --offline=true --threshold=15 --no-pager \
	"$T_DIR/unit/rdmaproxy.service" >/dev/null 2>&1
ok $? "and --threshold=15 agrees"

prop() { sed -n "s/^$1=//p" "$UNIT"; }
user=$(sed -n 's/^u \([a-z_][a-z0-9_-]*\) .*/\1/p' "$SYSUSERS")
[ "$(prop User)" = rdmaproxy ] && [ "$(prop Group)" = rdmaproxy ] && [ "$user" = rdmaproxy ]
ok $? "the service runs as rdmaproxy, the user its sysusers.d fragment creates"
[ "$(prop CapabilityBoundingSet)" = "" ] && [ "$(prop AmbientCapabilities)" = "" ] &&
	[ "$(grep -c '^CapabilityBoundingSet=' "$UNIT")" -eq 1 ] && [ "$(prop NoNewPrivileges)" = yes ]
ok $? "with no capability at all, and no way to gain one"
[ "$(prop LimitMEMLOCK)" = infinity ]
ok $? "locked memory comes from LimitMEMLOCK=infinity, not CAP_IPC_LOCK"
[ "$(prop Nice)" = -10 ]
ok $? "the engine gets a CPU while processes outnumber CPUs: Nice=-10 (its filter refuses setpriority)"
[ "$(prop PrivateDevices)" = yes ] && [ "$(prop BindPaths)" = -/dev/infiniband ] &&
	[ "$(prop DevicePolicy)" = closed ] && grep -q '^DeviceAllow=char-uverbs rw$' "$UNIT" &&
	grep -q '^DeviceAllow=/dev/infiniband/rdma_cm rw$' "$UNIT"
ok $? "devices: a private /dev with only /dev/infiniband added, uverbs and rdma_cm allowed"
! grep -q '^RuntimeDirectory' "$UNIT"
ok $? "no RuntimeDirectory= (its chown would undo the socket unit's SocketGroup=)"

if command -v systemd-sysusers >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
	mkdir -p "$T_DIR/root/etc"
	systemd-sysusers --root="$T_DIR/root" "$SYSUSERS" >"$T_DIR/sysusers.log" 2>&1
	rc=$?
	pw=$(grep '^rdmaproxy:' "$T_DIR/root/etc/passwd")
	[ $rc -eq 0 ] && echo "$pw" | grep -q ':/usr/s\?bin/nologin$' &&
		grep -q '^rdmaproxy:' "$T_DIR/root/etc/group"
	ok $? "systemd-sysusers creates the system user and its group from the fragment ($pw)" ||
		diag "$T_DIR/sysusers.log"
else
	echo "ok $((T_N += 1)) # SKIP needs root and systemd-sysusers"
fi

# --- the daemon as such a user -------------------------------------------------
# As under the unit: root (the socket unit) creates the socket with mode
# 0666 in a root-owned directory and passes it; the daemon runs as another
# user with an empty bounding set and no_new_privs.
if [ "$(id -u)" -ne 0 ] || [ -z "${SYSTEMD_SOCKET_ACTIVATE:-}" ] || ! command -v setpriv >/dev/null ||
	! id daemon >/dev/null 2>&1; then
	for i in $(seq 9); do echo "ok $((T_N += 1)) # SKIP needs root, setpriv and systemd-socket-activate"; done
	t_done
	exit
fi
DUSER=daemon
chmod 755 "$T_DIR"
mkdir -m 755 "$T_DIR/run"
SOCK="$T_DIR/run/rdmaproxy.sock"
printf 'shared-secret-key-for-tests-0001\n' >"$T_DIR/peer.key"
chown "$DUSER": "$T_DIR/peer.key"
chmod 600 "$T_DIR/peer.key"
printf '[daemon]\nnode_name = svc\nsocket = %s\ntransport = tcp\nlisten = none\n[peer "p"]\naddress = 127.0.0.1:9\nkey_file = %s\n' \
	"$SOCK" "$T_DIR/peer.key" >"$T_DIR/svc.conf"
chmod 644 "$T_DIR/svc.conf"
AS_DAEMON=(setpriv --reuid="$DUSER" --regid="$DUSER" --clear-groups --inh-caps=-all
	--bounding-set=-all --no-new-privs)
"$SYSTEMD_SOCKET_ACTIVATE" --seqpacket -l "$SOCK" \
	"${AS_DAEMON[@]}" "$RPD" --foreground -c "$T_DIR/svc.conf" >"$T_DIR/svc.log" 2>&1 &
SPID=$!
T_PIDS+=("$SPID")
wait_for 10 test -S "$SOCK" && chmod 666 "$SOCK" # SocketMode=0666
export RDMAPROXY_SOCKET="$SOCK"
wait_for 10 "$PROBE" "$SOCK" status
# (SO_PEERCRED would name root: it describes whoever called listen().)
uids=$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$SPID/status")
"$PROBE" "$SOCK" status >/dev/null && [ "$uids" = "$(id -u "$DUSER") $(id -u "$DUSER") $(id -u "$DUSER") $(id -u "$DUSER")" ]
ok $? "the daemon serves as user $DUSER on the socket it was given (uids $uids)"
caps=$(awk '/^Cap(Prm|Eff|Bnd|Amb):/ { printf "%s ", $2 }' "/proc/$SPID/status")
[ "$caps" = "0000000000000000 0000000000000000 0000000000000000 0000000000000000 " ] &&
	grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$SPID/status"
ok $? "with no capability, none in its bounding set, no_new_privs ($caps)"
grep -q "listening on $SOCK (socket-activated)" "$T_DIR/svc.log" &&
	[ "$(stat -c %U "$SOCK")" = root ] && [ "$(stat -c %a "$SOCK")" = 666 ]
ok $? "the socket stays root's with the mode root gave it"
setpriv --reuid=nobody --regid=nogroup --clear-groups "$IO" pair 1M >"$T_DIR/p1.out" 2>&1
ok $? "a client of user nobody transfers data (pair 1M)" || diag "$T_DIR/p1.out"
"$IO" pair 64K >"$T_DIR/p2.out" 2>&1
ok $? "so does a client of root" || diag "$T_DIR/p2.out"
mkfifo "$T_DIR/hold"
setpriv --reuid=nobody --regid=nogroup --clear-groups "$IO" regions 1 4K hold \
	<"$T_DIR/hold" >"$T_DIR/h.out" 2>&1 &
HOLDER=$!
exec 7>"$T_DIR/hold"
wait_for 10 grep -q holding "$T_DIR/h.out"
"$CTL" clients >"$T_DIR/clients.txt"
grep -Eq "^ *[0-9]+ +$HOLDER +65534 +test-client-io " "$T_DIR/clients.txt"
ok $? "rdmaproxyctl clients names another user's client (/proc/PID/comm is readable)" ||
	diag "$T_DIR/clients.txt"
exec 7>&-
wait "$HOLDER"
"$CTL" reload >"$T_DIR/reload.txt" 2>&1
ok $? "root reloads it, peer key included ($(cat "$T_DIR/reload.txt"))"
# A key the daemon's user cannot read is named at once.
chown root: "$T_DIR/peer.key"
out=$("${AS_DAEMON[@]}" "$RPD" --check-config -c "$T_DIR/svc.conf" 2>&1)
[ $? -eq 1 ] && echo "$out" | grep -q "key file $T_DIR/peer.key: Permission denied"
ok $? "a key the daemon's user cannot read is refused by name ($out)"
stop_daemon "$SPID"
ok $? "it stops cleanly on SIGTERM"
t_done
