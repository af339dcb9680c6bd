/* SPDX-License-Identifier: MIT */
/*
 * A test client built on librdmaproxy, driven by test-client.sh. Each mode
 * prints "PASS what" / "FAIL what" lines (the script turns them into TAP)
 * or key=value lines, and exits 0 only if everything it checked held.
 *
 *   test-client-io pair SIZE          two processes: write+notify, read, send/recv
 *   test-client-io stress NPROC NOPS  NPROC writers into one exporter, all accounted
 *   test-client-io loop SECONDS SIZE  write/read/verify between two clients until time
 *   test-client-io api                error paths, one check each
 *   test-client-io regions N SIZE [hold]  allocate up to N regions over two connections
 *   test-client-io conns N [hold]     open up to N connections
 *   test-client-io inflight N         post N receives
 *   test-client-io bench SIZE N       N writes of SIZE: bandwidth and latency
 *
 * The socket comes from RDMAPROXY_SOCKET. "hold" keeps everything until
 * stdin reaches EOF, after printing "holding".
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rdmaproxy.h"

/*
 * A bound, not a timing check: steps of a 64 MiB exchange in a TCG guest on
 * a busy 2-core host can take many seconds each.
 */
#define WAIT_MS 120000

static int failures;

static void check(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", cond ? "PASS" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		failures++;
}

static void die(const char *what, int err)
{
	printf("FAIL %s: %s (%d)\n", what, rp_strerror(err), err);
	fflush(stdout);
	exit(1);
}

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
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (unsigned char)x;
	}
}

static struct rp_client *connect_or_die(void)
{
	struct rp_client *c;
	int r = rp_connect(NULL, &c);

	if (r < 0)
		die("rp_connect", r);
	return c;
}

/* Wait for the completion of @op (any cookie if @cookie is ~0). */
static int wait_op(struct rp_client *c, uint32_t op, uint64_t cookie, struct rp_completion *out)
{
	struct rp_completion comp;
	int n;

	for (;;) {
		n = rp_wait(c, &comp, 1, WAIT_MS);
		if (n < 0)
			return n;
		if (n == 0)
			return -ETIMEDOUT;
		if (comp.op == op && (cookie == ~0ull || comp.cookie == cookie)) {
			if (out)
				*out = comp;
			return comp.status;
		}
		printf("# unexpected completion op %u cookie %" PRIu64 " status %d\n", comp.op,
		       comp.cookie, comp.status);
	}
}

/*
 * B's receive goes through B's ring and A's send through A's: the daemon
 * may take the send first, and nothing orders two clients' rings. Retry
 * while the send finds no receive, as a real sender would.
 */
static int send_when_posted(struct rp_client *a, const char *ep, struct rp_region *r, size_t len,
			    uint64_t cookie)
{
	int st = -RP_ENORECV, i;

	for (i = 0; i < 200 && st == -RP_ENORECV; i++) {
		if (i)
			usleep(1000);
		rp_send(a, NULL, ep, r, 0, len, cookie);
		st = wait_op(a, RP_OP_SEND, cookie, NULL);
	}
	return st;
}

static void put_u64(int fd, uint64_t v)
{
	if (write(fd, &v, sizeof(v)) != sizeof(v))
		exit(2);
}

static uint64_t get_u64(int fd)
{
	uint64_t v = 0;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		exit(2);
	return v;
}

