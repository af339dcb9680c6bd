/* SPDX-License-Identifier: MIT */
/*
 * The data path of one verbs peer connection: its RC QP on the daemon's PD
 * and shared CQ, send-queue slots, receive buffers, credits, post lists with
 * selective signalling, completions, and the messages of verbs_peer_io.h.
 *
 * Flow control (nothing can overflow):
 *  - Send queue: a ring of c->sq slots; a WR is posted only into a free
 *    slot. Completions are in order on an RC send queue, so a signalled
 *    completion (or any error completion) retires every slot up to it.
 *  - Far receive queue: c->credits counts receives the other side has posted
 *    for us (its VP_RQ_MAX at connect time, then what every message header
 *    returns). Every SEND takes one; the last one is kept for VP_CREDIT, so
 *    both sides can always return credits and never deadlock.
 *  - Shared CQ: a connection reserves sq + rq entries of it for its lifetime
 *    (verbs_peer.c refuses connections beyond [verbs] cq_depth); flushes
 *    complete every WR, signalled or not, so that is the worst case.
 *
 * Signalling: a post list is built from everything that is ready (control
 * messages first, then one-sided pieces and SEND chunks, round-robin between
 * ops so one large transfer does not starve the others) and posted with one
 * ibv_post_send (one system call on rxe). Only the last WR of a list and
 * every VP_SIGNAL_EVERY-th are signalled. Each op is reported once all its
 * WRs are retired (and, for SEND / NOTIFY, once the far side's reply came).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h" /* struct region */
#include "base/log.h"
#include "base/memguard.h"
#include "rdma/verbs_local.h"
#include "peer/verbs_peer_io.h"
#include "rdma/vx.h"

/* Return credits explicitly once this many are owed and nothing else carries them. */
#define VP_CREDIT_AT(c) ((c)->rq / 4 ? (c)->rq / 4 : 1)

static uint8_t *sbuf_of(struct vconn *c, uint32_t idx)
{
	return c->sbuf + (size_t)idx * VP_SBUF;
}

static uint8_t *rbuf_of(struct vconn *c, uint32_t idx)
{
	return c->rbuf + (size_t)idx * VP_RBUF;
}

static uint32_t sq_free(const struct vconn *c)
{
	return c->sq - (c->s_head - c->s_tail);
}

bool vc_io_flushed(const struct vconn *c)
{
	return c->s_head == c->s_tail && c->r_posted == 0;
}

void vc_defer_kick(struct vconn *c)
{
	if (c->state > VC_UP)
		return;
	c->kick = true;
	ev_timer_start(c->t->ev, c->t->flush, 0, 0);
}

void vc_flush(void *transport)
{
	struct vtransport *t = transport;
	struct vconn *c;

	for (c = t->conns; c; c = c->next)
		if (c->kick)
			vc_kick(c);
}

void vc_tick_soon(struct vtransport *t)
{
	if (t->tick)
		ev_timer_start(t->ev, t->tick, 0, 0);
}

const char *vc_state_name(enum vc_state s)
{
	static const char *const n[] = { "resolving address", "setting up its QP",
					 "resolving route",   "connecting",
					 "accepting",	      "up",
					 "failing",	      "dead" };

	return s <= VC_DEAD ? n[s] : "?";
}

void vc_fail(struct vconn *c, int err, const char *fmt, ...)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	enum vc_state was = c->state;
	va_list ap;

	if (c->state >= VC_FAILING)
		return;
	c->state = VC_FAILING;
	/* The CQ room bookkeeping of verbs_peer.c (room_wait()). */
	if (c->cq_share && !c->room_freeing) {
		c->room_freeing = true;
		c->t->room_freeing++;
	}
	if (c->room_wait) {
		c->room_wait = false;
		c->t->room_waiters--;
	}
	c->err = err < 0 ? err : -EIO;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	c->fail_ms = ev_now_ms(c->t->ev);
	log_debug("verbs peer %s: %s (was %s)", c->addr, c->why, vc_state_name(was));
	/* Every posted WR now completes (flushed) through the CQ (after the setup job:
	 * vsetup_done()). */
	if (!c->setup && c->qp)
		vx_modify_qp(c->qp, &a, IBV_QP_STATE);
	if (c->id && was >= VC_CONNECT)
		vx_rdma_disconnect(c->id); /* DREQ: the far side learns at once */
	vc_tick_soon(c->t);
}

/* A failing connection may have drained: the tick destroys it. */
static void vc_reap_soon(struct vconn *c)
{
	if (vc_io_flushed(c))
		vc_tick_soon(c->t);
}

/* ---- Op bookkeeping ---- */

static void q_push(struct peer_op **head, struct peer_op **tail, struct peer_op *op)
{
	vpx(op)->next = NULL;
	if (*tail)
		vpx(*tail)->next = op;
	else
		*head = op;
	*tail = op;
}

static struct peer_op *q_pop(struct peer_op **head, struct peer_op **tail)
{
	struct peer_op *op = *head;

	if (op) {
		*head = vpx(op)->next;
		if (!*head)
			*tail = NULL;
	}
	return op;
}

static void q_remove(struct peer_op **head, struct peer_op **tail, struct peer_op *op)
{
	struct peer_op **pp, *prev = NULL;

	for (pp = head; *pp; prev = *pp, pp = &vpx(*pp)->next)
		if (*pp == op) {
			*pp = vpx(op)->next;
			if (*tail == op)
				*tail = prev;
			return;
		}
}

