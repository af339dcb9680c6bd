/* SPDX-License-Identifier: MIT */
#include "rdma/verbs_local.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h" /* mono_ns() */
#include "rdma/rdma_dev.h"
#include "rdma/vx.h"
#include "rp-ring.h" /* rp_cpu_relax() */

/* rdma_cm's default of 0 means 655 ms per receiver-not-ready retry. */
#define VL_MIN_RNR_TIMER 12
#define VL_TIMEOUT 14 /* 4.096 us * 2^14 = 67 ms */
#define VL_RETRY 7
#define VL_MAX_RD_ATOMIC 16
/*
 * Signal at least every this many WRs or bytes, and always the last of a
 * post list. Each completion costs the device and us work, but slots (and
 * the bytes room() counts) come back only with one: by bytes, big WRs are
 * still signalled every 1 MiB (every 16th of 64 KiB). Against every 16th
 * WR, guest A/B, one boot, 6 rounds: 64 B rate with 16 / 4 / 1 clients
 * +12.6 / +4.1 / +3.6 %, 64 KiB bandwidth with 4 / 1 clients +1.2 / +1.7 %
 * (by count alone, every 64th: 4 clients' 64 KiB -2.9 %).
 */
#define VL_SIGNAL_EVERY 64
#define VL_SIGNAL_BYTES (1u << 20)
/*
 * Fairness between the flows (sessions) that share a loopback QP (a lane),
 * whose send queue is one FIFO: what is posted ahead of a flow is what it
 * waits for. Big ops go out in chunks of at most VL_CHUNK; the flows with work
 * waiting take turns (deficit round robin, VL_QUANTUM bytes a turn); and
 * the bytes on the send queue are kept under VL_SHARED_BYTES while more than
 * one flow is active (VL_ALONE_BYTES for a flow on its own, enough to keep
 * the device busy). A flow that starts behind others so waits for at most
 * about VL_SHARED_BYTES + one chunk of each, not for their whole backlog,
 * and one that starts behind a flow on its own for about VL_ALONE_BYTES.
 * That bound also holds back what a lone flow piles up in the device,
 * which every other QP waits behind: in the guest, a client writing 8 B
 * synchronously beside one streaming 1 MiB writes took a median of
 * 458-609 us per write (p99 2.2-3.3 ms, worst 9-466 ms) with 16 MiB or 8
 * MiB, and 38-44 us (p99 226-375 us) with 4 MiB; the streamer on its own
 * lost about 3 % (nine alternating runs).
 */
#define VL_CHUNK (1u << 20)
#define VL_QUANTUM (128u << 10)
#define VL_SHARED_BYTES (2ull << 20)
#define VL_ALONE_BYTES (4ull << 20)
#define VL_FLOW_BUCKETS 256 /* power of two */
/*
 * While flows are on more than one lane, or several sessions submit
 * (vlocal_shared()), the loop thread posts a list itself only if it is
 * light: at most VL_SELF_WRS WRs and VL_SELF_BYTES of payload (a latency
 * path: no hand-over). Heavier lists go to their lane's thread: on rxe the
 * posting thread does the protocol work and copies the data, so the loop
 * thread posting them itself would do every lane's work on one CPU (4
 * clients writing 64 KiB: 26-33 MiB/s, against 40-46 with the hand-over, in
 * the guest). "Several sessions", not only "several lanes with flows": rxe
 * completes a list within its post call, so a flow is gone again soon, and
 * with 4 clients writing 64 B most lists found the other lanes empty. The
 * loop thread then posted them itself (~100 WRs, milliseconds each) and saw
 * no other ring meanwhile, which kept the others' lanes empty: one CPU
 * posted, the other was a third idle. With one session submitting, the loop
 * thread posts: the hand-over would only add a thread (1 client, 64 B: -25 %
 * message rate).
 */
#define VL_SELF_WRS 1u
#define VL_SELF_BYTES 4096u
/*
 * While only one session submits and its flow is the only one on a lane
 * (not vlocal_shared(), at most one active lane), a post list ends once it
 * carries VL_ALONE_WRS WRs and VL_ALONE_MIN_BYTES of payload, or
 * VL_ALONE_MAX_WRS WRs; the rest goes out at the engine's next passes. rxe
 * completes a list as a whole inside the post call, so the completion of its
 * first WR waits for its last: one list of a client's whole window (32 x 4
 * KiB: ~2 ms in the guest) left that client with nothing to reap for the
 * length of the call, so it went to sleep, and it and the engine paid
 * wake-ups every window. Capped, completions come every few WRs and the
 * client refills its window while the device still has work (guest, one
 * client, four boots: 4 KiB write bandwidth -4 % to +12 %, +9 % in the
 * longest runs; 64 KiB +3 % to +9 %; 64 B message rate +4 % to +16 %; the
 * client slept 24 times in 3,000 4 KiB writes instead of 122). One system
 * call per capped list. Otherwise lists are not capped:
 * capping the lists handed to the lanes' threads cost 4 clients a third of
 * their 64 B rate (more hand-overs, each a thread switch).
 */
