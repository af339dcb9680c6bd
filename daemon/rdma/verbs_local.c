/* SPDX-License-Identifier: MIT */
#include "rdma/verbs_local.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdma/rdma_dev.h"
#include "rdma/vx.h"

/* rdma_cm's default of 0 means 655 ms per receiver-not-ready retry. */
#define VL_MIN_RNR_TIMER 12
#define VL_TIMEOUT 14 /* 4.096 us * 2^14 = 67 ms */
#define VL_RETRY 7
#define VL_MAX_RD_ATOMIC 16
/* Payloads up to this size are posted inline (copied into the WR): no DMA lookup. */
#define VL_INLINE 256
/* Signal at least every this many WRs, and always the last of a post list. */
#define VL_SIGNAL_EVERY 16
/*
 * Fairness between the flows (sessions) that share the loopback QP, whose
 * send queue is one FIFO: what is posted ahead of a flow is what it waits
 * for. Big ops go out in chunks of at most VL_CHUNK; the flows with work
 * waiting take turns (deficit round robin, VL_QUANTUM bytes a turn); and
 * the bytes on the send queue are kept under VL_SHARED_BYTES while more than
 * one flow is active (VL_ALONE_BYTES for a flow on its own, enough to keep
 * the device busy). A flow that starts behind others so waits for at most
 * about VL_SHARED_BYTES + one chunk of each, not for their whole backlog.
 */
#define VL_CHUNK (1u << 20)
#define VL_QUANTUM (128u << 10)
#define VL_SHARED_BYTES (2ull << 20)
#define VL_ALONE_BYTES (16ull << 20)
#define VL_FLOW_BUCKETS 256 /* power of two */

struct vmr {
	struct ibv_mr *mr;
};

/* The ops of one flow (a session) that wait for the send queue, in order. */
struct vl_flow {
	struct vl_flow *hnext;	 /* hash chain; the spare list */
	struct vl_flow *rr_next; /* the turn order of waiting flows */
	const void *key;
	struct vl_op *head, *tail;
	uint64_t deficit; /* bytes it may still post in this turn */
	uint32_t wrs;	  /* its WRs on the send queue */
	bool waiting;	  /* on the turn list */
};

struct vl_op {
	struct vl_op *next;
	struct vlocal *v;
	struct vl_flow *f;
	void *user;
	enum ibv_wr_opcode opcode;
	uint64_t laddr, raddr, len, posted_bytes;
	uint32_t lkey, rkey;
	unsigned inflight;
	bool all_posted; /* every chunk is on the send queue: it left its flow's queue */
	int status;
};

/* One send-queue slot; every WR carries one as wr_id. */
struct vl_slot {
	struct rdev_wr w;
	struct vlocal *v;
	struct vl_op *op;
	uint32_t bytes;
};

struct vlocal {
	struct rdev *d;
	struct ibv_qp *qp;
	vlocal_done_fn done;
	uint32_t depth;
	uint32_t posted; /* WRs on the send queue: slots [s_tail, s_head) */
	uint32_t s_head, s_tail;
	struct vl_slot *slots;
	struct ibv_send_wr *wrv; /* one post list */
	struct ibv_sge *sgev;
	uint32_t unsignaled;
	uint32_t max_msg;
	uint32_t max_inline;
	bool deferred; /* post in vlocal_flush() only (the engine's pass) */
	bool broken;
	bool closing;
	unsigned recoveries;
	uint64_t posted_bytes;			/* payload of the WRs on the send queue */
	struct vl_flow *flows[VL_FLOW_BUCKETS]; /* flows with ops queued or posted */
	unsigned n_flows;
	struct vl_flow *rr_head, *rr_tail; /* flows with ops waiting, in turn order */
	unsigned n_waiting;
	struct vl_flow *spare_flows;
	struct vl_op *spare; /* finished ops kept for reuse: no malloc per op */
	unsigned n_spare;
	struct ibv_qp_attr rtr, rts;
	int rtr_mask, rts_mask;
};

static bool gid_is_v4mapped(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, pfx, sizeof(pfx));
}

