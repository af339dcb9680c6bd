#!/bin/bash
# rdmaproxyctl against a real daemon on the tcp transport: every command in
# text and JSON, lists longer than one packet, metrics through promtool,
# exit codes, socket selection, and systemd's STATUS= refresh.
. "$(dirname "$0")/lib.sh"

CTL="$top_builddir/tools/ctl/rdmaproxyctl"
LOAD="$HELPERS/ctl-load"
SOCK="$T_DIR/rp.sock"
CONF="$T_DIR/rp.conf"
LOG="$T_DIR/daemon.log"
export RDMAPROXY_SOCKET="$SOCK"

# JSON is checked with jq (tools/install-deps installs it).
if ! command -v jq >/dev/null 2>&1; then
	[ -n "${CI:-}" ] && { echo "not ok 1 - jq is required in CI"; echo "1..1"; exit 1; }
	echo "1..0 # SKIP jq is not installed"
	exit 0
fi
jget() { jq -e "$1" >/dev/null; } # jget FILTER <doc: the filter holds
json_ok() { jq -e . >/dev/null 2>&1; }

# fits100 FILE: no line is wider than 100 columns.
fits100() { ! awk 'length($0) > 100 { bad = 1 } END { exit !bad }' "$1"; }

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T_DIR/alpha.key"
chmod 600 "$T_DIR/alpha.key"
write_conf "$CONF" "" '[peer "alpha"]' "address = 127.0.0.1:9" "key_file = $T_DIR/alpha.key"

# --- usage and an unreachable daemon ----------------------------------------
"$CTL" --help | grep -q 'ping PEER'
ok $? "--help lists the commands"
"$CTL" bogus 2>/dev/null
[ $? -eq 64 ]
ok $? "an unknown command exits 64"
"$CTL" ping 2>/dev/null
[ $? -eq 64 ]
ok $? "ping without a peer exits 64"
"$CTL" status >"$T_DIR/out" 2>"$T_DIR/err"
rc=$?
[ $rc -eq 2 ] && grep -q "cannot reach rdmaproxyd at $SOCK" "$T_DIR/err" &&
	grep -q 'is rdmaproxyd running' "$T_DIR/err" && grep -q RDMAPROXY_SOCKET "$T_DIR/err"
ok $? "no daemon: exit 2, the socket path and the likely fix ($(head -c 200 "$T_DIR/err"))"

# --- a daemon with one configured peer that is down ---------------------------
"$HELPERS/notify-listen" "$T_DIR/notify.sock" >"$T_DIR/notify.log" &
T_PIDS+=($!)
wait_for 5 test -S "$T_DIR/notify.sock"
NOTIFY_SOCKET="$T_DIR/notify.sock" start_daemon "$LOG" -c "$CONF"
PID=$T_LAST_PID
wait_for 10 "$CTL" status
ok $? "status answers once the daemon is up"

RDMAPROXY_SOCKET="$T_DIR/nowhere.sock" "$CTL" -s "$SOCK" status >/dev/null
ok $? "-s PATH overrides RDMAPROXY_SOCKET"
RDMAPROXY_SOCKET="$T_DIR/nowhere.sock" "$CTL" status 2>"$T_DIR/err"
[ $? -eq 2 ] && grep -q "$T_DIR/nowhere.sock" "$T_DIR/err"
ok $? "RDMAPROXY_SOCKET chooses the socket"

"$CTL" status >"$T_DIR/status.txt"
grep -q '^rdmaproxyd .* on node testnode, up ' "$T_DIR/status.txt" &&
	grep -q '^transport  *tcp$' "$T_DIR/status.txt" &&
	grep -q '^peers  *0/1 up$' "$T_DIR/status.txt"
ok $? "status: version, node, transport, peers"
diag "$T_DIR/status.txt"
"$CTL" --json status >"$T_DIR/status.json"
json_ok <"$T_DIR/status.json" && jget '.node == "testnode" and .transport == "tcp" and
	.totals.peers == 1 and .totals.peers_up == 0 and (.devices | length) == 0 and
	.uptime_seconds >= 0' <"$T_DIR/status.json"
