/* SPDX-License-Identifier: MIT */
/*
 * The data path of a session: draining its submission ring into
 * operations. Submissions are copied out of shared memory before anything
 * looks at them; each reserves its completion slot first and becomes an
 * operation (op.c) that ends exactly once.
 *
 * Between two regions of this host the transfer is a copy on the tcp
 * transport and a real RDMA WRITE or READ through the loopback RC QP on
 * verbs; to another daemon's export or endpoint it goes to the peer layer.
 */
#include "core/core.h"

#include <errno.h>
#include <string.h>

#include "base/memguard.h"
#include "rdma/verbs_local.h"

/* Submissions handled per call before yielding the loop to other clients. */
#define XFER_BATCH 512
/* ... and at least this many while many sessions have work (xfer_run()), */
#define XFER_BATCH_MIN 32
/* ... or only that many once a pass has taken this many (a burst after idle). */
#define XFER_PASS_ENTRIES 1024
/*
 * Local copies (the tcp transport, and SENDs to a local endpoint): at most
 * this much of one op per call, and no further submission taken once a
 * call has copied this much. The copy runs on the loop thread, and an op
 * may move up to 4 GiB: in one go, a client's batch of them held every
 * other client's operations (and the daemon's control work) for seconds. A
 * bigger op is copied a piece per call while its session's later
 * submissions wait (their order holds), and the other clients' turns come
 * in between. Beside other sessions with work (the engine's last pass),
 * the pieces are smaller. Host, a client writing 8 B synchronously beside
 * one writing 64 MiB (32 in flight): 25-40 us a write (median) with 256
 * KiB pieces, 6.5-8 us with 64 KiB beside it; the streamer kept 7-9 GB/s.
 */
#define XFER_COPY_PIECE (256u << 10)
#define XFER_COPY_SHARED (64u << 10)

/* A local copy ends: its receive (SEND) first, then the op. */
static void copy_end(struct op *op, int status)
{
	struct op *rop = op->rop;

	if (op->s->copying == op)
		op->s->copying = NULL;
	if (rop) {
		op->rop = NULL;
		/* Not arrived whole (a fault, its sender gone): the receive stays posted. */
		status = recv_finish(op->s->core, rop, op->q.len, status);
	}
	op_end(op, status);
}

/*
 * A session's copying per turn: beside other sessions with work, less (each
 * of their ops waits for one turn's worth).
 */
static uint64_t turn_size(const struct core *c)
{
	return c->pass_sessions > 1 ? XFER_COPY_SHARED : XFER_COPY_PIECE;
}

/* The next piece of a local copy: true once it is all done (or failed: ended). */
static bool copy_piece(struct op *op)
{
	const struct rp_sqe *q = &op->q;
	char *l = (char *)op->region->addr + q->offset, *dst, *src;
	uint64_t piece = turn_size(op->s->core);
	uint64_t n = q->len - op->copied < piece ? q->len - op->copied : piece;
	uint64_t off;
	int r;

	/*
	 * Its target withdrawn meanwhile (unexported, its region freed, its
	 * owner gone; a SEND's receive cancelled): the rest would go where
	 * nobody reads, and an UNEXPORT waits for it. It fails as an op
	 * submitted now would.
	 */
	if (op->copied && (q->opcode == RP_SQE_SEND ? recv_gone(op->rop) : op->e->dead)) {
		copy_end(op, q->opcode == RP_SQE_SEND ? -RP_ENORECV : -RP_EUNEXPORTED);
		return true;
	}
	if (q->opcode == RP_SQE_SEND) {
		dst = recv_addr(op->rop);
		src = l;
	} else {
		/* The op's own reference: an unexport or a free does not unmap it meanwhile. */
		char *rm = (char *)op->tregion->addr + q->remote_offset;

		dst = q->opcode == RP_SQE_WRITE ? rm : l;
		src = q->opcode == RP_SQE_WRITE ? l : rm;
	}
	/* Overlapping, the destination above: from the end, or a piece reads what one wrote. */
	off = dst > src && dst < src + q->len ? q->len - op->copied - n : op->copied;
	/* memmove: a client may target its own exported region, or send to itself. */
	r = guarded_memmove(dst + off, src + off, n);
	op->copied += n;
	op->s->turn_bytes += n;
	op->s->core->pass_bytes += n; /* the engine reads its clock after a pass that copied much */
	if (r < 0 || op->copied == q->len) {
		copy_end(op, r);
		return true;
	}
	return false;
}

