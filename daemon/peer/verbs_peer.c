/* SPDX-License-Identifier: MIT */
/*
 * The verbs peer transport, connection side: rdma_cm ids on the daemon's
 * device (the rdev was opened from rdma_get_devices(), so a cm id bound to
 * it shares its ibv_context, PD and CQ), listen / connect / accept, event
 * mapping, deadlines and teardown. The data path is verbs_peer_io.c.
 *
 * QP attributes. The QP is ours (ibv_create_qp with qp_context for async
 * events), not rdma_create_qp's, so we drive its transitions with
 * rdma_init_qp_attr() and change what rdma_cm gets wrong for us:
 *  - min_rnr_timer: the CM sets 0, which the IB spec's table reads as
 *    655.36 ms per receiver-not-ready NAK. We set 12 = 0.64 ms (table:
 *    1 = 0.01 ms ... 11 = 0.48, 12 = 0.64, 13 = 0.96 ms). Credits mean an
 *    RNR should never happen; if one does, it costs 0.64 ms, not 655 ms.
 *  - access flags: none until the peer layer's handshake has authenticated
 *    the other daemon (ops->open_access), then exactly REMOTE_WRITE |
 *    REMOTE_READ (no atomics): an unauthenticated connector whose QP is
 *    connected cannot reach any MR of ours, whatever rkey it guesses. Each
 *    peer's own MR of an export (exports.c, struct looker) still decides
 *    what is allowed where, and goes when its right to the export does.
 *  - max_dest_rd_atomic on the passive side: what we accept, as librdmacm
 *    does for its own QPs.
 *  - local ACK timeout and retry count: [verbs] ack_timeout and
 *    retry_count (rdmaproxy.conf(5)), set on our own QP whichever side
 *    dialled (the passive side would otherwise take the active side's
 *    retry count from the REQ). The CM derives the timeout from the path's
 *    packet lifetime, which it fixes for RoCE (CMA_IBOE_PACKET_LIFETIME 18
 *    in Debian 12's 6.1: timeout 19 = 2.1 s before each retransmission). A
 *    lost packet at the end of a burst, or a lost ACK, then stalls the QP
 *    for 2.1 s: at 10 % loss on rxe the keepalive (5 s) dropped the link
 *    twice in 12 s and 6 of 32 writes succeeded; with the default 16 =
 *    268 ms, 23 of 23 did and the link stayed up (tests/vm/guest-faults.sh;
 *    14 = 67 ms: 46 of 46). The default retry count 7 is 7 retries on an
 *    HCA (a dead path fails the QP with IBV_WC_RETRY_EXC_ERR after ~2.1 s,
 *    before the keepalive would notice) but "retry forever" on rxe, where
 *    the keepalive finds a dead path; fewer retries make rxe give up too
 *    (guest-faults.sh's link cut runs one daemon with 6).
 * rnr_retry_count 7 = retry forever (both), harmless with credits.
 *
 * Teardown: QP to ERROR, wait until every posted WR (send and receive) has
 * come back through the shared CQ (so no completion can name freed memory),
 * then destroy QP -> cm_id and call peer_x_failed(). If a flush never ends
 * (a provider bug) we give up after VP_FLUSH_MS, destroy the QP and drain
 * the CQ before freeing. The transport never destroys the shared CQ or PD.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "core/core.h"
#include "base/log.h"
#include "base/util.h"
#include "rdma/verbs_local.h"
#include "peer/verbs_peer_io.h"
#include "rdma/vx.h"

#define VP_MIN_RNR_TIMER 12 /* 0.64 ms */
#define VP_RESOLVE_MS 2000
#define VP_CONNECT_MS 10000 /* address + route + CM exchange */
#define VP_FLUSH_MS 3000
#define VP_EVICT_MS 2000 /* see room_wait() */
#define VP_BACKLOG 64
#define VP_RD_ATOMIC_MAX 16

static void fmt_addr(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		snprintf(buf, len, "%s:%u", host, port);
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
		snprintf(buf, len, "[%s]:%u", host, port);
	} else {
		snprintf(buf, len, "?");
	}
}

/* ---- Failure and teardown ---- */

static void unlink_conn(struct vconn *c)
{
	struct vconn **pp;

	for (pp = &c->t->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			return;
		}
}

/*
 * A peer's address may be a host name, and getaddrinfo() can wait seconds
 * for a name server (5 s a try by default): that would stop the loop thread,
 * every client's engine, at each attempt to reach the peer. A numeric
 * address is taken at once; a name is looked up by a job of the daemon's own
 * (core_job_run()) while the connection waits in VC_ADDR: its deadline waits
 * for the lookup (one lookup per peer at a time, the resolver bounds it),
 * and so does its teardown if it is closed meanwhile. At most
 * VP_LOOKUPS_MAX run at once, the others wait their turn (oldest first; one
 * closed meanwhile drops its turn): during a name server outage, lookups
 * that wait out the resolver's timeouts must not take all the threads the
 * daemon's other jobs (peers' set-ups and teardowns) need; it runs at most
 * 3 of the pool's 4 at once (core.c), and libuv keeps its own getaddrinfo
 * work to half of the pool for the same reason. A turn waited for counts
 * against the peer layer's connect time (5 s): with a slow resolver and many
 * peers known by name, some give up and retry later.
 */
#define VP_LOOKUPS_MAX 2
struct vname {
	struct core_job job; /* first */
	struct vconn *c;
	bool started; /* handed to core_job_run() */
	struct addrinfo *ai;
	int r; /* getaddrinfo()'s */
	int err;
	uint64_t ns; /* what the lookup took */
	uint16_t port;
	char host[256];
};

/*
 * Destroying a connection's QP and cm_id and deregistering its MRs take
 * milliseconds on rxe (2-12 ms in the guest), and anybody can make us do it
 * (connect, then fail the handshake): like the set-up (struct vsetup), it
 * runs off the loop thread as a job of the daemon's own. The connection is
 * already out of the transport's list and its cm_id's events go to nobody;
 * vdrop_done() drains what completions of it the CQ may still hold (if the
 * QP did not flush), frees its memory and reports it to the peer layer.
 */
