/* SPDX-License-Identifier: MIT */
/*
 * Client sessions on the Unix socket: accept-time credential checks, the
 * control protocol, and per-uid accounting.
 */
#ifndef RP_DAEMON_CLIENTS_H
#define RP_DAEMON_CLIENTS_H

#include <stddef.h>

struct manager;
struct clients;

int clients_new(struct manager *m, struct clients **ret);
/* Take ownership of an accepted, non-blocking, CLOEXEC socket. */
void clients_accept(struct clients *c, int fd);
/* Begin closing every session (their handles close asynchronously). */
void clients_shutdown(struct clients *c);
struct clients *clients_free(struct clients *c);
unsigned clients_count(const struct clients *c);
/* Totals across sessions, for status. */
size_t clients_regions(const struct clients *c);
unsigned long long clients_registered_bytes(const struct clients *c);

#endif
