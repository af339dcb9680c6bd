/* SPDX-License-Identifier: MIT */
/* systemd service notifications; all are no-ops when NOTIFY_SOCKET is unset. */
#ifndef RP_DAEMON_NOTIFY_H
#define RP_DAEMON_NOTIFY_H

#include <stdint.h>

void notify_ready(const char *status);
void notify_status(const char *status);
void notify_reloading(void);
void notify_stopping(void);
void notify_watchdog(void);
/* The watchdog interval in microseconds, or 0 when systemd asked for none. */
uint64_t notify_watchdog_usec(void);

#endif