struct vdrop {
	struct core_job job; /* first */
	struct vconn *c;
	bool drained; /* every WR had come back through the CQ */
};

static bool leave(struct vtransport *t);
static void room_give(struct vtransport *t);
static bool room_check(struct vtransport *t, struct vconn *dial);
static void dial_setup(struct vconn *c);
static int setup_start(struct vconn *c, uint8_t resp_res, uint8_t init_depth, char *why,
		       size_t whylen);

/* Teardown order: QP, then the cm_id. */
static void drop_verbs(struct vconn *c)
{
	vc_io_free_verbs(c);
	if (c->id)
		vx_rdma_destroy_id(c->id);
	c->id = NULL;
}

static void vdrop_work(struct core_job *j)
{
	drop_verbs(((struct vdrop *)j)->c);
}

/* After drop_verbs(): the rest of @c, on the loop. */
static void conn_free(struct vconn *c, bool drained)
{
	struct vtransport *t = c->t;
	struct peer_link *link = c->link;

	if (!drained)
		rdev_cq_drain(t->d); /* completions of the destroyed QP still name @c */
	vc_io_free(c);
	rdev_cq_unclaim(t->d, c->cq_share);
	c->cq_share = 0;
	if (c->room_freeing)
		t->room_freeing--;
	/* Before anything else can claim it (peer_x_failed() may dial). */
	room_give(t);
	if (link) {
		log_info("verbs peer %s: connection closed: %s", c->addr, c->why);
		peer_x_failed(link, c->err, c->why);
	}
	free(c);
}

static void vdrop_done(struct core_job *j)
{
	struct vdrop *x = (struct vdrop *)j;
	struct vtransport *t = x->c->t;

	conn_free(x->c, x->drained);
	free(x);
	leave(t);
}

/* Free everything of @c (it has failed and flushed, or never started). */
static void conn_destroy(struct vconn *c)
{
	struct vtransport *t = c->t;
	bool drained = vc_io_flushed(c);
	struct vdrop *x;

	c->state = VC_DEAD;
	vc_io_forget(c);
	unlink_conn(c);
	/*
	 * A lookup that never got its turn. One that runs keeps @c: the tick
	 * waits for it, and vp_fini() only runs once no job holds the transport.
	 */
	free(c->name);
	c->name = NULL;
	if (c->id)
		c->id->context = NULL; /* on_cm_events(): its last events are nobody's */
	/* Shutting down (vp_fini()), nothing waits for the loop any more. */
	x = t->freeing ? NULL : calloc(1, sizeof(*x));
	if (!x) {
		drop_verbs(c);
		conn_free(c, drained);
		return;
	}
	x->c = c;
	x->drained = drained;
	x->job.core = t->core;
	x->job.work = vdrop_work;
	x->job.done = vdrop_done;
	t->busy++; /* vdrop_done() leaves */
	core_job_run(&x->job, NULL);
}

/* Deadlines and teardown; true while some connection still needs the tick. */
static bool on_tick_work(struct vtransport *t)
{
	uint64_t now = ev_now_ms(t->ev);
	struct vconn *c, *next;
	bool again = false;

	/* Dials waiting for CQ room: has a connector's turn run out meanwhile? */
	if (t->room_waiters && !t->freeing)
		room_check(t, NULL);
	for (c = t->conns; c; c = next) {
		next = c->next;
		/*
		 * Its name is being looked up (one lookup per peer, however long
		 * it takes), or waits for its turn; closed meanwhile, it drops
		 * the turn.
		 */
		if (c->name) {
			if (c->name->started || c->state < VC_FAILING) {
				again = true;
				continue;
			}
			free(c->name);
			c->name = NULL;
		}
		if (c->state < VC_UP && now >= c->deadline_ms)
			vc_fail(c, -ETIMEDOUT, "timed out %s after %u ms", vc_state_name(c->state),
				VP_CONNECT_MS);
		if (c->setup) { /* its job has the QP: vsetup_done() */
			again = true;
			continue;
		}
		/* The loop may no longer watch the CQ (shutdown): look ourselves. */
		if (c->state == VC_FAILING && !vc_io_flushed(c))
			rdev_cq_drain(t->d);
		if (c->state == VC_FAILING &&
		    (vc_io_flushed(c) || now >= c->fail_ms + VP_FLUSH_MS)) {
			if (!vc_io_flushed(c))
				log_warn("verbs peer %s: the QP did not flush in %u ms; destroying "
					 "it",
					 c->addr, VP_FLUSH_MS);
			conn_destroy(c);
			/* peer_x_failed() may have added or removed connections. */
			next = t->conns;
			continue;
		}
		if (c->state != VC_UP)
			again = true;
	}
	if (t->listen_dead && t->listen_id) {
		vx_rdma_destroy_id(t->listen_id);
		t->listen_id = NULL;
	}
	return again;
}

/* ---- Connection objects ---- */

static int conn_new(struct vtransport *t, struct rdma_cm_id *id, bool outbound, struct vconn **ret)
{
	struct vconn *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->t = t;
	c->id = id;
	c->outbound = outbound;
	c->sq = t->sq_depth;
	c->rq = t->rq_depth;
	c->created_ms = ev_now_ms(t->ev);
	c->deadline_ms = c->created_ms + VP_CONNECT_MS;
	c->next = t->conns;
	t->conns = c;
	*ret = c;
	return 0;
}

/*
 * Inbound, holding CQ room, our accept sent (its handshake's turn since
 * ->ready_ms: the time our own set-up job took is not counted against it),
 * and the other side has not proved the key yet.
 */
static bool conn_pending(const struct vconn *c)
{
	return !c->outbound && c->link && c->cq_share &&
	       (c->state == VC_ACCEPT || c->state == VC_UP) && peer_x_pending(c->link);
}

/* Inbound, holding CQ room, our set-up job still running: pending next. */
static bool conn_setting_up(const struct vconn *c)
{
	return !c->outbound && c->cq_share && c->state == VC_SETUP;
}

/*
 * Of those, the one with the longest turn (NULL: none), and how many there
 * are, counting those still being set up (@ret_n).
 */
static struct vconn *oldest_pending(struct vtransport *t, uint32_t *ret_n)
{
	struct vconn *o, *v = NULL;
	uint32_t n = 0;

