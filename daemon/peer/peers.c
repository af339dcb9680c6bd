/* SPDX-License-Identifier: MIT */
/*
 * Peers: one struct peer per [peer "NAME"], one struct peer_link per
 * connection (outbound attempts and inbound ones), the handshake glue, the
 * state machine (connecting, handshaking, up, backoff, down), keepalives,
 * reconnects with backoff, duplicate-connection resolution, reload and the
 * read-only view for status. Data and lookups are in peer_data.c.
 *
 * Anyone can open a connection to the peer port and send a HELLO naming a
 * configured peer, so a link that has not authenticated never changes
 * anything else: not another link, not the peer's state, not its dialling
 * or backoff. How many may be open, and from where, is peer_gate.h's rule;
 * what they make the daemon log is rate-limited per source address.
 * Duplicate connections are resolved when a link authenticates (link_up);
 * at HELLO time a link is only refused when an authenticated link that is
 * already up would win against it anyway.
 */
#include "peer/peer_int.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/stats.h"

struct pping {
	struct pping *next;
	struct peer_link *link;
	uint64_t id, t_usec, deadline_ms;
	void (*cb)(void *ctx, int status, uint64_t rtt_us);
	void *ctx;
};

static uint64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

const char *peer_state_name(enum peer_state s)
{
	static const char *const names[] = { "down", "connecting", "handshaking", "up", "backoff" };

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

static void set_state(struct peer *pr, enum peer_state st, const char *reason)
{
	if (reason && reason[0])
		snprintf(pr->reason, sizeof(pr->reason), "%s", reason);
	if (pr->state == st)
		return;
	if (st == PEER_UP || st == PEER_CONNECTING || st == PEER_HANDSHAKING)
		log_info("peer %s: %s -> %s", pr->conf.name, peer_state_name(pr->state),
			 peer_state_name(st));
	else
		log_notice("peer %s: %s -> %s: %s", pr->conf.name, peer_state_name(pr->state),
			   peer_state_name(st), pr->reason[0] ? pr->reason : "-");
	pr->state = st;
	pr->since_ms = real_ms();
}

static void reject_and_close(struct peer_link *l, uint32_t code, const char *why)
{
	char msg[PP_FIXED_MAX];
	size_t n = peer_hs_reject(msg, code, why);

	link_send(l, msg, n);
	link_close(l, -EPERM, why);
}

/* ---- Dialling and backoff. ---- */

static void dial(struct peer *pr);

static void on_backoff(void *arg)
{
	struct peer *pr = arg;

	if (pr->removed || pr->p->stopping || pr->up || pr->out)
		return;
	dial(pr);
}

static void schedule_retry(struct peer *pr, const char *reason)
{
	uint64_t d = PEER_BACKOFF_MIN_MS;
	unsigned i;

	if (pr->removed || pr->p->stopping || !pr->t)
		return;
	for (i = 0; i < pr->attempts && d < PEER_BACKOFF_MAX_MS; i++)
		d *= 2;
	if (d > PEER_BACKOFF_MAX_MS)
		d = PEER_BACKOFF_MAX_MS;
	/* Full jitter over the upper half: daemons restarted together do not dial in step. */
	d = d / 2 + randombytes_uniform((uint32_t)(d / 2 + 1));
	pr->attempts++;
	set_state(pr, PEER_BACKOFF, reason);
	log_debug("peer %s: next attempt in %llu ms", pr->conf.name, (unsigned long long)d);
	ev_timer_start(pr->p->ev, pr->backoff, d, 0);
}

static struct peer_link *link_new(struct peers *p, struct transport *t, bool outbound)
{
	struct peer_link *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->p = p;
	l->t = t;
	l->outbound = outbound;
	l->state = outbound ? LINK_CONNECTING : LINK_HANDSHAKING;
	l->created_ms = l->last_rx_ms = peer_now_ms();
	l->next = p->links;
	p->links = l;
	return l;
}

static void link_attach(struct peer_link *l, struct peer *pr)
{
	l->peer = pr;
	pr->links++;
}

static void link_unlist(struct peer_link *l)
{
	struct peer_link **pp;

	for (pp = &l->p->links; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			return;
		}
}

static void dial(struct peer *pr)
{
	struct peers *p = pr->p;
	struct peer_link *l;
	char why[160];
	int r;

	/*
	 * Dial even while inbound links naming @pr are authenticating: they are
	 * unauthenticated (maybe not the peer at all), and if one of them is
	 * genuine, link_up() resolves the duplicate once both ends agree.
	 */
	l = link_new(p, pr->t, true);
	if (!l) {
		schedule_retry(pr, "out of memory");
		return;
	}
	link_attach(l, pr);
	snprintf(l->addr, sizeof(l->addr), "%s", pr->address);
	pr->out = l;
	set_state(pr, PEER_CONNECTING, NULL);
	r = pr->t->ops->connect(pr->t, pr->conf.host, pr->conf.port, l, &l->x);
	if (r < 0) {
		pr->out = NULL;
		pr->links--;
		link_unlist(l);
		u64map_free(&l->lookup_ids);
		free(l);
		snprintf(why, sizeof(why), "connect to %s: %s", pr->address, strerror(-r));
		schedule_retry(pr, why);
	}
}

/* ---- Admission of inbound connections (peer_gate.h). ---- */

static struct pgate_limits gate_limits(const struct peers *p)
{
	const struct config *c = p->cfg;

	return (struct pgate_limits){
		.max_total = c->max_unauthenticated,
		.max_per_address = c->max_unauthenticated_per_address,
		.max_failures = c->max_failed_handshakes,
		.refusal_ms = (uint64_t)c->refusal_seconds * 1000u,
	};
}

/* Inbound, and the other side has not proved the key (yet). */
static bool link_pending(const struct peer_link *l)
{
	return !l->outbound && !l->proven && !link_authenticated(l);
}

/*
 * The key of the rate-limited lines about @l: its address, and the name its
 * HELLO gave (one misconfigured peer does not silence another on its host).
 */
static const char *host_key(const struct peer_link *l, char *buf, size_t len)
{
	if (l->hs.peer_name[0])
		snprintf(buf, len, "peer connections from %s as %s", l->host, l->hs.peer_name);
	else
		snprintf(buf, len, "peer connections from %s", l->host);
	return buf;
}

static bool admit(struct peers *p, const char *host)
{
	struct pgate_limits lim = gate_limits(p);
	const struct peer_link *l;
	unsigned all = 0, mine = 0;

	for (l = p->links; l; l = l->next)
		if (link_pending(l)) {
			all++;
			mine += !strcmp(l->host, host);
		}
	switch (pgate_admit(p->gate, &lim, host, all, mine, peer_now_ms())) {
	case PGATE_ADMIT:
		return true;
	case PGATE_TOTAL:
		stats_totals.peer_refused[STATS_REFUSED_TOTAL]++;
		log_ratelimited("peer connections refused (max_unauthenticated)", LOG_WARNING,
				"refusing a peer connection from %s: %u connections are "
				"authenticating already (max_unauthenticated)",
				host, all);
		return false;
	case PGATE_ADDRESS:
		stats_totals.peer_refused[STATS_REFUSED_ADDRESS]++;
		log_ratelimited("peer connections refused (max_unauthenticated_per_address)",
				LOG_WARNING,
				"refusing a peer connection from %s: %u connections from there are "
				"authenticating already (max_unauthenticated_per_address)",
				host, mine);
		return false;
	case PGATE_FAILURES:
		stats_totals.peer_refused[STATS_REFUSED_FAILURES]++;
		log_ratelimited("peer connections refused (failed handshakes)", LOG_WARNING,
				"refusing a peer connection from %s: too many failed handshakes "
				"from there lately (max_failed_handshakes)",
				host);
		return false;
	}
	return false;
}

/*
 * An inbound link ends. One that never proved the key is a failed handshake
 * of its address, unless we closed it ourselves (shutdown, peer removed):
 * counted, perhaps the start of a refusal, and logged within the limits of
 * its address (its failure may have been logged already).
 */
static void inbound_end(struct peer_link *l, const char *as, const char *reason)
{
	struct peers *p = l->p;
	struct pgate_limits lim = gate_limits(p);
	char key[PGATE_HOST_MAX + RP_NAME_MAX + 32], name[RP_NAME_MAX + 8] = "";

	if (as)
		snprintf(name, sizeof(name), " (as %s)", as);
	if (!link_pending(l)) {
		log_info("peer connection from %s%s closed: %s", l->addr, name, reason);
		return;
	}
	if (l->err == -ESHUTDOWN || p->stopping) {
		log_debug("peer connection from %s%s closed: %s", l->addr, name, reason);
		return;
	}
	stats_totals.peer_handshake_failures++;
	if (l->logged)
		log_debug("peer connection from %s%s closed: %s", l->addr, name, reason);
	else
		log_ratelimited(host_key(l, key, sizeof(key)), LOG_INFO,
				"peer connection from %s%s closed: %s", l->addr, name, reason);
	if (pgate_failed(p->gate, &lim, l->host, peer_now_ms()))
		log_ratelimited("peer addresses refused", LOG_WARNING,
				"refusing peer connections from %s for %u s: %u failed handshakes "
				"(max_failed_handshakes)",
				l->host, p->cfg->refusal_seconds, p->cfg->max_failed_handshakes);
}

/* ---- Transport up-calls: connection life. ---- */

static const struct peer_conf *hs_lookup(void *ctx, const char *name)
{
	struct peer *pr = peer_find(ctx, name);

	return pr ? &pr->conf : NULL;
}

struct peer_link *peer_x_accepted(struct transport *t, struct xconn *x, const char *addr)
{
	struct peers *p = t->owner;
	char host[PGATE_HOST_MAX];
	struct peer_link *l;

	if (p->stopping)
		return NULL;
	pgate_host(addr, host, sizeof(host));
	if (!admit(p, host))
		return NULL;
	l = link_new(p, t, false);
	if (!l)
		return NULL;
	l->x = x;
	snprintf(l->addr, sizeof(l->addr), "%s", addr);
	snprintf(l->host, sizeof(l->host), "%s", host);
	peer_hs_init_responder(&l->hs, p->node_name, p->incarnation, hs_lookup, p);
	log_debug("peer connection from %s (%s)", addr, t->ops->name);
	return l;
}

void peer_x_ours(struct peer_link *l)
{
	l->err = -ESHUTDOWN;
}

bool peer_x_pending(const struct peer_link *l)
{
	return link_pending(l);
}

void peer_x_connected(struct peer_link *l)
{
	struct pp_hello hello;

	l->state = LINK_HANDSHAKING;
	l->created_ms = l->last_rx_ms = peer_now_ms();
	peer_hs_init_initiator(&l->hs, l->p->node_name, l->p->incarnation, &l->peer->conf, &hello);
	if (l->peer->out == l)
		set_state(l->peer, PEER_HANDSHAKING, NULL);
	link_send(l, &hello, sizeof(hello));
}

void peer_x_alive(struct peer_link *l)
{
	l->last_rx_ms = peer_now_ms();
}

static void fail_pings(struct peers *p, struct peer_link *l)
{
	struct pping **pp = &p->pings, *g;

	while ((g = *pp)) {
		if (g->link != l) {
			pp = &g->next;
			continue;
		}
		*pp = g->next;
		g->cb(g->ctx, -RP_EPEERDOWN, 0);
		free(g);
	}
}

static void maybe_free_peer(struct peer *pr);
static void free_transports(struct peers *p);

void peer_x_failed(struct peer_link *l, int err, const char *why)
{
	struct peers *p = l->p;
	struct peer *pr = l->peer;
	const char *reason = l->why[0] ? l->why : why;
	char buf[300];

	l->state = LINK_CLOSING;
	link_unlist(l);
	data_link_failed(l);
	fail_pings(p, l);
	peer_hs_clear(&l->hs);
	if (pr) {
		bool was_up = pr->up == l;

		if (was_up)
			pr->up = NULL;
		if (pr->out == l)
			pr->out = NULL;
		/* Parked ops may have waited for this link to be settled: the one up stays. */
		if (!p->stopping && !pr->removed)
			data_replay(pr);
		pr->links--;
		if (was_up)
			log_warn("peer %s: link %s lost: %s", pr->conf.name, l->addr, reason);
		else if (!l->outbound)
			inbound_end(l, pr->conf.name, reason);
		/*
		 * Only our own attempt or the authenticated link drive the state
		 * and the dialling: an inbound link that never authenticated may
		 * be anybody's, and its end must not reset the backoff timer.
		 */
		if ((l->outbound || was_up) && l->end != LINK_END_SUPERSEDED && !pr->removed &&
		    !p->stopping && !pr->up && !pr->out) {
			snprintf(buf, sizeof(buf), "%s%s", was_up ? "link lost: " : "", reason);
			schedule_retry(pr, buf);
		}
		if (pr->removed)
			maybe_free_peer(pr);
	} else {
		inbound_end(l, NULL, reason);
	}
	u64map_free(&l->lookup_ids);
	free(l);
	if (p->stopping && !p->links)
		free_transports(p);
}

/* ---- Handshake and duplicate connections. ---- */

static void supersede(struct peer_link *old)
{
	old->end = LINK_END_SUPERSEDED;
	link_close(old, -EEXIST, "superseded by another connection to the same peer");
}

/*
 * Responder, HELLO accepted (not authenticated yet): refuse it only if the
 * link that is already up would win against it. Nothing else is touched:
 * the HELLO may come from anybody.
 */
static bool inbound_wanted(struct peer_link *l, struct peer *pr)
{
	return !pr->up || link_closing(pr->up) || link_prefer(l, pr->up);
}

/*
 * @l just authenticated: settle duplicates against the link that is up and
 * our own attempt in progress. False if @l lost (it is closed). Inbound
 * links still authenticating are left alone: each is settled when (if) it
 * authenticates. A superseded attempt is not redialled, but the link that
 * won is up, and its loss schedules a redial (peer_x_failed()).
 */
static bool link_wins(struct peer_link *l)
{
	struct peer *pr = l->peer;

	if (pr->up && pr->up != l) {
		if (!link_prefer(l, pr->up)) {
			supersede(l);
			return false;
		}
		supersede(pr->up);
		pr->up = NULL;
	}
	if (pr->out && pr->out != l && link_prefer(l, pr->out)) {
		supersede(pr->out);
		pr->out = NULL;
	}
	return true;
}

static void link_up(struct peer_link *l)
{
	struct peer *pr = l->peer;
	uint64_t inc = l->hs.peer_inc;

	if (!link_wins(l))
		return;
	if (pr->out == l)
		pr->out = NULL;
	l->state = LINK_UP;
	l->remote_inc = inc;
	l->last_rx_ms = peer_now_ms();
	peer_hs_clear(&l->hs);
	if (pr->incarnation != inc) /* export ids start again in a new incarnation */
		memset(pr->dead_ids, 0, sizeof(pr->dead_ids));
	if (pr->incarnation && pr->incarnation != inc)
		log_notice("peer %s restarted (incarnation %016llx -> %016llx): handles opened "
			   "before fail with RP_ESTALE",
			   pr->conf.name, (unsigned long long)pr->incarnation,
			   (unsigned long long)inc);
	pr->incarnation = inc;
	if (pr->ever_up)
		pr->reconnects++;
	pr->ever_up = true;
	pr->attempts = 0;
	pr->up = l;
	ev_timer_stop(pr->p->ev, pr->backoff);
	set_state(pr, PEER_UP, NULL);
	log_info("peer %s: authenticated, %s link %s over %s, incarnation %016llx", pr->conf.name,
		 l->outbound ? "outbound" : "inbound", l->addr, l->t->ops->name,
		 (unsigned long long)inc);
	data_link_up(l);
}

/* Send our REJECT of a failed handshake and close. */
static void reject_failed(struct peer_link *l)
{
	_Alignas(8) char msg[PP_FIXED_MAX];
	size_t n = peer_hs_reject(msg, l->hs.reject_code, l->hs.why);

	link_send(l, msg, n);
	link_close(l, -EPERM, l->hs.why);
}

/* @reject: our REJECT to send (@n bytes), or none when the other side rejected first. */
static void hs_failed(struct peer_link *l, const void *reject, size_t n)
{
	const char *who = l->peer ? l->peer->conf.name : l->hs.peer_name[0] ? l->hs.peer_name : "?";
	struct pgate_limits lim = gate_limits(l->p);
	char buf[400], key[PGATE_HOST_MAX + RP_NAME_MAX + 32];
	uint64_t delay = 0;

	snprintf(buf, sizeof(buf), "handshake with %s (%s) failed: %s", who, l->addr, l->hs.why);
	/*
	 * A DUPLICATE refusal means the other side has a link up that wins; it
	 * is not marked superseded, so if we have no link up after all (it died
	 * meanwhile) the peer is redialled with backoff rather than forgotten.
	 */
	if (l->hs.reject_code == PP_REJ_DUPLICATE)
		log_debug("%s", buf);
	else if (l->outbound)
		log_warn("%s", buf);
	else
		log_ratelimited(host_key(l, key, sizeof(key)), LOG_WARNING, "%s", buf);
	l->logged = true;
	/* A stranger failing again and again waits for each answer (peer_gate.h). */
	if (n && !l->outbound)
		delay = pgate_delay(l->p->gate, &lim, l->host, peer_now_ms());
	if (delay) {
		l->hold_until_ms = peer_now_ms() + delay;
		return;
	}
	if (n)
		link_send(l, reject, n);
	link_close(l, -EPERM, l->hs.why);
}

static void hs_step(struct peer_link *l, const void *msg, size_t len)
{
	_Alignas(8) char out[PP_FIXED_MAX];
	size_t n = 0;
	int r = peer_hs_consume(&l->hs, msg, len, out, &n);

	if (r == HS_STEP_FAILED) {
		hs_failed(l, out, n);
		return;
	}
	if (r == HS_STEP_DONE && !l->outbound) {
		/* The other daemon proved the key: its address is a peer's. */
		struct pgate_limits lim = gate_limits(l->p);

		l->proven = true;
		pgate_trust(l->p->gate, &lim, l->host, peer_now_ms());
	}
	if (!l->outbound && !l->peer && l->hs.state == HS_R_SENT_CHALLENGE) {
		struct peer *pr = peer_find(l->p, l->hs.peer_name);

		link_attach(l, pr);
		if (!pr->t || pr->t != l->t) {
			reject_and_close(l, PP_REJ_UNKNOWN,
					 "peer configured for another transport");
			return;
		}
		if (!inbound_wanted(l, pr)) {
			reject_and_close(l, PP_REJ_DUPLICATE,
					 "a connection between these daemons already exists");
			return;
		}
	}
	/*
	 * Responder, authenticated: if our own connection attempt to the same
	 * peer is under way and wins the duplicate rule, refuse this one before
	 * READY, so neither side ever puts traffic on a link we would supersede
	 * a moment later (the peer's ops on it would end RP_EOUTCOME). The peer
	 * applies the same rule, so exactly one of the two links completes.
	 */
	if (r == HS_STEP_DONE && !l->outbound && l->peer->out && l->peer->out != l &&
	    !link_closing(l->peer->out) && link_prefer(l->peer->out, l)) {
		reject_and_close(l, PP_REJ_DUPLICATE,
				 "our own connection to this peer is completing and wins");
		return;
	}
	/*
	 * The other daemon just proved it knows the key (initiator: its
	 * CHALLENGE; responder: its AUTH). Open one-sided access before our
	 * reply leaves: whatever it sends after that reply may use it.
	 */
	if (((r == HS_STEP_DONE && !l->outbound) ||
	     (r == HS_STEP_MORE && l->hs.state == HS_I_SENT_AUTH)) &&
	    l->t->ops->open_access) {
		int e = l->t->ops->open_access(l->x);

		if (e < 0) {
			link_close(l, e, "cannot open the connection for one-sided access");
			return;
		}
	}
	if (n)
		link_send(l, out, n);
	if (r == HS_STEP_DONE)
		link_up(l);
}

static void on_pong(struct peer_link *l, const struct pp_ping *m)
{
	struct pping **pp, *g;
	uint64_t now = peer_mono_us();
	uint64_t rtt = now > m->t_usec ? now - m->t_usec : 0;

	for (pp = &l->p->pings; (g = *pp); pp = &g->next)
		if (g->id == m->h.id && g->link == l) {
			*pp = g->next;
			g->cb(g->ctx, 0, rtt);
			free(g);
			break;
		}
	l->peer->rtt_us = (int64_t)rtt;
}

void peer_x_ctrl(struct peer_link *l, const void *msg, size_t len)
{
	struct pp_hdr h;
	const char *why = "?";

	if (link_closing(l) || l->hold_until_ms)
		return;
	if (l->state < LINK_UP) {
		hs_step(l, msg, len);
		return;
	}
	if (pp_check(msg, len, &why) < 0) {
		link_close(l, -EPROTO, why);
		return;
	}
	memcpy(&h, msg, sizeof(h));
	switch (h.type) {
	case PP_PING: {
		struct pp_ping m;

		memcpy(&m, msg, sizeof(m));
		m.h.type = PP_PONG;
		link_send(l, &m, sizeof(m));
		return;
	}
	case PP_PONG: {
		struct pp_ping m;

		memcpy(&m, msg, sizeof(m));
		on_pong(l, &m);
		return;
	}
	case PP_REJECT: {
		struct pp_reject m;
		char buf[200];

		memcpy(&m, msg, sizeof(m));
		snprintf(buf, sizeof(buf), "closed by the peer: %s", m.reason);
		link_close(l, -ECONNRESET, buf);
		return;
	}
	case PP_HELLO:
	case PP_CHALLENGE:
	case PP_AUTH:
	case PP_READY:
		link_close(l, -EPROTO, "handshake message on an authenticated link");
		return;
	default:
		data_on_ctrl(l, msg, len);
		return;
	}
}

/* ---- Timers. ---- */

static void send_ping(struct peer_link *l, uint64_t id)
{
	struct pp_ping m;

	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, PP_PING, id);
	m.t_usec = peer_mono_us();
	link_send(l, &m, sizeof(m));
}

