/* SPDX-License-Identifier: MIT */
#ifndef RP_DAEMON_UTIL_H
#define RP_DAEMON_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t mono_ns(void);

/* "512 B", "4.0 KiB", "1.5 GiB": binary units with one decimal. */
char *fmt_bytes(uint64_t n, char *buf, size_t len);

/*
 * The fd reserve. The top of the fd table (RLIMIT_NOFILE) is kept for local
 * clients: a quarter of it, at least FD_RESERVE_MIN and at most half. The
 * kernel hands out the lowest free number, so a new fd numbered N proves
 * that 0..N-1 are all taken: a connection to the peer port whose fd lands
 * in the reserve is closed at once, and once a new local client's fd lands
 * in the last quarter of the reserve, client accepts pause until a lower
 * fd is free again. What is left is for the rings of clients saying HELLO
 * and for the region fds clients pass. Holes lower in the table are no
 * threat: whoever opens a file next fills them first.
 */
#define FD_RESERVE_MIN 32

enum fd_use {
	FD_PEER,   /* a connection to the peer port: leaves the whole reserve */
	FD_CLIENT, /* a new local client: leaves the last quarter of it */
};

/* Whether a newly opened @fd lies in the part of the table kept from @use. */
bool fd_reserved(int fd, enum fd_use use);
/* Whether the next fd opened would (the table is probed by duplicating @any_fd). */
bool fd_reserve_reached(int any_fd, enum fd_use use);

#endif
