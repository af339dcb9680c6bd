/* SPDX-License-Identifier: MIT */
/*
 * Client side of the multi-daemon tests (test-peers.sh, test-export-acl.sh).
 * Talks to the daemon at $RDMAPROXY_SOCKET. Modes:
 *   export NAME SIZE NRECV [ACL]  export a SIZE region as NAME (read+write),
 *                              bind endpoint NAME with NRECV receives of SIZE;
 *                              print "ready", then one line per NOTIFY/RECV with
 *                              the FNV-1a sum of what landed, until stdin closes.
 *                              ACL says who may open it besides the exporting
 *                              user and root: comma-separated "private" (nobody
 *                              more: rp_region_export()), "any-user", "any-peer",
 *                              "user:UID", "group:GID", "peer:NAME". Without ACL,
 *                              every peer may (these tests are about transfers;
 *                              test-export-acl.sh is about access).
 *   xfer PEER NAME SIZE SEED   write SIZE bytes (RP_NOTIFY, imm SEED) into
 *                              PEER's export NAME, read them back, send them to
 *                              endpoint NAME; print the sums; 0 if all ok.
 *   stress PEER NAME NPROC NOPS SIZE [BASE]  NPROC clients at once, each writing
 *                              and reading back its own slice (BASE + i) NOPS times.
 *   storm PEER NAME SECONDS SIZE DEPTH  keep DEPTH writes/reads in flight for
 *                              SECONDS, or with SECONDS 0 until stdin closes
 *                              (the peer gets killed meanwhile); print
 *                              "flowing" after the first successful op; every
 *                              op must be reported exactly once.
 *   hold PEER NAME             open NAME, print "opened", wait for a line on
 *                              stdin, write 1 byte, print the status name.
 *   expect-open PEER NAME ERR  rp_remote_open must fail with ERR (a number).
 *   bind NAME NRECV ACL        bind endpoint NAME with NRECV receives of 64 B:
 *                              ACL "open" binds with rp_endpoint_bind(), else
 *                              rp_endpoint_bind_acl() with ACL as for export;
 *                              print "ready", then "recv status=S len=L" per
 *                              message until stdin closes, then "received=N".
 *   expect-send PEER NAME ERR  an 8-byte rp_send to endpoint NAME on PEER must
 *                              complete with ERR (0 or a negative number).
 *   put PEER NAME SIZE SEED [N]  write SIZE bytes (RP_NOTIFY, imm SEED) into
 *                              PEER's export NAME, N times (default 1, each once
 *                              the one before is done; the 2nd, 4th... without
 *                              RP_NOTIFY); print "write status=S times=N sum=X".
 *   With RP_TEST_HUGE set, export, xfer and put use RP_REGION_HUGE regions.
 *   expect-publish export|bind NAME ERR  export a page as NAME, or bind endpoint
 *                              NAME; it must return ERR (0 or a negative number).
 *   recv-free NAME SIZE        bind endpoint NAME with one receive of SIZE; print
 *                              "ready"; once a message's first byte lands,
 *                              free the receive's region; print "recv status=S
 *                              last=B" (B: its last byte had landed at the free).
 *   send-big PEER NAME SIZE    rp_send SIZE bytes of 0xa5 to endpoint NAME on
 *                              PEER; print "send status=S".
 *   notify-burst PEER NAME COUNT DEPTH  COUNT notifying 64-byte writes (imm 0..COUNT-1,
 *                              each to offset 64 * (i % 64)) with DEPTH in flight;
 *                              print "burst ok=N other=M"; 0 if all were ok.
 *   count-notify NAME SIZE     export a SIZE region as NAME (every peer may open
 *                              it); print "ready"; count
 *                              the notifications (by imm) until stdin closes, then
 *                              print "notified=N distinct=M".
 *   load PEER NAME NPROC SECONDS SIZE DEPTH  NPROC clients at once, each keeping
 *                              DEPTH slots of SIZE bytes busy for SECONDS: write a
 *                              slot (every other write with RP_NOTIFY, imm =
 *                              client << 24 | seq) into its own part of the export,
 *                              read it back, compare; every op must be reported
 *                              exactly once and every byte read back right. Prints
 *                              one "load ..." line per client; 0 if all were clean.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdmaproxy.h>

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

static void fill(void *p, size_t n, uint64_t seed)
{
	unsigned char *b = p;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (unsigned char)x;
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct rp_client *conn(void)
{
	struct rp_client *c;
	int e = rp_connect(NULL, &c);

	if (e < 0) {
		fprintf(stderr, "connect: %s\n", rp_strerror(e));
		exit(2);
	}
	return c;
}

static size_t parse_size(const char *s)
{
	char *end;
	size_t v = strtoull(s, &end, 10);

	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	return v;
}

static size_t pages(size_t n)
{
	return n < 4096 ? 4096 : (n + 4095) & ~(size_t)4095;
}

/* Wait for the completion of @op/@cookie; other completions are a failure. */
static int wait_op(struct rp_client *c, uint32_t op, uint64_t cookie, int timeout_ms)
{
	struct rp_completion comp;
	int n = rp_wait(c, &comp, 1, timeout_ms);

	if (n != 1) {
		fprintf(stderr, "no completion for op %u: %s\n", op,
			n ? rp_strerror(n) : "timeout");
		return -1000000;
	}
	if (comp.op != op || comp.cookie != cookie) {
		fprintf(stderr, "unexpected completion op %u cookie %" PRIu64 "\n", comp.op,
			comp.cookie);
		return -1000000;
	}
	return comp.status;
}

