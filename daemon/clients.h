/* SPDX-License-Identifier: MIT */
/*
 * Client sessions on the Unix socket, loop glue: accept-time credential
 * checks and pre-HELLO limits, each socket and submission doorbell as a
 * uv_poll_t, the submission spinner, and the core (core.h) that all of it
 * drives.
 */
#ifndef RP_DAEMON_CLIENTS_H
#define RP_DAEMON_CLIENTS_H

#include <uv.h>

#include "config.h"

struct admin_ctx;
struct clients;
struct core;

/* Admin requests go to @admin (admin.h). */
int clients_new(uv_loop_t *loop, const struct config *cfg, struct admin_ctx *admin,
		struct clients **ret);
/* The client core the glue drives. */
struct core *clients_core(const struct clients *c);
/* Take ownership of an accepted, non-blocking, CLOEXEC socket. */
void clients_accept(struct clients *c, int fd);
/* Begin closing every session (their handles close asynchronously). */
void clients_shutdown(struct clients *c);
struct clients *clients_free(struct clients *c);

#endif
