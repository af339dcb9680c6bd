/* SPDX-License-Identifier: MIT */
/*
 * Copies into and out of client-shared memory that survive the client
 * pulling pages away: a hugetlbfs region can have a hole punched in it
 * (seals on size do not prevent that), and touching it with the huge-page
 * pool empty raises SIGBUS. A guarded copy turns that into -EFAULT for the
 * one operation instead of killing the daemon.
 */
#ifndef RP_DAEMON_MEMGUARD_H
#define RP_DAEMON_MEMGUARD_H

#include <stddef.h>

/* Install the SIGBUS handler (once, at start-up). 0 or -errno. */
int memguard_init(void);
/* memmove() that returns -EFAULT if the memory vanished underneath it, else 0. */
int guarded_memmove(void *dst, const void *src, size_t len);

#endif
