# rdmaproxy-perf: the benchmark on librdmaproxy.
bin_PROGRAMS += tools/perf/rdmaproxy-perf
tools_perf_rdmaproxy_perf_SOURCES = tools/perf/rdmaproxy-perf.c tools/perf/perf.h \
	tools/perf/perf-client.c tools/perf/perf-server.c tools/perf/perf-util.c
tools_perf_rdmaproxy_perf_CFLAGS = $(AM_CFLAGS) -pthread
tools_perf_rdmaproxy_perf_LDADD = libclient/librdmaproxy.la -lm
tools_perf_rdmaproxy_perf_LDFLAGS = $(AM_LDFLAGS) -pthread