/* An export ACL spec (see the top), parsed into @acl; -1 if it is malformed. */
struct acl_spec {
	struct rp_export_acl acl;
	uid_t uids[RP_EXPORT_ACL_MAX + 1];
	gid_t gids[RP_EXPORT_ACL_MAX + 1];
	const char *peers[RP_EXPORT_ACL_MAX + 1];
	char buf[1024];
};

static int acl_parse(const char *spec, struct acl_spec *a)
{
	char *tok, *save;

	memset(a, 0, sizeof(*a));
	a->acl.uids = a->uids;
	a->acl.gids = a->gids;
	a->acl.peers = a->peers;
	snprintf(a->buf, sizeof(a->buf), "%s", spec);
	for (tok = strtok_r(a->buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "private"))
			continue;
		else if (!strcmp(tok, "any-user"))
			a->acl.flags |= RP_EXPORT_ANY_USER;
		else if (!strcmp(tok, "any-peer"))
			a->acl.flags |= RP_EXPORT_ANY_PEER;
		else if (!strncmp(tok, "user:", 5) && a->acl.n_uids <= RP_EXPORT_ACL_MAX)
			a->uids[a->acl.n_uids++] = (uid_t)atol(tok + 5);
		else if (!strncmp(tok, "group:", 6) && a->acl.n_gids <= RP_EXPORT_ACL_MAX)
			a->gids[a->acl.n_gids++] = (gid_t)atol(tok + 6);
		else if (!strncmp(tok, "peer:", 5) && a->acl.n_peers <= RP_EXPORT_ACL_MAX)
			a->peers[a->acl.n_peers++] = tok + 5;
		else
			return -1;
	}
	return 0;
}

static int export_as(struct rp_region *r, const char *name, unsigned access, const char *spec)
{
	struct acl_spec a;

	if (acl_parse(spec, &a) < 0)
		return -EINVAL;
	return rp_region_export_acl(r, name, access, &a.acl);
}

/* RP_TEST_HUGE set: export, xfer and put use RP_REGION_HUGE regions. */
static unsigned huge_flag(void)
{
	return getenv("RP_TEST_HUGE") ? RP_REGION_HUGE : 0;
}

static int do_export(const char *name, size_t size, int nrecv, const char *spec)
{
	struct rp_client *c = conn();
	struct rp_region *r, *m;
	struct rp_endpoint *ep;
	struct rp_completion comp;
	int e, i;

	if ((e = rp_region_alloc(c, pages(size), huge_flag(), &r)) < 0 ||
	    (e = rp_region_alloc(c, pages(size) * (size_t)(nrecv ? nrecv : 1), huge_flag(), &m)) <
		    0 ||
	    (e = export_as(r, name, RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE, spec)) < 0 ||
	    (e = rp_endpoint_bind(c, name, &ep)) < 0) {
		fprintf(stderr, "export: %s\n", rp_strerror(e));
		return 2;
	}
	for (i = 0; i < nrecv; i++)
		if ((e = rp_post_recv(ep, m, (size_t)i * pages(size), size, 100 + i)) < 0) {
			fprintf(stderr, "post_recv: %s\n", rp_strerror(e));
			return 2;
		}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int n = rp_wait(c, &comp, 1, 200);
		fd_set fds;
		struct timeval tv = { 0, 0 };

		if (n < 0)
			return 3;
		if (n == 1 && comp.op == RP_OP_NOTIFY)
			printf("notify imm=%u off=%" PRIu64 " len=%u sum=%016" PRIx64 "\n",
			       comp.imm, comp.offset, comp.len,
			       fnv1a((char *)rp_region_ptr(r) + comp.offset, comp.len));
		else if (n == 1 && comp.op == RP_OP_RECV)
			printf("recv status=%d len=%u sum=%016" PRIx64 "\n", comp.status, comp.len,
			       fnv1a((char *)rp_region_ptr(m) + (comp.cookie - 100) * pages(size),
				     comp.len));
		fflush(stdout);
		FD_ZERO(&fds);
		FD_SET(0, &fds);
		if (select(1, &fds, NULL, NULL, &tv) > 0) {
			char b[64];

			if (read(0, b, sizeof(b)) <= 0)
				break;
		}
	}
	rp_disconnect(c);
	return 0;
}