static void tick_link(struct peer_link *l, uint64_t now)
{
	char why[96];

	if (link_closing(l))
		return;
	if (l->hold_until_ms) {
		if (now >= l->hold_until_ms)
			reject_failed(l);
		return;
	}
	if (l->state < LINK_UP) {
		if (now - l->created_ms > PEER_HANDSHAKE_MS)
			link_close(l, -ETIMEDOUT,
				   l->state == LINK_HANDSHAKING ? "handshake timeout"
								: "connect timeout");
		return;
	}
	if (now - l->last_rx_ms > PEER_KEEPALIVE_DEAD_MS) {
		snprintf(why, sizeof(why), "keepalive timeout: nothing heard for %u s",
			 PEER_KEEPALIVE_DEAD_MS / 1000);
		link_close(l, -ETIMEDOUT, why);
		return;
	}
	if (l->state == LINK_DRAINING && now - l->drain_ms > PEER_DRAIN_MS) {
		link_close(l, -ESHUTDOWN, "peer removed from the configuration (drain timeout)");
		return;
	}
	send_ping(l, ++l->p->ping_seq);
}

static void on_tick(void *arg)
{
	struct peers *p = arg;
	struct peer_link *l, *next;
	struct pping **pp, *g;
	uint64_t now = peer_now_ms();

	for (l = p->links; l; l = next) {
		next = l->next;
		tick_link(l, now);
	}
	data_tick(p, now);
	pp = &p->pings;
	while ((g = *pp)) {
		if (now < g->deadline_ms) {
			pp = &g->next;
			continue;
		}
		*pp = g->next;
		g->cb(g->ctx, -ETIMEDOUT, 0);
		free(g);
	}
}

