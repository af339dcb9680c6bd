# Waiting for a settled state instead of sampling a moment: shared by the
# integration tests (lib.sh) and the Soft-RoCE guest scripts (vm-lib.sh).
# A count sampled once can catch a transient (an fd still being closed, a
# connection not yet reaped, an MR not yet deregistered) and make a
# baseline check fail on a healthy daemon.
# shellcheck shell=bash

# Deadlines are kept in milliseconds of bash 5's EPOCHREALTIME: SECONDS
# counts whole seconds from a moment that is not ours, so SECONDS + N came
# anywhere from N - 1 to N seconds later (a 2 s wait ended after ~1.1 s on a
# busy machine). settle_ms sets SETTLE_MS to the clock; settle_past says
# whether a deadline on it has passed.
settle_ms() {
	local t=${EPOCHREALTIME//[!0-9]/} # microseconds, whatever the locale's decimal point
	SETTLE_MS=$((t / 1000))
}
settle_past() { # DEADLINE
	settle_ms
	[ "$SETTLE_MS" -ge "$1" ]
}

# wait_settled SECONDS CMD...: run CMD (it prints one value: an fd count, a
# resource table) every 100 ms until it printed the same value
# $SETTLE_SAMPLES times in a row (default 5, i.e. half a second), then print
# that value: take baselines with this. Returns 1, printing the last value,
# when nothing settles within SECONDS. SECONDS bounds the wait for the value,
# not its confirmation: a value that has begun to repeat is sampled on (a
# busy machine may need long for the samples themselves).
wait_settled() {
	local deadline v last='' same=0
	settle_ms
	deadline=$((SETTLE_MS + $1 * 1000))
	shift
	for (( ; ; )); do
		v=$("$@" 2>/dev/null)
		if [ -n "$v" ] && [ "$v" = "$last" ]; then
			same=$((same + 1))
		else
			same=1
			last=$v
		fi
		[ "$same" -ge "${SETTLE_SAMPLES:-5}" ] && break
		[ "$same" -le 1 ] && settle_past "$deadline" && echo "$v" && return 1
		sleep 0.1
	done
	echo "$v"
}

# wait_steady SECONDS CMD...: wait until CMD (a test) succeeds
# $SETTLE_SAMPLES times in a row, 100 ms apart: an end state, not a moment
# passing through it. 1 when CMD does not hold by SECONDS, or stops holding
# after it (a state reached in time is confirmed however long that takes).
wait_steady() {
	local deadline same=0
	settle_ms
	deadline=$((SETTLE_MS + $1 * 1000))
	shift
	for (( ; ; )); do
		if "$@" >/dev/null 2>&1; then
			same=$((same + 1))
		else
			same=0
		fi
		[ "$same" -ge "${SETTLE_SAMPLES:-5}" ] && return 0
		[ "$same" -eq 0 ] && settle_past "$deadline" && return 1
		sleep 0.1
	done
}

# wait_for SECONDS CMD...: retry CMD (its output discarded) every 50 ms until
# it succeeds; 1 if it has not by SECONDS. For a state that, once reached,
# stays (a log line written, a file created).
wait_for() {
	local deadline
	settle_ms
	deadline=$((SETTLE_MS + $1 * 1000))
	shift
	while ! "$@" >/dev/null 2>&1; do
		settle_past "$deadline" && return 1
		sleep 0.05
	done
}
