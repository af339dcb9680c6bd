/* SPDX-License-Identifier: MIT */
/*
 * Logging: to the journal (with priorities) when stderr is connected to it,
 * otherwise to stderr with a level prefix. Only handlers, loop callbacks and
 * main log; modules that can fail return a negative errno instead.
 */
#ifndef RP_DAEMON_LOG_H
#define RP_DAEMON_LOG_H

#include <syslog.h>

void log_init(void);
/* After detaching from the terminal (daemon mode without systemd). */
void log_use_syslog(void);
void log_set_level(int level);
int log_get_level(void);
const char *log_level_name(int level);

__attribute__((format(printf, 2, 3))) void log_msg(int level, const char *fmt, ...);

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
