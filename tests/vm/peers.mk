# The verbs peer transport on real Soft-RoCE (tests/vm/guest-peers.sh): two
# daemons on one rxe device, and two guests. Uses tests/integration/test-peers-io.
EXTRA_DIST += tests/vm/guest-peers.sh tests/vm/test-vm-peers.sh tests/vm/test-vm-export-acl.sh
if VM_TESTS
TESTS += tests/vm/test-vm-peers.sh tests/vm/test-vm-export-acl.sh
endif
