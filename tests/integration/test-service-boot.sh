#!/bin/bash
# rdmaproxy.service under a real systemd: boots a throw-away container
# (systemd-nspawn --volatile=yes of this host's /usr) whose only job starts
# the shipped socket and service units (ExecStart and --config pointed at a
# copy of the built daemon, every other line as installed) and checks from
# inside: the sysusers.d fragment creates the user; the daemon runs as it
# with no capability, no_new_privs and a seccomp filter; its /dev holds
# the API devices and /dev/infiniband only; SocketGroup=/SocketMode= of a
# drop-in hold from the first start; clients of other users transfer data
# and are named; reload works.
#
# Opt-in (RP_TEST_NSPAWN=1): it needs root, systemd-nspawn, and a host where
# nspawn can boot (e.g. /run/systemd/nspawn on a tmpfs). A container that
# does not boot is a skip; a check that fails inside it is a failure.
. "$(dirname "$0")/lib.sh"

skip() {
	echo "1..0 # SKIP $1"
	exit 0
}
[ "${RP_TEST_NSPAWN:-}" = 1 ] || skip "set RP_TEST_NSPAWN=1 to boot the unit in a container"
[ "$(id -u)" -eq 0 ] || skip "needs root"
command -v systemd-nspawn >/dev/null || skip "systemd-nspawn is not installed"
ldd "$RPD" | grep -q 'libasan\|libubsan' &&
	skip "a sanitizer build: its runtime calls setrlimit(), which the unit's filter refuses"

C="$T_DIR/ctr"
mkdir -p "$C/out" "$C/rp/sbin" "$C/rp/bin" "$C/rp/lib"
cp "$RPD" "$C/rp/sbin/"
cp "$top_builddir/tools/ctl/rdmaproxyctl" "$top_builddir/tests/integration/test-client-io" \
	"$C/rp/bin/"
cp -L "$top_builddir/libclient/.libs/librdmaproxy.so.1" "$C/rp/lib/"
sed -e 's|^ExecStart=.*|ExecStart=/opt/rp/sbin/rdmaproxyd --foreground --config /opt/rp/rdmaproxy.conf|' \
	"$top_builddir/systemd/rdmaproxy.service" >"$C/rdmaproxy.service"
cp "$top_srcdir/systemd/rdmaproxy.socket" "$top_srcdir/systemd/rdmaproxy.sysusers" "$C/"
printf '[daemon]\nnode_name = boot\ntransport = auto\nlisten = none\n' >"$C/rdmaproxy.conf"
cat >"$C/rp-check.service" <<'EOF'
[Unit]
Description=rdmaproxy.service check
After=sysinit.target systemd-sysusers.service
[Service]
Type=oneshot
ExecStart=/bin/bash /rp/check.sh
ExecStopPost=/bin/systemctl poweroff --no-block
EOF
cat >"$C/check.sh" <<'EOF'
#!/bin/bash
# Inside the container. TAP lines go to /rp/out/tap, details to /rp/out/log.
exec >>/rp/out/log 2>&1
n=0
t() { n=$((n + 1)); if [ "$1" -eq 0 ]; then echo "ok - $2"; else echo "not ok - $2"; fi >>/rp/out/tap; }
echo booted >/rp/out/booted
set -x
mkdir -p /opt && cp -a /rp/rp /opt/rp && cp /rp/rdmaproxy.conf /opt/rp/
export LD_LIBRARY_PATH=/opt/rp/lib
CTL=/opt/rp/bin/rdmaproxyctl IO=/opt/rp/bin/test-client-io
AS_NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups"
mkdir -p /dev/infiniband && echo marker >/dev/infiniband/marker
systemd-sysusers /rp/rdmaproxy.sysusers
getent passwd rdmaproxy | grep -q ':/usr/s\?bin/nologin$'
t $? "systemd-sysusers creates user rdmaproxy from the fragment"
cp /rp/rdmaproxy.service /rp/rdmaproxy.socket /etc/systemd/system/
# First start with a drop-in that gives the socket a group: the socket unit
# creates /run/rdmaproxy and the socket, then the service starts in it.
mkdir -p /etc/systemd/system/rdmaproxy.socket.d
printf '[Socket]\nSocketGroup=nogroup\nSocketMode=0660\n' >/etc/systemd/system/rdmaproxy.socket.d/group.conf
systemctl daemon-reload
systemctl start rdmaproxy.socket rdmaproxy.service
t $? "rdmaproxy.socket and rdmaproxy.service start (Type=notify: the daemon said READY=1)"
ls -la /run/rdmaproxy
[ "$(stat -c '%U %G %a' /run/rdmaproxy/rdmaproxy.sock)" = "root nogroup 660" ] &&
	$AS_NOBODY $IO conns 1 | grep -q '^connected=1$' &&
	setpriv --reuid=daemon --regid=daemon --clear-groups $IO conns 1 | grep -q '^connected=0$'
