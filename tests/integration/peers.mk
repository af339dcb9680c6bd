# Peers (issue 4): protocol codec and handshake unit test, the peer parser
# fuzz target replayed over its corpus, and multi-daemon tcp integration tests.
check_PROGRAMS += tests/unit/test-peer-proto tests/fuzz/replay-peer
TESTS += tests/unit/test-peer-proto tests/fuzz/replay-peer.sh

tests_unit_test_peer_proto_SOURCES = tests/unit/test-peer-proto.c tests/unit/tap.h \
	daemon/peer/peer_proto.c daemon/peer/peer_proto.h daemon/peer/peer_hs.c daemon/peer/peer_hs.h
tests_unit_test_peer_proto_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS)
tests_unit_test_peer_proto_LDADD = $(SODIUM_LIBS)

tests_fuzz_replay_peer_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz-peer.c \
	daemon/peer/peer_proto.c daemon/peer/peer_proto.h daemon/peer/peer_hs.c daemon/peer/peer_hs.h
tests_fuzz_replay_peer_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS)
tests_fuzz_replay_peer_LDADD = $(SODIUM_LIBS)

EXTRA_DIST += tests/fuzz/replay-peer.sh tests/fuzz/corpus/peer

check_PROGRAMS += tests/integration/test-peers-io
tests_integration_test_peers_io_SOURCES = tests/integration/test-peers-io.c
tests_integration_test_peers_io_LDADD = libclient/librdmaproxy.la
tests_integration_test_peers_io_LDFLAGS = $(AM_LDFLAGS) -no-install
TESTS += tests/integration/test-peers.sh
EXTRA_DIST += tests/integration/test-peers.sh

# A raw peer that misbehaves (unauthenticated HELLOs; a flood of READs it never
# reads the replies of), built on the daemon's own codec and handshake.
check_PROGRAMS += tests/integration/test-peers-raw
tests_integration_test_peers_raw_SOURCES = tests/integration/test-peers-raw.c \
	daemon/peer/peer_proto.c daemon/peer/peer_proto.h daemon/peer/peer_hs.c daemon/peer/peer_hs.h
tests_integration_test_peers_raw_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS)
tests_integration_test_peers_raw_LDADD = $(SODIUM_LIBS)

# Strangers on the peer port (issue 12): the admission rule and the log rate
# limiter as unit tests, then idle floods, wrong-key handshakes and a full fd
# table against a real daemon while local clients keep working.
check_PROGRAMS += tests/unit/test-peer-gate tests/unit/test-log
TESTS += tests/unit/test-peer-gate tests/unit/test-log
tests_unit_test_peer_gate_SOURCES = tests/unit/test-peer-gate.c tests/unit/tap.h \
	daemon/peer/peer_gate.c daemon/peer/peer_gate.h
tests_unit_test_log_SOURCES = tests/unit/test-log.c tests/unit/tap.h daemon/base/log.c daemon/base/log.h
tests_unit_test_log_CFLAGS = $(AM_CFLAGS) $(SYSTEMD_CFLAGS)
tests_unit_test_log_LDADD = $(SYSTEMD_LIBS)
TESTS += tests/integration/test-peer-flood.sh
EXTRA_DIST += tests/integration/test-peer-flood.sh

# Per-export access control (issue 12): a second local user and a second peer.
# A peer that ignores withdrawals (the daemon's sources built so): a reload
# that takes its grant away must still take its access away.
check_PROGRAMS += tests/helpers/rdmaproxyd-stubborn
tests_helpers_rdmaproxyd_stubborn_SOURCES = $(daemon_rdmaproxyd_SOURCES)
tests_helpers_rdmaproxyd_stubborn_CPPFLAGS = $(AM_CPPFLAGS) -DRP_TEST_IGNORE_REVOKE
tests_helpers_rdmaproxyd_stubborn_CFLAGS = $(daemon_rdmaproxyd_CFLAGS)
tests_helpers_rdmaproxyd_stubborn_LDADD = $(daemon_rdmaproxyd_LDADD)
TESTS += tests/integration/test-export-acl.sh
EXTRA_DIST += tests/integration/test-export-acl.sh
