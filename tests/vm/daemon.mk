# rdmaproxyd's own verbs tests in the Soft-RoCE guest (runner: tests/vm/rp-vm).
EXTRA_DIST += tests/vm/vm-lib.sh tests/vm/guest-daemon.sh \
	tests/vm/test-vm-daemon.sh tests/vm/test-vm-verbs-local.sh \
	tests/vm/guest-client.sh tests/vm/test-vm-client.sh tests/vm/test-vm-client-suite.sh
if VM_TESTS
TESTS += tests/vm/test-vm-verbs-local.sh tests/vm/test-vm-daemon.sh \
	tests/vm/test-vm-client.sh tests/vm/test-vm-client-suite.sh
endif
