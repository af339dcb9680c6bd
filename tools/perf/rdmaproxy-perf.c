/* SPDX-License-Identifier: MIT */
/*
 * rdmaproxy-perf: bandwidth, latency and message rate of rdmaproxyd for
 * writes, reads and sends, modelled on perftest. This file holds the options,
 * the process layout (self-contained, --server, --client, -c workers) and the
 * output; perf-client.c measures, perf-server.c is the other side.
 */
#include "perf.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define MAX_CLIENTS 64

static const char usage_text[] =
	"Usage: rdmaproxy-perf [OPTIONS] [TEST...]\n"
	"Measure rdmaproxyd: bandwidth, message rate and latency of writes, reads and\n"
	"sends through librdmaproxy, in the manner of perftest.\n"
	"\n"
	"Tests (default write_bw; several may be given; \"all\" runs the first six):\n"
	"  write_bw, read_bw, send_bw   keep -q ops in flight: bandwidth and message rate\n"
	"                               (write, read, send are short for these)\n"
	"  write_lat  ib_write_lat method: both sides write into the other's exported\n"
	"             buffer and spin on its last byte; reports half the round trip\n"
	"  send_lat   message ping-pong between two endpoints; half the round trip\n"
	"  read_lat   one read outstanding, submit to completion: the full round trip\n"
	"  write_sync one write outstanding, submit to completion: the full round trip\n"
	"             (what an application that waits for each write pays)\n"
	"\n"
	"By default the tool forks the other side itself (exporter for write/read,\n"
	"bound endpoint with posted receives for send) as a second client of the same\n"
	"daemon, so one command gives a result.\n"
	"\n"
	"Options:\n"
	"  -s, --size=SIZE       message size in bytes (suffix K, M, G); default 65536\n"
	"                        for bandwidth tests and 2 for latency tests\n"
	"  -a, --all             sweep sizes 2 B .. 8 MiB in powers of two\n"
	"  -n, --iters=N         measured ops per size (default 1000; without -n, at most\n"
	"                        1 GiB (bandwidth) or 256 MiB (latency) per size, min 16)\n"
	"  -D, --duration=SEC    measure for SEC seconds per size instead of -n\n"
	"  -w, --warmup=N        ops run and discarded before measuring (default\n"
	"                        max(depth, min(100, N/10)); 100 with -D)\n"
	"  -q, --depth=N         bandwidth tests: ops kept in flight (default 32, max 256)\n"
	"  -c, --clients=N       N client processes, each with its own connection and\n"
	"                        peer side; they start each measurement together and\n"
	"                        results are summed (bandwidth) or merged (latency)\n"
	"      --stagger=MS      with -c: client k connects k*MS ms after the first\n"
	"                        (default 0: all at once, as a real burst of workers)\n"
	"  -P, --peer=NAME       the node whose export/endpoint is used (default: this\n"
	"                        node); the other side must run there (--server)\n"
	"  -S, --socket=PATH     daemon socket (default $RDMAPROXY_SOCKET, then the\n"
	"                        system socket)\n"
	"  -e, --events          sleep in rp_wait() when no completion is ready\n"
	"                        (default: spin on rp_poll(), as perftest spins)\n"
	"      --verify          check the data: checksums of what landed (write, read)\n"
	"                        or of every message received (send)\n"
	"      --json            one JSON document on stdout instead of the table\n"
	"      --quiet           no progress on stderr (progress is shown only on a tty)\n"
	"      --server          run only the other side: accept --client connections\n"
	"                        on TCP --port and serve each from its own process\n"
	"      --client=HOST     measure against a --server on HOST (control only; data\n"
	"                        goes through the daemons)\n"
	"  -p, --port=PORT       control port for --server/--client (default 18599)\n"
	"  -h, --help            this text\n"
	"  -V, --version         print the version\n"
	"\n"
	"Units: MiB/s = 2^20 bytes/s (perftest's MB/sec), Gb/s = 10^9 bit/s, Mops/s =\n"
	"10^6 completed ops/s. Latency in microseconds: min, median, p99, max, mean.\n"
	"Every op must get exactly one completion; anything else aborts the run.\n"
	"Exit status: 0 success, 1 an op failed, data did not verify or the run\n"
	"broke, 2 usage error.\n";