static void waiting_remove(struct vconn *c, struct peer_op *op)
{
	struct peer_op **pp;

	for (pp = &c->waiting; *pp; pp = &vpx(*pp)->rnext)
		if (*pp == op) {
			*pp = vpx(op)->rnext;
			return;
		}
}

static struct peer_op *waiting_find(struct vconn *c, uint64_t id)
{
	struct peer_op *op;

	for (op = c->waiting; op; op = vpx(op)->rnext)
		if (vpx(op)->id == id)
			return op;
	return NULL;
}

/*
 * Report @op with @status, after taking it off every list it is on. Only an
 * op not wholly posted can be queued, and only one awaiting its reply can
 * wait for it: the queues hold every local user's ops to this peer (up to
 * max_inflight each), and a walk of them at each op's report made every
 * user's ops pay for another's backlog.
 */
static void op_report(struct vconn *c, struct peer_op *op, int status)
{
	if (!(vpx(op)->flags & VPX_ALL_POSTED)) {
		q_remove(&c->rwq, &c->rwq_tail, op);
		q_remove(&c->sendq, &c->sendq_tail, op);
	}
	if (vpx(op)->reply == VPX_AWAITING)
		waiting_remove(c, op);
	vpx(op)->flags |= VPX_ALL_POSTED;
	vpx(op)->reply = VPX_ANSWERED;
	peer_x_op_done(op, status);
}

/*
 * Report @op if nothing of it is outstanding any more. On a failing
 * connection only precise outcomes are reported here (an error the far side
 * answered, or "certainly did not happen"); the rest stay with the peer
 * layer, which reports them -RP_EOUTCOME when peer_x_failed() comes.
 */
static void op_check(struct vconn *c, struct peer_op *op)
{
	struct vp_opx *x = vpx(op);

	if (x->wrs)
		return;
	if (c->state >= VC_FAILING) {
		if (x->status) {
			op_report(c, op, x->status);
		} else if ((x->flags & VPX_ALL_POSTED) && !(x->flags & VPX_SOME_FAILED) &&
			   x->reply != VPX_AWAITING) {
			/*
			 * Every WR of it completed successfully before the QP
			 * failed (unsignalled ones are implied by the next
			 * completion: the send queue completes in order).
			 */
			op_report(c, op, 0);
		}
		return;
	}
	if (!(x->flags & VPX_ALL_POSTED))
		return;
	if (x->reply == VPX_AWAITING)
		return;
	op_report(c, op, x->status);
}

/* ---- Building the post list ---- */

struct plist {
	uint32_t n;
};

static struct ibv_send_wr *wr_add(struct vconn *c, struct plist *pl, struct peer_op *op)
{
	uint32_t idx = c->s_head % c->sq;
	struct ibv_send_wr *wr = &c->wrv[pl->n];
	struct vp_sslot *s = &c->ss[idx];

	memset(wr, 0, sizeof(*wr));
	s->op = op;
	wr->wr_id = (uintptr_t)&s->w;
	wr->sg_list = &c->sgev[2 * pl->n];
	c->wr_may_fault[pl->n] = false;
	if (op) {
		op->fate = PEER_OP_POSTED;
		vpx(op)->wrs++;
	}
	c->s_head++;
	pl->n++;
	return wr;
}

/* A SEND of a header (+ @body) from the slot's buffer; payload SGE added by the caller. */
static struct ibv_send_wr *msg_add(struct vconn *c, struct plist *pl, struct peer_op *op,
				   uint8_t type, uint8_t flags, uint64_t id, const void *body,
				   uint32_t blen, uint32_t payload)
{
	uint8_t *b = sbuf_of(c, c->s_head % c->sq);
	struct ibv_send_wr *wr = wr_add(c, pl, op);
	struct vp_hdr h = {
		.type = type,
		.flags = flags,
		.credits = (uint16_t)c->owed,
		.len = blen + payload,
		.id = id,
	};

	c->owed = 0;
	c->credits--;
	memcpy(b, &h, sizeof(h));
	if (blen)
		memcpy(b + sizeof(h), body, blen);
	wr->sg_list[0].addr = (uintptr_t)b;
	wr->sg_list[0].length = (uint32_t)sizeof(h) + blen;
	wr->sg_list[0].lkey = c->smr->lkey;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_SEND;
	return wr;
}

/* Credits a message may use: one is always kept for VP_CREDIT. */
static bool may_send(const struct vconn *c)
{
	return c->credits >= 2;
}

static bool add_msg(struct vconn *c, struct plist *pl)
{
	struct vp_msg *m = c->mq;

	if (!m || !may_send(c))
		return false;
	c->mq = m->next;
	if (!c->mq)
		c->mq_tail = NULL;
	c->mq_len--;
	if (m->fence)
		msg_add(c, pl, NULL, m->type, 0, m->id, m->body, m->len, 0)->send_flags |=
			IBV_SEND_FENCE;
	else
		msg_add(c, pl, NULL, m->type, 0, m->id, m->body, m->len, 0);
	free(m);
	return true;
}

/* SGE @k of @wr: @n bytes of @op's region from @at. */
static void local_sge(struct vconn *c, struct ibv_send_wr *wr, int k, struct peer_op *op,
		      uint64_t at, uint64_t n)
{
	struct region *r = op->region;
	struct vmr *mr = r->xport;
	struct ibv_sge *sge = &wr->sg_list[k];

	sge->addr = (uintptr_t)r->addr + op->off + at;
	sge->length = (uint32_t)n;
	sge->lkey = vmr_lkey(mr);
	if (vmr_may_fault(mr))
		c->wr_may_fault[wr - c->wrv] = true;
}