ok $? "status --json: valid, node/transport/totals"
diag "$T_DIR/status.json"

# --- load: 40 regions with exports, traffic with one error, 60 more clients -----
coproc LOADP { "$LOAD" 40 65536 60 2>"$T_DIR/load.err"; }
# bash unsets LOADP_PID as soon as the coprocess ends: keep our own copy.
LOAD_PID=$LOADP_PID
T_PIDS+=($LOAD_PID)
read -r -t 20 line <&"${LOADP[0]}"
[ "$line" = ready ]
ok $? "the load client is ready ($line)"

"$CTL" clients >"$T_DIR/clients.txt"
[ $? -eq 0 ] && [ "$(grep -c ' ctl-load ' "$T_DIR/clients.txt")" -eq 61 ] &&
	head -1 "$T_DIR/clients.txt" | grep -q '^ *ID  *PID  *UID  *COMMAND  *REGIONS  *REGISTERED'
ok $? "clients: a table with all 61 load clients (more than one page)"
fits100 "$T_DIR/clients.txt" && grep ' ctl-load ' "$T_DIR/clients.txt" | grep -q ' 2.5 MiB '
ok $? "clients: fits 100 columns, sizes in human units"
"$CTL" --json clients >"$T_DIR/clients.json"
json_ok <"$T_DIR/clients.json" && jget '(.clients | length) == 62 and
	([.clients[] | select(.regions == 40)] | length) == 1 and
	([.clients[] | select(.regions == 40)][0] | .registered_bytes == 2621440 and
	 .operations == 5 and .errors == 1 and .bytes_moved == 16384 and .exports == 22 and
	 .command == "ctl-load" and .uid == 0 and .pid > 0)' <"$T_DIR/clients.json"
ok $? "clients --json: 62 sessions; regions, bytes, operations, errors, exports"

"$CTL" regions >"$T_DIR/regions.txt"
[ $? -eq 0 ] && fits100 "$T_DIR/regions.txt" &&
	grep -q 'ctl-alias-0  *read  *owner$' "$T_DIR/regions.txt" &&
	grep -q 'ctl-alias-1  *write  *owner$' "$T_DIR/regions.txt" &&
	grep -q 'ctl-exp-0  *read,write  *owner$' "$T_DIR/regions.txt" &&
	[ "$(grep -c '64.0 KiB' "$T_DIR/regions.txt")" -eq 40 ]
ok $? "regions: owner, size, export names, access and who may open them in 100 columns"
"$CTL" --json regions >"$T_DIR/regions.json"
json_ok <"$T_DIR/regions.json" && jget '(.regions | length) == 40 and
	([.regions[] | .exports | length] | add) == 22 and
	([.regions[] | select((.exports | length) == 3)] | length) == 1 and
	(.regions[0] | .bytes == 65536 and .command == "ctl-load" and .pid > 0)' \
	<"$T_DIR/regions.json"
ok $? "regions --json: 40 regions (two pages), 22 exports folded per region"

"$CTL" peers >"$T_DIR/peers.txt"
[ $? -eq 0 ] && fits100 "$T_DIR/peers.txt" &&
	grep -Eq '^alpha  +127\.0\.0\.1:9  +tcp  +[a-z]+' "$T_DIR/peers.txt" &&
	! grep -Eq '^alpha .* up ' "$T_DIR/peers.txt"
ok $? "peers: the configured peer, not up"
diag "$T_DIR/peers.txt"
"$CTL" --json peers >"$T_DIR/peers.json"
json_ok <"$T_DIR/peers.json" && jget '(.peers | length) == 1 and .peers[0].name == "alpha" and
	.peers[0].address == "127.0.0.1:9" and .peers[0].state != "up" and
	.peers[0].transport == "tcp" and .peers[0].since > 0' <"$T_DIR/peers.json"
ok $? "peers --json: name, address, transport, state, since"

