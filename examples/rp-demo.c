/* SPDX-License-Identifier: MIT */
/*
 * rp-demo: two local applications moving data through rdmaproxyd.
 *
 * Process B allocates a 4 MiB region, exports it as "demo" and binds the
 * message endpoint "demo". Exports are private to their user: on one node
 * A runs as the same user and may open it; across daemons B's export names
 * A's node, the only peer allowed in. Process A allocates 4 MiB, fills it with a
 * pattern, opens "demo" on its own node and writes the whole region into
 * B's with RP_NOTIFY; B is notified and checksums what landed. A reads it
 * back and checksums again, then sends B a message. Checksums are FNV-1a
 * (64 bit). Exit status 0 only if every checksum matches and every
 * completion is OK.
 *
 *   rp-demo [SOCKET]      (default: $RDMAPROXY_SOCKET, then the system socket)
 *   rp-demo SOCKET PEER PEER_SOCKET
 *                         B runs on the daemon at PEER_SOCKET, a configured peer
 *                         named PEER of the daemon at SOCKET: the data crosses
 *                         from one daemon to the other over the peer link.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdmaproxy.h>

#define SIZE (4u << 20)
#define NAME "demo"

static const char *sock;
static const char *peer;	     /* NULL: both on one daemon */
static const char *b_sock;	     /* B's daemon */
static char a_node[RP_NAME_LEN + 1]; /* with a peer: A's node, which B lets in */

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static const char *op_name(unsigned op)
{
	static const char *const names[] = { "?", "WRITE", "READ", "SEND", "RECV", "NOTIFY" };

	return op < 6 ? names[op] : "?";
}

static void show(char who, const struct rp_completion *c, double us)
{
	printf("[%c] completion: op=%-6s cookie=%" PRIu64 " status=%s len=%u", who, op_name(c->op),
	       c->cookie, c->status ? rp_strerror(c->status) : "OK", c->len);
	if (c->op == RP_OP_NOTIFY)
		printf(" imm=0x%x offset=%" PRIu64, c->imm, c->offset);
	if (us >= 0)
		printf(" time=%.1f us (%.2f GB/s)", us, c->len / us / 1e3);
	printf("\n");
	fflush(stdout);
}

static int wait_one(struct rp_client *c, char who, struct rp_completion *out, double t0)
{
	int n = rp_wait(c, out, 1, 10000);

	if (n != 1) {
		printf("[%c] no completion: %s\n", who, n ? rp_strerror(n) : "timed out");
		return -1;
	}
	show(who, out, t0 >= 0 ? now_us() - t0 : -1);
	return out->status;
}

static void die(char who, const char *what, int err)
{
	printf("[%c] %s: %s\n", who, what, rp_strerror(err));
	exit(1);
}

static int run_b(int to_a, int from_a)
{
	const char *peers[1] = { a_node };
	struct rp_export_acl acl = { .peers = peers, .n_peers = 1 };
	unsigned access = RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE;
	struct rp_client *c;
	struct rp_region *r, *msg;
	struct rp_endpoint *ep;
	struct rp_completion comp;
	uint64_t sum;
	int e, bad = 0;
	char ok = 1;

	if ((e = rp_connect(b_sock, &c)) < 0)
		die('B', "connect", e);
	if ((e = rp_region_alloc(c, SIZE, 0, &r)) < 0 ||
	    (e = rp_region_alloc(c, 4096, 0, &msg)) < 0)
		die('B', "region", e);
	if ((e = rp_region_export_acl(r, NAME, access, peer ? &acl : NULL)) < 0 ||
	    (e = rp_endpoint_bind(c, NAME, &ep)) < 0 ||
	    (e = rp_post_recv(ep, msg, 0, 4096, 500)) < 0)
		die('B', "export/bind/post", e);
	printf("[B] node %s: exported 4 MiB as \"%s\" (open to %s%s), endpoint \"%s\" has a "
	       "receive posted\n",
	       rp_node_name(c), NAME, peer ? "node " : "this user", peer ? a_node : "", NAME);
	fflush(stdout);
	if (write(to_a, &ok, 1) != 1)
		return 1;
	bad |= wait_one(c, 'B', &comp, -1) != 0 || comp.op != RP_OP_NOTIFY;
	sum = fnv1a(rp_region_ptr(r), SIZE);
	printf("[B] checksum of what landed: %016" PRIx64 "\n", sum);
	fflush(stdout);
	if (write(to_a, &sum, sizeof(sum)) != sizeof(sum))
		return 1;
	bad |= wait_one(c, 'B', &comp, -1) != 0 || comp.op != RP_OP_RECV;
	printf("[B] message: \"%.*s\"\n", (int)comp.len, (char *)rp_region_ptr(msg));
	fflush(stdout);
	if (read(from_a, &ok, 1) != 1) /* A is done with our export */
		bad = 1;
	rp_disconnect(c);
	return bad;
}

