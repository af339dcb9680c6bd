#!/bin/bash
# Transfers between two Soft-RoCE guests while the link loses, delays or
# drops packets and while a daemon is killed (tests/vm/guest-faults.sh).
# Both guests print TAP; their results are merged into one stream here
# ("g0: ..." / "g1: ..."), each guest's own plan is checked, and so is
# rp-vm's exit status. RP_TEST_KEEP=DIR keeps both guests' logs in DIR/g0, DIR/g1.
. "$(dirname "$0")/vm-lib.sh"
vm_require
{
	"$RPVM" run --guests 2 --timeout "${RP_TEST_FAULT_TIMEOUT:-2400}" \
		${RP_TEST_KEEP:+--results "$RP_TEST_KEEP"} -- "$top_srcdir/tests/vm/guest-faults.sh" 2>&1
	echo "rp-vm-exit $?"
} | awk '
	function result(ok, g, rest) {
		n++
		got[g]++
		sub(/^[0-9]+ ?/, "", rest)
		sub(/^- /, "", rest)
		print ok " " n " - " g ": " rest
		if (ok != "ok")
			fail = 1
	}
	match($0, /^\[g[01]\] /) {
		g = substr($0, 2, 2)
		line = substr($0, RLENGTH + 1)
		if (line ~ /^ok /)
			result("ok", g, substr(line, 4))
		else if (line ~ /^not ok /)
			result("not ok", g, substr(line, 8))
		else if (line ~ /^1\.\.[0-9]+$/)
			plan[g] = substr(line, 4) + 0
		else
			print "# [" g "] " line
		next
	}
	/^rp-vm-exit [0-9]+$/ { rc = $2 + 0; next }
	{ print "# " $0 }
	END {
		for (i = 0; i < 2; i++) {
			g = "g" i
			if (!(g in plan) || plan[g] != got[g] + 0) {
				n++
				print "not ok " n " - " g ": " got[g] + 0 " results, plan " (g in plan ? plan[g] : "missing")
				fail = 1
			}
		}
		if (rc && !fail)
			print "not ok " ++n " - rp-vm exited with status " rc
		print "1.." n
		exit fail || rc
	}'
