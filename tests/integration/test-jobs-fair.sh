#!/bin/bash
# One client's large registrations hold up nobody else. The daemon
# populates (and unmaps) a region a piece at a time, so its mmap lock,
# which a new client's HELLO needs on the loop thread (its rings are mapped
# there), is free between pieces; and it hands the thread pool at most 3 of
# one user's jobs, taking the users in turn. Judged by the order of the
# answers: what the other client does takes a few milliseconds, what it must
# not wait for takes hundreds.
. "$(dirname "$0")/lib.sh"

SOCK="$T_DIR/rp.sock"
CONF="$T_DIR/rp.conf"
LOG="$T_DIR/daemon.log"
export RDMAPROXY_SOCKET="$SOCK"

# A private copy another user may run (the build tree may be closed to
# them), with the library beside it.
chmod 755 "$T_DIR"
mkdir "$T_DIR/bin"
cp "$HELPERS/hostile" "$T_DIR/bin/"
cp -L "$top_builddir/libclient/.libs/librdmaproxy.so.1" "$T_DIR/bin/"
chmod 755 "$T_DIR/bin" "$T_DIR"/bin/*
export LD_LIBRARY_PATH="$T_DIR/bin"
H="$T_DIR/bin/hostile"

# The other user: nobody when we are root, else ourselves (then the check
# that needs a second user is skipped).
AS=()
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1 && getent passwd nobody >/dev/null; then
	AS=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
fi

write_conf "$CONF" "[limits]" "max_regions = 64" "max_registered_bytes = 4G"
start_daemon "$LOG" -c "$CONF"
PID=$T_LAST_PID
wait_for 10 "$HELPERS/rp-probe" "$SOCK" status
ok $? "the daemon is up"

# ms_of FILE KEY: the times (ms) of its KEY lines ("answer", "freed").
ms_of() { sed -n "s/^$2 ms=\([0-9.]*\) .*/\1/p" "$1"; }
# before FILE KEY MS: how many of its KEY lines came before MS.
before() { ms_of "$1" "$2" | awk -v t="$3" '$1 < t {n++} END {print n + 0}'; }
b_ok() { grep -q '^answer ms=[0-9.]* status=0 ' "$T_DIR/b.out"; }
b_says() { sed 's/^answer ms=[0-9.]* //' "$T_DIR/b.out"; }

# during WHEN -- ARGS: user 1 runs regflood ARGS; as soon as WHEN shows up in
# its output, the other client connects and registers 4 KiB.
during() {
	local when=$1 a fd line
	shift 2
	rm -f "$T_DIR/a.fifo" "$T_DIR/a.out"
	mkfifo "$T_DIR/a.fifo"
	"$H" regflood "$@" >"$T_DIR/a.fifo" 2>&1 &
	a=$!
	T_PIDS+=("$a")
	exec {fd}<"$T_DIR/a.fifo"
	while IFS= read -r line <&"$fd"; do
		echo "$line" >>"$T_DIR/a.out"
		[ "$line" = "$when" ] && break
	done
	"${AS[@]}" "$H" regone >"$T_DIR/b.out" 2>&1
	cat <&"$fd" >>"$T_DIR/a.out"
	exec {fd}<&-
	wait "$a"
}

# --- a new client while 1 GiB is mapped ----------------------------------------
# A sparse memfd: the daemon's mapping allocates it, which takes a while.
during sent -- 1 1024
b_ms=$(ms_of "$T_DIR/b.out" answer)
b_ok && grep -q '^answers=1 ok=1$' "$T_DIR/a.out" &&
	[ "$(before "$T_DIR/a.out" answer "$b_ms")" -eq 0 ]
ok $? "while 1 GiB is mapped, a new client connects and registers before it is answered ($(b_says))"
b_ok || diag "$T_DIR/a.out" "$T_DIR/b.out"

# --- the pool's priority --------------------------------------------------------
# The pool's threads start from the engine's, but their work is bulk work
# (populating 1 GiB): each that ran a job runs at nice 0 (libuv starts them
# all at the first job; one that ran none is still at the engine's value).
nice_of() { sed 's/^.*) //' "$1" | awk '{ print $17 }'; }
if [ "$(nice_of "/proc/$PID/stat")" = -10 ]; then
	at0=0
	for t in /proc/"$PID"/task/*; do
		[ "${t##*/}" != "$PID" ] && [ "$(nice_of "$t/stat")" = 0 ] && at0=$((at0 + 1))
	done
	[ "$at0" -ge 1 ]
	ok $? "the engine runs at nice -10, and $at0 of the pool's threads, which ran the registrations, at 0"
else
	echo "ok $((T_N += 1)) # SKIP the engine is not at nice -10 (needs CAP_SYS_NICE)"
fi

# --- another user's registration during 32 of one user's ---------------------
if [ ${#AS[@]} -gt 0 ]; then
	# Connected first; it registers when regflood says "go" on its stdin,
	# right after sending (first come, first served it would wait for all).
	rm -f "$T_DIR/b.in" "$T_DIR/b.out" "$T_DIR/a.out"
	mkfifo "$T_DIR/b.in"
	"${AS[@]}" "$H" regone wait <"$T_DIR/b.in" >"$T_DIR/b.out" 2>&1 &
	b=$!
	T_PIDS+=("$b")
	exec {bfd}>"$T_DIR/b.in"
	wait_for 20 grep -q '^ready$' "$T_DIR/b.out"
	HOSTILE_GO_FD=$bfd "$H" regflood 32 32 >"$T_DIR/a.out" 2>&1
	exec {bfd}>&-
	wait "$b"
	n=$(before "$T_DIR/a.out" answer "$(ms_of "$T_DIR/b.out" answer)")
	b_ok && grep -q '^answers=32 ok=32$' "$T_DIR/a.out" && [ "$n" -lt 16 ]
	ok $? "32 registrations of 32 MiB sent at once: another user's is answered after $n of them (fewer than 16)"
	b_ok || diag "$T_DIR/a.out" "$T_DIR/b.out"
else
	echo "ok $((T_N += 1)) # SKIP a second user needs root, setpriv and user nobody"
fi

no_regions() { [ "$(metric_of "$SOCK" rdmaproxy_regions)" = 0 ]; }
wait_for 30 no_regions
ok $? "every region is unmapped afterwards ($(metric_of "$SOCK" rdmaproxy_regions) left)"
jobs="$(metric_of "$SOCK" rdmaproxy_jobs_running) $(metric_of "$SOCK" rdmaproxy_jobs_waiting)"
[ "$jobs" = "0 0" ]
ok $? "and no job runs or waits (metrics rdmaproxy_jobs_running, _waiting: $jobs)"
kill -0 "$PID"
ok $? "the daemon is still up"
stop_daemon "$PID"
ok $? "SIGTERM: exit 0"
t_done
