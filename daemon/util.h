/* SPDX-License-Identifier: MIT */
#ifndef RP_DAEMON_UTIL_H
#define RP_DAEMON_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* "512 B", "4.0 KiB", "1.5 GiB": binary units with one decimal. */
char *fmt_bytes(uint64_t n, char *buf, size_t len);

#endif