static int do_bind(const char *name, int nrecv, const char *spec)
{
	struct rp_client *c = conn();
	struct rp_region *m;
	struct rp_endpoint *ep;
	struct rp_completion comp;
	struct acl_spec a;
	int e, i, got = 0;

	if (strcmp(spec, "open") && acl_parse(spec, &a) < 0) {
		rp_disconnect(c);
		return 2;
	}
	if ((e = rp_region_alloc(c, 4096, 0, &m)) < 0 ||
	    (e = strcmp(spec, "open") ? rp_endpoint_bind_acl(c, name, &a.acl, &ep)
				      : rp_endpoint_bind(c, name, &ep)) < 0) {
		fprintf(stderr, "bind: %s\n", rp_strerror(e));
		rp_disconnect(c);
		return 2;
	}
	for (i = 0; i < nrecv && i < 64; i++)
		if ((e = rp_post_recv(ep, m, (size_t)i * 64, 64, 100 + i)) < 0) {
			fprintf(stderr, "post_recv: %s\n", rp_strerror(e));
			rp_disconnect(c);
			return 2;
		}
	printf("ready\n");
	for (;;) {
		int n = rp_wait(c, &comp, 1, 100);
		struct pollfd p = { .fd = 0, .events = POLLIN };
		char b[64];

		if (n < 0)
			return 3;
		if (n == 1) {
			printf("recv status=%d len=%u\n", comp.status, comp.len);
			got += comp.op == RP_OP_RECV && !comp.status;
		}
		if (poll(&p, 1, 0) > 0 && read(0, b, sizeof(b)) <= 0)
			break;
	}
	printf("received=%d\n", got);
	rp_disconnect(c);
	return 0;
}

static int do_expect_send(const char *peer, const char *name, int want)
{
	struct rp_client *c = conn();
	struct rp_region *r;
	int e, st;

	if ((e = rp_region_alloc(c, 4096, 0, &r)) < 0) {
		fprintf(stderr, "alloc: %s\n", rp_strerror(e));
		rp_disconnect(c);
		return 2;
	}
	memcpy(rp_region_ptr(r), "message", 8);
	e = rp_send(c, peer, name, r, 0, 8, 9);
	st = e < 0 ? e : wait_op(c, RP_OP_SEND, 9, 10000);
	printf("send: %s (%d)\n", st ? rp_strerror(st) : "ok", st);
	rp_disconnect(c);
	return st == want ? 0 : 1;
}

static int do_expect_publish(const char *kind, const char *name, int want)
{
	struct rp_client *c = conn();
	struct rp_endpoint *ep;
	struct rp_region *r;
	int e;

	if (!strcmp(kind, "bind")) {
		e = rp_endpoint_bind(c, name, &ep);
	} else if ((e = rp_region_alloc(c, 4096, 0, &r)) == 0) {
		e = rp_region_export(r, name, RP_ACCESS_REMOTE_READ);
	}
	printf("%s %s: %s (%d)\n", kind, name, e ? rp_strerror(e) : "ok", e);
	rp_disconnect(c);
	return e == want ? 0 : 1;
}

