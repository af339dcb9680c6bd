/* SPDX-License-Identifier: MIT */
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

char *fmt_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)n;
	unsigned i = 0;

	if (n < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)n);
		return buf;
	}
	v /= 1024;
	while (v >= 1024 && i + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, "%.1f %s", v, units[i]);
	return buf;
}

/* Read every time: an operator may change it under a running daemon (prlimit). */
static long nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur > INT_MAX)
		return INT_MAX;
	return (long)rl.rlim_cur;
}

bool fd_reserved(int fd, enum fd_use use)
{
	long limit = nofile(), r = limit / 4;

	if (r < FD_RESERVE_MIN)
		r = FD_RESERVE_MIN;
	if (r > limit / 2)
		r = limit / 2;
	if (use == FD_CLIENT)
		r /= 4;
	return fd >= limit - r;
}

bool fd_reserve_reached(int any_fd, enum fd_use use)
{
	int fd = fcntl(any_fd, F_DUPFD_CLOEXEC, 0);
	bool r;

	if (fd < 0)
		return errno == EMFILE || errno == ENFILE;
	r = fd_reserved(fd, use);
	close(fd);
	return r;
}
