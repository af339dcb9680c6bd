#!/bin/bash
# rdmaproxyd on the verbs transport, on real Soft-RoCE in a QEMU guest.
. "$(dirname "$0")/vm-lib.sh"
vm_require
exec "$RPVM" run --timeout 600 -- "$top_srcdir/tests/vm/guest-daemon.sh"