static int do_recv_free(const char *name, size_t size)
{
	struct rp_client *c = conn();
	struct rp_region *r;
	struct rp_endpoint *ep;
	const volatile unsigned char *p;
	double end = now_s() + 60;
	unsigned spins = 0;
	int e, st, last;

	if ((e = rp_region_alloc(c, pages(size), 0, &r)) < 0 ||
	    (e = rp_endpoint_bind(c, name, &ep)) < 0 || (e = rp_post_recv(ep, r, 0, size, 7)) < 0) {
		fprintf(stderr, "recv-free: %s\n", rp_strerror(e));
		rp_disconnect(c);
		return 2;
	}
	p = rp_region_ptr(r);
	printf("ready\n");
	while (!p[0])
		if (++spins % 4096 == 0 && now_s() > end) {
			fprintf(stderr, "recv-free: no message in 60 s\n");
			rp_disconnect(c);
			return 2;
		}
	last = p[size - 1] != 0;
	rp_region_free(r);
	st = wait_op(c, RP_OP_RECV, 7, 60000);
	printf("recv status=%d last=%d\n", st, last);
	rp_disconnect(c);
	return 0;
}

static int do_send_big(const char *peer, const char *name, size_t size)
{
	struct rp_client *c = conn();
	struct rp_region *r;
	int e, st;

	if ((e = rp_region_alloc(c, pages(size), 0, &r)) < 0) {
		fprintf(stderr, "alloc: %s\n", rp_strerror(e));
		rp_disconnect(c);
		return 2;
	}
	memset(rp_region_ptr(r), 0xa5, size);
	e = rp_send(c, peer, name, r, 0, size, 8);
	st = e < 0 ? e : wait_op(c, RP_OP_SEND, 8, 120000);
	printf("send status=%d\n", st);
	rp_disconnect(c);
	return 0;
}

static int do_put(const char *peer, const char *name, size_t size, uint32_t seed, int times)
{
	struct rp_client *c = conn();
	struct rp_region *src;
	struct rp_remote *rm;
	int e, st = 0, i;

	if ((e = rp_region_alloc(c, pages(size), huge_flag(), &src)) < 0 ||
	    (e = rp_remote_open(c, peer, name, &rm)) < 0) {
		fprintf(stderr, "put: %s\n", rp_strerror(e));
		rp_disconnect(c);
		return 2;
	}
	fill(rp_region_ptr(src), size, seed);
	for (i = 0; i < times && !st; i++) {
		e = rp_write_imm(c, src, 0, rm, 0, size, 1, i % 2 ? 0 : RP_NOTIFY, seed);
		st = e < 0 ? e : wait_op(c, RP_OP_WRITE, 1, 120000);
	}
	printf("write status=%d times=%d sum=%016" PRIx64 "\n", st, i,
	       fnv1a(rp_region_ptr(src), size));
	rp_remote_close(rm);
	rp_disconnect(c);
	return st ? 1 : 0;
}

static int do_xfer(const char *peer, const char *name, size_t size, uint32_t seed)
{
	struct rp_client *c = conn();
	struct rp_region *src, *back;
	struct rp_remote *rm;
	uint64_t sum, got;
	int e, st, bad = 0;
	double t0;

	if ((e = rp_region_alloc(c, pages(size), huge_flag(), &src)) < 0 ||
	    (e = rp_region_alloc(c, pages(size), huge_flag(), &back)) < 0) {
		fprintf(stderr, "alloc: %s\n", rp_strerror(e));
		return 2;
	}
	fill(rp_region_ptr(src), size, seed);
	sum = fnv1a(rp_region_ptr(src), size);
	e = rp_remote_open(c, peer, name, &rm);
	if (e < 0) {
		fprintf(stderr, "remote_open %s/%s: %s\n", peer, name, rp_strerror(e));
		return 2;
	}
	t0 = now_s();
	e = rp_write_imm(c, src, 0, rm, 0, size, 1, RP_NOTIFY, seed);
	st = e < 0 ? e : wait_op(c, RP_OP_WRITE, 1, 120000);
	printf("write status=%d sum=%016" PRIx64 " time=%.3f\n", st, sum, now_s() - t0);
	bad |= st != 0;
	t0 = now_s();
	e = rp_read(c, back, 0, rm, 0, size, 2, 0);
	st = e < 0 ? e : wait_op(c, RP_OP_READ, 2, 120000);
	got = fnv1a(rp_region_ptr(back), size);
	printf("read status=%d sum=%016" PRIx64 " time=%.3f\n", st, got, now_s() - t0);
	bad |= st != 0 || got != sum;
	e = rp_send(c, peer, name, src, 0, size, 3);
	st = e < 0 ? e : wait_op(c, RP_OP_SEND, 3, 120000);
	printf("send status=%d sum=%016" PRIx64 "\n", st, sum);
	bad |= st != 0;
	/* Out of bounds and an unknown endpoint fail precisely, the link stays. */
	e = rp_write(c, src, 0, rm, rp_remote_len(rm), 1, 4, 0);
	st = e < 0 ? e : wait_op(c, RP_OP_WRITE, 4, 10000);
	printf("oob status=%d\n", st);
	bad |= st != -RP_EREMOTEBOUNDS;
	e = rp_send(c, peer, "no-such-endpoint", src, 0, 1, 5);
	st = e < 0 ? e : wait_op(c, RP_OP_SEND, 5, 10000);
	printf("noep status=%d\n", st);
	bad |= st != -RP_ENOENDPOINT;
	rp_remote_close(rm);
	rp_disconnect(c);
	return bad;
}

