/* SPDX-License-Identifier: MIT */
/*
 * A tiny TAP producer for unit tests, in the spirit of libuv's plain-C
 * runner: no framework, one header, output that automake's tap-driver reads.
 */
#ifndef RP_TAP_H
#define RP_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n;
static int tap_failed;

static inline void tap_plan(int n)
{
	printf("1..%d\n", n);
}

static inline void tap_plan_done(void)
{
	printf("1..%d\n", tap_n);
}

__attribute__((format(printf, 2, 3))) static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	printf("%s %d - ", cond ? "ok" : "not ok", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_failed++;
	return cond;
}

static inline void tap_diag(const char *msg)
{
	printf("# %s\n", msg);
}

#define tap_is_int(got, want, name)                                      \
	do {                                                             \
		long long _g = (long long)(got), _w = (long long)(want); \
		if (!tap_ok(_g == _w, "%s", name))                       \
			printf("#   got %lld, want %lld\n", _g, _w);     \
	} while (0)

#define tap_is_str(got, want, name)                                             \
	do {                                                                    \
		const char *_g = (got), *_w = (want);                           \
		if (!tap_ok(_g && _w && strcmp(_g, _w) == 0, "%s", name))       \
			printf("#   got '%s', want '%s'\n", _g ? _g : "(null)", \
			       _w ? _w : "(null)");                             \
	} while (0)

static inline int tap_exit(void)
{
	return tap_failed ? 1 : 0;
}

#endif
