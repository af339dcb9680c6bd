# Host benchmark (tests/bench/host-bench, run by hand) and its helpers;
# included from tests/local.mk. make check runs only a smoke test of it with
# tiny parameters: nothing here asserts a timing.
noinst_PROGRAMS += tests/bench/shm-pingpong tests/bench/tcp-pingpong tests/bench/idle-clients
tests_bench_shm_pingpong_SOURCES = tests/bench/shm-pingpong.c tests/bench/bench-util.h
tests_bench_tcp_pingpong_SOURCES = tests/bench/tcp-pingpong.c tests/bench/bench-util.h
tests_bench_idle_clients_SOURCES = tests/bench/idle-clients.c
tests_bench_idle_clients_LDADD = libclient/librdmaproxy.la
# -no-install: a real binary with a build-tree rpath, no libtool wrapper script.
tests_bench_idle_clients_LDFLAGS = $(AM_LDFLAGS) -no-install
# What one RDMA WRITE costs its poster on rxe, and when its data lands (run it
# in the test guest by hand: tests/bench/README.md).
noinst_PROGRAMS += tests/bench/rxe-post-cost
tests_bench_rxe_post_cost_SOURCES = tests/bench/rxe-post-cost.c
tests_bench_rxe_post_cost_LDADD = $(IBVERBS_LIBS)
# What a switch between two processes, or two threads, costs next to a system
# call (run it by hand, on the host or in the test guest: tests/bench/README.md).
noinst_PROGRAMS += tests/bench/switch-cost
tests_bench_switch_cost_SOURCES = tests/bench/switch-cost.c tests/bench/bench-util.h
tests_bench_switch_cost_CFLAGS = $(AM_CFLAGS) -pthread
tests_bench_switch_cost_LDFLAGS = $(AM_LDFLAGS) -pthread
TESTS += tests/bench/test-host-bench.sh
EXTRA_DIST += tests/bench/README.md tests/bench/host-bench tests/bench/test-host-bench.sh
