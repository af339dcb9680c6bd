/* SPDX-License-Identifier: MIT */
/* rdmaproxy-perf: clocks, checksums, patterns and the control channel. */
#include "perf.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char last_error[256];

void perf_set_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
}

const char *perf_last_error(void)
{
	return last_error[0] ? last_error : "unknown error";
}

double perf_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

uint64_t perf_fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

/* xorshift64, eight bytes at a time: fast enough for 64 MiB regions. */
void perf_fill(void *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(b + i, &x, n - i < 8 ? n - i : 8);
	}
}

int perf_write_full(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	ssize_t k;

	while (n) {
		k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EPIPE;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int perf_read_full(int fd, void *buf, size_t n)
{
	char *p = buf;
	ssize_t k;

	while (n) {
		k = read(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EPIPE;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int perf_export(struct rp_region *r, const char *name, unsigned access, const char *peer)
{
	const char *peers[1] = { peer };
	struct rp_export_acl acl = { .peers = peers, .n_peers = 1 };

	return rp_region_export_acl(r, name, access, peer ? &acl : NULL);
}

int perf_send_msg(int fd, struct perf_msg *m)
{
	return perf_write_full(fd, m, sizeof(*m));
}

/* Receive one message; a reply of another type than @want is a protocol error. */
int perf_recv_msg(int fd, struct perf_msg *m, uint32_t want)
{
	int r = perf_read_full(fd, m, sizeof(*m));

	if (r < 0)
		return r;
	m->node[RP_NAME_LEN] = m->c_name[RP_NAME_LEN] = m->s_name[RP_NAME_LEN] = '\0';
	if (want && m->type != want)
		return -EPROTO;
	return 0;
}

/* Has the other end hung up or sent something? Never blocks. */
bool perf_fd_closed(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}

const char *perf_op_name(enum perf_op op)
{
	static const char *const names[] = { "write", "read", "send" };

	return op <= PERF_SEND ? names[op] : "?";
}

/* One slot per outstanding op, as long as the slot area stays under the cap. */
size_t perf_nslots(size_t size, int depth)
{
	size_t n = size ? PERF_SLOT_BYTES / size : 1;

	if (n > (size_t)depth)
		n = (size_t)depth;
	return n ? n : 1;
}

void perf_set_name(char *dst, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, RP_NAME_LEN + 1, fmt, ap);
	va_end(ap);
}
