/* SPDX-License-Identifier: MIT */
/*
 * TAP test of daemon/rdma/verbs_local.c on a real RDMA device (Soft-RoCE in the
 * test guest): RDMA WRITE and READ through the loopback RC QP at sizes from
 * 1 B to 64 MiB with checksums, a remote access error and the recovery after
 * it, many more ops than the send queue holds, fairness between flows (one
 * flow's backlog, of zero-length ops too, or huge op does not hold up
 * another's op; each flow's ops complete in order), and exactly one report
 * per op when the QP is torn down with work outstanding (-EIO for an op
 * torn down between its chunks). Then with four lanes (QPs): flows spread
 * over them, each flow's ops in order and byte-exact while all lanes are
 * busy, who posts a lone flow's lists (the calling thread, or its lane's
 * thread while several sessions submit), a list refused part-way in a
 * lane's thread, and one report per op at tear-down. With refusals
 * injected (vx.h, RP_VX_FAULTS): a post list refused part-way (also with the
 * QP refusing the error state), a queue pair that cannot be brought back
 * (retried at most every 10 ms), and one freed while it refuses the error
 * state (also after WRs were given up), and a QP brought back after WRs
 * were given up whose late completion must not retire newer WRs. Exits 77
 * without a device.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../daemon/base/util.h"
#include "../../daemon/rdma/rdma_dev.h"
#include "../../daemon/rdma/verbs_local.h"
#include "../../daemon/rdma/vx.h"
#include "../unit/tap.h"

#define BIG (64u << 20)
#define NOPS 2000

static int reports[NOPS + 16];
static int statuses[NOPS + 16];
static unsigned seq[NOPS + 16]; /* done_count when it was reported */
static unsigned done_count;
/* Two submitters: flow keys. */
static const char flow_a, flow_b;
#define FA ((const void *)&flow_a)
#define FB ((const void *)&flow_b)

static void on_done(void *user, int status)
{
	uintptr_t i = (uintptr_t)user;

	reports[i]++;
	statuses[i] = status;
	seq[i] = ++done_count;
}

/* vx.h's fault injection (this program is built with RP_VX_FAULTS). */
int vx_fault_post_at = -1, vx_fault_modify;
/* Whether the last refused list was posted by a thread other than main()'s. */
static pthread_t main_thread;
static bool refused_elsewhere;
/* The send flags of the first WR of the last list that went through the hook. */
static unsigned last_flags;

int vx_fault_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct ibv_send_wr *w = wr, *prev = NULL;
	int i, r;

	for (i = 0; w && i < vx_fault_post_at; i++) {
		prev = w;
		w = w->next;
	}
	vx_fault_post_at = -1;
	refused_elsewhere = !pthread_equal(pthread_self(), main_thread);
	last_flags = wr ? wr->send_flags : 0;
	if (!w)
		return vx_ret(ibv_post_send(qp, wr, bad)); /* shorter: not refused */
	if (prev) { /* the WRs before the refused one go to the device */
		prev->next = NULL;
		r = ibv_post_send(qp, wr, bad);
		prev->next = w;
		if (r)
			return vx_ret(r);
	}
	*bad = w;
	return -ENOMEM; /* as a provider whose send queue is full */
}

static int wait_done(struct rdev *d, unsigned want)
{
	unsigned spins = 0;

	while (done_count < want && spins++ < 50000000u)
		if (rdev_cq_drain(d) < 0)
			return -1;
	return done_count >= want ? 0 : -1;
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	while (n--)
		h = (h ^ *p++) * 1099511628211ull;
	return h;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)((i * 2654435761u + seed) >> 7);
}

static void sizes(struct rdev *d, struct vlocal *v, struct vmr *ms, unsigned char *src,
		  struct vmr *md, unsigned char *dst, struct vmr *mb, unsigned char *back)
{
	static const uint64_t sz[] = { 1, 4096, 1u << 20, BIG };
	unsigned i;

	for (i = 0; i < 4; i++) {
		uint64_t n = sz[i];
		unsigned base = done_count;

		fill(src, n, i + 1);
		memset(dst, 0, n);
		memset(back, 0, n);
		tap_ok(vlocal_write(v, ms, 0, md, 0, n, FA, (void *)(uintptr_t)(i + 1)) == 0 &&
			       wait_done(d, base + 1) == 0 && statuses[i + 1] == 0 &&
			       fnv1a(src, n) == fnv1a(dst, n),
		       "RDMA WRITE of %llu bytes lands with the same checksum",
		       (unsigned long long)n);
		tap_ok(vlocal_read(v, mb, 0, md, 0, n, FA, (void *)(uintptr_t)(i + 5)) == 0 &&
			       wait_done(d, base + 2) == 0 && statuses[i + 5] == 0 &&
			       fnv1a(src, n) == fnv1a(back, n),
		       "RDMA READ of %llu bytes reads it back", (unsigned long long)n);
	}
}

