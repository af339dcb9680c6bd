# Soft-RoCE (rdma_rxe) tests in throw-away QEMU guests; included from
# tests/local.mk. See tests/vm/README.md. Disable with --disable-vm-tests.
EXTRA_DIST += \
	tests/vm/README.md \
	tests/vm/init.sh \
	tests/vm/rp-vm \
	tests/vm/test-vm-smoke.sh

if VM_TESTS
TESTS += tests/vm/test-vm-smoke.sh
endif
