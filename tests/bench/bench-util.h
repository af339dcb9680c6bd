/* SPDX-License-Identifier: MIT */
/*
 * Shared by the host benchmark's helpers (tests/bench): a clock, a bounded
 * spin, and the summary of latency samples they all print the same way.
 */
#ifndef RP_BENCH_UTIL_H
#define RP_BENCH_UTIL_H

#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static inline void bench_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/*
 * One step of a wait loop: pause, and every @yield_every steps give the CPU
 * away (0: never). On an idle machine the partner answers long before the
 * first yield; on a busy one a pure spin can burn a whole scheduler quantum
 * waiting for a partner that is not running.
 */
static inline void bench_spin(unsigned long *spins, unsigned long yield_every)
{
	bench_pause();
	if (yield_every && ++*spins % yield_every == 0)
		sched_yield();
}

static int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct bench_stats {
	double min, median, p99, max, avg;
};

/* Sorts @v in place. */
static inline void bench_stats(double *v, size_t n, struct bench_stats *s)
{
	double sum = 0;
	size_t i, k;

	memset(s, 0, sizeof(*s));
	if (!n)
		return;
	qsort(v, n, sizeof(*v), bench_cmp_double);
	for (i = 0; i < n; i++)
		sum += v[i];
	k = (size_t)(0.99 * (double)n + 0.999999);
	s->min = v[0];
	s->max = v[n - 1];
	s->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	s->p99 = v[(k ? k : 1) - 1];
	s->avg = sum / (double)n;
}

static inline void bench_print_stats(const char *name, const struct bench_stats *s, bool json)
{
	if (json)
		printf("\"%s\":{\"min\":%.4f,\"median\":%.4f,\"p99\":%.4f,\"max\":%.4f,"
		       "\"avg\":%.4f}",
		       name, s->min, s->median, s->p99, s->max, s->avg);
	else
		printf("%-12s min %9.3f  median %9.3f  p99 %9.3f  max %10.3f  avg %9.3f us\n", name,
		       s->min, s->median, s->p99, s->max, s->avg);
}

static inline bool bench_parse_ulong(const char *s, unsigned long min, unsigned long max,
				     unsigned long *ret)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (end == s || *end || *s == '-' || v < min || v > max)
		return false;
	*ret = v;
	return true;
}

#endif
