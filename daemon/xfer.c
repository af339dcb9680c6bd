/* SPDX-License-Identifier: MIT */
/*
 * The data path of a session: its rings, and the operations taken from
 * them. Submissions are copied out of shared memory before anything looks at
 * them. Every accepted submission first reserves a completion slot, so the
 * completion ring can never overflow; notifications and receive completions
 * for other sessions reserve a slot there or fail the operation.
 *
 * On the tcp transport the local path copies between the mapped regions; on
 * verbs it is a real RDMA WRITE or READ through the loopback RC QP, and the
 * op keeps its session, regions and export alive until the device reports.
 */
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "admin.h"
#include "manager.h"
#include "memguard.h"
#include "peer.h"
#include "verbs_local.h"

/* Submissions handled per call before yielding the loop to other clients. */
#define XFER_BATCH 512

int rings_new(struct rings *r)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t size = (rp_ring_bytes(RP_RING_SQ_ENTRIES, RP_RING_CQ_ENTRIES) + page - 1) & ~(page - 1);
	int err;

	r->memfd = memfd_create("rdmaproxy-rings", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->memfd < 0)
		return -errno;
	/* Sealed so a client cannot shrink it under the daemon's mapping (SIGBUS). */
	if (ftruncate(r->memfd, (off_t)size) < 0 ||
	    fcntl(r->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto out_errno;
	r->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->memfd, 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		goto out_errno;
	}
	r->size = size;
	rp_ring_view_init(&r->v, r->base, size, RP_RING_SQ_ENTRIES, RP_RING_CQ_ENTRIES);
	r->v.info->magic = RP_RING_MAGIC;
	r->v.info->sq_entries = RP_RING_SQ_ENTRIES;
	r->v.info->cq_entries = RP_RING_CQ_ENTRIES;
	r->v.info->size = size;
	/* The daemon starts asleep: the first submission must ring. */
	rp_ring_arm(r->v.sq, RP_RING_NEED_WAKEUP);
	r->sq_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	r->cq_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->sq_efd < 0 || r->cq_efd < 0)
		goto out_errno;
	return 0;

out_errno:
	err = -errno;
	rings_free(r);
	return err;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void rings_free(struct rings *r)
{
	if (r->base)
		munmap(r->base, r->size);
	r->base = NULL;
	close_fd(&r->memfd);
	close_fd(&r->sq_efd);
	close_fd(&r->cq_efd);
}

int xfer_reserve(struct session *s)
{
	struct rings *r = &s->rings;
	int64_t used;

	if (s->dead || !r->base)
		return -ENOSPC;
	used = rp_ring_count(r->cq_tail, rp_ring_load(&r->v.cq->consumer), r->v.cq_entries);
	if (used < 0)
		return -EPROTO;
	if ((uint64_t)used + r->cq_reserved >= r->v.cq_entries)
		return -ENOSPC;
	r->cq_reserved++;
	return 0;
}