/* ---- Peers from the config. ---- */

static int conf_copy(struct peer_conf *dst, const struct peer_conf *src)
{
	*dst = *src;
	/* Access is read from the running config (p->cfg): no copy to go stale. */
	dst->export_uids = NULL;
	dst->n_export_uids = 0;
	dst->export_gids = NULL;
	dst->n_export_gids = 0;
	dst->name = strdup(src->name);
	dst->host = strdup(src->host);
	dst->key_file = src->key_file ? strdup(src->key_file) : NULL;
	return dst->name && dst->host ? 0 : -ENOMEM;
}

static void conf_wipe(struct peer_conf *c)
{
	free(c->name);
	free(c->host);
	free(c->key_file);
	sodium_memzero(c->key, sizeof(c->key));
	memset(c, 0, sizeof(*c));
}

static void maybe_free_peer(struct peer *pr)
{
	struct peer **pp;

	if (pr->links)
		return;
	data_peer_drop(pr, -RP_EPEERDOWN);
	/*
	 * Removed from the running configuration (not a changed peer, whose
	 * new entry goes on with its lookups): they go, with their MRs.
	 */
	if (pr->removed && !pr->p->stopping && !config_peer(pr->p->cfg, pr->conf.name))
		data_peer_forget(pr->p, pr);
	for (pp = &pr->p->head; *pp; pp = &(*pp)->next)
		if (*pp == pr) {
			*pp = pr->next;
			break;
		}
	ev_timer_free(pr->p->ev, pr->backoff);
	conf_wipe(&pr->conf);
	free(pr);
}

