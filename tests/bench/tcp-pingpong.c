/* SPDX-License-Identifier: MIT */
/*
 * tcp-pingpong: what a synchronous small message costs over TCP loopback,
 * the baseline for the daemons' tcp peer path. The parent connects to a
 * child over 127.0.0.1 (TCP_NODELAY on both ends); each iteration sends SIZE
 * bytes and waits for the SIZE-byte answer.
 *
 *   tcp-pingpong [-n ITERS] [-w WARMUP] [-s SIZE] [-y YIELD_EVERY] [--block] [--json]
 *
 * By default both ends SPIN: recv(MSG_DONTWAIT) in a loop (pausing, and
 * yielding every YIELD_EVERY empty tries, default 64), so no one sleeps and
 * the round trip is the kernel's TCP path and nothing else (what qperf
 * tcp_lat gets when both sides poll). --block uses blocking recv() instead.
 * Reports the round trip and one way (half of it), in microseconds.
 */
#include "bench-util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long yield_every = 64;
static bool block;

static int xfer_all(int fd, char *buf, size_t n, bool out)
{
	unsigned long spins = 0;
	size_t done = 0;
	ssize_t r;

	while (done < n) {
		if (out)
			r = send(fd, buf + done, n - done, MSG_NOSIGNAL);
		else
			r = recv(fd, buf + done, n - done, block ? 0 : MSG_DONTWAIT);
		if (r > 0) {
			done += (size_t)r;
			continue;
		}
		if (r == 0)
			return -EPIPE;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			bench_spin(&spins, yield_every);
		else if (errno != EINTR)
			return -errno;
	}
	return 0;
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void serve(int lfd, size_t size, unsigned long total)
{
	char *buf = malloc(size);
	unsigned long i;
	int fd = accept(lfd, NULL, NULL);

	close(lfd);
	if (fd < 0 || !buf)
		_exit(1);
	nodelay(fd);
	for (i = 0; i < total; i++)
		if (xfer_all(fd, buf, size, false) < 0 || xfer_all(fd, buf, size, true) < 0)
			_exit(1);
	_exit(0);
}

static int usage(void)
{
	fputs("usage: tcp-pingpong [-n ITERS] [-w WARMUP] [-s SIZE] [-y YIELD_EVERY] [--block] "
	      "[--json]\n",
	      stderr);
	return 2;
}

int main(int argc, char **argv)
{
	unsigned long iters = 20000, warmup = 2000, size = 8, i;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t salen = sizeof(sa);
	struct bench_stats rtt, oneway;
	bool json = false;
	double *s, t0;
	char *buf;
	int lfd, fd, st, a;
	pid_t pid;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--json"))
			json = true;
		else if (!strcmp(argv[a], "--block"))
			block = true;
		else if (a + 1 == argc)
			return usage();
		else if (!strcmp(argv[a], "-n") &&
			 bench_parse_ulong(argv[a + 1], 1, 100000000, &iters))
			a++;
		else if (!strcmp(argv[a], "-w") &&
			 bench_parse_ulong(argv[a + 1], 0, 100000000, &warmup))
			a++;
		else if (!strcmp(argv[a], "-s") &&
			 bench_parse_ulong(argv[a + 1], 1, 1ul << 20, &size))
			a++;
		else if (!strcmp(argv[a], "-y") &&
			 bench_parse_ulong(argv[a + 1], 0, 1ul << 30, &yield_every))
			a++;
		else
			return usage();
	}
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &salen) < 0) {
		perror("tcp-pingpong: listen");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0)
		serve(lfd, size, iters + warmup);
	close(lfd);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	buf = calloc(1, size);
	s = malloc(iters * sizeof(*s));
	if (fd < 0 || !buf || !s || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("tcp-pingpong: connect");
		kill(pid, SIGKILL);
		return 1;
	}
	nodelay(fd);
	for (i = 0; i < iters + warmup; i++) {
		t0 = bench_now_us();
		if (xfer_all(fd, buf, size, true) < 0 || xfer_all(fd, buf, size, false) < 0) {
			fputs("tcp-pingpong: the connection broke\n", stderr);
			kill(pid, SIGKILL);
			return 1;
		}
		if (i >= warmup)
			s[i - warmup] = bench_now_us() - t0;
	}
	close(fd);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fputs("tcp-pingpong: the server side failed\n", stderr);
		return 1;
	}
	bench_stats(s, iters, &rtt);
	for (i = 0; i < iters; i++)
		s[i] /= 2;
	bench_stats(s, iters, &oneway);
	if (json) {
		printf("{\"tool\":\"tcp-pingpong\",\"iterations\":%lu,\"warmup\":%lu,\"size\":%lu,"
		       "\"wait\":\"%s\",",
		       iters, warmup, size,
		       block ? "blocking recv" : "spinning recv(MSG_DONTWAIT)");
		bench_print_stats("rtt_us", &rtt, true);
		putchar(',');
		bench_print_stats("one_way_us", &oneway, true);
		puts("}");
	} else {
		printf("# tcp-pingpong: %lu round trips of %lu B over TCP loopback, %s\n", iters,
		       size, block ? "blocking recv" : "both sides spinning on recv");
		bench_print_stats("round trip", &rtt, false);
		bench_print_stats("one way", &oneway, false);
	}
	free(s);
	free(buf);
	return 0;
}
