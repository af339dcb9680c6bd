# The fuzz targets on the peer bench (tests/fuzz/peer-bench.h): everything a
# peer's bytes reach past the framing (fuzz-link) and administration requests
# (fuzz-admin), replayed from their corpora (tests/fuzz/README.md says how to
# fuzz them). The bench and the peer layer, tcp stream codec and admin files
# it runs are compiled once into a convenience library, on top of the core's
# (tests/unit/core.mk). mkseeds-link wrote the corpora; it is built so that
# it keeps up with the formats in fuzz-link.h.
check_LTLIBRARIES += tests/fuzz/libpeerbench.la
tests_fuzz_libpeerbench_la_SOURCES = tests/fuzz/peer-bench.c tests/fuzz/peer-bench.h \
	tests/fuzz/fuzz-link.h daemon/peer/peer_proto.c daemon/peer/peer_hs.c \
	daemon/peer/peer_gate.c daemon/peer/peer_link.c daemon/peer/peer_data.c daemon/peer/peers.c \
	daemon/peer/tcp_stream.c daemon/admin_metrics.c daemon/admin.c
tests_fuzz_libpeerbench_la_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS) $(SYSTEMD_CFLAGS) \
	$(IBVERBS_CFLAGS) $(RDMACM_CFLAGS) $(SODIUM_CFLAGS)
RP_PEER_BENCH_LIBS = tests/fuzz/libpeerbench.la tests/unit/libcoretest.la $(RP_CORE_TEST_LIBS) \
	$(SODIUM_LIBS)

check_PROGRAMS += tests/fuzz/replay-link tests/fuzz/replay-admin tests/fuzz/mkseeds-link
TESTS += tests/fuzz/replay-link.sh tests/fuzz/replay-admin.sh
tests_fuzz_replay_link_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz-link.c
tests_fuzz_replay_link_LDADD = $(RP_PEER_BENCH_LIBS)
tests_fuzz_replay_admin_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz-admin.c
tests_fuzz_replay_admin_LDADD = $(RP_PEER_BENCH_LIBS)
tests_fuzz_mkseeds_link_SOURCES = tests/fuzz/mkseeds-link.c daemon/peer/peer_proto.c
EXTRA_DIST += tests/fuzz/replay-link.sh tests/fuzz/replay-admin.sh tests/fuzz/corpus/link \
	tests/fuzz/corpus/admin
