#!/bin/bash
# One client's large registrations and unmappings hold up nobody else: while
# they run, a new client connects at once and another user's registration is
# answered before most of them. (The daemon populates and unmaps a region a
# piece at a time, so its mmap lock, which a new client's HELLO needs on the
# loop thread, is free between pieces; and it hands the thread pool at most
# 3 of one user's jobs, taking the users in turn.) Judged by the order of the
# answers, not by their timing.
. "$(dirname "$0")/lib.sh"

H="$HELPERS/hostile"
SOCK="$T_DIR/rp.sock"
CONF="$T_DIR/rp.conf"
LOG="$T_DIR/daemon.log"
export RDMAPROXY_SOCKET="$SOCK"
chmod 755 "$T_DIR"

write_conf "$CONF" "[limits]" "max_regions = 64" "max_registered_bytes = 4G"
start_daemon "$LOG" -c "$CONF"
PID=$T_LAST_PID
wait_for 10 "$HELPERS/rp-probe" "$SOCK" status
ok $? "the daemon is up"

# The other user: nobody when we are root, else ourselves (then only the
# checks that do not need a second user count).
AS=()
if [ "$(id -u)" -eq 0 ]; then
	AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
fi

# ms_of FILE KEY: the times (ms) of KEY lines ("answer", "freed").
ms_of() { sed -n "s/^$2 ms=\([0-9.]*\) .*/\1/p" "$1"; }
# before FILE KEY MS: how many KEY lines of FILE came before MS.
before() { ms_of "$1" "$2" | awk -v t="$3" '$1 < t {n++} END {print n + 0}'; }

# flood WHEN [wait] -- N MB [free]: user 1 sends N registrations of MB MiB
# (and then frees them) at once; as soon as WHEN shows up in its output, the
# other user registers 4 KiB: connecting then, or (wait) connected before.
flood() {
	local when=$1 pre= a b fd bfd line
	shift
	[ "$1" = wait ] && pre=wait && shift
	shift # --
	rm -f "$T_DIR/a.fifo" "$T_DIR/a.out" "$T_DIR/b.in" "$T_DIR/b.out"
	mkfifo "$T_DIR/a.fifo" "$T_DIR/b.in"
	if [ -n "$pre" ]; then
		"${AS[@]}" "$H" regone wait <"$T_DIR/b.in" >"$T_DIR/b.out" 2>&1 &
		b=$!
		T_PIDS+=("$b")
		exec {bfd}>"$T_DIR/b.in"
		wait_for 20 grep -q '^ready$' "$T_DIR/b.out"
	fi
	"$H" regflood "$@" >"$T_DIR/a.fifo" 2>&1 &
	a=$!
	T_PIDS+=("$a")
	exec {fd}<"$T_DIR/a.fifo"
	# At once (a poll would let many of them pass first).
	while IFS= read -r line <&"$fd"; do
		echo "$line" >>"$T_DIR/a.out"
		[ "$line" = "$when" ] && break
	done
	if [ -n "$pre" ]; then
		echo go >&"$bfd"
		exec {bfd}>&-
		wait "$b"
	else
		"${AS[@]}" "$H" regone >"$T_DIR/b.out" 2>&1
	fi
	cat <&"$fd" >>"$T_DIR/a.out"
	exec {fd}<&-
	wait "$a"
	B_MS=$(ms_of "$T_DIR/b.out" answer)
	grep -q '^answer ms=[0-9.]* status=0 ' "$T_DIR/b.out"
}

# --- a new client during one 1 GiB registration ------------------------------
# A sparse memfd: the daemon's mapping allocates it, which takes a while.
flood sent -- 1 1024
st=$?
a_ms=$(ms_of "$T_DIR/a.out" answer)
[ "$st" -eq 0 ] && grep -q '^answers=1 ok=1$' "$T_DIR/a.out" &&
	awk -v b="$B_MS" -v a="$a_ms" 'BEGIN {exit !(b < a)}'
ok $? "while 1 GiB is mapped, a new client connects and registers before it is answered ($(sed 's/^answer ms=[0-9.]* //' "$T_DIR/b.out"))"
diag "$T_DIR/a.out" "$T_DIR/b.out"

if [ ${#AS[@]} -gt 0 ]; then
	# --- another user's registration during 24 of one user's ----------------------
	flood sent wait -- 24 32
	st=$?
	n=$(before "$T_DIR/a.out" answer "$B_MS")
	[ "$st" -eq 0 ] && grep -q '^answers=24 ok=24$' "$T_DIR/a.out" && [ "$n" -lt 12 ]
	ok $? "24 registrations of 32 MiB sent at once: another user's is answered after $n of them (fewer than 12)"
	[ "$st" -eq 0 ] || diag "$T_DIR/a.out" "$T_DIR/b.out"

	# --- and during the unmapping of 24 -------------------------------------------
	flood freeing wait -- 24 32 free
	st=$?
	n=$(before "$T_DIR/a.out" freed "$B_MS")
	[ "$st" -eq 0 ] && [ "$(grep -c '^freed ms=[0-9.]* status=0$' "$T_DIR/a.out")" -eq 24 ] &&
		[ "$n" -lt 12 ]
	ok $? "24 regions of 32 MiB freed at once: another user's registration is answered after $n of them (fewer than 12)"
	[ "$st" -eq 0 ] || diag "$T_DIR/a.out" "$T_DIR/b.out"
else
	echo "ok $((T_N += 1)) # SKIP a second user needs root"
	echo "ok $((T_N += 1)) # SKIP a second user needs root"
fi

no_regions() { [ "$(metric_of "$SOCK" rdmaproxy_regions)" = 0 ]; }
wait_for 30 no_regions
ok $? "every region is unmapped afterwards ($(metric_of "$SOCK" rdmaproxy_regions) left)"
kill -0 "$PID"
ok $? "the daemon is still up"
stop_daemon "$PID"
ok $? "SIGTERM: exit 0"
t_done
