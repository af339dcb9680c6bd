# The client core (issue 10): unit tests and fuzz-corpus replays. The core and
# the utility layer under it are compiled once, with the test bench (fake glue
# and peer hooks, tests/unit/core-harness.c), into a convenience library every
# program here links. The verbs loopback files are the real ones: with
# core->vlocal NULL, as here, they are linked but never called.
RP_CORE_TEST_LIBS = $(INIH_LIBS) $(SYSTEMD_LIBS) $(IBVERBS_LIBS) $(RDMACM_LIBS)

check_LTLIBRARIES += tests/unit/libcoretest.la
tests_unit_libcoretest_la_SOURCES = tests/unit/core-harness.c tests/unit/core-harness.h \
	daemon/log.c daemon/log.h daemon/util.c daemon/util.h \
	daemon/memguard.c daemon/memguard.h daemon/config.c daemon/config.h \
	daemon/stats.c daemon/stats.h daemon/ctl_wire.c daemon/ctl_wire.h libclient/error.c \
	$(RP_DAEMON_RDMA) $(RP_DAEMON_CORE)
tests_unit_libcoretest_la_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS) $(SYSTEMD_CFLAGS) \
	$(IBVERBS_CFLAGS) $(RDMACM_CFLAGS)

RP_CORE_TESTS = tests/unit/test-session tests/unit/test-region tests/unit/test-exports \
	tests/unit/test-xfer
check_PROGRAMS += $(RP_CORE_TESTS)
TESTS += $(RP_CORE_TESTS)

tests_unit_test_session_SOURCES = tests/unit/test-session.c tests/unit/tap.h
tests_unit_test_session_LDADD = tests/unit/libcoretest.la $(RP_CORE_TEST_LIBS)
tests_unit_test_region_SOURCES = tests/unit/test-region.c tests/unit/tap.h
tests_unit_test_region_LDADD = tests/unit/libcoretest.la $(RP_CORE_TEST_LIBS)
tests_unit_test_exports_SOURCES = tests/unit/test-exports.c tests/unit/tap.h
tests_unit_test_exports_LDADD = tests/unit/libcoretest.la $(RP_CORE_TEST_LIBS)
tests_unit_test_xfer_SOURCES = tests/unit/test-xfer.c tests/unit/tap.h
tests_unit_test_xfer_LDADD = tests/unit/libcoretest.la $(RP_CORE_TEST_LIBS)