	for (o = t->conns; o; o = o->next)
		if (conn_pending(o)) {
			n++;
			if (!v || o->ready_ms < v->ready_ms)
				v = o;
		} else if (conn_setting_up(o)) {
			n++;
		}
	*ret_n = n;
	return v;
}

/* Claim this connection's worst case on the device CQ (rdma_dev.h). */
static int cq_reserve(struct vconn *c, char *why, size_t whylen)
{
	struct vtransport *t = c->t;
	uint32_t need = c->sq + c->rq, pending;
	const struct vconn *v;
	int n;

	if (rdev_cq_claim(t->d, need) == 0) {
		c->cq_share = need;
		return 0;
	}
	n = snprintf(why, whylen,
		     "completion queue full: %u of cq_depth %u entries unclaimed, a connection "
		     "needs %u; raise [verbs] cq_depth",
		     rdev_cq_room(t->d), t->cq_depth, need);
	/* Ours: room_check() found none it could wait for (a regression if not 0). */
	if (c->outbound && n > 0 && (size_t)n < whylen) {
		v = oldest_pending(t, &pending);
		snprintf(why + n, whylen - (size_t)n,
			 "; %u unauthenticated inbound hold room (oldest %llu ms)", pending,
			 (unsigned long long)(v ? ev_now_ms(t->ev) - v->ready_ms : 0));
	}
	return -ENOSPC;
}

/*
 * CQ room and connectors that never authenticate. A connection claims its
 * worst case on the device CQ when it is requested, before the other side
 * proves the key: with the defaults 19 connections fit, and the peer gate
 * lets 64 unauthenticated ones in (8 per address). A few addresses that
 * connect and never authenticate could so hold all of the room for the
 * peer layer's handshake time (5 s), again and again, and every dial of
 * ours to a configured peer would find the CQ full.
 *
 * Admission stays as it is: refusing inbound connections to keep room for
 * our dials deadlocks tight meshes (each side keeps its last room for a
 * dial to the other) and locks out peers we cannot dial. Instead a dial of
 * ours that finds no room waits (VC_ADDR, c->room_wait, within its own
 * deadline) for room being freed: that of connections failing already, if
 * there is more of it than dials waiting, else that of the inbound
 * connection that has had the longest turn at its handshake, once that is
 * VP_EVICT_MS or more: it is dropped (now, or by the tick when its turn
 * reaches that: room_check()). conn_free() hands freed room to the waiting
 * dials, oldest first, before anything else can claim it, so a connector
 * that comes straight back does not get it first. A peer's handshake takes
 * milliseconds; one not done in VP_EVICT_MS is stuck or hostile, and its
 * end counts as a failed handshake as it would have at the deadline. Only
 * when no unauthenticated connection holds room (the room is the
 * authenticated peers') does a dial fail at once: the CQ is full.
 *
 * True when @c waits.
 */
static bool room_wait(struct vconn *c)
{
	struct vtransport *t = c->t;

	if (c->room_wait) /* ADDR_RESOLVED comes once; a second would count it twice */
		return true;
	c->room_wait = true;
	t->room_waiters++;
	if (room_check(t, c))
		return true;
	c->room_wait = false;
	t->room_waiters--;
	return false;
}

/*
 * Dials waiting for room that no failing connection will free: drop the
 * unauthenticated connection with the longest turn if it has had
 * VP_EVICT_MS, and check again. False when none is left that could be
 * dropped; then @dial (one that is only starting to wait) fails at once,
 * and so do the newest waiting dials: the CQ is full.
 */
/* The dial that has waited for room the longest (@newest: the shortest); NULL: none. */
static struct vconn *room_waiter(const struct vtransport *t, bool newest)
{
	struct vconn *o, *c = NULL;

	for (o = t->conns; o; o = o->next)
		if (o->room_wait && (!c || (newest ? o->created_ms >= c->created_ms
						   : o->created_ms <= c->created_ms)))
			c = o;
	return c;
}

static bool room_check(struct vtransport *t, struct vconn *dial)
{
	uint64_t now = ev_now_ms(t->ev);
	struct vconn *v, *c;
	uint32_t pending;

	while (t->room_waiters > t->room_freeing) {
		/* Every connection claims the same share (sq + rq of the transport). */
		v = oldest_pending(t, &pending);
		/* Not yet, or only being set up: the tick looks again (a dial keeps it running). */
		if ((v && now - v->ready_ms < VP_EVICT_MS) || (!v && pending))
			return true;
		/* The oldest waiting dial (room_give() serves it first), or the newest. */
		c = room_waiter(t, !v);
		if (!v) {
			if (c == dial || !c)
				return false;
			c->room_wait = false;
			t->room_waiters--;
			dial_setup(c); /* room may be there after all */
			continue;
		}
		log_warn("verbs peer %s: dropping the connection from %s, not authenticated after "
			 "%llu ms: our connection to %s needs its completion queue room",
			 c->addr, v->addr, (unsigned long long)(now - v->ready_ms), c->addr);
		/* Its reason may reach the connector (a reject): no address of ours in it. */
		vc_fail(v, -ETIMEDOUT,
			"not authenticated after %llu ms while this daemon needed its "
			"completion queue room",
			(unsigned long long)(now - v->ready_ms));
	}
	return true;
}

static void fill_hello(const struct vconn *c, struct vp_cm_hello *h)
{
	memset(h, 0, sizeof(*h));
	h->magic = VP_MAGIC;
	h->version = VP_VERSION;
	h->credits = (uint16_t)c->rq;
	h->chunk = VP_CHUNK;
	if (c->nmr) {
		h->ring_slots = VP_NRING;
		h->ring_addr = (uintptr_t)c->nring;
		h->ring_rkey = c->nmr->rkey;
	}
}

static int take_hello(struct vconn *c, const void *pd, uint8_t pdlen)
{
	struct vp_cm_hello h;

	if (!pd || pdlen < sizeof(h))
		return -EPROTO;
	memcpy(&h, pd, sizeof(h));
	if (h.magic != VP_MAGIC || h.version != VP_VERSION || h.credits < 2 ||
	    h.ring_slots != VP_NRING || !h.ring_addr || h.pad)
		return -EPROTO;
	c->credits = h.credits;
	c->peer_rq = h.credits;
	c->peer_ring = h.ring_addr;
	c->peer_ring_rkey = h.ring_rkey;
	c->peer_chunk = h.chunk < 256 ? 256 : h.chunk > VP_CHUNK ? VP_CHUNK : h.chunk;
	return 0;
}