static struct transport *pick_transport(struct peers *p, const struct peer_conf *c)
{
	enum rp_transport_kind k = c->transport == RP_TRANSPORT_AUTO ? p->transport : c->transport;

	return k == RP_TRANSPORT_VERBS ? p->verbs : p->tcp;
}

static int peer_add(struct peers *p, const struct peer_conf *c)
{
	struct peer *pr = calloc(1, sizeof(*pr)), **tail;
	int r;

	if (!pr)
		return -ENOMEM;
	pr->p = p;
	pr->rtt_us = -1;
	r = conf_copy(&pr->conf, c);
	if (r == 0)
		r = ev_timer_new(p->ev, on_backoff, pr, &pr->backoff);
	if (r < 0) {
		conf_wipe(&pr->conf);
		free(pr);
		return r;
	}
	snprintf(pr->address, sizeof(pr->address), strchr(c->host, ':') ? "[%s]:%u" : "%s:%u",
		 c->host, c->port);
	pr->t = pick_transport(p, c);
	pr->since_ms = real_ms();
	for (tail = &p->head; *tail; tail = &(*tail)->next)
		;
	*tail = pr;
	if (!pr->t) {
		set_state(pr, PEER_DOWN, "the verbs peer transport is not available in this build");
		log_warn("peer %s: %s", pr->conf.name, pr->reason);
		return 0;
	}
	dial(pr);
	return 0;
}

