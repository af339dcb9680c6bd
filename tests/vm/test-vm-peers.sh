#!/bin/bash
# rdmaproxyd peers over the verbs transport on real Soft-RoCE: two daemons on
# one rxe device, then two guests linked by virtio-net (guest-peers.sh).
. "$(dirname "$0")/vm-lib.sh"
vm_require
"$RPVM" run --timeout 1800 -- "$top_srcdir/tests/vm/guest-peers.sh" || exit
exec "$RPVM" run --guests 2 --timeout 1800 -- "$top_srcdir/tests/vm/guest-peers.sh"