#define VL_ALONE_WRS 8u
/*
 * Small WRs go 32 to a list (2 KiB of 64 B ops): a list of 8 is a short call
 * (~120 us), and the call's own cost weighs more. Guest, one client, 64 B
 * message rate against lists of 8, alternating in one boot, three boots:
 * +3 % to +6 % (median of the paired ratios, 8-9 pairs each); 4 KiB and 64
 * KiB bandwidth, whose lists are the same, within the noise (-2 %, -0 %).
 * Lists of 32 for all sizes cost 4 KiB bandwidth 8 %.
 */
#define VL_ALONE_MIN_BYTES 2048u
#define VL_ALONE_MAX_WRS 32u
/* A poster thread with nothing to post looks this many times more before it sleeps. */
#define VL_POSTER_SPINS 256
/*
 * After a failed recovery, the next attempt waits this long: the engine
 * would otherwise try (a query and up to four modify_qp calls) on every pass
 * while the device keeps refusing. Ops that wait for the lane meanwhile fail
 * as if it had been tried (fail_waiting()).
 */
#define VL_RETRY_NS 10000000ull

/* What a lane's poster thread is told (its futex word). */
enum lane_cmd {
	LANE_IDLE,
	LANE_POST, /* post the list in wrv; set LANE_IDLE when done */
	LANE_STOP,
};

struct vmr {
	struct ibv_mr *mr;
	bool may_fault; /* VMR_MAY_FAULT */
};

struct vlane;

/* The ops of one flow (a session) that wait for the send queue, in order. */
struct vl_flow {
	struct vl_flow *hnext;	 /* hash chain; the spare list */
	struct vl_flow *rr_next; /* the turn order of waiting flows */
	struct vlane *lane;	 /* its QP, for as long as it has ops */
	const void *key;
	struct vl_op *head, *tail;
	uint64_t deficit; /* bytes it may still post in this turn */
	uint32_t wrs;	  /* its WRs on the send queue */
	bool waiting;	  /* on the turn list */
	bool resume;	  /* its last turn was cut short: no new quantum */
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
	bool no_inline;	 /* its local memory may fault (VMR_MAY_FAULT) */
	bool all_posted; /* every chunk is on the send queue: it left its flow's queue */
	int status;
};

/* One send-queue slot; every WR carries one as wr_id. */
struct vl_slot {
	struct rdev_wr w;
	struct vlane *l;
	struct vl_op *op; /* NULL: taken back (take_back()), or a fence */
	uint32_t bytes;
	bool fence; /* post_fence()'s WR: no op of ours */
};

/* A lane's slots from before a reset that followed a give-up (recover()). */
struct vl_retired {
	struct vl_retired *next;
	struct vl_slot *slots;
	uint64_t emptied; /* rdev_cq_emptied() right after the reset */
};

/*
 * One loopback QP (a lane) and its send queue. The device works on
 * different QPs in parallel (rxe: one kernel task per QP), so the flows are
 * spread over several lanes; a flow stays on its lane while it has ops
 * queued or posted, which keeps its ops in order.
 */
struct vlane {
	struct vlocal *v;
	struct ibv_qp *qp;
	uint32_t depth;
	struct ibv_send_wr *wrv; /* one post list */
	struct ibv_sge *sgev;
	/*
	 * The poster thread (with more than one lane). On rxe, ibv_post_send
	 * does the QP's protocol work, data copy included, in the calling
	 * thread: posting several lanes from several threads spreads that
	 * over the CPUs. The loop thread hands a list over (cmd = LANE_POST)
	 * and does not touch wrv until the thread set cmd back to LANE_IDLE.
	 */
	pthread_t thread;
	bool has_thread;
	bool handed; /* a list was handed over and its result not yet taken */
	uint32_t post_n;
	/* Shared with the thread, on their own cache line. */
	uint32_t cmd __attribute__((aligned(64))); /* enum lane_cmd */
	uint32_t sleeping;			   /* the thread waits on cmd */
	int post_r; /* written by the thread before cmd = LANE_IDLE */
	uint32_t post_bad;
	char pad_ __attribute__((aligned(64))); /* the loop thread's fields from here on */
	uint32_t posted;			/* WRs on the send queue: slots [s_tail, s_head) */
	uint64_t s_head, s_tail; /* free-running: 64 bits, as depth need not be a power of 2 */
	struct vl_slot *slots;
	uint32_t unsignaled; /* WRs and bytes since the last signalled WR */
	uint64_t unsignaled_bytes;
	bool broken;
	bool stale; /* WRs given up since the QP's last reset: a late completion may name a slot */
	struct vl_retired *retired;
	unsigned recoveries;
	uint64_t retry_ns;     /* a failed recovery: none before this (CLOCK_MONOTONIC) */
	uint64_t posted_bytes; /* payload of the WRs on the send queue */
	unsigned n_flows;      /* flows with ops queued or posted here */
	struct vl_flow *rr_head, *rr_tail; /* flows with ops waiting, in turn order */
	unsigned n_waiting;
};