/* The exporter side of "pair": runs in the child. */
static int pair_b(size_t size, const char *name, int to_a, int from_a)
{
	struct rp_client *c = connect_or_die();
	struct rp_region *r, *rx;
	struct rp_endpoint *ep;
	struct rp_completion comp;
	int st;

	if ((st = rp_region_alloc(c, size, 0, &r)) < 0 ||
	    (st = rp_region_alloc(c, size, 0, &rx)) < 0)
		die("B: rp_region_alloc", st);
	if ((st = rp_region_export(r, name, RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE)) < 0)
		die("B: rp_region_export", st);
	if ((st = rp_endpoint_bind(c, name, &ep)) < 0)
		die("B: rp_endpoint_bind", st);
	if ((st = rp_post_recv(ep, rx, 0, size, 77)) < 0)
		die("B: rp_post_recv", st);
	put_u64(to_a, 1); /* ready */
	st = wait_op(c, RP_OP_NOTIFY, ~0ull, &comp);
	check(st == 0 && comp.region == r && comp.imm == 0xfeed && comp.len == size &&
		      comp.offset == 0,
	      "B got the write notification (imm 0x%x len %u)", comp.imm, comp.len);
	put_u64(to_a, fnv1a(rp_region_ptr(r), size));
	st = wait_op(c, RP_OP_RECV, 77, &comp);
	check(st == 0 && comp.len == size && comp.region == rx, "B received the message (%u B)",
	      comp.len);
	put_u64(to_a, fnv1a(rp_region_ptr(rx), size));
	get_u64(from_a); /* A is done with our export */
	rp_disconnect(c);
	return failures ? 1 : 0;
}

static int pair(size_t size)
{
	int ab[2], ba[2], st;
	char name[64];
	pid_t pid;
	struct rp_client *c;
	struct rp_region *r, *back;
	struct rp_remote *rm;
	uint64_t mine, theirs;

	snprintf(name, sizeof(name), "pair-%d", (int)getpid());
	if (pipe(ab) < 0 || pipe(ba) < 0)
		return 2;
	pid = fork();
	if (pid == 0) {
		close(ab[1]);
		close(ba[0]);
		_exit(pair_b(size, name, ba[1], ab[0]));
	}
	close(ab[0]);
	close(ba[1]);
	c = connect_or_die();
	if ((st = rp_region_alloc(c, size, 0, &r)) < 0 ||
	    (st = rp_region_alloc(c, size, 0, &back)) < 0)
		die("A: rp_region_alloc", st);
	fill(rp_region_ptr(r), size, size);
	mine = fnv1a(rp_region_ptr(r), size);
	get_u64(ba[0]);
	st = rp_remote_open(c, rp_node_name(c), name, &rm);
	if (st < 0)
		die("A: rp_remote_open", st);
	check(rp_remote_len(rm) >= size, "remote length %zu", rp_remote_len(rm));
	if ((st = rp_write_imm(c, r, 0, rm, 0, size, 1, RP_NOTIFY, 0xfeed)) < 0)
		die("A: rp_write_imm", st);
	st = wait_op(c, RP_OP_WRITE, 1, NULL);
	check(st == 0, "write of %zu B completed (%s)", size, rp_strerror(st));
	theirs = get_u64(ba[0]);
	check(mine == theirs, "write %zu B: checksums %016" PRIx64 " / %016" PRIx64, size, mine,
	      theirs);
	memset(rp_region_ptr(back), 0, size);
	if ((st = rp_read(c, back, 0, rm, 0, size, 2, 0)) < 0)
		die("A: rp_read", st);
	st = wait_op(c, RP_OP_READ, 2, NULL);
	check(st == 0 && fnv1a(rp_region_ptr(back), size) == mine,
	      "read back %zu B: checksum matches", size);
	st = send_when_posted(c, name, r, size, 3);
	check(st == 0, "send of %zu B completed (%s)", size, rp_strerror(st));
	theirs = get_u64(ba[0]);
	check(mine == theirs, "send %zu B: checksums %016" PRIx64 " / %016" PRIx64, size, mine,
	      theirs);
	rp_remote_close(rm);
	put_u64(ab[1], 1);
	waitpid(pid, &st, 0);
	check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exporter process exited cleanly");
	rp_disconnect(c);
	return failures ? 1 : 0;
}

#define STRESS_CHUNK 4096

