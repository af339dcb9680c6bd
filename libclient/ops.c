/* SPDX-License-Identifier: MIT */
/*
 * Accepted operations that have no completion yet, one slot each. The slot
 * stands in for the application's cookie on the wire, so a completion finds
 * its operation exactly (cookies need not be unique), and when the daemon
 * goes away every operation still in a slot gets its completion from here:
 * exactly one per accepted operation, never a success.
 */
#include "client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define OPS_MIN 256u
#define OPS_MAX (1u << 30) /* slot index + 1 must fit the low 32 bits of the wire cookie */

static uint16_t sqe_rp_op(uint16_t opcode)
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

/* Double the table; the new slots go on the free list. */
static int ops_grow(struct rp_client *c)
{
	uint32_t n = c->n_ops ? c->n_ops * 2 : OPS_MIN, i;
	struct op_slot *v;

	if (n > OPS_MAX)
		return -ENOMEM;
	v = realloc(c->ops, sizeof(*v) * n);
	if (!v)
		return -ENOMEM;
	memset(v + c->n_ops, 0, sizeof(*v) * (n - c->n_ops));
	for (i = c->n_ops; i < n; i++)
		v[i].next = i + 1 < n ? i + 2 : c->free_op;
	c->free_op = c->n_ops + 1;
	c->ops = v;
	c->n_ops = n;
	return 0;
}

int ops_track(struct rp_client *c, const struct rp_sqe *q, uint64_t *ret_wire)
{
	struct op_slot *s;
	uint32_t idx;
	int r;

	if (!c->free_op) {
		r = ops_grow(c);
		if (r < 0)
			return r;
	}
	idx = c->free_op - 1;
	s = &c->ops[idx];
	c->free_op = s->next;
	s->next = 0;
	s->cookie = q->cookie;
	s->offset = q->offset;
	s->sq_index = c->sq_tail;
	s->op = sqe_rp_op(q->opcode);
	s->region = (uint16_t)q->region;
	*ret_wire = (uint64_t)s->gen << 32 | (idx + 1);
	c->inflight++;
	c->recv_inflight += s->op == RP_OP_RECV;
	return 0;
}

static void slot_free(struct rp_client *c, struct op_slot *s)
{
	c->recv_inflight -= s->op == RP_OP_RECV;
	s->op = 0;
	s->gen++;
	c->inflight--;
	s->next = c->free_op;
	c->free_op = (uint32_t)(s - c->ops) + 1;
}

int ops_complete(struct rp_client *c, const struct rp_cqe *e, uint64_t *ret_cookie)
{
	uint32_t idx = (uint32_t)e->cookie - 1;
	struct op_slot *s;

	if (e->op == RP_OP_NOTIFY) {
		*ret_cookie = e->cookie;
		return 0;
	}
	if (idx >= c->n_ops)
		return -EPROTO;
	s = &c->ops[idx];
	if (!s->op || s->op != e->op || s->gen != (uint32_t)(e->cookie >> 32))
		return -EPROTO;
	*ret_cookie = s->cookie;
	slot_free(c, s);
	return 0;
}

/*
 * The status of an operation the daemon can no longer complete. Entries
 * still between the daemon's consumer index and ours were never taken (it
 * releases an entry before acting on it): not done. A write, read or send
 * it had taken may or may not have happened. A posted receive delivered no
 * message to the application either way.
 */
static int dead_status(const struct rp_client *c, const struct op_slot *s)
{
	uint32_t cons = rp_ring_load(&c->v.sq->consumer);
	bool taken = true;

	if (rp_ring_count(c->sq_tail, cons, c->v.sq_entries) >= 0)
		taken = s->sq_index - cons >= c->sq_tail - cons;
	if (!taken || s->op == RP_OP_RECV)
		return -RP_EDAEMON;
	return -RP_EOUTCOME;
}

void ops_forget_region(struct rp_client *c, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < c->n_ops; i++)
		if (c->ops[i].op == RP_OP_RECV && c->ops[i].region == id)
			c->ops[i].region = 0;
}

int ops_report_dead(struct rp_client *c, struct rp_completion *comps, int max)
{
	int n = 0;

	for (; c->sweep < c->n_ops && n < max; c->sweep++) {
		struct op_slot *s = &c->ops[c->sweep];
		struct rp_completion *out = &comps[n];

		if (!s->op)
			continue;
		memset(out, 0, sizeof(*out));
		out->cookie = s->cookie;
		out->op = s->op;
		out->status = dead_status(c, s);
		if (s->op == RP_OP_RECV) {
			out->offset = s->offset;
			if (s->region && s->region <= c->n_regions)
				out->region = c->regions[s->region - 1];
		}
		slot_free(c, s);
		n++;
	}
	return n;
}

void ops_release(struct rp_client *c)
{
	free(c->ops);
	c->ops = NULL;
	c->n_ops = 0;
	c->free_op = 0;
}
