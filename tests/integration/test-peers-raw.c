/* SPDX-License-Identifier: MIT */
/*
 * A misbehaving peer for test-peers.sh: speaks the peer protocol on a raw
 * TCP socket with the daemon's own codec (peer_proto.c, peer_hs.c). Modes:
 *   hello PORT NAME SECONDS
 *       every second, open one more connection to 127.0.0.1:PORT and send a
 *       well-formed HELLO naming NAME (a configured peer of that daemon, but
 *       we have no key); keep them all open, never answer; print "started"
 *       after the first one, exit after SECONDS.
 *   flood PORT NAME PEER KEYFILE EXPORT COUNT SECONDS
 *       authenticate to PEER as NAME with the key in KEYFILE, LOOKUP export
 *       EXPORT, print "ready", then send up to COUNT READs of the whole
 *       export without ever reading a reply again, for at most SECONDS; print
 *       "sent N", then wait (still not reading) until the daemon drops the
 *       connection: print "dropped" (exit 0) or "still open" (exit 1).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../daemon/peer_hs.h"
#include "../../daemon/peer_proto.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "%s: %s\n", what, strerror(errno));
	exit(2);
}

static int dial(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("send");
		p += n;
		len -= (size_t)n;
	}
}

static void recv_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "recv: connection closed\n");
			exit(2);
		}
		p += n;
		len -= (size_t)n;
	}
}

/* One whole message (no payload) into @buf (PP_FIXED_MAX bytes). */
static size_t recv_msg(int fd, void *buf)
{
	struct pp_hdr *h = buf;

	recv_all(fd, buf, sizeof(*h));
	if (h->len < sizeof(*h) || h->len > PP_FIXED_MAX) {
		fprintf(stderr, "bad message length %u\n", h->len);
		exit(2);
	}
	recv_all(fd, (char *)buf + sizeof(*h), h->len - sizeof(*h));
	return h->len;
}

static int mode_hello(int port, const char *name, int seconds)
{
	double end = now_s() + seconds;
	int i;

	for (i = 0; now_s() < end; i++) {
		struct pp_hello m;
		int fd = dial(port);

		/* Never closed: the daemon ends them (handshake timeout). */
		memset(&m, 0, sizeof(m));
		pp_hdr_init(&m.h, PP_HELLO, 0);
		m.magic = PP_MAGIC;
		m.version_min = PP_VERSION_MIN;
		m.version_max = PP_VERSION_MAX;
		m.incarnation = (uint64_t)i + 1;
		randombytes_buf(m.nonce, sizeof(m.nonce));
		snprintf(m.name, sizeof(m.name), "%s", name);
		send(fd, &m, sizeof(m), MSG_NOSIGNAL);
		if (!i) {
			printf("started\n");
			fflush(stdout);
		}
		usleep(1000000);
	}
	return 0;
}

static void read_key(const char *path, struct peer_conf *c)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		die(path);
	n = fread(c->key, 1, sizeof(c->key), f);
	fclose(f);
	if (n && c->key[n - 1] == '\n')
		n--;
	c->key_len = n;
}

static void handshake(int fd, const char *name, const char *peer, const char *keyfile)
{
	_Alignas(8) char in[PP_FIXED_MAX], out[PP_FIXED_MAX];
	struct peer_conf c = { .name = (char *)peer };
	struct peer_hs hs;
	struct pp_hello hello;
	size_t n;
	int r;

	read_key(keyfile, &c);
	peer_hs_init_initiator(&hs, name, 0x7e57, &c, &hello);
	send_all(fd, &hello, sizeof(hello));
	do {
		n = recv_msg(fd, in);
		r = peer_hs_consume(&hs, in, n, out, &n);
		if (n)
			send_all(fd, out, n);
	} while (r == 0);
	if (r < 0) {
		fprintf(stderr, "handshake: %s\n", hs.why);
		exit(2);
	}
}

/* LOOKUP @name: its reply, skipping the daemon's PINGs. */
static void lookup(int fd, const char *name, struct pp_lookup_r *ret)
{
	_Alignas(8) char in[PP_FIXED_MAX];
	struct pp_lookup m;

	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, PP_LOOKUP, 1);
	snprintf(m.name, sizeof(m.name), "%s", name);
	send_all(fd, &m, sizeof(m));
	for (;;) {
		recv_msg(fd, in);
		if (((struct pp_hdr *)in)->type == PP_LOOKUP_R)
			break;
	}
	memcpy(ret, in, sizeof(*ret));
	if (ret->status) {
		fprintf(stderr, "lookup %s: status %d\n", name, ret->status);
		exit(2);
	}
}

/* Send up to @count READs without reading; stop early at @end or when the socket is full. */
static long flood(int fd, const struct pp_lookup_r *e, long count, double end)
{
	struct pp_read m;
	size_t off = 0;
	long sent = 0;

	memset(&m, 0, sizeof(m));
	m.export_id = e->export_id;
	m.export_inc = e->export_inc;
	m.len = e->len;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	while (sent < count && now_s() < end) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t n;

		if (!off)
			pp_hdr_init(&m.h, PP_READ, 100 + (uint64_t)sent);
		n = send(fd, (char *)&m + off, sizeof(m) - off, MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			if (off == sizeof(m)) {
				off = 0;
				sent++;
			}
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			break; /* dropped by the daemon */
		poll(&pfd, 1, 100);
	}
	return sent;
}

static int mode_flood(char **av)
{
	int port = atoi(av[0]);
	long count = atol(av[5]);
	int seconds = atoi(av[6]);
	double t0;
	struct pp_lookup_r e;
	struct pollfd pfd;
	long sent;
	int fd = dial(port);

	handshake(fd, av[1], av[2], av[3]);
	lookup(fd, av[4], &e);
	printf("ready\n");
	fflush(stdout);
	t0 = now_s();
	sent = flood(fd, &e, count, t0 + seconds);
	printf("sent %ld in %.1f s\n", sent, now_s() - t0);
	fflush(stdout);
	/* Still never reading: only a reset or hang-up from the daemon ends this. */
	pfd.fd = fd;
	pfd.events = POLLRDHUP;
	while (now_s() < t0 + 3 * seconds) {
		pfd.revents = 0;
		if (poll(&pfd, 1, 100) > 0 && pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) {
			printf("dropped after %.1f s\n", now_s() - t0);
			return 0;
		}
	}
	printf("still open\n");
	return 1;
}

int main(int argc, char **argv)
{
	if (sodium_init() < 0)
		return 2;
	if (argc == 5 && !strcmp(argv[1], "hello"))
		return mode_hello(atoi(argv[2]), argv[3], atoi(argv[4]));
	if (argc == 9 && !strcmp(argv[1], "flood"))
		return mode_flood(argv + 2);
	fprintf(stderr, "usage: %s hello PORT NAME SECONDS\n"
			"       %s flood PORT NAME PEER KEYFILE EXPORT COUNT SECONDS\n",
		argv[0], argv[0]);
	return 2;
}