/*
 * The notification of a WRITE whose data is posted: a WRITE_WITH_IMM of its
 * descriptor into a free slot of the far notify ring, imm = the slot.
 */
static void add_notify(struct vconn *c, struct plist *pl, struct peer_op *op)
{
	struct vp_opx *x = vpx(op);
	uint8_t *b = sbuf_of(c, c->s_head % c->sq);
	struct ibv_send_wr *wr = wr_add(c, pl, op);
	struct vp_notify nb = {
		.export_id = op->export_id,
		.export_inc = op->export_inc,
		.off = op->remote_off,
		.len = op->len,
		.id = x->id,
		.imm = op->imm,
	};

	x->slot = c->nfree[--c->nfree_n];
	c->credits--; /* it consumes a receive on the far side */
	memcpy(b, &nb, sizeof(nb));
	wr->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr->imm_data = htonl(x->slot);
	wr->wr.rdma.remote_addr = c->peer_ring + (uint64_t)x->slot * sizeof(nb);
	wr->wr.rdma.rkey = c->peer_ring_rkey;
	wr->sg_list[0].addr = (uintptr_t)b;
	wr->sg_list[0].length = (uint32_t)sizeof(nb);
	wr->sg_list[0].lkey = c->smr->lkey;
	wr->num_sge = 1;
	x->rnext = c->waiting;
	c->waiting = op;
}

/* One piece of a WRITE or READ (plus the notification after a WRITE's last piece). */
static bool add_rw(struct vconn *c, struct plist *pl)
{
	struct peer_op *op = c->rwq;
	struct vp_opx *x;
	struct vp_xinfo xi;
	struct ibv_send_wr *wr;
	uint64_t n;
	bool last, notify;

	if (!op)
		return false;
	x = vpx(op);
	n = op->len - x->done < VP_RW_PIECE ? op->len - x->done : VP_RW_PIECE;
	last = x->done + n == op->len;
	notify = last && (op->flags & PEER_OP_F_NOTIFY);
	if (notify && (sq_free(c) < 2 || !may_send(c) || !c->nfree_n))
		return false;
	/*
	 * At most VP_RW_WINDOW bytes of one-sided data in flight: a control
	 * message (a keepalive reply, a withdrawal's confirmation) posted now
	 * waits behind no more than that on this RC send queue.
	 */
	if (c->rw_posted >= VP_RW_WINDOW)
		return false;
	memcpy(&xi, op->xinfo, sizeof(xi));
	q_pop(&c->rwq, &c->rwq_tail);
	wr = wr_add(c, pl, op);
	c->ss[(c->s_head - 1) % c->sq].bytes = (uint32_t)n;
	c->rw_posted += n;
	if (n >= VP_RW_SIGNAL_BYTES) /* the window frees piece by piece */
		wr->send_flags |= IBV_SEND_SIGNALED;
	wr->opcode = op->kind == PEER_OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
	wr->wr.rdma.remote_addr = xi.addr + op->remote_off + x->done;
	wr->wr.rdma.rkey = xi.rkey;
	if (n) {
		local_sge(c, wr, 0, op, x->done, n);
		wr->num_sge = 1;
	}
	x->done += n;
	if (notify) /* same QP, later in the list: RC executes it after the data landed */
		add_notify(c, pl, op);
	if (last)
		x->flags |= VPX_ALL_POSTED;
	else
		q_push(&c->rwq, &c->rwq_tail, op); /* round-robin */
	return true;
}

/* One chunk of the SEND at the head of sendq (messages are not interleaved). */
static bool add_send(struct vconn *c, struct plist *pl)
{
	struct peer_op *op = c->sendq;
	struct vp_opx *x;
	struct ibv_send_wr *wr;
	struct vp_send sb = { 0 };
	uint64_t n;
	uint8_t fl = 0;

	if (!op || !may_send(c))
		return false;
	x = vpx(op);
	if (x->reply == VPX_ANSWERED) {
		/* Refused early by the far side: the rest is not sent. */
		q_pop(&c->sendq, &c->sendq_tail);
		x->flags |= VPX_ALL_POSTED;
		op_check(c, op);
		return true;
	}
	n = op->len - x->done < c->peer_chunk ? op->len - x->done : c->peer_chunk;
	if (x->done == 0) {
		fl |= VP_F_FIRST;
		x->rnext = c->waiting;
		c->waiting = op;
	}
	if (x->done + n == op->len)
		fl |= VP_F_LAST;
	sb.total = op->len;
	sb.off = x->done;
	memcpy(sb.endpoint, op->endpoint, sizeof(sb.endpoint));
	wr = msg_add(c, pl, op, VP_SEND, fl, x->id, &sb, sizeof(sb), (uint32_t)n);
	if (n) {
		/* Zero copy: the payload goes straight from the client's region. */
		local_sge(c, wr, 1, op, x->done, n);
		wr->num_sge = 2;
	}
	x->done += n;
	if (fl & VP_F_LAST) {
		q_pop(&c->sendq, &c->sendq_tail);
		x->flags |= VPX_ALL_POSTED;
	}
	return true;
}

