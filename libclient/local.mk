# librdmaproxy: hidden visibility, exports only through the version script.
lib_LTLIBRARIES += libclient/librdmaproxy.la
include_HEADERS = include/rdmaproxy.h
pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = libclient/rdmaproxy.pc
libclient_librdmaproxy_la_SOURCES = \
	libclient/conn.c libclient/conn.h \
	libclient/client.c libclient/client.h \
	libclient/ring.c libclient/ops.c libclient/error.c \
	include/rdmaproxy.h include/rp-proto.h include/rp-ring.h include/rp-fdpass.h
libclient_librdmaproxy_la_CPPFLAGS = $(AM_CPPFLAGS) -DRP_BUILDING_LIBRARY
libclient_librdmaproxy_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
# current 2, age 1 (rp_region_export_acl added): the soname stays librdmaproxy.so.1.
libclient_librdmaproxy_la_LDFLAGS = $(AM_LDFLAGS) -version-info 3:0:2 -no-undefined \
	-Wl,--version-script=$(top_srcdir)/libclient/librdmaproxy.map
EXTRA_libclient_librdmaproxy_la_DEPENDENCIES = libclient/librdmaproxy.map
EXTRA_DIST += libclient/librdmaproxy.map libclient/rdmaproxy.pc.in

# Tests of the library and the rings.
check_PROGRAMS += tests/unit/test-ring tests/integration/test-client-io
tests_unit_test_ring_SOURCES = tests/unit/test-ring.c tests/unit/tap.h include/rp-ring.h
tests_unit_test_ring_CFLAGS = $(AM_CFLAGS) -pthread
tests_unit_test_ring_LDFLAGS = $(AM_LDFLAGS) -pthread
tests_integration_test_client_io_SOURCES = tests/integration/test-client-io.c
tests_integration_test_client_io_LDADD = libclient/librdmaproxy.la
# -no-install: real binaries with a build-tree rpath, no libtool wrapper scripts.
tests_integration_test_client_io_LDFLAGS = $(AM_LDFLAGS) -no-install
# The daemon SIGKILLed under a client with operations in every state.
check_PROGRAMS += tests/integration/test-client-death
tests_integration_test_client_death_SOURCES = tests/integration/test-client-death.c
tests_integration_test_client_death_LDADD = libclient/librdmaproxy.la
tests_integration_test_client_death_LDFLAGS = $(AM_LDFLAGS) -no-install
# rp_relax() sleeping on the doorbell on a crowded host, and with the CPUs free.
check_PROGRAMS += tests/integration/test-client-relax
tests_integration_test_client_relax_SOURCES = tests/integration/test-client-relax.c
tests_integration_test_client_relax_LDADD = libclient/librdmaproxy.la
tests_integration_test_client_relax_LDFLAGS = $(AM_LDFLAGS) -no-install
# The library against a daemon that speaks at most protocol 2 (ring entries
# without their index: a daemon from before protocol 3), the daemon's
# sources built with that ceiling.
check_PROGRAMS += tests/helpers/rdmaproxyd-proto2
tests_helpers_rdmaproxyd_proto2_SOURCES = $(daemon_rdmaproxyd_SOURCES)
tests_helpers_rdmaproxyd_proto2_CPPFLAGS = $(AM_CPPFLAGS) -DRP_PROTO_VERSION_MAX=2
tests_helpers_rdmaproxyd_proto2_CFLAGS = $(daemon_rdmaproxyd_CFLAGS)
tests_helpers_rdmaproxyd_proto2_LDADD = $(daemon_rdmaproxyd_LDADD)
TESTS += tests/unit/test-ring \
	tests/integration/test-client-symbols.sh \
	tests/integration/test-client-regions.sh \
	tests/integration/test-client.sh \
	tests/integration/test-client-death.sh \
	tests/integration/test-client-relax.sh \
	tests/integration/test-client-relax-free.sh \
	tests/integration/test-client-proto2.sh
EXTRA_DIST += tests/integration/test-client-symbols.sh \
	tests/integration/test-client-regions.sh \
	tests/integration/test-client.sh \
	tests/integration/test-client-death.sh \
	tests/integration/test-client-relax.sh \
	tests/integration/test-client-relax-free.sh \
	tests/integration/test-client-proto2.sh