/* One writer of "stress": NOPS writes with RP_NOTIFY, each accounted once. */
static int stress_child(int idx, unsigned nops, int out)
{
	struct rp_client *c = connect_or_die();
	struct rp_region *r;
	struct rp_remote *rm;
	struct rp_completion comps[64];
	unsigned char *seen = calloc(nops, 1);
	unsigned sent = 0, done = 0, ok = 0, nospace = 0, other = 0, dup = 0;
	int st, n, i;

	if ((st = rp_region_alloc(c, STRESS_CHUNK, 0, &r)) < 0)
		die("stress: rp_region_alloc", st);
	fill(rp_region_ptr(r), STRESS_CHUNK, (uint64_t)idx);
	if ((st = rp_remote_open(c, NULL, "stress", &rm)) < 0)
		die("stress: rp_remote_open", st);
	while (done < nops) {
		while (sent < nops) {
			size_t len = 1 + (sent * 97u) % STRESS_CHUNK;

			st = rp_write_imm(c, r, 0, rm, (size_t)idx * STRESS_CHUNK, len, sent,
					  RP_NOTIFY, ((uint32_t)idx << 24) | sent);
			if (st == -EAGAIN)
				break;
			if (st < 0)
				die("stress: rp_write_imm", st);
			sent++;
		}
		n = rp_wait(c, comps, 64, WAIT_MS);
		if (n <= 0) {
			printf("# writer %d stuck: sent %u done %u\n", idx, sent, done);
			die("stress: rp_wait", n ? n : -ETIMEDOUT);
		}
		for (i = 0; i < n; i++) {
			uint64_t k = comps[i].cookie;

			if (comps[i].op != RP_OP_WRITE || k >= nops || seen[k]++) {
				dup++;
				continue;
			}
			done++;
			if (comps[i].status == 0)
				ok++;
			else if (comps[i].status == -RP_ENOTIFYSPACE)
				nospace++;
			else
				other++;
		}
	}
	put_u64(out, ok);
	printf("# writer %d: %u ok, %u refused for notification space, %u other, %u bad\n", idx, ok,
	       nospace, other, dup);
	free(seen);
	rp_disconnect(c);
	return dup || other ? 1 : 0;
}

static int stress(int nproc, unsigned nops)
{
	struct rp_client *c = connect_or_die();
	struct rp_region *r;
	struct rp_completion comps[256];
	unsigned char *seen = calloc((size_t)nproc * nops, 1);
	uint64_t notified = 0, expected = 0, bad = 0;
	int p[2], i, n, st, alive = nproc, failed = 0;

	if ((st = rp_region_alloc(c, (size_t)nproc * STRESS_CHUNK, 0, &r)) < 0)
		die("stress: exporter alloc", st);
	if ((st = rp_region_export(r, "stress", RP_ACCESS_REMOTE_WRITE)) < 0)
		die("stress: export", st);
	if (pipe(p) < 0)
		return 2;
	for (i = 0; i < nproc; i++)
		if (fork() == 0) {
			close(p[0]);
			_exit(stress_child(i, nops, p[1]));
		}
	close(p[1]);
	for (;;) {
		n = rp_wait(c, comps, 256, alive > 0 ? 50 : 0);
		if (n < 0)
			die("stress: exporter rp_wait", n);
		for (i = 0; i < n; i++) {
			uint32_t w = comps[i].imm >> 24, k = comps[i].imm & 0xffffff;

			if (comps[i].op != RP_OP_NOTIFY || comps[i].status ||
			    w >= (uint32_t)nproc || k >= nops || seen[(size_t)w * nops + k]++)
				bad++;
			else
				notified++;
		}
		while (alive > 0 && waitpid(-1, &st, WNOHANG) > 0) {
			alive--;
			failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		}
		/* Writers are done: whatever they saw acknowledged is in our ring now. */
		if (alive == 0 && n == 0)
			break;
	}
	for (i = 0; i < nproc; i++) {
		uint64_t v = 0;

		if (read(p[0], &v, sizeof(v)) == sizeof(v))
			expected += v;
	}
	check(failed == 0, "%d writers accounted for each of their %u completions exactly once",
	      nproc, nops);
	check(bad == 0 && notified == expected,
	      "exporter got exactly one notification per acknowledged write (%" PRIu64
	      " of %" PRIu64 ", %" PRIu64 " bad)",
	      notified, expected, bad);
	free(seen);
	rp_disconnect(c);
	return failures ? 1 : 0;
}

