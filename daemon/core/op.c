/* SPDX-License-Identifier: MIT */
/*
 * Operations: one per accepted submission, from the moment its completion
 * slot is reserved to its one completion. Whatever carries it (a copy here,
 * a verbs loopback QP, a peer transport, a posted receive waiting for a
 * message), it ends in op_end(), which is the only place that writes an
 * operation's completion, gives back its references and counts it.
 */
#include "core/core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * Finished ops are kept for reuse (the daemon is single-threaded): the data
 * path does not call malloc per operation once warm.
 */
#define OP_SPARE_MAX 4096
static struct op *op_spare;
static unsigned op_n_spare;

uint16_t op_kind(uint16_t sqe_opcode)
{
	switch (sqe_opcode) {
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

static void op_init(struct op *op, struct session *s, const struct rp_sqe *q)
{
	memset(op, 0, sizeof(*op));
	op->s = s;
	op->acct = s->acct;
	op->q = *q;
	session_hold(s);
	op->acct->refs++;
	op->acct->inflight++;
}

struct op *op_new(struct session *s, const struct rp_sqe *q)
{
	struct op *op = op_spare;

	if (op) {
		op_spare = op->next;
		op_n_spare--;
	} else {
		op = malloc(sizeof(*op));
		if (!op)
			return NULL;
	}
	op_init(op, s, q);
	return op;
}

void op_fail(struct session *s, const struct rp_sqe *q, int status)
{
	struct op op;

	op_init(&op, s, q);
	op.on_stack = true;
	op_end(&op, status);
}

static void op_release(struct op *op)
{
	if (op->on_stack)
		return;
	if (op_n_spare >= OP_SPARE_MAX) {
		free(op);
		return;
	}
	op->next = op_spare;
	op_spare = op;
	op_n_spare++;
}

void op_cache_free(void)
{
	struct op *op;

	while ((op = op_spare)) {
		op_spare = op->next;
		free(op);
	}
	op_n_spare = 0;
}

static void op_cqe(const struct op *op, int status, struct rp_cqe *cqe)
{
	memset(cqe, 0, sizeof(*cqe));
	cqe->cookie = op->q.cookie;
	cqe->status = status;
	cqe->op = op_kind(op->q.opcode);
	if (cqe->op != RP_OP_RECV) {
		cqe->len = status ? 0 : (uint32_t)op->q.len;
		return;
	}
	if (op->region)
		cqe->region = (uint16_t)op->region->id;
	if (status == 0) {
		cqe->offset = op->q.offset;
		cqe->len = op->recv_len;
	}
}

void op_end(struct op *op, int status)
{
	struct session *s = op->s;
	/* A receive whose region its client freed meanwhile (its id may name another now). */
	bool gone = op->q.opcode == RP_SQE_POST_RECV && op->region && op->region->s != s;
	struct rp_cqe cqe;

	if (gone && !status)
		status = -ECANCELED;
	op_cqe(op, status, &cqe);
	if (gone)
		cqe.region = 0;
	/* The notification first: the writer must not see OK before it could be seen. */
	if (op->t)
		notify_finish(op->t, op->t_region, op->q.remote_offset, (uint32_t)op->q.len,
			      op->q.imm, status);
	op->acct->inflight--;
	stats_count_op(&s->stats, cqe.op, status, cqe.len);
	xfer_complete(s, &cqe); /* into the slot reserved at submission */
	region_unref(op->region);
	region_unref(op->tregion);
	if (op->e) {
		export_unpin(op->e);
		export_unref(op->e);
	}
	acct_put(s->core, op->acct);
	session_put(s);
	op_release(op);
}

/* The loopback QP's statuses (verbs_local.h) as client codes. */
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

void op_verbs_done(void *user, int status)
{
	op_end(user, vlocal_status(status));
}

int notify_hold(struct export *e, struct session **ret_t, struct region **ret_region)
{
	struct session *t = e->region ? e->region->s : NULL;

	/* Reserved before the write: a failure report must mean nothing landed. */
	if (!t || xfer_reserve(t) < 0)
		return -RP_ENOTIFYSPACE;
	session_hold(t);
	*ret_t = t;
	*ret_region = region_ref(e->region);
	return 0;
}

int notify_reserve(struct op *op)
{
	return notify_hold(op->e, &op->t, &op->t_region);
}

void notify_finish(struct session *t, struct region *region, uint64_t off, uint32_t len,
		   uint32_t imm, int status)
{
	struct rp_cqe cqe = {
		.offset = off,
		.len = len,
		.imm = imm,
		.op = RP_OP_NOTIFY,
		.region = (uint16_t)region->id,
	};

	if (status == 0 && region->s == t)
		xfer_complete(t, &cqe);
	else
		xfer_give_back(t);
	region_unref(region);
	session_put(t);
}