static void usage(FILE *f)
{
	fputs(usage_text, f);
}

/* ---- options ---------------------------------------------------------- */

static int parse_size(const char *s, size_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		v <<= 30, end++;
	if (*end || v == 0 || v > (1ull << 31))
		return -EINVAL;
	*ret = (size_t)v;
	return 0;
}

static int parse_long(const char *s, long min, long max, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

static const struct {
	const char *name, *alias;
	enum perf_op op;
	enum perf_metric metric;
} test_table[] = {
	{ "write_bw", "write", PERF_WRITE, PERF_BW },  { "read_bw", "read", PERF_READ, PERF_BW },
	{ "send_bw", "send", PERF_SEND, PERF_BW },     { "write_lat", NULL, PERF_WRITE, PERF_LAT },
	{ "read_lat", NULL, PERF_READ, PERF_LAT },     { "send_lat", NULL, PERF_SEND, PERF_LAT },
	{ "write_sync", NULL, PERF_WRITE, PERF_SYNC },
};
#define N_TESTS (int)(sizeof(test_table) / sizeof(test_table[0]))
#define N_ALL 6 /* "all": the perftest-like six; write_sync only by name */

static int add_one_test(struct perf_opts *o, int i)
{
	if (o->ntests == PERF_MAX_TESTS)
		return -EINVAL;
	o->tests[o->ntests].op = test_table[i].op;
	o->tests[o->ntests].metric = test_table[i].metric;
	o->ntests++;
	return 0;
}

static int add_test(struct perf_opts *o, const char *name)
{
	int i;

	if (!strcmp(name, "all")) {
		for (i = 0; i < N_ALL; i++)
			if (add_one_test(o, i) < 0)
				return -EINVAL;
		return 0;
	}
	for (i = 0; i < N_TESTS; i++)
		if (!strcmp(name, test_table[i].name) ||
		    (test_table[i].alias && !strcmp(name, test_table[i].alias)))
			return add_one_test(o, i);
	return -EINVAL;
}

enum { OPT_VERIFY = 256, OPT_JSON, OPT_QUIET, OPT_SERVER, OPT_CLIENT, OPT_STAGGER };

static const struct option long_opts[] = {
	{ "size", required_argument, NULL, 's' },
	{ "all", no_argument, NULL, 'a' },
	{ "iters", required_argument, NULL, 'n' },
	{ "duration", required_argument, NULL, 'D' },
	{ "warmup", required_argument, NULL, 'w' },
	{ "depth", required_argument, NULL, 'q' },
	{ "clients", required_argument, NULL, 'c' },
	{ "peer", required_argument, NULL, 'P' },
	{ "socket", required_argument, NULL, 'S' },
	{ "events", no_argument, NULL, 'e' },
	{ "verify", no_argument, NULL, OPT_VERIFY },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "server", no_argument, NULL, OPT_SERVER },
	{ "client", required_argument, NULL, OPT_CLIENT },
	{ "stagger", required_argument, NULL, OPT_STAGGER },
	{ "port", required_argument, NULL, 'p' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static int parse_opt(struct perf_opts *o, int ch, const char *arg)
{
	long v;
	size_t sz;
	char *end;

	switch (ch) {
	case 's':
		if (parse_size(arg, &sz) < 0 || o->nsizes)
			return -EINVAL;
		o->sizes[o->nsizes++] = sz;
		return 0;
	case 'a':
		for (o->nsizes = 0, sz = 2; sz <= (8u << 20); sz *= 2)
			o->sizes[o->nsizes++] = sz;
		return 0;
	case 'n':
		o->iters_given = true;
		return parse_long(arg, 1, 1l << 36, &o->iters);
	case 'D':
		o->duration = strtod(arg, &end);
		return *end || !(o->duration > 0 && o->duration < 1e6) ? -EINVAL : 0;
	case 'w':
		return parse_long(arg, 0, 1l << 30, &o->warmup);
	case 'q':
		if (parse_long(arg, 1, 256, &v) < 0)
			return -EINVAL;
		o->depth = (int)v;
		return 0;
	case 'c':
		if (parse_long(arg, 1, MAX_CLIENTS, &v) < 0)
			return -EINVAL;
		o->clients = (int)v;
		return 0;
	case OPT_STAGGER:
		if (parse_long(arg, 0, 10000, &v) < 0)
			return -EINVAL;
		o->stagger_ms = (int)v;
		return 0;
	case 'p':
		if (parse_long(arg, 1, 65535, &v) < 0)
			return -EINVAL;
		o->port = (int)v;
		return 0;
	case 'P':
		o->peer = arg;
		return 0;
	case 'S':
		o->socket = arg;
		return 0;
	case 'e':
		o->events = true;
		return 0;
	case OPT_VERIFY:
		o->verify = true;
		return 0;
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_QUIET:
		o->quiet = true;
		return 0;
	case OPT_SERVER:
		o->role = 1;
		return 0;
	case OPT_CLIENT:
		o->role = 2;
		o->host = arg;
		return 0;
	default:
		return -EINVAL;
	}
}

/* Returns 0 to run, 1 to exit 0 (help, version), -EINVAL for a usage error. */
static int parse_args(struct perf_opts *o, int argc, char **argv)
{
	int ch;

	*o = (struct perf_opts){
		.iters = 1000, .warmup = -1, .depth = 32, .clients = 1, .port = PERF_DEFAULT_PORT
	};
	while ((ch = getopt_long(argc, argv, "s:an:D:w:q:c:P:S:ep:hV", long_opts, NULL)) != -1) {
		if (ch == 'h') {
			usage(stdout);
			return 1;
		}
		if (ch == 'V') {
			printf("rdmaproxy-perf %s\n", PACKAGE_VERSION);
			return 1;
		}
		if (parse_opt(o, ch, optarg) < 0) {
			if (ch != '?')
				fprintf(stderr, "rdmaproxy-perf: bad value for -%c: %s\n",
					ch < 256 ? ch : '-', optarg ? optarg : "");
			return -EINVAL;
		}
	}
	for (; optind < argc; optind++)
		if (add_test(o, argv[optind]) < 0) {
			fprintf(stderr, "rdmaproxy-perf: unknown test '%s'\n", argv[optind]);
			return -EINVAL;
		}
	if (!o->ntests)
		add_test(o, "write_bw");
	if (o->duration)
		o->iters = 0;
	o->progress = !o->quiet && isatty(2);
	return 0;
}

static size_t size_of(const struct perf_opts *o, int test, int k)
{
	if (o->nsizes)
		return o->sizes[k];
	return o->tests[test].metric == PERF_BW ? 65536 : 2;
}

static long iters_for(const struct perf_opts *o, int test, size_t size)
{
	uint64_t cap = o->tests[test].metric == PERF_BW ? 1ull << 30 : 256ull << 20;
	long n = o->iters;

	if (o->duration || o->iters_given)
		return n;
	if ((uint64_t)n * size > cap)
		n = (long)(cap / size);
	return n < 16 ? 16 : n;
}

static long warmup_for(const struct perf_opts *o, int test, long iters)
{
	long w = iters / 10;

	if (o->warmup >= 0)
		return o->warmup;
	if (!iters)
		w = 100;
	if (w > 100)
		w = 100;
	if (o->tests[test].metric == PERF_BW && w < o->depth)
		w = o->depth;
	return w;
}

/* ---- the other side --------------------------------------------------- */

static int connect_tcp(const char *host, int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *p;
	char svc[16];
	int fd = -1, r;

	snprintf(svc, sizeof(svc), "%d", port);
	r = getaddrinfo(host, svc, &hints, &ai);
	if (r) {
		perf_set_error("%s: %s", host, gai_strerror(r));
		return -EHOSTUNREACH;
	}
	for (p = ai; p; p = p->ai_next) {
		fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);
		if (fd >= 0 && connect(fd, p->ai_addr, p->ai_addrlen) == 0)
			break;
		r = -errno;
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		perf_set_error("connect to %s port %d: %s", host, port, strerror(-r));
	return fd < 0 ? r : fd;
}

static int run_server(const struct perf_opts *o)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE,
				  .ai_family = AF_INET6 },
			*ai;
	char svc[16];
	int fd, cfd, one = 1, zero = 0;

	snprintf(svc, sizeof(svc), "%d", o->port);
	if (getaddrinfo(NULL, svc, &hints, &ai))
		return 1;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0) {
		fprintf(stderr, "rdmaproxy-perf: port %d: %s\n", o->port, strerror(errno));
		freeaddrinfo(ai);
		return 1;
	}
	freeaddrinfo(ai);
	signal(SIGCHLD, SIG_IGN); /* sessions are reaped by the kernel */
	if (!o->quiet)
		fprintf(stderr, "rdmaproxy-perf: serving on port %d\n", o->port);
	for (;;) {
		cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return 1;
		}
		if (fork() == 0) {
			close(fd);
			_exit(perf_serve(o->socket, cfd) < 0);
		}
		close(cfd);
	}
}

