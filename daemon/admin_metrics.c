/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus text exposition format (version 0.0.4) of the daemon's
 * state and counters. Counters end in _total, units are in the names
 * (_bytes, _seconds), every family has # HELP and # TYPE, and a family
 * without samples is left out so that promtool has nothing to complain of.
 */
#include "admin_metrics.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "core/core.h"
#include "engine.h"
#include "base/log.h"
#include "peer/peer.h"
#include "base/stats.h"

struct text {
	char *buf;
	size_t len, size;
	int err;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	char *nb;
	int n;

	while (!t->err) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf + t->len, t->size - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->err = -EINVAL;
		} else if ((size_t)n < t->size - t->len) {
			t->len += (size_t)n;
			return;
		} else {
			nb = realloc(t->buf, (t->size + (size_t)n + 1) * 2);
			if (!nb)
				t->err = -ENOMEM;
			else
				t->buf = nb;
			t->size = nb ? (t->size + (size_t)n + 1) * 2 : t->size;
		}
	}
}

static void family(struct text *t, const char *name, const char *type, const char *help)
{
	put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with \, " and newline escaped, into @buf. */
static const char *label(const char *v, char *buf, size_t len)
{
	size_t o = 0;

	for (; *v && o + 3 < len; v++) {
		if (*v == '\\' || *v == '"') {
			buf[o++] = '\\';
			buf[o++] = *v;
		} else if (*v == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else {
			buf[o++] = *v;
		}
	}
	buf[o] = '\0';
	return buf;
}

static void gauge1(struct text *t, const char *name, const char *help, unsigned long long v)
{
	family(t, name, "gauge", help);
	put(t, "%s %llu\n", name, v);
}

static void counter1(struct text *t, const char *name, const char *help, unsigned long long v)
{
	family(t, name, "counter", help);
	put(t, "%s %llu\n", name, v);
}

static void identity(struct text *t, const struct admin_ctx *ctx)
{
	char node[2 * RP_NAME_MAX];

	family(t, "rdmaproxy_info", "gauge", "Version, node name and transport of the daemon (1).");
	put(t, "rdmaproxy_info{version=\"%s\",node=\"%s\",transport=\"%s\"} 1\n", PACKAGE_VERSION,
	    label(ctx->cfg->node_name, node, sizeof(node)), config_transport_name(ctx->transport));
	gauge1(t, "rdmaproxy_start_time_seconds", "Unix time at which the daemon started.",
	       (unsigned long long)ctx->started);
	gauge1(t, "rdmaproxy_uptime_seconds", "Seconds since the daemon started.",
	       (unsigned long long)(time(NULL) - ctx->started));
}

static void resources(struct text *t, const struct admin_ctx *ctx)
{
	const struct core *c = ctx->core;
	const struct uid_acct *a;
	unsigned long long inflight = 0;

	for (a = c ? c->accts : NULL; a; a = a->next)
		inflight += a->inflight;
	gauge1(t, "rdmaproxy_clients", "Connected client sessions.", c ? c->n_sessions : 0);
	gauge1(t, "rdmaproxy_regions", "Registered regions, including those kept for operations.",
	       c ? c->n_regions : 0);
	gauge1(t, "rdmaproxy_registered_bytes", "Bytes of registered client memory.",
	       c ? c->bytes : 0);
	gauge1(t, "rdmaproxy_exports", "Regions published under a name.", c ? c->n_exports : 0);
	gauge1(t, "rdmaproxy_inflight_operations", "Operations accepted and not yet completed.",
	       inflight);
	gauge1(t, "rdmaproxy_jobs_running",
	       "Registrations, deregistrations, unmappings and verbs peer connections' set-ups, "
	       "teardowns and name lookups running off the loop thread.",
	       c ? c->jobs_running : 0);
	gauge1(t, "rdmaproxy_jobs_waiting",
	       "Registrations, deregistrations, unmappings and verbs peer connections' set-ups, "
	       "teardowns and name lookups waiting for a thread (users take turns).",
	       c ? c->jobs_waiting : 0);
	counter1(t, "rdmaproxy_jobs_total", "Jobs done off the loop thread since the start.",
		 c ? c->jobs_done : 0);
}

static void per_user(struct text *t, const struct admin_ctx *ctx)
{
	static const struct {
		const char *name, *help;
	} fams[] = {
		{ "rdmaproxy_user_connections", "Client connections per uid." },
		{ "rdmaproxy_user_regions", "Registered regions per uid." },
		{ "rdmaproxy_user_registered_bytes", "Registered bytes per uid." },
		{ "rdmaproxy_user_inflight_operations", "Operations in flight per uid." },
	};
	const struct uid_acct *a, *first = ctx->core ? ctx->core->accts : NULL;
	size_t i;

	if (!first)
		return;
	for (i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		family(t, fams[i].name, "gauge", fams[i].help);
		for (a = first; a; a = a->next) {
			unsigned long long v = i == 0	? a->conns
					       : i == 1 ? a->regions
					       : i == 2 ? a->bytes
							: a->inflight;

			put(t, "%s{uid=\"%u\"} %llu\n", fams[i].name, (unsigned)a->uid, v);
		}
	}
}

static void operations(struct text *t)
{
	unsigned i;

	family(t, "rdmaproxy_operations_total", "counter",
	       "Operations submitted by clients and completed, by operation.");
	for (i = 1; i < STATS_OPS; i++)
		put(t, "rdmaproxy_operations_total{op=\"%s\"} %llu\n", stats_op_name(i),
		    (unsigned long long)stats_totals.ops[i]);
	family(t, "rdmaproxy_operation_bytes_total", "counter",
	       "Bytes moved by successful client operations, by operation.");
	for (i = 1; i < STATS_OPS; i++)
		put(t, "rdmaproxy_operation_bytes_total{op=\"%s\"} %llu\n", stats_op_name(i),
		    (unsigned long long)stats_totals.bytes[i]);
	family(t, "rdmaproxy_errors_total", "counter",
	       "Client operations completed with an error, by kind of error.");
	for (i = 0; i < STATS_ERR_KINDS; i++)
		put(t, "rdmaproxy_errors_total{kind=\"%s\"} %llu\n", stats_err_kind_name(i),
		    (unsigned long long)stats_totals.errors[i]);
	counter1(t, "rdmaproxy_cq_events_total", "Completion channel events handled.",
		 stats_totals.cq_events);
	counter1(t, "rdmaproxy_cq_completions_total", "Work completions drained from the CQ.",
		 stats_totals.cq_completions);
	counter1(t, "rdmaproxy_client_doorbells_total",
		 "Completion doorbells rung for clients that had armed them to sleep.",
		 stats_totals.client_doorbells);
	counter1(t, "rdmaproxy_admin_requests_total", "Administration requests answered.",
		 stats_totals.admin_requests);
	counter1(t, "rdmaproxy_admin_refused_total",
		 "Administration requests refused for lack of authorization.",
		 stats_totals.admin_refused);
	family(t, "rdmaproxy_export_opens_refused_total", "counter",
	       "Opens of an export refused by its access control, by who asked "
	       "(local: a client here; peer: a peer daemon).");
	for (i = 0; i < STATS_FROMS; i++)
		put(t, "rdmaproxy_export_opens_refused_total{from=\"%s\"} %llu\n",
		    stats_from_name(i), (unsigned long long)stats_totals.export_refused[i]);
	counter1(t, "rdmaproxy_names_refused_total",
		 "Exports and endpoint binds refused: rdmaproxy.conf reserves the name "
		 "([names]) for other users.",
		 stats_totals.names_refused);
	family(t, "rdmaproxy_endpoint_sends_refused_total", "counter",
	       "Messages refused by the access control of the endpoint they were sent to, by "
	       "who sent them (local: a client here; peer: a client of a peer daemon).");
	for (i = 0; i < STATS_FROMS; i++)
		put(t, "rdmaproxy_endpoint_sends_refused_total{from=\"%s\"} %llu\n",
		    stats_from_name(i), (unsigned long long)stats_totals.send_refused[i]);
}

/* How the engine spends its time: how often it spins, yields, sleeps and is woken. */
static void engine_counters(struct text *t, const struct admin_ctx *ctx)
{
	static const struct engine_stats none;
	const struct engine_stats *st = ctx->engine ? ctx->engine : &none;

	counter1(t, "rdmaproxy_engine_passes_total",
		 "Passes of the data-path engine over the busy rings and the CQ.", st->passes);
	counter1(t, "rdmaproxy_engine_busy_passes_total",
		 "Engine passes that found work (submissions or completions).", st->busy_passes);
	counter1(t, "rdmaproxy_engine_yields_total",
		 "Times the idle engine gave its CPU away (sched_yield, or a wait for a lane's "
		 "poster thread) because more tasks were runnable than there are CPUs.",
		 st->yields);
	counter1(t, "rdmaproxy_engine_sleeps_total",
		 "Times the engine stopped spinning and slept until a doorbell or an event.",
		 st->sleeps);
	counter1(t, "rdmaproxy_engine_wakeups_total",
		 "Times a doorbell or an event woke the sleeping engine.", st->wakeups);
	family(t, "rdmaproxy_engine_spin_seconds", "gauge",
	       "How long the idle engine spins before it sleeps (adapts to the traffic).");
	put(t, "rdmaproxy_engine_spin_seconds %.6f\n", st->spin_ns / 1e9);
}

static void copy_peer(const struct peer_info *in, void *ctx)
{
	struct peer_snap *ps = ctx;
	struct rp_admin_peer *rec;

	if (ps->n == ps->cap)
		return;
	rec = &ps->v[ps->n++];
	snprintf(rec->name, sizeof(rec->name), "%s", in->name);
	snprintf(rec->address, sizeof(rec->address), "%s", in->address);
	snprintf(rec->transport, sizeof(rec->transport), "%s", in->transport);
	snprintf(rec->state, sizeof(rec->state), "%s", peer_state_name(in->state));
	snprintf(rec->direction, sizeof(rec->direction), "%s", in->direction);
	snprintf(rec->last_error, sizeof(rec->last_error), "%s", in->last_error);
	rec->since_ms = (int64_t)in->state_since_ms;
	rec->rtt_us = in->rtt_us;
	rec->incarnation = in->incarnation;
	rec->tx_bytes = in->bytes_out;
	rec->rx_bytes = in->bytes_in;
	rec->tx_ops = in->ops_out;
	rec->rx_ops = in->ops_in;
	rec->errors = in->errors;
	rec->reconnects = in->reconnects;
}

static void count_peer(const struct peer_info *in, void *ctx)
{
	(*(size_t *)ctx)++;
}

int admin_peers_snapshot(struct admin_ctx *ctx, struct peer_snap *ps)
{
	size_t n = 0;

	peers_foreach(ctx->peers, count_peer, &n);
	ps->v = calloc(n ? n : 1, sizeof(*ps->v));
	if (!ps->v)
		return -ENOMEM;
	ps->n = 0;
	ps->cap = n;
	peers_foreach(ctx->peers, copy_peer, ps);
	return 0;
}

void admin_peer_counts(const struct admin_ctx *ctx, unsigned *ret_up, unsigned *ret_total)
{
	*ret_up = peers_up(ctx->peers);
	*ret_total = ctx->cfg ? (unsigned)ctx->cfg->n_peers : 0;
}

/* One per-peer family: @emit prints a peer's samples. */
static void peer_family(struct text *t, const struct rp_admin_peer *v, size_t n, const char *name,
			const char *type, const char *help,
			void (*emit)(struct text *t, const char *name, const char *peer,
				     const struct rp_admin_peer *p))
{
	char lbl[2 * RP_NAME_MAX];
	size_t i;

	family(t, name, type, help);
	for (i = 0; i < n; i++)
		emit(t, name, label(v[i].name, lbl, sizeof(lbl)), &v[i]);
}

static void emit_up(struct text *t, const char *name, const char *peer,
		    const struct rp_admin_peer *p)
{
	put(t, "%s{peer=\"%s\"} %d\n", name, peer, !strcmp(p->state, "up"));
}

static void emit_bytes(struct text *t, const char *name, const char *peer,
		       const struct rp_admin_peer *p)
{
	put(t, "%s{peer=\"%s\",direction=\"tx\"} %llu\n", name, peer,
	    (unsigned long long)p->tx_bytes);
	put(t, "%s{peer=\"%s\",direction=\"rx\"} %llu\n", name, peer,
	    (unsigned long long)p->rx_bytes);
}

static void emit_ops(struct text *t, const char *name, const char *peer,
		     const struct rp_admin_peer *p)
{
	put(t, "%s{peer=\"%s\",direction=\"tx\"} %llu\n", name, peer,
	    (unsigned long long)p->tx_ops);
	put(t, "%s{peer=\"%s\",direction=\"rx\"} %llu\n", name, peer,
	    (unsigned long long)p->rx_ops);
}

static void emit_errors(struct text *t, const char *name, const char *peer,
			const struct rp_admin_peer *p)
{
	put(t, "%s{peer=\"%s\"} %llu\n", name, peer, (unsigned long long)p->errors);
}

static void emit_reconnects(struct text *t, const char *name, const char *peer,
			    const struct rp_admin_peer *p)
{
	put(t, "%s{peer=\"%s\"} %llu\n", name, peer, (unsigned long long)p->reconnects);
}

static void emit_rtt(struct text *t, const char *name, const char *peer,
		     const struct rp_admin_peer *p)
{
	if (p->rtt_us >= 0)
		put(t, "%s{peer=\"%s\"} %.6f\n", name, peer, (double)p->rtt_us / 1e6);
}

static void peers(struct text *t, struct admin_ctx *ctx)
{
	struct peer_snap ps;
	unsigned up, total;

	admin_peer_counts(ctx, &up, &total);
	gauge1(t, "rdmaproxy_peers", "Configured peers.", total);
	gauge1(t, "rdmaproxy_peers_up", "Configured peers with an established channel.", up);
	if (admin_peers_snapshot(ctx, &ps) < 0) {
		t->err = -ENOMEM;
		return;
	}
	if (ps.n) {
		peer_family(t, ps.v, ps.n, "rdmaproxy_peer_up", "gauge",
			    "1 if the channel to the peer is established, else 0.", emit_up);
		peer_family(t, ps.v, ps.n, "rdmaproxy_peer_bytes_total", "counter",
			    "Payload bytes moved over the peer channel, by direction.", emit_bytes);
		peer_family(t, ps.v, ps.n, "rdmaproxy_peer_operations_total", "counter",
			    "Operations carried over the peer channel, by direction.", emit_ops);
		peer_family(t, ps.v, ps.n, "rdmaproxy_peer_errors_total", "counter",
			    "Operations on the peer channel reported with an error.", emit_errors);
		peer_family(t, ps.v, ps.n, "rdmaproxy_peer_reconnects_total", "counter",
			    "Times the channel to the peer came up again after the first.",
			    emit_reconnects);
		peer_family(t, ps.v, ps.n, "rdmaproxy_peer_rtt_seconds", "gauge",
			    "Last keepalive round trip to the peer (absent: not measured).",
			    emit_rtt);
	}
	free(ps.v);
}

/* Open fds, or -1 when they cannot be counted (no fd left to open the directory). */
static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = -1; /* the directory's own fd */

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* What strangers and fd shortage cost: refusals, failures, suppressed lines. */
static void guards(struct text *t, const struct admin_ctx *ctx)
{
	unsigned pending, refused, i;
	struct rlimit rl;
	long fds = open_fds();

	if (fds >= 0)
		gauge1(t, "process_open_fds", "Open file descriptors of the daemon.",
		       (unsigned long long)fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		gauge1(t, "process_max_fds", "The daemon's limit on open file descriptors.",
		       (unsigned long long)rl.rlim_cur);
	peers_admission(ctx->peers, &pending, &refused);
	gauge1(t, "rdmaproxy_peer_unauthenticated_connections",
	       "Connections to the peer port that have not authenticated yet.", pending);
	gauge1(t, "rdmaproxy_peer_refused_addresses",
	       "Source addresses refused for now after failed handshakes.", refused);
	counter1(t, "rdmaproxy_peer_handshake_failures_total",
		 "Connections to the peer port that ended without authenticating.",
		 stats_totals.peer_handshake_failures);
	family(t, "rdmaproxy_peer_connections_refused_total", "counter",
	       "Connections to the peer port closed before their handshake, by reason.");
	for (i = 0; i < STATS_REFUSALS; i++)
		put(t, "rdmaproxy_peer_connections_refused_total{reason=\"%s\"} %llu\n",
		    stats_refusal_name(i), (unsigned long long)stats_totals.peer_refused[i]);
	counter1(t, "rdmaproxy_client_fd_lost_total",
		 "Client requests failed because the daemon had no fd left to receive theirs.",
		 stats_totals.client_fd_lost);
	counter1(t, "rdmaproxy_client_accept_pauses_total",
		 "Times client accepts paused for want of file descriptors.",
		 stats_totals.client_accept_pauses);
	counter1(t, "rdmaproxy_log_messages_suppressed_total",
		 "Log messages left out by rate limiting (their count is logged instead).",
		 log_suppressed_total());
}

int admin_metrics_text(struct admin_ctx *ctx, char **ret, size_t *ret_len)
{
	struct text t = { .size = 16384 };

	t.buf = malloc(t.size);
	if (!t.buf)
		return -ENOMEM;
	identity(&t, ctx);
	resources(&t, ctx);
	per_user(&t, ctx);
	operations(&t);
	engine_counters(&t, ctx);
	peers(&t, ctx);
	guards(&t, ctx);
	if (t.err) {
		free(t.buf);
		return t.err;
	}
	*ret = t.buf;
	*ret_len = t.len;
	return 0;
}