/* INIT -> INIT (access) -> RTR with our min_rnr_timer. */
static int qp_rtr(struct vconn *c, int resp_res)
{
	struct ibv_qp_attr a = { 0 };
	int mask, r;

	a.qp_state = IBV_QPS_INIT;
	r = vx_rdma_init_qp_attr(c->id, &a, &mask);
	if (r < 0)
		return r;
	a.qp_access_flags = 0; /* vp_open_access() after authentication */
	r = vx_modify_qp(c->qp, &a, mask | IBV_QP_ACCESS_FLAGS);
	if (r < 0)
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	r = vx_rdma_init_qp_attr(c->id, &a, &mask);
	if (r < 0)
		return r;
	mask &= ~IBV_QP_ACCESS_FLAGS; /* some CMs (iWARP) set them here too: stay closed */
	a.min_rnr_timer = VP_MIN_RNR_TIMER;
	mask |= IBV_QP_MIN_RNR_TIMER;
	if (resp_res >= 0)
		a.max_dest_rd_atomic = (uint8_t)resp_res;
	return vx_modify_qp(c->qp, &a, mask);
}

/* RTR -> RTS with our local ACK timeout and retry count. */
static int qp_rts(struct vconn *c)
{
	struct ibv_qp_attr a = { 0 };
	int mask, r;

	a.qp_state = IBV_QPS_RTS;
	r = vx_rdma_init_qp_attr(c->id, &a, &mask);
	if (r < 0)
		return r;
	mask &= ~IBV_QP_ACCESS_FLAGS; /* opened only by vp_open_access() */
	a.timeout = c->t->ack_timeout;
	a.retry_cnt = c->t->retry_count;
	mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT;
	return vx_modify_qp(c->qp, &a, mask);
}

static void conn_up(struct vconn *c)
{
	c->state = VC_UP;
	log_info("verbs peer %s: %s connection up (QP %u, sq %u, rq %u)", c->addr,
		 c->outbound ? "outbound" : "inbound", c->qp->qp_num, c->sq, c->rq);
	if (c->outbound)
		peer_x_connected(c->link);
	vc_defer_kick(c);
}

/* ---- Outbound ---- */

/* A dial of ours sets its QP up (setup_start()), or fails saying why. */
static void dial_setup(struct vconn *c)
{
	char why[200];
	int r = setup_start(c, 0, 0, why, sizeof(why));

	if (r < 0) {
		log_warn("verbs peer %s: not connecting: %s", c->addr, why);
		vc_fail(c, r, "%s", why);
	}
}

static void on_addr_resolved(struct vconn *c)
{
	if (c->id->verbs != rdev_context(c->t->d)) {
		vc_fail(c, -ENETUNREACH, "the route to %s goes through %s, not the daemon's %s",
			c->addr, c->id->verbs ? ibv_get_device_name(c->id->verbs->device) : "?",
			ibv_get_device_name(rdev_context(c->t->d)->device));
		return;
	}
	if (rdev_cq_room(c->t->d) < c->sq + c->rq && room_wait(c))
		return; /* room_give() goes on */
	dial_setup(c);
}

/* Room was freed on the CQ: dials waiting for it (room_wait()) go on first, oldest first. */
static void room_give(struct vtransport *t)
{
	struct vconn *c;

	while (t->room_waiters && !t->freeing) {
		c = room_waiter(t, false);
		if (!c || rdev_cq_room(t->d) < c->sq + c->rq)
			return;
		c->room_wait = false;
		t->room_waiters--;
		dial_setup(c);
	}
}

/* The QP is in INIT with its receives posted (setup_start()). */
static void setup_outbound_done(struct vconn *c)
{
	int r;

	c->state = VC_ROUTE;
	r = vx_rdma_resolve_route(c->id, VP_RESOLVE_MS);
	if (r < 0)
		vc_fail(c, r, "rdma_resolve_route: %s", strerror(-r));
}

static void on_route_resolved(struct vconn *c)
{
	struct rdma_conn_param p = { 0 };
	struct vp_cm_hello h;
	int r;

	fill_hello(c, &h);
	p.private_data = &h;
	p.private_data_len = sizeof(h);
	p.responder_resources = (uint8_t)c->t->resp_res;
	p.initiator_depth = (uint8_t)c->t->init_depth;
	p.retry_count = c->t->retry_count; /* our QP gets it at RTS anyway */
	p.rnr_retry_count = 7;
	p.qp_num = c->qp->qp_num;
	c->state = VC_CONNECT;
	r = vx_rdma_connect(c->id, &p);
	if (r < 0)
		vc_fail(c, r, "rdma_connect: %s", strerror(-r));
}

static void on_connect_response(struct vconn *c, const struct rdma_cm_event *ev)
{
	int r = take_hello(c, ev->param.conn.private_data, ev->param.conn.private_data_len);

	if (r < 0) {
		vc_fail(c, r, "the peer's accept is not from a compatible rdmaproxyd");
		return;
	}
	r = qp_rtr(c, -1);
	if (!r)
		r = qp_rts(c);
	if (!r)
		r = vx_rdma_establish(c->id);
	if (r < 0) {
		vc_fail(c, r, "bringing the QP up: %s", strerror(-r));
		return;
	}
	conn_up(c);
}

static int resolve(const char *host, uint16_t port, int flags, struct addrinfo **ret)
{
	struct addrinfo hints = { .ai_flags = flags | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM };
	char ps[8];

	snprintf(ps, sizeof(ps), "%u", port);
	return getaddrinfo(host, ps, &hints, ret);
}

/* The address is known: rdma_cm resolves it to a device and a GID. */
static int resolve_addr(struct vconn *c, const struct addrinfo *ai)
{
	fmt_addr(ai->ai_addr, c->addr, sizeof(c->addr));
	return vx_rdma_resolve_addr(c->id, ai->ai_addr, VP_RESOLVE_MS);
}