static bool add_data(struct vconn *c, struct plist *pl)
{
	bool sent;

	c->turn_send = !c->turn_send;
	if (c->turn_send) {
		sent = add_send(c, pl);
		return sent || add_rw(c, pl);
	}
	sent = add_rw(c, pl);
	return sent || add_send(c, pl);
}

static void post_list(struct vconn *c, struct plist *pl)
{
	struct ibv_send_wr *bad = NULL;
	uint32_t i;
	int r;

	for (i = 0; i < pl->n; i++) {
		struct ibv_send_wr *wr = &c->wrv[i];
		bool last = i + 1 == pl->n;
		uint32_t bytes = 0;
		int k;

		for (k = 0; k < wr->num_sge; k++)
			bytes += wr->sg_list[k].length;
		/*
		 * Small payloads are copied into the WR: the device need not look
		 * them up. Not from memory that may fault: the provider's copy is
		 * not guarded (VMR_MAY_FAULT).
		 */
		if (wr->opcode != IBV_WR_RDMA_READ && bytes && bytes <= c->max_inline &&
		    !c->wr_may_fault[i])
			wr->send_flags |= IBV_SEND_INLINE;
		wr->next = last ? NULL : &c->wrv[i + 1];
		if (last || ++c->unsignaled >= VP_SIGNAL_EVERY) {
			c->wrv[i].send_flags |= IBV_SEND_SIGNALED;
			c->unsignaled = 0;
		}
	}
	r = vx_post_send(c->qp, c->wrv, &bad);
	if (r == 0)
		return;
	/*
	 * Take back what was not posted: those WRs never existed. Their op
	 * never ends OK: pieces of it may have been posted in earlier lists
	 * and completed, but not these (it ends -RP_EOUTCOME with the link).
	 */
	for (i = bad ? (uint32_t)(bad - c->wrv) : 0; i < pl->n; i++) {
		struct vp_sslot *s = (struct vp_sslot *)(uintptr_t)c->wrv[i].wr_id;

		if (s->op) {
			vpx(s->op)->wrs--;
			vpx(s->op)->flags |= VPX_SOME_FAILED;
		}
		s->op = NULL;
		c->rw_posted -= s->bytes;
		s->bytes = 0;
	}
	c->s_head -= pl->n - (bad ? (uint32_t)(bad - c->wrv) : 0);
	vc_fail(c, r, "ibv_post_send: %s", strerror(-r));
}

void vc_kick(struct vconn *c)
{
	struct plist pl = { 0 };

	c->kick = false;
	if (c->state != VC_UP)
		return;
	while (sq_free(c) > 0 && (add_msg(c, &pl) || add_data(c, &pl)))
		;
	if (!pl.n && c->owed >= VP_CREDIT_AT(c) && c->credits >= 1 && sq_free(c) > 0)
		msg_add(c, &pl, NULL, VP_CREDIT, 0, 0, NULL, 0, 0);
	if (pl.n)
		post_list(c, &pl);
}

/* ---- Entry points from the peer layer ---- */

static int msg_queue(struct vconn *c, uint8_t type, uint64_t id, const void *body, size_t len)
{
	struct vp_msg *m;

	if (c->mq_len >= VP_CTRLQ_MAX)
		return -ENOBUFS;
	m = malloc(sizeof(*m) + len);
	if (!m)
		return -ENOMEM;
	m->next = NULL;
	m->fence = false;
	m->type = type;
	m->id = id;
	m->len = (uint32_t)len;
	memcpy(m->body, body, len);
	if (c->mq_tail)
		c->mq_tail->next = m;
	else
		c->mq = m;
	c->mq_tail = m;
	c->mq_len++;
	vc_defer_kick(c);
	return 0;
}

int vc_send_ctrl(struct xconn *x, const void *msg, size_t len)
{
	struct vconn *c = (struct vconn *)x;

	if (len > PEER_CTRL_MAX)
		return -EMSGSIZE;
	if (c->state >= VC_FAILING)
		return -ENOTCONN;
	return msg_queue(c, VP_CTRL, 0, msg, len);
}

static int check_rw(const struct peer_op *op)
{
	struct vp_xinfo xi;

	if (op->xinfo_len != sizeof(xi))
		return -RP_EREMOTEACCESS;
	memcpy(&xi, op->xinfo, sizeof(xi));
	if (xi.magic != VP_MAGIC)
		return -RP_EREMOTEACCESS;
	/* The device enforces the bounds; refusing here keeps the QP out of error. */
	if (op->remote_off > xi.len || op->len > xi.len - op->remote_off)
		return -RP_EREMOTEBOUNDS;
	return 0;
}

int vc_submit(struct xconn *xc, struct peer_op *op)
{
	struct vconn *c = (struct vconn *)xc;
	struct vp_opx *x = vpx(op);
	int r;

	if (c->state >= VC_FAILING) /* -EAGAIN: the peer layer holds it for the next link */
		return c->remote_err ? -EAGAIN : -RP_EPEERDOWN;
	if (!op->region || !op->region->xport || op->len > UINT32_MAX ||
	    op->off > op->region->len || op->len > op->region->len - op->off)
		return -EINVAL;
	memset(x, 0, sizeof(*x));
	x->slot = VPX_NO_SLOT;
	op->fate = PEER_OP_QUEUED;
	switch (op->kind) {
	case PEER_OP_WRITE:
	case PEER_OP_READ:
		r = check_rw(op);
		if (r < 0)
			return r;
		if (op->flags & PEER_OP_F_NOTIFY) {
			if (op->kind != PEER_OP_WRITE)
				return -EINVAL;
			x->reply = VPX_AWAITING;
			x->id = ++c->next_id;
		}
		q_push(&c->rwq, &c->rwq_tail, op);
		break;
	case PEER_OP_SEND:
		if (!memchr(op->endpoint, 0, sizeof(op->endpoint)))
			return -EINVAL;
		x->reply = VPX_AWAITING;
		x->id = ++c->next_id;
		q_push(&c->sendq, &c->sendq_tail, op);
		break;
	default:
		return -EINVAL;
	}
	vc_defer_kick(c);
	return 0;
}