t $? "SocketGroup=/SocketMode= of a drop-in hold once the service runs, and decide who connects"
rm -r /etc/systemd/system/rdmaproxy.socket.d
systemctl daemon-reload
systemctl stop rdmaproxy.service rdmaproxy.socket
systemctl start rdmaproxy.socket rdmaproxy.service
PID=$(systemctl show -p MainPID --value rdmaproxy.service)
[ "$(ps -o user= -p "$PID")" = rdmaproxy ]
t $? "the daemon runs as rdmaproxy"
# (No awk here: /etc/alternatives is empty in this container.)
[ "$(grep -Ec '^Cap(Prm|Eff|Bnd|Amb):[[:space:]]+0000000000000000$' /proc/$PID/status)" = 4 ] &&
	grep -q '^NoNewPrivs:[[:space:]]*1' /proc/$PID/status && grep -q '^Seccomp:[[:space:]]*2' /proc/$PID/status
t $? "with no capability, no_new_privs and a seccomp filter"
grep -E '^(Cap|NoNew|Seccomp)' /proc/$PID/status
nsenter -t "$PID" -m ls /dev | tr '\n' ' '
[ "$(nsenter -t "$PID" -m cat /dev/infiniband/marker)" = marker ] &&
	! nsenter -t "$PID" -m test -e /dev/vda && ! nsenter -t "$PID" -m test -e /dev/mem
t $? "its /dev has /dev/infiniband and no disk or memory device"
$AS_NOBODY $IO pair 1M
t $? "a client of user nobody transfers data"
mkfifo /tmp/hold
$AS_NOBODY $IO regions 1 4K hold </tmp/hold >/tmp/hold.out 2>&1 &
HOLDER=$!
exec 7>/tmp/hold
for _ in $(seq 100); do grep -q holding /tmp/hold.out && break; sleep 0.1; done
$CTL clients | tee /tmp/clients
grep -Eq "^ *[0-9]+ +$HOLDER +65534 +test-client-io " /tmp/clients
t $? "rdmaproxyctl clients names the other user's client"
exec 7>&-
wait $HOLDER
systemctl reload rdmaproxy.service && $CTL reload
t $? "systemctl reload and rdmaproxyctl reload work"
systemd-analyze security --no-pager rdmaproxy.service | tail -1
systemctl stop rdmaproxy.service
t $? "the service stops"
journalctl --no-pager -u rdmaproxy.service
echo done >/rp/out/done
EOF
timeout 180 systemd-nspawn -D / --volatile=yes -b --register=no --keep-unit --console=passive \
	--bind="$C:/rp" --bind-ro="$C/rp-check.service:/etc/systemd/system/rp-check.service" \
	-- systemd.unit=rp-check.service systemd.firstboot=off >"$T_DIR/nspawn.log" 2>&1
rc=$?
if [ ! -e "$C/out/booted" ]; then
	tail -20 "$T_DIR/nspawn.log" | diag
	skip "the container did not boot here (nspawn exit $rc)"
fi
while IFS= read -r line; do
	case $line in
	ok\ -\ *) ok 0 "${line#ok - }" ;;
	not\ ok\ -\ *) ok 1 "${line#not ok - }" ;;
	esac
done <"$C/out/tap"
[ -e "$C/out/done" ]
ok $? "the checks inside the container ran to the end" || diag "$C/out/log"
[ "$T_FAIL" -eq 0 ] || diag "$C/out/log"
t_done
