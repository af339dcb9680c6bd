#!/bin/sh
# Builds the libFuzzer binaries of every fuzz target into OUTDIR (default
# ./fuzz-bin), with AddressSanitizer and UndefinedBehaviorSanitizer. Not part
# of "make check", which replays the corpora without libFuzzer. See
# tests/fuzz/README.md for how to run them.
#
#   tests/fuzz/build-fuzzers.sh [OUTDIR]        CC=clang-15 to pick another clang
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-fuzz-bin}
CC=${CC:-clang-14}
mkdir -p "$out"

CFLAGS="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
	-fno-omit-frame-pointer -D_GNU_SOURCE -DSYSCONFDIR=\"/etc\" -DPACKAGE_VERSION=\"fuzz\"
	-I$src/include -I$src/daemon"
D=$src/daemon
UTIL="$D/base/log.c $D/base/util.c $D/base/memguard.c $D/base/config.c $D/base/stats.c $D/base/ctl_wire.c
	$D/base/nametab.c $src/libclient/error.c"
RDMA="$D/rdma/rdma_dev.c $D/rdma/verbs_local.c"
C=$D/core
CORE="$C/core.c $C/rings.c $C/region.c $C/access.c $C/exports.c $C/op.c $C/endpoint.c $C/xfer.c $C/session.c"
CORE_LIBS=$(pkg-config --cflags --libs inih libsystemd libibverbs librdmacm)
P=$D/peer
PEERS="$P/peer_proto.c $P/peer_hs.c $P/peer_gate.c $P/peer_link.c $P/peer_data.c $P/peers.c
	$P/tcp_stream.c $D/admin_metrics.c $D/admin.c $src/tests/fuzz/peer-bench.c"
PEER_LIBS="$CORE_LIBS $(pkg-config --cflags --libs libsodium)"

build() {
	name=$1
	shift
	echo "  $CC ... -o $out/$name"
	# shellcheck disable=SC2086 # word splitting of the lists is intended
	$CC $CFLAGS "$@" -o "$out/$name"
}

build fuzz-config "$src/tests/fuzz/fuzz-config.c" "$D/base/config.c" $(pkg-config --cflags --libs inih)
build fuzz-peer "$src/tests/fuzz/fuzz-peer.c" "$D/peer/peer_proto.c" "$D/peer/peer_hs.c" \
	$(pkg-config --cflags --libs libsodium)
build fuzz-ctl "$src/tests/fuzz/fuzz-ctl.c" "$src/tests/unit/core-harness.c" $UTIL $RDMA $CORE \
	$CORE_LIBS
build fuzz-sqe "$src/tests/fuzz/fuzz-sqe.c" "$src/tests/unit/core-harness.c" $UTIL $RDMA $CORE \
	$CORE_LIBS
build fuzz-link "$src/tests/fuzz/fuzz-link.c" "$src/tests/unit/core-harness.c" $UTIL $RDMA $CORE \
	$PEERS $PEER_LIBS
build fuzz-admin "$src/tests/fuzz/fuzz-admin.c" "$src/tests/unit/core-harness.c" $UTIL $RDMA $CORE \
	$PEERS $PEER_LIBS