# --- metrics -----------------------------------------------------------------
"$CTL" metrics >"$T_DIR/metrics.txt"
[ $? -eq 0 ] && [ "$(wc -c <"$T_DIR/metrics.txt")" -gt 4096 ] &&
	grep -q '^rdmaproxy_regions 40$' "$T_DIR/metrics.txt" &&
	grep -q '^rdmaproxy_clients 62$' "$T_DIR/metrics.txt" &&
	grep -q '^rdmaproxy_exports 22$' "$T_DIR/metrics.txt" &&
	grep -q '^rdmaproxy_registered_bytes 2621440$' "$T_DIR/metrics.txt" &&
	grep -q '^rdmaproxy_operations_total{op="write"} 5$' "$T_DIR/metrics.txt" &&
	grep -q '^rdmaproxy_errors_total{kind="remote"} 1$' "$T_DIR/metrics.txt" &&
	grep -q '^rdmaproxy_peer_up{peer="alpha"} 0$' "$T_DIR/metrics.txt" &&
	grep -q '^# TYPE rdmaproxy_peer_bytes_total counter$' "$T_DIR/metrics.txt"
ok $? "metrics: more than one packet of text, with the numbers of the load"
# The engine started asleep, so the first submission woke it; it found work.
awk '$1 == "rdmaproxy_engine_passes_total" { p = $2 }
	$1 == "rdmaproxy_engine_busy_passes_total" { b = $2 }
	$1 == "rdmaproxy_engine_wakeups_total" { w = $2 }
	$1 == "rdmaproxy_engine_yields_total" { y = $2; yn++ }
	$1 == "rdmaproxy_engine_sleeps_total" { sl = $2; sn++ }
	$1 == "rdmaproxy_engine_spin_seconds" { s = $2 }
	END { exit !(b >= 1 && p >= b && w >= 1 && yn == 1 && sn == 1 && y >= 0 && sl >= 0 &&
		s >= 0.00001 && s <= 0.0002) }' "$T_DIR/metrics.txt"
ok $? "metrics: the engine counted its passes, the passes with work and its wake-ups"
if command -v promtool >/dev/null 2>&1; then
	promtool check metrics <"$T_DIR/metrics.txt" >"$T_DIR/promtool.out" 2>&1
	ok $? "promtool check metrics accepts the exposition"
	diag "$T_DIR/promtool.out"
elif [ -n "${CI:-}" ]; then
	ok 1 "promtool is required in CI (apt-get install prometheus)"
else
	echo "ok $((T_N += 1)) # SKIP promtool is not installed"
