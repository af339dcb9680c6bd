#!/bin/bash
# Smoke test of tests/bench/host-bench: with --quick (tiny runs, numbers
# meaningless) it must go through its sections and write a JSON document in
# which every measurement that needs only this tree has a number. No timing
# is asserted. qperf and perf may be missing here: their rows may be empty
# (the bench then exits 1 and says why), which is fine for this test.
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$top_srcdir/tests/integration/lib.sh"

BENCH="$top_srcdir/tests/bench/host-bench"
J="$T_DIR/hb.json"

(cd "$top_builddir" && timeout 900 "$BENCH" --quick --no-install --only hop,scale,tcp,idle \
	--json "$J") >"$T_DIR/out" 2>&1
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 1 ]
ok $? "host-bench --quick runs to the end (exit $rc)" || diag "$T_DIR/out"
python3 -m json.tool "$J" >/dev/null 2>&1
ok $? "it writes valid JSON"

check() { # PYTHON-EXPR on the document d and its runs
	python3 - "$J" "$1" <<'EOF' >"$T_DIR/check" 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
runs = {(r["section"], r["pair"], r["case"], r["side"]): r for r in d["runs"]}
ok = eval("(" + sys.argv[2] + ")")
if not ok:
    json.dump(d, sys.stdout, indent=1)
sys.exit(0 if ok else 1)
EOF
	local rc=$?
	[ $rc -eq 0 ] || diag "$T_DIR/check"
	return $rc
}
check 'sorted(d["sections"]) == ["hop", "idle", "scale", "tcp"]'
ok $? "the JSON has the four sections asked for"
check 'runs[("hop", 1, "floor", "shm")]["rtt_median"] > 0 and runs[("hop", 1, "sync8", "proxy")]["median"] > 0'
ok $? "hop: the floor and the synchronous write through the daemon have numbers"
check 'all(isinstance(r["steal_ms"], int) and r["steal_ms"] >= 0 for r in d["runs"] if r["status"] == "ok")'
ok $? "every run says how much steal time (the host's) it lost"
check 'runs[("hop", 1, "sync8", "proxy")]["daemon_us_per_op"] > 0'
ok $? "hop: the daemon's CPU per op is measured"
check 'all(runs[("scale", 1, "c%dq%d" % (n, q), "proxy")]["mops"] > 0 for n in (1, 2) for q in (1, 32))'
ok $? "scale: 1 and 2 clients, depth 1 and 32, have rates"
check 'all(runs[("tcp", 1, c, "proxy")].get("MiBps", 0) > 0 for c in ("write64K", "read1M")) and
	runs[("tcp", 1, "sync8", "proxy")]["median"] > 0 and runs[("tcp", 1, "pp8", "spin")]["rtt_median"] > 0'
ok $? "tcp: bandwidth and the 8 B write through two peered daemons, and the TCP ping-pong"
check 'all(runs[("idle", 0, "c%d" % n, "proxy")]["cpu_pct"] >= 0 for n in (0, 8, 20)) and
	runs[("idle", 0, "c20", "proxy")]["rss_kb"] > 0'
ok $? "idle: CPU and RSS with 0, 8 and 20 idle clients"
grep -q 'sync 8 B write, median' "$T_DIR/out" && grep -q 'met?' "$T_DIR/out"
ok $? "it prints the tables"

t_done
