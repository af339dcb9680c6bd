# The client core (issue 10): unit tests and fuzz-corpus replays. The core and
# the utility layer under it are compiled once, with the test bench (fake glue
# and peer hooks, tests/unit/core-harness.c), into a convenience library every
# program here links. The verbs loopback files are the real ones: with
# core->vlocal NULL, as here, they are linked but never called.
RP_CORE_TEST_LIBS = $(INIH_LIBS) $(SYSTEMD_LIBS) $(IBVERBS_LIBS) $(RDMACM_LIBS)

check_LTLIBRARIES += tests/unit/libcoretest.la
tests_unit_libcoretest_la_SOURCES = tests/unit/core-harness.c tests/unit/core-harness.h \
	daemon/base/log.c daemon/base/log.h daemon/base/util.c daemon/base/util.h \
	daemon/base/memguard.c daemon/base/memguard.h daemon/base/config.c daemon/base/config.h \
	daemon/base/stats.c daemon/base/stats.h daemon/base/ctl_wire.c daemon/base/ctl_wire.h \
	daemon/base/nametab.c daemon/base/nametab.h libclient/error.c \
	$(RP_DAEMON_RDMA) $(RP_DAEMON_CORE)
tests_unit_libcoretest_la_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS) $(SYSTEMD_CFLAGS) \
	$(IBVERBS_CFLAGS) $(RDMACM_CFLAGS)

RP_CORE_TESTS = tests/unit/test-session tests/unit/test-region tests/unit/test-exports \
	tests/unit/test-xfer tests/unit/test-access
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
tests_unit_test_access_SOURCES = tests/unit/test-access.c tests/unit/tap.h
tests_unit_test_access_LDADD = tests/unit/libcoretest.la $(RP_CORE_TEST_LIBS)

# The fuzz targets of the core without libFuzzer: their corpora, replayed
# (tests/fuzz/README.md says how to fuzz them). mkseeds-core wrote the
# corpora; it is built so that it keeps up with the formats in fuzz-core.h.
check_PROGRAMS += tests/fuzz/replay-ctl tests/fuzz/replay-sqe tests/fuzz/mkseeds-core
TESTS += tests/fuzz/replay-ctl.sh tests/fuzz/replay-sqe.sh
tests_fuzz_replay_ctl_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz-ctl.c tests/fuzz/fuzz-core.h
tests_fuzz_replay_ctl_LDADD = tests/unit/libcoretest.la $(RP_CORE_TEST_LIBS)
tests_fuzz_replay_sqe_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz-sqe.c tests/fuzz/fuzz-core.h
tests_fuzz_replay_sqe_LDADD = tests/unit/libcoretest.la $(RP_CORE_TEST_LIBS)
tests_fuzz_mkseeds_core_SOURCES = tests/fuzz/mkseeds-core.c tests/fuzz/fuzz-core.h
EXTRA_DIST += tests/fuzz/replay-ctl.sh tests/fuzz/replay-sqe.sh tests/fuzz/corpus/ctl \
	tests/fuzz/corpus/sqe tests/fuzz/README.md tests/fuzz/build-fuzzers.sh