/* Copy now, or the first piece now and the rest in later runs: OP_PENDING either way. */
static int copy_start(struct op *op)
{
	if (!copy_piece(op))
		op->s->copying = op; /* xfer_run() goes on with it */
	return OP_PENDING;
}

/* Between two regions of this host, without the device: a copy. */
static int local_copy(struct op *op)
{
	const struct rp_sqe *q = &op->q;
	int r;

	if (q->opcode == RP_SQE_WRITE && (q->flags & RP_NOTIFY)) {
		r = notify_reserve(op);
		if (r < 0)
			return r;
	}
	op->tregion = region_ref(op->e->region);
	return copy_start(op);
}

/* Through a loopback QP: OP_PENDING (reported by op_verbs_done()) or <0. */
static int local_verbs(struct op *op)
{
	struct vlocal *v = op->s->core->vlocal;
	const struct rp_sqe *q = &op->q;
	struct export *e = op->e;
	int r;

	if (q->opcode == RP_SQE_WRITE && (q->flags & RP_NOTIFY)) {
		r = notify_reserve(op);
		if (r < 0)
			return r;
	}
	if (q->opcode == RP_SQE_WRITE)
		r = vlocal_write(v, op->region->xport, q->offset, e->xport, q->remote_offset,
				 q->len, op->s, op);
	else
		r = vlocal_read(v, op->region->xport, q->offset, e->xport, q->remote_offset, q->len,
				op->s, op);
	return r < 0 ? r : OP_PENDING;
}

static int do_rw(struct op *op)
{
	struct session *s = op->s;
	const struct rp_sqe *q = &op->q;
	struct region *lr = idtab_get(&s->regions, q->region);
	struct export *e = idtab_get(&s->remotes, q->target);
	bool wr = q->opcode == RP_SQE_WRITE;
	uint32_t need = wr ? RP_ACCESS_REMOTE_WRITE : RP_ACCESS_REMOTE_READ;

	if ((q->flags & ~(wr ? RP_NOTIFY : 0)) || q->len > UINT32_MAX)
		return -EINVAL;
	if (!lr || !e)
		return -RP_EBADHANDLE;
	if (e->dead)
		return -RP_EUNEXPORTED;
	if (!region_range_ok(lr, q->offset, q->len))
		return -RP_EBOUNDS;
	op->region = region_ref(lr);
	op->e = export_ref(e);
	export_pin(e);
	if (e->remote) {
		/* Another daemon's export: it checks bounds and access itself. */
		int r = s->core->peer_ops ? s->core->peer_ops->submit(s->core->peers, op)
					  : -RP_EPEERUNKNOWN;

		return r < 0 ? r : OP_PENDING;
	}
	if (!region_range_ok(e->region, q->remote_offset, q->len))
		return -RP_EREMOTEBOUNDS;
	if (!(e->access & need))
		return -RP_EREMOTEACCESS;
	return s->core->vlocal ? local_verbs(op) : local_copy(op);
}

