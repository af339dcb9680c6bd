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

#include "base/config.h"

struct admin_ctx;
struct clients;
struct core;
struct engine;
struct evloop;
struct rdev;
struct vlocal;

struct clients_env {
	uv_loop_t *loop;
	const struct config *cfg;
	struct admin_ctx *admin; /* admin requests go there (admin.h) */
	struct rdev *rdev;	 /* NULL on tcp: the engine polls its CQ */
	struct vlocal *vlocal;	 /* NULL on tcp */
	struct evloop *ev;	 /* its "soon" work runs at the end of each engine pass */
	uint16_t wire_transport; /* enum rp_wire_transport */
};

int clients_new(const struct clients_env *env, struct clients **ret);
/* The client core the glue drives, and the engine that runs its data path. */
/* The loop is closed: jobs (core_job) run at once from now on. */
void clients_loop_closed(struct clients *c);
struct core *clients_core(const struct clients *c);
struct engine *clients_engine(const struct clients *c);
/* Take ownership of an accepted, non-blocking, CLOEXEC socket. */
void clients_accept(struct clients *c, int fd);
/* Begin closing every session (their handles close asynchronously). */
void clients_shutdown(struct clients *c);
struct clients *clients_free(struct clients *c);

#endif
