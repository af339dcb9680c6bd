/* SPDX-License-Identifier: MIT */
/*
 * idle-clients: hold N idle connections to rdmaproxyd, for measuring what
 * idle clients cost the daemon (CPU, memory).
 *
 *   idle-clients N [SOCKET]
 *
 * Connects N clients one after the other (each completes its HELLO before
 * the next starts, so the daemon's pre-HELLO limit is not what is measured),
 * prints "ready N" on stdout and then does nothing until its standard input
 * reaches end of file or it gets SIGTERM; then it disconnects them all.
 * SOCKET defaults to $RDMAPROXY_SOCKET. Exit status 1 if a connect fails
 * (with the reason and how many were connected on stderr).
 */
#include "rdmaproxy.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_term };
	struct rp_client **c;
	char *end, buf[64];
	long n, i, k;
	int r = 0;

	if (argc < 2 || argc > 3) {
		fputs("usage: idle-clients N [SOCKET]\n", stderr);
		return 2;
	}
	n = strtol(argv[1], &end, 10);
	if (*end || n < 0 || n > 100000) {
		fputs("idle-clients: bad N\n", stderr);
		return 2;
	}
	c = calloc((size_t)n + 1, sizeof(*c));
	if (!c)
		return 1;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	for (i = 0; i < n; i++) {
		r = rp_connect(argc > 2 ? argv[2] : NULL, &c[i]);
		if (r < 0) {
			fprintf(stderr, "idle-clients: connect %ld of %ld: %s\n", i + 1, n,
				rp_strerror(r));
			break;
		}
	}
	if (r == 0) {
		printf("ready %ld\n", n);
		fflush(stdout);
		/* Idle: block on stdin until EOF or a signal. */
		while (!stop && (k = read(0, buf, sizeof(buf))) != 0)
			if (k < 0 && errno != EINTR)
				break;
	}
	for (k = 0; k < i; k++)
		rp_disconnect(c[k]);
	free(c);
	return r < 0;
}