static void vname_work(struct core_job *j)
{
	struct vname *x = (struct vname *)j;
	uint64_t t0 = mono_ns();

	x->r = resolve(x->host, x->port, 0, &x->ai);
	x->err = errno;
	x->ns = mono_ns() - t0;
}

static void vname_done(struct core_job *j);

/* Start the oldest waiting lookups while fewer than VP_LOOKUPS_MAX run. */
static void lookups_next(struct vtransport *t)
{
	while (t->lookups < VP_LOOKUPS_MAX && !t->free_pending) {
		struct vconn *c, *oldest = NULL;

		for (c = t->conns; c; c = c->next) /* newest first */
			if (c->name && !c->name->started && c->state < VC_FAILING)
				oldest = c;
		if (!oldest)
			return;
		oldest->name->started = true;
		log_debug("verbs peer %s:%u: looking up its address off the loop thread",
			  oldest->name->host, oldest->name->port);
		t->lookups++;
		t->busy++; /* vname_done() leaves */
		core_job_run(&oldest->name->job, NULL);
	}
}

static void vname_done(struct core_job *j)
{
	struct vname *x = (struct vname *)j;
	struct vconn *c = x->c;
	struct vtransport *t = c->t;
	int r;

	log_debug("verbs peer %s:%u: looked up off the loop thread in %.0f ms", x->host, x->port,
		  (double)x->ns / 1e6);
	c->name = NULL;
	if (c->state >= VC_FAILING) {
		vc_tick_soon(t); /* it was closed meanwhile: the tick tears it down */
	} else if (x->r) {
		bool sys = x->r == EAI_SYSTEM && x->err > 0;

		vc_fail(c, sys ? -x->err : -EHOSTUNREACH, "cannot look up %s: %s", x->host,
			sys ? strerror(x->err) : gai_strerror(x->r));
	} else {
		/* The rest of the connection gets its own time, whatever the lookup took. */
		c->deadline_ms = ev_now_ms(t->ev) + VP_CONNECT_MS;
		r = resolve_addr(c, x->ai);
		if (r < 0)
			vc_fail(c, r, "rdma_resolve_addr: %s", strerror(-r));
	}
	if (x->ai)
		freeaddrinfo(x->ai);
	free(x);
	t->lookups--;
	lookups_next(t);
	leave(t);
}

static int vp_connect(struct transport *xt, const char *host, uint16_t port, struct peer_link *link,
		      struct xconn **ret)
{
	struct vtransport *t = (struct vtransport *)xt;
	struct addrinfo *ai = NULL;
	struct vname *x = NULL;
	struct rdma_cm_id *id;
	struct vconn *c;
	int r;

	if (t->freeing)
		return -ESHUTDOWN;
	r = resolve(host, port, AI_NUMERICHOST, &ai);
	if (r == EAI_NONAME) { /* a name: looked up off the loop thread */
		x = calloc(1, sizeof(*x));
		if (!x)
			return -ENOMEM;
		snprintf(x->host, sizeof(x->host), "%s", host);
		x->port = port;
	} else if (r) {
		int err = r == EAI_SYSTEM && errno > 0 ? -errno : -EHOSTUNREACH;

		log_warn("verbs peer %s:%u: %s", host, port, gai_strerror(r));
		return err;
	}
	r = vx_rdma_create_id(t->ch, NULL, &id);
	if (r < 0)
		goto out_free;
	r = conn_new(t, id, true, &c);
	if (r < 0) {
		vx_rdma_destroy_id(id);
		goto out_free;
	}
	id->context = c;
	c->link = link;
	if (x) {
		snprintf(c->addr, sizeof(c->addr), "%s:%u", host, port);
		x->c = c;
		x->job.core = t->core;
		x->job.work = vname_work;
		x->job.done = vname_done;
		c->name = x;
		x = NULL;
		lookups_next(t);
	} else {
		r = resolve_addr(c, ai);
		if (r < 0) {
			c->link = NULL;
			c->id = NULL;
			unlink_conn(c);
			free(c);
			vx_rdma_destroy_id(id);
			goto out_free;
		}
	}
	vc_tick_soon(t); /* deadline ticks */
	*ret = (struct xconn *)c;
out_free:
	free(x);
	if (ai)
		freeaddrinfo(ai);
	return r;
}

/* ---- Inbound ---- */

static void reject(struct rdma_cm_id *id, const char *why)
{
	/* Anybody can send connection requests: a flood of them is not a flood of lines. */
	log_ratelimited("verbs peer connections refused", LOG_WARNING,
			"verbs peer: refusing a connection: %s", why);
	vx_rdma_reject(id, why, (uint8_t)(strlen(why) + 1 < 140 ? strlen(why) + 1 : 140));
}

/* ---- Setting a connection's QP up, off the loop thread ---- */

/*
 * A connection's buffers and their three MRs, its QP, INIT and every
 * receive posted take milliseconds on rxe (each MR and the QP are system
 * calls into the driver, which pins and maps). Anybody can send connection
 * requests, and the loop thread is every client's engine too: it only
 * reserves the CQ room and asks the CM for the INIT attributes; a job of the
 * daemon's own (core_job_run()) does the rest off it, and vsetup_done()
 * goes on with the connection on the loop. Meanwhile the connection is
 * VC_SETUP with c->setup set: a failure is only noted (vc_fail()), the tick
 * does not destroy it, and the transport stays busy (not freed).
 */
struct vsetup {
	struct core_job job; /* first */
	struct vconn *c;
	struct ibv_qp_attr init;
	int init_mask;
	int r;
	uint8_t resp_res, init_depth; /* inbound: what the accept offers */
	uint64_t ns;		      /* what the work took */
	char why[200];
};

static void vsetup_work(struct core_job *j)
{
	struct vsetup *s = (struct vsetup *)j;
	uint64_t t0 = mono_ns();

	s->r = vc_io_new(s->c, &s->init, s->init_mask, s->why, sizeof(s->why));
	s->ns = mono_ns() - t0;
}

