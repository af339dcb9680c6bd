# rdmaproxyd's own verbs tests in the Soft-RoCE guest (runner: tests/vm/rp-vm).
EXTRA_DIST += tests/vm/vm-lib.sh tests/vm/guest-daemon.sh \
	tests/vm/test-vm-daemon.sh tests/vm/test-vm-verbs-local.sh
if VM_TESTS
TESTS += tests/vm/test-vm-verbs-local.sh tests/vm/test-vm-daemon.sh
endif
