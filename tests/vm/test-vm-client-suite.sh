#!/bin/bash
# The whole host client suite (tests/integration/test-client.sh) again, with
# the daemon on the verbs transport in the Soft-RoCE guest.
. "$(dirname "$0")/vm-lib.sh"
vm_require
exec "$RPVM" run --timeout 1800 --env RP_TEST_TRANSPORT=verbs -- \
	"$top_srcdir/tests/integration/test-client.sh"
