#!/bin/bash
# The loopback RC QP module (daemon/rdma/verbs_local.c) on real Soft-RoCE.
. "$(dirname "$0")/vm-lib.sh"
vm_require
exec "$RPVM" run --timeout 600 -- "$top_builddir/tests/helpers/verbs-local-check"
