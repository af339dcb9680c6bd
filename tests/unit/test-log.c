/* SPDX-License-Identifier: MIT */
/* The keyed rate limiter of daemon/base/log.c, on a clock of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../daemon/base/log.h"
#include "tap.h"

static uint64_t now;
static FILE *out;

static uint64_t clock_ms(void)
{
	return now;
}

/* Lines written to stderr since the last call, and how many contain @pat. */
static int lines(const char *pat, int *matching)
{
	static long pos;
	char buf[2048];
	int n = 0;

	fflush(stderr);
	clearerr(out);
	fseek(out, pos, SEEK_SET);
	*matching = 0;
	while (fgets(buf, sizeof(buf), out)) {
		n++;
		*matching += pat && strstr(buf, pat) != NULL;
	}
	pos = ftell(out);
	return n;
}

static void test_burst(void)
{
	int i, m, n;

	for (i = 0; i < 300; i++)
		log_ratelimited("peer connections from 10.0.0.9", LOG_WARNING,
				"handshake %d failed", i);
	n = lines("handshake", &m);
	tap_is_int(n, RL_BURST, "300 messages at once: the burst is written");
	tap_is_int(log_suppressed_total(), 300 - RL_BURST, "the rest is counted");
	log_ratelimit_flush();
	tap_is_int(lines(NULL, &m), 0, "no summary while the key may not write");
	now += RL_INTERVAL_MS;
	log_ratelimit_flush();
	n = lines("peer connections from 10.0.0.9: suppressed 295 similar messages", &m);
	tap_ok(n == 1 && m == 1, "then one summary line with the count");
	log_ratelimit_flush();
	tap_is_int(lines(NULL, &m), 0, "and only once");
	log_ratelimited("peer connections from 10.0.0.9", LOG_WARNING, "after");
	tap_is_int(lines("after", &m), 0, "the summary used the token");
	now += RL_INTERVAL_MS;
	log_ratelimited("peer connections from 10.0.0.9", LOG_WARNING, "later");
	n = lines("suppressed 1 similar message", &m);
	tap_ok(n == 2 && m == 1, "a message after suppression brings its summary first");
}

static void test_keys(void)
{
	int i, m;

	now += 60000;
	for (i = 0; i < 3; i++)
		log_ratelimited("clients of uid 1000", LOG_WARNING, "a %d", i);
	log_ratelimited("clients of uid 1001", LOG_WARNING, "b");
	tap_is_int(lines(NULL, &m), 4, "keys are limited apart");
	log_ratelimited("clients of uid 1001", LOG_DEBUG, "below the level");
	tap_is_int(lines(NULL, &m), 0, "below the log level: not written");
	now += 60000;
	log_ratelimit_flush();
	tap_is_int(lines("suppressed", &m), 0, "... and not counted");
}

static void test_global(void)
{
	char key[32];
	int i, m, n;

	now += 60000;
	log_ratelimit_flush();
	lines(NULL, &m);
	for (i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "source %d", i);
		log_ratelimited(key, LOG_WARNING, "from %d", i);
	}
	n = lines(NULL, &m);
	tap_is_int(n, RL_ALL_BURST, "a thousand sources: the global burst bounds them");
	for (i = 0; i < 10; i++) {
		now += 1000;
		log_ratelimit_flush();
	}
	n = lines("suppressed", &m);
	tap_ok(n > 0 && n <= 10 * RL_ALL_PER_SEC,
	       "their summaries come within the global rate (%d)", n);
}

int main(void)
{
	char path[] = "/tmp/rp-test-log.XXXXXX";
	int fd = mkstemp(path);

	/* stderr goes to the file; a description of our own reads it back. */
	if (fd < 0 || dup2(fd, STDERR_FILENO) < 0 || !(out = fopen(path, "r")))
		return 1;
	unlink(path);
	close(fd);
	setvbuf(stderr, NULL, _IOLBF, 0);
	now = 1000000;
	log_ratelimit_set_clock(clock_ms);
	log_set_level(LOG_INFO);
	test_burst();
	test_keys();
	test_global();
	tap_plan_done();
	return tap_failed ? 1 : 0;
}