/* Prefer a RoCEv2 GID with an IPv4 address, then any RoCEv2 GID, then index 0. */
static int pick_gid(struct ibv_context *ctx, uint8_t port, int len)
{
	int i, any_v2 = -1;

	for (i = 0; i < len; i++) {
		struct ibv_gid_entry e;

		if (vx_query_gid_ex(ctx, port, (uint32_t)i, &e) < 0)
			continue;
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (gid_is_v4mapped(&e.gid))
			return i;
		if (any_v2 < 0)
			any_v2 = i;
	}
	return any_v2 >= 0 ? any_v2 : 0;
}

static int self_path(struct vlocal *v, uint8_t port, int gid_index, char *why, size_t whylen)
{
	struct ibv_context *ctx = rdev_context(v->d);
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int rd, r;

	r = vx_query_device(ctx, &da);
	if (r == 0)
		r = vx_query_port(ctx, port, &pa);
	if (r < 0) {
		snprintf(why, whylen, "querying the device: %s", strerror(-r));
		return r;
	}
	v->max_msg = pa.max_msg_sz ? pa.max_msg_sz : 1u << 30;
	rd = da.max_qp_rd_atom < VL_MAX_RD_ATOMIC ? da.max_qp_rd_atom : VL_MAX_RD_ATOMIC;
	memset(&v->rtr, 0, sizeof(v->rtr));
	v->rtr.qp_state = IBV_QPS_RTR;
	v->rtr.path_mtu = pa.active_mtu;
	v->rtr.dest_qp_num = v->qp->qp_num;
	v->rtr.max_dest_rd_atomic = (uint8_t)(rd > 0 ? rd : 1);
	v->rtr.min_rnr_timer = VL_MIN_RNR_TIMER;
	v->rtr.ah_attr.port_num = port;
	v->rtr.ah_attr.dlid = pa.lid;
	v->rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if (pa.link_layer == IBV_LINK_LAYER_ETHERNET) {
		if (gid_index < 0)
			gid_index = pick_gid(ctx, port, pa.gid_tbl_len);
		if (vx_query_gid(ctx, port, gid_index, &gid) < 0) {
			snprintf(why, whylen, "no GID at index %d", gid_index);
			return -EINVAL;
		}
		v->rtr.ah_attr.is_global = 1;
		v->rtr.ah_attr.grh.dgid = gid;
		v->rtr.ah_attr.grh.sgid_index = (uint8_t)gid_index;
		v->rtr.ah_attr.grh.hop_limit = 64;
	}
	memset(&v->rts, 0, sizeof(v->rts));
	v->rts.qp_state = IBV_QPS_RTS;
	v->rts.timeout = VL_TIMEOUT;
	v->rts.retry_cnt = VL_RETRY;
	v->rts.rnr_retry = VL_RETRY;
	v->rts.max_rd_atomic = v->rtr.max_dest_rd_atomic;
	v->rts_mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
	return 0;
}