static void setup_inbound_failed(struct vconn *c, int r, const char *why)
{
	reject(c->id, why);
	peer_x_ours(c->link); /* not the connector's failure */
	vc_fail(c, r, "%s", why);
}

/* The QP is in INIT with its receives posted: RTR, and accept. */
static void setup_inbound_done(struct vconn *c, const struct vsetup *s)
{
	struct rdma_conn_param p = { 0 };
	struct vp_cm_hello h;
	int r;

	p.responder_resources = s->resp_res;
	p.initiator_depth = s->init_depth;
	p.retry_count = c->t->retry_count; /* our QP gets it at RTS anyway */
	p.rnr_retry_count = 7;
	p.qp_num = c->qp->qp_num;
	fill_hello(c, &h);
	p.private_data = &h;
	p.private_data_len = sizeof(h);
	c->state = VC_ACCEPT;
	c->ready_ms = ev_now_ms(c->t->ev);
	r = qp_rtr(c, p.responder_resources);
	if (r == 0)
		r = vx_rdma_accept(c->id, &p);
	if (r < 0)
		vc_fail(c, r, "accepting (QP to RTR, rdma_accept): %s", strerror(-r));
}

static void vsetup_done(struct core_job *j)
{
	struct vsetup *s = (struct vsetup *)j;
	struct vconn *c = s->c;
	struct vtransport *t = c->t;

	c->setup = NULL;
	log_debug("verbs peer %s: QP and buffers set up off the loop thread in %.2f ms (%s)",
		  c->addr, (double)s->ns / 1e6, s->r < 0 ? s->why : "ok");
	if (c->state >= VC_FAILING) {
		/* It failed meanwhile: what vc_fail() left for now (its receives flush). */
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		if (c->qp)
			vx_modify_qp(c->qp, &a, IBV_QP_STATE);
		c->fail_ms = ev_now_ms(t->ev); /* the flush starts now */
		/*
		 * The job may have waited for a thread behind users' jobs, and the
		 * time ran out (the link's handshake, our deadline): that is not
		 * the connector's failure, and it hears why.
		 */
		if (!c->outbound && c->link) {
			reject(c->id, c->why);
			peer_x_ours(c->link);
		}
		vc_tick_soon(t);
	} else if (s->r < 0) {
		if (c->outbound) {
			log_warn("verbs peer %s: not connecting: %s", c->addr, s->why);
			vc_fail(c, s->r, "%s", s->why);
		} else {
			setup_inbound_failed(c, s->r, s->why);
		}
	} else {
		/* The CM exchange gets its own time, whatever the job waited for. */
		c->deadline_ms = ev_now_ms(t->ev) + VP_CONNECT_MS;
		if (c->outbound)
			setup_outbound_done(c);
		else
			setup_inbound_done(c, s);
	}
	free(s);
	leave(t);
}

/* Start making @c's QP (struct vsetup): 0, or <0 with @why and nothing started. */
static int setup_start(struct vconn *c, uint8_t resp_res, uint8_t init_depth, char *why,
		       size_t whylen)
{
	struct vsetup *s;
	int r = cq_reserve(c, why, whylen);

	if (r < 0)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(why, whylen, "setting up the QP: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	s->init.qp_state = IBV_QPS_INIT;
	r = vx_rdma_init_qp_attr(c->id, &s->init, &s->init_mask);
	if (r < 0) {
		snprintf(why, whylen, "QP to INIT: %s", strerror(-r));
		free(s);
		return r;
	}
	s->c = c;
	s->resp_res = resp_res;
	s->init_depth = init_depth;
	s->job.core = c->t->core;
	s->job.work = vsetup_work;
	s->job.done = vsetup_done;
	c->setup = s;
	c->state = VC_SETUP;
	c->t->busy++; /* vsetup_done() leaves */
	core_job_run(&s->job, NULL);
	return 0;
}

/* Returns true when @id must be destroyed after the event is acknowledged. */
static bool on_request(struct vtransport *t, struct rdma_cm_event *ev)
{
	struct rdma_cm_id *id = ev->id;
	const struct rdma_conn_param *rp = &ev->param.conn;
	struct vconn *c;
	char why[200];
	int r;

	if (t->freeing) {
		reject(id, "shutting down");
		return true;
	}
	if (id->verbs != rdev_context(t->d)) {
		snprintf(why, sizeof(why), "it arrived on %s, not on the daemon's device %s",
			 id->verbs ? ibv_get_device_name(id->verbs->device) : "?",
			 ibv_get_device_name(rdev_context(t->d)->device));
		reject(id, why);
		return true;
	}
	if (conn_new(t, id, false, &c) < 0) {
		reject(id, "out of memory");
		return true;
	}
	id->context = c;
	fmt_addr(rdma_get_peer_addr(id), c->addr, sizeof(c->addr));
	if (take_hello(c, rp->private_data, rp->private_data_len) < 0) {
		snprintf(why, sizeof(why), "from %s: not a compatible rdmaproxyd", c->addr);
		goto out_reject;
	}
	/*
	 * The peer layer's gate first: a connector it refuses claims no CQ
	 * room, no registered buffers and no QP.
	 */
	c->link = peer_x_accepted(&t->t, (struct xconn *)c, c->addr);
	if (!c->link) {
		snprintf(why, sizeof(why), "from %s: refused by the peer layer", c->addr);
		goto out_reject;
	}
	r = setup_start(
		c, (uint8_t)(rp->initiator_depth < t->resp_res ? rp->initiator_depth : t->resp_res),
		(uint8_t)(rp->responder_resources < t->init_depth ? rp->responder_resources
								  : t->init_depth),
		why, sizeof(why));
	if (r < 0) {
		setup_inbound_failed(c, r, why);
		return false;
	}
	vc_tick_soon(t);
	return false;

out_reject:
	reject(id, why);
	/* Nothing was reported: tear down without peer_x_failed(). */
	c->link = NULL;
	vc_fail(c, -ECONNREFUSED, "%s", why);
	return false;
}

static void on_established(struct vconn *c)
{
	int r;

	if (c->state != VC_ACCEPT)
		return;
	r = qp_rts(c);
	if (r < 0) {
		vc_fail(c, r, "QP to RTS: %s", strerror(-r));
		return;
	}
	conn_up(c);
}

static void on_rejected(struct vconn *c, const struct rdma_cm_event *ev)
{
	const char *pd = ev->param.conn.private_data;
	char reason[141] = "";

	/* Our own rejects carry a NUL-terminated reason. */
	if (pd && ev->param.conn.private_data_len) {
		size_t n = ev->param.conn.private_data_len < 140 ? ev->param.conn.private_data_len
								 : 140;
		size_t i;

		memcpy(reason, pd, n);
		reason[n] = 0;
		for (i = 0; reason[i]; i++)
			if (reason[i] < 0x20 || reason[i] > 0x7e)
				reason[i] = '?';
	}
	/* IB CM reject reason 8 (invalid service ID): nobody listens on that port. */
	if (ev->status == 8 && !reason[0])
		snprintf(reason, sizeof(reason), "no rdmaproxyd listens on verbs there");
	vc_fail(c, -ECONNREFUSED, "rejected by %s%s%s (CM status %d)", c->addr,
		reason[0] ? ": " : "", reason, ev->status);
}

static void conn_event(struct vconn *c, struct rdma_cm_event *ev)
{
	/* A connection being torn down only waits for its QP to flush. */
	if (c->state >= VC_FAILING)
		return;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		on_addr_resolved(c);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		on_route_resolved(c);
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		on_connect_response(c, ev);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		on_established(c);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
		vc_fail(c, -EHOSTUNREACH, "cannot resolve %s to an RDMA address: %s", c->addr,
			strerror(-ev->status));
		break;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		vc_fail(c, -EHOSTUNREACH, "no RDMA route to %s: %s", c->addr,
			strerror(-ev->status));
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
		vc_fail(c, -EHOSTUNREACH,
			"%s unreachable (no CM reply; is its rdmaproxyd "
			"listening on verbs?)",
			c->addr);
		break;
	case RDMA_CM_EVENT_REJECTED:
		on_rejected(c, ev);
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		vc_fail(c, -ECONNABORTED, "connection to %s failed: %s", c->addr,
			strerror(-ev->status));
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		vc_fail(c, -ECONNRESET, "%s disconnected", c->addr);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		vc_fail(c, -ENODEV, "the RDMA device was removed");
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		break;
	default:
		log_debug("verbs peer %s: rdma_cm event %s ignored", c->addr,
			  rdma_event_str(ev->event));
		break;
	}
}