static int loop(int seconds, size_t size)
{
	struct rp_client *a = connect_or_die(), *b = connect_or_die();
	struct rp_region *src, *dst, *back;
	struct rp_remote *rm;
	char name[64];
	time_t end = time(NULL) + seconds;
	unsigned iters = 0;
	int st;

	snprintf(name, sizeof(name), "loop-%d", (int)getpid());
	if ((st = rp_region_alloc(a, size, 0, &src)) < 0 ||
	    (st = rp_region_alloc(a, size, 0, &back)) < 0 ||
	    (st = rp_region_alloc(b, size, 0, &dst)) < 0)
		die("loop: alloc", st);
	if ((st = rp_region_export(dst, name, RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE)) <
		    0 ||
	    (st = rp_remote_open(a, NULL, name, &rm)) < 0)
		die("loop: export/open", st);
	printf("running\n");
	fflush(stdout);
	while (time(NULL) < end) {
		fill(rp_region_ptr(src), size, iters);
		if ((st = rp_write(a, src, 0, rm, 0, size, iters, 0)) < 0 ||
		    (st = wait_op(a, RP_OP_WRITE, iters, NULL)) < 0)
			die("loop: write", st);
		if ((st = rp_read(a, back, 0, rm, 0, size, iters, 0)) < 0 ||
		    (st = wait_op(a, RP_OP_READ, iters, NULL)) < 0)
			die("loop: read", st);
		if (memcmp(rp_region_ptr(back), rp_region_ptr(src), size)) {
			check(false, "loop: data differs at iteration %u", iters);
			break;
		}
		iters++;
	}
	check(iters > 0 && !failures, "loop: %u write/read/verify rounds of %zu B without error",
	      iters, size);
	rp_disconnect(a);
	rp_disconnect(b);
	return failures ? 1 : 0;
}

static void hold(void)
{
	char buf[64];

	printf("holding\n");
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
}

static int regions(int n, size_t size, bool keep)
{
	struct rp_client *c[2] = { connect_or_die(), connect_or_die() };
	struct rp_region *r;
	int i, st = 0;

	for (i = 0; i < n; i++) {
		st = rp_region_alloc(c[i % 2], size, 0, &r);
		if (st < 0)
			break;
	}
	printf("allocated=%d\nerror=%s\n", i, st < 0 ? rp_strerror(st) : "none");
	if (keep)
		hold();
	rp_disconnect(c[0]);
	rp_disconnect(c[1]);
	return 0;
}

static int conns(int n, bool keep)
{
	struct rp_client **c = calloc((size_t)n, sizeof(*c));
	int i, k, st = 0;

	for (i = 0; i < n; i++) {
		st = rp_connect(NULL, &c[i]);
		if (st < 0)
			break;
	}
	printf("connected=%d\nerror=%s\n", i, st < 0 ? rp_strerror(st) : "none");
	if (keep)
		hold();
	for (k = 0; k < i; k++)
		rp_disconnect(c[k]);
	free(c);
	return 0;
}