static int run_a(int from_b, int to_b)
{
	struct rp_client *c;
	struct rp_region *r, *back;
	struct rp_remote *rm;
	struct rp_completion comp;
	uint64_t mine, theirs = 0, again;
	unsigned i;
	int e, bad = 0;
	char ok;
	double t0;

	if ((e = rp_connect(sock, &c)) < 0)
		die('A', "connect", e);
	if ((e = rp_region_alloc(c, SIZE, 0, &r)) < 0 ||
	    (e = rp_region_alloc(c, SIZE, 0, &back)) < 0)
		die('A', "region", e);
	for (i = 0; i < SIZE / 4; i++)
		((uint32_t *)rp_region_ptr(r))[i] = i * 2654435761u;
	mine = fnv1a(rp_region_ptr(r), SIZE);
	printf("[A] filled 4 MiB, checksum %016" PRIx64 "\n", mine);
	if (read(from_b, &ok, 1) != 1)
		die('A', "B did not start", -1);
	if ((e = rp_remote_open(c, peer ? peer : rp_node_name(c), NAME, &rm)) < 0)
		die('A', "remote open", e);
	printf("[A] opened \"%s\" on node %s: %zu bytes\n", NAME, peer ? peer : rp_node_name(c),
	       rp_remote_len(rm));
	t0 = now_us();
	if ((e = rp_write_imm(c, r, 0, rm, 0, SIZE, 1, RP_NOTIFY, 0xd3e0)) < 0)
		die('A', "write", e);
	bad |= wait_one(c, 'A', &comp, t0) != 0;
	if (read(from_b, &theirs, sizeof(theirs)) != sizeof(theirs))
		bad = 1;
	t0 = now_us();
	if ((e = rp_read(c, back, 0, rm, 0, SIZE, 2, 0)) < 0)
		die('A', "read", e);
	bad |= wait_one(c, 'A', &comp, t0) != 0;
	again = fnv1a(rp_region_ptr(back), SIZE);
	printf("[A] checksum read back: %016" PRIx64 "\n", again);
	snprintf(rp_region_ptr(back), 128, "hello from A, checksum %016" PRIx64, mine);
	if ((e = rp_send(c, peer, NAME, back, 0, strlen(rp_region_ptr(back)), 3)) < 0)
		die('A', "send", e);
	bad |= wait_one(c, 'A', &comp, -1) != 0;
	rp_remote_close(rm);
	if (write(to_b, &ok, 1) != 1)
		bad = 1;
	printf("[A] written %016" PRIx64 "  landed %016" PRIx64 "  read back %016" PRIx64 "  %s\n",
	       mine, theirs, again, mine == theirs && mine == again ? "MATCH" : "MISMATCH");
	rp_disconnect(c);
	return bad || mine != theirs || mine != again;
}

int main(int argc, char **argv)
{
	int ab[2], ba[2], st, ra;
	pid_t pid;

	sock = argc > 1 ? argv[1] : NULL;
	b_sock = sock;
	if (argc == 4) {
		peer = argv[2];
		b_sock = argv[3];
	} else if (argc > 2) {
		fprintf(stderr, "usage: rp-demo [SOCKET [PEER PEER_SOCKET]]\n");
		return 2;
	}
	if (peer) {
		/* B's export names A's node: learn it from A's daemon. */
		struct rp_client *c;
		int e = rp_connect(sock, &c);

		if (e < 0)
			die('A', "connect", e);
		snprintf(a_node, sizeof(a_node), "%s", rp_node_name(c));
		rp_disconnect(c);
	}
	if (pipe(ab) < 0 || pipe(ba) < 0)
		return 1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(ab[1]);
		close(ba[0]);
		_exit(run_b(ba[1], ab[0]));
	}
	close(ab[0]);
	close(ba[1]);
	ra = run_a(ba[0], ab[1]);
	close(ab[1]);
	waitpid(pid, &st, 0);
	ra |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	printf("demo %s\n", ra ? "FAILED" : "OK: two clients moved 4 MiB through rdmaproxyd");
	return ra;
}