/*
 * The far side withdrew @export_id: post nothing more for it, then @ack as a
 * fenced control message. Everything for the export that is already posted
 * sits ahead of the ack on this RC send queue, and the fence holds the ack
 * until every earlier READ has its response, so by the time the far side
 * sees the ack none of our WRs can still touch the export's MR.
 */
int vc_revoke(struct xconn *x, uint64_t export_id, const void *ack, size_t len)
{
	struct vconn *c = (struct vconn *)x;
	struct peer_op *op, *next, *keep = NULL, *keep_tail = NULL, *gone = NULL;
	int r;

	if (c->state >= VC_FAILING)
		return -ENOTCONN;
	if (len > PEER_CTRL_MAX)
		return -EMSGSIZE;
	for (op = c->rwq; op; op = next) {
		next = vpx(op)->next;
		if (op->export_id != export_id) {
			q_push(&keep, &keep_tail, op);
			continue;
		}
		/* Not wholly posted (so its notification was not either): the rest never goes. */
		vpx(op)->status = -RP_EUNEXPORTED;
		vpx(op)->flags |= VPX_ALL_POSTED;
		vpx(op)->reply = VPX_NO_REPLY;
		vpx(op)->next = gone;
		gone = op;
	}
	c->rwq = keep;
	c->rwq_tail = keep_tail;
	r = msg_queue(c, VP_CTRL, 0, ack, len);
	if (r == 0)
		c->mq_tail->fence = true;
	/* Reported now, or when the WRs already posted for them retire. */
	for (op = gone; op; op = next) {
		next = vpx(op)->next;
		vpx(op)->next = NULL;
		op_check(c, op);
	}
	return r;
}

/* ---- Completions ---- */

/* Errors the responder detected and refused: it executed nothing after them. */
static bool wc_remote_refusal(enum ibv_wc_status s)
{
	return s == IBV_WC_REM_ACCESS_ERR || s == IBV_WC_REM_INV_REQ_ERR || s == IBV_WC_REM_OP_ERR;
}

/*
 * Retire send slot @s; @mine: @wc is its own completion (else an earlier
 * slot, implied successful by @wc: the send queue completes in order).
 *
 * What an error completion means for the op whose WR it was (the codes
 * librdmaproxy(3) documents under "Peer link failures"). Any error puts the
 * QP in the error state, so on_send_wc() also fails the connection with it
 * as the reason (the log's "link lost" line, rdmaproxyctl peers' last
 * failure):
 *  - IBV_WC_WR_FLUSH_ERR: the QP failed before this WR completed. If the
 *    far side had refused an earlier request, it executed nothing after it:
 *    an op of which nothing completed is sent again on the next link
 *    (PEER_OP_FLUSHED). Otherwise the WR may have executed.
 *  - IBV_WC_REM_ACCESS_ERR on a WRITE or READ of which nothing completed:
 *    it was checked here against the export's bounds and access, so the
 *    far side's MR is gone (PEER_OP_REFUSED: -RP_EUNEXPORTED, or
 *    -RP_EPEERDOWN once the peer is back with a new incarnation).
 *  - Everything else, above all IBV_WC_RETRY_EXC_ERR (the far side stopped
 *    acknowledging: the path or the peer is dead; rxe never gives up with
 *    retry_count 7), IBV_WC_RNR_RETRY_EXC_ERR (not with rnr_retry 7), the
 *    far side's refusal of a request as invalid, a local protection or
 *    length error, a fatal or general error: the WR may or may not have
 *    executed, and part of the op may have. The op stays with the peer
 *    layer, which reports it -RP_EOUTCOME (posted) when the link has failed.
 * An error completion never reports an op OK (VPX_SOME_FAILED).
 */
static void retire(struct vconn *c, struct vp_sslot *s, const struct ibv_wc *wc, bool mine)
{
	struct peer_op *op = s->op;
	struct vp_opx *x;

	s->op = NULL;
	c->s_tail++;
	c->rw_posted -= s->bytes;
	s->bytes = 0;
	if (!op)
		return;
	x = vpx(op);
	x->wrs--;
	if (!mine || wc->status == IBV_WC_SUCCESS) {
		x->flags |= VPX_SOME_DONE;
	} else {
		x->flags |= VPX_SOME_FAILED;
		if (wc->status == IBV_WC_WR_FLUSH_ERR && c->remote_err &&
		    !(x->flags & VPX_SOME_DONE) && !x->status && !x->wrs &&
		    op->fate != PEER_OP_REFUSED)
			op->fate = PEER_OP_FLUSHED;
		else if (wc->status == IBV_WC_REM_ACCESS_ERR && op->kind != PEER_OP_SEND &&
			 !(x->flags & VPX_SOME_DONE) && !x->status)
			op->fate = PEER_OP_REFUSED;
	}
	op_check(c, op);
}

