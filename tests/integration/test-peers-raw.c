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
 *   badauth PORT SRC NAME COUNT PROCS
 *       COUNT handshakes from address SRC (127.0.0.x), PROCS processes at
 *       once, each naming NAME and answering the CHALLENGE with an AUTH
 *       whose MAC is garbage (a wrong key). Prints "tries= challenged=
 *       rejected= refused= other=": refused ones were closed before any
 *       message came, rejected ones got a REJECT.
 *   auth PORT SRC NAME PEER KEYFILE
 *       authenticate as NAME to PEER from SRC with the key in KEYFILE; print
 *       "authenticated" (exit 0) or why not (exit 1).
 *   guess PORT NAME PEER KEYFILE EXPORT MAXID
 *       authenticate to PEER as NAME, LOOKUP EXPORT and print "lookup
 *       status=S", then READ one byte of every export id 1..MAXID (with the
 *       incarnation PEER gave in the handshake), as a peer that guesses ids
 *       it was never given would, and print "read id=I status=S" for each.
 *   slowwrite PORT NAME PEER KEYFILE EXPORT
 *       authenticate to PEER as NAME, LOOKUP EXPORT, send a WRITE of the
 *       whole export (bytes 0xab) but only its first half; print "half",
 *       wait for a line on stdin, send the rest 1 KiB every 50 ms, print
 *       "write status=S".
 *   idle PORT SRC COUNT SECONDS
 *       keep COUNT connections from SRC open for SECONDS, never sending a
 *       byte; whichever the daemon closes is opened again (at most every
 *       200 ms). Prints "started" once the first COUNT are open, then
 *       "connects=N" at the end.
 */
#include <arpa/inet.h>
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../daemon/peer/peer_hs.h"
#include "../../daemon/peer/peer_proto.h"

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

