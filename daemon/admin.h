/* SPDX-License-Identifier: MIT */
/*
 * Administration requests (rdmaproxyctl): lists of clients, regions and
 * peers, status, Prometheus metrics, ping and reload, with the
 * authorization rules of rp-proto.h. It reads the daemon's state through
 * struct admin_ctx (the core, the peers, the counters of stats.h) and
 * produces replies; it never touches the loop, and a reload goes back to
 * the manager through the context's hook.
 */
#ifndef RP_DAEMON_ADMIN_H
#define RP_DAEMON_ADMIN_H

#include "admin_metrics.h"

struct session;
struct rp_hdr;

/*
 * Handle a validated admin request (ctl_is_admin(), STATUS included) of a
 * session past hello. 0, or <0: disconnect.
 */
int admin_dispatch(struct admin_ctx *ctx, struct session *s, const struct rp_hdr *h,
		   const void *body);
/*
 * Route a packet of @s that passed ctl_validate(): administration requests
 * of a session past hello to admin_dispatch(), everything else (with the
 * packet's fd, or -1) to session_dispatch(). 0, or <0: disconnect
 * (-ECONNABORTED: refused at hello).
 */
int admin_route(struct admin_ctx *ctx, struct session *s, const struct rp_hdr *h, const void *body,
		int fd);
/* Free what admin.c keeps for @s (metrics snapshot, pending ping). Idempotent. */
void admin_session_release(struct session *s);

#endif
