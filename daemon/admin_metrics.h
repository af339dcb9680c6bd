/* SPDX-License-Identifier: MIT */
/*
 * What administration reads (struct admin_ctx), and the views built from it
 * that both the admin requests and the Prometheus exposition use: peer
 * records and counts, and the metrics text itself.
 */
#ifndef RP_DAEMON_ADMIN_METRICS_H
#define RP_DAEMON_ADMIN_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/config.h"

struct core;
struct peers;
struct rdev;
struct rp_admin_peer;

/* What administration reads; kept current by the manager. */
struct admin_ctx {
	const struct config *cfg;
	struct core *core;
	struct peers *peers;
	struct rdev *rdev;		   /* NULL on tcp */
	const struct engine_stats *engine; /* the data path's engine's counters (NULL: none) */
	enum rp_transport_kind transport;
	uint64_t incarnation;
	time_t started;
	/*
	 * Re-read the config (rdmaproxyctl reload): 0 or <0, a one-line outcome in
	 * @msg, the RP_RESTART_* bits of changed settings that need a restart.
	 */
	int (*reload)(void *arg, char *msg, size_t msglen, unsigned *ret_restart);
	void *reload_arg;
};

/* Peers: how many are configured and how many are up. */
void admin_peer_counts(const struct admin_ctx *ctx, unsigned *ret_up, unsigned *ret_total);
/* Every peer's record, as the peer layer reports them (free ->v). */
struct peer_snap {
	struct rp_admin_peer *v;
	size_t n, cap;
};
int admin_peers_snapshot(struct admin_ctx *ctx, struct peer_snap *ret);
/* The Prometheus text exposition, malloc'ed, in *ret. */
int admin_metrics_text(struct admin_ctx *ctx, char **ret, size_t *ret_len);

#endif