/* What the WR of @s was, for the log (an error completion's opcode is undefined). */
static const char *wr_what(const struct vp_sslot *s)
{
	if (!s->op)
		return "a message of the transport";
	switch (s->op->kind) {
	case PEER_OP_WRITE:
		return "RDMA WRITE";
	case PEER_OP_READ:
		return "RDMA READ";
	default:
		return "SEND of a client's message";
	}
}

static void on_send_wc(struct rdev_wr *w, const struct ibv_wc *wc)
{
	struct vp_sslot *s = (struct vp_sslot *)w;
	struct vconn *c = s->c;
	struct vp_sslot *t;

	/* A fact about what executed, even if the connection is already failing. */
	if (wc_remote_refusal(wc->status))
		c->remote_err = true;
	if (wc->status != IBV_WC_SUCCESS && c->state < VC_FAILING)
		vc_fail(c, -EIO, "%s on the QP (%s)", ibv_wc_status_str(wc->status), wr_what(s));
	/* In order: everything before @s completed successfully. */
	do {
		t = &c->ss[c->s_tail % c->sq];
		retire(c, t, wc, t == s);
	} while (t != s && c->s_head != c->s_tail);
	if (c->state >= VC_FAILING)
		vc_reap_soon(c);
	else
		vc_defer_kick(c);
}

static int post_recv(struct vconn *c, uint32_t idx)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)rbuf_of(c, idx),
		.length = (uint32_t)VP_RBUF,
		.lkey = c->rmr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = (uintptr_t)&c->rs[idx].w,
				  .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int r = vx_post_recv(c->qp, &wr, &bad);

	if (r < 0)
		return r;
	c->r_posted++;
	return 0;
}

static void rx_reply(struct vconn *c, uint8_t type, uint64_t id, int status)
{
	struct vp_status st = { .status = status };

	if (msg_queue(c, type, id, &st, sizeof(st)) < 0)
		vc_fail(c, -ENOBUFS, "too many replies queued");
}

static int on_reply(struct vconn *c, const struct vp_hdr *h, const uint8_t *body)
{
	struct peer_op *op = waiting_find(c, h->id);
	struct vp_status st;

	if (h->len != sizeof(st) || !op)
		return -EPROTO;
	memcpy(&st, body, sizeof(st));
	if (st.status > 0 || st.pad)
		return -EPROTO;
	if ((h->type == VP_SEND_R) != (op->kind == PEER_OP_SEND))
		return -EPROTO;
	waiting_remove(c, op);
	vpx(op)->reply = VPX_ANSWERED;
	if (vpx(op)->slot != VPX_NO_SLOT) {
		/* The far side read the descriptor before it answered: the slot is free. */
		c->nfree[c->nfree_n++] = vpx(op)->slot;
		vpx(op)->slot = VPX_NO_SLOT;
	}
	if (st.status && !vpx(op)->status)
		vpx(op)->status = st.status;
	if (!(vpx(op)->flags & VPX_ALL_POSTED)) {
		/* A refusal for a message whose chunks are not all posted yet. */
		q_remove(&c->sendq, &c->sendq_tail, op);
		vpx(op)->flags |= VPX_ALL_POSTED;
	}
	op_check(c, op);
	return 0;
}

/* A WRITE_WITH_IMM landed: its descriptor is in notify ring slot @slot. */
static int on_notify(struct vconn *c, uint32_t slot)
{
	struct vp_notify n;
	int st;

	if (slot >= VP_NRING)
		return -EPROTO;
	memcpy(&n, &c->nring[slot], sizeof(n));
	if (n.pad || !n.id || n.len > UINT32_MAX)
		return -EPROTO;
	if (n.export_inc != c->t->incarnation)
		st = -RP_ESTALE;
	else
		st = peer_x_notify(c->link, n.export_id, n.off, n.len, n.imm);
	rx_reply(c, VP_NOTIFY_R, n.id, st);
	return 0;
}

static int send_first(struct vconn *c, const struct vp_hdr *h, const struct vp_send *s)
{
	int r;

	if (c->rx_state == VC_RX_ACTIVE)
		return -EPROTO; /* the previous message did not end */
	if (!memchr(s->endpoint, 0, sizeof(s->endpoint)) || s->total > UINT32_MAX || s->off)
		return -EPROTO;
	memset(&c->rx, 0, sizeof(c->rx));
	c->rx.kind = PEER_RX_SEND;
	c->rx.len = s->total;
	memcpy(c->rx.endpoint, s->endpoint, sizeof(c->rx.endpoint));
	c->rx_id = h->id;
	c->rx_off = 0;
	c->rx_err = 0;
	r = peer_x_rx_begin(c->link, &c->rx);
	c->rx_state = r < 0 ? VC_RX_REFUSED : VC_RX_ACTIVE;
	if (r < 0) /* refuse now: the sender stops posting the rest */
		rx_reply(c, VP_SEND_R, h->id, r);
	return 0;
}

