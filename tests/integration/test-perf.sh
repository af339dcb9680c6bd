#!/bin/bash
# rdmaproxy-perf against a real daemon on the tcp transport: write, read and
# send, bandwidth and latency, with --verify and --json; the JSON must parse,
# the numbers must be positive and the op counts must match what was asked.
. "$(dirname "$0")/lib.sh"

PERF="$top_builddir/tools/perf/rdmaproxy-perf"
SOCK="$T_DIR/rp.sock"
CONF="$T_DIR/rp.conf"
LOG="$T_DIR/daemon.log"
export RDMAPROXY_SOCKET="$SOCK"

write_conf "$CONF"
start_daemon "$LOG" -c "$CONF"
wait_for 10 test -S "$SOCK"
ok $? "daemon up"

# check_json FILE PYTHON-EXPR: the document parses and EXPR holds for it (as d).
check_json() {
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"]
ok = eval("(" + sys.argv[2] + ")")
if not ok:
    json.dump(d, sys.stdout, indent=1)
sys.exit(0 if ok else 1)' "$1" "$2" >"$T_DIR/check.out" 2>&1
	local rc=$?
	[ $rc -eq 0 ] || diag "$T_DIR/check.out"
	return $rc
}

# Bandwidth: 300 ops of 64 KiB each, depth 8, data verified.
timeout 120 "$PERF" --json --verify --quiet -n 300 -w 20 -q 8 -s 64K write read send \
	>"$T_DIR/bw.json" 2>"$T_DIR/bw.err"
ok $? "bandwidth run (write, read, send) exits 0"
python3 -m json.tool "$T_DIR/bw.json" >/dev/null
ok $? "bandwidth --json is valid JSON"
check_json "$T_DIR/bw.json" 'd["ok"] and len(r) == 3 and
	[x["test"] for x in r] == ["write_bw", "read_bw", "send_bw"]'
ok $? "three results, in the order asked"
check_json "$T_DIR/bw.json" 'all(x["ops"] == 300 and x["errors"] == 0 and
	x["bytes"] == 300 * 65536 and x["size"] == 65536 for x in r)'
ok $? "every op accounted: 300 completions each, no errors, bytes = ops x size"
check_json "$T_DIR/bw.json" 'all(x["bw_MiBps"] > 0 and x["bw_Gbps"] > 0 and x["mops"] > 0 and
	x["seconds"] > 0 for x in r)'
ok $? "bandwidth, Gb/s, message rate and time are positive"
check_json "$T_DIR/bw.json" 'all(x["verified"] is True for x in r)'
ok $? "--verify: checksums match for write, read and send"
diag "$T_DIR/bw.err"

# Latency: 200 iterations of 2 bytes.
timeout 120 "$PERF" --json --quiet -n 200 -w 10 write_lat read_lat send_lat \
	>"$T_DIR/lat.json" 2>"$T_DIR/lat.err"
ok $? "latency run (write_lat, read_lat, send_lat) exits 0"
python3 -m json.tool "$T_DIR/lat.json" >/dev/null
ok $? "latency --json is valid JSON"
check_json "$T_DIR/lat.json" 'len(r) == 3 and all(x["iterations"] == 200 and x["ops"] == 200 and
	x["errors"] == 0 and x["size"] == 2 for x in r)'
ok $? "200 samples and 200 completed ops per latency test"
check_json "$T_DIR/lat.json" 'all(0 < x["lat_us"]["min"] <= x["lat_us"]["median"] <=
	x["lat_us"]["p99"] <= x["lat_us"]["max"] for x in r)'
ok $? "latencies are positive and ordered min <= median <= p99 <= max"
check_json "$T_DIR/lat.json" 'all((x["lat_us"]["over_1ms"] > 0) == (x["lat_us"]["max"] > 1000) and
	x["lat_us"]["over_1ms"] <= x["iterations"] for x in r)'
ok $? "over_1ms counts the operations over 1 ms (none unless the max is)"
diag "$T_DIR/lat.err"

# Several clients at once, a size sweep, and a timed run.
timeout 120 "$PERF" --json --verify --quiet -c 3 -n 100 -q 4 write send \
	>"$T_DIR/multi.json" 2>"$T_DIR/multi.err"
ok $? "-c 3 exits 0"
check_json "$T_DIR/multi.json" 'd["clients"] == 3 and all(x["ops"] == 300 and
	x["verified"] is True for x in r)'
ok $? "-c 3: the three clients' ops are summed (300) and verified"
check_json "$T_DIR/multi.json" 'all(x["client_ops"] == {"min": 100, "max": 100} for x in r)'
ok $? "-c 3: each client's ops are in client_ops (min = max = 100 with -n)"
timeout 120 "$PERF" --json --verify --quiet -n 20 -a read >"$T_DIR/sweep.json" 2>&1
ok $? "-a sweep exits 0"
check_json "$T_DIR/sweep.json" '[x["size"] for x in r] == [2 ** k for k in range(1, 24)] and
	all(x["ops"] == 20 and x["verified"] for x in r)'
ok $? "-a: 2 B .. 8 MiB, every size verified"
timeout 60 "$PERF" --json --quiet -D 0.5 write_bw >"$T_DIR/dur.json" 2>&1
ok $? "-D 0.5 exits 0"
check_json "$T_DIR/dur.json" 'r[0]["ops"] > 0 and 0.4 < r[0]["seconds"] < 5'
ok $? "-D: ops completed over about half a second"

# The human table and the usage errors.
timeout 60 "$PERF" -n 50 write_lat >"$T_DIR/table.out" 2>&1
ok $? "table output exits 0"
grep -q 't_med\[us\]' "$T_DIR/table.out" && grep -q '^ 2  ' "$T_DIR/table.out"
ok $? "the table has a latency header and a 2-byte row"
"$PERF" nonsense >/dev/null 2>&1
[ $? -eq 2 ]
ok $? "an unknown test is a usage error (exit 2)"
"$PERF" --help | grep -q -- '--verify'
ok $? "--help documents the options"
RDMAPROXY_SOCKET="$T_DIR/none.sock" "$PERF" -n 10 >/dev/null 2>&1
[ $? -eq 1 ]
ok $? "no daemon: exit 1"

t_done