/* ---- one client process ----------------------------------------------- */

struct shared {
	pthread_barrier_t barrier;
};

static void barrier_sync(void *arg)
{
	pthread_barrier_wait(&((struct shared *)arg)->barrier);
}

/* The control fd: a forked local server, or a TCP --server. */
static int open_ctl(const struct perf_opts *o, pid_t *server)
{
	int sv[2];

	*server = -1;
	if (o->role == 2)
		return connect_tcp(o->host, o->port);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	*server = fork();
	if (*server < 0)
		return -errno;
	if (*server == 0) {
		close(sv[0]);
		_exit(perf_serve(o->socket, sv[1]) < 0);
	}
	close(sv[1]);
	return sv[0];
}

static const char *test_label(const struct perf_opts *o, int t)
{
	int i;

	for (i = 0; i < N_TESTS; i++)
		if (test_table[i].op == o->tests[t].op &&
		    test_table[i].metric == o->tests[t].metric)
			return test_table[i].name;
	return "?";
}

static const char *lat_method(const struct perf_test *t)
{
	return t->op == PERF_READ || t->metric == PERF_SYNC ? "full_rtt" : "half_rtt_pingpong";
}

/* Runs every (test, size); @res gets ntests * nsizes results. */
static int run_worker(const struct perf_opts *o, struct perf_result *res, struct shared *sh,
		      char *node, size_t nodelen)
{
	struct perf_client *pc = NULL;
	pid_t server;
	int ctl, t, k, r, nsz = o->nsizes ? o->nsizes : 1, st;
	size_t size;
	long n;

	ctl = open_ctl(o, &server);
	if (ctl < 0) {
		fprintf(stderr, "rdmaproxy-perf: %s\n", perf_last_error());
		return ctl;
	}
	r = perf_client_new(o, ctl, &pc);
	if (r == 0 && node)
		snprintf(node, nodelen, "%s", perf_client_node(pc));
	for (t = 0; r == 0 && t < o->ntests; t++)
		for (k = 0; r == 0 && k < nsz; k++) {
			size = size_of(o, t, k);
			n = iters_for(o, t, size);
			r = perf_client_run(pc, t, size, n, warmup_for(o, t, n), &res[t * nsz + k],
					    sh ? barrier_sync : NULL, sh);
			if (r == 0 && (res[t * nsz + k].errors || !res[t * nsz + k].verified))
				fprintf(stderr, "rdmaproxy-perf: %s %zu B: %s\n", test_label(o, t),
					size,
					res[t * nsz + k].verified ? perf_last_error()
								  : "data mismatch");
			else if (r < 0)
				fprintf(stderr, "rdmaproxy-perf: %s %zu B: %s\n", test_label(o, t),
					size, perf_last_error());
		}
	if (r < 0 && !pc)
		fprintf(stderr, "rdmaproxy-perf: %s\n", perf_last_error());
	perf_client_free(pc);
	close(ctl);
	if (server > 0)
		waitpid(server, &st, 0);
	return r;
}