fi
# Every sample's family has HELP and TYPE; counters end in _total.
awk '/^# TYPE/ { t[$3] = $4 } /^# HELP/ { h[$3] = 1 }
	/^[a-z]/ { n = $0; sub(/[{ ].*/, "", n); if (!(n in t) || !(n in h)) bad = 1
		   if (t[n] == "counter" && n !~ /_total$/) bad = 1 }
	END { exit bad }' "$T_DIR/metrics.txt"
ok $? "metrics: HELP and TYPE for every family, counters end in _total"
"$CTL" --json metrics >"$T_DIR/metrics.json"
json_ok <"$T_DIR/metrics.json" && jget '[.metrics[] | select(.name == "rdmaproxy_regions")][0] |
	.type == "gauge" and .samples[0].value == 40' <"$T_DIR/metrics.json" &&
	jget '[.metrics[] | select(.name == "rdmaproxy_peer_up")][0].samples[0].labels.peer ==
	"alpha"' <"$T_DIR/metrics.json"
ok $? "metrics --json: families with typed samples and labels"

# --- STATUS= follows the numbers (refreshed at most once a second) -------------
wait_for 5 grep -q 'STATUS=tcp transport, 0/1 peers up, 6[12] clients, 2.5 MiB registered' \
	"$T_DIR/notify.log"
ok $? "STATUS= is refreshed: peers up, clients, registered bytes"

# --- ping ----------------------------------------------------------------------
"$CTL" ping -c 3 -i 0 testnode >"$T_DIR/ping.txt"
[ $? -eq 0 ] && grep -q '^3 sent, 3 received, 0% loss' "$T_DIR/ping.txt" &&
	grep -q '^rtt min/avg/max/mdev = ' "$T_DIR/ping.txt"
ok $? "ping this node: replies and a ping-like summary"
"$CTL" --json ping -c 2 -i 0 testnode >"$T_DIR/ping.json"
json_ok <"$T_DIR/ping.json" && jget '.sent == 2 and .received == 2 and .loss_percent == 0 and
	(.replies | length) == 2 and .rtt_ms.min >= 0' <"$T_DIR/ping.json"
ok $? "ping --json: sent, received, loss, rtt"
"$CTL" ping -c 2 -i 0 alpha >"$T_DIR/ping-down.txt" 2>&1
[ $? -eq 1 ] && grep -q '2 sent, 0 received, 100% loss' "$T_DIR/ping-down.txt" &&
	grep -q 'alpha' "$T_DIR/ping-down.txt"
ok $? "ping a peer that is down: 100% loss, exit 1"
"$CTL" --json ping -c 2 -i 0 alpha >"$T_DIR/ping-down.json" 2>/dev/null
[ $? -eq 1 ] && json_ok <"$T_DIR/ping-down.json" &&
	jget '.received == 0 and (.replies[0].error | length) > 0' <"$T_DIR/ping-down.json"
ok $? "ping --json a peer that is down: errors per reply, exit 1"
"$CTL" ping nosuchpeer >/dev/null 2>"$T_DIR/err"
[ $? -eq 1 ] && grep -q 'nosuchpeer is neither this node' "$T_DIR/err"
ok $? "ping an unknown peer: refused with the reason, exit 1"

# --- reload ----------------------------------------------------------------------
# The reply keeps only the end of a long config path (behind "...").
CONF_RE="($CONF|\.\.\..*/${CONF##*/})"
"$CTL" reload >"$T_DIR/reload.txt"
[ $? -eq 0 ] && grep -Eq "^reloaded $CONF_RE: " "$T_DIR/reload.txt"
ok $? "reload as root: done ($(cat "$T_DIR/reload.txt"))"
"$CTL" --json reload >"$T_DIR/reload.json"
json_ok <"$T_DIR/reload.json" && jget '.reloaded == true' <"$T_DIR/reload.json"
ok $? "reload --json"
cp "$CONF" "$CONF.good"
printf '[daemon]\nbogus = 1\n' >"$CONF"
"$CTL" reload >/dev/null 2>"$T_DIR/err"
[ $? -eq 1 ] && grep -q "reload rejected.*$CONF:2:" "$T_DIR/err"
ok $? "a broken config: reload exits 1 with FILE:LINE"
cp "$CONF.good" "$CONF"
"$CTL" status >/dev/null
ok $? "the daemon still answers after the rejected reload"

# Settings read only at start-up: the reply names each one, exit 3.
sed -i 's/^node_name = testnode/node_name = renamed/; s/^listen = none/listen = 127.0.0.1:9/' \
	"$CONF"
printf '[verbs]\ncq_depth = 64\nsend_queue_depth = 16\nlocal_queue_pairs = 3\ninline_size = 0\n' >>"$CONF"
RESTART="daemon.node_name, daemon.listen, verbs.cq_depth, verbs.send_queue_depth"
RESTART="$RESTART, verbs.local_queue_pairs, verbs.inline_size"
"$CTL" reload >"$T_DIR/r3.txt" 2>"$T_DIR/r3.err"
rc=$?
[ $rc -eq 3 ] && grep -Eq "^reloaded $CONF_RE: .*; restart to apply: $RESTART\$" "$T_DIR/r3.txt" &&
	grep -q "^rdmaproxyctl: warning: reloaded, but .* restarts: $RESTART\$" "$T_DIR/r3.err"
ok $? "settings that need a restart: exit 3, each named ($rc: $(cat "$T_DIR/r3.txt" "$T_DIR/r3.err"))"
"$CTL" --json reload >"$T_DIR/r3.json" 2>/dev/null
rc=$?
[ $rc -eq 3 ] && json_ok <"$T_DIR/r3.json" && jget '.reloaded == true and .restart_needed ==
	["daemon.node_name", "daemon.listen", "verbs.cq_depth", "verbs.send_queue_depth",
	 "verbs.local_queue_pairs", "verbs.inline_size"]' \
	<"$T_DIR/r3.json"
ok $? "reload --json: restart_needed lists them, exit 3 ($rc: $(cat "$T_DIR/r3.json"))"
grep -q "changed settings that apply only at the next restart: $RESTART\$" "$LOG"
ok $? "the daemon logs them"
"$CTL" status >"$T_DIR/status3.txt"
grep -q 'on node testnode' "$T_DIR/status3.txt" && "$CTL" ping -c 1 -i 0 testnode >/dev/null
ok $? "until the restart the daemon keeps its running node name"
sed -i 's/^log_level = debug/log_level = info/' "$CONF"
"$CTL" --json reload >"$T_DIR/r3.json" 2>/dev/null
rc=$?
[ $rc -eq 3 ] && jget '.restart_needed | length == 6' <"$T_DIR/r3.json"
ok $? "a later reload still reports them while the restart is pending"
cp "$CONF.good" "$CONF"
"$CTL" reload >"$T_DIR/r0.txt" 2>"$T_DIR/r0.err"
rc=$?
[ $rc -eq 0 ] && ! grep -q restart "$T_DIR/r0.txt" && [ ! -s "$T_DIR/r0.err" ]
ok $? "back to the running settings: exit 0, no warning"
"$CTL" --json reload >"$T_DIR/r0.json"
[ $? -eq 0 ] && jget '.restart_needed == []' <"$T_DIR/r0.json"
ok $? "reload --json: restart_needed is empty"

# --- the end ----------------------------------------------------------------------
exec {LOADP[1]}>&-
wait "$LOAD_PID"
ok $? "the load client exits cleanly"
diag "$T_DIR/load.err"
wait_for 5 sh -c "'$CTL' --json clients | jq -e '(.clients | length) == 1'"
ok $? "its 61 sessions are gone from the list"
stop_daemon "$PID"
ok $? "the daemon stops cleanly"
"$CTL" status 2>/dev/null
[ $? -eq 2 ]
ok $? "after it stopped: exit 2"

# --- peers up: two daemons on loopback (tcp), plus a peer that never answers ------
ports=($(free_ports 2))
P1=${ports[0]}
P2=${ports[1]}
printf 'shared-secret-key-for-ctl-tests-01\n' >"$T_DIR/n.key"
chmod 600 "$T_DIR/n.key"
pconf() { # pconf NODE PORT PEER PEERPORT [extra lines]
	{
		printf '[daemon]\nnode_name = %s\nsocket = %s\ntransport = tcp\n' "$1" "$T_DIR/$1.sock"
		printf 'listen = 127.0.0.1:%s\nlog_level = debug\n' "$2"
		printf '[peer "%s"]\naddress = 127.0.0.1:%s\nkey_file = %s\n' "$3" "$4" "$T_DIR/n.key"
		printf '%s\n' "${@:5}"
	} >"$T_DIR/$1.conf"
}
pconf n1 "$P1" n2 "$P2" '[peer "ghost"]' 'address = 127.0.0.1:9' "key_file = $T_DIR/n.key"
pconf n2 "$P2" n1 "$P1"
"$HELPERS/notify-listen" "$T_DIR/notify1.sock" >"$T_DIR/notify1.log" &
T_PIDS+=($!)
wait_for 5 test -S "$T_DIR/notify1.sock"
NOTIFY_SOCKET="$T_DIR/notify1.sock" start_daemon "$T_DIR/n1.log" -c "$T_DIR/n1.conf"
N1=$T_LAST_PID
start_daemon "$T_DIR/n2.log" -c "$T_DIR/n2.conf"
N2=$T_LAST_PID
export RDMAPROXY_SOCKET="$T_DIR/n1.sock"
peer_is() { "$CTL" --json peers | jq -e ".peers[] | select(.name == \"$1\") | $2" >/dev/null; }
wait_for 20 peer_is n2 '.state == "up"'
ok $? "n1 sees n2 up"
wait_for 10 peer_is ghost '.last_error != null'
ok $? "n1 has a failure reason for ghost"
"$CTL" peers >"$T_DIR/peers2.txt"
[ $? -eq 0 ] && fits100 "$T_DIR/peers2.txt" && grep -Eq "^n2 +127\.0\.0\.1:$P2 +tcp +up " "$T_DIR/peers2.txt" &&
	grep -Eq '^ghost +127\.0\.0\.1:9 +tcp +[a-z]+ ' "$T_DIR/peers2.txt" &&
	! grep -Eq '^ghost .* up ' "$T_DIR/peers2.txt" && grep -q '^ghost: last failure: ' "$T_DIR/peers2.txt"
ok $? "peers: one up, one down with its last failure, in 100 columns"
diag "$T_DIR/peers2.txt"
"$CTL" --json peers >"$T_DIR/peers2.json"
json_ok <"$T_DIR/peers2.json" && jget '(.peers | length) == 2 and
	(.peers[] | select(.name == "n2") | .state == "up" and .since > 0 and
	 (.direction == "outbound" or .direction == "inbound")) and
	(.peers[] | select(.name == "ghost") | .state != "up" and (.last_error | length) > 0)' \
	<"$T_DIR/peers2.json"
ok $? "peers --json: state, since, direction, last_error"
"$CTL" status | grep -q '^peers  *1/2 up$' && "$CTL" --json status | jget '.totals.peers_up == 1'
ok $? "status: 1/2 peers up"
wait_for 5 grep -q 'STATUS=tcp transport, 1/2 peers up, ' "$T_DIR/notify1.log"
ok $? "STATUS= says 1/2 peers up"
"$CTL" ping -c 3 -i 0 n2 >"$T_DIR/ping2.txt"
[ $? -eq 0 ] && grep -q '^3 sent, 3 received, 0% loss' "$T_DIR/ping2.txt" &&
	grep -q 'reply from n2: seq=1 time=.* ms (peer channel' "$T_DIR/ping2.txt"
ok $? "ping n2 through the peer channel"
diag "$T_DIR/ping2.txt"
"$CTL" --json ping -c 2 -i 0 n2 | jget '.received == 2 and .replies[0].error == null'
ok $? "ping --json n2"
# rp-demo writes 4 MiB to n2, reads 4 MiB back and sends 39 bytes: payload
# direction, not who started the op, decides bytes_out and bytes_in.
"$top_builddir/examples/rp-demo" "$T_DIR/n1.sock" n2 "$T_DIR/n2.sock" >"$T_DIR/demo.out" 2>&1 &&
	"$CTL" --json peers | jget '.peers[] | select(.name == "n2") |
		.bytes_out == 4194304 + 39 and .bytes_in == 4194304'
ok $? "peers: a remote write and send count as bytes out, a remote read as bytes in"
RDMAPROXY_SOCKET="$T_DIR/n2.sock" "$CTL" --json peers | jget '.peers[] | select(.name == "n1") |
	.bytes_in == 4194304 + 39 and .bytes_out == 4194304'
ok $? "and the other way round on the serving daemon"
"$CTL" ping -c 1 ghost >/dev/null 2>&1
[ $? -eq 1 ]
ok $? "ping ghost (down): exit 1"
"$CTL" metrics >"$T_DIR/metrics2.txt" && grep -q '^rdmaproxy_peer_up{peer="n2"} 1$' "$T_DIR/metrics2.txt" &&
	grep -q '^rdmaproxy_peer_up{peer="ghost"} 0$' "$T_DIR/metrics2.txt" &&
	grep -q '^rdmaproxy_peers_up 1$' "$T_DIR/metrics2.txt"
ok $? "metrics: peer_up 1 and 0"
if command -v promtool >/dev/null 2>&1; then
	promtool check metrics <"$T_DIR/metrics2.txt" >"$T_DIR/promtool2.out" 2>&1
	ok $? "promtool accepts the metrics with peers up and down"
	diag "$T_DIR/promtool2.out"
else
	echo "ok $((T_N += 1)) # SKIP promtool is not installed"
fi
stop_daemon "$N2"
wait_for 15 peer_is n2 '.state != "up" and .last_error != null'
ok $? "n2 stopped: n1 reports it not up, with a reason"
"$CTL" ping -c 1 n2 >/dev/null 2>&1
[ $? -eq 1 ]
ok $? "ping n2 after it stopped: exit 1"
stop_daemon "$N1"
ok $? "n1 stops cleanly"
t_done
