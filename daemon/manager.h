/* SPDX-License-Identifier: MIT */
/*
 * The manager owns everything the daemon runs: the config, the one libuv
 * loop (private to manager.c; the glue reaches it through manager_uv.h),
 * the RDMA device, the listening socket, the client core and its glue, the
 * peers and the systemd integration. main() is a short run() around it.
 */
#ifndef RP_DAEMON_MANAGER_H
#define RP_DAEMON_MANAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "admin.h"
#include "base/config.h"
#include "listener.h"

struct rdev;
struct vlocal;
struct core;
struct clients;
struct peers;
struct mloop;

struct manager {
	struct config *cfg;
	char *config_path;

	enum rp_transport_kind transport; /* effective: VERBS or TCP */
	char transport_why[320];	  /* why auto chose what it chose */
	struct rdev *rdev;		  /* NULL on tcp */
	struct vlocal *vlocal;		  /* loopback RC QP for local transfers (verbs) */
	uint64_t incarnation;		  /* random per start, never 0 */
	time_t started;

	struct listener listener;
	struct mloop *lp;      /* the loop and the manager's own handles */
	char status_sent[256]; /* the STATUS= line systemd has */
	uint64_t watchdog_usec;

	struct core *core;	 /* the client core (core.h) */
	struct clients *clients; /* its loop glue (clients.h) */
	struct peers *peers;	 /* daemon-to-daemon links (peer.h) */
	struct admin_ctx admin;	 /* what administration reads (admin.h) */
	bool stopping;
	int exit_code;
};

int manager_new(const char *config_path, struct manager **ret);
/* Run the loop until SIGTERM/SIGINT; returns the process exit code. */
int manager_run(struct manager *m);
struct manager *manager_free(struct manager *m);

/* One human line for systemd's STATUS= and `rdmaproxyctl status`. */
void manager_status_line(const struct manager *m, char *buf, size_t len);
/*
 * Re-read the config file and apply what can change at run time (SIGHUP and
 * rdmaproxyctl reload). 0, or <0 with the running config kept; a one-line
 * outcome in @msg when it is not NULL. *@ret_restart (if not NULL) gets the
 * RP_RESTART_* bits of changed settings that apply only at the next start.
 */
int manager_reload(struct manager *m, char *msg, size_t msglen, unsigned *ret_restart);
/* Stop the daemon from inside the loop (fatal device error, signal). */
void manager_stop(struct manager *m, int exit_code);

#endif
