#!/bin/sh
# Replays the client control protocol fuzz corpus through the client core; TAP on stdout.
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
cd "$top_srcdir/tests/fuzz" || exit 99
exec "$top_builddir/tests/fuzz/replay-ctl" corpus/ctl