static int inflight(int n)
{
	struct rp_client *c = connect_or_die();
	struct rp_region *r;
	struct rp_remote *rm;
	struct rp_endpoint *ep;
	struct rp_completion comp;
	char name[64];
	int i, st, refused = 0, barrier = 0;
	const char *err = "none";

	snprintf(name, sizeof(name), "inflight-%d", (int)getpid());
	if ((st = rp_region_alloc(c, 4096, 0, &r)) < 0 ||
	    (st = rp_endpoint_bind(c, name, &ep)) < 0 ||
	    (st = rp_region_export(r, name, RP_ACCESS_REMOTE_WRITE)) < 0 ||
	    (st = rp_remote_open(c, NULL, name, &rm)) < 0)
		die("inflight: setup", st);
	for (i = 0; i < n; i++)
		if ((st = rp_post_recv(ep, r, 0, 16, (uint64_t)i)) < 0)
			die("inflight: rp_post_recv", st);
	/* Operations run in order: once this write completes, every post was seen. */
	if ((st = rp_write(c, r, 0, rm, 64, 16, 1u << 30, 0)) < 0)
		die("inflight: barrier write", st);
	while (!barrier) {
		st = rp_wait(c, &comp, 1, WAIT_MS);
		if (st <= 0)
			die("inflight: rp_wait", st ? st : -ETIMEDOUT);
		if (comp.cookie == 1u << 30) {
			barrier = 1;
			if (comp.status)
				printf("barrier=%s\n", rp_strerror(comp.status));
		} else if (comp.status) {
			refused++;
			err = rp_strerror(comp.status);
		}
	}
	printf("posted=%d\nrefused=%d\nerror=%s\n", n - refused, refused, err);
	rp_disconnect(c);
	return 0;
}

