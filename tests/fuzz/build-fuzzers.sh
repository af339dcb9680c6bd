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
	-fno-omit-frame-pointer -D_GNU_SOURCE -DSYSCONFDIR=\"/etc\" -I$src/include"
D=$src/daemon
UTIL="$D/log.c $D/util.c $D/memguard.c $D/config.c $D/stats.c $D/ctl_wire.c $src/libclient/error.c"
RDMA="$D/rdma_dev.c $D/verbs_local.c"
CORE="$D/core.c $D/rings.c $D/region.c $D/access.c $D/exports.c $D/op.c $D/endpoint.c $D/xfer.c $D/session.c"
CORE_LIBS=$(pkg-config --cflags --libs inih libsystemd libibverbs librdmacm)

build() {
	name=$1
	shift
	echo "  $CC ... -o $out/$name"
	# shellcheck disable=SC2086 # word splitting of the lists is intended
	$CC $CFLAGS "$@" -o "$out/$name"
}

build fuzz-config "$src/tests/fuzz/fuzz-config.c" "$D/config.c" $(pkg-config --cflags --libs inih)
build fuzz-peer "$src/tests/fuzz/fuzz-peer.c" "$D/peer_proto.c" "$D/peer_hs.c" \
	$(pkg-config --cflags --libs libsodium)
build fuzz-ctl "$src/tests/fuzz/fuzz-ctl.c" "$src/tests/unit/core-harness.c" $UTIL $RDMA $CORE \
	$CORE_LIBS
build fuzz-sqe "$src/tests/fuzz/fuzz-sqe.c" "$src/tests/unit/core-harness.c" $UTIL $RDMA $CORE \
	$CORE_LIBS
