/* SPDX-License-Identifier: MIT */
/*
 * Peers, the data side: export lookups for clients (asynchronous: the
 * client's REMOTE_OPEN is answered when the LOOKUP reply comes), client ops
 * sent to a peer with their exactly-once reports, and the requests a peer
 * makes of this daemon's exports and endpoints, checked here against the
 * live export on every op.
 */
#include "peer/peer_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

_Static_assert(PEER_XINFO_MAX == sizeof(((struct remote *)0)->xinfo), "xinfo size");

/* A client op on its way to a peer. */
struct pop {
	struct peer_op op; /* first: the transport sees this part */
	struct pop *prev, *next;
	struct peer_link *link; /* NULL while parked on the peer for a replay */
	struct peer *peer;
	uint64_t parked_ms; /* when it was parked */
	struct op *cop;	    /* the client's operation (core.h) */
};

struct plookup {
	struct plookup *next, **pprev; /* in l->lookups */
	uint64_t id;
	struct session *s;
	struct rp_hdr h;
	char name[RP_NAME_MAX];
};

/* An export withdrawn here whose MR waits for one link's PP_REVOKE_R. */
struct prevoke {
	struct prevoke *next;
	struct export *e; /* referenced, and its MR pinned (e->ops) */
	struct vmr *mr;	  /* verbs: the peer's own MR of it, dropped with this (or NULL) */
	uint64_t id;
	uint64_t deadline_ms;
	/*
	 * REVOKE_WAIT_MS passed: the MR, the pin and the export were let go
	 * (@e is NULL), but the record stays until the peer confirms (at most
	 * REVOKE_KEEP_MAX of them), so that a link it makes later hears of the
	 * withdrawal early: before its own new operations, which would meet the
	 * stale rkey and fail its QP under its other clients' operations. (Ops
	 * it replays the moment the link is up can still get there first.)
	 */
	bool let_go;
};

/* How long an importer may take to confirm a withdrawal before the MR goes anyway. */
#define REVOKE_WAIT_MS 5000
/* Withdrawals past that wait kept per peer until it confirms (the oldest go first). */
#define REVOKE_KEEP_MAX 1024
/*
 * How long a peer may go on moving bytes of an export after it was withdrawn
 * before its link is closed (which ends the transfer and lets the owner's
 * rp_region_unexport() return).
 */
#define RX_DEAD_WAIT_MS 10000
/* How long an op flushed behind a refused request waits for the peer's next link. */
#define REPLAY_WAIT_MS 5000

/* What an incoming request holds while its bytes move. */
struct rxtok {
	struct region *region;	   /* WRITE/READ: referenced */
	struct export *e;	   /* WRITE/READ: referenced and pinned (unexport waits for it) */
	struct rxtok *next, *prev; /* WRITE/READ: in l->rxs */
	struct peer_link *l;
	uint64_t dead_ms;	 /* when data_tick() first saw its export withdrawn (0: not yet) */
	struct session *t;	 /* WRITE with notify: the exporter, holding a slot */
	struct op *rop;		 /* SEND: the posted receive taken */
	struct region *t_region; /* with @t: the notified region, referenced */
};

/* ---- Lookups. ---- */

static int known(void *peers, const char *peer)
{
	return peer_find(peers, peer) ? 0 : -RP_EPEERUNKNOWN;
}

static int remote_open(void *peers, struct session *s, const struct rp_hdr *h, const char *peer,
		       const char *name)
{
	struct peer *pr = peer_find(peers, peer);
	struct plookup *lk;
	struct pp_lookup m;
	struct peer_link *l;

	if (!pr)
		return -RP_EPEERUNKNOWN;
	l = pr->up;
	if (!l || !link_usable(l))
		return -RP_EPEERDOWN;
	lk = calloc(1, sizeof(*lk));
	if (!lk)
		return -ENOMEM;
	lk->id = ++l->next_id;
	if (u64map_put(&l->lookup_ids, lk->id, lk) < 0) {
		free(lk);
		return -ENOMEM;
	}
	lk->h = *h;
	snprintf(lk->name, sizeof(lk->name), "%s", name);
	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, PP_LOOKUP, lk->id);
	memcpy(m.name, lk->name, sizeof(m.name));
	if (link_send(l, &m, sizeof(m)) < 0) {
		u64map_del(&l->lookup_ids, lk->id);
		free(lk);
		return -RP_EPEERDOWN;
	}
	lk->s = s;
	session_hold(s);
	lk->next = l->lookups;
	if (lk->next)
		lk->next->pprev = &lk->next;
	lk->pprev = &l->lookups;
	l->lookups = lk;
	return 0;
}

static void lookup_reply(struct plookup *lk, int status, const struct pp_lookup_r *m,
			 struct peer *pr)
{
	struct remote info;