/* RESET -> INIT -> RTR -> RTS, connected to itself. Returns -errno. */
static int bring_up(struct vlocal *v, uint8_t port)
{
	struct ibv_qp_attr a = { 0 };
	int r;

	a.qp_state = IBV_QPS_RESET;
	r = vx_modify_qp(v->qp, &a, IBV_QP_STATE);
	if (r < 0)
		return r;
	a.qp_state = IBV_QPS_INIT;
	a.port_num = port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	r = vx_modify_qp(v->qp, &a,
			 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (r == 0)
		r = vx_modify_qp(v->qp, &v->rtr, v->rtr_mask);
	if (r == 0)
		r = vx_modify_qp(v->qp, &v->rts, v->rts_mask);
	return r;
}

static void on_wc(struct rdev_wr *w, const struct ibv_wc *wc);

int vlocal_new(struct rdev *d, uint32_t depth, int gid_index, vlocal_done_fn done,
	       struct vlocal **ret, char *why, size_t whylen)
{
	struct ibv_qp_init_attr ia = { 0 };
	struct rdev_info info;
	struct vlocal *v;
	int r;

	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->d = d;
	v->done = done;
	v->depth = depth;
	ia.send_cq = ia.recv_cq = rdev_cq(d);
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = depth;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = VL_INLINE;
	v->slots = calloc(depth, sizeof(*v->slots));
	v->wrv = calloc(depth, sizeof(*v->wrv));
	v->sgev = calloc(depth, sizeof(*v->sgev));
	if (!v->slots || !v->wrv || !v->sgev) {
		r = -ENOMEM;
		snprintf(why, whylen, "loopback QP slots: %s", strerror(-r));
		goto out_free;
	}
	r = vx_create_qp(rdev_pd(d), &ia, &v->qp);
	if (r < 0 && ia.cap.max_inline_data) {
		/* The device takes no inline data (or less): post everything by reference. */
		ia.cap.max_inline_data = 0;
		r = vx_create_qp(rdev_pd(d), &ia, &v->qp);
	}
	if (r < 0) {
		snprintf(why, whylen, "creating the loopback QP: %s", strerror(-r));
		goto out_free;
	}
	v->max_inline = ia.cap.max_inline_data; /* what the provider granted */
	for (r = 0; r < (int)depth; r++) {
		v->slots[r].w.done = on_wc;
		v->slots[r].v = v;
	}
	r = 0;
	rdev_query(d, &info);
	r = self_path(v, (uint8_t)info.port, gid_index, why, whylen);
	if (r < 0)
		goto out_free;
	r = bring_up(v, (uint8_t)info.port);
	if (r < 0) {
		snprintf(why, whylen, "connecting the loopback QP: %s", strerror(-r));
		goto out_free;
	}
	*ret = v;
	return 0;

out_free:
	vlocal_free(v);
	return r;
}

/* Spare ops kept: enough for a full send queue and then some. */
#define VL_SPARE_MAX 1024

static struct vl_op *op_alloc(struct vlocal *v)
{
	struct vl_op *op = v->spare;

	if (!op)
		return calloc(1, sizeof(*op));
	v->spare = op->next;
	v->n_spare--;
	memset(op, 0, sizeof(*op));
	return op;
}

static void op_finish(struct vl_op *op)
{
	struct vlocal *v = op->v;

	v->done(op->user, op->status);
	if (v->n_spare >= VL_SPARE_MAX) {
		free(op);
		return;
	}
	op->next = v->spare;
	v->spare = op;
	v->n_spare++;
}

/*
 * Work requests on the send queue complete (flushed) once the QP is in the
 * error state; drain them so each op still gets its one report.
 */
static void flush_posted(struct vlocal *v)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int tries;

	if (!v->posted || vx_modify_qp(v->qp, &a, IBV_QP_STATE) < 0)
		return;
	for (tries = 0; v->posted && tries < 1000; tries++) {
		if (rdev_cq_drain(v->d) <= 0)
			usleep(1000);
	}
}

static void flow_cancel(struct vl_flow *f)
{
	struct vl_op *op;

	while ((op = f->head)) {
		f->head = op->next;
		if (op->inflight == 0) {
			op->status = op->status ? op->status : -ECANCELED;
			op_finish(op);
		}
	}
}

struct vlocal *vlocal_free(struct vlocal *v)
{
	struct vl_flow *f;
	struct vl_op *op;
	unsigned i;

	if (!v)
		return NULL;
	v->closing = true;
	if (v->qp)
		flush_posted(v);
	/* Ops still waiting never reached the device: they did not happen. */
	for (i = 0; i < VL_FLOW_BUCKETS; i++) {
		while ((f = v->flows[i])) {
			v->flows[i] = f->hnext;
			flow_cancel(f);
			free(f);
		}
	}
	while ((f = v->spare_flows)) {
		v->spare_flows = f->hnext;
		free(f);
	}
	while ((op = v->spare)) {
		v->spare = op->next;
		free(op);
	}
	if (v->qp)
		vx_destroy_qp(v->qp);
	free(v->slots);
	free(v->wrv);
	free(v->sgev);
	free(v);
	return NULL;
}