void xfer_complete(struct session *s, const struct rp_cqe *cqe)
{
	struct rings *r = &s->rings;
	uint64_t one = 1;

	if (r->cq_reserved)
		r->cq_reserved--;
	if (s->dead || !r->base)
		return;
	r->v.cqes[r->cq_tail & (r->v.cq_entries - 1)] = *cqe;
	r->cq_tail++;
	rp_ring_store(&r->v.cq->producer, r->cq_tail);
	if (rp_ring_take_wakeup(r->v.cq, RP_RING_NEED_WAKEUP) &&
	    write(r->cq_efd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is saturated, so the client is awake anyway. */
	}
}

static uint16_t sqe_op(uint16_t opcode)
{
	switch (opcode) {
	case RP_SQE_WRITE:
		return RP_OP_WRITE;
	case RP_SQE_READ:
		return RP_OP_READ;
	case RP_SQE_SEND:
		return RP_OP_SEND;
	default:
		return RP_OP_RECV;
	}
}

/* One op done: post its completion in the slot it reserved. */
static void op_report(struct session *s, struct uid_acct *a, const struct rp_sqe *q, int status,
		      uint32_t len)
{
	struct rp_cqe cqe = {
		.cookie = q->cookie,
		.len = status ? 0 : len,
		.status = status,
		.op = sqe_op(q->opcode),
	};

	a->inflight--;
	admin_count_op(s, cqe.op, status, cqe.len);
	xfer_complete(s, &cqe);
}

static void op_done(struct session *s, const struct rp_sqe *q, int status, uint32_t len)
{
	op_report(s, s->acct, q, status, len);
}

/* Deliver a notification into the slot reserved before the write. */
static void notify(struct export *e, const struct rp_sqe *q)
{
	struct rp_cqe cqe = {
		.offset = q->remote_offset,
		.len = (uint32_t)q->len,
		.imm = q->imm,
		.op = RP_OP_NOTIFY,
		.region = (uint16_t)e->region->id,
	};

	xfer_complete(e->region->s, &cqe);
}

/* A verbs op between two local regions, from submission to the device's report. */
struct vop {
	struct session *s;  /* initiator */
	struct session *t;  /* exporter to notify, or NULL */
	struct uid_acct *acct;
	struct region *lr;
	struct export *e;
	struct rp_sqe q;
};

/*
 * Finished vops are kept for reuse (the daemon is single-threaded): the data
 * path does not call malloc per operation once warm.
 */
#define VOP_SPARE_MAX 4096
static struct vop *vop_spare;
static unsigned vop_n_spare;

static struct vop *vop_alloc(void)
{
	struct vop *op = vop_spare;

	if (!op)
		return calloc(1, sizeof(*op));
	vop_spare = *(struct vop **)op;
	vop_n_spare--;
	memset(op, 0, sizeof(*op));
	return op;
}

static void vop_release(struct vop *op)
{
	if (vop_n_spare >= VOP_SPARE_MAX) {
		free(op);
		return;
	}
	*(struct vop **)op = vop_spare;
	vop_spare = op;
	vop_n_spare++;
}

void xfer_cache_free(void)
{
	struct vop *op;

	while ((op = vop_spare)) {
		vop_spare = *(struct vop **)op;
		free(op);
	}
	vop_n_spare = 0;
}

static int vlocal_status(int st)
{
	switch (st) {
	case 0:
		return 0;
	case -EACCES:
		return -RP_EREMOTEACCESS;
	case -ERANGE:
		return -RP_EREMOTEBOUNDS;
	case -ECANCELED:
		return -ECANCELED; /* never reached the device (daemon stopping) */
	default:
		return -RP_EOUTCOME;
	}
}

void xfer_verbs_done(void *user, int status)
{
	struct vop *op = user;
	struct clients *c = op->s->owner;
	int st = vlocal_status(status);

	if (op->t) {
		struct rp_cqe n = {
			.offset = op->q.remote_offset,
			.len = (uint32_t)op->q.len,
			.imm = op->q.imm,
			.op = RP_OP_NOTIFY,
			.region = (uint16_t)op->e->xregion->id,
		};

		/* The slot was reserved before posting: deliver it or give it back. */
		if (st == 0)
			xfer_complete(op->t, &n);
		else if (op->t->rings.cq_reserved)
			op->t->rings.cq_reserved--;
		session_put(op->t);
	}
	op_report(op->s, op->acct, &op->q, st, (uint32_t)op->q.len);
	region_unref(op->lr);
	op->e->ops--;
	export_release_mr(op->e);
	export_unref(op->e);
	acct_put(c, op->acct);
	session_put(op->s);
	vop_release(op);
}

/* 1: posted, reported later through xfer_verbs_done(); <0: failed now. */
static int post_verbs(struct session *s, struct region *lr, struct export *e,
		      const struct rp_sqe *q)
{
	struct vlocal *v = s->owner->m->vlocal;
	struct session *t = NULL;
	struct vop *op;
	int r;

	if (q->opcode == RP_SQE_WRITE && (q->flags & RP_NOTIFY)) {
		t = e->region->s;
		if (!t || xfer_reserve(t) < 0)
			return -RP_ENOTIFYSPACE;
	}
	op = vop_alloc();
	if (!op) {
		if (t)
			t->rings.cq_reserved--;
		return -ENOMEM;
	}
	op->s = s;
	op->t = t;
	op->acct = s->acct;
	op->lr = region_ref(lr);
	op->e = e;
	op->q = *q;
	if (q->opcode == RP_SQE_WRITE)
		r = vlocal_write(v, lr->xport, q->offset, e->xport, q->remote_offset, q->len, op);
	else
		r = vlocal_read(v, lr->xport, q->offset, e->xport, q->remote_offset, q->len, op);
	if (r < 0) {
		if (t)
			t->rings.cq_reserved--;
		region_unref(lr);
		vop_release(op);
		return r;
	}
	e->refs++;
	e->ops++;
	s->acct->refs++;
	s->ops_pending++;
	if (t)
		t->ops_pending++;
	return 1;
}

static int do_rw(struct session *s, const struct rp_sqe *q)
{
	struct region *lr = idtab_get(&s->regions, q->region);
	struct export *e = idtab_get(&s->remotes, q->target);
	bool wr = q->opcode == RP_SQE_WRITE;
	uint32_t need = wr ? RP_ACCESS_REMOTE_WRITE : RP_ACCESS_REMOTE_READ;
	char *l, *rm;
	int err;

	if ((q->flags & ~(wr ? RP_NOTIFY : 0)) || q->len > UINT32_MAX)
		return -EINVAL;
	if (!lr || !e)
		return -RP_EBADHANDLE;
	if (e->dead)
		return -RP_EUNEXPORTED;
	if (!region_range_ok(lr, q->offset, q->len))
		return -RP_EBOUNDS;
	if (e->remote) {
		/* Another daemon's export: it checks bounds and access itself. */
		int r = peers_submit_rw(s, q, e);

		return r < 0 ? r : 1;
	}
	if (!region_range_ok(e->region, q->remote_offset, q->len))
		return -RP_EREMOTEBOUNDS;
	if (!(e->access & need))
		return -RP_EREMOTEACCESS;
	if (s->owner->m->vlocal)
		return post_verbs(s, lr, e, q);
	l = (char *)lr->addr + q->offset;
	rm = (char *)e->region->addr + q->remote_offset;
	/* The notification's slot first: a failure report must mean nothing landed. */
	if (wr && (q->flags & RP_NOTIFY) && (!e->region->s || xfer_reserve(e->region->s) < 0))
		return -RP_ENOTIFYSPACE;
	/* memmove: a client may target its own exported region. */
	err = wr ? guarded_memmove(rm, l, q->len) : guarded_memmove(l, rm, q->len);
	if (wr && (q->flags & RP_NOTIFY)) {
		if (err == 0)
			notify(e, q);
		else
			e->region->s->rings.cq_reserved--;
	}
	return err;
}

static int do_send(struct session *s, const struct rp_sqe *q)
{
	struct region *lr = idtab_get(&s->regions, q->region);
	const char *dest = idtab_get(&s->dests, q->target);
	struct endpoint *ep;
	struct recv_buf *rb;
	struct session *t;

	if (q->flags || q->len > UINT32_MAX)
		return -EINVAL;
	if (!lr || !dest)
		return -RP_EBADHANDLE;
	if (!region_range_ok(lr, q->offset, q->len))
		return -RP_EBOUNDS;
	if (strchr(dest, '/')) {
		/* "PEER/ENDPOINT" (see handle_dest_open): names never contain '/'. */
		char peer[RP_NAME_MAX];
		const char *slash = strchr(dest, '/');
		int r;

		snprintf(peer, sizeof(peer), "%.*s", (int)(slash - dest), dest);
		r = peers_submit_send(s, q, peer, slash + 1);
		return r < 0 ? r : 1;
	}
	ep = endpoint_find(s->owner, dest);
	if (!ep)
		return -RP_ENOENDPOINT;
	rb = ep->head;
	if (!rb)
		return -RP_ENORECV;
	if (q->len > rb->len)
		return -RP_ERECVSMALL;
	if (guarded_memmove((char *)rb->region->addr + rb->off, (char *)lr->addr + q->offset,
			    q->len) < 0)
		return -EFAULT; /* the receive stays posted */
	ep->head = rb->next;
	t = ep->s;
	{
		struct rp_cqe cqe = {
			.cookie = rb->cookie,
			.offset = rb->off,
			.len = (uint32_t)q->len,
			.op = RP_OP_RECV,
			.region = (uint16_t)rb->region->id,
		};

		t->acct->inflight--;
		xfer_complete(t, &cqe); /* uses the slot reserved at post time */
	}
	region_unref(rb->region);
	free(rb);
	return 0;
}

/* 1: posted (completes later); <0: failed now. */
static int do_post_recv(struct session *s, const struct rp_sqe *q)
{
	struct region *lr = idtab_get(&s->regions, q->region);
	struct endpoint *ep = idtab_get(&s->endpoints, q->target);
	struct recv_buf *rb;

	if (q->flags || q->remote_offset || q->imm || q->len > UINT32_MAX)
		return -EINVAL;
	if (!lr || !ep)
		return -RP_EBADHANDLE;
	if (!region_range_ok(lr, q->offset, q->len))
		return -RP_EBOUNDS;
	rb = calloc(1, sizeof(*rb));
	if (!rb)
		return -ENOMEM;
	rb->region = region_ref(lr);
	rb->off = q->offset;
	rb->len = q->len;
	rb->cookie = q->cookie;
	if (ep->tail && ep->head)
		ep->tail->next = rb;
	else
		ep->head = rb;
	ep->tail = rb;
	return 1;
}

static int execute(struct session *s, const struct rp_sqe *q)
{
	const struct config *cfg = s->owner->m->cfg;
	int r;

	if (s->acct->inflight >= cfg->max_inflight) {
		s->acct->inflight++;
		op_done(s, q, -RP_ELIMIT_INFLIGHT, 0);
		return 0;
	}
	s->acct->inflight++;
	switch (q->opcode) {
	case RP_SQE_WRITE:
	case RP_SQE_READ:
		r = do_rw(s, q);
		if (r == 1)
			return 0;
		break;
	case RP_SQE_SEND:
		r = do_send(s, q);
		if (r == 1)
			return 0;
		break;
	default:
		r = do_post_recv(s, q);
		if (r == 1)
			return 0;
		break;
	}
	op_done(s, q, r, (uint32_t)q->len);
	return 0;
}

static bool sqe_sane(const struct rp_sqe *q)
{
	static const uint8_t zero[sizeof(q->pad)];

	return q->opcode >= RP_SQE_WRITE && q->opcode <= RP_SQE_POST_RECV &&
	       !memcmp(q->pad, zero, sizeof(zero));
}

/* Take what is in the ring now. 1: stopped early (batch or completion space). */
static int drain(struct session *s, unsigned *budget)
{
	struct rings *r = &s->rings;
	uint32_t prod = rp_ring_load(&r->v.sq->producer);
	struct rp_sqe q;
	int err = 0;

	if (rp_ring_count(prod, r->sq_head, r->v.sq_entries) < 0)
		return -EPROTO;
	while (r->sq_head != prod && !s->dead) {
		if (!*budget)
			break;
		err = xfer_reserve(s);
		if (err < 0)
			break;
		memcpy(&q, &r->v.sqes[r->sq_head & (r->v.sq_entries - 1)], sizeof(q));
		/* From here on only the private copy is used, whatever the client writes. */
		__asm__ __volatile__("" ::: "memory");
		r->sq_head++;
		/*
		 * Free the slot before the completion can be seen: a client that
		 * saw every completion must never find its ring still full.
		 */
		rp_ring_store(&r->v.sq->consumer, r->sq_head);
		(*budget)--;
		if (!sqe_sane(&q)) {
			err = -EPROTO;
			break;
		}
		execute(s, &q);
	}
	if (err == -ENOSPC) {
		rp_ring_arm(r->v.sq, RP_RING_STALLED);
		/* The client may have reaped meanwhile: look again before sleeping. */
		return xfer_reserve(s) == 0 ? (r->cq_reserved--, 2) : 1;
	}
	if (err)
		return err;
	return r->sq_head != prod || !*budget ? 2 : 0;
}

bool xfer_pending(struct session *s)
{
	struct rings *r = &s->rings;

	return !s->dead && r->base && rp_ring_load(&r->v.sq->producer) != r->sq_head;
}

bool xfer_arm(struct session *s)
{
	struct rings *r = &s->rings;

	if (s->dead || !r->base)
		return true;
	rp_ring_arm(r->v.sq, RP_RING_NEED_WAKEUP);
	if (rp_ring_load(&r->v.sq->producer) == r->sq_head)
		return true;
	rp_ring_take_wakeup(r->v.sq, RP_RING_NEED_WAKEUP);
	return false;
}

int xfer_run(struct session *s, bool doorbell, bool spin)
{
	struct rings *r = &s->rings;
	unsigned budget = XFER_BATCH;
	uint64_t v;
	int rc;

	if (s->dead || !r->base)
		return 0;
	if (doorbell && read(r->sq_efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: woken by the loop, not the client. */
	}
	for (;;) {
		rc = drain(s, &budget);
		if (rc < 0)
			return rc;
		if (rc == 1)
			return 0; /* stalled: the client's next reap rings us */
		if (rc == 2 && !budget) {
			/* Yield to other clients; come back on the next loop turn. */
			v = 1;
			if (write(r->sq_efd, &v, sizeof(v)) < 0) {
				/* Saturated counter: already readable. */
			}
			return 0;
		}
		if (rc == 2)
			continue;
		/* Empty: the caller polls a while longer, or the client must ring. */
		if (spin)
			return 1;
		if (xfer_arm(s))
			return 0;
	}
}
