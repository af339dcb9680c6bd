/* SPDX-License-Identifier: MIT */
/*
 * Logging: to the journal (with priorities) when stderr is connected to it,
 * otherwise to stderr with a level prefix. Only handlers, loop callbacks and
 * main log; modules that can fail return a negative errno instead.
 */
#ifndef RP_DAEMON_LOG_H
#define RP_DAEMON_LOG_H

#include <stdint.h>
#include <syslog.h>

void log_init(void);
/* After detaching from the terminal (daemon mode without systemd). */
void log_use_syslog(void);
void log_set_level(int level);
int log_get_level(void);
const char *log_level_name(int level);

__attribute__((format(printf, 2, 3))) void log_msg(int level, const char *fmt, ...);

/*
 * Rate-limited messages, for whatever a stranger or a misbehaving client can
 * make the daemon say over and over. @key names the source (a peer address,
 * a uid, a kind of refusal) and starts the summary line. Each key may write
 * RL_BURST messages at once, then one every RL_INTERVAL_MS; every key
 * together at most RL_ALL_BURST at once, then RL_ALL_PER_SEC a second.
 * Messages over the limit are counted, not written, and the count comes out
 * as one line "KEY: suppressed N similar messages" once the key may write
 * again (log_ratelimit_flush) or before its next message. Messages below the
 * log level are neither written nor counted. Loop-free: the loop glue calls
 * log_ratelimit_flush() about once a second.
 */
#define RL_BURST 5
#define RL_INTERVAL_MS 10000
#define RL_ALL_BURST 50
#define RL_ALL_PER_SEC 2

__attribute__((format(printf, 3, 4))) void log_ratelimited(const char *key, int level,
							   const char *fmt, ...);
/* Write the summary of every key whose burst has ended. */
void log_ratelimit_flush(void);
/* Messages suppressed since start (rdmaproxy_log_messages_suppressed_total). */
uint64_t log_suppressed_total(void);
/* Tests: the clock of the rate limiter (NULL: CLOCK_MONOTONIC), in milliseconds. */
void log_ratelimit_set_clock(uint64_t (*now_ms)(void));

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
