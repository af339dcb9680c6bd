#!/bin/bash
# The settle helpers themselves: a baseline taken while a transient is still
# there must come out as the settled value, and an end state that only
# passes by must not count.
# shellcheck shell=bash
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
. "$top_srcdir/tests/settle.sh"
D=$(mktemp -d "${TMPDIR:-/tmp}/rp-settle.XXXXXX")
trap 'rm -rf "$D"' EXIT
n=0 fail=0
ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=1; fi
}
val() { cat "$D/v"; }
is() { [ "$(val)" = "$1" ]; }

# A count that is 16 for 0.3 s (a transient fd), then 13 for good.
echo 16 >"$D/v"
(sleep 0.3 && echo 13 >"$D/v") &
BG=$!
v=$(wait_settled 10 val)
ok $? "wait_settled returns once the value is stable"
[ "$v" = 13 ]
ok $? "and the value is the settled one, not the transient ($v)"
wait "$BG"

# A value that flaps between 14 and 13 from one look to the next never
# settles ...
flap() {
	local v
	v=$(val)
	echo $((v == 13 ? 14 : 13)) >"$D/v"
	echo "$v"
}
is_flap() { [ "$(flap)" = "$1" ]; }
wait_settled 2 flap >/dev/null
[ $? -ne 0 ]
ok $? "a flapping value never settles: wait_settled times out"
wait_steady 2 is_flap 13
[ $? -ne 0 ]
ok $? "wait_steady does not take a value passing by for an end state"

# ... and a value that arrives and stays is an end state.
echo 14 >"$D/v"
(sleep 0.3 && echo 13 >"$D/v") &
BG=$!
wait_steady 10 is 13
ok $? "wait_steady sees a value that arrives and stays"
wait "$BG"
# A state reached just before the deadline is confirmed after it, on a host
# so slow that the confirming samples outlast the deadline ...
slow_is() { sleep 0.3 && is "$1"; }
echo 14 >"$D/v"
(sleep 0.5 && echo 13 >"$D/v") &
BG=$!
wait_steady 2 slow_is 13
ok $? "wait_steady confirms a state reached in time, however slow the samples"
wait "$BG"
slow_val() { sleep 0.3 && val; }
echo 12 >"$D/v"
v=$(wait_settled 2 slow_val)
ok $? "wait_settled confirms a value that settled in time, however slow the samples ($v)"
# ... but not one that is only reached after it.
echo 14 >"$D/v"
(sleep 2 && echo 13 >"$D/v") &
BG=$!
wait_steady 1 is 13
[ $? -ne 0 ]
ok $? "wait_steady still gives up on a state not reached in time"
wait "$BG"
echo "1..$n"
exit $fail
