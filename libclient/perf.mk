# rdmaproxy-perf: the benchmark on librdmaproxy (included from libclient/local.mk).
bin_PROGRAMS += libclient/rdmaproxy-perf
libclient_rdmaproxy_perf_SOURCES = libclient/rdmaproxy-perf.c libclient/perf.h \
	libclient/perf-client.c libclient/perf-server.c libclient/perf-util.c
libclient_rdmaproxy_perf_CFLAGS = $(AM_CFLAGS) -pthread
libclient_rdmaproxy_perf_LDADD = libclient/librdmaproxy.la -lm
libclient_rdmaproxy_perf_LDFLAGS = $(AM_LDFLAGS) -pthread