struct vlocal {
	struct rdev *d;
	vlocal_done_fn done;
	struct vlane *lanes;
	unsigned n_lanes;
	unsigned active_lanes; /* lanes with flows (n_flows > 0) */
	uint32_t cq_claimed;   /* completions claimed on the device CQ (rdev_cq_claim()) */
	unsigned next_lane;    /* where the next new flow goes when lanes tie */
	uint32_t max_msg;
	uint32_t max_inline;
	bool deferred; /* post in vlocal_flush() only (the engine's pass) */
	bool shared;   /* several sessions submit (vlocal_shared()) */
	bool closing;
	struct vl_flow *flows[VL_FLOW_BUCKETS]; /* flows with ops queued or posted */
	struct vl_flow *spare_flows;
	struct vl_op *spare; /* finished ops kept for reuse: no malloc per op */
	unsigned n_spare;
	struct ibv_qp_attr rtr, rts;
	int rtr_mask, rts_mask;
	/* Lists the poster threads have posted, and whether the loop thread waits for the next. */
	uint32_t posts_done;
	uint32_t post_waiter;
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
static int bring_up(struct vlane *l, uint8_t port)
{
	struct vlocal *v = l->v;
	struct ibv_qp_attr a = { 0 }, rtr = v->rtr;
	int r;

	a.qp_state = IBV_QPS_RESET;
	r = vx_modify_qp(l->qp, &a, IBV_QP_STATE);
	if (r < 0)
		return r;
	a.qp_state = IBV_QPS_INIT;
	a.port_num = port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	r = vx_modify_qp(l->qp, &a,
			 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	rtr.dest_qp_num = l->qp->qp_num;
	if (r == 0)
		r = vx_modify_qp(l->qp, &rtr, v->rtr_mask);
	if (r == 0)
		r = vx_modify_qp(l->qp, &v->rts, v->rts_mask);
	return r;
}

static void on_wc(struct rdev_wr *w, const struct ibv_wc *wc);

/* @l->depth empty slots for @l's send queue. */
static struct vl_slot *slots_new(struct vlane *l)
{
	struct vl_slot *slots = calloc(l->depth, sizeof(*slots));
	uint32_t i;

	for (i = 0; slots && i < l->depth; i++) {
		slots[i].w.done = on_wc;
		slots[i].l = l;
	}
	return slots;
}

/* Free @l's retired slots that no completion can name any more (all of them: @all). */
static void retired_free(struct vlane *l, bool all)
{
	uint64_t emptied = rdev_cq_emptied(l->v->d);
	struct vl_retired *r, **pp = &l->retired;

	while ((r = *pp)) {
		if (all || r->emptied != emptied) {
			*pp = r->next;
			free(r->slots);
			free(r);
		} else {
			pp = &r->next;
		}
	}
}

/* Lane @l's QP with @depth send WRs and as much inline data as the device takes. */
static int lane_new(struct vlane *l, uint32_t depth, char *why, size_t whylen)
{
	struct vlocal *v = l->v;
	struct ibv_qp_init_attr ia = { 0 };
	int r;

	l->depth = depth;
	l->slots = slots_new(l);
	l->wrv = calloc(depth, sizeof(*l->wrv));
	l->sgev = calloc(depth, sizeof(*l->sgev));
	if (!l->slots || !l->wrv || !l->sgev) {
		snprintf(why, whylen, "loopback QP slots: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	ia.send_cq = ia.recv_cq = rdev_cq(v->d);
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = depth;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = v->max_inline;
	r = vx_create_qp_inline(rdev_pd(v->d), &ia, &l->qp);
	if (r < 0) {
		snprintf(why, whylen, "creating a loopback QP: %s", strerror(-r));
		return r;
	}
	if (ia.cap.max_inline_data < v->max_inline)
		v->max_inline = ia.cap.max_inline_data; /* what the provider granted every lane */
	return 0;
}

/* @timeout: for FUTEX_WAIT_PRIVATE, relative (NULL: none). */
static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *timeout)
{
	return syscall(SYS_futex, word, op, val, timeout, NULL, 0);
}

/* A lane's poster thread: posts what it is handed, spins a little, sleeps. */
static void *poster(void *arg)
{
	struct vlane *l = arg;
	unsigned spins = 0;
	char name[16];

	snprintf(name, sizeof(name), "rp-lane%u", (unsigned)(l - l->v->lanes));
	pthread_setname_np(pthread_self(), name);
	for (;;) {
		uint32_t cmd = __atomic_load_n(&l->cmd, __ATOMIC_ACQUIRE);

		if (cmd == LANE_POST) {
			struct ibv_send_wr *bad = NULL;

			l->post_r = vx_post_send(l->qp, l->wrv, &bad);
			l->post_bad = bad ? (uint32_t)(bad - l->wrv) : 0;
			__atomic_store_n(&l->cmd, LANE_IDLE, __ATOMIC_RELEASE);
			/* Dekker with vlocal_wait_post(): one of us sees the other's store. */
			__atomic_add_fetch(&l->v->posts_done, 1, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&l->v->post_waiter, __ATOMIC_SEQ_CST))
				futex(&l->v->posts_done, FUTEX_WAKE_PRIVATE, 1, NULL);
			spins = 0;
			continue;
		}
		if (cmd == LANE_STOP)
			return NULL;
		if (++spins < VL_POSTER_SPINS) {
			rp_cpu_relax();
			continue;
		}
		/* Dekker with lane_tell(): one of us sees the other's store. */
		__atomic_store_n(&l->sleeping, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&l->cmd, __ATOMIC_SEQ_CST) == LANE_IDLE)
			futex(&l->cmd, FUTEX_WAIT_PRIVATE, LANE_IDLE, NULL);
		__atomic_store_n(&l->sleeping, 0, __ATOMIC_RELAXED);
		spins = 0;
	}
}

static void lane_tell(struct vlane *l, uint32_t cmd)
{
	__atomic_store_n(&l->cmd, cmd, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&l->sleeping, __ATOMIC_SEQ_CST))
		futex(&l->cmd, FUTEX_WAKE_PRIVATE, 1, NULL);
}

