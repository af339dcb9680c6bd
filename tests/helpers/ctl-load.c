/* SPDX-License-Identifier: MIT */
/*
 * Gives rdmaproxyctl something to list: one client with NREGIONS regions of
 * SIZE bytes (the first exported three times, every other one once), a few
 * writes of which exactly one fails (remote bounds), and NCONNS further idle
 * connections. Prints "ready" and holds everything until stdin reaches EOF.
 *
 *   ctl-load NREGIONS SIZE NCONNS      (socket: RDMAPROXY_SOCKET)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaproxy.h"

#define WRITES 5

static void die(const char *what, int err)
{
	fprintf(stderr, "ctl-load: %s: %s\n", what, rp_strerror(err));
	exit(1);
}

static void export_all(struct rp_region **v, int n)
{
	static const unsigned acc[] = { RP_ACCESS_REMOTE_READ, RP_ACCESS_REMOTE_WRITE,
					RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE };
	char name[RP_NAME_LEN + 1];
	int i, r;

	for (i = 0; i < n; i += 2) {
		snprintf(name, sizeof(name), "ctl-exp-%d", i);
		r = rp_region_export(v[i], name, acc[2]);
		if (r < 0)
			die("export", r);
	}
	for (i = 0; i < 2 && n; i++) {
		snprintf(name, sizeof(name), "ctl-alias-%d", i);
		r = rp_region_export(v[0], name, acc[i]);
		if (r < 0)
			die("export alias", r);
	}
}

/* WRITES writes into export 0, the last one past its end: one error. */
static void traffic(struct rp_client *c, struct rp_region *src, size_t size)
{
	struct rp_completion comp[WRITES];
	struct rp_remote *rm;
	int i, got = 0, r;

	r = rp_remote_open(c, NULL, "ctl-exp-0", &rm);
	if (r < 0)
		die("remote open", r);
	for (i = 0; i < WRITES; i++) {
		r = rp_write(c, src, 0, rm, i == WRITES - 1 ? size - 8 : 0, 4096, (uint64_t)i, 0);
		if (r < 0)
			die("write", r);
	}
	while (got < WRITES) {
		r = rp_wait(c, comp, WRITES, 10000);
		if (r <= 0)
			die("wait", r ? r : -ETIMEDOUT);
		got += r;
	}
}

int main(int argc, char **argv)
{
	struct rp_client *c, **extra;
	struct rp_region **v;
	int n, conns, i, r;
	size_t size;

	if (argc != 4) {
		fprintf(stderr, "usage: ctl-load NREGIONS SIZE NCONNS\n");
		return 2;
	}
	n = atoi(argv[1]);
	size = strtoul(argv[2], NULL, 0);
	conns = atoi(argv[3]);
	if (n < 2 || size < 8192)
		return 2;
	r = rp_connect(NULL, &c);
	if (r < 0)
		die("connect", r);
	v = calloc((size_t)n, sizeof(*v));
	for (i = 0; i < n; i++) {
		r = rp_region_alloc(c, size, 0, &v[i]);
		if (r < 0)
			die("region", r);
	}
	export_all(v, n);
	traffic(c, v[1], size);
	extra = calloc((size_t)conns + 1, sizeof(*extra));
	for (i = 0; i < conns; i++) {
		r = rp_connect(NULL, &extra[i]);
		if (r < 0)
			die("extra connection", r);
	}
	printf("ready\n");
	fflush(stdout);
	while (getchar() != EOF)
		;
	for (i = 0; i < conns; i++)
		rp_disconnect(extra[i]);
	rp_disconnect(c); /* frees the regions too */
	free(extra);
	free(v);
	return 0;
}