static void peer_remove(struct peer *pr, const char *why)
{
	struct peer_link *l, *next;

	pr->removed = true;
	ev_timer_stop(pr->p->ev, pr->backoff);
	set_state(pr, PEER_DOWN, why);
	data_peer_drop(pr, -RP_EPEERDOWN);
	if (pr->out) {
		link_close(pr->out, -ESHUTDOWN, why);
		pr->out = NULL;
	}
	if (pr->up && link_usable(pr->up)) {
		pr->up->state = LINK_DRAINING;
		pr->up->drain_ms = peer_now_ms();
		data_check_drained(pr->up);
	}
	for (l = pr->p->links; l; l = next) {
		next = l->next;
		if (l->peer == pr && !link_authenticated(l))
			link_close(l, -ESHUTDOWN, why);
	}
	/* Freed now, or when its last link has reported (peer_x_failed()). */
	maybe_free_peer(pr);
}

static bool conf_same(const struct peer_conf *a, const struct peer_conf *b)
{
	return !strcmp(a->host, b->host) && a->port == b->port && a->transport == b->transport &&
	       a->key_len == b->key_len && !sodium_memcmp(a->key, b->key, a->key_len);
}

void peers_reload(struct peers *p, const struct config *cfg)
{
	struct peer *pr, *next;
	size_t i;

	if (!p || p->stopping)
		return;
	p->cfg = cfg;
	for (pr = p->head; pr; pr = next) {
		const struct peer_conf *c;

		next = pr->next;
		if (pr->removed)
			continue;
		c = config_peer(cfg, pr->conf.name);
		if (!c) {
			log_info("reload: peer %s removed: draining and closing", pr->conf.name);
			peer_remove(pr, "removed from the configuration");
		} else if (!conf_same(c, &pr->conf)) {
			struct prevoke *pending = data_take_revokes(pr);

			log_info("reload: peer %s changed: reconnecting", pr->conf.name);
			peer_remove(pr, "settings changed by a reload");
			peer_add(p, c);
			/* Its withdrawals still pending go to its next link. */
			data_give_revokes(peer_find(p, c->name), pending);
		}
	}
	for (i = 0; i < cfg->n_peers; i++)
		if (!peer_find(p, cfg->peers[i].name)) {
			log_info("reload: peer %s added", cfg->peers[i].name);
			peer_add(p, &cfg->peers[i]);
		}
	data_recheck(p);
}