static void take_back(struct vlane *l, uint32_t first, uint32_t n, int err);
static void retire(struct vlane *l, struct vl_slot *s, int st);
static void post_failed(struct vlane *l, uint32_t first, uint32_t n);

/* The result of the list handed to @l's thread, once it is posted. false: still posting. */
static bool lane_collect(struct vlane *l)
{
	if (!l->handed)
		return true;
	if (__atomic_load_n(&l->cmd, __ATOMIC_ACQUIRE) != LANE_IDLE)
		return false;
	l->handed = false;
	if (l->post_r < 0)
		post_failed(l, l->post_bad, l->post_n);
	return true;
}

/* Wait until @l's thread posted what it was handed. */
static void lane_settle(struct vlane *l)
{
	while (!lane_collect(l))
		rp_cpu_relax();
}

int vlocal_new(struct rdev *d, uint32_t depth, unsigned lanes, int gid_index, uint32_t max_inline,
	       vlocal_done_fn done, struct vlocal **ret, char *why, size_t whylen)
{
	struct rdev_info info;
	sigset_t all, old;
	struct vlocal *v;
	unsigned i;
	int r;

	if (!depth || !lanes || depth >= UINT32_MAX / lanes)
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->d = d;
	/* Every WR of every lane may need a completion at once (an error flushes them all). */
	r = rdev_cq_claim(d, lanes * (depth + 1));
	if (r < 0) {
		snprintf(why, whylen,
			 "the CQ has room for %u more completions; %u loopback QP(s) of %u WRs "
			 "need %u",
			 rdev_cq_room(d), lanes, depth, lanes * (depth + 1));
		free(v);
		return r;
	}
	v->cq_claimed = lanes * (depth + 1);
	v->done = done;
	/* Payloads up to this size are copied into the WR: no lookup of their MR. */
	v->max_inline = max_inline;
	/* Cache-line aligned: a lane's hand-over words are on a line of their own. */
	v->lanes = aligned_alloc(64, (lanes * sizeof(*v->lanes) + 63) & ~(size_t)63);
	if (v->lanes)
		memset(v->lanes, 0, lanes * sizeof(*v->lanes));
	if (!v->lanes) {
		r = -ENOMEM;
		snprintf(why, whylen, "loopback QP slots: %s", strerror(-r));
		goto out_free;
	}
	for (i = 0; i < lanes; i++) {
		v->lanes[i].v = v;
		v->n_lanes++;
		r = lane_new(&v->lanes[i], depth, why, whylen);
		if (r < 0)
			goto out_free;
	}
	rdev_query(d, &info);
	r = self_path(v, (uint8_t)info.port, gid_index, why, whylen);
	for (i = 0; r == 0 && i < lanes; i++) {
		r = bring_up(&v->lanes[i], (uint8_t)info.port);
		if (r < 0)
			snprintf(why, whylen, "connecting a loopback QP: %s", strerror(-r));
	}
	sigfillset(&all); /* signals are the loop thread's: the threads start with all blocked */
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 0; r == 0 && lanes > 1 && i < lanes; i++) {
		r = -pthread_create(&v->lanes[i].thread, NULL, poster, &v->lanes[i]);
		if (r < 0) {
			snprintf(why, whylen, "a loopback QP's poster thread: %s", strerror(-r));
			break;
		}
		v->lanes[i].has_thread = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0)
		goto out_free;
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

/* Move @l's QP to the error state: every WR on its send queue completes (flushed). */
static int to_error(struct vlane *l)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	return vx_modify_qp(l->qp, &a, IBV_QP_STATE);
}

/* No completion will come for what is on @l's send queue: its outcome is unknown. */
static void give_up_posted(struct vlane *l)
{
	uint64_t head = l->s_head; /* only these: whatever a done callback did after */

	if (l->s_tail != head)
		l->stale = true;
	while (l->s_tail != head)
		retire(l, &l->slots[l->s_tail % l->depth], -ETIMEDOUT);
}

