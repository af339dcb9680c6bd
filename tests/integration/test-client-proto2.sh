#!/bin/bash
# This library against a daemon that speaks at most protocol 2, whose ring
# entries do not carry their index (rp-ring.h): the daemon's own sources
# built with that ceiling. The library must fall back to the producer
# indexes: transfers between processes with checksums, the API's error
# paths and a ring stress run, as test-client.sh runs them against the
# current daemon.
. "$(dirname "$0")/lib.sh"

PROBE="$HELPERS/rp-probe"
IO="$top_builddir/tests/integration/test-client-io"
RPD="$HELPERS/rdmaproxyd-proto2"
SOCK="$T_DIR/rp.sock"
CONF="$T_DIR/rp.conf"
LOG="$T_DIR/daemon.log"
export RDMAPROXY_SOCKET="$SOCK"

# run_checks NAME CMD...: each "PASS x"/"FAIL x" line of CMD becomes a TAP line.
run_checks() {
	local name=$1 rc line
	shift
	"$@" >"$T_DIR/checks.out" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		PASS\ *) ok 0 "$name: ${line#PASS }" ;;
		FAIL\ *) ok 1 "$name: ${line#FAIL }" ;;
		\#*) echo "$line" ;;
		esac
	done <"$T_DIR/checks.out"
	ok $rc "$name: exits 0"
}

write_conf "$CONF"
start_daemon "$LOG" -c "$CONF"
wait_for 10 "$PROBE" "$SOCK" status
ok $? "daemon up"
"$PROBE" "$SOCK" version 1 3 >"$T_DIR/v.out" 2>&1
grep -qx "version=2" "$T_DIR/v.out"
ok $? "it speaks protocol 2 at most: a client offering 1..3 gets 2"
[ "$T_FAIL" -eq 0 ] || diag "$T_DIR/v.out"

for size in 1 4K 1M; do
	run_checks "pair $size" "$IO" pair "$size"
done
RP_TEST_OLD_DAEMON=1 run_checks "api" "$IO" api
run_checks "stress" "$IO" stress 4 20000

t_done