/* A connection to 127.0.0.1:@port from address @src (NULL: any), or -1. */
static int try_dial(const char *src, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in me = { .sin_family = AF_INET };
	struct timeval tv = { .tv_sec = 30 };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (src && (inet_pton(AF_INET, src, &me.sin_addr) != 1 ||
		    bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0)) {
		close(fd);
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static int dial_from(const char *src, int port)
{
	int fd = try_dial(src, port);

	if (fd < 0)
		die("connect");
	return fd;
}

static int dial(int port)
{
	return dial_from(NULL, port);
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

static void hello_init(struct pp_hello *m, const char *name, uint64_t inc)
{
	memset(m, 0, sizeof(*m));
	pp_hdr_init(&m->h, PP_HELLO, 0);
	m->magic = PP_MAGIC;
	m->version_min = PP_VERSION_MIN;
	m->version_max = PP_VERSION_MAX;
	m->incarnation = inc;
	randombytes_buf(m->nonce, sizeof(m->nonce));
	snprintf(m->name, sizeof(m->name), "%s", name);
}

/* One whole message, or 0 if the connection ended (or timed out) first. */
static size_t try_recv_msg(int fd, void *buf)
{
	struct pp_hdr *h = buf;
	size_t got = 0, want = sizeof(*h);

	while (got < want) {
		ssize_t n = recv(fd, (char *)buf + got, want - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		got += (size_t)n;
		if (got == sizeof(*h)) {
			if (h->len < sizeof(*h) || h->len > PP_FIXED_MAX)
				return 0;
			want = h->len;
		}
	}
	return got;
}

enum try_result { T_REFUSED, T_REJECTED, T_CHALLENGED_REJECTED, T_OTHER };

/* One handshake with a garbage AUTH. */
static enum try_result bad_auth(const char *src, int port, const char *name, uint64_t inc)
{
	_Alignas(8) char in[PP_FIXED_MAX];
	enum try_result res = T_OTHER;
	struct pp_hello m;
	struct pp_auth a;
	int fd = try_dial(src, port);

	if (fd < 0)
		return T_OTHER;
	hello_init(&m, name, inc);
	send(fd, &m, sizeof(m), MSG_NOSIGNAL);
	if (!try_recv_msg(fd, in)) {
		res = T_REFUSED;
	} else if (((struct pp_hdr *)in)->type == PP_REJECT) {
		res = T_REJECTED;
	} else if (((struct pp_hdr *)in)->type == PP_CHALLENGE) {
		memset(&a, 0, sizeof(a));
		pp_hdr_init(&a.h, PP_AUTH, 0);
		randombytes_buf(a.mac, sizeof(a.mac));
		send(fd, &a, sizeof(a), MSG_NOSIGNAL);
		if (try_recv_msg(fd, in) && ((struct pp_hdr *)in)->type == PP_REJECT)
			res = T_CHALLENGED_REJECTED;
	}
	close(fd);
	return res;
}

static int mode_badauth(char **av)
{
	int port = atoi(av[0]), count = atoi(av[3]), procs = atoi(av[4]), i, k;
	int tally[T_OTHER + 1] = { 0 }, pipes[2];

	if (procs < 1 || pipe(pipes) < 0)
		die("badauth");
	for (k = 0; k < procs; k++) {
		if (fork() == 0) {
			int mine[T_OTHER + 1] = { 0 };

			for (i = k; i < count; i += procs)
				mine[bad_auth(av[1], port, av[2], (uint64_t)i + 1)]++;
			if (write(pipes[1], mine, sizeof(mine)) != sizeof(mine))
				_exit(2);
			_exit(0);
		}
	}
	close(pipes[1]);
	for (k = 0; k < procs; k++) {
		int got[T_OTHER + 1];

		if (read(pipes[0], got, sizeof(got)) != sizeof(got))
			break;
		for (i = 0; i <= T_OTHER; i++)
			tally[i] += got[i];
	}
	while (wait(NULL) > 0)
		;
	printf("tries=%d challenged=%d rejected=%d refused=%d other=%d\n", count,
	       tally[T_CHALLENGED_REJECTED], tally[T_REJECTED] + tally[T_CHALLENGED_REJECTED],
	       tally[T_REFUSED], tally[T_OTHER]);
	return 0;
}

static int mode_idle(int port, const char *src, int count, int seconds)
{
	struct pollfd *pfd = calloc((size_t)count, sizeof(*pfd));
	double end = now_s() + seconds, *since = calloc((size_t)count, sizeof(*since));
	long connects = 0;
	int i;

	if (!pfd || !since)
		die("calloc");
	for (i = 0; i < count; i++) {
		pfd[i].fd = try_dial(src, port);
		pfd[i].events = POLLRDHUP;
		connects += pfd[i].fd >= 0;
	}
	printf("started\n");
	fflush(stdout);
	while (now_s() < end) {
		poll(pfd, (nfds_t)count, 100);
		for (i = 0; i < count; i++) {
			if (pfd[i].fd >= 0 && !(pfd[i].revents & (POLLRDHUP | POLLHUP | POLLERR)))
				continue;
			if (pfd[i].fd >= 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				since[i] = now_s();
			}
			if (now_s() - since[i] < 0.2)
				continue;
			pfd[i].fd = try_dial(src, port);
			pfd[i].revents = 0;
			since[i] = now_s();
			connects += pfd[i].fd >= 0;
		}
	}
	printf("connects=%ld\n", connects);
	return 0;
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

static uint64_t peer_inc; /* the other daemon's incarnation, from the last handshake */

static int try_handshake(int fd, const char *name, const char *peer, const char *keyfile)
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
		n = try_recv_msg(fd, in);
		if (!n) {
			printf("handshake: closed by the daemon\n");
			return -1;
		}
		r = peer_hs_consume(&hs, in, n, out, &n);
		if (n)
			send_all(fd, out, n);
	} while (r == 0);
	if (r < 0) {
		printf("handshake: %s\n", hs.why);
		return -1;
	}
	peer_inc = hs.peer_inc;
	return 0;
}

static void handshake(int fd, const char *name, const char *peer, const char *keyfile)
{
	if (try_handshake(fd, name, peer, keyfile) < 0)
		exit(2);
}

static int mode_auth(char **av)
{
	int fd = try_dial(av[1], atoi(av[0]));

	if (fd < 0) {
		printf("cannot connect: %s\n", strerror(errno));
		return 1;
	}
	if (try_handshake(fd, av[2], av[3], av[4]) < 0)
		return 1;
	printf("authenticated\n");
	return 0;
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

/* The next message of @type, skipping the daemon's PINGs; a payload is read and dropped. */
static void recv_type(int fd, uint16_t type, void *buf)
{
	for (;;) {
		struct pp_hdr *h = buf;
		uint64_t skip;

		recv_msg(fd, buf);
		skip = h->type == PP_READ_R ? ((struct pp_read_r *)buf)->len : 0;
		while (skip) {
			char junk[4096];
			size_t n = skip < sizeof(junk) ? skip : sizeof(junk);

			recv_all(fd, junk, n);
			skip -= n;
		}
		if (h->type == type)
			return;
	}
}

static int mode_guess(char **av)
{
	_Alignas(8) char in[PP_FIXED_MAX];
	int fd = dial(atoi(av[0])), maxid = atoi(av[5]), id;
	struct pp_lookup lk;
	struct pp_read rd;

	handshake(fd, av[1], av[2], av[3]);
	memset(&lk, 0, sizeof(lk));
	pp_hdr_init(&lk.h, PP_LOOKUP, 1);
	snprintf(lk.name, sizeof(lk.name), "%s", av[4]);
	send_all(fd, &lk, sizeof(lk));
	recv_type(fd, PP_LOOKUP_R, in);
	printf("lookup status=%d\n", ((struct pp_lookup_r *)in)->status);
	for (id = 1; id <= maxid; id++) {
		memset(&rd, 0, sizeof(rd));
		pp_hdr_init(&rd.h, PP_READ, 100 + (uint64_t)id);
		rd.export_id = (uint64_t)id;
		rd.export_inc = peer_inc;
		rd.len = 1;
		send_all(fd, &rd, sizeof(rd));
		recv_type(fd, PP_READ_R, in);
		printf("read id=%d status=%d\n", id, ((struct pp_read_r *)in)->status);
	}
	close(fd);
	return 0;
}

static int mode_slowwrite(char **av)
{
	_Alignas(8) char in[PP_FIXED_MAX];
	int fd = dial(atoi(av[0]));
	struct pp_lookup_r e;
	struct pp_write w;
	char buf[4096], line[16];
	uint64_t sent = 0;

	handshake(fd, av[1], av[2], av[3]);
	lookup(fd, av[4], &e);
	memset(&w, 0, sizeof(w));
	pp_hdr_init(&w.h, PP_WRITE, 7);
	w.export_id = e.export_id;
	w.export_inc = e.export_inc;
	w.len = e.len;
	send_all(fd, &w, sizeof(w));
	memset(buf, 0xab, sizeof(buf));
	for (; sent < e.len / 2; sent += sizeof(buf))
		send_all(fd, buf, sizeof(buf) < e.len / 2 - sent ? sizeof(buf) : e.len / 2 - sent);
	sent = e.len / 2;
	printf("half\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	while (sent < e.len) {
		size_t n = 1024 < e.len - sent ? 1024 : e.len - sent;

		send_all(fd, buf, n);
		sent += n;
		poll(NULL, 0, 50);
	}
	recv_type(fd, PP_WRITE_R, in);
	printf("write status=%d\n", ((struct pp_status *)in)->status);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (sodium_init() < 0)
		return 2;
	if (argc == 5 && !strcmp(argv[1], "hello"))
		return mode_hello(atoi(argv[2]), argv[3], atoi(argv[4]));
	if (argc == 9 && !strcmp(argv[1], "flood"))
		return mode_flood(argv + 2);
	if (argc == 7 && !strcmp(argv[1], "badauth"))
		return mode_badauth(argv + 2);
	if (argc == 7 && !strcmp(argv[1], "auth"))
		return mode_auth(argv + 2);
	if (argc == 8 && !strcmp(argv[1], "guess"))
		return mode_guess(argv + 2);
	if (argc == 7 && !strcmp(argv[1], "slowwrite"))
		return mode_slowwrite(argv + 2);
	if (argc == 6 && !strcmp(argv[1], "idle"))
		return mode_idle(atoi(argv[2]), argv[3], atoi(argv[4]), atoi(argv[5]));
	fprintf(stderr,
		"usage: %s hello PORT NAME SECONDS\n"
		"       %s flood PORT NAME PEER KEYFILE EXPORT COUNT SECONDS\n"
		"       %s badauth PORT SRC NAME COUNT PROCS\n"
		"       %s auth PORT SRC NAME PEER KEYFILE\n"
		"       %s guess PORT NAME PEER KEYFILE EXPORT MAXID\n"
		"       %s idle PORT SRC COUNT SECONDS\n",
		argv[0], argv[0], argv[0], argv[0], argv[0], argv[0]);
	return 2;
}
