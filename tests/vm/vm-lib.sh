# Shared by the tests/vm/test-*.sh wrappers: find the runner and decide
# between running and skipping. Skips only where QEMU cannot run at all, and
# never under CI (CI=true), where a missing test bed is a failure.
# shellcheck shell=bash
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
RPVM="$top_srcdir/tests/vm/rp-vm"
# wait_settled, wait_steady: also for the guest-*.sh scripts, which source this file.
. "$top_srcdir/tests/settle.sh"

vm_require() {
	local why
	# A second try: a guest that boots in seconds on a quiet host can miss
	# the check's limit on a loaded one, and under CI that would fail a test.
	if why=$("$RPVM" check 2>&1); then
		return 0
	fi
	printf '%s\n' "$why" | sed 's/^/# first boot check: /'
	if why=$("$RPVM" check 2>&1); then
		return 0
	fi
	printf '%s\n' "$why" | sed 's/^/# /'
	why=$(printf '%s\n' "$why" | sed -n 's/^rp-vm check: //p' | tail -n 1)
	if [ "${CI:-}" = true ]; then
		echo "1..1"
		echo "not ok 1 - the Soft-RoCE guest cannot run under CI: $why"
		exit 1
	fi
	echo "1..0 # SKIP QEMU cannot run here: $why"
	exit 0
}

# For the guest-*.sh scripts.
# hang_watch SECONDS DIR: if this script still runs after SECONDS, print what
# runs and the tails of DIR's logs as TAP comments, so that a run stopped by
# rp-vm's wall-clock limit shows where it was stuck. Start it before any
# background client: it must not hold a copy of their stdin fifos.
hang_watch() {
	local me=$$ i
	(
		exec </dev/null
		for ((i = 0; i < $1; i++)); do
			sleep 1
			kill -0 "$me" 2>/dev/null || exit 0
		done
		{
			echo "still running after $1 s; processes:"
			ps -eo pid,ppid,stat,etimes,wchan:24,args --forest 2>&1 | grep -v ' \[.*\]$' | cut -c1-240
			for f in "$2"/*.log "$2"/*.out; do
				[ -f "$f" ] && echo "--- $f" && tail -n 40 "$f"
			done
			echo "--- dmesg"
			dmesg 2>&1 | tail -n 20
		} | sed 's/^/# hang: /'
	) &
	HANG_WATCH=$!
}
# reap SECONDS PID: wait for child PID and return its exit status; if it is
# still running after SECONDS, say so, SIGKILL it and return 124.
reap() {
	local end=$((SECONDS + $1)) st
	while st=$(sed 's/.*) //' "/proc/$2/stat" 2>/dev/null) && [ "${st%% *}" != Z ]; do
		if [ $SECONDS -ge $end ]; then
			echo "# pid $2 ($(tr '\0' ' ' <"/proc/$2/cmdline" 2>/dev/null)) still running after $1 s: killed"
			kill -KILL "$2" 2>/dev/null
			wait "$2" 2>/dev/null
			return 124
		fi
		sleep 0.1
	done
	wait "$2"
}