	memset(&info, 0, sizeof(info));
	if (status == 0) {
		snprintf(info.peer, sizeof(info.peer), "%s", pr->conf.name);
		info.inc = m->export_inc;
		info.id = m->export_id;
		info.len = m->len;
		info.access = m->access;
		info.xinfo_len = m->xinfo_len;
		memcpy(info.xinfo, m->xinfo, sizeof(info.xinfo));
	}
	remote_opened(lk->s, &lk->h, status, &info);
	session_put(lk->s);
	free(lk);
}

/* @lk leaves @l's lookups (its reply came, or the link went). */
static void lookup_unlink(struct peer_link *l, struct plookup *lk)
{
	u64map_del(&l->lookup_ids, lk->id);
	*lk->pprev = lk->next;
	if (lk->next)
		lk->next->pprev = lk->pprev;
}

static void on_lookup_r(struct peer_link *l, const struct pp_lookup_r *m)
{
	/* By id, not by a walk past every user's lookups waiting on this link. */
	struct plookup *lk = u64map_get(&l->lookup_ids, m->h.id);

	if (!lk) {
		link_close(l, -EPROTO, "lookup reply matches no lookup");
		return;
	}
	lookup_unlink(l, lk);
	if (m->status == 0 && m->export_inc != l->remote_inc) {
		link_close(l, -EPROTO, "lookup reply for another incarnation");
		lookup_reply(lk, -RP_EPEERDOWN, m, l->peer);
		return;
	}
	lookup_reply(lk, m->status, m, l->peer);
	data_check_drained(l);
}

/* The key of the rate-limited lines about peer @l. */
static const char *peer_key(const struct peer_link *l, char *buf, size_t len)
{
	snprintf(buf, len, "peer %s", l->peer->conf.name);
	return buf;
}

/* Peer @l may not open @e: counted, and logged per peer. */
static int lookup_refused(struct peer_link *l, const struct export *e)
{
	const char *name = l->peer->conf.name;
	struct creds owner;
	char key[RP_NAME_MAX + 8];

	export_owner(e, &owner);
	stats_totals.export_refused[STATS_FROM_PEER]++;
	log_ratelimited(peer_key(l, key, sizeof(key)), LOG_WARNING,
			"peer %s: opening export '%s' of uid %d refused: the export does not "
			"name this peer, and its [peer \"%s\"] section grants no exports of that "
			"user (exports, export_users, export_groups)",
			name, e->name, (int)owner.uid, name);
	return -RP_EEXPORT_DENIED;
}

/* Answer LOOKUP @id of @e, which peer @l may open and looked up (status @err: 0 so far). */
static void lookup_answer(struct peer_link *l, struct export *e, uint64_t id, int err)
{
	struct pp_lookup_r r;
	int n;

	memset(&r, 0, sizeof(r));
	pp_hdr_init(&r.h, PP_LOOKUP_R, id);
	n = err < 0 ? err
		    : l->t->ops->export_info(l->t, e, l->peer->conf.name, r.xinfo, sizeof(r.xinfo));
	if (n < 0) {
		char key[RP_NAME_MAX + 8];

		log_ratelimited(peer_key(l, key, sizeof(key)), LOG_WARNING,
				"peer %s: lookup of export '%s' failed: %s", l->peer->conf.name,
				e->name, rp_strerror(n));
		r.status = n;
	} else {
		r.xinfo_len = (uint32_t)n;
		r.export_id = e->peer_id;
		r.export_inc = l->p->incarnation;
		r.len = e->region->len;
		r.access = e->access;
	}
	log_debug("peer %s looked up '%s': %s", l->peer->conf.name, e->name,
		  r.status ? rp_strerror(r.status) : "ok");
	link_send(l, &r, sizeof(r));
}

/* A LOOKUP whose MR is being registered (off the loop thread). */
struct pserve {
	struct pserve *next, **pprev; /* in link->serving */
	struct peer_link *link;	      /* NULL once the link failed: nobody to answer */
	struct export *e;	      /* held by the registration until serve_done() returns */
	uint64_t id;
};

static void serving_unlink(struct pserve *ps)
{
	*ps->pprev = ps->next;
	if (ps->next)
		ps->next->pprev = ps->pprev;
}

static void serve_done(void *arg, int status)
{
	struct pserve *ps = arg;
	struct peer_link *l = ps->link;

	if (l) {
		serving_unlink(ps);
		if (!link_closing(l))
			lookup_answer(l, ps->e, ps->id, status);
	}
	free(ps);
}

