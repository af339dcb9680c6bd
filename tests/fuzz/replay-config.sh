#!/bin/sh
# Replays the config fuzz corpus through the parser; TAP on stdout.
# make check sets top_srcdir and top_builddir; fall back to the layout
# of an in-tree build when run by hand.
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
cd "$top_srcdir/tests/fuzz" || exit 99
exec "$top_builddir/tests/fuzz/replay-config" corpus/config
