#!/bin/bash
# Per-export access control (tests/integration/test-export-acl.sh) again, with
# the three daemons on the verbs transport on the Soft-RoCE guest's rxe device:
# lookups refused before an rkey is handed out, a reload that takes a
# peer's grant away withdrawing its handle over the verbs link, and a peer
# that ignores the withdrawal losing its rkey with its own MR of the export.
. "$(dirname "$0")/vm-lib.sh"
vm_require
exec "$RPVM" run --timeout 1800 --env RP_TEST_TRANSPORT=verbs --env RP_TEST_ADDR=10.99.0.1 -- \
	"$top_srcdir/tests/integration/test-export-acl.sh"