static void on_lookup(struct peer_link *l, const struct pp_lookup *m)
{
	struct peers *p = l->p;
	struct export *e = export_find(p->core, m->name);
	struct pp_lookup_r r;
	struct pserve *ps;
	int err;

	memset(&r, 0, sizeof(r));
	pp_hdr_init(&r.h, PP_LOOKUP_R, m->h.id);
	if (!e || e->dead || !e->region) {
		r.status = -RP_ENOEXPORT;
	} else if (!export_may_open_peer(e, config_peer(p->cfg, l->peer->conf.name))) {
		r.status = lookup_refused(l, e);
	} else {
		/* First: on verbs the looker gets its own MR, whose rkey the info carries. */
		err = export_publish(p->core, e, l->peer->conf.name);
		if (err == 0 && l->t->ops->peer_mr) {
			/* Registering it pins every page: milliseconds, off the loop thread. */
			ps = calloc(1, sizeof(*ps));
			if (!ps) {
				lookup_answer(l, e, m->h.id, -ENOMEM);
				return;
			}
			ps->link = l;
			ps->e = e;
			ps->id = m->h.id;
			ps->next = l->serving;
			ps->pprev = &l->serving;
			if (ps->next)
				ps->next->pprev = &ps->next;
			l->serving = ps;
			err = export_peer_mr_prepare(e, l->peer->conf.name, serve_done, ps);
			if (err == EXPORT_LATER)
				return; /* serve_done() answers, maybe done already */
			serving_unlink(ps);
			free(ps);
		}
		lookup_answer(l, e, m->h.id, err);
		return;
	}
	log_debug("peer %s looked up '%s': %s", l->peer->conf.name, m->name, rp_strerror(r.status));
	link_send(l, &r, sizeof(r));
}

/* ---- Client ops to a peer. ---- */

static void pop_unlink(struct pop *o)
{
	if (o->prev)
		o->prev->next = o->next;
	else
		o->link->ops = o->next;
	if (o->next)
		o->next->prev = o->prev;
	o->prev = o->next = NULL;
}

/* The op's one report: counted on the peer, ended in the core. */
static void pop_report(struct pop *o, int status)
{
	struct peer *pr = o->peer;

	if (pr) {
		/* Payload direction: a READ's bytes come in, a WRITE's or SEND's go out. */
		if (status)
			pr->errors++;
		else if (o->op.kind == PEER_OP_READ)
			pr->bytes_in += o->op.len;
		else
			pr->bytes_out += o->op.len;
	}
	op_end(o->cop, status);
	free(o);
}

/*
 * The peer withdrew its export @id (a PP_REVOKE, or an op refused with
 * RP_EUNEXPORTED): every handle to it fails later ops at once, and ops
 * parked for a replay that target it are not sent again.
 */
static void mark_revoked(struct peers *p, struct peer *pr, uint64_t inc, uint64_t id)
{
	if (!pr)
		return;
	pr->dead_ids[pr->dead_next++ % PEER_DEAD_IDS] = id;
	remotes_revoke(p->core, pr->conf.name, inc, id);
}

static bool known_revoked(const struct peer *pr, uint64_t id)
{
	unsigned i;

	for (i = 0; i < PEER_DEAD_IDS; i++)
		if (pr->dead_ids[i] == id)
			return true;
	return false;
}

void peer_x_op_done(struct peer_op *op, int status)
{
	struct pop *o = (struct pop *)op;
	struct peer_link *l = o->link;

	pop_unlink(o);
	if (status == -RP_EUNEXPORTED && op->kind != PEER_OP_SEND)
		mark_revoked(l->p, l->peer, op->export_inc, op->export_id);
	pop_report(o, status);
	data_check_drained(l);
}

static void park(struct pop *o, struct peer *pr);

/*
 * What a transport's refusal to send an op means for it: its own memory
 * vanished (-EFAULT, a hugetlbfs hole) or could not be copied (-ENOMEM),
 * or the link cannot take it.
 */
static int own_failure(int r)
{
	return r == -EFAULT || r == -ENOMEM ? r : -RP_EPEERDOWN;
}

/* Put @o on @l and hand it to the transport; on failure it is on no list. */
static int pop_post(struct pop *o, struct peer_link *l)
{
	int r;

	o->link = l;
	o->prev = NULL;
	o->next = l->ops;
	if (l->ops)
		l->ops->prev = o;
	l->ops = o;
	r = l->t->ops->submit(l->x, &o->op);
	if (r < 0)
		pop_unlink(o);
	return r;
}

/*
 * The link for a new op to @peer, or NULL with *err 0 when the op should
 * wait (parked, at most REPLAY_WAIT_MS) for the link that is about to be up:
 * a recovery is under way (ops flushed behind a refused request wait for
 * the next link; new ops queue behind them rather than fail or overtake
 * them), or our own connection attempt is authenticating.
 */
static struct peer_link *usable_link(struct peers *p, const char *peer, struct peer **prp, int *err)
{
	struct peer *pr = peer_find(p, peer);

	*err = 0;
	*prp = pr;
	if (!pr)
		*err = -RP_EPEERUNKNOWN;
	else if ((pr->parked || peer_settling(pr)) && !pr->removed && !p->stopping)
		return NULL;
	else if (!pr->up || !link_usable(pr->up))
		*err = -RP_EPEERDOWN;
	return *err ? NULL : pr->up;
}