static void on_cm_events(struct vtransport *t)
{
	struct rdma_cm_event *ev;
	int r;

	while ((r = vx_rdma_get_cm_event(t->ch, &ev)) == 0) {
		struct rdma_cm_id *kill = NULL;

		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			if (on_request(t, ev))
				kill = ev->id;
		} else if (ev->id == t->listen_id) {
			if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
				log_err("verbs transport: the RDMA device was removed; no longer "
					"accepting peers");
				t->listen_dead = true;
				vc_tick_soon(t);
			}
		} else if (ev->id->context) {
			conn_event(ev->id->context, ev);
		}
		/* Acknowledge before any rdma_destroy_id(): it waits for this. */
		vx_rdma_ack_cm_event(ev);
		if (kill)
			vx_rdma_destroy_id(kill);
	}
	if (r != -EAGAIN)
		log_err("rdma_get_cm_event: %s", strerror(-r));
}

/* ---- Transport ops ---- */

static int vp_listen(struct transport *xt, const char *host, uint16_t port, char *why,
		     size_t whylen)
{
	struct vtransport *t = (struct vtransport *)xt;
	struct addrinfo *ai = NULL;
	int r;

	r = resolve(host, port, AI_PASSIVE, &ai);
	if (r) {
		snprintf(why, whylen, "listen address %s: %s", host, gai_strerror(r));
		return -EINVAL;
	}
	r = vx_rdma_create_id(t->ch, t, &t->listen_id);
	if (r < 0) {
		snprintf(why, whylen, "rdma_create_id: %s", strerror(-r));
		goto out_free;
	}
	r = vx_rdma_bind_listen(t->listen_id, ai->ai_addr, VP_BACKLOG);
	if (r < 0) {
		snprintf(why, whylen, "rdma_cm listen on %s:%u: %s", host, port, strerror(-r));
		goto out_destroy;
	}
	if (t->listen_id->verbs && t->listen_id->verbs != rdev_context(t->d)) {
		r = -EADDRNOTAVAIL;
		snprintf(why, whylen, "%s is on %s, not on the daemon's device %s", host,
			 ibv_get_device_name(t->listen_id->verbs->device),
			 ibv_get_device_name(rdev_context(t->d)->device));
		goto out_destroy;
	}
	freeaddrinfo(ai);
	return 0;

out_destroy:
	vx_rdma_destroy_id(t->listen_id);
	t->listen_id = NULL;
out_free:
	freeaddrinfo(ai);
	return r;
}

static void vp_free(struct transport *xt);

static const char *vp_remote_addr(const struct xconn *x)
{
	return ((const struct vconn *)x)->addr;
}

static void vp_close(struct xconn *x)
{
	struct vconn *c = (struct vconn *)x;

	if (c->closed)
		return;
	c->closed = true;
	vc_fail(c, -ECONNABORTED, "closed by this daemon");
}