static int stress_child(const char *peer, const char *name, int idx, int nops, size_t size)
{
	struct rp_client *c = conn();
	struct rp_region *src, *back;
	struct rp_remote *rm;
	int e, i;

	if ((e = rp_region_alloc(c, pages(size), 0, &src)) < 0 ||
	    (e = rp_region_alloc(c, pages(size), 0, &back)) < 0 ||
	    (e = rp_remote_open(c, peer, name, &rm)) < 0) {
		fprintf(stderr, "child %d: %s\n", idx, rp_strerror(e));
		return 1;
	}
	for (i = 0; i < nops; i++) {
		fill(rp_region_ptr(src), size, (uint64_t)idx * 1000 + i);
		e = rp_write(c, src, 0, rm, (size_t)idx * size, size, 2 * i, 0);
		if (e < 0 || wait_op(c, RP_OP_WRITE, 2 * i, 30000) != 0)
			return 1;
		e = rp_read(c, back, 0, rm, (size_t)idx * size, size, 2 * i + 1, 0);
		if (e < 0 || wait_op(c, RP_OP_READ, 2 * i + 1, 30000) != 0)
			return 1;
		if (memcmp(rp_region_ptr(src), rp_region_ptr(back), size)) {
			fprintf(stderr, "child %d op %d: data mismatch\n", idx, i);
			return 1;
		}
	}
	rp_disconnect(c);
	return 0;
}