/* Hand @o to @l, or park it on @pr (@l NULL, see usable_link()). 0: taken. */
static int submit_on(struct peer *pr, struct peer_link *l, struct pop *o)
{
	int r;

	o->peer = pr;
	o->op.region = o->cop->region;
	o->op.off = o->cop->q.offset;
	o->op.len = o->cop->q.len;
	if (!l) {
		park(o, pr);
		goto taken;
	}
	r = pop_post(o, l);
	if (r == -EAGAIN && !pr->removed && !l->p->stopping) {
		/* The link is being replaced after a refusal: wait for the next one. */
		park(o, pr);
		goto taken;
	}
	if (r < 0) {
		free(o);
		return own_failure(r);
	}
taken:
	pr->ops_out++;
	return 0;
}

static int submit_rw(struct peers *p, struct op *cop)
{
	const struct rp_sqe *q = &cop->q;
	const struct remote *rm = cop->e->remote;
	bool wr = q->opcode == RP_SQE_WRITE;
	struct peer_link *l;
	struct peer *pr;
	struct pop *o;
	int err;

	l = usable_link(p, rm->peer, &pr, &err);
	if (err)
		return err;
	if ((l ? l->remote_inc : pr->incarnation) != rm->inc)
		return -RP_ESTALE;
	if (rm->revoked)
		return -RP_EUNEXPORTED;
	/* Early answers from what LOOKUP said; the exporter checks again anyway. */
	if (!(rm->access & (wr ? RP_ACCESS_REMOTE_WRITE : RP_ACCESS_REMOTE_READ)))
		return -RP_EREMOTEACCESS;
	if (q->remote_offset > rm->len || q->len > rm->len - q->remote_offset)
		return -RP_EREMOTEBOUNDS;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->cop = cop;
	o->op.kind = wr ? PEER_OP_WRITE : PEER_OP_READ;
	o->op.flags = wr && (q->flags & RP_NOTIFY) ? PEER_OP_F_NOTIFY : 0;
	o->op.imm = q->imm;
	o->op.remote_off = q->remote_offset;
	o->op.export_id = rm->id;
	o->op.export_inc = rm->inc;
	o->op.export_len = rm->len;
	o->op.xinfo_len = rm->xinfo_len;
	memcpy(o->op.xinfo, rm->xinfo, sizeof(o->op.xinfo));
	return submit_on(pr, l, o);
}

static int submit_send(struct peers *p, struct op *cop)
{
	const struct dest *d = cop->dest;
	struct peer_link *l;
	struct peer *pr;
	struct pop *o;
	int err;

	l = usable_link(p, d->peer, &pr, &err);
	if (err)
		return err;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->cop = cop;
	o->op.kind = PEER_OP_SEND;
	memcpy(o->op.endpoint, d->endpoint, sizeof(o->op.endpoint));
	return submit_on(pr, l, o);
}

static int submit(void *peers, struct op *cop)
{
	return cop->q.opcode == RP_SQE_SEND ? submit_send(peers, cop) : submit_rw(peers, cop);
}

/* ---- Withdrawals (PP_REVOKE): the exporting side. ---- */

/* The peer's rkey is dead from here on, whatever it still posts; the MR may go. */
static void revoke_let_go(struct prevoke *rv)
{
	if (rv->let_go)
		return;
	rv->let_go = true;
	export_mr_drop(rv->e, rv->mr);
	rv->mr = NULL;
	export_unpin(rv->e);
	export_unref(rv->e);
	rv->e = NULL;
}

static void revoke_release(struct prevoke *rv)
{
	revoke_let_go(rv);
	free(rv);
}

static void revokes_release(struct prevoke *list)
{
	struct prevoke *rv;

	while ((rv = list)) {
		list = rv->next;
		revoke_release(rv);
	}
}

static void revoke_send(struct peer_link *l, struct prevoke *rv)
{
	struct pp_revoke m;

	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, PP_REVOKE, 0);
	m.export_id = rv->id;
	m.export_inc = l->p->incarnation;
	link_send(l, &m, sizeof(m)); /* a failed send means the link is going: resent on the next */
}

/*
 * @pr looked @e up, so it may hold handles with its rkey: tell it, now if
 * its link is up or else as soon as it is (a link that fails meanwhile
 * gets it again on the next one), and keep the MR until it confirms or
 * REVOKE_WAIT_MS pass. @mr: the peer's own MR of @e, if its right to @e
 * alone was taken away (dropped with the withdrawal), else NULL.
 */
static void revoke_start(struct peer *pr, struct export *e, struct vmr *mr)
{
	struct prevoke *rv = calloc(1, sizeof(*rv));

	if (!rv) { /* no memory for the bookkeeping: withdraw without waiting */
		export_mr_drop(e, mr);
		return;
	}
	rv->mr = mr;
	rv->e = export_ref(e);
	export_pin(e);
	rv->id = e->peer_id;
	rv->deadline_ms = peer_now_ms() + REVOKE_WAIT_MS;
	rv->next = pr->revokes;
	pr->revokes = rv;
	if (pr->up && link_live(pr->up))
		revoke_send(pr->up, rv);
}

