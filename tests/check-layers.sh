#!/bin/bash
# The daemon's architecture, checked. Every file of daemon/ sits in one layer;
# a file may include headers of its own layer and of the layers below, never
# of a layer above, and the #include "..." graph has no cycle. Only the loop
# glue sees libuv, and only daemon/rdma/vx.h calls the rdma-core functions that
# can fail (it turns their three error conventions into negative errno).
#
# The layers, from the bottom, and the directory each one lives in. A new file
# must be added here: this table is the architecture in one place.
#   0 util     daemon/base/   utilities and wire formats, no state of the daemon's
#              daemon/peer/   (peer_proto, peer_hs: the peer wire and handshake)
#   1 rdma     daemon/rdma/   RDMA resources (libibverbs, librdmacm)
#   2 core     daemon/core/   the client core: sessions, regions, exports,
#                             operations; loop-free and socket-free (tests/unit
#                             drives it alone)
#   3 peers    daemon/peer/   the peer layer and the transport interface it defines
#   4 xport    daemon/peer/   the transports, loop-free (the loop comes through evloop.h)
#   5 glue     daemon/        loop glue (libuv), client sockets, admin, the manager, main
# Headers are included by their path under daemon/ ("core/core.h"); the glue's
# own headers, at the top of daemon/, by their name.
set -u
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
D=$srcdir/daemon
CC=${CC:-cc}

# A file's name without directory and suffix: "core/core.h" -> core.
base() {
	local b=${1##*/}
	echo "${b%.*}"
}

layer_of() {
	case "$1" in
	log | util | memguard | config | stats | ctl_wire | cpuload | nametab | peer_proto | peer_hs | evloop) echo 0 ;;
	vx | rdma_dev | verbs_local) echo 1 ;;
	core | rings | region | access | exports | op | endpoint | xfer | session) echo 2 ;;
	transport | peer | peer_int | peer_gate | peer_link | peer_data | peers) echo 3 ;;
	tcp_stream | verbs_peer_io | verbs_peer) echo 4 ;;
	evloop_uv | tcp_uv | manager_uv | engine | clients | listener | notify | admin_metrics | admin | \
		manager | main) echo 5 ;;
	*) echo -1 ;;
	esac
}
NAMES=(util rdma core peers xport glue)

# The directory a file of this layer lives in ("" = daemon/ itself).
dir_ok() { # FILE LAYER
	local d=${1%/*}
	[ "$d" = "$1" ] && d=""
	case "$2:$d" in
	0:base | 0:peer | 1:rdma | 2:core | 3:peer | 4:peer | 5:) return 0 ;;
	*) return 1 ;;
	esac
}

# rdma-core calls that cannot fail (strings, void acks and frees): allowed anywhere below.
VERBS_OK='ibv_get_device_name|ibv_wc_status_str|ibv_event_type_str|ibv_port_state_str|rdma_event_str|rdma_get_peer_addr|ibv_ack_cq_events|ibv_ack_async_event|rdma_free_devices|rdma_destroy_event_channel'

n=0
fail=0
ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		fail=1
	fi
	return "$1"
}

# The code without comments or string literals, so that prose never counts.
code_of() {
	"$CC" -fpreprocessed -dD -E -P "$1" 2>/dev/null | sed 's/"\([^"\\]\|\\.\)*"/""/g'
}

files=$(cd "$D" && find . -name '*.[ch]' | sed 's|^\./||' | LC_ALL=C sort)

# 1. Every file has a layer.
bad=""
for f in $files; do
	[ "$(layer_of "$(base "$f")")" -ge 0 ] || bad="$bad $f"
done
[ -z "$bad" ]
ok $? "every daemon file sits in a layer of this script's table" ||
	echo "# not in the table:$bad (add it to layer_of in tests/check-layers.sh)"

# 1b. ... and in its layer's directory.
bad=""
for f in $files; do
	l=$(layer_of "$(base "$f")")
	[ "$l" -lt 0 ] || dir_ok "$f" "$l" || bad="$bad\n#   $f (${NAMES[$l]})"
done
[ -z "$bad" ]
ok $? "every daemon file lives in its layer's directory" || printf '%b\n' "${bad#\\n}"

# 2. No include runs up a layer.
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
up=""
unres=""
for f in $files; do
	lf=$(layer_of "$(base "$f")")
	for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$D/$f"); do
		if [ ! -f "$D/$inc" ]; then
			# include/ headers: the shared wire formats, layer 0
			[ -f "$srcdir/include/$inc" ] || unres="$unres\n#   $f: \"$inc\""
			continue
		fi
		echo "$f $inc" >>"$edges"
		li=$(layer_of "$(base "$inc")")
		[ "$li" -le "$lf" ] ||
			up="$up\n#   $f (${NAMES[$lf]}) includes $inc (${NAMES[$li]})"
	done
done
[ -z "$up" ]
ok $? "no file includes a header of a layer above its own" || printf '%b\n' "${up#\\n}"
[ -z "$unres" ]
ok $? "every #include \"...\" names a file by its path under daemon/ or include/" ||
	printf '%b\n' "${unres#\\n}"

# 3. The include graph has no cycle (tsort reports one on stderr).
cyc=$(tsort "$edges" 2>&1 >/dev/null)
[ -z "$cyc" ]
ok $? "the #include graph of daemon/ has no cycle" || echo "$cyc" | sed 's/^/# /'

# 4. Only the loop glue sees libuv.
uv=""
for f in $files; do
	[ "$(layer_of "$(base "$f")")" -eq 5 ] && continue
	if grep -q '#[[:space:]]*include[[:space:]]*<uv\.h>' "$D/$f" ||
		code_of "$D/$f" | grep -qE '\buv_[a-z_0-9]+[[:space:]]*\('; then
		uv="$uv $f"
	fi
done
[ -z "$uv" ]
ok $? "only the loop glue includes <uv.h> or calls uv_*" || echo "# below the glue:$uv"

# 5. One verbs error boundary.
vb=""
for f in $files; do
	[ "$f" = rdma/vx.h ] && continue
	hits=$(code_of "$D/$f" | grep -oE '\b(ibv|rdma)_[a-z_0-9]+[[:space:]]*\(' |
		sed 's/[[:space:]]*($//' | grep -vxE "$VERBS_OK" | sort -u | tr '\n' ' ')
	[ -n "$hits" ] && vb="$vb\n#   $f: $hits"
done
[ -z "$vb" ]
ok $? "only daemon/rdma/vx.h calls rdma-core functions that can fail" || printf '%b\n' "${vb#\\n}"

echo "1..$n"
exit $fail
