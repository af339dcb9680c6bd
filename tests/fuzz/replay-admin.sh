#!/bin/sh
# Replays the administration request fuzz corpus through the peer bench; TAP on stdout.
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
cd "$top_srcdir/tests/fuzz" || exit 99
exec "$top_builddir/tests/fuzz/replay-admin" corpus/admin