/* @pr's lookups of exports it may no longer open are forgotten and withdrawn: how many. */
static unsigned recheck_peer(struct peers *p, struct peer *pr, const char **ret_first)
{
	const struct peer_conf *pc = config_peer(p->cfg, pr->conf.name);
	unsigned n = 0;
	struct export *e;

	for (e = p->core->exports; e; e = e->next) {
		if (!export_looked_up_by(e, pr->conf.name) || export_may_open_peer(e, pc))
			continue;
		revoke_start(pr, e, export_forget_looker(e, pr->conf.name));
		log_debug("peer %s may no longer open export '%s'", pr->conf.name, e->name);
		if (!n++)
			*ret_first = e->name;
	}
	return n;
}

void data_recheck(struct peers *p)
{
	const char *first = NULL;
	struct peer *pr;
	unsigned n;

	for (pr = p->head; pr; pr = pr->next) {
		if (pr->removed)
			continue;
		n = recheck_peer(p, pr, &first);
		if (n)
			log_notice("peer %s may no longer open %u export%s it looked up ('%s'%s): "
				   "its handles to them are withdrawn",
				   pr->conf.name, n, n == 1 ? "" : "s", first,
				   n > 1 ? " and others" : "");
	}
}

static void on_revoke_r(struct peer_link *l, const struct pp_revoke *m)
{
	struct prevoke **pp, **oldest = NULL, *rv = NULL;

	/*
	 * The oldest withdrawal of that export waiting: confirmations come in
	 * the order the withdrawals were sent (the list is newest first), and
	 * a newer one (granted again, looked up again, withdrawn again) may
	 * still have its MR in use.
	 */
	if (m->export_inc == l->p->incarnation)
		for (pp = &l->peer->revokes; *pp; pp = &(*pp)->next)
			if ((*pp)->id == m->export_id)
				oldest = pp;
	if (oldest) {
		pp = oldest;
		rv = *pp;
	}
	if (!rv) {
		/* Late (we stopped waiting), a repeat, or for a previous incarnation. */
		log_debug("peer %s confirmed a withdrawal of export %llu nobody waits for",
			  l->peer->conf.name, (unsigned long long)m->export_id);
		return;
	}
	*pp = rv->next;
	revoke_release(rv);
}

/* ---- Withdrawals: the importing side. ---- */

static void on_revoke(struct peer_link *l, const struct pp_revoke *m)
{
	struct pp_revoke r = *m;
	int err;

	pp_hdr_init(&r.h, PP_REVOKE_R, 0);
#ifdef RP_TEST_IGNORE_REVOKE
	/* tests/helpers/rdmaproxyd-stubborn: a peer that keeps using what was withdrawn. */
	log_notice(
		"peer %s withdrew its export %llu: ignored (a test build that keeps its handles)",
		l->peer->conf.name, (unsigned long long)m->export_id);
	return;
#endif
	if (m->export_inc != l->remote_inc) {
		/* Not this incarnation's: no handle of ours can use it. */
		err = link_send(l, &r, sizeof(r));
	} else {
		mark_revoked(l->p, l->peer, m->export_inc, m->export_id);
		log_debug("peer %s withdrew its export %llu: handles to it fail from now on",
			  l->peer->conf.name, (unsigned long long)m->export_id);
		err = l->t->ops->revoke ? l->t->ops->revoke(l->x, m->export_id, &r, sizeof(r))
					: link_send(l, &r, sizeof(r));
	}
	if (err < 0)
		link_close(l, err, "cannot confirm a withdrawal");
}

/* ---- Replays: ops that certainly did not execute when their link failed. ---- */

static void park(struct pop *o, struct peer *pr)
{
	o->link = NULL;
	o->next = NULL;
	o->parked_ms = peer_now_ms();
	if (pr->parked_tail)
		pr->parked_tail->next = o;
	else
		pr->parked = o;
	pr->parked_tail = o;
}

void data_peer_drop(struct peer *pr, int status)
{
	struct pop *o;

	while ((o = pr->parked)) {
		pr->parked = o->next;
		o->next = NULL;
		pop_report(o, status);
	}
	pr->parked_tail = NULL;
	/* Removed or shutting down: no link will carry these any more. */
	revokes_release(data_take_revokes(pr));
}

struct prevoke *data_take_revokes(struct peer *pr)
{
	struct prevoke *list = pr->revokes;

	pr->revokes = NULL;
	return list;
}

void data_give_revokes(struct peer *pr, struct prevoke *list)
{
	struct prevoke **tail;

	if (!pr) {
		revokes_release(list);
		return;
	}
	/* After its own: @list is older than anything it has. */
	for (tail = &pr->revokes; *tail; tail = &(*tail)->next)
		;
	*tail = list;
}

