#!/bin/bash
# Local transfers through rdmaproxyd on the verbs transport (loopback RC QP),
# on real Soft-RoCE: device counters and MR table (guest-client.sh).
. "$(dirname "$0")/vm-lib.sh"
vm_require
exec "$RPVM" run --timeout 1800 -- "$top_srcdir/tests/vm/guest-client.sh"
