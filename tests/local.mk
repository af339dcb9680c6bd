# Test suites: unit (TAP programs), integration (real daemons), vm (Soft-RoCE), fuzz.
include tests/unit/config.mk
include tests/unit/core.mk
include tests/fuzz/link.mk
include tests/integration/local.mk
include tests/integration/ctl.mk
include tests/integration/peers.mk
include tests/vm/local.mk
include tests/vm/daemon.mk
include tests/vm/peers.mk
include tests/vm/faults.mk

TESTS += tests/check-man.sh tests/check-layers.sh tests/check-format.sh tests/test-settle.sh
EXTRA_DIST += tests/check-man.sh tests/check-layers.sh tests/check-format.sh .clang-format tests/unit/tap.h tests/settle.sh \
	tests/test-settle.sh

# The verbs loopback module, tested on real rxe inside the guest (tests/vm).
check_PROGRAMS += tests/helpers/verbs-local-check
tests_helpers_verbs_local_check_SOURCES = tests/helpers/verbs-local-check.c \
	daemon/rdma/verbs_local.c daemon/rdma/verbs_local.h daemon/rdma/rdma_dev.c daemon/rdma/rdma_dev.h daemon/rdma/vx.h \
	daemon/base/util.c daemon/base/util.h
tests_helpers_verbs_local_check_LDADD = $(IBVERBS_LIBS) $(RDMACM_LIBS)
# Its own build of verbs_local.c, with vx.h's fault injection (RP_VX_FAULTS).
tests_helpers_verbs_local_check_CPPFLAGS = $(AM_CPPFLAGS) -DRP_VX_FAULTS

# An unauthenticated verbs connector: the daemon's QP must refuse its writes.
check_PROGRAMS += tests/helpers/vp-intruder
tests_helpers_vp_intruder_SOURCES = tests/helpers/vp-intruder.c
tests_helpers_vp_intruder_CPPFLAGS = $(AM_CPPFLAGS)
tests_helpers_vp_intruder_LDADD = $(IBVERBS_LIBS) $(RDMACM_LIBS)
include tests/integration/perf.mk
include tests/integration/hostile.mk
include tests/bench/local.mk

# The name table of exports and endpoints (daemon/base/nametab.c).
check_PROGRAMS += tests/unit/test-nametab
TESTS += tests/unit/test-nametab
tests_unit_test_nametab_SOURCES = tests/unit/test-nametab.c tests/unit/tap.h \
	daemon/base/nametab.c daemon/base/nametab.h

# The engine's "are the CPUs crowded?" sampler (daemon/base/cpuload.c).
check_PROGRAMS += tests/unit/test-cpuload
TESTS += tests/unit/test-cpuload
tests_unit_test_cpuload_SOURCES = tests/unit/test-cpuload.c tests/unit/tap.h \
	daemon/base/cpuload.c daemon/base/cpuload.h