void data_peer_forget(struct peers *p, struct peer *pr)
{
	struct export *e;

	/* Its links are gone: its lookups go, with their MRs (added again, it looks up again). */
	for (e = p->core->exports; e; e = e->next)
		export_mr_drop(e, export_forget_looker(e, pr->conf.name));
}

static void replay(struct peer_link *l)
{
	struct peer *pr = l->peer;
	struct pop *o, *list = pr->parked;
	unsigned n = 0;
	int r;

	/*
	 * Our own connection attempt is still running and may supersede @l
	 * (duplicate links): wait for the link that stays (peer_x_failed()
	 * and link_up() call again).
	 */
	if (!list || peer_out_pending(pr, l))
		return;
	pr->parked = pr->parked_tail = NULL;
	while ((o = list)) {
		list = o->next;
		o->next = NULL;
		if (o->cop->s->dead) {
			pop_report(o, -RP_EPEERDOWN); /* its client is gone: do not act for it */
			continue;
		}
		if (o->op.fate == PEER_OP_REFUSED) {
			bool same = o->op.export_inc == l->remote_inc;

			if (same)
				mark_revoked(l->p, pr, o->op.export_inc, o->op.export_id);
			pop_report(o, same ? -RP_EUNEXPORTED : -RP_EPEERDOWN);
			continue;
		}
		if (o->op.kind != PEER_OP_SEND &&
		    (o->op.export_inc != l->remote_inc || known_revoked(pr, o->op.export_id))) {
			pop_report(o, o->op.export_inc != l->remote_inc ? -RP_ESTALE
									: -RP_EUNEXPORTED);
			continue;
		}
		o->op.fate = PEER_OP_QUEUED;
		r = pop_post(o, l);
		if (r == -EAGAIN) { /* this link failed already: the next one */
			park(o, pr);
			continue;
		}
		if (r < 0) {
			pop_report(o, own_failure(r));
			continue;
		}
		n++;
	}
	if (n)
		log_info("peer %s: %u operation%s flushed on the failed link sent again",
			 pr->conf.name, n, n == 1 ? "" : "s");
}

/* @rv and those after it (older), oldest first: in the order they were made. */
static void revoke_send_all(struct peer_link *l, struct prevoke *rv)
{
	if (!rv)
		return;
	revoke_send_all(l, rv->next);
	revoke_send(l, rv);
}

void data_link_up(struct peer_link *l)
{
	struct peer *pr = l->peer;

	/* Withdrawals first, oldest first: the replays below must not use a withdrawn export. */
	revoke_send_all(l, pr->revokes);
	replay(l);
}

void data_replay(struct peer *pr)
{
	if (pr->up && link_live(pr->up))
		replay(pr->up);
}

/*
 * A transfer into or out of an export that was withdrawn holds the owner's
 * rp_region_unexport(): a peer that keeps it going RX_DEAD_WAIT_MS later (a
 * WRITE trickled in, a READ drained slowly) loses the link, which ends it.
 */
static void rx_deadline(struct peer_link *l, uint64_t now)
{
	struct rxtok *tok;

	for (tok = l->rxs; tok; tok = tok->next) {
		if (!tok->e->dead)
			continue;
		if (!tok->dead_ms)
			tok->dead_ms = now;
		else if (now - tok->dead_ms >= RX_DEAD_WAIT_MS && !link_closing(l)) {
			log_warn("peer %s: closing its link: a transfer of a withdrawn export "
				 "did not end within %u s",
				 l->peer ? l->peer->conf.name : l->addr, RX_DEAD_WAIT_MS / 1000);
			link_close(l, -ETIMEDOUT,
				   "a transfer of a withdrawn export went on too long");
			return;
		}
	}
}

void data_tick(struct peers *p, uint64_t now)
{
	struct peer *pr;
	struct pop **op, *o;
	struct peer_link *l;

	for (l = p->links; l; l = l->next)
		rx_deadline(l, now);

	for (pr = p->head; pr; pr = pr->next) {
		struct prevoke **pp = &pr->revokes, *rv;

		unsigned kept = 0;

		while ((rv = *pp)) {
			if (!rv->let_go && now >= rv->deadline_ms) {
				log_warn("peer %s did not confirm the withdrawal of export %llu "
					 "within %u s; deregistering it anyway",
					 pr->conf.name, (unsigned long long)rv->id,
					 REVOKE_WAIT_MS / 1000);
				revoke_let_go(rv);
			}
			/* A peer that never confirms holds at most REVOKE_KEEP_MAX records. */
			if (rv->let_go && ++kept > REVOKE_KEEP_MAX) {
				*pp = rv->next;
				revoke_release(rv);
				continue;
			}
			pp = &rv->next;
		}
		/* Parked ops wait at most REPLAY_WAIT_MS each for a link. */
		op = &pr->parked;
		pr->parked_tail = NULL;
		while ((o = *op)) {
			if (now - o->parked_ms <= REPLAY_WAIT_MS) {
				pr->parked_tail = o;
				op = &o->next;
				continue;
			}
			*op = o->next;
			o->next = NULL;
			pop_report(o, -RP_EPEERDOWN);
		}
	}
}