/* ---- results ---------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct agg {
	uint64_t ops, errors, bytes;
	uint64_t ops_min, ops_max; /* of one client: how evenly the daemon served them */
	double secs, mibps, gbps, mops;
	double min, median, p99, max, avg;
	int verified;
	uint64_t nsamples;
	uint64_t over_1ms; /* samples over 1 ms: stalls that a p99 hides */
};

static void aggregate(struct perf_result **per, int nw, int idx, struct agg *a)
{
	double t0 = 1e300, t1 = 0, *all, sum = 0;
	uint64_t n = 0, i;
	int w;

	memset(a, 0, sizeof(*a));
	a->verified = -1;
	for (w = 0; w < nw; w++) {
		const struct perf_result *r = &per[w][idx];

		a->ops += r->ops;
		if (!w || r->ops < a->ops_min)
			a->ops_min = r->ops;
		if (r->ops > a->ops_max)
			a->ops_max = r->ops;
		a->errors += r->errors;
		a->bytes += r->bytes;
		t0 = r->t0 < t0 ? r->t0 : t0;
		t1 = r->t1 > t1 ? r->t1 : t1;
		n += r->nsamples;
		if (r->verified == 0 || (r->verified == 1 && a->verified == -1))
			a->verified = r->verified;
	}
	a->secs = t1 > t0 ? (t1 - t0) / 1e6 : 0;
	if (a->secs > 0) {
		a->mibps = a->bytes / a->secs / (1 << 20);
		a->gbps = a->bytes * 8 / a->secs / 1e9;
		a->mops = a->ops / a->secs / 1e6;
	}
	a->nsamples = n;
	all = n ? malloc(n * sizeof(double)) : NULL;
	if (!all)
		return;
	for (n = 0, w = 0; w < nw; w++)
		for (i = 0; i < per[w][idx].nsamples; i++)
			all[n++] = per[w][idx].samples[i];
	qsort(all, n, sizeof(double), cmp_double);
	for (i = 0; i < n; i++) {
		sum += all[i];
		a->over_1ms += all[i] > 1000.0;
	}
	a->min = all[0];
	a->max = all[n - 1];
	a->median = n % 2 ? all[n / 2] : (all[n / 2 - 1] + all[n / 2]) / 2;
	a->p99 = all[(uint64_t)ceil(0.99 * n) - 1];
	a->avg = sum / n;
	free(all);
}