static int do_stress(const char *peer, const char *name, int nproc, int nops, size_t size, int base)
{
	int i, st, bad = 0;

	for (i = 0; i < nproc; i++)
		if (fork() == 0)
			_exit(stress_child(peer, name, base + i, nops, size));
	for (i = 0; i < nproc; i++) {
		wait(&st);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	printf("stress %d clients x %d ops: %s\n", nproc, nops, bad ? "FAILED" : "ok");
	return bad;
}

/*
 * Open a remote export as an application that starts while the link to its
 * peer is being (re)established would: retry for up to 30 s while the peer
 * is not connected (a link can come up, be superseded by the duplicate the
 * other side dialled and come up again within a moment).
 */
static int open_when_linked(struct rp_client *c, const char *peer, const char *name,
			    struct rp_remote **rm)
{
	double t0 = now_s();
	int e;

	while ((e = rp_remote_open(c, peer, name, rm)) == -RP_EPEERDOWN && now_s() < t0 + 30)
		usleep(100000);
	if (e == 0 && now_s() > t0 + 0.5)
		fprintf(stderr, "storm: the link to %s was down for %.1f s at the start\n", peer,
			now_s() - t0);
	return e;
}

/* Nothing more to read on stdin (closed, or an error): the driver says stop. */
static bool stdin_closed(void)
{
	struct pollfd p = { .fd = 0, .events = POLLIN };
	char buf[64];

	if (poll(&p, 1, 0) <= 0)
		return false;
	return read(0, buf, sizeof(buf)) <= 0;
}

static int do_storm(const char *peer, const char *name, double secs, size_t size, int depth)
{
	struct rp_client *c = conn();
	struct rp_region *src;
	struct rp_remote *rm = NULL;
	struct rp_completion comp[64];
	unsigned char *seen;
	uint64_t next = 0, done = 0, ok = 0, down = 0, unknown = 0, stale = 0, other = 0, dup = 0;
	uint64_t max_ops = 10000000;
	int e, i, n, inflight = 0;
	bool running = true;
	double end, drain_deadline = 0;

	seen = calloc(max_ops, 1);
	if ((e = rp_region_alloc(c, pages(size), 0, &src)) < 0 ||
	    (e = open_when_linked(c, peer, name, &rm)) < 0) {
		fprintf(stderr, "storm: %s\n", rp_strerror(e));
		return 2;
	}
	end = now_s() + secs; /* SECONDS of traffic, however long the set-up took */
	while (running || inflight) {
		if (running)
			running = secs > 0 ? now_s() < end : !stdin_closed();
		while (running && inflight < depth && next < max_ops) {
			e = next & 1 ? rp_read(c, src, 0, rm, 0, size, next, 0)
				     : rp_write(c, src, 0, rm, 0, size, next, 0);
			if (e < 0)
				break;
			next++;
			inflight++;
		}
		if (!running && !drain_deadline)
			drain_deadline = now_s() + 60; /* every op must be reported by then */
		n = rp_wait(c, comp, 64, 100);
		if (n < 0) {
			fprintf(stderr, "storm: rp_wait: %s\n", rp_strerror(n));
			return 3;
		}
		if (n == 0 && drain_deadline && now_s() > drain_deadline) {
			fprintf(stderr,
				"storm: %d ops still unreported 60 s after the last submission\n",
				inflight);
			break;
		}
		for (i = 0; i < n; i++) {
			uint64_t k = comp[i].cookie;

			if (k >= next || seen[k]++) {
				dup++;
				continue;
			}
			inflight--;
			done++;
			if (comp[i].status == 0) {
				if (!ok++)
					printf("flowing\n");
			} else if (comp[i].status == -RP_EPEERDOWN)
				down++;
			else if (comp[i].status == -RP_EOUTCOME)
				unknown++;
			else if (comp[i].status == -RP_ESTALE)
				stale++;
			else
				other++,
					fprintf(stderr, "status %s\n", rp_strerror(comp[i].status));
		}
	}
	printf("storm submitted=%" PRIu64 " reported=%" PRIu64 " ok=%" PRIu64 " peerdown=%" PRIu64
	       " outcome=%" PRIu64 " stale=%" PRIu64 " other=%" PRIu64 " duplicate=%" PRIu64 "\n",
	       next, done, ok, down, unknown, stale, other, dup);
	rp_disconnect(c);
	free(seen);
	return next != done || dup || other;
}

static int do_hold(const char *peer, const char *name)
{
	struct rp_client *c = conn();
	struct rp_region *src;
	struct rp_remote *rm;
	char line[64];
	int e;

	if ((e = rp_region_alloc(c, 4096, 0, &src)) < 0 ||
	    (e = rp_remote_open(c, peer, name, &rm)) < 0) {
		fprintf(stderr, "hold: %s\n", rp_strerror(e));
		return 2;
	}
	printf("opened\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	e = rp_write(c, src, 0, rm, 0, 1, 9, 0);
	e = e < 0 ? e : wait_op(c, RP_OP_WRITE, 9, 10000);
	printf("status=%d %s\n", e, e ? rp_strerror(e) : "ok");
	rp_disconnect(c);
	return 0;
}

static int do_notify_burst(const char *peer, const char *name, uint32_t count, int depth)
{
	struct rp_client *c = conn();
	struct rp_region *src;
	struct rp_remote *rm;
	struct rp_completion comp[64];
	uint32_t next = 0, done = 0, ok = 0, other = 0;
	int e, i, n, inflight = 0;

	if ((e = rp_region_alloc(c, pages(4096), 0, &src)) < 0 ||
	    (e = rp_remote_open(c, peer, name, &rm)) < 0) {
		fprintf(stderr, "notify-burst: %s\n", rp_strerror(e));
		return 2;
	}
	memset(rp_region_ptr(src), 0x5a, 4096);
	while (done < count) {
		while (next < count && inflight < depth) {
			e = rp_write_imm(c, src, 64 * (next % 64), rm, 64 * (next % 64), 64, next,
					 RP_NOTIFY, next);
			if (e < 0)
				break;
			next++;
			inflight++;
		}
		n = rp_wait(c, comp, 64, 20000);
		if (n <= 0) {
			fprintf(stderr, "notify-burst: %s\n",
				n ? rp_strerror(n) : "no completion in 20 s");
			break;
		}
		for (i = 0; i < n; i++) {
			inflight--;
			done++;
			if (comp[i].status == 0)
				ok++;
			else
				other++,
					fprintf(stderr, "status %s\n", rp_strerror(comp[i].status));
		}
	}
	printf("burst ok=%u other=%u\n", ok, other);
	rp_disconnect(c);
	return ok == count ? 0 : 1;
}

static int do_count_notify(const char *name, size_t size)
{
	struct rp_client *c = conn();
	struct rp_region *r;
	struct rp_completion comp[64];
	unsigned char *seen = calloc(1u << 28, 1); /* 16 clients << 24 */
	uint64_t n_all = 0, n_distinct = 0;
	int e, n, i;

	if (!seen || (e = rp_region_alloc(c, pages(size), 0, &r)) < 0 ||
	    (e = export_as(r, name, RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE, "any-peer")) <
		    0) {
		fprintf(stderr, "count-notify: %s\n", seen ? rp_strerror(e) : "no memory");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		fd_set fds;
		struct timeval tv = { 0, 0 };

		n = rp_wait(c, comp, 64, 100);
		if (n < 0)
			return 3;
		for (i = 0; i < n; i++) {
			if (comp[i].op != RP_OP_NOTIFY)
				continue;
			n_all++;
			if (comp[i].imm < (1u << 28) && !seen[comp[i].imm]++)
				n_distinct++;
		}
		FD_ZERO(&fds);
		FD_SET(0, &fds);
		if (!n && select(1, &fds, NULL, NULL, &tv) > 0) {
			char b[64];

			if (read(0, b, sizeof(b)) <= 0)
				break;
		}
	}
	printf("notified=%" PRIu64 " distinct=%" PRIu64 "\n", n_all, n_distinct);
	rp_disconnect(c);
	return 0;
}

/* One slot of a load client: a write, then its read-back. */
struct slot {
	uint64_t seq; /* the write it carries */
	bool reading;
};

static int load_child(const char *peer, const char *name, int idx, double secs, size_t size,
		      int depth)
{
	struct rp_client *c = conn();
	struct rp_region *src, *back;
	struct rp_remote *rm;
	struct rp_completion comp[64];
	struct slot *sl = calloc((size_t)depth, sizeof(*sl));
	uint64_t seq = 0, ok = 0, notified = 0, bad = 0, other = 0, busy = 0;
	double end = now_s() + secs;
	int e, i, n, k;

	if (!sl || (e = rp_region_alloc(c, pages(size * (size_t)depth), 0, &src)) < 0 ||
	    (e = rp_region_alloc(c, pages(size * (size_t)depth), 0, &back)) < 0 ||
	    (e = rp_remote_open(c, peer, name, &rm)) < 0) {
		fprintf(stderr, "load %d: %s\n", idx, sl ? rp_strerror(e) : "no memory");
		return 2;
	}
	/* Cookie = slot | seq << 8 (a write) | 1 << 7 (its read-back). */
	for (k = 0; k < depth; k++) {
		char *p = (char *)rp_region_ptr(src) + (size_t)k * size;

		sl[k].seq = seq++;
		fill(p, size, (uint64_t)idx << 32 | sl[k].seq);
		e = rp_write_imm(c, src, (size_t)k * size, rm, ((size_t)idx * depth + k) * size,
				 size, (uint64_t)k | sl[k].seq << 8, sl[k].seq & 1 ? RP_NOTIFY : 0,
				 (uint32_t)idx << 24 | (uint32_t)(sl[k].seq & 0xffffff));
		if (e < 0)
			return 3;
		busy++;
	}
	while (busy) {
		n = rp_wait(c, comp, 64, 60000);
		if (n <= 0) {
			fprintf(stderr, "load %d: %s\n", idx,
				n ? rp_strerror(n) : "no completion in 60 s");
			return 4;
		}
		for (i = 0; i < n; i++) {
			uint64_t ck = comp[i].cookie;
			int s = (int)(ck & 0x7f);
			bool is_read = ck & 0x80;
			char *sp = (char *)rp_region_ptr(src) + (size_t)s * size;
			char *bp = (char *)rp_region_ptr(back) + (size_t)s * size;

			/* Exactly once: the completion must be the one this slot waits for. */
			if (s >= depth || (ck >> 8) != sl[s].seq || is_read != sl[s].reading ||
			    comp[i].op != (is_read ? RP_OP_READ : RP_OP_WRITE)) {
				fprintf(stderr,
					"load %d: unexpected completion cookie %" PRIu64 "\n", idx,
					ck);
				return 5;
			}
			busy--;
			if (comp[i].status) {
				other++;
				sl[s].reading = false;
			} else if (!is_read) {
				ok++;
				notified += sl[s].seq & 1;
				sl[s].reading = true;
				memset(bp, 0, size);
				e = rp_read(c, back, (size_t)s * size, rm,
					    ((size_t)idx * depth + (size_t)s) * size, size,
					    ck | 0x80, 0);
				if (e < 0)
					return 3;
				busy++;
				continue;
			} else {
				ok++;
				bad += memcmp(sp, bp, size) != 0;
				sl[s].reading = false;
			}
			if (now_s() >= end)
				continue;
			sl[s].seq = seq++;
			fill(sp, size, (uint64_t)idx << 32 | sl[s].seq);
			e = rp_write_imm(c, src, (size_t)s * size, rm,
					 ((size_t)idx * depth + (size_t)s) * size, size,
					 (uint64_t)s | sl[s].seq << 8,
					 sl[s].seq & 1 ? RP_NOTIFY : 0,
					 (uint32_t)idx << 24 | (uint32_t)(sl[s].seq & 0xffffff));
			if (e < 0)
				return 3;
			busy++;
		}
	}
	printf("load client=%d ok=%" PRIu64 " notified_ok=%" PRIu64 " mismatch=%" PRIu64
	       " failed=%" PRIu64 "\n",
	       idx, ok, notified, bad, other);
	fflush(stdout);
	rp_disconnect(c);
	return bad || other ? 1 : 0;
}

static int do_load(const char *peer, const char *name, int nproc, double secs, size_t size,
		   int depth)
{
	int i, st, rc = 0;

	if (depth < 1 || depth > 127 || nproc < 1 || nproc > 16)
		return 2;
	for (i = 0; i < nproc; i++)
		if (fork() == 0)
			_exit(load_child(peer, name, i, secs, size, depth));
	for (i = 0; i < nproc; i++) {
		wait(&st);
		rc |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	return rc;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "export") && (argc == 5 || argc == 6))
		return do_export(argv[2], parse_size(argv[3]), atoi(argv[4]),
				 argc == 6 ? argv[5] : "any-peer");
	if (!strcmp(mode, "xfer") && argc == 6)
		return do_xfer(argv[2], argv[3], parse_size(argv[4]), (uint32_t)atoi(argv[5]));
	if (!strcmp(mode, "stress") && (argc == 7 || argc == 8))
		return do_stress(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]),
				 parse_size(argv[6]), argc == 8 ? atoi(argv[7]) : 0);
	if (!strcmp(mode, "storm") && argc == 7)
		return do_storm(argv[2], argv[3], atof(argv[4]), parse_size(argv[5]),
				atoi(argv[6]));
	if (!strcmp(mode, "notify-burst") && argc == 6)
		return do_notify_burst(argv[2], argv[3], (uint32_t)atoi(argv[4]), atoi(argv[5]));
	if (!strcmp(mode, "count-notify") && argc == 4)
		return do_count_notify(argv[2], parse_size(argv[3]));
	if (!strcmp(mode, "load") && argc == 8)
		return do_load(argv[2], argv[3], atoi(argv[4]), atof(argv[5]), parse_size(argv[6]),
			       atoi(argv[7]));
	if (!strcmp(mode, "hold") && argc == 4)
		return do_hold(argv[2], argv[3]);
	if (!strcmp(mode, "bind") && argc == 5)
		return do_bind(argv[2], atoi(argv[3]), argv[4]);
	if (!strcmp(mode, "put") && (argc == 6 || argc == 7))
		return do_put(argv[2], argv[3], parse_size(argv[4]), (uint32_t)atoi(argv[5]),
			      argc == 7 ? atoi(argv[6]) : 1);
	if (!strcmp(mode, "expect-publish") && argc == 5)
		return do_expect_publish(argv[2], argv[3], atoi(argv[4]));
	if (!strcmp(mode, "recv-free") && argc == 4)
		return do_recv_free(argv[2], parse_size(argv[3]));
	if (!strcmp(mode, "send-big") && argc == 5)
		return do_send_big(argv[2], argv[3], parse_size(argv[4]));
	if (!strcmp(mode, "expect-send") && argc == 5)
		return do_expect_send(argv[2], argv[3], atoi(argv[4]));
	if (!strcmp(mode, "expect-open") && argc == 5) {
		struct rp_client *c = conn();
		struct rp_remote *rm;
		int e = rp_remote_open(c, argv[2], argv[3], &rm);

		printf("open: %s\n", e ? rp_strerror(e) : "ok");
		rp_disconnect(c);
		return e == atoi(argv[4]) ? 0 : 1;
	}
	fprintf(stderr, "usage: see the comment at the top of test-peers-io.c\n");
	return 2;
}