void data_link_failed(struct peer_link *l)
{
	struct peer *pr = l->peer;
	struct plookup *lk;
	struct pserve *ps;
	struct pop *o, *batch = NULL;
	bool may_replay = pr && !pr->removed && !l->p->stopping;

	while ((o = l->ops)) {
		pop_unlink(o);
		if ((o->op.fate == PEER_OP_FLUSHED || o->op.fate == PEER_OP_REFUSED) &&
		    may_replay && !o->cop->s->dead) {
			/* l->ops is newest first: this restores submission order. */
			o->next = batch;
			batch = o;
			continue;
		}
		/*
		 * Posted: it may have happened. Never posted, or flushed behind a
		 * refusal: it certainly did not.
		 */
		pop_report(o, o->op.fate == PEER_OP_POSTED ? -RP_EOUTCOME : -RP_EPEERDOWN);
	}
	while ((o = batch)) {
		batch = o->next;
		park(o, pr);
	}
	while ((lk = l->lookups)) {
		lookup_unlink(l, lk);
		lookup_reply(lk, -RP_EPEERDOWN, NULL, l->peer);
	}
	/* Their registrations go on; their answers have nowhere to go. */
	while ((ps = l->serving)) {
		serving_unlink(ps);
		ps->link = NULL;
	}
}

void data_check_drained(struct peer_link *l)
{
	if (l->state == LINK_DRAINING && !l->ops && !l->lookups)
		link_close(l, -ESHUTDOWN, "peer removed from the configuration (drained)");
}

static void export_gone(void *peers, struct export *e)
{
	struct peers *p = peers;
	unsigned i;

	if (!e->peer_id || p->stopping)
		return;
	/* Every peer that looked it up may hold an rkey (their MRs go with the export's). */
	for (i = 0; i < e->n_lookers; i++) {
		struct peer *pr = peer_find(p, e->lookers[i].name);

		if (pr)
			revoke_start(pr, e, NULL);
	}
}

const struct core_peer_ops peers_core_ops = {
	.known = known,
	.remote_open = remote_open,
	.submit = submit,
	.export_gone = export_gone,
};

/* ---- Requests from a peer. ---- */

/*
 * Peer @l used an export id its LOOKUP was never given (it guessed), or no
 * longer may use (a reload took its right away).
 */
static int id_refused(struct peer_link *l, uint64_t id)
{
	char key[RP_NAME_MAX + 8];

	stats_totals.export_refused[STATS_FROM_PEER]++;
	log_ratelimited(peer_key(l, key, sizeof(key)), LOG_WARNING,
			"peer %s: operation on export id %llu refused: the peer was not given it "
			"or may not use it any more",
			l->peer->conf.name, (unsigned long long)id);
	return -RP_EEXPORT_DENIED;
}

static int rx_export(struct peer_link *l, struct peer_rx *rx, struct rxtok *tok)
{
	struct peers *p = l->p;
	bool wr = rx->kind == PEER_RX_WRITE;
	struct export *e;

	if (rx->export_inc != p->incarnation)
		return -RP_ESTALE;
	e = export_by_peer_id(p->core, rx->export_id);
	if (!e || e->dead || !e->region)
		return rx->export_id && rx->export_id <= p->core->next_peer_id ? -RP_EUNEXPORTED
									       : -RP_EBADHANDLE;
	/* Ids are small numbers: only a peer that was given this one may use it. */
	if (!export_looked_up_by(e, l->peer->conf.name))
		return id_refused(l, rx->export_id);
	if (!(e->access & (wr ? RP_ACCESS_REMOTE_WRITE : RP_ACCESS_REMOTE_READ)))
		return -RP_EREMOTEACCESS;
	if (!region_range_ok(e->region, rx->off, rx->len))
		return -RP_EREMOTEBOUNDS;
	/* Reserve the notification now: refuse before writing, not after. */
	if (wr && (rx->flags & PEER_OP_F_NOTIFY) && notify_hold(e, &tok->t, &tok->t_region) < 0)
		return -RP_ENOTIFYSPACE;
	tok->region = region_ref(e->region);
	/*
	 * rp_region_unexport() returns only once this transfer has ended (or
	 * the link is closed for holding it too long: data_tick()).
	 */
	tok->e = export_ref(e);
	export_pin(e);
	tok->l = l;
	tok->next = l->rxs;
	if (l->rxs)
		l->rxs->prev = tok;
	l->rxs = tok;
	rx->addr = (char *)e->region->addr + rx->off;
	rx->may_fault = e->region->huge;
	return 0;
}

