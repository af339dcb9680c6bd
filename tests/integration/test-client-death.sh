#!/bin/bash
# Daemon death seen from the client library (issue 12, point 8): a real
# daemon A, peered over tcp with B, is SIGKILLed while its client has
# operations in every state: completed but not reaped, taken by A and in
# flight (receives posted, writes sent to a stopped B), and left in the
# submission ring of a stopped A. test-client-death checks that each gets
# exactly one completion, none reported done that was not, and that
# submissions fail at once afterwards.
. "$(dirname "$0")/lib.sh"

DEATH="$top_builddir/tests/integration/test-client-death"
PIO="$top_builddir/tests/integration/test-peers-io"
CTL="$top_builddir/tools/ctl/rdmaproxyctl"

declare -A PORT PID
ports=($(free_ports 2))
PORT[A]=${ports[0]}
PORT[B]=${ports[1]}
printf 'shared-secret-key-for-tests-0001\n' >"$T_DIR/k.key"
chmod 600 "$T_DIR/k.key"
conf() { # conf NODE PEER
	cat >"$T_DIR/$1.conf" <<-CONF
	[daemon]
	node_name = $1
	socket = $T_DIR/$1.sock
	transport = tcp
	listen = 127.0.0.1:${PORT[$1]}
	log_level = debug
	[peer "$2"]
	address = 127.0.0.1:${PORT[$2]}
	key_file = $T_DIR/k.key
	CONF
}
conf A B
conf B A
for n in A B; do
	start_daemon "$T_DIR/$n.log" -c "$T_DIR/$n.conf"
	PID[$n]=$T_LAST_PID
done
wait_for 15 sh -c "grep -q 'peer B: .* -> up' '$T_DIR/A.log' && grep -q 'peer A: .* -> up' '$T_DIR/B.log'"
ok $? "daemons A and B are up and peered"

# B exports the target of A's client, until its stdin closes.
mkfifo "$T_DIR/exp.in"
RDMAPROXY_SOCKET="$T_DIR/B.sock" "$PIO" export target 1M 0 <"$T_DIR/exp.in" >"$T_DIR/exp.out" 2>&1 &
EXP=$!
T_PIDS+=("$EXP")
exec 7>"$T_DIR/exp.in"
wait_for 10 grep -q ready "$T_DIR/exp.out"
ok $? "B's client exports the target"

# The client on A, driven stage by stage through a fifo.
mkfifo "$T_DIR/death.in"
RDMAPROXY_SOCKET="$T_DIR/A.sock" "$DEATH" B target <"$T_DIR/death.in" >"$T_DIR/death.out" 2>&1 &
CL=$!
T_PIDS+=("$CL")
exec 8>"$T_DIR/death.in"
said() { wait_for "${2:-10}" grep -q "^$1" "$T_DIR/death.out"; }

said ready
ok $? "the client is set up" || diag "$T_DIR/death.out"
kill -STOP "${PID[B]}"
echo go >&8
said submitted
# 16 receives and 8 writes to the stopped B: all taken by A, none complete.
inflight() {
	RDMAPROXY_SOCKET="$T_DIR/A.sock" "$CTL" clients |
		awk -v pid="$CL" '$2 == pid { print $NF }'
}
inflight_is() { [ "$(inflight)" = "$1" ]; }
wait_for 10 inflight_is 24
ok $? "A took every operation (24 in flight: $(inflight))" ||
	RDMAPROXY_SOCKET="$T_DIR/A.sock" "$CTL" clients | diag
kill -STOP "${PID[A]}"
echo go >&8
said filled
kill -KILL "${PID[A]}"
wait "${PID[A]}" 2>/dev/null # gone, its sockets closed
echo go >&8
wait "$CL"
rc=$?
while IFS= read -r line; do
	case $line in
	PASS\ *) ok 0 "${line#PASS }" ;;
	FAIL\ *) ok 1 "${line#FAIL }" ;;
	\#*) echo "$line" ;;
	esac
done <"$T_DIR/death.out"
ok $rc "the client exits 0"

kill -CONT "${PID[B]}"
wait_for 20 grep -q 'peer A: .* lost' "$T_DIR/B.log"
ok $? "B notices that A is gone" || tail -20 "$T_DIR/B.log" | diag
exec 7>&-
wait "$EXP"
ok $? "B's client ends cleanly"
stop_daemon "${PID[B]}"
ok $? "B stops cleanly"
t_done