static int do_send(struct op *op)
{
	struct session *s = op->s;
	const struct rp_sqe *q = &op->q;
	struct region *lr = idtab_get(&s->regions, q->region);
	struct dest *d = idtab_get(&s->dests, q->target);
	struct op *rop;
	int r;

	if (q->flags || q->len > UINT32_MAX)
		return -EINVAL;
	if (!lr || !d)
		return -RP_EBADHANDLE;
	if (!region_range_ok(lr, q->offset, q->len))
		return -RP_EBOUNDS;
	op->region = region_ref(lr);
	op->dest = d;
	if (d->remote) {
		r = s->core->peer_ops ? s->core->peer_ops->submit(s->core->peers, op)
				      : -RP_EPEERUNKNOWN;
		return r < 0 ? r : OP_PENDING;
	}
	r = endpoint_take(s->core, d->endpoint, q->len, s, NULL, &rop);
	if (r < 0)
		return r;
	/* Its bytes move like a local WRITE's, in pieces when big (copy_end()). */
	op->rop = rop;
	return copy_start(op);
}

static int do_post_recv(struct op *op)
{
	const struct rp_sqe *q = &op->q;
	struct region *lr = idtab_get(&op->s->regions, q->region);

	if (q->flags || q->remote_offset || q->imm || q->len > UINT32_MAX)
		return -EINVAL;
	if (!lr || !idtab_get(&op->s->endpoints, q->target))
		return -RP_EBADHANDLE;
	if (!region_range_ok(lr, q->offset, q->len))
		return -RP_EBOUNDS;
	op->region = region_ref(lr);
	return endpoint_post(op);
}

static int start(struct op *op)
{
	switch (op->q.opcode) {
	case RP_SQE_WRITE:
	case RP_SQE_READ:
		return do_rw(op);
	case RP_SQE_SEND:
		return do_send(op);
	default:
		return do_post_recv(op);
	}
}

/* The session goes: a copy it left half done ends (nobody sees its completion). */
void xfer_abandon(struct session *s)
{
	if (s->copying)
		copy_end(s->copying, -ECANCELED);
}

/* @q has its completion slot: make it an operation, which ends now or later. */
static void execute(struct session *s, const struct rp_sqe *q)
{
	struct op *op;
	int r;

	if (s->acct->inflight >= s->core->cfg->max_inflight) {
		op_fail(s, q, -RP_ELIMIT_INFLIGHT);
		return;
	}
	op = op_new(s, q);
	if (!op) {
		op_fail(s, q, -ENOMEM);
		return;
	}
	r = start(op);
	if (r != OP_PENDING)
		op_end(op, r);
}

/* @seq: the session's entries carry their index (not checked: it was polled). */
static bool sqe_sane(const struct rp_sqe *q, bool seq)
{
	static const uint8_t zero[sizeof(q->pad)];

	return q->opcode >= RP_SQE_WRITE && q->opcode <= RP_SQE_POST_RECV && (seq || !q->seq) &&
	       !memcmp(q->pad, zero, sizeof(zero));
}

/*
 * Is an entry at the consumer index? Protocol 3: its seq says so (one cache
 * line); before: the producer index, checked against the ring's size
 * (-EPROTO when the pair cannot be valid).
 */
static int sq_ready(const struct rings *r)
{
	if (r->seq)
		return rp_sqe_seq_load(&r->v.sqes[r->sq_head & (r->v.sq_entries - 1)]) ==
		       r->sq_head + 1;
	switch (rp_ring_count(rp_ring_load(&r->v.sq->producer), r->sq_head, r->v.sq_entries)) {
	case -1:
		return -EPROTO;
	case 0:
		return 0;
	default:
		return 1;
	}
}

enum drain_result {
	DRAIN_EMPTY,   /* took everything there was */
	DRAIN_STALLED, /* no completion space */
	DRAIN_MORE,    /* stopped early: more may be waiting */
};

