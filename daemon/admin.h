/* SPDX-License-Identifier: MIT */
/*
 * Administration requests (rdmaproxyctl): lists of clients, regions and
 * peers, Prometheus metrics, ping and reload, with the authorization rules
 * of rp-proto.h. Like session.c it never touches the loop: it reads the
 * manager's state and produces replies. It also keeps the operation
 * counters that the lists and the metrics report.
 */
#ifndef RP_DAEMON_ADMIN_H
#define RP_DAEMON_ADMIN_H

#include <stddef.h>
#include <stdint.h>

struct manager;
struct session;
struct rp_hdr;
struct rp_admin_peer;

/* Error classes for rdmaproxy_errors_total{kind=...}. */
enum admin_err_kind {
	ADMIN_ERR_LOCAL, /* bad handle, bounds, invalid argument */
	ADMIN_ERR_REMOTE, /* refused by the exporting side */
	ADMIN_ERR_PEER, /* peer unknown or down, outcome unknown */
	ADMIN_ERR_LIMIT, /* a per-user limit */
	ADMIN_ERR_CANCELLED, /* cancelled (unbind, shutdown) */
	ADMIN_ERR_OTHER,
	ADMIN_ERR_KINDS
};

#define ADMIN_OPS 6 /* enum rp_op values 1..5, index 0 unused */

/* Daemon-wide counters since start (the daemon is one process: one set). */
struct admin_totals {
	uint64_t ops[ADMIN_OPS];
	uint64_t bytes[ADMIN_OPS];
	uint64_t errors[ADMIN_ERR_KINDS];
	uint64_t cq_events;
	uint64_t cq_completions;
	uint64_t admin_requests;
	uint64_t admin_refused;
};

extern struct admin_totals admin_totals;

/* Exact request body size of admin type @type, or -1 if it is not one. */
long admin_body_size(uint16_t type);
/* Handle a validated admin request of a session past hello. 0, or <0: disconnect. */
int admin_dispatch(struct session *s, const struct rp_hdr *h, const void *body);
/* Free what admin.c keeps for @s (counters, metrics snapshot). Idempotent. */
void admin_session_release(struct session *s);

/* An operation submitted by @s was reported with @status (enum rp_op @op). */
void admin_count_op(struct session *s, unsigned op, int status, uint64_t len);
/* The device's completion channel fired; @n completions were drained (or <0). */
void admin_count_cq(int n);
enum admin_err_kind admin_err_kind(int status);
const char *admin_err_kind_name(enum admin_err_kind k);

/* Peers for status: how many are configured and how many are up. */
void admin_peer_counts(const struct manager *m, unsigned *ret_up, unsigned *ret_total);
/* Every peer's record, as the peer layer reports them (free ->v). */
struct peer_snap {
	struct rp_admin_peer *v;
	size_t n, cap;
};
int admin_peers_snapshot(struct manager *m, struct peer_snap *ret);

/* admin_metrics.c: the Prometheus text exposition, malloc'ed, in *ret. */
int admin_metrics_text(struct manager *m, char **ret, size_t *ret_len);

/* Per-session counters (NULL until the first report). */
struct admin_session_stats {
	uint64_t ops, errors, bytes;
};
const struct admin_session_stats *admin_session_stats(const struct session *s);

#endif
