/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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

void log_msg(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
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