static int open_listener(struct peers *p)
{
	const struct config *cfg = p->cfg;
	struct transport *lt;
	char why[256];
	int r;

	if (!cfg->listen_port)
		return 0;
	lt = p->transport == RP_TRANSPORT_VERBS && p->verbs ? p->verbs : p->tcp;
	r = lt->ops->listen(lt, cfg->listen_host, cfg->listen_port, why, sizeof(why));
	if (r < 0)
		log_err("%s", why);
	else
		log_info("peer listener on %s:%u (%s)", cfg->listen_host, cfg->listen_port,
			 lt->ops->name);
	return r;
}

int peers_new(const struct peers_env *env, struct peers **ret)
{
	struct peers *p = calloc(1, sizeof(*p));
	size_t i;
	int r;

	if (!p)
		return -ENOMEM;
	if (sodium_init() < 0) {
		free(p);
		return -EIO;
	}
	p->core = env->core;
	p->cfg = env->cfg;
	p->ev = env->ev;
	p->incarnation = env->incarnation;
	p->transport = env->transport;
	p->tcp = env->tcp;
	p->verbs = env->verbs;
	p->tcp->owner = p;
	if (p->verbs)
		p->verbs->owner = p;
	snprintf(p->node_name, sizeof(p->node_name), "%s", p->cfg->node_name);
	*ret = p; /* the manager stops and frees it whatever happens next */
	r = pgate_new(&p->gate);
	if (r == 0)
		r = ev_timer_new(p->ev, on_tick, p, &p->tick);
	if (r < 0)
		return r;
	p->core->peer_ops = &peers_core_ops;
	p->core->peers = p;
	r = open_listener(p);
	if (r < 0)
		return r;
	ev_timer_start(p->ev, p->tick, PEER_TICK_MS, PEER_TICK_MS);
	for (i = 0; i < p->cfg->n_peers; i++) {
		r = peer_add(p, &p->cfg->peers[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

static void free_transports(struct peers *p)
{
	if (p->freed_transports)
		return;
	p->freed_transports = true;
	if (p->tcp)
		p->tcp->ops->free(p->tcp);
	if (p->verbs)
		p->verbs->ops->free(p->verbs);
}

void peers_shutdown(struct peers *p)
{
	struct peer_link *l, *next;
	struct peer *pr;

	if (!p || p->stopping)
		return;
	p->stopping = true;
	ev_timer_free(p->ev, p->tick);
	p->tick = NULL;
	for (pr = p->head; pr; pr = pr->next) {
		if (!pr->removed)
			set_state(pr, PEER_DOWN, "shutting down");
		data_peer_drop(pr, -RP_EPEERDOWN);
		ev_timer_free(p->ev, pr->backoff);
		pr->backoff = NULL;
	}
	for (l = p->links; l; l = next) {
		next = l->next;
		if (!link_authenticated(l))
			l->end = LINK_END_SUPERSEDED;
		link_close(l, -ESHUTDOWN, "shutting down");
	}
	if (!p->links)
		free_transports(p);
}

struct peers *peers_free(struct peers *p)
{
	struct peer *pr;

	if (!p)
		return NULL;
	p->core->peer_ops = NULL;
	p->core->peers = NULL;
	while ((pr = p->head)) {
		p->head = pr->next;
		conf_wipe(&pr->conf);
		free(pr);
	}
	while (p->pings) {
		struct pping *g = p->pings;

		p->pings = g->next;
		free(g);
	}
	pgate_free(p->gate);
	free(p);
	return NULL;
}

/* ---- Status and admin. ---- */

void peers_foreach(struct peers *p, void (*cb)(const struct peer_info *info, void *ctx), void *ctx)
{
	struct peer *pr;

	if (!p)
		return;
	for (pr = p->head; pr; pr = pr->next) {
		struct peer_info in = {
			.name = pr->conf.name,
			.address = pr->address,
			.transport = pr->t ? pr->t->ops->name : "none",
			.state = pr->state,
			.state_since_ms = pr->since_ms,
			.last_error = pr->reason,
			.direction = pr->up ? (pr->up->outbound ? "outbound" : "inbound") : "",
			.incarnation = pr->incarnation,
			.rtt_us = pr->rtt_us,
			.bytes_out = pr->bytes_out,
			.bytes_in = pr->bytes_in,
			.ops_out = pr->ops_out,
			.ops_in = pr->ops_in,
			.errors = pr->errors,
			.reconnects = pr->reconnects,
		};

		if (!pr->removed)
			cb(&in, ctx);
	}
}

void peers_admission(const struct peers *p, unsigned *ret_pending, unsigned *ret_refused)
{
	const struct peer_link *l;
	struct pgate_limits lim;

	*ret_pending = *ret_refused = 0;
	if (!p)
		return;
	for (l = p->links; l; l = l->next)
		*ret_pending += link_pending(l);
	lim = gate_limits(p);
	*ret_refused = pgate_refused(p->gate, &lim, peer_now_ms());
}

unsigned peers_up(const struct peers *p)
{
	const struct peer *pr;
	unsigned n = 0;

	if (!p)
		return 0;
	for (pr = p->head; pr; pr = pr->next)
		n += !pr->removed && pr->up;
	return n;
}

int peer_ping(struct peers *p, const char *name, void (*cb)(void *ctx, int status, uint64_t rtt_us),
	      void *ctx)
{
	struct peer *pr = p ? peer_find(p, name) : NULL;
	struct pping *g;

	if (!pr)
		return -RP_EPEERUNKNOWN;
	if (!pr->up || link_closing(pr->up))
		return -RP_EPEERDOWN;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->link = pr->up;
	g->id = ++p->ping_seq;
	g->deadline_ms = peer_now_ms() + PEER_PING_TIMEOUT_MS;
	g->cb = cb;
	g->ctx = ctx;
	g->next = p->pings;
	p->pings = g;
	send_ping(pr->up, g->id);
	return 0;
}

void peer_ping_cancel(struct peers *p, void *ctx)
{
	struct pping **pp, *g;

	if (!p)
		return;
	pp = &p->pings;
	while ((g = *pp)) {
		if (g->ctx != ctx) {
			pp = &g->next;
			continue;
		}
		*pp = g->next;
		free(g);
	}
}