int vmr_reg(struct vlocal *v, void *addr, uint64_t len, unsigned access, struct vmr **ret)
{
	struct vmr *m = calloc(1, sizeof(*m));
	int flags = 0, r;

	if (!m)
		return -ENOMEM;
	if (access & VMR_LOCAL_WRITE)
		flags |= IBV_ACCESS_LOCAL_WRITE;
	if (access & VMR_REMOTE_READ)
		flags |= IBV_ACCESS_REMOTE_READ;
	/* The verbs spec requires local write for remote write. */
	if (access & VMR_REMOTE_WRITE)
		flags |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	r = vx_reg_mr(rdev_pd(v->d), addr, len, flags, &m->mr);
	if (r < 0) {
		free(m);
		return r;
	}
	*ret = m;
	return 0;
}

struct vmr *vmr_dereg(struct vmr *m)
{
	if (!m)
		return NULL;
	vx_dereg_mr(m->mr);
	free(m);
	return NULL;
}

uint64_t vmr_addr(const struct vmr *m)
{
	return (uintptr_t)m->mr->addr;
}

uint64_t vmr_len(const struct vmr *m)
{
	return m->mr->length;
}

uint32_t vmr_lkey(const struct vmr *m)
{
	return m->mr->lkey;
}

uint32_t vmr_rkey(const struct vmr *m)
{
	return m->mr->rkey;
}

static int wc_status(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS:
		return 0;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
		return -EACCES; /* checked before the data moved: it did not happen */
	case IBV_WC_LOC_LEN_ERR:
		return -EINVAL;
	default:
		return -ETIMEDOUT; /* flushed or retries exhausted: outcome unknown */
	}
}

static void post_pending(struct vlocal *v);

static void recover(struct vlocal *v)
{
	struct rdev_info info;

	rdev_query(v->d, &info);
	if (bring_up(v, (uint8_t)info.port) == 0) {
		v->broken = false;
		v->recoveries++;
	}
}

static struct vl_flow **flow_slot(struct vlocal *v, const void *key)
{
	uintptr_t h = (uintptr_t)key;

	h ^= h >> 17;
	h *= 0x9e3779b97f4a7c15ull;
	return &v->flows[(h >> 40) & (VL_FLOW_BUCKETS - 1)];
}

/* The flow of @key, made if it has nothing queued or posted. NULL on -ENOMEM. */
static struct vl_flow *flow_get(struct vlocal *v, const void *key)
{
	struct vl_flow **pp = flow_slot(v, key), *f;

	for (f = *pp; f; f = f->hnext)
		if (f->key == key)
			return f;
	f = v->spare_flows;
	if (f)
		v->spare_flows = f->hnext;
	else if (!(f = malloc(sizeof(*f))))
		return NULL;
	memset(f, 0, sizeof(*f));
	f->key = key;
	f->hnext = *pp;
	*pp = f;
	v->n_flows++;
	return f;
}

/* Forget @f once nothing of it waits or is on the send queue. */
static void flow_put(struct vlocal *v, struct vl_flow *f)
{
	struct vl_flow **pp;

	if (f->head || f->wrs || f->waiting || v->closing)
		return;
	for (pp = flow_slot(v, f->key); *pp != f; pp = &(*pp)->hnext)
		;
	*pp = f->hnext;
	v->n_flows--;
	f->hnext = v->spare_flows;
	v->spare_flows = f;
}

/* @f has ops waiting: give it a turn after the flows already waiting. */
static void flow_wait(struct vlocal *v, struct vl_flow *f)
{
	if (f->waiting)
		return;
	f->waiting = true;
	f->rr_next = NULL;
	if (v->rr_tail)
		v->rr_tail->rr_next = f;
	else
		v->rr_head = f;
	v->rr_tail = f;
	v->n_waiting++;
}

static struct vl_flow *flow_next_turn(struct vlocal *v)
{
	struct vl_flow *f = v->rr_head;

	v->rr_head = f->rr_next;
	if (!v->rr_head)
		v->rr_tail = NULL;
	f->waiting = false;
	v->n_waiting--;
	return f;
}

static void unqueue(struct vl_op *op)
{
	struct vl_flow *f = op->f;

	if (f->head != op)
		return;
	f->head = op->next;
	if (!f->head)
		f->tail = NULL;
}

/* Report @op once nothing of it is on the send queue and nothing more will be. */
static void op_check(struct vlocal *v, struct vl_op *op)
{
	if (op->inflight || (!op->all_posted && !op->status))
		return;
	unqueue(op); /* an op that failed part-way leaves its flow's queue too */
	op_finish(op);
}

