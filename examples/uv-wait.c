/* SPDX-License-Identifier: MIT */
/*
 * Waiting for librdmaproxy completions in a libuv loop: rp_fd() joins the
 * loop through uv_poll_t; the callback drains with rp_poll() until it
 * returns 0, which re-arms the doorbell.
 *
 *   uv-wait [SOCKET]
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include <rdmaproxy.h>

struct app {
	struct rp_client *c;
	uv_poll_t poll;
	int want;
	int err;
};

static void on_completions(uv_poll_t *p, int status, int events)
{
	struct app *a = p->data;
	struct rp_completion comp[8];
	int n, i;

	while ((n = rp_poll(a->c, comp, 8)) > 0)
		for (i = 0; i < n; i++, a->want--) {
			printf("completion: op %u cookie %llu status %d len %u\n", comp[i].op,
			       (unsigned long long)comp[i].cookie, comp[i].status, comp[i].len);
			a->err |= comp[i].status != 0;
		}
	if (n < 0 || a->want <= 0) {
		a->err |= n < 0;
		uv_close((uv_handle_t *)p, NULL);
	}
}

static void on_timeout(uv_timer_t *t)
{
	struct app *a = t->data;

	fprintf(stderr, "uv-wait: timed out\n");
	a->err = 1;
	uv_stop(t->loop);
}

int main(int argc, char **argv)
{
	struct app a = { .want = 2 };
	struct rp_region *src, *dst;
	struct rp_remote *rm;
	uv_timer_t timer;
	char name[64];
	int r;

	r = rp_connect(argc > 1 ? argv[1] : NULL, &a.c);
	if (r < 0) {
		fprintf(stderr, "uv-wait: connect: %s\n", rp_strerror(r));
		return 1;
	}
	snprintf(name, sizeof(name), "uv-example-%d", (int)getpid());
	if ((r = rp_region_alloc(a.c, 4096, 0, &src)) < 0 ||
	    (r = rp_region_alloc(a.c, 4096, 0, &dst)) < 0 ||
	    (r = rp_region_export(dst, name, RP_ACCESS_REMOTE_READ)) < 0 ||
	    (r = rp_remote_open(a.c, NULL, name, &rm)) < 0) {
		fprintf(stderr, "uv-wait: setup: %s\n", rp_strerror(r));
		return 1;
	}
	strcpy(rp_region_ptr(dst), "read through libuv");
	uv_poll_init(uv_default_loop(), &a.poll, rp_fd(a.c));
	a.poll.data = &a;
	uv_poll_start(&a.poll, UV_READABLE, on_completions);
	uv_timer_init(uv_default_loop(), &timer);
	timer.data = &a;
	uv_timer_start(&timer, on_timeout, 5000, 0);
	uv_unref((uv_handle_t *)&timer);
	rp_read(a.c, src, 0, rm, 0, 64, 1, 0);
	rp_read(a.c, src, 64, rm, 0, 64, 2, 0);
	/* Drain once first: completions that are already there raise no doorbell. */
	on_completions(&a.poll, 0, UV_READABLE);
	uv_run(uv_default_loop(), UV_RUN_DEFAULT);
	printf("read back: %s\n", (char *)rp_region_ptr(src) + 64);
	r = a.err || a.want > 0 || strcmp((char *)rp_region_ptr(src) + 64, "read through libuv");
	uv_close((uv_handle_t *)&timer, NULL);
	uv_run(uv_default_loop(), UV_RUN_DEFAULT);
	uv_loop_close(uv_default_loop());
	rp_disconnect(a.c);
	return r;
}