static int vp_open_access(struct xconn *x)
{
	struct vconn *c = (struct vconn *)x;
	struct ibv_qp_attr a = { .qp_access_flags =
					 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

	if (c->state != VC_UP || !c->qp)
		return -ENOTCONN;
	/* RTS -> RTS with new access flags (an optional attribute of that transition). */
	return vx_modify_qp(c->qp, &a, IBV_QP_ACCESS_FLAGS);
}

static int vp_export_info(struct transport *xt, struct export *e, const char *peer, void *buf,
			  size_t cap)
{
	struct vp_xinfo xi = { 0 };
	struct vmr *mr;
	int r;

	if (cap < sizeof(xi))
		return -ENOBUFS;
	r = export_peer_mr(e, peer, &mr);
	if (r < 0)
		return r;
	/* This peer's own MR of the export (exports.c), with exactly its access. */
	xi.addr = vmr_addr(mr);
	xi.len = vmr_len(mr);
	xi.rkey = vmr_rkey(mr);
	xi.magic = VP_MAGIC;
	memcpy(buf, &xi, sizeof(xi));
	return sizeof(xi);
}

static const struct transport_ops vp_ops = {
	.name = "verbs",
	.listen = vp_listen,
	.connect = vp_connect,
	.remote_addr = vp_remote_addr,
	.close = vp_close,
	.open_access = vp_open_access,
	.send_ctrl = vc_send_ctrl,
	.submit = vc_submit,
	.export_info = vp_export_info,
	.peer_mr = true,
	.revoke = vc_revoke,
	.free = vp_free,
};

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static int vp_init(struct vtransport *t, struct rdev *d, const struct config *cfg,
		   uint64_t incarnation, char *why, size_t whylen)
{
	struct ibv_device_attr da;
	int fl, r;

	t->d = d;
	t->incarnation = incarnation;
	r = vx_query_device(rdev_context(d), &da);
	if (r < 0) {
		snprintf(why, whylen, "ibv_query_device: %s", strerror(-r));
		return r;
	}
	t->sq_depth = min_u32(min_u32(cfg->sq_depth, VP_SQ_MAX), (uint32_t)da.max_qp_wr);
	t->rq_depth = min_u32(min_u32(cfg->rq_depth, VP_RQ_MAX), (uint32_t)da.max_qp_wr);
	if (t->rq_depth < 4)
		t->rq_depth = 4;
	t->inline_size = cfg->inline_size;
	t->ack_timeout = (uint8_t)cfg->ack_timeout;
	t->retry_count = (uint8_t)cfg->retry_count;
	t->resp_res = da.max_qp_rd_atom < VP_RD_ATOMIC_MAX ? da.max_qp_rd_atom : VP_RD_ATOMIC_MAX;
	t->init_depth = da.max_qp_init_rd_atom < VP_RD_ATOMIC_MAX ? da.max_qp_init_rd_atom
								  : VP_RD_ATOMIC_MAX;
	t->cq_depth = cfg->cq_depth;
	r = vx_rdma_create_event_channel(&t->ch);
	if (r < 0) {
		snprintf(why, whylen, "rdma_create_event_channel: %s", strerror(-r));
		return r;
	}
	fl = fcntl(t->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(t->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    fcntl(t->ch->fd, F_SETFD, FD_CLOEXEC) < 0) {
		snprintf(why, whylen, "rdma_cm channel non-blocking: %s", strerror(errno));
		rdma_destroy_event_channel(t->ch);
		t->ch = NULL;
		return -errno;
	}
	snprintf(why, whylen,
		 "%s, per connection sq %u rq %u (%u completion entries), room for %u connections "
		 "in cq_depth %u, ACK timeout %.3g ms, %u retries",
		 ibv_get_device_name(rdev_context(d)->device), t->sq_depth, t->rq_depth,
		 t->sq_depth + t->rq_depth, rdev_cq_room(d) / (t->sq_depth + t->rq_depth),
		 cfg->cq_depth, 4.096e-3 * (double)(1ull << t->ack_timeout), t->retry_count);
	return 0;
}

/* After every connection reported failed (transport.h); anything left is dropped quietly. */
static void vp_fini(struct vtransport *t)
{
	t->freeing = true;
	while (t->conns) {
		struct vconn *c = t->conns;

		if (c->state < VC_FAILING)
			vc_fail(c, -ESHUTDOWN, "shutting down");
		c->link = NULL;
		conn_destroy(c);
	}
	if (t->listen_id)
		vx_rdma_destroy_id(t->listen_id);
	t->listen_id = NULL;
	if (t->ch)
		rdma_destroy_event_channel(t->ch);
	t->ch = NULL;
}

/* ---- Loop callbacks (evloop.h) and the transport's life ---- */

/*
 * A callback working on the transport marks it busy: a conn_destroy() inside
 * it can make the peer layer free the transport (the last link of a
 * stopping daemon), which then only happens on the way out.
 */
static void free_now(struct vtransport *t)
{
	ev_watch_free(t->ev, t->cm_watch);
	ev_timer_free(t->ev, t->tick);
	ev_timer_free(t->ev, t->flush);
	vp_fini(t);
	free(t);
}

static bool leave(struct vtransport *t)
{
	if (--t->busy || !t->free_pending)
		return false;
	free_now(t);
	return true;
}

static void vp_free(struct transport *xt)
{
	struct vtransport *t = (struct vtransport *)xt;

	if (t->busy) {
		t->free_pending = true;
		return;
	}
	free_now(t);
}

static void on_cm(void *arg)
{
	struct vtransport *t = arg;

	t->busy++;
	on_cm_events(t);
	leave(t);
}

/* While connections are being set up or torn down: look at them this often. */
#define VP_TICK_MS 100

static void on_tick(void *arg)
{
	struct vtransport *t = arg;
	bool again;

	t->busy++;
	again = on_tick_work(t);
	if (!leave(t) && again)
		ev_timer_start(t->ev, t->tick, VP_TICK_MS, 0);
}

static void on_flush(void *arg)
{
	struct vtransport *t = arg;

	t->busy++;
	vc_flush(t);
	leave(t);
}

int verbs_transport_new(struct rdev *d, struct core *core, const struct config *cfg,
			uint64_t incarnation, struct evloop *ev, struct transport **ret)
{
	struct vtransport *t;
	char why[256] = "";
	int r;

	if (!d)
		return -ENODEV;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->t.ops = &vp_ops;
	t->core = core;
	t->ev = ev;
	r = vp_init(t, d, cfg, incarnation, why, sizeof(why));
	if (r < 0) {
		log_err("verbs transport: %s", why);
		free(t);
		return r;
	}
	r = ev_timer_new(ev, on_tick, t, &t->tick);
	if (r == 0)
		r = ev_timer_new(ev, on_flush, t, &t->flush);
	if (r == 0)
		r = ev_watch_new(ev, t->ch->fd, on_cm, t, &t->cm_watch);
	if (r < 0) {
		log_err("verbs transport: cannot watch the rdma_cm channel: %s", strerror(-r));
		free_now(t);
		return r;
	}
	log_info("verbs transport: %s", why);
	*ret = &t->t;
	return 0;
}
