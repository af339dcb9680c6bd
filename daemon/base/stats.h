/* SPDX-License-Identifier: MIT */
/*
 * Operation counters: daemon-wide totals and per-session tallies. A leaf
 * module: the client core counts every completed operation here, the loop
 * glue counts completion-queue events, the peer layer and the glue count
 * what they refuse, and admin and metrics only read.
 */
#ifndef RP_DAEMON_STATS_H
#define RP_DAEMON_STATS_H

#include <stdint.h>

/* Error classes for rdmaproxy_errors_total{kind=...}. */
enum stats_err_kind {
	STATS_ERR_LOCAL,     /* bad handle, bounds, invalid argument */
	STATS_ERR_REMOTE,    /* refused by the exporting side */
	STATS_ERR_PEER,	     /* peer unknown or down, outcome unknown */
	STATS_ERR_LIMIT,     /* a per-user limit */
	STATS_ERR_CANCELLED, /* cancelled (unbind, shutdown) */
	STATS_ERR_OTHER,
	STATS_ERR_KINDS
};

/* Why a connection to the peer port was closed before its handshake began. */
enum stats_refusal {
	STATS_REFUSED_TOTAL,	/* [peers] max_unauthenticated reached */
	STATS_REFUSED_ADDRESS,	/* [peers] max_unauthenticated_per_address reached */
	STATS_REFUSED_FAILURES, /* the address failed too many handshakes lately */
	STATS_REFUSED_FDS,	/* the fds left are kept for local clients */
	STATS_REFUSALS
};

/* Who asked to open an export it was refused (rdmaproxy_export_opens_refused_total). */
enum stats_from {
	STATS_FROM_LOCAL, /* a client of this daemon */
	STATS_FROM_PEER,  /* a peer daemon's LOOKUP, or an op on an id it was not given */
	STATS_FROMS
};

#define STATS_OPS 6 /* enum rp_op values 1..5, index 0 unused */

/* Daemon-wide counters since start (the daemon is one process: one set). */
struct stats_totals {
	uint64_t ops[STATS_OPS];
	uint64_t bytes[STATS_OPS];
	uint64_t errors[STATS_ERR_KINDS];
	uint64_t cq_events;
	uint64_t cq_completions;
	uint64_t client_doorbells; /* completion doorbells rung for clients that sleep */
	uint64_t admin_requests;
	uint64_t admin_refused;
	uint64_t peer_handshake_failures; /* inbound connections that never authenticated */
	uint64_t peer_refused[STATS_REFUSALS];
	uint64_t client_fd_lost;	      /* requests whose fd the kernel could not hand over */
	uint64_t client_accept_pauses;	      /* client accepts paused for want of fds */
	uint64_t export_refused[STATS_FROMS]; /* opens refused by the export's access control */
	uint64_t send_refused[STATS_FROMS];   /* sends refused by the endpoint's access control */
	uint64_t names_refused;		      /* exports and binds of a name [names] reserves */
};

extern struct stats_totals stats_totals;

/* One session's operations (rdmaproxyctl clients). */
struct stats_session {
	uint64_t ops, errors, bytes;
};

/* An operation (enum rp_op @op) completed with @status, @len bytes moved. */
void stats_count_op(struct stats_session *s, unsigned op, int status, uint64_t len);
/* The completion channel fired; @n completions were drained (or <0). */
void stats_count_cq(int n);
enum stats_err_kind stats_err_kind(int status);
const char *stats_err_kind_name(enum stats_err_kind k);
/* "total_limit", "address_limit", "failed_handshakes", "fd_reserve". */
const char *stats_refusal_name(enum stats_refusal r);
/* "local", "peer". */
const char *stats_from_name(enum stats_from f);
/* "write", "read", "send", "recv", "notify"; NULL for anything else. */
const char *stats_op_name(unsigned op);

#endif