/* Take what is in the ring now: enum drain_result or -EPROTO. */
static int drain(struct session *s, unsigned *budget)
{
	struct rings *r = &s->rings;
	uint32_t prod = 0;
	struct rp_sqe q;
	bool more = false;
	int err = 0;

	if (!r->seq) {
		/* Before protocol 3: up to the producer index as it is now. */
		prod = rp_ring_load(&r->v.sq->producer);
		if (rp_ring_count(prod, r->sq_head, r->v.sq_entries) < 0)
			return -EPROTO;
	}
	while (!s->dead && *budget) {
		more = r->seq ? sq_ready(r) > 0 : r->sq_head != prod;
		if (!more)
			break;
		/* A copy to finish first, or a turn's worth copied: the others' turn. */
		if (s->copying || s->turn_bytes >= turn_size(s->core)) {
			*budget = 0;
			break;
		}
		err = xfer_reserve(s);
		if (err < 0)
			break;
		memcpy(&q, &r->v.sqes[r->sq_head & (r->v.sq_entries - 1)], sizeof(q));
		/* From here on only the private copy is used, whatever the client writes. */
		__asm__ __volatile__("" ::: "memory");
		r->sq_head++;
		s->core->pass_entries++;
		/*
		 * Free the slot before the completion can be seen: a client that
		 * saw every completion must never find its ring still full.
		 */
		rp_ring_store(&r->v.sq->consumer, r->sq_head);
		(*budget)--;
		if (!sqe_sane(&q, r->seq)) {
			err = -EPROTO;
			break;
		}
		execute(s, &q);
	}
	if (err == -ENOSPC) {
		rp_ring_arm(r->v.sq, RP_RING_STALLED);
		/* The client may have reaped meanwhile: look again before sleeping. */
		if (xfer_reserve(s) < 0)
			return DRAIN_STALLED;
		xfer_release(s);
		return DRAIN_MORE;
	}
	if (err)
		return err;
	return more || !*budget ? DRAIN_MORE : DRAIN_EMPTY;
}

bool xfer_pending(struct session *s)
{
	struct rings *r = &s->rings;

	if (s->dead || !r->base)
		return false;
	if (s->copying || sq_ready(r))
		return true; /* or -EPROTO: drain() says so */
	/*
	 * Empty: fetch the slot the next entry goes to, so that when the
	 * producer index moves, the entry is (likely) here already instead of
	 * costing a second trip between CPUs after the index (protocol 3 polls
	 * that slot anyway).
	 */
	__builtin_prefetch(&r->v.sqes[r->sq_head & (r->v.sq_entries - 1)]);
	return false;
}

bool xfer_arm(struct session *s)
{
	struct rings *r = &s->rings;

	if (s->dead || !r->base)
		return true;
	if (s->copying)
		return false;
	rp_ring_arm(r->v.sq, RP_RING_NEED_WAKEUP);
	if (!sq_ready(r))
		return true;
	rp_ring_take_wakeup(r->v.sq, RP_RING_NEED_WAKEUP);
	return false;
}

int xfer_run(struct session *s)
{
	unsigned hot = s->core->pass_sessions, budget = XFER_BATCH;
	int rc;

	/*
	 * Beside other busy sessions (in the last pass), or once this pass has
	 * taken XFER_PASS_ENTRIES (a burst after idle), fewer submissions per
	 * turn: a pass takes a turn of every busy session, and many full turns
	 * would make one pass run for milliseconds (with the cheapest entries,
	 * ones that fail at once).
	 */
	if (hot > XFER_BATCH / XFER_BATCH_MIN || s->core->pass_entries >= XFER_PASS_ENTRIES)
		budget = XFER_BATCH_MIN;
	else if (hot > 1)
		budget = XFER_BATCH / hot;

	if (s->dead || !s->rings.base)
		return XFER_EMPTY;
	s->turn_bytes = 0;
	if (s->copying && !copy_piece(s->copying))
		return XFER_YIELD;
	for (;;) {
		rc = drain(s, &budget);
		if (rc < 0)
			return rc;
		if (s->copying)
			return XFER_YIELD; /* a piece per run: the rest next time */
		if (rc == DRAIN_STALLED)
			return XFER_STALLED; /* the client's next reap rings us */
		if (rc == DRAIN_EMPTY)
			return XFER_EMPTY;
		if (!budget)
			return XFER_YIELD; /* the other clients' turn; more next pass */
	}
}
