/* SPDX-License-Identifier: MIT */
/*
 * Administration requests: build replies from the daemon's state (clients,
 * regions, peers, device), page long lists with key cursors, serve metrics
 * from a per-session snapshot, and decide authorization from SO_PEERCRED.
 */
#include "admin.h"

#include <errno.h>
#include <stdbool.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "base/ctl_wire.h"
#include "base/log.h"
#include "peer/peer.h"
#include "rdma/rdma_dev.h"
#include "base/stats.h"

struct admin_session {
	struct admin_ctx *ctx;
	char *snap; /* metrics text being paged out */
	size_t snap_len;
	/* One ping in flight through the peer layer, answered from ping_done(). */
	struct session *s;
	bool ping_pending;
	struct rp_hdr ping_hdr;
	uint32_t ping_seq;
	char ping_peer[RP_NAME_MAX];
};

static struct admin_session *session_admin(struct admin_ctx *ctx, struct session *s)
{
	if (!s->admin && !s->dead) {
		s->admin = calloc(1, sizeof(*s->admin));
		if (s->admin)
			s->admin->ctx = ctx;
	}
	return s->admin;
}

void admin_session_release(struct session *s)
{
	if (!s->admin)
		return;
	if (s->admin->ping_pending)
		peer_ping_cancel(s->admin->ctx->peers, s->admin);
	free(s->admin->snap);
	free(s->admin);
	s->admin = NULL;
}

/* Reply with a negative @status and a reason the client prints. */
static int reply_text(struct session *s, const struct rp_hdr *h, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int reply_text(struct session *s, const struct rp_hdr *h, int status, const char *fmt, ...)
{
	struct rp_admin_text t = { 0 };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t.text, sizeof(t.text), fmt, ap);
	va_end(ap);
	return session_reply(s, h, status, &t, sizeof(t), NULL, 0);
}

/* One page: header + records, assembled in a packet-sized buffer. */
struct page {
	_Alignas(8) char buf[RP_ADMIN_PAGE_MAX + sizeof(struct rp_admin_page)];
	struct rp_admin_page *hdr;
	size_t rec, max;
};

static void page_init(struct page *p, size_t rec)
{
	memset(p->buf, 0, sizeof(struct rp_admin_page));
	p->hdr = (struct rp_admin_page *)p->buf;
	p->rec = rec;
	p->max = RP_ADMIN_PAGE_MAX / rec;
}

/* Room for one more record, or NULL (then @key becomes the next cursor). */
static void *page_add(struct page *p, uint64_t key)
{
	void *r;

	if (p->hdr->count >= p->max) {
		if (!p->hdr->next)
			p->hdr->next = key;
		return NULL;
	}
	r = p->buf + sizeof(*p->hdr) + p->hdr->count * p->rec;
	memset(r, 0, p->rec);
	p->hdr->count++;
	return r;
}

static int page_send(struct session *s, const struct rp_hdr *h, struct page *p)
{
	return session_reply(s, h, 0, p->buf, sizeof(*p->hdr) + p->hdr->count * p->rec, NULL, 0);
}

static bool is_admin(const struct admin_ctx *ctx, const struct session *s)
{
	return config_user_is_admin(ctx->cfg, s->cred.uid, s->cred.gid);
}