/* One WR of its op is done: @st 0 or its failure. */
static void retire(struct vlocal *v, struct vl_slot *s, int st)
{
	struct vl_op *op = s->op;
	struct vl_flow *f = op->f;

	s->op = NULL;
	v->s_tail++;
	v->posted--;
	v->posted_bytes -= s->bytes;
	f->wrs--;
	op->inflight--;
	if (st && !op->status)
		op->status = st;
	op_check(v, op);
	flow_put(v, f);
}

/*
 * The send queue completes in order, and only some WRs are signalled: a
 * completion retires every slot up to its own, the earlier ones with
 * success (an error or a flush has a completion of its own).
 */
static void on_wc(struct rdev_wr *w, const struct ibv_wc *wc)
{
	struct vl_slot *s = (struct vl_slot *)w, *t;
	struct vlocal *v = s->v;

	if (wc->status != IBV_WC_SUCCESS)
		v->broken = true;
	do {
		t = &v->slots[v->s_tail % v->depth];
		retire(v, t, t == s ? wc_status(wc->status) : 0);
	} while (t != s && v->s_head != v->s_tail);
	if (v->closing)
		return;
	if (v->broken && v->posted == 0)
		recover(v);
	if (!v->deferred)
		post_pending(v);
}

/* The size of @op's next chunk. */
static uint64_t chunk_len(const struct vlocal *v, const struct vl_op *op)
{
	uint64_t n = op->len - op->posted_bytes;

	if (n > v->max_msg)
		n = v->max_msg;
	return n > VL_CHUNK ? VL_CHUNK : n;
}

/* Add the next chunk of @op, @n bytes, as WR @i of the post list. */
static void add_chunk(struct vlocal *v, struct vl_op *op, uint32_t i, uint64_t n)
{
	struct vl_slot *s = &v->slots[v->s_head % v->depth];
	struct ibv_send_wr *wr = &v->wrv[i];
	struct ibv_sge *sge = &v->sgev[i];

	memset(wr, 0, sizeof(*wr));
	sge->addr = op->laddr + op->posted_bytes;
	sge->length = (uint32_t)n;
	sge->lkey = op->lkey;
	wr->wr_id = (uintptr_t)&s->w;
	wr->sg_list = sge;
	wr->num_sge = n ? 1 : 0;
	wr->opcode = op->opcode;
	/* Small writes are copied into the WR: the device need not look the data up. */
	if (op->opcode == IBV_WR_RDMA_WRITE && n && n <= v->max_inline)
		wr->send_flags |= IBV_SEND_INLINE;
	wr->wr.rdma.remote_addr = op->raddr + op->posted_bytes;
	wr->wr.rdma.rkey = op->rkey;
	s->op = op;
	s->bytes = (uint32_t)n;
	op->posted_bytes += n;
	op->inflight++;
	op->all_posted = op->posted_bytes == op->len;
	op->f->wrs++;
	v->s_head++;
	v->posted++;
	v->posted_bytes += n;
}

/*
 * A failed post: the WRs from @first on were never queued. Their ops fail;
 * one that has nothing else on the send queue is reported now (whether or
 * not it had left its flow's queue), the others by their last completion.
 */
static void take_back(struct vlocal *v, uint32_t first, uint32_t n, int err)
{
	uint32_t i;

	for (i = n; i-- > first;) {
		struct vl_slot *s = &v->slots[(v->s_head - 1) % v->depth];
		struct vl_op *op = s->op;
		struct vl_flow *f = op->f;

		s->op = NULL;
		v->s_head--;
		v->posted--;
		v->posted_bytes -= s->bytes;
		f->wrs--;
		op->inflight--;
		op->posted_bytes -= s->bytes;
		op->all_posted = false;
		if (!op->status)
			op->status = err;
		op_check(v, op); /* once: only its first WR here brings it to 0 */
		flow_put(v, f);
	}
}

