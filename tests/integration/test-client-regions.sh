#!/bin/bash
# Region registration refusals (issue 3, point 4), spoken in the raw protocol
# by rp-probe so that the library's own checks cannot hide a daemon bug:
# every bad fd is refused with its specific error, fd-passing abuse ends the
# client, and the daemon's fd count does not move.
. "$(dirname "$0")/lib.sh"

PROBE="$HELPERS/rp-probe"
SOCK="$T_DIR/rp.sock"
CONF="$T_DIR/rp.conf"
LOG="$T_DIR/daemon.log"

write_conf "$CONF"
start_daemon "$LOG" -c "$CONF"
PID=$T_LAST_PID
wait_for 10 "$PROBE" "$SOCK" status
ok $? "daemon up"
nfds() { ls "/proc/$PID/fd" | wc -l; }
# One good registration first, so that lazily opened files do not count as a leak.
"$PROBE" "$SOCK" region good >"$T_DIR/good.out"
grep -q '^region_status=0$' "$T_DIR/good.out"
ok $? "a sealed memfd of the claimed size is accepted"
wait_for 5 grep -q 'disconnected: hang-up' "$LOG"
base=$(wait_settled 20 nfds)
fds_are() { [ "$(nfds)" -eq "$1" ]; }

refused() { # refused KIND EXPECTED-ERROR-TEXT
	"$PROBE" "$SOCK" region "$1" >"$T_DIR/$1.out" 2>&1
	grep -q "^region_error=$2" "$T_DIR/$1.out" && ! grep -q '^region_status=0$' "$T_DIR/$1.out"
	ok $? "$1 refused: $(sed -n 's/^region_error=//p' "$T_DIR/$1.out")"
}
refused unsealed "region refused: memfd not sealed"
refused pipe "region refused: not a regular file"
refused socket "region refused: not a regular file"
refused devnull "region refused: not a regular file"
refused disk "region refused: not shared memory"
refused opath "region refused: O_PATH or not opened read-write"
refused rdonly "region refused: O_PATH or not opened read-write"
refused size "region refused: file size differs"
refused wseal "region refused: memfd not sealed"

"$PROBE" "$SOCK" region twofds
ok $? "two fds on one registration disconnect the client"
"$PROBE" "$SOCK" region nofd
ok $? "a registration without its fd disconnects the client"
"$PROBE" "$SOCK" fd
ok $? "an fd on another message type disconnects the client"
for i in $(seq 20); do
	for k in unsealed pipe socket devnull disk opath size twofds; do
		"$PROBE" "$SOCK" region $k >/dev/null 2>&1
	done
done
wait_steady 20 fds_are "$base"
ok $? "the daemon's fd count is unchanged after 180 refusals ($base -> $(nfds))"
"$PROBE" "$SOCK" status >/dev/null
ok $? "the daemon still serves"
kill -0 "$PID"
ok $? "the daemon is alive"
stop_daemon "$PID"
ok $? "clean exit"
t_done
