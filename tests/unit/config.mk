# Config parser tests, included from tests/local.mk.
# daemon/base/config.c is compiled into each test program itself, with per-target
# flags, so the tests need nothing else from the daemon.
check_PROGRAMS += tests/unit/test-config tests/fuzz/replay-config
TESTS += tests/unit/test-config tests/fuzz/replay-config.sh

tests_unit_test_config_SOURCES = tests/unit/test-config.c tests/unit/tap.h \
	daemon/base/config.c daemon/base/config.h
tests_unit_test_config_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS)
tests_unit_test_config_LDADD = $(INIH_LIBS)

# The fuzz target without libFuzzer: replays the corpus, one TAP line per file.
tests_fuzz_replay_config_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz-config.c \
	daemon/base/config.c daemon/base/config.h
tests_fuzz_replay_config_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS)
tests_fuzz_replay_config_LDADD = $(INIH_LIBS)

# The directory is distributed whole, so new seeds need no rule change.
# conf/rdmaproxy.conf is also dist_ data; the unit test loads it from srcdir.
EXTRA_DIST += tests/fuzz/replay-config.sh tests/fuzz/corpus/config conf/rdmaproxy.conf
