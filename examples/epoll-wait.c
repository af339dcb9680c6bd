/* SPDX-License-Identifier: MIT */
/*
 * Waiting for librdmaproxy completions in a plain epoll loop.
 *
 * The rule: call rp_poll() until it returns 0 (that arms the doorbell), then
 * wait for rp_fd() to become readable, then rp_poll() again. Here one client
 * exports a region and writes into it through its own remote handle with
 * RP_NOTIFY, so both the write's completion and the notification arrive.
 *
 *   epoll-wait [SOCKET]      (default: $RDMAPROXY_SOCKET, then the system socket)
 */
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <rdmaproxy.h>

static int fail(const char *what, int err)
{
	fprintf(stderr, "epoll-wait: %s: %s\n", what, rp_strerror(err));
	return 1;
}

int main(int argc, char **argv)
{
	struct rp_client *c;
	struct rp_region *src, *dst;
	struct rp_remote *rm;
	struct rp_completion comp[8];
	struct epoll_event ev = { .events = EPOLLIN }, got;
	char name[64];
	int r, ep, i, want = 2;

	r = rp_connect(argc > 1 ? argv[1] : NULL, &c);
	if (r < 0)
		return fail("connect", r);
	snprintf(name, sizeof(name), "epoll-example-%d", (int)getpid());
	if ((r = rp_region_alloc(c, 4096, 0, &src)) < 0 ||
	    (r = rp_region_alloc(c, 4096, 0, &dst)) < 0 ||
	    (r = rp_region_export(dst, name, RP_ACCESS_REMOTE_WRITE)) < 0 ||
	    (r = rp_remote_open(c, NULL, name, &rm)) < 0)
		return fail("setup", r);
	strcpy(rp_region_ptr(src), "hello through epoll");
	ep = epoll_create1(EPOLL_CLOEXEC);
	ev.data.fd = rp_fd(c);
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, rp_fd(c), &ev) < 0)
		return fail("epoll", -1);
	r = rp_write_imm(c, src, 0, rm, 0, 64, 42, RP_NOTIFY, 7);
	if (r < 0)
		return fail("write", r);
	while (want > 0) {
		r = rp_poll(c, comp, 8);
		if (r < 0)
			return fail("poll", r);
		for (i = 0; i < r; i++, want--)
			printf("completion: op %u cookie %llu status %d len %u imm %u\n",
			       comp[i].op, (unsigned long long)comp[i].cookie, comp[i].status,
			       comp[i].len, comp[i].imm);
		if (r == 0 && epoll_wait(ep, &got, 1, 5000) != 1)
			return fail("epoll_wait timed out", -1);
	}
	printf("destination now holds: %s\n", (char *)rp_region_ptr(dst));
	r = strcmp(rp_region_ptr(dst), "hello through epoll") ? 1 : 0;
	close(ep);
	rp_disconnect(c);
	return r;
}