/* Room on the send queue for one more WR, keeping the fairness bound. */
static bool room(const struct vlocal *v)
{
	if (v->broken || v->posted >= v->depth)
		return false;
	if (!v->posted_bytes)
		return true;
	return v->posted_bytes < (v->n_flows > 1 ? VL_SHARED_BYTES : VL_ALONE_BYTES);
}

/*
 * Post what waits, as one post list (one system call on rxe however many
 * WRs): the waiting flows take turns, each posting up to its deficit; a flow
 * with no one waiting behind it posts as long as there is room.
 */
static void post_pending(struct vlocal *v)
{
	struct ibv_send_wr *bad = NULL;
	struct vl_flow *f;
	struct vl_op *op;
	uint32_t n = 0, i;
	int r;

	while (v->rr_head && room(v)) {
		f = flow_next_turn(v);
		f->deficit += VL_QUANTUM;
		while ((op = f->head) && room(v)) {
			uint64_t len;

			if (op->status) { /* failed part-way: nothing more of it is posted */
				unqueue(op);
				op_check(v, op);
				continue;
			}
			len = chunk_len(v, op);
			if (len > f->deficit && v->n_waiting)
				break; /* its turn is over: the others first */
			f->deficit -= len < f->deficit ? len : f->deficit;
			add_chunk(v, op, n++, len);
			if (op->all_posted)
				unqueue(op); /* it ends with its completions */
		}
		if (f->head)
			flow_wait(v, f);
		else
			f->deficit = 0;
		flow_put(v, f);
	}
	if (!n)
		return;
	for (i = 0; i < n; i++) {
		bool last = i + 1 == n;

		v->wrv[i].next = last ? NULL : &v->wrv[i + 1];
		if (last || ++v->unsignaled >= VL_SIGNAL_EVERY) {
			v->wrv[i].send_flags |= IBV_SEND_SIGNALED;
			v->unsignaled = 0;
		}
	}
	r = vx_post_send(v->qp, v->wrv, &bad);
	if (r < 0)
		take_back(v, bad ? (uint32_t)(bad - v->wrv) : 0, n, -EIO);
}

void vlocal_flush(struct vlocal *v)
{
	if (v)
		post_pending(v);
}

void vlocal_defer(struct vlocal *v, bool deferred)
{
	if (v)
		v->deferred = deferred;
}

static int submit(struct vlocal *v, enum ibv_wr_opcode opc, struct vmr *l, uint64_t loff,
		  struct vmr *rm, uint64_t roff, uint64_t len, const void *flow, void *user)
{
	struct vl_flow *f;
	struct vl_op *op;

	if (loff > l->mr->length || len > l->mr->length - loff || roff > rm->mr->length ||
	    len > rm->mr->length - roff)
		return -ERANGE;
	f = flow_get(v, flow);
	if (!f)
		return -ENOMEM;
	op = op_alloc(v);
	if (!op) {
		flow_put(v, f); /* forgotten again if it was new */
		return -ENOMEM;
	}
	op->v = v;
	op->f = f;
	op->user = user;
	op->opcode = opc;
	op->laddr = (uintptr_t)l->mr->addr + loff;
	op->lkey = l->mr->lkey;
	op->raddr = (uintptr_t)rm->mr->addr + roff;
	op->rkey = rm->mr->rkey;
	op->len = len;
	if (f->tail)
		f->tail->next = op;
	else
		f->head = op;
	f->tail = op;
	flow_wait(v, f);
	if (!v->deferred)
		post_pending(v);
	return 0;
}

int vlocal_write(struct vlocal *v, struct vmr *src, uint64_t soff, struct vmr *dst, uint64_t doff,
		 uint64_t len, const void *flow, void *user)
{
	return submit(v, IBV_WR_RDMA_WRITE, src, soff, dst, doff, len, flow, user);
}

int vlocal_read(struct vlocal *v, struct vmr *dst, uint64_t doff, struct vmr *src, uint64_t soff,
		uint64_t len, const void *flow, void *user)
{
	return submit(v, IBV_WR_RDMA_READ, dst, doff, src, soff, len, flow, user);
}

uint32_t vlocal_qp_num(const struct vlocal *v)
{
	return v->qp->qp_num;
}

unsigned vlocal_recoveries(const struct vlocal *v)
{
	return v->recoveries;
}
