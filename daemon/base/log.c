/* SPDX-License-Identifier: MIT */
#include "base/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>
#include <time.h>
#include <unistd.h>

static int log_level = LOG_INFO;
static bool log_to_journal;
static bool log_to_syslog;

/*
 * JOURNAL_STREAM names the device:inode of the stream systemd connected to
 * stderr. If stderr is still that stream, native journal messages keep their
 * priority; if stderr was redirected (a test, a pipe), write plain text there.
 */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return st.st_dev == dev && st.st_ino == ino;
}

void log_init(void)
{
	log_to_journal = stderr_is_journal();
}

void log_use_syslog(void)
{
	openlog("rdmaproxyd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	log_to_syslog = true;
}

void log_set_level(int level)
{
	log_level = level;
}

int log_get_level(void)
{
	return log_level;
}

const char *log_level_name(int level)
{
	switch (level) {
	case LOG_EMERG:
	case LOG_ALERT:
	case LOG_CRIT:
	case LOG_ERR:
		return "error";
	case LOG_WARNING:
		return "warning";
	case LOG_NOTICE:
		return "notice";
	case LOG_INFO:
		return "info";
	default:
		return "debug";
	}
}

static void emit(int level, const char *buf)
{
	if (log_to_journal) {
		sd_journal_send("MESSAGE=%s", buf, "PRIORITY=%d", level,
				"SYSLOG_IDENTIFIER=rdmaproxyd", NULL);
		return;
	}
	if (log_to_syslog) {
		syslog(level, "%s", buf);
		return;
	}
	fprintf(stderr, "rdmaproxyd[%d]: %s: %s\n", (int)getpid(), log_level_name(level), buf);
}

static void log_vmsg(int level, const char *fmt, va_list ap)
{
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	emit(level, buf);
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

/* ---- Rate-limited messages (log.h). ---- */

#define RL_KEYS 64
#define RL_KEY_LEN 160
#define RL_ALL_INTERVAL_MS (1000 / RL_ALL_PER_SEC)

struct rl_bucket {
	unsigned tokens;
	uint64_t refill_ms; /* when tokens were last added */
};

struct rl_key {
	char key[RL_KEY_LEN]; /* "" : a free slot */
	struct rl_bucket b;
	unsigned suppressed;
	int level;     /* the most important level among the suppressed */
	uint64_t used; /* order of last use: the least recently used key makes room */
};

static struct rl_key rl_keys[RL_KEYS];
static struct rl_bucket rl_all = { .tokens = RL_ALL_BURST };
static uint64_t rl_orphans; /* suppressed by keys that were evicted before their summary */
static int rl_orphan_level = LOG_DEBUG;
static uint64_t rl_total;
static uint64_t rl_uses;
static uint64_t (*rl_clock)(void);

static uint64_t rl_now(void)
{
	struct timespec ts;

	if (rl_clock)
		return rl_clock();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void log_ratelimit_set_clock(uint64_t (*now_ms)(void))
{
	rl_clock = now_ms;
	rl_all.refill_ms = rl_now();
}

uint64_t log_suppressed_total(void)
{
	return rl_total;
}

static void refill(struct rl_bucket *b, uint64_t now, unsigned burst, uint64_t interval)
{
	uint64_t n = now > b->refill_ms ? (now - b->refill_ms) / interval : 0;

	if (b->tokens + n >= burst) {
		b->tokens = burst;
		b->refill_ms = now;
	} else {
		b->tokens += (unsigned)n;
		b->refill_ms += n * interval;
	}
}

static int more_important(int a, int b)
{
	return a < b ? a : b;
}

static void summary(struct rl_key *k)
{
	log_msg(k->level, "%s: suppressed %u similar message%s", k->key, k->suppressed,
		k->suppressed == 1 ? "" : "s");
	k->suppressed = 0;
}

/* The slot of @key: found, free, or the least recently used one (evicted). */
static struct rl_key *rl_find(const char *key, uint64_t now)
{
	struct rl_key *k, *victim = NULL;

	for (k = rl_keys; k < rl_keys + RL_KEYS; k++) {
		if (k->key[0] && !strncmp(k->key, key, RL_KEY_LEN - 1))
			return k;
		if (!victim || (victim->key[0] && (!k->key[0] || k->used < victim->used)))
			victim = k;
	}
	if (victim->suppressed) {
		rl_orphans += victim->suppressed;
		rl_orphan_level = more_important(rl_orphan_level, victim->level);
	}
	memset(victim, 0, sizeof(*victim));
	snprintf(victim->key, sizeof(victim->key), "%s", key);
	victim->b.tokens = RL_BURST;
	victim->b.refill_ms = now;
	return victim;
}

/* Both buckets have a token: take them. */
static bool take(struct rl_key *k, uint64_t now)
{
	refill(&k->b, now, RL_BURST, RL_INTERVAL_MS);
	refill(&rl_all, now, RL_ALL_BURST, RL_ALL_INTERVAL_MS);
	if (!k->b.tokens || !rl_all.tokens)
		return false;
	k->b.tokens--;
	rl_all.tokens--;
	return true;
}

void log_ratelimited(const char *key, int level, const char *fmt, ...)
{
	uint64_t now = rl_now();
	struct rl_key *k;
	va_list ap;

	if (level > log_level)
		return;
	k = rl_find(key, now);
	k->used = ++rl_uses;
	if (!take(k, now)) {
		k->level = k->suppressed ? more_important(k->level, level) : level;
		k->suppressed++;
		rl_total++;
		return;
	}
	if (k->suppressed)
		summary(k);
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

void log_ratelimit_flush(void)
{
	uint64_t now = rl_now();
	struct rl_key *k;

	for (k = rl_keys; k < rl_keys + RL_KEYS; k++)
		if (k->suppressed && take(k, now))
			summary(k);
	if (rl_orphans && rl_all.tokens) {
		rl_all.tokens--;
		log_msg(rl_orphan_level,
			"suppressed %llu similar messages from sources no longer tracked",
			(unsigned long long)rl_orphans);
		rl_orphans = 0;
		rl_orphan_level = LOG_DEBUG;
	}
}