static const char *verified_text(int v)
{
	return v < 0 ? "-" : v ? "ok" : "MISMATCH";
}

static void print_table(const struct perf_opts *o, struct perf_result **per, int nw,
			const char *node)
{
	int t, k, nsz = o->nsizes ? o->nsizes : 1;
	struct agg a;

	printf("# rdmaproxy-perf %s: node %s -> peer %s, %d client(s), %s\n", PACKAGE_VERSION, node,
	       o->peer ? o->peer : node, o->clients,
	       o->events ? "sleeping on rp_fd" : "spinning on rp_poll");
	for (t = 0; t < o->ntests; t++) {
		bool bw = o->tests[t].metric == PERF_BW;

		printf("\n# %s", test_label(o, t));
		if (bw)
			printf(" (depth %d)\n %-10s %-10s %12s %10s %14s %7s %7s\n", o->depth,
			       "#bytes", "#ops", "BW[MiB/s]", "BW[Gb/s]", "MsgRate[Mops]", "errors",
			       "verify");
		else
			printf(" (%s)\n %-10s %-10s %10s %10s %10s %10s %10s\n",
			       o->tests[t].metric == PERF_SYNC
				       ? "full round trip, one write outstanding"
			       : o->tests[t].op == PERF_READ
				       ? "full round trip, one read outstanding"
				       : "ping-pong, half round trip",
			       "#bytes", "#iters", "t_min[us]", "t_med[us]", "t_p99[us]",
			       "t_max[us]", "t_avg[us]");
		for (k = 0; k < nsz; k++) {
			aggregate(per, nw, t * nsz + k, &a);
			if (bw)
				printf(" %-10zu %-10llu %12.2f %10.3f %14.6f %7llu %7s\n",
				       size_of(o, t, k), (unsigned long long)a.ops, a.mibps, a.gbps,
				       a.mops, (unsigned long long)a.errors,
				       verified_text(a.verified));
			else
				printf(" %-10zu %-10llu %10.2f %10.2f %10.2f %10.2f %10.2f\n",
				       size_of(o, t, k), (unsigned long long)a.nsamples, a.min,
				       a.median, a.p99, a.max, a.avg);
		}
	}
}