/*
 * One write of @n bytes from @src's MR through vx.h's hook (it posts the
 * list as it is and notes its flags): 1 if it landed exactly, with
 * IBV_SEND_INLINE set as @inl says.
 */
static int write_flags(struct rdev *d, struct vlocal *v, struct vmr *src_mr, unsigned char *src,
		       struct vmr *md, unsigned char *dst, uint64_t n, bool inl, unsigned seed)
{
	unsigned base = done_count;

	fill(src, n, seed);
	memset(dst, 0, n + 1);
	statuses[16] = 12345;
	last_flags = ~0u;
	vx_fault_post_at = 1 << 30; /* past the list's end: nothing refused */
	return vlocal_write(v, src_mr, 0, md, 0, n, FA, (void *)(uintptr_t)16) == 0 &&
	       wait_done(d, base + 1) == 0 && statuses[16] == 0 && fnv1a(src, n) == fnv1a(dst, n) &&
	       dst[n] == 0 && last_flags != ~0u && !!(last_flags & IBV_SEND_INLINE) == inl;
}

/*
 * [verbs] inline_size: asked 0, nothing goes inline; asked more than the
 * device takes (rxe: 512 B), the QP is made with the most the halving finds
 * instead of none. Writes up to the granted size go inline, longer ones by
 * reference, and both land exactly; a region that may fault (hugetlbfs:
 * VMR_MAY_FAULT) never goes inline.
 */
static void inline_sizes(struct rdev *d, struct vmr *ms, unsigned char *src, struct vmr *md,
			 unsigned char *dst)
{
	static const uint32_t ask[] = { 0, 512, 4096 }, want[] = { 0, 512, 512 };
	static const uint64_t sz[] = { 1, 300, 512, 513 };
	struct vmr *mf = NULL;
	unsigned i, k;

	for (i = 0; i < 3; i++) {
		struct vlocal *v = NULL;
		char why[256];
		int r = vlocal_new(d, 64, 1, -1, ask[i], on_done, &v, why, sizeof(why));
		bool ok = r == 0;
		uint32_t got = vlocal_max_inline(v);

		tap_ok(ok && got == want[i],
		       "inline_size %u: the loopback QP takes %u B inline (%s)", ask[i], got,
		       r ? why : "ok");
		for (k = 0; ok && k < 4; k++)
			ok = write_flags(d, v, ms, src, md, dst, sz[k], sz[k] <= got, 40 + k);
		tap_ok(ok,
		       "with it, writes of 1, 300, 512 and 513 B land exactly, inline up to %u B",
		       got);
		if (i == 1 && ok) {
			ok = vmr_reg(v, src, 4096, VMR_MAY_FAULT, &mf) == 0 &&
			     write_flags(d, v, mf, src, md, dst, 8, false, 50) &&
			     write_flags(d, v, ms, src, md, dst, 8, true, 51);
			tap_ok(ok,
			       "8 B from memory that may fault go by reference, not inline, and "
			       "land; from the same memory registered without the flag, inline");
			mf = vmr_dereg(mf);
		}
		vlocal_free(v);
	}
}

/*
 * A QP transition the device refuses must come back as a negative errno,
 * whatever errno happens to hold: ibv_modify_qp() returns the error number
 * and need not set errno (code that returned -errno reported success).
 */
