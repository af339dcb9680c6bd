/* SPDX-License-Identifier: MIT */
#include "notify.h"

#include <stdio.h>
#include <systemd/sd-daemon.h>
#include <time.h>

void notify_ready(const char *status)
{
	sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

void notify_status(const char *status)
{
	sd_notifyf(0, "STATUS=%s", status);
}

/*
 * Type=notify-reload style: RELOADING=1 must carry MONOTONIC_USEC so that
 * newer systemd can match it to the reload request; older ones ignore it.
 */
void notify_reloading(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
		   (unsigned long long)ts.tv_sec * 1000000ULL +
			   (unsigned long long)ts.tv_nsec / 1000);
}

void notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
}

void notify_watchdog(void)
{
	sd_notify(0, "WATCHDOG=1");
}

uint64_t notify_watchdog_usec(void)
{
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) <= 0)
		return 0;
	return usec;
}