static void api_errors(struct rp_client *a, struct rp_client *b)
{
	struct rp_region *ra, *rb, *rro;
	struct rp_remote *rm, *ro;
	struct rp_endpoint *ep;
	struct rp_completion comp;
	int st;

	if ((st = rp_region_alloc(a, 8192, 0, &ra)) < 0 ||
	    (st = rp_region_alloc(b, 5000, 0, &rb)) < 0 ||
	    (st = rp_region_alloc(b, 4096, 0, &rro)) < 0)
		die("api: alloc", st);
	check(rp_region_len(rb) == 8192, "lengths round up to the page size (5000 -> %zu)",
	      rp_region_len(rb));
	check(rp_set_wait_mode(a, 7) == -EINVAL && rp_set_wait_mode(NULL, RP_WAIT_BUSY) == -EINVAL,
	      "an unknown wait mode, or no client, gives -EINVAL");
	check(rp_set_wait_mode(a, RP_WAIT_ADAPTIVE) == 0, "the adaptive wait mode is taken");
	{
		struct rp_completion cq;

		check(rp_wait(a, &cq, 1, -2) == -EINVAL && rp_wait(a, &cq, 0, 0) == -EINVAL,
		      "rp_wait: a timeout below -1, or max 0, gives -EINVAL");
		check(rp_wait(a, &cq, 1, 1) == 0, "rp_wait with nothing in flight: 0 after 1 ms");
	}
	st = rp_relax(a);
	check(rp_relax(NULL) == -EINVAL && (st == 0 || st == 1),
	      "rp_relax: -EINVAL without a client, else 0 or 1 (yielded: %d)", st);
	check(rp_region_export(rb, "api-x", RP_ACCESS_REMOTE_WRITE | RP_ACCESS_REMOTE_READ) == 0,
	      "export");
	check(rp_region_export(rro, "api-x", RP_ACCESS_REMOTE_READ) == -EEXIST,
	      "a taken export name gives -EEXIST");
	check(rp_region_export(rro, "api-ro", RP_ACCESS_REMOTE_READ) == 0, "read-only export");
	check(rp_region_export(rro, "bad name", RP_ACCESS_REMOTE_READ) == -EINVAL,
	      "a name with a space is refused");
	{
		/* Access lists the library or the daemon refuse; none exports anything. */
		static const uid_t uids[RP_EXPORT_ACL_MAX + 1];
		const char *peers[] = { "elsewhere" }, *bad[] = { "a b" }, *none[] = { NULL };
		struct rp_export_acl acl = { .comp_mask = 1 };
		unsigned rd = RP_ACCESS_REMOTE_READ;

		check(rp_region_export_acl(rro, "api-acl", rd, &acl) == -EOPNOTSUPP,
		      "an access list with unknown comp_mask bits gives -EOPNOTSUPP");
		acl = (struct rp_export_acl){ .flags = 4 };
		check(rp_region_export_acl(rro, "api-acl", rd, &acl) == -EINVAL,
		      "unknown access-list flags give -EINVAL");
		acl = (struct rp_export_acl){ .uids = uids, .n_uids = RP_EXPORT_ACL_MAX + 1 };
		check(rp_region_export_acl(rro, "api-acl", rd, &acl) == -EINVAL,
		      "more than RP_EXPORT_ACL_MAX users give -EINVAL");
		acl = (struct rp_export_acl){ .n_gids = 1 };
		check(rp_region_export_acl(rro, "api-acl", rd, &acl) == -EINVAL,
		      "a count without its list gives -EINVAL");
		acl = (struct rp_export_acl){ .peers = bad, .n_peers = 1 };
		check(rp_region_export_acl(rro, "api-acl", rd, &acl) == -EINVAL,
		      "an invalid peer name gives -EINVAL");
		acl.peers = none;
		check(rp_region_export_acl(rro, "api-acl", rd, &acl) == -EINVAL,
		      "a NULL peer name gives -EINVAL");
		acl.peers = peers;
		check(rp_region_export_acl(rro, "api-acl", rd, &acl) == -RP_EPEERUNKNOWN,
		      "a peer that is not configured gives RP_EPEERUNKNOWN");
		check(rp_remote_open(a, NULL, "api-acl", &rm) == -RP_ENOEXPORT,
		      "and none of them exported anything");
		check(rp_region_export_acl(rro, "api-acl", rd, NULL) == 0 &&
			      rp_region_unexport(rro, "api-acl") == 0,
		      "a NULL access list is a plain export");
	}
	check(rp_remote_open(a, NULL, "api-nope", &rm) == -RP_ENOEXPORT,
	      "opening a missing export gives RP_ENOEXPORT");
	check(rp_remote_open(a, "elsewhere", "api-x", &rm) == -RP_EPEERUNKNOWN,
	      "an unknown peer gives RP_EPEERUNKNOWN");
	check(!strcmp(rp_node_name(a), "testnode"), "node name from hello (%s)", rp_node_name(a));
	st = rp_remote_open(a, "testnode", "api-x", &rm);
	check(st == 0, "open by own node name (%s)", rp_strerror(st));
	check(rp_remote_open(a, "", "api-ro", &ro) == 0, "open with an empty peer");
	check(rp_write(a, ra, 8000, rm, 0, 1000, 1, 0) == -RP_EBOUNDS,
	      "local range past the end gives RP_EBOUNDS");
	check(rp_write(a, ra, SIZE_MAX, rm, 0, 2, 1, 0) == -RP_EBOUNDS,
	      "offset overflow gives RP_EBOUNDS");
	check(rp_write(a, ra, 0, rm, 0, 1, 1, 0x80) == -EINVAL, "unknown flags give -EINVAL");
	check(rp_write(b, ra, 0, rm, 0, 1, 1, 0) == -EINVAL,
	      "a region of another client gives -EINVAL");
	rp_write(a, ra, 0, rm, 8000, 1000, 10, 0);
	check(wait_op(a, RP_OP_WRITE, 10, NULL) == -RP_EREMOTEBOUNDS,
	      "remote range past the end gives RP_EREMOTEBOUNDS");
	rp_write(a, ra, 0, rm, UINT64_MAX - 10, 100, 11, 0);
	check(wait_op(a, RP_OP_WRITE, 11, NULL) == -RP_EREMOTEBOUNDS,
	      "remote offset overflow gives RP_EREMOTEBOUNDS");
	rp_write(a, ra, 0, ro, 0, 10, 12, 0);
	check(wait_op(a, RP_OP_WRITE, 12, NULL) == -RP_EREMOTEACCESS,
	      "writing a read-only export gives RP_EREMOTEACCESS");
	rp_read(a, ra, 0, ro, 0, 10, 13, 0);
	check(wait_op(a, RP_OP_READ, 13, NULL) == 0, "reading a read-only export works");
	rp_write(a, ra, 0, rm, 0, 0, 14, 0);
	check(wait_op(a, RP_OP_WRITE, 14, &comp) == 0 && comp.len == 0, "a zero-length write");
	check(rp_region_unexport(rro, "api-x") == -ENOENT,
	      "unexporting another region's name gives -ENOENT");
	check(rp_region_unexport(rb, "api-x") == 0, "unexport");
	rp_write(a, ra, 0, rm, 0, 10, 15, 0);
	check(wait_op(a, RP_OP_WRITE, 15, NULL) == -RP_EUNEXPORTED,
	      "a write through a withdrawn export gives RP_EUNEXPORTED");
	rp_send(a, NULL, "api-ep", ra, 0, 10, 16);
	check(wait_op(a, RP_OP_SEND, 16, NULL) == -RP_ENOENDPOINT,
	      "sending to an unbound endpoint gives RP_ENOENDPOINT");
	check(rp_endpoint_bind(b, "api-ep", &ep) == 0, "endpoint bind");
	check(rp_endpoint_bind(a, "api-ep", &ep) == -EEXIST, "a taken endpoint name is refused");
	rp_send(a, NULL, "api-ep", ra, 0, 10, 17);
	check(wait_op(a, RP_OP_SEND, 17, NULL) == -RP_ENORECV,
	      "sending with nothing posted gives RP_ENORECV");
	rp_post_recv(ep, rb, 0, 8, 18);
	check(send_when_posted(a, "api-ep", ra, 10, 19) == -RP_ERECVSMALL,
	      "a message larger than the posted buffer gives RP_ERECVSMALL");
	check(rp_endpoint_unbind(ep) == 0, "endpoint unbind");
	check(wait_op(b, RP_OP_RECV, 18, NULL) == -ECANCELED,
	      "a posted receive completes with -ECANCELED at unbind");
	{
		struct rp_export_acl acl = { .comp_mask = 1 };
		const char *bad[] = { "bad/name" };

		check(rp_endpoint_bind_acl(b, "api-epacl", &acl, &ep) == -EOPNOTSUPP,
		      "an endpoint access list with unknown comp_mask bits gives -EOPNOTSUPP");
		acl = (struct rp_export_acl){ .flags = 4 };
		check(rp_endpoint_bind_acl(b, "api-epacl", &acl, &ep) == -EINVAL,
		      "one with unknown flags gives -EINVAL");
		acl = (struct rp_export_acl){ .n_uids = 1 };
		check(rp_endpoint_bind_acl(b, "api-epacl", &acl, &ep) == -EINVAL,
		      "one counting uids it does not hold gives -EINVAL");
		st = rp_endpoint_bind_acl(b, "api-epacl", NULL, &ep);
		if (getenv("RP_TEST_OLD_DAEMON")) {
			/* A daemon before protocol 4 would let everyone send: nothing is bound. */
			check(st == -EOPNOTSUPP,
			      "an older daemon: binding with a list gives -EOPNOTSUPP (%s)",
			      rp_strerror(st));
			check(rp_endpoint_bind(b, "api-epacl", &ep) == 0 &&
				      rp_endpoint_unbind(ep) == 0,
			      "and the name was not bound");
		} else {
			check(st == 0, "binding a private endpoint (%s)", rp_strerror(st));
			check(st || rp_endpoint_unbind(ep) == 0, "and unbinding it");
			acl = (struct rp_export_acl){ .peers = bad, .n_peers = 1 };
			check(rp_endpoint_bind_acl(b, "api-epacl", &acl, &ep) == -EINVAL,
			      "a list naming an invalid peer name gives -EINVAL");
		}
	}
	check(rp_region_alloc(a, 4096, 0x80, &rro) == -EINVAL, "unknown region flags: -EINVAL");
	check(rp_region_alloc(a, 0, 0, &rro) == -EINVAL, "zero length: -EINVAL");
	st = rp_region_alloc(a, 1, RP_REGION_HUGE, &rro);
	check(st == 0 || st == -RP_ENOHUGE, "RP_REGION_HUGE works or says RP_ENOHUGE (%s)",
	      rp_strerror(st));
	if (st == 0)
		rp_region_free(rro);
	check(rp_poll(a, &comp, 1) == 0, "nothing left over on A");
	check(rp_poll(b, &comp, 1) == 0, "nothing left over on B");
	rp_remote_close(rm);
	rp_remote_close(ro);
	check(rp_region_free(ra) == 0, "region free");
}