static int on_send(struct vconn *c, const struct vp_hdr *h, const uint8_t *body)
{
	struct vp_send s;
	uint32_t n;
	int r;

	if (h->len < sizeof(s))
		return -EPROTO;
	memcpy(&s, body, sizeof(s));
	n = h->len - (uint32_t)sizeof(s);
	if (h->flags & VP_F_FIRST) {
		r = send_first(c, h, &s);
		if (r < 0)
			return r;
	} else if (c->rx_state == VC_RX_NONE || h->id != c->rx_id) {
		return -EPROTO;
	}
	if (c->rx_state == VC_RX_ACTIVE) {
		/* The one copy on the receiving side: buffer -> the client's posted receive. */
		if (s.off != c->rx_off || n > c->rx.len - c->rx_off)
			return -EPROTO;
		if (!c->rx.may_fault)
			memcpy((uint8_t *)c->rx.addr + c->rx_off, body + sizeof(s), n);
		else if (!c->rx_err)
			c->rx_err = guarded_memmove((uint8_t *)c->rx.addr + c->rx_off,
						    body + sizeof(s), n);
		c->rx_off += n;
	}
	if (!(h->flags & VP_F_LAST))
		return 0;
	if (c->rx_state == VC_RX_ACTIVE) {
		if (c->rx_off != c->rx.len)
			return -EPROTO;
		c->rx_state = VC_RX_NONE;
		rx_reply(c, VP_SEND_R, h->id, peer_x_rx_end(c->link, &c->rx, c->rx_err));
	}
	c->rx_state = VC_RX_NONE;
	return 0;
}

static int on_message(struct vconn *c, const uint8_t *buf, uint32_t len)
{
	struct vp_hdr h;
	const uint8_t *body = buf + sizeof(h);

	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	/*
	 * Credits come back for receives we used: never more than the far side
	 * posts (its receive queue, from its hello). Our own send queue bounds
	 * nothing here: an honest peer with a deeper receive queue may return
	 * more than it at once.
	 */
	if (h.len != len - sizeof(h) || h.credits > c->peer_rq - c->credits)
		return -EPROTO;
	if (h.type != VP_SEND && h.flags)
		return -EPROTO;
	c->credits += h.credits;
	switch (h.type) {
	case VP_CTRL:
		if (h.len > PEER_CTRL_MAX || h.id)
			return -EPROTO;
		peer_x_ctrl(c->link, body, h.len);
		return 0;
	case VP_CREDIT:
		return h.len || h.id ? -EPROTO : 0;
	case VP_NOTIFY_R:
	case VP_SEND_R:
		return on_reply(c, &h, body);
	case VP_SEND:
		return on_send(c, &h, body);
	default:
		return -EPROTO;
	}
}

static void on_recv_wc(struct rdev_wr *w, const struct ibv_wc *wc)
{
	struct vp_rslot *s = (struct vp_rslot *)w;
	struct vconn *c = s->c;
	int r;

	/*
	 * A device error flushed a receive while the set-up job still posts
	 * (and counts) them: not counted here, so the teardown waits
	 * VP_FLUSH_MS, destroys the QP and drains the CQ (nothing is freed
	 * before that).
	 */
	if (c->setup) {
		vc_fail(c, -EIO, "%s while the QP was being set up", ibv_wc_status_str(wc->status));
		return;
	}
	c->r_posted--;
	if (c->state >= VC_FAILING) {
		vc_reap_soon(c);
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		vc_fail(c, -EIO, "%s",
			wc->status == IBV_WC_WR_FLUSH_ERR
				? "the QP went into the error state (the peer's access "
				  "was refused, or the QP failed)"
				: ibv_wc_status_str(wc->status));
		vc_reap_soon(c);
		return;
	}
	if (wc->opcode != IBV_WC_RECV && wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
		vc_fail(c, -EPROTO, "unexpected receive opcode %d", wc->opcode);
		return;
	}
	if (c->link)
		peer_x_alive(c->link);
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM)
		r = !c->link || !(wc->wc_flags & IBV_WC_WITH_IMM)
			    ? -EPROTO
			    : on_notify(c, ntohl(wc->imm_data));
	else
		r = on_message(c, rbuf_of(c, s->idx), wc->byte_len);
	if (r < 0) {
		vc_fail(c, r, "malformed message from the peer");
		return;
	}
	/* peer_x_ctrl() may have closed the connection. */
	if (c->state >= VC_FAILING)
		return;
	r = post_recv(c, s->idx);
	if (r < 0) {
		vc_fail(c, r, "ibv_post_recv: %s", strerror(-r));
		return;
	}
	c->owed++;
	vc_defer_kick(c);
}

/* ---- Setup and teardown ---- */

static int alloc_bufs(struct vconn *c, struct ibv_pd *pd)
{
	uint32_t i;
	int r;

	c->ss = calloc(c->sq, sizeof(*c->ss));
	c->rs = calloc(c->rq, sizeof(*c->rs));
	c->wrv = calloc(c->sq, sizeof(*c->wrv));
	c->sgev = calloc(2 * (size_t)c->sq, sizeof(*c->sgev));
	c->wr_may_fault = calloc(c->sq, sizeof(*c->wr_may_fault));
	c->sbuf = calloc(c->sq, VP_SBUF);
	c->rbuf = calloc(c->rq, VP_RBUF);
	if (!c->ss || !c->rs || !c->wrv || !c->sgev || !c->wr_may_fault || !c->sbuf || !c->rbuf)
		return -ENOMEM;
	/* Exactly the access each needs: local only, nothing remote. */
	r = vx_reg_mr(pd, c->sbuf, (size_t)c->sq * VP_SBUF, 0, &c->smr);
	if (r == 0)
		r = vx_reg_mr(pd, c->rbuf, (size_t)c->rq * VP_RBUF, IBV_ACCESS_LOCAL_WRITE,
			      &c->rmr);
	if (r < 0)
		return r;
	/* The notify ring: the only memory of ours the far side may write into. */
	c->nring = calloc(VP_NRING, sizeof(*c->nring));
	if (!c->nring)
		return -ENOMEM;
	r = vx_reg_mr(pd, c->nring, VP_NRING * sizeof(*c->nring),
		      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &c->nmr);
	if (r < 0)
		return r;
	for (i = 0; i < VP_NRING; i++)
		c->nfree[i] = (uint16_t)(VP_NRING - 1 - i);
	c->nfree_n = VP_NRING;
	for (i = 0; i < c->sq; i++) {
		c->ss[i].w.done = on_send_wc;
		c->ss[i].c = c;
		c->ss[i].idx = i;
	}
	for (i = 0; i < c->rq; i++) {
		c->rs[i].w.done = on_recv_wc;
		c->rs[i].c = c;
		c->rs[i].idx = i;
	}
	return 0;
}