static void print_json(const struct perf_opts *o, struct perf_result **per, int nw,
		       const char *node, bool ok)
{
	int t, k, nsz = o->nsizes ? o->nsizes : 1;
	const char *sep = "";
	struct agg a;

	printf("{\"tool\":\"rdmaproxy-perf\",\"version\":\"%s\",\"node\":\"%s\",\"peer\":\"%s\","
	       "\"clients\":%d,\"stagger_ms\":%d,\"depth\":%d,\"poll\":\"%s\",\"verify\":%s,"
	       "\"ok\":%s,\"results\":[",
	       PACKAGE_VERSION, node, o->peer ? o->peer : node, o->clients, o->stagger_ms, o->depth,
	       o->events ? "events" : "spin", o->verify ? "true" : "false", ok ? "true" : "false");
	for (t = 0; t < o->ntests; t++)
		for (k = 0; k < nsz; k++) {
			aggregate(per, nw, t * nsz + k, &a);
			printf("%s\n {\"test\":\"%s\",\"op\":\"%s\",\"metric\":\"%s\",\"size\":%zu,"
			       "\"ops\":%llu,\"errors\":%llu,\"bytes\":%llu,\"seconds\":%.6f,"
			       "\"warmup_per_client\":%ld",
			       sep, test_label(o, t), perf_op_name(o->tests[t].op),
			       o->tests[t].metric == PERF_BW ? "bw" : "lat", size_of(o, t, k),
			       (unsigned long long)a.ops, (unsigned long long)a.errors,
			       (unsigned long long)a.bytes, a.secs,
			       warmup_for(o, t, iters_for(o, t, size_of(o, t, k))));
			if (nw > 1)
				printf(",\"client_ops\":{\"min\":%llu,\"max\":%llu}",
				       (unsigned long long)a.ops_min,
				       (unsigned long long)a.ops_max);
			if (o->tests[t].metric == PERF_BW)
				printf(",\"depth\":%d,\"bw_MiBps\":%.3f,\"bw_Gbps\":%.6f,"
				       "\"mops\":%.6f",
				       o->depth, a.mibps, a.gbps, a.mops);
			else
				printf(",\"method\":\"%s\",\"iterations\":%llu,\"lat_us\":{"
				       "\"min\":%.3f,\"median\":%.3f,\"p99\":%.3f,\"max\":%.3f,"
				       "\"avg\":%.3f,\"over_1ms\":%llu}",
				       lat_method(&o->tests[t]), (unsigned long long)a.nsamples,
				       a.min, a.median, a.p99, a.max, a.avg,
				       (unsigned long long)a.over_1ms);
			printf(",\"verified\":%s}", a.verified < 0 ? "null"
						    : a.verified   ? "true"
								   : "false");
			sep = ",";
		}
	printf("\n]}\n");
}

/* ---- -c workers --------------------------------------------------------- */

static int save_results(int fd, const struct perf_result *res, int n)
{
	int i, r = 0;

	for (i = 0; i < n && r == 0; i++) {
		r = perf_write_full(fd, &res[i], sizeof(res[i]));
		if (r == 0 && res[i].nsamples)
			r = perf_write_full(fd, res[i].samples, res[i].nsamples * sizeof(double));
	}
	return r;
}

