# Faults on real Soft-RoCE (tests/vm/guest-faults.sh): transfers between two
# guests while the link loses or delays packets, is cut for 10 s, or one
# daemon is killed. Clients: tests/helpers/fault-io.
check_PROGRAMS += tests/helpers/fault-io
tests_helpers_fault_io_SOURCES = tests/helpers/fault-io.c
tests_helpers_fault_io_LDADD = libclient/librdmaproxy.la
tests_helpers_fault_io_LDFLAGS = $(AM_LDFLAGS) -no-install
EXTRA_DIST += tests/vm/guest-faults.sh tests/vm/test-vm-faults.sh
if VM_TESTS
TESTS += tests/vm/test-vm-faults.sh
endif