static void on_qp_event(struct rdev_qp_ev *q, int type)
{
	struct vconn *c = (struct vconn *)((char *)q - offsetof(struct vconn, qev));

	switch (type) {
	case IBV_EVENT_COMM_EST:
		/* Data before the RTU: let rdma_cm finish establishing. */
		if (c->id)
			vx_rdma_notify(c->id, IBV_EVENT_COMM_EST);
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_PATH_MIG_ERR:
		/* The far side refused an access (QP_ACCESS_ERR) or the QP broke. */
		vc_fail(c, -EIO, "%s", ibv_event_type_str(type));
		break;
	default:
		break;
	}
}

/* The QP in INIT with every receive posted, before the CM exchange. */
int vc_io_new(struct vconn *c, struct ibv_qp_attr *init, int init_mask, char *why, size_t whylen)
{
	struct rdev *d = c->t->d;
	struct ibv_qp_init_attr ia = { 0 };
	uint32_t i;
	int r;

	c->qev.event = on_qp_event;
	r = alloc_bufs(c, rdev_pd(d));
	if (r < 0) {
		snprintf(why, whylen, "buffers for the connection: %s", strerror(-r));
		return r;
	}
	ia.qp_context = &c->qev;
	ia.send_cq = ia.recv_cq = rdev_cq(d);
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = c->sq;
	ia.cap.max_recv_wr = c->rq;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = 1;
	/* WRs whose data is at most this long are posted inline, as far as the device allows. */
	ia.cap.max_inline_data = c->t->inline_size;
	r = vx_create_qp_inline(rdev_pd(d), &ia, &c->qp);
	c->max_inline = ia.cap.max_inline_data;
	if (r < 0) {
		snprintf(why, whylen, "ibv_create_qp: %s", strerror(-r));
		return r;
	}
	r = vx_modify_qp(c->qp, init, init_mask);
	if (r < 0) {
		snprintf(why, whylen, "QP to INIT: %s", strerror(-r));
		return r;
	}
	for (i = 0; i < c->rq; i++) {
		r = post_recv(c, i);
		if (r < 0) {
			snprintf(why, whylen, "ibv_post_recv: %s", strerror(-r));
			return r;
		}
	}
	return 0;
}

/* Queued ops of which nothing completed: sent again on the next link. */
static void mark_replay(struct peer_op *q)
{
	for (; q; q = vpx(q)->next)
		if (!(vpx(q)->flags & VPX_SOME_DONE) && !vpx(q)->status &&
		    q->fate != PEER_OP_REFUSED)
			q->fate = PEER_OP_FLUSHED;
}

void vc_io_forget(struct vconn *c)
{
	struct vp_msg *m;

	if (c->rx_state == VC_RX_ACTIVE && c->link)
		peer_x_rx_end(c->link, &c->rx, -ECONNRESET);
	c->rx_state = VC_RX_NONE;
	/*
	 * Ops still here are the peer layer's to report (posted: -RP_EOUTCOME).
	 * After a refusal by the far side nothing behind it executed: ops that
	 * had nothing complete are sent again on the next link.
	 */
	if (c->remote_err) {
		mark_replay(c->rwq);
		mark_replay(c->sendq);
	}
	c->rwq = c->rwq_tail = NULL;
	c->sendq = c->sendq_tail = NULL;
	c->waiting = NULL;
	while ((m = c->mq)) {
		c->mq = m->next;
		free(m);
	}
	c->mq_tail = NULL;
	c->mq_len = 0;
}

void vc_io_free_verbs(struct vconn *c)
{
	if (c->qp)
		vx_destroy_qp(c->qp);
	c->qp = NULL;
	if (c->smr)
		vx_dereg_mr(c->smr);
	if (c->rmr)
		vx_dereg_mr(c->rmr);
	if (c->nmr)
		vx_dereg_mr(c->nmr);
	c->smr = c->rmr = c->nmr = NULL;
}

void vc_io_free(struct vconn *c)
{
	vc_io_free_verbs(c);
	free(c->nring);
	c->nring = NULL;
	free(c->ss);
	free(c->rs);
	free(c->wrv);
	free(c->sgev);
	free(c->wr_may_fault);
	free(c->sbuf);
	free(c->rbuf);
	c->ss = NULL;
	c->rs = NULL;
	c->wrv = NULL;
	c->sgev = NULL;
	c->wr_may_fault = NULL;
	c->sbuf = c->rbuf = NULL;
}
