#!/bin/bash
# Authorization is the daemon's, from SO_PEERCRED: read-only queries for every
# allowed user, reload only for root or the admin group, and refusals that
# say why. Runs rdmaproxyctl as nobody with setpriv, so it needs root.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1 ||
	! getent passwd nobody >/dev/null || ! getent group nogroup >/dev/null; then
	echo "1..0 # SKIP needs root, setpriv, user nobody and group nogroup"
	exit 0
fi

SOCK="$T_DIR/rp.sock"
CONF="$T_DIR/rp.conf"
LOG="$T_DIR/daemon.log"
# A private copy that nobody may run (the build tree may be closed to it).
CTL="$T_DIR/rdmaproxyctl"
cp "$top_builddir/tools/ctl/rdmaproxyctl" "$CTL"
chmod 755 "$T_DIR" "$CTL"
export RDMAPROXY_SOCKET="$SOCK"

# as_nobody [GROUP] -- CMD...: run as uid nobody, primary group GROUP, no others.
as_nobody() {
	local g=nogroup
	[ "$1" != -- ] && { g=$1; shift; }
	shift
	setpriv --reuid=nobody --regid="$g" --clear-groups "$@"
}

# start CONF-LINES...: (re)start the daemon with these extra [daemon] lines.
start() {
	[ -n "${PID:-}" ] && stop_daemon "$PID"
	write_conf "$CONF" "$@"
	start_daemon "$LOG" -c "$CONF"
	PID=$T_LAST_PID
	wait_for 10 "$CTL" status
}

# --- no admin_group: only root administers --------------------------------------
start
ok $? "daemon up"
for cmd in status peers clients regions metrics; do
	as_nobody -- "$CTL" "$cmd" >"$T_DIR/out" 2>"$T_DIR/err"
	rc=$?
	as_nobody -- "$CTL" --json "$cmd" >"$T_DIR/out.json" 2>>"$T_DIR/err"
	[ $rc -eq 0 ] && [ $? -eq 0 ] && jq -e . "$T_DIR/out.json" >/dev/null
	ok $? "nobody may query $cmd (text and JSON)"
	[ -s "$T_DIR/err" ] && diag "$T_DIR/err"
done
as_nobody -- "$CTL" --json clients | jq -e '[.clients[] | select(.uid == 65534)] | length == 1' \
	>/dev/null
ok $? "the daemon saw nobody's uid (SO_PEERCRED)"
as_nobody -- "$CTL" ping -c 1 testnode >/dev/null
ok $? "nobody may ping"
as_nobody -- "$CTL" reload >"$T_DIR/out" 2>"$T_DIR/err"
[ $? -eq 1 ] && grep -q 'reload needs root: uid 65534 is not root and no admin_group is configured' \
	"$T_DIR/err"
ok $? "nobody may not reload, and is told why ($(cat "$T_DIR/err"))"
grep -q 'reload refused: not an administrator' "$LOG"
ok $? "the daemon logs the refusal"
"$CTL" metrics | grep -q '^rdmaproxy_admin_refused_total 1$'
ok $? "the refusal is counted in the metrics"
"$CTL" reload >/dev/null
ok $? "root may reload"

# --- admin_group = a group of its own ------------------------------------------------
# nogroup will not do: it is nobody's group in the user database, and the
# daemon counts database membership too. A fresh system group has no members.
if command -v groupadd >/dev/null 2>&1 && GRP=rpctl$$ && groupadd -r "$GRP" 2>/dev/null; then
	trap 'groupdel "$GRP" 2>/dev/null; t_cleanup' EXIT
	start "admin_group = $GRP"
	ok $? "daemon up with admin_group = $GRP"
	as_nobody "$GRP" -- "$CTL" reload >"$T_DIR/out" 2>"$T_DIR/err"
	[ $? -eq 0 ] && grep -q '^reloaded ' "$T_DIR/out"
	ok $? "a member of the admin group may reload"
	grep -q 'reload requested by client .* uid 65534' "$LOG"
	ok $? "the daemon logs who asked for the reload"
	as_nobody nogroup -- "$CTL" reload >"$T_DIR/out" 2>"$T_DIR/err"
	[ $? -eq 1 ] && grep -q "reload needs root or membership of admin_group $GRP: uid 65534" \
		"$T_DIR/err"
	ok $? "outside the admin group: refused, naming the group ($(cat "$T_DIR/err"))"
	as_nobody nogroup -- "$CTL" status >/dev/null
	ok $? "outside the admin group: queries still work"
else
	for i in 1 2 3 4 5; do echo "ok $((T_N += 1)) # SKIP cannot create a test group"; done
fi

# --- allowed_users = root: nobody may not even connect ---------------------------------
start "allowed_users = root"
ok $? "daemon up with allowed_users = root"
as_nobody -- "$CTL" status >"$T_DIR/out" 2>"$T_DIR/err"
[ $? -eq 1 ] && grep -q 'refused uid 65534: it is not in allowed_users or allowed_groups' \
	"$T_DIR/err"
ok $? "a user who is not allowed: exit 1 and why ($(cat "$T_DIR/err"))"

# --- a socket nobody cannot open -------------------------------------------------------
start "socket_mode = 0600"
ok $? "daemon up with socket_mode = 0600"
as_nobody -- "$CTL" status >"$T_DIR/out" 2>"$T_DIR/err"
[ $? -eq 2 ] && grep -q 'Permission denied' "$T_DIR/err" && grep -q 'socket_mode' "$T_DIR/err"
ok $? "no permission on the socket: exit 2 and the likely fix"
stop_daemon "$PID"
ok $? "the daemon stops cleanly"
t_done