static int load_results(int fd, struct perf_result *res, int n)
{
	int i;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	for (i = 0; i < n; i++) {
		if (perf_read_full(fd, &res[i], sizeof(res[i])) < 0)
			return -EIO;
		res[i].samples = NULL;
		if (!res[i].nsamples)
			continue;
		res[i].samples = malloc(res[i].nsamples * sizeof(double));
		if (!res[i].samples ||
		    perf_read_full(fd, res[i].samples, res[i].nsamples * sizeof(double)) < 0)
			return -EIO;
	}
	return 0;
}

/* Fork one process per client; returns how many failed (or -errno). */
static int run_workers(struct perf_opts *o, struct perf_result **per, int nres, char *node)
{
	struct shared *sh;
	pthread_barrierattr_t ba;
	pid_t pids[MAX_CLIENTS];
	int fds[MAX_CLIENTS], w, st, failed = 0, left;
	pid_t p;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return -errno;
	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&sh->barrier, &ba, (unsigned)o->clients);
	for (w = 0; w < o->clients; w++) {
		fds[w] = memfd_create("rdmaproxy-perf", MFD_CLOEXEC);
		pids[w] = fork();
		if (pids[w] == 0) {
			o->progress = o->progress && w == 0;
			if (o->stagger_ms)
				usleep((useconds_t)w * (useconds_t)o->stagger_ms * 1000);
			st = run_worker(o, per[w], sh, w == 0 ? node : NULL, RP_NAME_LEN + 1);
			_exit(save_results(fds[w], per[w], nres) < 0 || st < 0);
		}
	}
	for (left = o->clients; left > 0; left--) {
		p = wait(&st);
		if (p < 0)
			break;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			/* The others may be waiting for it at the barrier. */
			if (!failed++)
				for (w = 0; w < o->clients; w++)
					if (pids[w] != p)
						kill(pids[w], SIGTERM);
		}
	}
	for (w = 0; w < o->clients; w++) {
		if (load_results(fds[w], per[w], nres) < 0)
			failed = failed ? failed : 1;
		close(fds[w]);
	}
	munmap(sh, sizeof(*sh));
	return failed;
}

/* ---- main ------------------------------------------------------------- */

static bool all_clean(const struct perf_opts *o, struct perf_result **per, int nres)
{
	int w, i;

	for (w = 0; w < o->clients; w++)
		for (i = 0; i < nres; i++)
			if (per[w][i].errors || per[w][i].verified == 0)
				return false;
	return true;
}

static int run(struct perf_opts *o)
{
	int nres = o->ntests * (o->nsizes ? o->nsizes : 1), w, r;
	struct perf_result *per[MAX_CLIENTS];
	char node[RP_NAME_LEN + 1] = "?";
	bool ok;

	if (o->role == 1)
		return run_server(o);
	for (w = 0; w < o->clients; w++) {
		per[w] = calloc((size_t)nres, sizeof(struct perf_result));
		if (!per[w])
			return 1;
		for (r = 0; r < nres; r++)
			per[w][r].verified = -1;
	}
	if (o->clients == 1) {
		r = run_worker(o, per[0], NULL, node, sizeof(node));
	} else {
		char *shared_node =
			mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

		r = shared_node == MAP_FAILED ? -ENOMEM : run_workers(o, per, nres, shared_node);
		if (shared_node != MAP_FAILED) {
			snprintf(node, sizeof(node), "%s", shared_node[0] ? shared_node : "?");
			munmap(shared_node, 4096);
		}
	}
	ok = r == 0 && all_clean(o, per, nres);
	if (o->json)
		print_json(o, per, o->clients, node, ok);
	else
		print_table(o, per, o->clients, node);
	for (w = 0; w < o->clients; w++) {
		for (r = 0; r < nres; r++)
			free(per[w][r].samples);
		free(per[w]);
	}
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct perf_opts o;
	int r;

	signal(SIGPIPE, SIG_IGN);
	r = parse_args(&o, argc, argv);
	if (r)
		return r > 0 ? 0 : 2;
	return run(&o);
}