/*
 * Tear-down: flush the send queue and drain it, so each op still gets its one
 * report. If the QP will not go to the error state, what the device already
 * completed is still taken (its completions are on the CQ) before the rest
 * is given up.
 */
static void flush_posted(struct vlane *l)
{
	bool flushing;
	int tries;

	if (!l->posted)
		return;
	flushing = to_error(l) == 0;
	for (tries = 0; l->posted && tries < (flushing ? 1000 : 1); tries++) {
		if (rdev_cq_drain(l->v->d) <= 0 && flushing)
			usleep(1000);
	}
	give_up_posted(l); /* the device did not give them back */
}

static void flow_cancel(struct vl_flow *f)
{
	struct vl_op *op;

	while ((op = f->head)) {
		f->head = op->next;
		if (op->inflight == 0) {
			/* Its first chunks may be done: then it did not "not happen". */
			if (!op->status)
				op->status = op->posted_bytes ? -EIO : -ECANCELED;
			op_finish(op);
		}
	}
}

struct vlocal *vlocal_free(struct vlocal *v)
{
	struct vl_flow *f;
	struct vl_op *op;
	bool drain = false;
	unsigned i;

	if (!v)
		return NULL;
	v->closing = true;
	for (i = 0; i < v->n_lanes; i++) {
		struct vlane *l = &v->lanes[i];

		if (!l->has_thread)
			continue;
		lane_settle(l);
		lane_tell(l, LANE_STOP);
		pthread_join(l->thread, NULL);
		l->has_thread = false;
	}
	for (i = 0; i < v->n_lanes; i++) {
		struct vlane *l = &v->lanes[i];

		if (l->qp)
			flush_posted(l);
		/* Given up here or earlier (post_failed()), or slots kept from before a reset. */
		drain |= l->stale || l->retired;
	}
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
	for (i = 0; i < v->n_lanes; i++) {
		if (v->lanes[i].qp)
			vx_destroy_qp(v->lanes[i].qp);
		v->lanes[i].qp = NULL;
	}
	/*
	 * A completion the device made for a WR that was given up (here, or
	 * when a refused post could not be fenced) may still be on the CQ, and
	 * it names a slot: take it while the slots are here (each is retired
	 * already, so it is ignored), not in whoever drains the CQ next. With
	 * every WR accounted for by its completion, none of ours can come.
	 */
	if (drain)
		rdev_cq_drain(v->d);
	for (i = 0; i < v->n_lanes; i++) {
		retired_free(&v->lanes[i], true);
		free(v->lanes[i].slots);
		free(v->lanes[i].wrv);
		free(v->lanes[i].sgev);
	}
	free(v->lanes);
	rdev_cq_unclaim(v->d, v->cq_claimed);
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
	m->may_fault = access & VMR_MAY_FAULT;
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

bool vmr_may_fault(const struct vmr *m)
{
	return m->may_fault;
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

static void post_pending(struct vlane *l, bool self);

/*
 * @l's QP is broken with nothing on its send queue: reset it and bring it
 * back. If WRs were given up since its last reset (give_up_posted()), a
 * completion the device made for one of them may still be on the CQ, naming
 * its slot, and it would retire whatever WR was posted in that slot since as
 * done. The QP makes no more after the reset, so the new WRs take fresh
 * slots, and the old ones (all empty: such a completion is ignored) stay
 * until a drain has emptied the CQ since then.
 */
static void recover(struct vlane *l)
{
	struct rdev_info info;
	struct vl_retired *old = NULL;
	struct vl_slot *slots = NULL;
	uint64_t now = mono_ns();

	if (now < l->retry_ns)
		return; /* it failed moments ago: VL_RETRY_NS */
	retired_free(l, false);
	if (l->stale && (!(old = malloc(sizeof(*old))) || !(slots = slots_new(l))))
		goto failed;
	rdev_query(l->v->d, &info);
	if (bring_up(l, (uint8_t)info.port) < 0)
		goto failed;
	if (old) {
		old->slots = l->slots;
		old->emptied = rdev_cq_emptied(l->v->d);
		old->next = l->retired;
		l->retired = old;
		l->slots = slots;
		l->stale = false;
	}
	l->broken = false;
	l->recoveries++;
	l->retry_ns = 0;
	return;
failed:
	free(old);
	free(slots);
	l->retry_ns = now + VL_RETRY_NS;
}

static struct vl_flow **flow_slot(struct vlocal *v, const void *key)
{
	uintptr_t h = (uintptr_t)key;

	h ^= h >> 17;
	h *= 0x9e3779b97f4a7c15ull;
	return &v->flows[(h >> 40) & (VL_FLOW_BUCKETS - 1)];
}

/* The working lane with the fewest flows; ties go round. A broken lane only if all are. */
static struct vlane *lane_pick(struct vlocal *v)
{
	struct vlane *best = NULL;
	unsigned i;

	for (i = 0; i < v->n_lanes; i++) {
		struct vlane *l = &v->lanes[(v->next_lane + i) % v->n_lanes];

		if (!best || (best->broken && !l->broken) ||
		    (best->broken == l->broken && l->n_flows < best->n_flows))
			best = l;
	}
	v->next_lane = (unsigned)(best - v->lanes + 1) % v->n_lanes;
	return best;
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
	f->lane = lane_pick(v);
	if (f->lane->n_flows++ == 0)
		v->active_lanes++;
	f->hnext = *pp;
	*pp = f;
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
	if (--f->lane->n_flows == 0)
		v->active_lanes--;
	f->hnext = v->spare_flows;
	v->spare_flows = f;
}

/* @f has ops waiting: give it a turn after the flows already waiting on its lane. */
static void flow_wait(struct vl_flow *f)
{
	struct vlane *l = f->lane;

	if (f->waiting)
		return;
	f->waiting = true;
	f->rr_next = NULL;
	if (l->rr_tail)
		l->rr_tail->rr_next = f;
	else
		l->rr_head = f;
	l->rr_tail = f;
	l->n_waiting++;
}

static struct vl_flow *flow_next_turn(struct vlane *l)
{
	struct vl_flow *f = l->rr_head;

	l->rr_head = f->rr_next;
	if (!l->rr_head)
		l->rr_tail = NULL;
	f->waiting = false;
	l->n_waiting--;
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
static void op_check(struct vl_op *op)
{
	if (op->inflight || (!op->all_posted && !op->status))
		return;
	unqueue(op); /* an op that failed part-way leaves its flow's queue too */
	op_finish(op);
}

/* One WR of its op (or a fence) is done: @st 0 or its failure. */
static void retire(struct vlane *l, struct vl_slot *s, int st)
{
	struct vl_op *op = s->op;
	struct vl_flow *f;

	l->s_tail++;
	l->posted--;
	if (s->fence) {
		s->fence = false;
		return;
	}
	f = op->f;
	s->op = NULL;
	l->posted_bytes -= s->bytes;
	f->wrs--;
	op->inflight--;
	if (st && !op->status)
		op->status = st;
	op_check(op);
	flow_put(l->v, f);
}

/*
 * The send queue completes in order, and only some WRs are signalled: a
 * completion retires every slot up to its own, the earlier ones with
 * success (an error or a flush has a completion of its own).
 */
static void on_wc(struct rdev_wr *w, const struct ibv_wc *wc)
{
	struct vl_slot *s = (struct vl_slot *)w, *t;
	struct vlane *l = s->l;

	/*
	 * A WR taken back after a failed post (its op already reported) that
	 * the device ran after all: nothing of ours is on that slot.
	 */
	if (!s->op && !s->fence)
		return;
	if (wc->status != IBV_WC_SUCCESS)
		l->broken = true;
	/* Until @s is retired (here, or by whatever a done callback did). */
	while ((s->op || s->fence) && l->s_head != l->s_tail) {
		t = &l->slots[l->s_tail % l->depth];
		retire(l, t, t == s ? wc_status(wc->status) : 0);
	}
	if (l->v->closing)
		return;
	if (l->broken && l->posted == 0 && !l->handed)
		recover(l);
	if (!l->v->deferred)
		post_pending(l, true);
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
static void add_chunk(struct vlane *l, struct vl_op *op, uint32_t i, uint64_t n)
{
	struct vlocal *v = l->v;
	struct vl_slot *s = &l->slots[l->s_head % l->depth];
	struct ibv_send_wr *wr = &l->wrv[i];
	struct ibv_sge *sge = &l->sgev[i];

	memset(wr, 0, sizeof(*wr));
	sge->addr = op->laddr + op->posted_bytes;
	sge->length = (uint32_t)n;
	sge->lkey = op->lkey;
	wr->wr_id = (uintptr_t)&s->w;
	wr->sg_list = sge;
	wr->num_sge = n ? 1 : 0;
	wr->opcode = op->opcode;
	/* Small writes are copied into the WR: the device need not look the data up. */
	if (op->opcode == IBV_WR_RDMA_WRITE && n && n <= v->max_inline && !op->no_inline)
		wr->send_flags |= IBV_SEND_INLINE;
	wr->wr.rdma.remote_addr = op->raddr + op->posted_bytes;
	wr->wr.rdma.rkey = op->rkey;
	s->op = op;
	s->bytes = (uint32_t)n;
	op->posted_bytes += n;
	op->inflight++;
	op->all_posted = op->posted_bytes == op->len;
	op->f->wrs++;
	l->s_head++;
	l->posted++;
	l->posted_bytes += n;
}

/*
 * A failed post: the WRs from @first on were never queued. Their ops fail;
 * one that has nothing else on the send queue is reported now (whether or
 * not it had left its flow's queue), the others by their last completion.
 */
static void take_back(struct vlane *l, uint32_t first, uint32_t n, int err)
{
	uint32_t i;

	for (i = n; i-- > first;) {
		struct vl_slot *s = &l->slots[(l->s_head - 1) % l->depth];
		struct vl_op *op = s->op;
		struct vl_flow *f = op->f;

		s->op = NULL;
		l->s_head--;
		l->posted--;
		l->posted_bytes -= s->bytes;
		f->wrs--;
		op->inflight--;
		op->posted_bytes -= s->bytes;
		op->all_posted = false;
		if (!op->status)
			op->status = err;
		op_check(op); /* once: only its first WR here brings it to 0 */
		flow_put(l->v, f);
	}
}

/* Room on the send queue for one more WR, keeping the fairness bound. */
static bool room(const struct vlane *l)
{
	if (l->broken || l->posted >= l->depth)
		return false;
	if (!l->posted_bytes)
		return true;
	return l->posted_bytes < (l->n_flows > 1 ? VL_SHARED_BYTES : VL_ALONE_BYTES);
}

/*
 * Whether a post list of @n WRs and @bytes of payload takes one more:
 * @capped (one session submitting) by VL_ALONE_*, else up to @depth.
 */
static bool list_open(bool capped, uint32_t n, uint64_t bytes, uint32_t depth)
{
	if (!capped)
		return n < depth;
	return n < VL_ALONE_MAX_WRS && (n < VL_ALONE_WRS || bytes < VL_ALONE_MIN_BYTES);
}

/*
 * @l is broken and could not be brought back (recover()): the ops waiting
 * for it were never posted, and nothing would post them. They fail.
 */
static void fail_waiting(struct vlane *l, int err)
{
	struct vl_flow *f;
	struct vl_op *op;

	while (l->rr_head) {
		f = flow_next_turn(l);
		while ((op = f->head)) {
			if (!op->status)
				op->status = err;
			unqueue(op);
			op_check(op);
		}
		f->deficit = 0;
		flow_put(l->v, f);
	}
}

/*
 * A signalled zero-length WRITE behind what is on @l's send queue, its QP in
 * the error state: the device flushes it with a completion, and that
 * completion retires every WR before it (on_wc()).
 */
static int post_fence(struct vlane *l)
{
	struct vl_slot *s = &l->slots[l->s_head % l->depth];
	struct ibv_send_wr wr = { 0 }, *bad = NULL;
	int r;

	wr.wr_id = (uintptr_t)&s->w;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	r = vx_post_send(l->qp, &wr, &bad);
	if (r < 0)
		return r;
	s->op = NULL;
	s->bytes = 0;
	s->fence = true;
	l->s_head++;
	l->posted++;
	return 0;
}

/*
 * A post of @n WRs failed at WR @first: those from @first on were never
 * queued (take_back()). The ones before it went to the device, perhaps none
 * of them signalled, and on rxe they may even be done already, leaving no
 * completion behind: a flush would not report them. So the QP goes to the
 * error state and a fence follows them (post_fence()), whose completion
 * retires them all; the lane recovers once it is in. (Without the fence the
 * lane stayed broken for good, its flows' ops waiting forever.) If the QP
 * will not go to the error state or take the fence, they are given up.
 */
static void post_failed(struct vlane *l, uint32_t first, uint32_t n)
{
	take_back(l, first, n, -EIO);
	if (!first || !l->posted)
		return;
	l->broken = true;
	if (to_error(l) < 0 || post_fence(l) < 0)
		give_up_posted(l); /* recover() then resets the QP */
}

/*
 * Post what waits, as one post list (one system call on rxe however many
 * WRs; capped while one session submits, VL_ALONE_WRS): the waiting
 * flows take turns, each posting up to its deficit; a flow with no one
 * waiting behind it posts as long as there is room. @self: post from this
 * thread, else hand the list to the lane's poster thread.
 */
static void post_pending(struct vlane *l, bool self)
{
	struct vlocal *v = l->v;
	struct ibv_send_wr *bad = NULL;
	struct vl_flow *f;
	struct vl_op *op;
	uint32_t n = 0, i;
	uint64_t bytes = 0;
	bool capped;
	int r;

	/*
	 * Still posting: what waits goes out at the engine's next pass, which
	 * comes (the engine does not sleep while vlocal_busy()).
	 */
	if (!lane_collect(l))
		return;
	if (l->broken && l->posted == 0) {
		recover(l); /* on_wc() did not while a list was handed over */
		if (l->broken) {
			fail_waiting(l, -EIO);
			return;
		}
	}
	capped = !(v->active_lanes > 1 || v->shared);
	while (l->rr_head && room(l) && list_open(capped, n, bytes, l->depth)) {
		bool over = false;

		f = flow_next_turn(l);
		if (!f->resume)
			f->deficit += VL_QUANTUM;
		f->resume = false;
		while ((op = f->head) && room(l) && list_open(capped, n, bytes, l->depth)) {
			uint64_t len;

			if (op->status) { /* failed part-way: nothing more of it is posted */
				unqueue(op);
				op_check(op);
				continue;
			}
			len = chunk_len(v, op);
			if (len > f->deficit && l->n_waiting) {
				over = true; /* its turn is over: the others first */
				break;
			}
			f->deficit -= len < f->deficit ? len : f->deficit;
			add_chunk(l, op, n++, len);
			bytes += len;
			if (op->all_posted)
				unqueue(op); /* it ends with its completions */
		}
		if (f->head) {
			/*
			 * Cut short by the list's cap or the send queue's room,
			 * it waits behind the others like any flow, but its next
			 * turn only goes on with what is left of this one: a new
			 * quantum on top would let it build up credit (a flow on
			 * its own, capped at VL_ALONE_WRS a list, would gain
			 * ~127 KiB a list) and post that much in one turn later.
			 */
			f->resume = !over;
			flow_wait(f);
		} else {
			f->deficit = 0;
		}
		flow_put(v, f);
	}
	if (!n)
		return;
	for (i = 0; i < n; i++) {
		bool last = i + 1 == n;

		l->wrv[i].next = last ? NULL : &l->wrv[i + 1];
		l->unsignaled_bytes += l->sgev[i].length;
		if (last || ++l->unsignaled >= VL_SIGNAL_EVERY ||
		    l->unsignaled_bytes >= VL_SIGNAL_BYTES) {
			l->wrv[i].send_flags |= IBV_SEND_SIGNALED;
			l->unsignaled = 0;
			l->unsignaled_bytes = 0;
		}
	}
	/* Outside the engine's pass (not deferred) nothing would collect a hand-over soon. */
	if (l->has_thread && (!self || (v->deferred && (v->active_lanes > 1 || v->shared) &&
					(n > VL_SELF_WRS || bytes > VL_SELF_BYTES)))) {
		l->post_n = n;
		l->handed = true;
		lane_tell(l, LANE_POST);
		return;
	}
	r = vx_post_send(l->qp, l->wrv, &bad);
	if (r < 0)
		post_failed(l, bad ? (uint32_t)(bad - l->wrv) : 0, n);
}

/*
 * The end of a pass: every lane with work posts. With several, all but the
 * last go to their poster threads; this thread posts the last itself if it
 * is light (VL_SELF_WRS: no hand-over on a latency path). With one lane,
 * this thread posts, unless several sessions submit and the list is heavy.
 */
void vlocal_flush(struct vlocal *v)
{
	struct vlane *prev = NULL;
	unsigned i;

	for (i = 0; v && i < v->n_lanes; i++) {
		struct vlane *l = &v->lanes[i];

		if (!lane_collect(l))
			continue;
		if (!l->rr_head) {
			if (l->broken && !l->posted)
				post_pending(l, true); /* only a recovery to try */
			continue;
		}
		if (!room(l) && !(l->broken && !l->posted))
			continue; /* nothing it could post now */
		if (prev)
			post_pending(prev, false);
		prev = l;
	}
	if (prev)
		post_pending(prev, true);
}

uint32_t vlocal_max_inline(const struct vlocal *v)
{
	return v ? v->max_inline : 0;
}

bool vlocal_busy(const struct vlocal *v)
{
	unsigned i;

	for (i = 0; v && i < v->n_lanes; i++) {
		const struct vlane *l = &v->lanes[i];

		if (l->handed || (l->rr_head && !l->posted && !l->broken))
			return true;
	}
	return false;
}

bool vlocal_wait_post(struct vlocal *v, uint64_t max_ns)
{
	uint32_t seq;
	bool posting = false;
	unsigned i;

	if (!v)
		return false;
	seq = __atomic_load_n(&v->posts_done, __ATOMIC_SEQ_CST);
	for (i = 0; i < v->n_lanes; i++) {
		if (!v->lanes[i].handed)
			continue;
		if (__atomic_load_n(&v->lanes[i].cmd, __ATOMIC_ACQUIRE) == LANE_IDLE)
			return true; /* done, not yet collected: the next pass hands it more */
		posting = true;
	}
	if (!posting)
		return false;
	__atomic_store_n(&v->post_waiter, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&v->posts_done, __ATOMIC_SEQ_CST) == seq) {
		struct timespec ts = { (time_t)(max_ns / 1000000000u),
				       (long)(max_ns % 1000000000u) };

		futex(&v->posts_done, FUTEX_WAIT_PRIVATE, seq, &ts);
	}
	__atomic_store_n(&v->post_waiter, 0, __ATOMIC_RELAXED);
	return true;
}

void vlocal_defer(struct vlocal *v, bool deferred)
{
	if (v)
		v->deferred = deferred;
}

void vlocal_shared(struct vlocal *v, bool shared)
{
	if (v)
		v->shared = shared;
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
	op->no_inline = l->may_fault;
	op->raddr = (uintptr_t)rm->mr->addr + roff;
	op->rkey = rm->mr->rkey;
	op->len = len;
	if (f->tail)
		f->tail->next = op;
	else
		f->head = op;
	f->tail = op;
	flow_wait(f);
	if (!v->deferred)
		post_pending(f->lane, true);
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

uint32_t vlocal_qp_num(const struct vlocal *v, unsigned lane)
{
	return lane < v->n_lanes ? v->lanes[lane].qp->qp_num : 0;
}

unsigned vlocal_lanes(const struct vlocal *v)
{
	return v->n_lanes;
}

unsigned vlocal_recoveries(const struct vlocal *v)
{
	unsigned i, n = 0;

	for (i = 0; i < v->n_lanes; i++)
		n += v->lanes[i].recoveries;
	return n;
}