static int rx_send(struct peer_link *l, struct peer_rx *rx, struct rxtok *tok)
{
	int r = endpoint_take(l->p->core, rx->endpoint, rx->len, NULL, l->peer->conf.name,
			      &tok->rop);

	if (r < 0)
		return r;
	rx->addr = recv_addr(tok->rop);
	rx->may_fault = tok->rop->region->huge;
	return 0;
}

int peer_x_rx_begin(struct peer_link *l, struct peer_rx *rx)
{
	struct rxtok *tok;
	int r;

	if (!link_live(l))
		return -EPROTO;
	if (rx->len > UINT32_MAX)
		return -EINVAL;
	tok = calloc(1, sizeof(*tok));
	if (!tok)
		return -ENOMEM;
	r = rx->kind == PEER_RX_SEND ? rx_send(l, rx, tok) : rx_export(l, rx, tok);
	if (r < 0) {
		free(tok);
		l->peer->errors++;
		return r;
	}
	rx->token = tok;
	l->peer->ops_in++;
	return 0;
}

int peer_x_rx_end(struct peer_link *l, struct peer_rx *rx, int status)
{
	struct rxtok *tok = rx->token;

	if (rx->kind == PEER_RX_SEND) {
		/*
		 * Whole: the receive completes (or, cancelled meanwhile, the
		 * sender is told -RP_ENORECV); not whole: it goes back first in line.
		 */
		status = recv_finish(l->p->core, tok->rop, rx->len, status);
	} else {
		if (tok->t)
			notify_finish(tok->t, tok->t_region, rx->off, (uint32_t)rx->len, rx->imm,
				      status);
		region_unref(tok->region);
		if (tok->e) {
			if (tok->prev)
				tok->prev->next = tok->next;
			else
				tok->l->rxs = tok->next;
			if (tok->next)
				tok->next->prev = tok->prev;
			export_unpin(tok->e);
			export_unref(tok->e);
		}
	}
	/* Serving a READ sends the payload out; WRITE and SEND bring it in. */
	if (l->peer && !status && rx->kind == PEER_RX_READ)
		l->peer->bytes_out += rx->len;
	else if (l->peer && !status)
		l->peer->bytes_in += rx->len;
	free(tok);
	rx->token = NULL;
	rx->addr = NULL;
	return status;
}

/* @counted: the data came in-band (tcp) and was counted then. */
static int notify_in(struct peer_link *l, uint64_t export_id, uint64_t off, uint64_t len,
		     uint32_t imm, bool counted)
{
	struct peer_rx rx = {
		.kind = PEER_RX_WRITE,
		.flags = PEER_OP_F_NOTIFY,
		.imm = imm,
		.export_id = export_id,
		.export_inc = l->p->incarnation,
		.off = off,
		.len = len,
	};
	int r = peer_x_rx_begin(l, &rx);

	if (r == 0)
		r = peer_x_rx_end(l, &rx, 0);
	if (r == 0 && counted && l->peer) {
		l->peer->ops_in--;
		l->peer->bytes_in -= len;
	}
	return r;
}

int peer_x_notify(struct peer_link *l, uint64_t export_id, uint64_t off, uint64_t len, uint32_t imm)
{
	return notify_in(l, export_id, off, len, imm, false);
}

/* A NOTIFY message: after a tcp peer's WRITE that went in pieces. */
static void on_notify(struct peer_link *l, const struct pp_notify *m)
{
	struct pp_status st;

	memset(&st, 0, sizeof(st));
	pp_hdr_init(&st.h, PP_NOTIFY_R, m->h.id);
	st.status = m->export_inc == l->p->incarnation
			    ? notify_in(l, m->export_id, m->off, m->len, m->imm, true)
			    : -RP_ESTALE;
	/* Its writer waits for the answer: without it, the link must go. */
	if (link_send(l, &st, sizeof(st)) < 0)
		link_close(l, -ENOMEM, "cannot queue a notify reply");
}
void data_on_ctrl(struct peer_link *l, const void *msg, size_t len)
{
	union {
		struct pp_hdr h;
		struct pp_lookup lk;
		struct pp_lookup_r lr;
		struct pp_notify nt;
		struct pp_revoke rv;
	} m;

	if (len > sizeof(m)) {
		link_close(l, -EPROTO, "unexpected message");
		return;
	}
	memcpy(&m, msg, len);
	switch (m.h.type) {
	case PP_LOOKUP:
		on_lookup(l, &m.lk);
		return;
	case PP_LOOKUP_R:
		on_lookup_r(l, &m.lr);
		return;
	case PP_NOTIFY:
		on_notify(l, &m.nt);
		return;
	case PP_NOTIFY_R:
		return; /* the tcp transport takes its own; nothing here */
	case PP_REVOKE:
		on_revoke(l, &m.rv);
		return;
	case PP_REVOKE_R:
		on_revoke_r(l, &m.rv);
		return;
	default:
		link_close(l, -EPROTO, "unexpected message type");
		return;
	}
}