static int api(void)
{
	struct rp_client *a = connect_or_die(), *b = connect_or_die();
	int e, distinct = 1;

	api_errors(a, b);
	for (e = RP_EBASE; e < RP_EMAX; e++)
		if (!rp_strerror(-e) || !strncmp(rp_strerror(-e), "Unknown", 7) ||
		    (e > RP_EBASE && !strcmp(rp_strerror(-e), rp_strerror(-(e - 1)))))
			distinct = 0;
	check(distinct, "rp_strerror explains every RP_E* code distinctly");
	rp_disconnect(a);
	rp_disconnect(b);
	return failures ? 1 : 0;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Synchronous writes (submit, wait) between two clients of this process. */
static int bench(size_t size, int n)
{
	struct rp_client *a = connect_or_die(), *b = connect_or_die();
	struct rp_region *src, *dst;
	struct rp_remote *rm;
	double *lat = calloc((size_t)n, sizeof(double)), t0, total;
	int i, st;

	if ((st = rp_region_alloc(a, size, 0, &src)) < 0 ||
	    (st = rp_region_alloc(b, size, 0, &dst)) < 0 ||
	    (st = rp_region_export(dst, "bench", RP_ACCESS_REMOTE_WRITE)) < 0 ||
	    (st = rp_remote_open(a, NULL, "bench", &rm)) < 0)
		die("bench: setup", st);
	total = now_us();
	for (i = 0; i < n; i++) {
		t0 = now_us();
		if ((st = rp_write(a, src, 0, rm, 0, size, (uint64_t)i, 0)) < 0 ||
		    (st = wait_op(a, RP_OP_WRITE, (uint64_t)i, NULL)) < 0)
			die("bench: write", st);
		lat[i] = now_us() - t0;
	}
	total = now_us() - total;
	qsort(lat, (size_t)n, sizeof(double), cmp_double);
	printf("size=%zu ops=%d bandwidth=%.2f GB/s rate=%.0f ops/s latency_median=%.1f us "
	       "p99=%.1f us\n",
	       size, n, (double)size * n / total / 1e3, n / total * 1e6, lat[n / 2],
	       lat[(int)(n * 0.99)]);
	free(lat);
	rp_disconnect(a);
	rp_disconnect(b);
	return 0;
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	return (size_t)v;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	bool keep = argc > 1 && !strcmp(argv[argc - 1], "hold");

	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(mode, "pair") && argc == 3)
		return pair(parse_size(argv[2]));
	if (!strcmp(mode, "stress") && argc == 4)
		return stress(atoi(argv[2]), (unsigned)atoi(argv[3]));
	if (!strcmp(mode, "loop") && argc == 4)
		return loop(atoi(argv[2]), parse_size(argv[3]));
	if (!strcmp(mode, "api"))
		return api();
	if (!strcmp(mode, "regions") && argc >= 4)
		return regions(atoi(argv[2]), parse_size(argv[3]), keep);
	if (!strcmp(mode, "conns") && argc >= 3)
		return conns(atoi(argv[2]), keep);
	if (!strcmp(mode, "bench") && argc == 4)
		return bench(parse_size(argv[2]), atoi(argv[3]));
	if (!strcmp(mode, "inflight") && argc == 3)
		return inflight(atoi(argv[2]));
	fprintf(stderr, "usage: see the comment at the top of test-client-io.c\n");
	return 2;
}