static void failed_transition(struct rdev *d)
{
	struct ibv_qp_init_attr ia = { 0 };
	struct ibv_qp_attr a = { 0 };
	struct ibv_qp *qp = NULL;
	int r;

	ia.send_cq = ia.recv_cq = rdev_cq(d);
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	tap_ok(vx_create_qp(rdev_pd(d), &ia, &qp) == 0, "a scratch RC QP is created");
	if (!qp)
		return;
	a.qp_state = IBV_QPS_RTS; /* RESET -> RTS is not a legal transition */
	errno = 0;
	r = vx_modify_qp(qp, &a, IBV_QP_STATE);
	tap_ok(r < 0, "RESET -> RTS is refused by the device and reported as %d (%s), not success",
	       r, strerror(-r));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 200; /* no such port */
	errno = 0;
	r = vx_modify_qp(qp, &a,
			 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	tap_ok(r < 0, "RESET -> INIT on port 200 is refused and reported as %d (%s)", r,
	       strerror(-r));
	errno = 0;
	tap_ok(vx_ret(EINVAL) == -EINVAL && vx_ret(0) == 0,
	       "a positive error number becomes its negative with errno 0");
	vx_destroy_qp(qp);
}

/*
 * The send queue is one FIFO shared by every session: a flow that submits
 * behind another's backlog must get its turn, not wait for all of it.
 */
/* As wait_done(), posting what waits as the engine does at the end of each pass. */
static int wait_done_deferred(struct rdev *d, struct vlocal *v, unsigned want)
{
	unsigned spins = 0;

	while (done_count < want && spins++ < 50000000u) {
		vlocal_flush(v);
		if (rdev_cq_drain(d) < 0)
			return -1;
	}
	while (vlocal_busy(v))
		vlocal_flush(v);
	return done_count >= want ? 0 : -1;
}

static void fairness(struct rdev *d, struct vlocal *v, struct vmr *ms, struct vmr *md)
{
	unsigned i, base, once, before, a_n = 600;

	memset(reports, 0, sizeof(reports));
	base = done_count;
	for (i = 16; i < 16 + a_n; i++)
		if (vlocal_write(v, ms, 0, md, 0, 1u << 16, FA, (void *)(uintptr_t)i) < 0)
			break;
	tap_ok(i == 16 + a_n, "flow A queues %u WRITEs of 64 KiB (%u MiB)", a_n, a_n / 16);
	tap_ok(vlocal_write(v, ms, 0, md, 1u << 20, 1u << 16, FB, (void *)(uintptr_t)1000) == 0,
	       "flow B queues one WRITE behind them");
	tap_ok(wait_done(d, base + a_n + 1) == 0, "all %u complete", a_n + 1);
	for (once = 1, before = 0, i = 16; i < 16 + a_n; i++) {
		once &= reports[i] == 1 && statuses[i] == 0;
		once &= i == 16 || seq[i] > seq[i - 1]; /* in A's order */
		before += seq[i] < seq[1000];
	}
	tap_ok(once && reports[1000] == 1 && statuses[1000] == 0,
	       "each reported once, OK, and A's in the order A submitted them");
	tap_ok(before < 150, "B's WRITE completed after %u of A's %u, not after all of them",
	       before, a_n);

	/*
	 * The same with zero-length WRITEs, queued and flushed as the engine
	 * does: they use up none of A's deficit, so only the list's cap ends
	 * A's turns, and B must still get one.
	 */
	memset(reports, 0, sizeof(reports));
	base = done_count;
	vlocal_defer(v, true);
	for (i = 16; i < 16 + a_n; i++)
		if (vlocal_write(v, ms, 0, md, 0, 0, FA, (void *)(uintptr_t)i) < 0)
			break;
	once = i == 16 + a_n &&
	       vlocal_write(v, ms, 0, md, 1u << 20, 4096, FB, (void *)(uintptr_t)1000) == 0;
	tap_ok(once && wait_done_deferred(d, v, base + a_n + 1) == 0,
	       "flow A's %u zero-length WRITEs and flow B's 4 KiB WRITE behind them complete", a_n);
	vlocal_defer(v, false);
	for (once = 1, before = 0, i = 16; i < 16 + a_n; i++) {
		once &= reports[i] == 1 && statuses[i] == 0;
		once &= i == 16 || seq[i] > seq[i - 1];
		before += seq[i] < seq[1000];
	}
	tap_ok(once && reports[1000] == 1 && statuses[1000] == 0,
	       "each reported once, OK, and A's in the order A submitted them");
	tap_ok(before < 150,
	       "B's WRITE completed after %u of A's %u zero-length WRITEs, not after all", before,
	       a_n);

	/* One huge op goes out in chunks: a small op of another flow passes it. */
	base = done_count;
	tap_ok(vlocal_write(v, ms, 0, md, 0, BIG, FA, (void *)(uintptr_t)20) == 0 &&
		       vlocal_write(v, ms, 0, md, BIG - 4096, 4096, FB, (void *)(uintptr_t)21) ==
			       0 &&
		       wait_done(d, base + 2) == 0 && statuses[20] == 0 && statuses[21] == 0,
	       "a 64 MiB WRITE of flow A and a 4 KiB WRITE of flow B both complete");
	tap_ok(seq[21] < seq[20], "the 4 KiB WRITE submitted second completed first");

	/*
	 * A flow on its own keeps at most 4 MiB on the send queue, so one that
	 * starts behind it waits for about that much (once a second flow is
	 * there, the first gets no room until it is under 2 MiB).
	 */
	memset(reports, 0, sizeof(reports));
	base = done_count;
	for (i = 16; i < 48; i++)
		if (vlocal_write(v, ms, 0, md, 0, 1u << 20, FA, (void *)(uintptr_t)i) < 0)
			break;
	once = i == 48 &&
	       vlocal_write(v, ms, 0, md, BIG - 4096, 4096, FB, (void *)(uintptr_t)1000) == 0;
	tap_ok(once && wait_done(d, base + 33) == 0,
	       "flow A's 32 WRITEs of 1 MiB and flow B's 4 KiB WRITE behind them complete");
	for (before = 0, i = 16; i < 48; i++)
		before += seq[i] < seq[1000];
	tap_ok(reports[1000] == 1 && before <= 6,
	       "B's WRITE completed after %u of A's (a lone flow had at most 4 MiB posted)",
	       before);
}

/*
 * Four lanes: four flows land on four different QPs; all four write their
 * own 1 MiB stripe in 4 KiB ops at once, deferred and flushed as the engine
 * does (so the lanes' poster threads post), and each flow's ops complete in
 * its order, each once, and the stripes are byte-exact.
 */
static void refused_list(struct rdev *d, struct vlocal *v, struct vmr *ms, struct vmr *md,
			 unsigned char *src, unsigned char *dst, bool no_error_state);

#define LANE_OPS 256
static void lanes(struct rdev *d, struct vmr *ms, unsigned char *src, struct vmr *md,
		  unsigned char *dst)
{
	static const char keys[4];
	struct vlocal *v = NULL;
	char why[256];
	unsigned i, k, base, once = 1, inorder = 1, qps = 1;
	int r;

	r = vlocal_new(d, 64, 4, -1, 512, on_done, &v, why, sizeof(why));
	tap_ok(r == 0 && vlocal_lanes(v) == 4, "four loopback QPs connect to themselves (%s)",
	       r ? why : "ok");
	if (r)
		return;
	for (k = 1; k < 4; k++)
		qps &= vlocal_qp_num(v, k) != vlocal_qp_num(v, k - 1) && vlocal_qp_num(v, k);
	tap_ok(qps && vlocal_qp_num(v, 4) == 0, "they are four QPs");
	fill(src, 4u << 20, 99);
	memset(dst, 0, 4u << 20);
	memset(reports, 0, sizeof(reports));
	base = done_count;
	vlocal_defer(v, true);
	for (i = 0; i < LANE_OPS; i++)
		for (k = 0; k < 4; k++) {
			uint64_t off = ((uint64_t)k << 20) + (uint64_t)i * 4096;

			if (vlocal_write(v, ms, off, md, off, 4096, &keys[k],
					 (void *)(uintptr_t)(16 + k * LANE_OPS + i)) < 0)
				once = 0;
		}
	tap_ok(once && wait_done_deferred(d, v, base + 4 * LANE_OPS) == 0,
	       "%u 4 KiB WRITEs of four flows complete", 4 * LANE_OPS);
	for (k = 0; k < 4; k++)
		for (i = 0; i < LANE_OPS; i++) {
			unsigned u = 16 + k * LANE_OPS + i;

			once &= reports[u] == 1 && statuses[u] == 0;
			inorder &= i == 0 || seq[u] > seq[u - 1];
		}
	tap_ok(once, "each reported exactly once, all OK");
	tap_ok(inorder, "each flow's WRITEs completed in the order it submitted them");
	tap_ok(fnv1a(src, 4u << 20) == fnv1a(dst, 4u << 20), "the four stripes are byte-exact");

	/*
	 * One flow alone: this thread posts its lists itself, unless several
	 * sessions submit (vlocal_shared()); then a heavy list goes to its
	 * lane's thread (a handed list counts as busy until it is collected),
	 * and a single small write still does not.
	 */
	memset(reports, 0, sizeof(reports));
	base = done_count;
	once = 1;
	for (i = 0; i < 17; i++) {
		uint32_t len = i == 16 ? 64 : 4096;
		bool busy;

		if (i == 8)
			vlocal_shared(v, true);
		if (vlocal_write(v, ms, (uint64_t)i * 4096, md, (uint64_t)i * 4096, len, &keys[0],
				 (void *)(uintptr_t)(16 + i)) < 0)
			once = 0;
		if (i != 7 && i != 15 && i != 16)
			continue;
		vlocal_flush(v);
		busy = vlocal_busy(v);
		tap_ok(busy == (i == 15), "one flow, %s: %s is posted by %s",
		       i < 8 ? "one session" : "several sessions",
		       i == 16 ? "a single 64 B WRITE" : "a list of eight 4 KiB WRITEs",
		       busy ? "its lane's thread" : "the calling thread");
		if (wait_done_deferred(d, v, base + i + 1) < 0)
			once = 0;
	}
	vlocal_shared(v, false);
	for (i = 0; i < 17; i++)
		once &= reports[16 + i] == 1 && statuses[16 + i] == 0 &&
			(i == 0 || seq[16 + i] > seq[16 + i - 1]);
	tap_ok(once, "those 17 WRITEs complete once each, in order");

	/* Several sessions: a list refused in its lane's thread, handled as on one lane. */
	vlocal_shared(v, true);
	refused_list(d, v, ms, md, src, dst, false);
	refused_list(d, v, ms, md, src, dst, true);
	vlocal_shared(v, false);

	memset(reports, 0, sizeof(reports));
	base = done_count;
	for (i = 0; i < 200; i++)
		vlocal_write(v, ms, 0, md, 0, 1u << 16, &keys[i % 4], (void *)(uintptr_t)(16 + i));
	vlocal_flush(v); /* lists handed to the threads, some maybe still posting */
	v = vlocal_free(v);
	for (once = 1, i = 16; i < 216; i++)
		once &= reports[i] == 1 && (statuses[i] == 0 || statuses[i] == -ECANCELED ||
					    statuses[i] == -ETIMEDOUT);
	tap_ok(once && done_count == base + 200,
	       "freeing four busy lanes with 200 ops reports each exactly once");
}

/*
 * The 4th of 8 WRITEs refused (vx.h): the three before it are on the send
 * queue, none of them signalled, and nothing after them will be. With
 * @no_error_state the QP also refuses the error state, and those three are
 * given up (outcome unknown) rather than left on the lane for good. Either
 * way each of the 8 is reported once, the QP recovers, the next WRITE lands.
 */
static void refused_list(struct rdev *d, struct vlocal *v, struct vmr *ms, struct vmr *md,
			 unsigned char *src, unsigned char *dst, bool no_error_state)
{
	const char *how = no_error_state ? " and the QP will not go to the error state" : "";
	const char *by = vlocal_lanes(v) > 1 ? " by its lane's thread" : "";

	refused_elsewhere = !(vlocal_lanes(v) > 1); /* wrong until the refusal sets it */
	unsigned i, base = done_count, once, rec = vlocal_recoveries(v);

	memset(reports, 0, sizeof(reports));
	vlocal_defer(v, true);
	for (i = 0; i < 8; i++)
		vlocal_write(v, ms, i * 64, md, i * 64, 64, FA, (void *)(uintptr_t)(16 + i));
	vx_fault_post_at = 3;
	vx_fault_modify = no_error_state;
	vlocal_flush(v);
	once = wait_done_deferred(d, v, base + 8) == 0 && vx_fault_modify == 0;
	once &= refused_elsewhere == (vlocal_lanes(v) > 1);
	tap_ok(once, "a post list of 8 WRITEs refused at its 4th%s%s: all 8 are reported (%u)", by,
	       how, done_count - base);
	vlocal_defer(v, false);
	for (once = 1, i = 0; i < 8; i++)
		once &= reports[16 + i] == 1 &&
			(i >= 3 ? statuses[16 + i] == -EIO
			 : no_error_state
				 ? statuses[16 + i] == -ETIMEDOUT
				 : statuses[16 + i] == 0 || statuses[16 + i] == -ETIMEDOUT);
	tap_ok(once, "each once: the 3 before it %s (%d %d %d), the 5 from it -EIO",
	       no_error_state ? "outcome unknown" : "OK or outcome unknown", statuses[16],
	       statuses[17], statuses[18]);
	fill(src, 4096, 91 + no_error_state);
	base = done_count;
	once = vlocal_write(v, ms, 0, md, 0, 4096, FA, (void *)(uintptr_t)30) == 0 &&
	       wait_done(d, base + 1) == 0 && statuses[30] == 0 &&
	       fnv1a(src, 4096) == fnv1a(dst, 4096);
	tap_ok(once && vlocal_recoveries(v) == rec + 1,
	       "the QP recovered (%u time(s)) and the next WRITE lands",
	       vlocal_recoveries(v) - rec);
}

/*
 * Refusals the device cannot be made to produce, injected (vx.h): a post
 * list refused part-way, and a queue pair that cannot be brought back.
 */
static void refusals(struct rdev *d, struct vlocal *v, struct vmr *ms, struct vmr *md,
		     struct vmr *mro, unsigned char *src, unsigned char *dst)
{
	unsigned i, base, once, rec, tries;
	double t0, ms_taken;

	refused_list(d, v, ms, md, src, dst, false);
	refused_list(d, v, ms, md, src, dst, true);

	/*
	 * A remote access error breaks the QP, and bringing it back fails
	 * (every modify_qp fails for now): the WRITEs waiting behind it fail
	 * with -EIO, as do new ones; recovery is tried at most every 10 ms
	 * (VL_RETRY_NS), not for each of them; once the device lets it, the
	 * QP comes back.
	 */
	memset(reports, 0, sizeof(reports));
	base = done_count;
	rec = vlocal_recoveries(v);
	vx_fault_modify = 1000000;
	vlocal_defer(v, true);
	vlocal_write(v, ms, 0, mro, 0, 64, FA, (void *)(uintptr_t)16);
	vlocal_flush(v);
	for (i = 0; i < 3; i++)
		vlocal_write(v, ms, 0, md, 0, 64, FA, (void *)(uintptr_t)(17 + i));
	tap_ok(wait_done(d, base + 1) == 0 && statuses[16] == -EACCES,
	       "a WRITE into a read-only MR fails with -EACCES");
	once = wait_done_deferred(d, v, base + 4) == 0;
	vlocal_defer(v, false);
	for (i = 0; i < 4; i++)
		once &= reports[16 + i] == 1 && (i == 0 || statuses[16 + i] == -EIO);
	tap_ok(once,
	       "the QP cannot be brought back: the 3 WRITEs waiting behind it fail once, -EIO");
	t0 = mono_ns() / 1e6;
	tries = vx_fault_modify;
	for (once = 1, i = 0; i < 200; i++)
		once &= vlocal_write(v, ms, 0, md, 0, 64, FA, (void *)(uintptr_t)(100 + i)) == 0 &&
			reports[100 + i] == 1 && statuses[100 + i] == -EIO;
	ms_taken = mono_ns() / 1e6 - t0;
	tries -= vx_fault_modify;
	tap_ok(once, "200 WRITEs submitted meanwhile fail at once, each once, -EIO");
	tap_ok(tries <= ms_taken / 10 + 2, "and cost %u recovery attempts in %.1f ms, not one each",
	       tries, ms_taken);
	vx_fault_modify = 0;
	usleep(20000); /* past VL_RETRY_NS */
	fill(src, 4096, 92);
	base = done_count;
	tap_ok(vlocal_write(v, ms, 0, md, 0, 4096, FA, (void *)(uintptr_t)30) == 0 &&
		       wait_done(d, base + 1) == 0 && statuses[30] == 0 &&
		       fnv1a(src, 4096) == fnv1a(dst, 4096) && vlocal_recoveries(v) == rec + 1,
	       "once the device lets it, the QP comes back (once) and the next WRITE lands");
}

/*
 * A new one-lane loopback QP for a tear-down case, its ops deferred (posted
 * by vlocal_flush(), as in the engine's pass), the reports cleared. NULL
 * (after a failed check) if it does not connect.
 */
static struct vlocal *fresh_qp(struct rdev *d)
{
	struct vlocal *v = NULL;
	char why[256];
	int r = vlocal_new(d, 64, 1, -1, 512, on_done, &v, why, sizeof(why));

	tap_ok(r == 0, "a new loopback QP connects to itself (%s)", r ? why : "ok");
	if (r)
		return NULL;
	memset(reports, 0, sizeof(reports));
	vlocal_defer(v, true);
	return v;
}

/*
 * Freed between the chunks of a big op: the chunks done stay done, so the op
 * is reported once as -EIO (nothing more of it was done), not as -ECANCELED
 * (it did not happen).
 */
static void free_mid_op(struct rdev *d, struct vmr *ms, struct vmr *md)
{
	struct vlocal *v;
	unsigned spins = 0, base = done_count;
	int r;

	if (!(v = fresh_qp(d)))
		return;
	r = vlocal_write(v, ms, 0, md, 0, BIG, FA, (void *)(uintptr_t)16);
	vlocal_flush(v); /* its first chunks */
	while (r == 0 && !vlocal_busy(v) && spins++ < 50000000u)
		if (rdev_cq_drain(d) < 0)
			break;
	tap_ok(r == 0 && vlocal_busy(v) && done_count == base,
	       "a 64 MiB WRITE, queued and flushed once: its first chunks are done, it waits");
	v = vlocal_free(v);
	tap_ok(reports[16] == 1 && statuses[16] == -EIO,
	       "freed then, it is reported once, as -EIO (%d), not as not having happened",
	       statuses[16]);
}

/*
 * Freed while the QP will not go to the error state (so nothing is flushed):
 * the WRITEs the device already did are reported by their completion, OK,
 * not given up, and the completion does not stay on the CQ naming a freed
 * slot for whoever drains it next.
 */
static void free_unflushable(struct rdev *d, struct vmr *ms, unsigned char *src, struct vmr *md,
			     unsigned char *dst)
{
	struct vlocal *v;
	unsigned i, spins, base = done_count;
	int left, ok = 1;

	if (!(v = fresh_qp(d)))
		return;
	fill(src, 4096, 55);
	for (i = 16; i < 24; i++)
		ok &= vlocal_write(v, ms, 0, md, 0, 4096, FA, (void *)(uintptr_t)i) == 0;
	vlocal_flush(v); /* one list of 8, its last WR signalled */
	/* The device is done with it (the bytes landed, then a margin); its completion waits. */
	for (spins = 0; fnv1a(src, 4096) != fnv1a(dst, 4096) && spins < 500; spins++)
		usleep(10000);
	usleep(100000);
	ok &= done_count == base;
	vx_fault_modify = 1;
	v = vlocal_free(v);
	left = rdev_cq_drain(d);
	for (i = 16; i < 24; i++)
		ok &= reports[i] == 1 && statuses[i] == 0;
	tap_ok(ok && done_count == base + 8 && vx_fault_modify == 0 && left == 0,
	       "freed while the QP refuses the error state: the 8 WRITEs done are reported once, "
	       "OK (last %d), and nothing of the freed QP is left on the CQ (%d)",
	       statuses[23], left);
	vx_fault_modify = 0;
}

/*
 * On a fresh QP (fresh_qp()), a list of 32 WRITEs of 64 KiB (ops 16 to 47)
 * refused at its 21st while the QP refuses the error state: the 20 before it
 * are given up (outcome unknown) though the device runs them, and the
 * completion of the 16th (signalled: 1 MiB since the last, VL_SIGNAL_BYTES)
 * is left on the CQ, naming slot 15. Returns once those bytes landed.
 */
static struct vlocal *give_up_list(struct rdev *d, struct vmr *ms, unsigned char *src,
				   struct vmr *md, unsigned char *dst, int *ok)
{
	const uint64_t len = 64u << 10;
	unsigned i, spins, base = done_count;
	struct vlocal *v = fresh_qp(d);

	if (!v)
		return NULL;
	vlocal_shared(v, true); /* one list of 32, not capped as a lone session's */
	fill(src, 32 * len, 66);
	for (i = 16; i < 48; i++)
		*ok &= vlocal_write(v, ms, (i - 16) * len, md, (i - 16) * len, len, FA,
				    (void *)(uintptr_t)i) == 0;
	vx_fault_post_at = 20;
	vx_fault_modify = 1;
	vlocal_flush(v);
	*ok &= done_count == base + 32 && vx_fault_modify == 0;
	for (spins = 0; memcmp(src, dst, 20 * len) && spins < 500; spins++)
		usleep(10000);
	usleep(100000); /* and a margin: the device is done with the 20 it took */
	return v;
}

/* Freed then, that completion must not stay on the CQ naming a freed slot. */
static void free_after_give_up(struct rdev *d, struct vmr *ms, unsigned char *src, struct vmr *md,
			       unsigned char *dst)
{
	struct vlocal *v;
	unsigned i;
	int left, ok = 1;

	if (!(v = give_up_list(d, ms, src, md, dst, &ok)))
		return;
	v = vlocal_free(v);
	left = rdev_cq_drain(d);
	for (i = 16; i < 48; i++)
		ok &= reports[i] == 1 && statuses[i] == (i < 36 ? -ETIMEDOUT : -EIO);
	tap_ok(ok && left == 0,
	       "a list refused at its 21st, the QP refusing the error state, then freed: each of "
	       "the 32 reported once (20 outcome unknown, 12 -EIO), nothing left on the CQ (%d)",
	       left);
	vx_fault_modify = 0;
}

/*
 * The QP brought back after that give-up, and its send queue filled round to
 * slot 15 before the CQ is drained: the device's completion for the given-up
 * WR must not retire the new WRs. They write into a read-only MR, so each
 * fails; retired by that completion, they would be reported OK.
 */
static void stale_after_recover(struct rdev *d, struct vmr *ms, unsigned char *src, struct vmr *md,
				unsigned char *dst, struct vmr *mro)
{
	struct vlocal *v;
	unsigned i, base = done_count, failed = 0, once = 1;
	int ok = 1, left;

	if (!(v = give_up_list(d, ms, src, md, dst, &ok)))
		return;
	/* 60 more, in slots 20 to 63 and 0 to 15 of the 64-deep queue: one list. */
	for (i = 48; i < 108; i++)
		ok &= vlocal_write(v, ms, 0, mro, (i - 48) * 64, 64, FA, (void *)(uintptr_t)i) == 0;
	vlocal_flush(v);
	ok &= vlocal_recoveries(v) == 1;
	ok &= wait_done(d, base + 92) == 0;
	for (i = 48; i < 108; i++) {
		once &= reports[i] == 1;
		failed += statuses[i] != 0;
	}
	v = vlocal_free(v);
	left = rdev_cq_drain(d);
	tap_ok(ok && once && failed == 60 && left == 0,
	       "WRs given up, the QP brought back, 60 WRs into a read-only MR posted round to "
	       "the slot of a given-up WR's completion: each reported once, %u of 60 failed, "
	       "nothing left on the CQ (%d)",
	       failed, left);
	vx_fault_modify = 0;
}

int main(void)
{
	unsigned char *src = malloc(BIG), *dst = malloc(BIG), *back = malloc(BIG);
	struct vmr *ms, *md, *mb, *mro;
	struct rdev *d = NULL;
	struct vlocal *v = NULL;
	char why[256];
	unsigned i, base, once;
	int r;

	main_thread = pthread_self();
	r = rdev_open(NULL, 0, 4096, &d, why, sizeof(why));
	if (r == -ENODEV) {
		printf("1..0 # SKIP %s\n", why);
		return 77;
	}
	tap_ok(r == 0, "the device opens (%s)", r ? why : "ok");
	if (r)
		return tap_exit();
	r = vlocal_new(d, 64, 1, -1, 512, on_done, &v, why, sizeof(why));
	tap_ok(r == 0, "the loopback RC QP connects to itself (%s)", r ? why : "ok");
	if (r)
		return tap_exit();
	tap_ok(vmr_reg(v, src, BIG, 0, &ms) == 0, "source registered with no access flags");
	tap_ok(vmr_reg(v, dst, BIG, VMR_REMOTE_WRITE | VMR_REMOTE_READ, &md) == 0,
	       "target registered for remote write and read");
	tap_ok(vmr_reg(v, back, BIG, VMR_LOCAL_WRITE, &mb) == 0, "read-back buffer registered");
	sizes(d, v, ms, src, md, dst, mb, back);
	failed_transition(d);

	/* Remote access error: the target allows reads only. */
	tap_ok(vmr_reg(v, dst, 4096, VMR_REMOTE_READ, &mro) == 0, "read-only target registered");
	base = done_count;
	tap_ok(vlocal_write(v, ms, 0, mro, 0, 64, FA, (void *)9) == 0 &&
		       wait_done(d, base + 1) == 0 && statuses[9] == -EACCES,
	       "a WRITE into a read-only MR fails with -EACCES");
	fill(src, 4096, 77);
	tap_ok(vlocal_write(v, ms, 0, md, 0, 4096, FA, (void *)10) == 0 &&
		       wait_done(d, base + 2) == 0 && statuses[10] == 0 &&
		       fnv1a(src, 4096) == fnv1a(dst, 4096),
	       "the next WRITE succeeds after the QP recovered");
	tap_ok(vlocal_recoveries(v) == 1, "the QP was recovered once (%u)", vlocal_recoveries(v));
	tap_ok(vlocal_write(v, ms, BIG - 10, md, 0, 11, FA, (void *)11) == -ERANGE,
	       "an op past the end of an MR is refused before posting");

	/* Far more ops than the send queue holds: each reported exactly once. */
	memset(reports, 0, sizeof(reports));
	base = done_count;
	for (i = 16; i < NOPS + 16; i++)
		if (vlocal_write(v, ms, i, md, i, 8, FA, (void *)(uintptr_t)i) < 0)
			break;
	tap_ok(wait_done(d, base + NOPS) == 0, "%u small WRITEs through a 64-deep queue complete",
	       NOPS);
	for (once = 1, i = 16; i < NOPS + 16; i++)
		once &= reports[i] == 1 && statuses[i] == 0;
	tap_ok(once, "each of them reported exactly once, all OK");

	fairness(d, v, ms, md);
	refusals(d, v, ms, md, mro, src, dst);

	/* Tear-down with work outstanding: still exactly one report per op. */
	memset(reports, 0, sizeof(reports));
	base = done_count;
	for (i = 16; i < 216; i++)
		vlocal_write(v, ms, 0, md, 0, 1u << 16, FA, (void *)(uintptr_t)i);
	v = vlocal_free(v);
	for (once = 1, i = 16; i < 216; i++)
		once &= reports[i] == 1 && (statuses[i] == 0 || statuses[i] == -ECANCELED ||
					    statuses[i] == -ETIMEDOUT);
	tap_ok(once && done_count == base + 200,
	       "freeing the QP with 200 ops queued reports each exactly once");
	free_mid_op(d, ms, md);
	free_unflushable(d, ms, src, md, dst);
	free_after_give_up(d, ms, src, md, dst);
	stale_after_recover(d, ms, src, md, dst, mro);
	lanes(d, ms, src, md, dst);
	inline_sizes(d, ms, src, md, dst);
	vmr_dereg(mro);
	vmr_dereg(mb);
	vmr_dereg(md);
	vmr_dereg(ms);
	rdev_free(d);
	free(src);
	free(dst);
	free(back);
	tap_plan_done();
	return tap_exit();
}