static int cmp_session_id(const void *a, const void *b)
{
	const struct session *x = *(struct session *const *)a, *y = *(struct session *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Live sessions past hello, sorted by id (the cursor key). */
static int sorted_sessions(struct core *c, struct session ***ret, size_t *ret_n)
{
	struct session **v, *s;
	size_t n = 0;

	v = calloc(c->n_sessions ? c->n_sessions : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (s = c->sessions; s && n < c->n_sessions; s = s->next)
		if (s->version && !s->dead)
			v[n++] = s;
	qsort(v, n, sizeof(*v), cmp_session_id);
	*ret = v;
	*ret_n = n;
	return 0;
}

static unsigned exports_of(const struct region *r)
{
	const struct export *e;
	unsigned n = 0;

	for (e = r->exports; e; e = e->rnext)
		n++;
	return n;
}

/*
 * Who asks for a list: administrators see everything; everybody else the
 * regions of their own uid, and of other users' exports only those they
 * may open (least privilege: names and owners of other users' exports are
 * nobody else's business).
 */
struct viewer {
	const struct session *s;
	bool admin;
};

static bool sees_all(const struct viewer *w, const struct session *owner)
{
	return w->admin || owner->cred.uid == w->s->cred.uid;
}

/* Exports of @s that @w may open: its regions' lists, not every export on the node. */
static unsigned exports_shown_of(const struct viewer *w, const struct session *s)
{
	const struct export *e;
	unsigned n = 0;
	uint32_t i;

	for (i = 0; i < s->regions.n; i++) {
		const struct region *r = idtab_at(&s->regions, i);

		for (e = r ? r->exports : NULL; e; e = e->rnext)
			n += export_may_open_local(e, w->s);
	}
	return n;
}

static void fill_client(const struct viewer *w, const struct session *s,
			struct rp_admin_client *rec)
{
	const struct stats_session *st = &s->stats;

	rec->id = s->id;
	rec->pid = (int32_t)s->cred.pid;
	rec->uid = (uint32_t)s->cred.uid;
	rec->gid = (uint32_t)s->cred.gid;
	memcpy(rec->comm, s->comm, sizeof(rec->comm));
	rec->regions = s->regions.used;
	rec->registered_bytes = s->region_bytes;
	rec->endpoints = s->endpoints.used;
	rec->exports = sees_all(w, s) ? s->exports : exports_shown_of(w, s);
	rec->inflight = s->rings.cq_reserved;
	rec->ops = st->ops;
	rec->errors = st->errors;
	rec->bytes = st->bytes;
}

static int handle_clients(struct admin_ctx *ctx, struct session *s, const struct rp_hdr *h,
			  const struct rp_admin_page_req *req)
{
	struct viewer w = { .s = s, .admin = is_admin(ctx, s) };
	struct session **v;
	struct page p;
	size_t n, i;
	int r;

	r = sorted_sessions(ctx->core, &v, &n);
	if (r < 0)
		return reply_text(s, h, r, "out of memory");
	page_init(&p, sizeof(struct rp_admin_client));
	p.hdr->total = (uint32_t)n;
	for (i = 0; i < n; i++) {
		struct rp_admin_client *rec;

		if (v[i]->id < req->cursor)
			continue;
		rec = page_add(&p, v[i]->id);
		if (!rec)
			break;
		fill_client(&w, v[i], rec);
	}
	free(v);
	return page_send(s, h, &p);
}

static uint64_t region_key(const struct session *s, uint32_t id, unsigned k)
{
	return (uint64_t)s->id << 32 | (uint64_t)(id & 0xffff) << 16 | (k & 0xffff);
}

/* Who besides its owner and root may open @e (RP_OPEN_*), under the running config. */
/* RP_OPEN_* of access list @a (NULL: none) that lets in @peers of the @n configured peers. */
static uint32_t open_flags(const struct export_acl *a, size_t peers, size_t n)
{
	uint32_t flags = a ? a->flags : 0, r = 0;

	if (a && (a->n_uids || a->n_gids))
		r |= RP_OPEN_USERS;
	if (flags & RP_EXPORT_ANY_USER)
		r |= RP_OPEN_ANY_USER;
	if (peers)
		r |= RP_OPEN_PEERS;
	if ((flags & RP_EXPORT_ANY_PEER) || (peers && peers == n))
		r |= RP_OPEN_ALL_PEERS;
	return r;
}

static uint32_t open_to(const struct config *cfg, const struct export *e)
{
	size_t i, peers = 0;

	for (i = 0; i < cfg->n_peers; i++)
		peers += export_may_open_peer(e, &cfg->peers[i]);
	return open_flags(e->acl, peers, cfg->n_peers);
}

static void fill_region(const struct session *s, const struct region *r, const struct export *e,
			unsigned n_exports, struct rp_admin_region *rec)
{
	rec->client = s->id;
	rec->pid = (int32_t)s->cred.pid;
	rec->uid = (uint32_t)s->cred.uid;
	memcpy(rec->comm, s->comm, sizeof(rec->comm));
	rec->id = r->id;
	rec->len = r->len;
	rec->busy = r->refs > 1 ? r->refs - 1 : 0;
	rec->n_exports = n_exports;
	if (e) {
		rec->access = e->access;
		rec->open_to = open_to(s->core->cfg, e);
		snprintf(rec->export_name, sizeof(rec->export_name), "%s", e->name);
	}
}

/* Export @k of @r (NULL: the region's record without exports) is shown to @w. */
static bool shown(const struct viewer *w, const struct session *s, const struct export *e)
{
	return sees_all(w, s) || (e && export_may_open_local(e, w->s));
}

/* How many exports of @r @w sees, of @ne. */
static unsigned exports_shown(const struct viewer *w, const struct session *s,
			      const struct region *r, unsigned ne)
{
	const struct export *e;
	unsigned n = 0;

	if (sees_all(w, s))
		return ne;
	for (e = r->exports; e; e = e->rnext)
		n += shown(w, s, e);
	return n;
}

/*
 * Add @s's records at or after @cursor that @w may see, while the page has
 * room; count every record @w may see in the page's total.
 */
static void page_regions(struct page *p, const struct viewer *w, const struct session *s,
			 uint64_t cursor)
{
	uint32_t i;

	for (i = 0; i < s->regions.n; i++) {
		const struct region *r = idtab_at(&s->regions, i);
		const struct export *e;
		unsigned ne, nshown, k;

		if (!r)
			continue;
		e = r->exports;
		ne = exports_of(r);
		nshown = exports_shown(w, s, r, ne);
		/* The region's own list, newest first: record k is its k-th export. */
		for (k = 0; k < (ne ? ne : 1) && k <= 0xffff; k++, e = e ? e->rnext : NULL) {
			uint64_t key = region_key(s, i + 1, k);
			struct rp_admin_region *rec;

			if (!shown(w, s, e))
				continue;
			p->hdr->total++;
			if (key < cursor)
				continue;
			rec = page_add(p, key);
			if (rec)
				fill_region(s, r, e, nshown, rec);
		}
	}
}

static int handle_regions(struct admin_ctx *ctx, struct session *s, const struct rp_hdr *h,
			  const struct rp_admin_page_req *req)
{
	struct viewer w = { .s = s, .admin = is_admin(ctx, s) };
	struct session **v;
	struct page p;
	size_t n, i;
	int r;

	r = sorted_sessions(ctx->core, &v, &n);
	if (r < 0)
		return reply_text(s, h, r, "out of memory");
	page_init(&p, sizeof(struct rp_admin_region));
	for (i = 0; i < n; i++)
		page_regions(&p, &w, v[i], req->cursor);
	free(v);
	return page_send(s, h, &p);
}

/* Who besides its owner and root may send to @ep (RP_OPEN_*), among the configured peers. */
static uint32_t ep_open_to(const struct config *cfg, const struct endpoint *ep)
{
	size_t i, peers = 0;

	if (!ep->restricted)
		return RP_OPEN_ANY_USER | RP_OPEN_PEERS | RP_OPEN_ALL_PEERS;
	for (i = 0; i < cfg->n_peers; i++)
		peers += acl_names_peer(ep->acl, cfg->peers[i].name);
	return open_flags(ep->acl, peers, cfg->n_peers);
}

/*
 * Add @s's endpoints at or after @cursor that @w may see (its own uid's,
 * and of others' those that take its messages), while the page has room;
 * count every one @w may see in the page's total.
 */
static void page_endpoints(struct page *p, const struct viewer *w, const struct session *s,
			   uint64_t cursor)
{
	uint32_t i;

	for (i = 0; i < s->endpoints.n; i++) {
		const struct endpoint *ep = idtab_at(&s->endpoints, i);
		uint64_t key = (uint64_t)s->id << 32 | (i + 1);
		struct rp_admin_endpoint *rec;
		const struct op *o;

		if (!ep || (!sees_all(w, s) && !endpoint_admits(ep, w->s, NULL)))
			continue;
		p->hdr->total++;
		if (key < cursor || !(rec = page_add(p, key)))
			continue;
		rec->client = s->id;
		rec->pid = (int32_t)s->cred.pid;
		rec->uid = (uint32_t)s->cred.uid;
		rec->id = ep->id;
		for (o = ep->head; o; o = o->next)
			rec->posted++;
		rec->open_to = ep_open_to(s->core->cfg, ep);
		memcpy(rec->comm, s->comm, sizeof(rec->comm));
		snprintf(rec->name, sizeof(rec->name), "%s", ep->name);
	}
}

static int handle_endpoints(struct admin_ctx *ctx, struct session *s, const struct rp_hdr *h,
			    const struct rp_admin_page_req *req)
{
	struct viewer w = { .s = s, .admin = is_admin(ctx, s) };
	struct session **v;
	struct page p;
	size_t n, i;
	int r;

	r = sorted_sessions(ctx->core, &v, &n);
	if (r < 0)
		return reply_text(s, h, r, "out of memory");
	page_init(&p, sizeof(struct rp_admin_endpoint));
	for (i = 0; i < n; i++)
		page_endpoints(&p, &w, v[i], req->cursor);
	free(v);
	return page_send(s, h, &p);
}

static int handle_peers(struct admin_ctx *ctx, struct session *s, const struct rp_hdr *h,
			const struct rp_admin_page_req *req)
{
	struct peer_snap ps;
	struct page p;
	size_t i;
	int r;

	r = admin_peers_snapshot(ctx, &ps);
	if (r < 0)
		return reply_text(s, h, r, "out of memory");
	page_init(&p, sizeof(struct rp_admin_peer));
	p.hdr->total = (uint32_t)ps.n;
	for (i = req->cursor ? req->cursor - 1 : 0; i < ps.n; i++) {
		struct rp_admin_peer *rec = page_add(&p, i + 1);

		if (!rec)
			break;
		*rec = ps.v[i];
	}
	free(ps.v);
	return page_send(s, h, &p);
}

static int handle_metrics(struct admin_ctx *ctx, struct session *s, const struct rp_hdr *h,
			  const struct rp_admin_page_req *req)
{
	struct admin_session *a = session_admin(ctx, s);
	_Alignas(8) char buf[RP_ADMIN_PAGE_MAX + sizeof(struct rp_admin_page)];
	struct rp_admin_page *pg = (struct rp_admin_page *)buf;
	size_t n;
	int r;

	if (!a)
		return reply_text(s, h, -ENOMEM, "out of memory");
	if (req->cursor == 0) {
		free(a->snap);
		a->snap = NULL;
		r = admin_metrics_text(ctx, &a->snap, &a->snap_len);
		if (r < 0)
			return reply_text(s, h, r, "cannot build the metrics: %s", rp_strerror(r));
	}
	if (!a->snap || req->cursor > a->snap_len)
		return reply_text(s, h, -EINVAL, "no metrics snapshot at offset %llu: start over",
				  (unsigned long long)req->cursor);
	n = a->snap_len - req->cursor;
	if (n > RP_ADMIN_PAGE_MAX)
		n = RP_ADMIN_PAGE_MAX;
	memset(pg, 0, sizeof(*pg));
	pg->count = (uint32_t)n;
	pg->total = (uint32_t)a->snap_len;
	pg->next = req->cursor + n < a->snap_len ? req->cursor + n : 0;
	memcpy(buf + sizeof(*pg), a->snap + req->cursor, n);
	if (!pg->next) {
		free(a->snap);
		a->snap = NULL;
	}
	return session_reply(s, h, 0, buf, sizeof(*pg) + n, NULL, 0);
}

/* The peer layer answered the session's pending ping. */
static void ping_done(void *ctx, int status, uint64_t rtt_us)
{
	struct admin_session *a = ctx;
	struct rp_admin_ping_reply rep = { .seq = a->ping_seq, .rtt_us = rtt_us };

	a->ping_pending = false;
	if (status < 0)
		reply_text(a->s, &a->ping_hdr, status, "peer %s: %s", a->ping_peer,
			   status == -ETIMEDOUT ? "no answer within 5 s" : rp_strerror(status));
	else
		session_reply(a->s, &a->ping_hdr, 0, &rep, sizeof(rep), NULL, 0);
}

static int handle_ping(struct admin_ctx *ctx, struct session *s, const struct rp_hdr *h,
		       const struct rp_admin_ping_req *req)
{
	struct rp_admin_ping_reply rep = { .seq = req->seq };
	struct admin_session *a = session_admin(ctx, s);
	int r;

	if (req->flags || !name_valid(req->peer, sizeof(req->peer)))
		return reply_text(s, h, -EINVAL, "invalid peer name");
	/* This node: answered here, no peer channel crossed (rtt_us 0). */
	if (!strcmp(req->peer, ctx->cfg->node_name))
		return session_reply(s, h, 0, &rep, sizeof(rep), NULL, 0);
	if (!a)
		return reply_text(s, h, -ENOMEM, "out of memory");
	if (a->ping_pending)
		return reply_text(s, h, -EBUSY, "a ping of this client is still in flight");
	r = peer_ping(ctx->peers, req->peer, ping_done, a);
	if (r == -RP_EPEERUNKNOWN)
		return reply_text(s, h, r, "%s is neither this node (%s) nor a configured peer",
				  req->peer, ctx->cfg->node_name);
	if (r == -RP_EPEERDOWN)
		return reply_text(s, h, r, "peer %s is not connected", req->peer);
	if (r < 0)
		return reply_text(s, h, r, "peer %s: %s", req->peer, rp_strerror(r));
	a->s = s;
	a->ping_pending = true;
	a->ping_hdr = *h;
	a->ping_seq = req->seq;
	snprintf(a->ping_peer, sizeof(a->ping_peer), "%s", req->peer);
	return 0;
}

static const char *group_name(gid_t gid, char *buf, size_t len)
{
	struct group gr, *res = NULL;
	char tmp[1024];

	if (getgrgid_r(gid, &gr, tmp, sizeof(tmp), &res) == 0 && res)
		snprintf(buf, len, "%s", res->gr_name);
	else
		snprintf(buf, len, "%u", (unsigned)gid);
	return buf;
}

/* State-changing requests are for root or the admin group; a refusal says why. */
static int refuse(struct admin_ctx *ctx, struct session *s, const struct rp_hdr *h,
		  const char *what)
{
	const struct config *cfg = ctx->cfg;
	char g[64];

	stats_totals.admin_refused++;
	log_notice("client %u (pid %d uid %d %s): %s refused: not an administrator", s->id,
		   (int)s->cred.pid, (int)s->cred.uid, s->comm, what);
	if (cfg->admin_gid == (gid_t)-1)
		return reply_text(s, h, -EPERM,
				  "%s needs root: uid %d is not root and no admin_group is "
				  "configured",
				  what, (int)s->cred.uid);
	return reply_text(s, h, -EPERM,
			  "%s needs root or membership of admin_group %s: uid %d is neither", what,
			  group_name(cfg->admin_gid, g, sizeof(g)), (int)s->cred.uid);
}

static int handle_reload(struct admin_ctx *ctx, struct session *s, const struct rp_hdr *h)
{
	struct rp_admin_text t = { 0 };
	unsigned restart = 0;
	int r;

	if (!is_admin(ctx, s))
		return refuse(ctx, s, h, "reload");
	log_info("reload requested by client %u (pid %d uid %d %s)", s->id, (int)s->cred.pid,
		 (int)s->cred.uid, s->comm);
	r = ctx->reload(ctx->reload_arg, t.text, sizeof(t.text), &restart);
	/* The changed settings that need a restart travel as RP_RESTART_* flags. */
	return session_reply_flags(s, h, r, (uint16_t)restart, &t, sizeof(t), NULL, 0);
}

static void fill_device(const struct admin_ctx *ctx, struct rp_status_reply *rep)
{
	struct rdev_info info;

	if (!ctx->rdev || rdev_query(ctx->rdev, &info) < 0)
		return;
	snprintf(rep->device, sizeof(rep->device), "%s", info.name);
	snprintf(rep->port_state, sizeof(rep->port_state), "%s", info.state);
	if (info.n_gids)
		snprintf(rep->gid, sizeof(rep->gid), "%s", info.gids[info.n_gids - 1]);
	rep->port = info.port;
	rep->active_mtu = info.active_mtu;
}

static int handle_status(struct admin_ctx *ctx, struct session *s, const struct rp_hdr *h)
{
	struct rp_status_reply rep = { 0 };

	snprintf(rep.version, sizeof(rep.version), "%s", PACKAGE_VERSION);
	snprintf(rep.node_name, sizeof(rep.node_name), "%s", ctx->cfg->node_name);
	rep.uptime_sec = (uint64_t)(time(NULL) - ctx->started);
	rep.incarnation = ctx->incarnation;
	rep.transport = ctx->core->wire_transport;
	rep.clients = ctx->core->n_sessions;
	rep.regions = (uint32_t)ctx->core->n_regions;
	rep.registered_bytes = ctx->core->bytes;
	rep.peers_total = (uint32_t)ctx->cfg->n_peers;
	rep.peers_up = peers_up(ctx->peers);
	fill_device(ctx, &rep);
	return session_reply(s, h, 0, &rep, sizeof(rep), NULL, 0);
}

int admin_dispatch(struct admin_ctx *ctx, struct session *s, const struct rp_hdr *h,
		   const void *body)
{
	const struct rp_admin_page_req *pr = body;

	if (h->type == RP_MSG_STATUS)
		return handle_status(ctx, s, h);
	stats_totals.admin_requests++;
	if (ctl_body_size(h->type) == sizeof(*pr) && (pr->flags || pr->pad))
		return -EPROTO;
	switch (h->type) {
	case RP_MSG_ADMIN_CLIENTS:
		return handle_clients(ctx, s, h, body);
	case RP_MSG_ADMIN_REGIONS:
		return handle_regions(ctx, s, h, body);
	case RP_MSG_ADMIN_ENDPOINTS:
		return handle_endpoints(ctx, s, h, body);
	case RP_MSG_ADMIN_PEERS:
		return handle_peers(ctx, s, h, body);
	case RP_MSG_ADMIN_METRICS:
		return handle_metrics(ctx, s, h, body);
	case RP_MSG_ADMIN_PING:
		return handle_ping(ctx, s, h, body);
	case RP_MSG_ADMIN_RELOAD:
		return handle_reload(ctx, s, h);
	default:
		return -EPROTO;
	}
}

int admin_route(struct admin_ctx *ctx, struct session *s, const struct rp_hdr *h, const void *body,
		int fd)
{
	if (ctl_is_admin(h->type) && s->version)
		return admin_dispatch(ctx, s, h, body);
	return session_dispatch(s, h, body, fd);
}
