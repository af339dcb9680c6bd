/* SPDX-License-Identifier: MIT */
/*
 * Submission -> operation -> completion, with no daemon: real submission
 * entries go into a session's shared ring, xfer_run() drains it, and the
 * completions are read back the way librdmaproxy reads them. Local
 * transfers are copies (core->vlocal is NULL, as on the tcp transport);
 * operations on another daemon go to a fake peer layer that keeps them and
 * ends them later with chosen statuses. Every accepted submission must get
 * exactly one completion, none may be written for a session that is gone,
 * and a session is freed once, after its last operation.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../daemon/base/log.h"
#include "../../daemon/base/memguard.h"
#include "core-harness.h"
#include "tap.h"

#define PAGE 4096
#define RLEN (4 * PAGE)
#define MAX_COOKIES 8192

static struct th t;

/* Every submission's cookie: how many completions it should get (1, or 0 if its session died). */
static uint8_t expected[MAX_COOKIES], seen[MAX_COOKIES];
static uint64_t next_cookie;
static unsigned stray; /* completions with a cookie nobody submitted */

static struct rp_cqe cqs[2048];

static struct rp_sqe sqe(uint16_t opcode, uint32_t region, uint64_t off, uint32_t target,
			 uint64_t roff, uint64_t len)
{
	struct rp_sqe q = {
		.opcode = opcode,
		.region = region,
		.offset = off,
		.target = target,
		.remote_offset = roff,
		.len = len,
	};

	return q;
}

/* Submit @q with a fresh cookie: the cookie, or 0 if the ring was full. */
static uint64_t sub(struct th_session *ts, struct rp_sqe q)
{
	q.cookie = ++next_cookie;
	if (next_cookie >= MAX_COOKIES)
		abort();
	if (th_submit(ts, &q) < 0)
		return 0;
	expected[q.cookie] = 1;
	return q.cookie;
}

/* Take up to @max completions into cqs[], counting them per cookie. */
static int reap_n(struct th_session *ts, int max)
{
	int n = th_reap(ts, cqs, max), i;

	for (i = 0; i < n; i++) {
		if (cqs[i].op == RP_OP_NOTIFY)
			continue;
		if (!cqs[i].cookie || cqs[i].cookie >= MAX_COOKIES || !expected[cqs[i].cookie])
			stray++;
		else
			seen[cqs[i].cookie]++;
	}
	return n;
}

static int reap(struct th_session *ts)
{
	return reap_n(ts, (int)(sizeof(cqs) / sizeof(cqs[0])));
}

/* One submission, run, reaped: how many completions came (want 1), the first in @c. */
static int one(struct th_session *ts, struct rp_sqe q, struct rp_cqe *c)
{
	uint64_t cookie = sub(ts, q);
	int n;

	th_run(ts);
	n = reap(ts);
	memset(c, 0, sizeof(*c));
	if (n > 0)
		*c = cqs[0];
	return n == 1 && c->cookie == cookie ? 1 : -n - 100;
}

/* The status of @q's one completion (or a value no status has). */
static int status_of(struct th_session *ts, struct rp_sqe q)
{
	struct rp_cqe c;

	if (one(ts, q, &c) != 1)
		return 1;
	if (c.status && c.len)
		return 2; /* a failed op reports no bytes */
	return c.status;
}

/* The fixture: A reads and writes B's exports (which name A's uid); both have one region. */
static struct th_session *a, *b;
static uint32_t ra, rb, h_rw, h_ro, h_wo;
static unsigned char *pa, *pb;

static void setup(void)
{
	a = th_session_new(&t, 1000, 1000);
	b = th_session_new(&t, 1001, 1001);
	if (th_hello(a) || th_hello(b) || th_region(a, RLEN, &ra, (void **)&pa) ||
	    th_region(b, RLEN, &rb, (void **)&pb) ||
	    th_export_for(b, rb, RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE, "b.rw", 1000) ||
	    th_export_for(b, rb, RP_ACCESS_REMOTE_READ, "b.ro", 1000) ||
	    th_export_for(b, rb, RP_ACCESS_REMOTE_WRITE, "b.wo", 1000) ||
	    th_remote_open(a, "", "b.rw", &h_rw) || th_remote_open(a, "", "b.ro", &h_ro) ||
	    th_remote_open(a, "", "b.wo", &h_wo))
		abort();
}

static void fill(unsigned char *p, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed + i * 7);
}

static void test_write_read(void)
{
	struct rp_cqe c;
	struct rp_sqe q;
	unsigned char before[PAGE];

	fill(pa, PAGE, 1);
	tap_is_int(one(a, sqe(RP_SQE_WRITE, ra, 0, h_rw, 2 * PAGE, PAGE), &c), 1,
		   "WRITE: one completion");
	tap_ok(c.op == RP_OP_WRITE && c.status == 0 && c.len == PAGE, "WRITE ok, its length");
	tap_ok(!memcmp(pb + 2 * PAGE, pa, PAGE), "the bytes are in the exporter's memory");

	fill(pb + 100, 200, 9);
	tap_is_int(one(a, sqe(RP_SQE_READ, ra, 3 * PAGE, h_rw, 100, 200), &c), 1,
		   "READ: one completion");
	tap_ok(c.op == RP_OP_READ && c.status == 0 && c.len == 200, "READ ok, its length");
	tap_ok(!memcmp(pa + 3 * PAGE, pb + 100, 200), "the bytes are in the reader's memory");
	tap_is_int(status_of(a, sqe(RP_SQE_READ, ra, 0, h_ro, 0, 64)), 0,
		   "READ through a read-only export");
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, ra, 0, h_wo, 0, 64)), 0,
		   "WRITE through a write-only export");
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, ra, 0, h_rw, 0, 0)), 0, "an empty WRITE");
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, ra, RLEN - 1, h_rw, RLEN - 1, 1)), 0,
		   "the last byte of both regions");

	memcpy(before, pb, PAGE);
	memset(pa, 0xee, PAGE);
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, ra, 0, h_ro, 0, 64)), -RP_EREMOTEACCESS,
		   "WRITE through a read-only export");
	tap_is_int(status_of(a, sqe(RP_SQE_READ, ra, 0, h_wo, 0, 64)), -RP_EREMOTEACCESS,
		   "READ through a write-only export");
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, ra, RLEN, h_rw, 0, 1)), -RP_EBOUNDS,
		   "a local range past the region");
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, ra, UINT64_MAX, h_rw, 0, 2)), -RP_EBOUNDS,
		   "a local offset that wraps");
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, ra, 0, h_rw, RLEN - 1, 2)), -RP_EREMOTEBOUNDS,
		   "a remote range past the export");
	tap_is_int(status_of(a, sqe(RP_SQE_READ, ra, 0, h_rw, UINT64_MAX, 2)), -RP_EREMOTEBOUNDS,
		   "a remote offset that wraps");
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, ra, 0, h_rw, 0, 1ull << 32)), -EINVAL,
		   "a length above 32 bits");
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, 0, 0, h_rw, 0, 1)), -RP_EBADHANDLE,
		   "region id 0");
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, 77, 0, h_rw, 0, 1)), -RP_EBADHANDLE,
		   "an unknown region");
	tap_is_int(status_of(a, sqe(RP_SQE_READ, ra, 0, 0, 0, 1)), -RP_EBADHANDLE, "handle id 0");
	tap_is_int(status_of(a, sqe(RP_SQE_READ, ra, 0, 1000, 0, 1)), -RP_EBADHANDLE,
		   "an unknown handle");
	q = sqe(RP_SQE_READ, ra, 0, h_rw, 0, 1);
	q.flags = RP_NOTIFY;
	tap_is_int(status_of(a, q), -EINVAL, "READ with RP_NOTIFY");
	q = sqe(RP_SQE_WRITE, ra, 0, h_rw, 0, 1);
	q.flags = 2;
	tap_is_int(status_of(a, q), -EINVAL, "WRITE with an unknown flag");
	tap_ok(!memcmp(before, pb, PAGE), "no refused WRITE changed the exporter's memory");
	th_unexport(b, rb, "b.wo");
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, ra, 0, h_wo, 0, 64)), -RP_EUNEXPORTED,
		   "WRITE through a handle whose export was withdrawn");
	tap_ok(!memcmp(before, pb, PAGE), "changed nothing either");
	tap_is_int(th_remote_close(a, h_wo), 0, "the handle can still be closed");
}

/* A client may write into its own export, overlapping: memmove semantics. */
static void test_self(void)
{
	unsigned char want[PAGE];
	uint32_t self = 0;

	th_export(a, ra, RP_ACCESS_REMOTE_WRITE | RP_ACCESS_REMOTE_READ, "a.self");
	th_remote_open(a, "", "a.self", &self);
	fill(pa, PAGE, 3);
	memcpy(want, pa, PAGE);
	memmove(want + 16, want, 1000);
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, ra, 0, self, 16, 1000)), 0,
		   "a WRITE into one's own export");
	tap_ok(!memcmp(pa, want, PAGE), "overlapping ranges move like memmove");
	th_remote_close(a, self);
	th_unexport(a, ra, "a.self");
}

static void test_notify(void)
{
	struct rp_sqe q = sqe(RP_SQE_WRITE, ra, 0, h_rw, PAGE, 64);
	unsigned i, ok = 0, notes = 0;
	int n;

	reap(b);
	q.flags = RP_NOTIFY;
	q.imm = 0xabcd;
	tap_is_int(status_of(a, q), 0, "WRITE with RP_NOTIFY");
	n = reap(b);
	tap_ok(n == 1 && cqs[0].op == RP_OP_NOTIFY && cqs[0].status == 0 && cqs[0].cookie == 0 &&
		       cqs[0].offset == PAGE && cqs[0].len == 64 && cqs[0].imm == 0xabcd &&
		       cqs[0].region == rb,
	       "the exporter gets one NOTIFY: offset, length, imm, its region");
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, ra, 0, h_rw, PAGE, 64)), 0, "a WRITE without it");
	tap_is_int(reap(b), 0, "notifies nobody");

	/* Fill B's completion ring with notifications it does not reap. */
	q.len = 1;
	for (i = 0; i < RP_RING_CQ_ENTRIES; i += 128) {
		unsigned k;

		for (k = 0; k < 128; k++)
			sub(a, q);
		th_run(a);
		n = reap(a);
		for (k = 0; k < (unsigned)n; k++)
			ok += cqs[k].status == 0;
	}
	tap_is_int(ok, RP_RING_CQ_ENTRIES, "as many notified WRITEs as B's ring has entries");
	memset(pa + PAGE, 0x77, 1);
	pb[3 * PAGE] = 0x11;
	q.offset = PAGE;
	q.remote_offset = 3 * PAGE;
	tap_is_int(status_of(a, q), -RP_ENOTIFYSPACE, "one more finds no notification space");
	tap_is_int(pb[3 * PAGE], 0x11, "and was not done");
	n = reap(b);
	for (i = 0; i < (unsigned)n; i++)
		notes += cqs[i].op == RP_OP_NOTIFY && cqs[i].status == 0;
	tap_is_int(notes, RP_RING_CQ_ENTRIES, "B reaps all its notifications");
	tap_is_int(status_of(a, q), 0, "then it is done");
	tap_ok(reap(b) == 1 && pb[3 * PAGE] == 0x77, "and notified");
	tap_is_int(b->s.rings.cq_reserved, 0, "no notification slot is left reserved");
}

/*
 * B's completion ring holds only reservations (notifications a peer's
 * WRITEs will bring), so its own submission stalls; one reservation is
 * given back without an entry (the WRITE failed): B has nothing to reap,
 * so the daemon rings B's submission doorbell itself.
 */
static void test_stall_give_back(void)
{
	struct export *e = export_find(t.core, "b.rw");
	struct session *held[RP_RING_CQ_ENTRIES];
	struct region *rid[RP_RING_CQ_ENTRIES];
	unsigned i, n = 0, kicks;
	uint32_t hb = 0;

	th_remote_open(b, "", "b.rw", &hb);
	while (n < RP_RING_CQ_ENTRIES && notify_hold(e, &held[n], &rid[n]) == 0)
		n++;
	tap_is_int((int)n, RP_RING_CQ_ENTRIES,
		   "every completion slot of B held for a notification");
	sub(b, sqe(RP_SQE_WRITE, rb, 0, hb, 0, 8));
	tap_is_int(th_run(b), XFER_STALLED, "B's own WRITE stalls: no completion space");
	kicks = b->kicks;
	notify_finish(held[0], rid[0], 0, 0, 0, -EIO);
	tap_ok(b->kicks == kicks + 1 && !(rp_ring_load(&b->ring.v.sq->flags) & RP_RING_STALLED),
	       "a slot given back without an entry has B's ring looked at again (kick)");
	tap_is_int(th_run(b), XFER_EMPTY, "and B's WRITE runs");
	for (i = 1; i < n; i++)
		notify_finish(held[i], rid[i], 0, 0, 0, -EIO);
	tap_is_int(reap(b), 1, "B reaps its WRITE's completion");
	tap_is_int(b->s.rings.cq_reserved, 0, "no slot is left reserved");
	th_remote_close(b, hb);
}

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_doorbells(void)
{
	struct rp_sqe q = sqe(RP_SQE_WRITE, ra, 0, h_rw, 0, 8);
	uint64_t v = 0, before, after, rung;

	tap_is_int(th_run(a), XFER_EMPTY, "an empty ring");
	tap_ok(!xfer_pending(&a->s), "nothing pending");
	tap_ok(xfer_arm(&a->s), "arming before sleep finds nothing new");
	tap_ok(rp_ring_load(&a->ring.v.sq->flags) & RP_RING_NEED_WAKEUP,
	       "and asks for the submission doorbell");
	sub(a, q);
	tap_ok(rp_ring_take_wakeup(a->ring.v.sq, RP_RING_NEED_WAKEUP),
	       "so the client's next submission rings it");
	tap_ok(xfer_pending(&a->s), "a submission is seen as pending");
	rp_ring_arm(a->ring.v.sq, RP_RING_NEED_WAKEUP);
	tap_ok(!xfer_arm(&a->s), "arming with a submission waiting: run again");
	tap_ok(!(rp_ring_load(&a->ring.v.sq->flags) & RP_RING_NEED_WAKEUP),
	       "and no doorbell is asked for");
	tap_is_int(th_run(a), XFER_EMPTY, "the run takes it");
	reap(a);

	q.flags = RP_NOTIFY;
	rp_ring_arm(b->ring.v.cq, RP_RING_NEED_WAKEUP); /* B sleeps on its completions */
	while (read(b->fds[2], &v, sizeof(v)) > 0) {
	}
	atomic_store(&b->ring.v.cq->rung_ns, 0);
	atomic_store(&a->ring.v.cq->rung_ns, 0);
	before = mono();
	tap_is_int(status_of(a, q), 0, "a notified WRITE");
	after = mono();
	v = 0;
	tap_ok(read(b->fds[2], &v, sizeof(v)) == sizeof(v) && v >= 1,
	       "rings the sleeping exporter's completion doorbell");
	tap_ok(!(rp_ring_load(&b->ring.v.cq->flags) & RP_RING_NEED_WAKEUP), "once");
	rung = atomic_load(&b->ring.v.cq->rung_ns);
	tap_ok(rung >= before && rung <= after,
	       "and says when it rang (rung_ns within the call: %llu ns after its start)",
	       (unsigned long long)(rung - before));
	reap(b);
	/* A's completion was not slept on: no doorbell, nothing said. */
	tap_ok(atomic_load(&a->ring.v.cq->rung_ns) == 0, "nothing said to the writer, which spins");
}

/* Completion entry @idx of @ts carries its lap (protocol 3: the client may take it). */
static bool lap_seen(struct th_session *ts, uint32_t idx)
{
	const struct rp_ring_view *v = &ts->ring.v;

	return rp_cqe_ready(&v->cqes[idx & (v->cq_entries - 1)], idx, v->cq_entries);
}

/*
 * In a pass of the engine, producer indexes move at its end, in the order
 * the sessions were written to; a protocol-3 client sees each entry as soon
 * as it is written. Either way the exporter can see a notification before
 * the writer sees the write's completion, also when only the writer speaks
 * protocol 3.
 */
static void test_batching(void)
{
	struct rp_sqe q = sqe(RP_SQE_WRITE, ra, 0, h_rw, 0, 8);
	uint32_t pa0 = rp_ring_load(&a->ring.v.cq->producer);
	uint32_t pb0 = rp_ring_load(&b->ring.v.cq->producer);
	struct th_session *x;
	uint32_t rx = 0, hx = 0, px0;
	uint64_t ck;

	q.flags = RP_NOTIFY;
	ck = sub(a, q);
	t.core->batching = true;
	core_pass_begin(t.core);
	tap_is_int(xfer_run(&a->s), XFER_EMPTY, "a notified WRITE in a pass");
	tap_ok(rp_ring_load(&a->ring.v.cq->producer) == pa0 &&
		       rp_ring_load(&b->ring.v.cq->producer) == pb0,
	       "neither producer index moves before the pass ends");
	tap_ok(lap_seen(b, pb0) && lap_seen(a, pa0),
	       "protocol 3: both entries carry their lap (the notification was written first)");
	tap_ok(t.core->dirty == &b->s && b->s.dirty_next == &a->s && !a->s.dirty_next,
	       "the exporter's notification is published first");
	core_publish(t.core);
	t.core->batching = false;
	tap_ok(rp_ring_load(&a->ring.v.cq->producer) == pa0 + 1 &&
		       rp_ring_load(&b->ring.v.cq->producer) == pb0 + 1 && !t.core->dirty &&
		       !a->s.dirty && !b->s.dirty,
	       "core_publish() makes both visible");
	tap_ok(reap(a) == 1 && cqs[0].cookie == ck && reap(b) == 1 && cqs[0].op == RP_OP_NOTIFY,
	       "each once");

	/* The exporter speaks protocol 2: it sees the notification only once published. */
	x = th_session_new(&t, 1001, 1001);
	if (th_hello_v(x, RP_PROTO_VERSION_MIN, 2) || th_region(x, PAGE, &rx, NULL) ||
	    th_export_for(x, rx, RP_ACCESS_REMOTE_WRITE, "x.old", 1000) ||
	    th_remote_open(a, "", "x.old", &hx))
		abort();
	pa0 = rp_ring_load(&a->ring.v.cq->producer);
	px0 = rp_ring_load(&x->ring.v.cq->producer);
	q = sqe(RP_SQE_WRITE, ra, 0, hx, 0, 8);
	q.flags = RP_NOTIFY;
	ck = sub(a, q);
	t.core->batching = true;
	core_pass_begin(t.core);
	tap_is_int(xfer_run(&a->s), XFER_EMPTY, "a notified WRITE to an exporter of protocol 2");
	tap_ok(!lap_seen(a, pa0) || rp_ring_load(&x->ring.v.cq->producer) == px0 + 1,
	       "the writer (protocol 3) sees its completion only once the exporter's "
	       "notification is published");
	core_publish(t.core);
	t.core->batching = false;
	tap_ok(reap(a) == 1 && cqs[0].cookie == ck && cqs[0].status == 0 && reap(x) == 1 &&
		       cqs[0].op == RP_OP_NOTIFY,
	       "each once");
	th_remote_close(a, hx);

	/*
	 * Both speak protocol 2, and the writer already has an entry waiting in
	 * the pass (a plain WRITE first): its producer index must not move past
	 * the notified write before the exporter's moves past the notification.
	 */
	{
		struct th_session *w = th_session_new(&t, 1001, 1001);
		uint32_t rw = 0, hw = 0, pw0;
		bool first;

		if (th_hello_v(w, RP_PROTO_VERSION_MIN, 2) || th_region(w, PAGE, &rw, NULL) ||
		    th_remote_open(w, "", "x.old", &hw))
			abort();
		pw0 = rp_ring_load(&w->ring.v.cq->producer);
		px0 = rp_ring_load(&x->ring.v.cq->producer);
		q = sqe(RP_SQE_WRITE, rw, 0, hw, 0, 8);
		sub(w, q);
		q.flags = RP_NOTIFY;
		ck = sub(w, q);
		t.core->batching = true;
		core_pass_begin(t.core);
		tap_is_int(xfer_run(&w->s), XFER_EMPTY,
			   "protocol 2 both: a WRITE, then a notified one, in one pass");
		first = rp_ring_load(&x->ring.v.cq->producer) == px0 + 1;
		for (struct th_session *o = (struct th_session *)t.core->dirty; !first && o;
		     o = (struct th_session *)o->s.dirty_next) {
			if (&o->s == &w->s)
				break;
			first = &o->s == &x->s;
		}
		tap_ok(first && rp_ring_load(&w->ring.v.cq->producer) <= pw0 + 1,
		       "the exporter's notification is published before the writer's entry for it");
		core_publish(t.core);
		t.core->batching = false;
		tap_ok(reap_n(w, 4) == 2 && cqs[1].cookie == ck && cqs[1].status == 0 &&
			       reap(x) == 1 && cqs[0].op == RP_OP_NOTIFY,
		       "each once");
		/* A session that goes away with entries written is no longer published to. */
		q.flags = 0;
		expected[sub(w, q)] = 0; /* its client leaves without reaping it */
		t.core->batching = true;
		core_pass_begin(t.core);
		xfer_run(&w->s);
		tap_ok(t.core->dirty == &w->s, "a WRITE in a pass leaves its writer to publish");
		th_remote_close(w, hw);
		th_session_close(w);
		tap_ok(!t.core->dirty && !t.core->dirty_tail && !t.core->dirty_legacy,
		       "closing it takes it off the sessions to publish");
		core_publish(t.core);
		t.core->batching = false;
	}
	th_session_close(x);
}

static void test_send_recv(void)
{
	uint32_t ep = 0, d = 0, dnone = 0, self_ep = 0, self_d = 0;
	struct rp_sqe rq = sqe(RP_SQE_POST_RECV, rb, 0, 0, 0, 256), q;
	uint64_t ck[3];
	int n;

	th_ep_bind(b, "b.ep", &ep);
	th_dest_open(a, "", "b.ep", &d);
	th_dest_open(a, "", "nobody", &dnone);
	rq.target = ep;
	tap_is_int(status_of(a, sqe(RP_SQE_SEND, ra, 0, d, 0, 10)), -RP_ENORECV,
		   "SEND with no receive posted");
	ck[0] = sub(b, rq);
	th_run(b);
	tap_is_int(reap(b), 0, "a posted receive does not complete");
	tap_is_int(b->s.acct->inflight, 1, "it is in flight");
	tap_is_int(status_of(a, sqe(RP_SQE_SEND, ra, 0, d, 0, 257)), -RP_ERECVSMALL,
		   "SEND larger than the posted receive");
	tap_is_int(reap(b), 0, "the receive is still posted");
	fill(pa + 1000, 100, 5);
	tap_is_int(status_of(a, sqe(RP_SQE_SEND, ra, 1000, d, 0, 100)), 0, "SEND");
	n = reap(b);
	tap_ok(n == 1 && cqs[0].cookie == ck[0] && cqs[0].op == RP_OP_RECV && cqs[0].status == 0 &&
		       cqs[0].len == 100 && cqs[0].offset == 0 && cqs[0].region == rb,
	       "the receiver's RECV: its cookie, length, offset and region");
	tap_ok(!memcmp(pb, pa + 1000, 100), "the message is in the posted buffer");

	rq.offset = 1024;
	ck[0] = sub(b, rq);
	rq.offset = 2048;
	ck[1] = sub(b, rq);
	th_run(b);
	sub(a, sqe(RP_SQE_SEND, ra, 0, d, 0, 11));
	sub(a, sqe(RP_SQE_SEND, ra, 0, d, 0, 22));
	th_run(a);
	tap_ok(reap(a) == 2 && cqs[0].status == 0 && cqs[1].status == 0, "two SENDs");
	tap_ok(reap(b) == 2 && cqs[0].cookie == ck[0] && cqs[0].len == 11 &&
		       cqs[0].offset == 1024 && cqs[1].cookie == ck[1] && cqs[1].len == 22 &&
		       cqs[1].offset == 2048,
	       "fill the receives in the order they were posted");

	tap_is_int(status_of(a, sqe(RP_SQE_SEND, ra, 0, dnone, 0, 1)), -RP_ENOENDPOINT,
		   "SEND to an endpoint nobody bound");
	tap_is_int(status_of(a, sqe(RP_SQE_SEND, ra, 0, 99, 0, 1)), -RP_EBADHANDLE,
		   "SEND to an unknown destination");
	tap_is_int(status_of(a, sqe(RP_SQE_SEND, ra, RLEN, d, 0, 1)), -RP_EBOUNDS,
		   "SEND from past the region");
	q = sqe(RP_SQE_SEND, ra, 0, d, 0, 1);
	q.flags = RP_NOTIFY;
	tap_is_int(status_of(a, q), -EINVAL, "SEND with a flag");

	tap_is_int(status_of(b, sqe(RP_SQE_POST_RECV, rb, 0, 99, 0, 1)), -RP_EBADHANDLE,
		   "POST_RECV on an unknown endpoint");
	tap_is_int(status_of(b, sqe(RP_SQE_POST_RECV, 99, 0, ep, 0, 1)), -RP_EBADHANDLE,
		   "POST_RECV into an unknown region");
	tap_is_int(status_of(b, sqe(RP_SQE_POST_RECV, rb, RLEN - 1, ep, 0, 2)), -RP_EBOUNDS,
		   "POST_RECV past the region");
	tap_is_int(status_of(b, sqe(RP_SQE_POST_RECV, rb, 0, ep, 1, 2)), -EINVAL,
		   "POST_RECV with a remote offset");
	q = sqe(RP_SQE_POST_RECV, rb, 0, ep, 0, 2);
	q.imm = 1;
	tap_is_int(status_of(b, q), -EINVAL, "POST_RECV with an imm");
	q.imm = 0;
	q.flags = 1;
	tap_is_int(status_of(b, q), -EINVAL, "POST_RECV with a flag");
	tap_ok(cqs[0].op == RP_OP_RECV, "its completion is a RECV");

	ck[0] = sub(b, rq);
	ck[1] = sub(b, rq);
	ck[2] = sub(b, rq);
	th_run(b);
	tap_is_int(th_ep_unbind(b, ep), 0, "EP_UNBIND with three receives posted");
	n = reap(b);
	tap_ok(n == 3 && cqs[0].cookie == ck[0] && cqs[1].cookie == ck[1] &&
		       cqs[2].cookie == ck[2] && cqs[0].status == -ECANCELED &&
		       cqs[1].status == -ECANCELED && cqs[2].status == -ECANCELED &&
		       cqs[2].op == RP_OP_RECV && cqs[2].len == 0,
	       "cancels each, in order");
	tap_is_int(b->s.acct->inflight, 0, "nothing in flight");

	th_ep_bind(a, "a.self", &self_ep);
	th_dest_open(a, "", "a.self", &self_d);
	ck[0] = sub(a, sqe(RP_SQE_POST_RECV, ra, 2 * PAGE, self_ep, 0, 64));
	ck[1] = sub(a, sqe(RP_SQE_SEND, ra, 0, self_d, 0, 64));
	th_run(a);
	tap_ok(reap(a) == 2 && cqs[0].cookie == ck[0] && cqs[0].op == RP_OP_RECV &&
		       cqs[1].cookie == ck[1] && cqs[1].op == RP_OP_SEND && cqs[1].status == 0,
	       "a SEND to one's own endpoint");
	th_ep_unbind(a, self_ep);
}

/* What the peer layer does with a message for a local endpoint. */
static void test_take(void)
{
	uint32_t ep = 0;
	struct region *r = idtab_get(&b->s.regions, rb);
	struct op *rop = NULL, *again = NULL;
	uint64_t ck;

	th_ep_bind(b, "b.rx", &ep);
	tap_is_int(endpoint_take(t.core, "nope", 1, NULL, "p", &rop), -RP_ENOENDPOINT,
		   "take: no endpoint");
	tap_is_int(endpoint_take(t.core, "b.rx", 1, NULL, "p", &rop), -RP_ENORECV,
		   "take: nothing posted");
	ck = sub(b, sqe(RP_SQE_POST_RECV, rb, 512, ep, 0, 128));
	th_run(b);
	tap_is_int(endpoint_take(t.core, "b.rx", 129, NULL, "p", &rop), -RP_ERECVSMALL,
		   "take: too small");
	tap_is_int(endpoint_take(t.core, "b.rx", 64, NULL, "p", &rop), 0, "take");
	tap_ok(rop && recv_addr(rop) == (char *)r->addr + 512, "the receive's buffer");
	recv_finish(t.core, rop, 64, -EIO);
	tap_is_int(reap(b), 0, "a message that did not arrive whole completes nothing");
	tap_ok(endpoint_take(t.core, "b.rx", 64, NULL, "p", &again) == 0 && again == rop,
	       "its receive is first in line again");
	memcpy(recv_addr(rop), "from afar", 10);
	recv_finish(t.core, rop, 10, 0);
	tap_ok(reap(b) == 1 && cqs[0].cookie == ck && cqs[0].status == 0 && cqs[0].len == 10 &&
		       !memcmp(pb + 512, "from afar", 10),
	       "one that did completes the receive");

	ck = sub(b, sqe(RP_SQE_POST_RECV, rb, 0, ep, 0, 128));
	th_run(b);
	endpoint_take(t.core, "b.rx", 5, NULL, "p", &rop);
	tap_is_int(th_ep_unbind(b, ep), 0, "EP_UNBIND while a message is arriving");
	tap_is_int(reap(b), 0, "leaves the taken receive alone");
	recv_finish(t.core, rop, 5, 0);
	tap_ok(reap(b) == 1 && cqs[0].cookie == ck && cqs[0].status == 0 && cqs[0].len == 5,
	       "it completes when the message is in");

	th_ep_bind(b, "b.rx", &ep);
	ck = sub(b, sqe(RP_SQE_POST_RECV, rb, 0, ep, 0, 128));
	th_run(b);
	endpoint_take(t.core, "b.rx", 5, NULL, "p", &rop);
	th_ep_unbind(b, ep);
	recv_finish(t.core, rop, 5, -EIO);
	tap_ok(reap(b) == 1 && cqs[0].cookie == ck && cqs[0].status == -ECANCELED,
	       "or is cancelled if it did not arrive");
}

/* An endpoint bound with a list decides who may send before a receive is taken. */
static void test_take_acl(void)
{
	struct rp_export_acl_req acl = {
		.n_uids = 1, .uids = { 1000 }, .n_peers = 1, .peers = { TH_PEER }
	};
	struct th_session *x = th_session_new(&t, 1003, 1003);
	struct op *rop = NULL, *again = NULL;
	uint32_t ep = 0, open_ep = 0;
	uint64_t ck;

	if (th_hello(x) || th_ep_bind_acl(b, "b.acl", &acl, &ep) ||
	    th_ep_bind(b, "b.open", &open_ep))
		abort();
	ck = sub(b, sqe(RP_SQE_POST_RECV, rb, 0, ep, 0, 128));
	sub(b, sqe(RP_SQE_POST_RECV, rb, 128, open_ep, 0, 128));
	th_run(b);
	tap_is_int(endpoint_take(t.core, "b.acl", 8, &x->s, NULL, &rop), -RP_EENDPOINT_DENIED,
		   "take with a list: a local user it does not name is refused");
	tap_is_int(endpoint_take(t.core, "b.acl", 8, NULL, "q", &rop), -RP_EENDPOINT_DENIED,
		   "and a peer it does not name");
	tap_ok(endpoint_take(t.core, "b.acl", 8, &a->s, NULL, &rop) == 0 && rop,
	       "a user it names gets the receive, which the refusals left in place");
	recv_finish(t.core, rop, 8, -EIO);
	tap_ok(endpoint_take(t.core, "b.acl", 8, NULL, TH_PEER, &again) == 0 && again == rop,
	       "a peer it names");
	recv_finish(t.core, again, 8, -EIO);
	tap_ok(endpoint_take(t.core, "b.acl", 8, &b->s, NULL, &rop) == 0,
	       "its owner's user (another client of it would be the same)");
	recv_finish(t.core, rop, 8, 0);
	tap_ok(reap(b) == 1 && cqs[0].cookie == ck && cqs[0].status == 0,
	       "one completion for the receive");
	tap_ok(endpoint_take(t.core, "b.open", 8, &x->s, NULL, &rop) == 0,
	       "an endpoint bound without a list takes anyone's");
	recv_finish(t.core, rop, 8, 0);
	reap(b);
	th_ep_unbind(b, ep);
	th_ep_unbind(b, open_ep);
	th_session_close(x);
}

/* What the peer layer does for a notified WRITE from another daemon. */
static void test_notify_hold(void)
{
	struct export *e = export_find(t.core, "b.rw");
	struct session *ns = NULL;
	struct region *region = NULL;

	tap_ok(e && notify_hold(e, &ns, &region) == 0 && ns == &b->s && region && region->id == rb,
	       "notify_hold reserves a slot at the exporter");
	tap_is_int(b->s.rings.cq_reserved, 1, "one slot");
	notify_finish(ns, region, 8, 16, 3, 0);
	tap_ok(reap(b) == 1 && cqs[0].op == RP_OP_NOTIFY && cqs[0].offset == 8 &&
		       cqs[0].len == 16 && cqs[0].imm == 3 && cqs[0].region == rb,
	       "notify_finish delivers it");
	notify_hold(e, &ns, &region);
	notify_finish(ns, region, 8, 16, 3, -EIO);
	tap_ok(reap(b) == 0 && b->s.rings.cq_reserved == 0, "or gives the slot back");
}

static void test_inflight(void)
{
	uint32_t ep = 0;
	struct rp_sqe rq;
	int i;

	th_ep_bind(b, "b.lim", &ep);
	rq = sqe(RP_SQE_POST_RECV, rb, 0, ep, 0, 16);
	t.cfg.max_inflight = 3;
	for (i = 0; i < 3; i++)
		sub(b, rq);
	th_run(b);
	tap_is_int(b->s.acct->inflight, 3, "max_inflight receives posted");
	tap_is_int(status_of(b, rq), -RP_ELIMIT_INFLIGHT, "one more is refused");
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, ra, 0, h_rw, 0, 1)), 0,
		   "another uid's operations are not");
	th_ep_unbind(b, ep);
	tap_is_int(reap(b), 3, "unbinding cancels them");
	t.cfg.max_inflight = 4096;
	tap_is_int(b->s.acct->inflight, 0, "none in flight");
}

/* A client that does not reap: the daemon stops taking submissions, then resumes. */
static void test_stall(void)
{
	struct rp_sqe q = sqe(RP_SQE_WRITE, ra, 0, h_rw, 0, 4);
	uint64_t first = next_cookie + 1;
	unsigned i, k, total = 0, order = 0;
	uint32_t cons;
	int r, n;

	for (i = 0; i < RP_RING_CQ_ENTRIES; i += RP_RING_SQ_ENTRIES) {
		for (k = 0; k < RP_RING_SQ_ENTRIES; k++)
			sub(a, q);
		th_run(a);
	}
	tap_is_int(rp_ring_load(&a->ring.v.cq->producer) - a->ring.cq_head, RP_RING_CQ_ENTRIES,
		   "the completion ring is full");
	for (k = 0; k < 10; k++)
		sub(a, q);
	cons = rp_ring_load(&a->ring.v.sq->consumer);
	tap_is_int(th_run(a), XFER_STALLED, "the daemon stalls");
	tap_is_int(rp_ring_load(&a->ring.v.sq->consumer), cons, "taking none of the 10 waiting");
	tap_ok(rp_ring_load(&a->ring.v.sq->flags) & RP_RING_STALLED,
	       "and says so in the submission ring's flags");
	tap_is_int(rp_ring_load(&a->ring.v.cq->producer) - a->ring.cq_head, RP_RING_CQ_ENTRIES,
		   "the producer never passes consumer + entries");
	n = reap_n(a, 4);
	for (i = 0; i < (unsigned)n; i++)
		order += cqs[i].cookie == first + total++;
	r = th_run(a);
	tap_ok(r == XFER_STALLED && rp_ring_load(&a->ring.v.sq->consumer) == cons + 4,
	       "4 reaped: 4 more taken, then it stalls again");
	while ((n = reap(a)) > 0)
		for (i = 0; i < (unsigned)n; i++)
			order += cqs[i].cookie == first + total++;
	tap_is_int(th_run(a), XFER_EMPTY, "all reaped: it resumes and runs dry");
	n = reap(a);
	for (i = 0; i < (unsigned)n; i++)
		order += cqs[i].cookie == first + total++;
	tap_is_int(total, RP_RING_CQ_ENTRIES + 10, "every submission completed");
	tap_is_int(order, total, "in order, each once");
}

/*
 * The daemon reads the client's completion consumer index only when its own
 * copy says there is no room: one moved far ahead of the producer ends the
 * session then, at the latest after a ring of completions, and the daemon
 * never writes past what it last saw reaped. (One moved a little ahead is
 * taken at its word once the producer passes it: it only loses the client
 * its own completions.)
 */
static void test_corrupt_consumer(void)
{
	struct th_session *c = th_session_new(&t, 1003, 1003);
	struct rp_sqe q = sqe(RP_SQE_POST_RECV, 1, 0, 5, 0, 1); /* no endpoint 5: a plain error */
	uint64_t ck;
	uint32_t prod;
	unsigned n = 0, k;
	int r = 0;

	th_hello(c);
	th_region(c, PAGE, NULL, NULL);
	ck = sub(c, q);
	tap_is_int(th_run(c), XFER_EMPTY, "corrupt consumer: an op before it completes");
	tap_ok(reap(c) == 1 && cqs[0].cookie == ck, "and is reaped");
	rp_ring_store(&c->ring.v.cq->consumer, c->ring.cq_head + 0x40000000u);
	while (r != -EPROTO && n <= RP_RING_CQ_ENTRIES + RP_RING_SQ_ENTRIES) {
		for (k = 0; k < RP_RING_SQ_ENTRIES && (ck = sub(c, q)); k++)
			expected[ck] = 0; /* never reaped: the ring is the client's to break */
		n += k;
		r = th_run(c);
	}
	tap_is_int(r, -EPROTO, "a completion consumer ahead of the producer ends the session");
	prod = rp_ring_load(&c->ring.v.cq->producer);
	tap_ok(prod - c->ring.cq_head <= RP_RING_CQ_ENTRIES,
	       "no completion was written past a ring beyond the last honest consumer");
	th_session_close(c);
}

/*
 * A client that corrupts its ring ends its session (-EPROTO); what came
 * before completes. Protocol 2 (the daemon reads the producer index) and the
 * newest (each entry carries its index: the producer index is not read).
 */
static void test_corrupt(void)
{
	static const char *const what[] = {
		"a producer more than a ring ahead",
		"a producer behind the consumer",
		"opcode 0",
		"an unknown opcode",
		"padding set in an entry",
		"an index set in an entry of protocol 2",
	};
	struct th_session *c;
	struct rp_sqe q;
	char name[80];
	uint64_t ck;
	uint16_t v;
	int i;

	for (v = 2; v <= RP_PROTO_VERSION_MAX; v += RP_PROTO_VERSION_MAX - 2) {
		for (i = 0; i < 6; i++) {
			bool seq = v >= RP_PROTO_VERSION_SEQ;

			if (seq && (i < 2 || i == 5))
				continue; /* the producer index and seq are not checked: below */
			c = th_session_new(&t, 1003, 1003);
			th_hello_v(c, RP_PROTO_VERSION_MIN, v);
			th_region(c, PAGE, NULL, NULL);
			q = sqe(RP_SQE_POST_RECV, 1, 0, 5, 0, 1); /* no endpoint 5: a plain error */
			ck = sub(c, q);
			switch (i) {
			case 0:
				rp_ring_store(&c->ring.v.sq->producer,
					      c->ring.sq_tail + RP_RING_SQ_ENTRIES);
				break;
			case 1:
				rp_ring_store(&c->ring.v.sq->producer, c->ring.sq_tail - 2);
				break;
			case 2:
				q.opcode = 0;
				sub(c, q);
				break;
			case 3:
				q.opcode = RP_SQE_POST_RECV + 1;
				sub(c, q);
				break;
			case 4:
				q.pad[sizeof(q.pad) - 1] = 1;
				sub(c, q);
				break;
			case 5:
				q.seq = 2; /* what protocol 3 would say */
				sub(c, q);
				break;
			}
			snprintf(name, sizeof(name), "%s (protocol %u)", what[i], v);
			tap_is_int(th_run(c), -EPROTO, name);
			if (i >= 2) {
				tap_ok(reap(c) == 1 && cqs[0].cookie == ck &&
					       cqs[0].status == -RP_EBADHANDLE,
				       "the entry before it completed");
				expected[next_cookie] = 0; /* the bad one gets none */
			} else {
				expected[ck] = 0;
			}
			th_session_close(c);
		}
	}
}

/*
 * Protocol 3: the daemon takes an entry when its seq says it is the next
 * one, whatever the producer index says, and gives each completion entry its
 * lap; both survive the rings wrapping (th_reap() checks the laps).
 */
static void test_entry_index(void)
{
	struct th_session *c = th_session_new(&t, 1004, 1004);
	struct rp_sqe q, *e;
	unsigned i, done = 0, bad = 0;
	uint64_t ck;
	int n;

	th_hello(c);
	tap_ok(c->s.version >= RP_PROTO_VERSION_SEQ && c->s.rings.seq,
	       "a new client's session carries the index in its ring entries");
	th_region(c, PAGE, NULL, NULL);
	q = sqe(RP_SQE_POST_RECV, 1, 0, 5, 0, 1); /* no endpoint 5: a plain error */

	/* Written and the producer index moved, but the entry still says "not yet". */
	e = &c->ring.v.sqes[c->ring.sq_tail & (RP_RING_SQ_ENTRIES - 1)];
	ck = sub(c, q);
	rp_sqe_seq_store(e, 0);
	tap_is_int(th_run(c), XFER_EMPTY, "an entry whose seq is not yet its index is not taken");
	tap_is_int(rp_ring_load(&c->ring.v.sq->consumer), 0, "(the consumer index did not move)");
	tap_ok(!xfer_pending(&c->s), "nor is it pending");
	rp_sqe_seq_store(e, c->ring.sq_tail + RP_RING_SQ_ENTRIES); /* a lap ahead */
	tap_is_int(th_run(c), XFER_EMPTY, "nor one whose seq is a lap ahead");
	rp_sqe_seq_store(e, c->ring.sq_tail);
	tap_ok(xfer_pending(&c->s), "its own seq makes it pending");
	tap_ok(th_run(c) >= 0 && reap(c) == 1 && cqs[0].cookie == ck &&
		       cqs[0].status == -RP_EBADHANDLE && cqs[0].op == RP_OP_RECV,
	       "and it is taken and completed");

	/* Around both rings several times, in uneven batches. */
	for (i = 0; i < 3 * RP_RING_CQ_ENTRIES + 7; i += 5) {
		unsigned k;

		for (k = 0; k < 5; k++)
			if (!sub(c, q))
				bad++;
		if (th_run(c) < 0)
			bad++;
		while ((n = reap(c)) > 0)
			for (k = 0; k < (unsigned)n; k++)
				done += cqs[k].status == -RP_EBADHANDLE && cqs[k].op == RP_OP_RECV;
		if (n < 0)
			bad++;
	}
	tap_ok(!bad && done == i,
	       "%u entries around the rings: each taken once, each completion "
	       "with its lap (%u completed, %u errors)",
	       i, done, bad);
	tap_is_int(rp_cqe_lap(RP_RING_CQ_ENTRIES * 255, RP_RING_CQ_ENTRIES), 0,
		   "the lap wraps to 0 after 255");
	tap_ok(rp_cqe_lap(RP_RING_CQ_ENTRIES * 255 + 5, RP_RING_CQ_ENTRIES) !=
		       rp_cqe_lap(RP_RING_CQ_ENTRIES * 254 + 5, RP_RING_CQ_ENTRIES),
	       "where it still differs from the lap before");
	th_session_close(c);
}

static uint32_t open_far(struct th_session *ts, const char *name, uint64_t inc, uint64_t id)
{
	struct remote info;
	uint32_t h = 0;

	memset(&info, 0, sizeof(info));
	snprintf(info.peer, sizeof(info.peer), TH_PEER);
	info.inc = inc;
	info.id = id;
	info.len = 1 << 16;
	info.access = RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE;
	if (th_remote_open(ts, TH_PEER, name, NULL) != 1)
		abort();
	th_open_answer(&t, t.n_opens - 1, 0, &info);
	if (th_reply(ts)->status)
		abort();
	h = ((const struct rp_remote_reply *)th_reply_body(ts))->id;
	return h;
}

/* Operations on another daemon, against the fake peer layer. */
static void test_peer_ops(void)
{
	static const int statuses[5] = { 0, -RP_EREMOTEACCESS, -RP_EOUTCOME, -RP_EPEERDOWN,
					 -ECANCELED };
	uint32_t hr = open_far(a, "far", 7, 42), d = 0;
	struct rp_sqe q = sqe(RP_SQE_WRITE, ra, 0, hr, 100, 512);
	unsigned submits = t.n_submits, i, ok = 0;
	uint64_t ck[5];

	ck[0] = sub(a, q);
	th_run(a);
	tap_ok(reap(a) == 0 && t.n_ops == 1 && t.ops[0].op->q.cookie == ck[0],
	       "a WRITE to a remote handle goes to the peer layer");
	tap_ok(t.ops[0].op->e->remote && t.ops[0].op->region->id == ra && a->s.acct->inflight == 1,
	       "with its handle and region, in flight");
	th_op_end(&t, 0, 0);
	tap_ok(reap(a) == 1 && cqs[0].cookie == ck[0] && cqs[0].status == 0 && cqs[0].len == 512 &&
		       cqs[0].op == RP_OP_WRITE,
	       "its end is its one completion");

	for (i = 0; i < 5; i++) {
		q.opcode = i % 2 ? RP_SQE_READ : RP_SQE_WRITE;
		q.flags = i == 2 ? RP_NOTIFY : 0;
		ck[i] = sub(a, q);
	}
	th_run(a);
	tap_ok(reap(a) == 0 && t.n_ops == 5, "five taken");
	for (i = 5; i-- > 0;)
		th_op_end(&t, i, statuses[i]);
	tap_is_int(reap(a), 5, "ended in reverse order: five completions");
	for (i = 0; i < 5; i++)
		ok += cqs[4 - i].cookie == ck[i] && cqs[4 - i].status == statuses[i] &&
		      cqs[4 - i].op == (i % 2 ? RP_OP_READ : RP_OP_WRITE);
	tap_is_int(ok, 5, "each with the status it ended with");

	submits = t.n_submits;
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, ra, RLEN, hr, 0, 1)), -RP_EBOUNDS,
		   "local bounds are checked here");
	tap_is_int(t.n_submits, submits, "before the peer layer sees it");
	t.submit_status = -RP_EPEERDOWN;
	tap_is_int(status_of(a, q), -RP_EPEERDOWN, "a peer layer that refuses: completed at once");
	t.submit_status = 0;
	remotes_revoke(t.core, TH_PEER, 7, 42);
	tap_is_int(status_of(a, q), -RP_EUNEXPORTED, "after a withdrawal: -RP_EUNEXPORTED");

	th_dest_open(a, TH_PEER, "far.ep", &d);
	ck[0] = sub(a, sqe(RP_SQE_SEND, ra, 0, d, 0, 300));
	th_run(a);
	tap_ok(t.n_ops == 1 && t.ops[0].send && !strcmp(t.ops[0].endpoint, "far.ep"),
	       "a SEND to a remote destination goes to the peer layer");
	th_op_end(&t, 0, 0);
	tap_ok(reap(a) == 1 && cqs[0].cookie == ck[0] && cqs[0].op == RP_OP_SEND &&
		       cqs[0].len == 300,
	       "and completes when it ends");
	tap_is_int(a->s.acct->inflight, 0, "nothing in flight");
	th_remote_close(a, hr);
}

static bool has_acct(uid_t uid)
{
	struct uid_acct *ac;

	for (ac = t.core->accts; ac; ac = ac->next)
		if (ac->uid == uid)
			return true;
	return false;
}

static unsigned n_remotes(void)
{
	return (unsigned)t.core->n_remotes;
}

/* A session that goes while the peer layer holds its operations and a lookup. */
static void test_teardown(void)
{
	struct th_session *c = th_session_new(&t, 1002, 1002), *x = th_session_new(&t, 1004, 1004);
	uint32_t rc = 0, hr, d = 0, ep = 0, rx = 0;
	unsigned freed = t.n_freed, replies, remotes, i, n_ops = t.n_ops;
	struct session *ns = NULL;
	uint32_t prod;
	struct region *region;
	uint64_t ck[4];
	struct th_ring ring;

	th_hello(c);
	th_hello(x);
	th_region(c, RLEN, &rc, NULL);
	hr = open_far(c, "far", 1, 1);
	th_dest_open(c, TH_PEER, "far.ep", &d);
	th_ep_bind(c, "c.ep", &ep);
	ck[0] = sub(c, sqe(RP_SQE_WRITE, rc, 0, hr, 0, 64));
	ck[1] = sub(c, sqe(RP_SQE_READ, rc, 0, hr, 0, 64));
	ck[2] = sub(c, sqe(RP_SQE_SEND, rc, 0, d, 0, 64));
	ck[3] = sub(c, sqe(RP_SQE_POST_RECV, rc, 0, ep, 0, 64));
	th_run(c);
	th_remote_open(c, TH_PEER, "late", NULL);
	tap_ok(t.n_ops == n_ops + 3 && t.n_opens == 1 && c->s.acct->inflight == 4,
	       "three ops and a lookup held by the peer layer, a receive posted");

	/* X exports; a peer's notified WRITE into it is under way. */
	th_region(x, PAGE, &rx, NULL);
	th_export(x, rx, RP_ACCESS_REMOTE_WRITE, "x.exp");
	notify_hold(export_find(t.core, "x.exp"), &ns, &region);

	ring = c->ring; /* the client's mapping stays until the session is freed */
	prod = rp_ring_load(&ring.v.cq->producer);
	replies = c->n_replies;
	th_session_close(c);
	th_session_close(x);
	tap_is_int(t.n_freed, freed, "closed sessions still referred to are not freed");
	tap_is_int(rp_ring_load(&ring.v.cq->producer), prod,
		   "the cancelled receive wrote no completion");
	th_op_end(&t, t.n_ops - 1, 0);
	th_op_end(&t, t.n_ops - 1, -RP_EOUTCOME);
	tap_is_int(rp_ring_load(&ring.v.cq->producer), prod, "nor did two ended ops");
	tap_is_int(t.n_freed, freed, "one op still holds the session");
	remotes = n_remotes();
	th_open_answer(&t, 0, 0, &(struct remote){ .peer = TH_PEER, .inc = 1, .id = 2 });
	tap_ok(c->n_replies == replies && t.dead_sends == 0 && n_remotes() == remotes,
	       "a lookup answered late sends nothing and keeps no handle");
	tap_is_int(t.n_freed, freed, "still held");
	notify_finish(ns, region, 0, 8, 0, 0);
	tap_is_int(t.n_freed, freed + 1, "the exporter is freed when the notification is done");
	th_op_end(&t, t.n_ops - 1, 0);
	tap_is_int(t.n_freed, freed + 2, "the last op's end frees the session");
	for (i = 0; i < 4; i++)
		expected[ck[i]] = 0;
	th_ops_end_all(&t, 0);
	tap_is_int(t.n_freed, freed + 2, "exactly once");
	tap_ok(!has_acct(1002) && !has_acct(1004), "their uids have no account left");
}

/*
 * A local copy bigger than a piece (the tcp transport copies on the loop
 * thread) goes a piece per run: the session's later submissions wait for it
 * (their order holds), other sessions' ops complete in between, and ranges
 * that overlap (a client's own export) still move like memmove.
 */
#define BIG (5u << 20)
#define PIECE (256u << 10) /* xfer.c's XFER_COPY_PIECE */
static void test_big_copy(void)
{
	uint64_t was_bytes = t.cfg.max_registered_bytes;
	struct th_session *c = th_session_new(&t, 1000, 1000), *d = th_session_new(&t, 1001, 1001);
	struct th_session *e = th_session_new(&t, 1000, 1000);
	unsigned char *pc, *pd, *pe, *want = malloc(BIG), small[16];
	uint32_t rc = 0, rd = 0, re = 0, h = 0, self = 0, he = 0, h3 = 0, rd2 = 0, ep = 0, dsd = 0,
		 dse = 0;
	unsigned char *pd2;
	uint64_t big, after, gone, ck;
	unsigned before;
	unsigned runs = 0, n = 0, i;
	struct rp_cqe cq[4];
	int r = 0;

	t.cfg.max_registered_bytes = 4ull * BIG;
	if (!want || th_hello(c) || th_hello(d) || th_hello(e) ||
	    th_region(c, BIG, &rc, (void **)&pc) || th_region(d, BIG, &rd, (void **)&pd) ||
	    th_region(e, BIG, &re, (void **)&pe) ||
	    th_export_for(d, rd, RP_ACCESS_REMOTE_WRITE, "d.big", 1000) ||
	    th_remote_open(c, "", "d.big", &h))
		abort();
	fill(pc, BIG, 5);
	memset(small, 0xa5, sizeof(small));
	memcpy(pc + BIG - sizeof(small), small, sizeof(small));
	big = sub(c, sqe(RP_SQE_WRITE, rc, 0, h, 0, BIG - sizeof(small)));
	after = sub(c, sqe(RP_SQE_WRITE, rc, BIG - sizeof(small), h, 0, sizeof(small)));
	tap_is_int(th_run(c), XFER_YIELD, "a 5 MiB local WRITE: the run yields after a piece");
	tap_ok(reap_n(c, 4) == 0 && c->s.copying && c->s.copying->copied == PIECE,
	       "nothing completed yet: a piece of it copied (%llu bytes)",
	       c->s.copying ? (unsigned long long)c->s.copying->copied : 0ull);
	tap_is_int(status_of(a, sqe(RP_SQE_WRITE, ra, 0, h_rw, 0, 64)), 0,
		   "meanwhile another client's WRITE completes in its own run");
	do {
		r = th_run(c);
		runs++;
		i = (unsigned)reap_n(c, 4);
		if (n + i <= 4)
			memcpy(cq + n, cqs, i * sizeof(cqs[0]));
		n += i;
	} while (r == XFER_YIELD && runs < 1000);
	/* The pieces left, and maybe a run to find the ring empty after a full turn. */
	tap_ok(r == XFER_EMPTY && runs >= BIG / PIECE - 1 && runs <= BIG / PIECE && n == 2,
	       "it takes a run per piece (%u more), then both complete (%u)", runs, n);
	tap_ok(n == 2 && cq[0].cookie == big && cq[0].status == 0 && cq[0].len == BIG - 16 &&
		       cq[1].cookie == after && cq[1].status == 0,
	       "in submission order, each exactly once");
	memcpy(want, pc, BIG - sizeof(small));
	memcpy(want, small, sizeof(small));
	tap_ok(!memcmp(pd, want, BIG - sizeof(small)),
	       "the bytes landed, the later WRITE on top of the earlier");

	/* Overlapping, in the client's own export, either way. */
	th_export(c, rc, RP_ACCESS_REMOTE_WRITE | RP_ACCESS_REMOTE_READ, "c.self");
	th_remote_open(c, "", "c.self", &self);
	for (i = 0; i < 2; i++) {
		uint64_t src = i ? (1u << 20) + 5 : 0, dst = i ? 0 : (1u << 20) + 5;
		uint64_t len = BIG - (1u << 20) - 5;

		fill(pc, BIG, 11 + i);
		memcpy(want, pc, BIG);
		memmove(want + dst, want + src, len);
		sub(c, sqe(RP_SQE_WRITE, rc, src, self, dst, len));
		for (runs = 0; th_run(c) == XFER_YIELD && runs < 1000; runs++)
			;
		tap_ok(reap(c) == 1 && cqs[0].status == 0 && !memcmp(pc, want, BIG),
		       "a 4 MiB WRITE into one's own export %s its source moves like memmove",
		       i ? "below" : "above");
	}
	th_remote_close(c, self);
	th_unexport(c, rc, "c.self");

	/* The exporter withdraws the export mid-copy: the copy stops at its next piece. */
	th_export_for(d, rd, RP_ACCESS_REMOTE_WRITE, "d.big4", 1000);
	th_remote_open(c, "", "d.big4", &h3);
	before = d->n_replies;
	ck = sub(c, sqe(RP_SQE_WRITE, rc, 0, h3, 0, BIG));
	tap_ok(th_run(c) == XFER_YIELD && c->s.copying, "another 5 MiB WRITE, a piece done");
	th_unexport(d, rd, "d.big4");
	tap_ok(d->n_replies == before, "its exporter's UNEXPORT waits for it");
	tap_is_int(th_run(c), XFER_EMPTY, "the next run ends it");
	tap_ok(reap(c) == 1 && cqs[0].cookie == ck && cqs[0].status == -RP_EUNEXPORTED,
	       "with -RP_EUNEXPORTED, once");
	th_jobs_run(&t, TH_MAX_JOBS);
	tap_ok(d->n_replies > before && th_reply(d)->status == 0, "and the UNEXPORT is answered");
	th_remote_close(c, h3);

	/* The exporter frees its region mid-copy: the copy stops too. */
	th_export_for(d, rd, RP_ACCESS_REMOTE_WRITE, "d.big3", 1000);
	th_remote_open(c, "", "d.big3", &h3);
	before = d->n_replies;
	ck = sub(c, sqe(RP_SQE_WRITE, rc, 0, h3, 0, BIG));
	tap_ok(th_run(c) == XFER_YIELD && c->s.copying, "a third 5 MiB WRITE, a piece done");
	r = th_region_free(d, rd);
	for (runs = 0; th_run(c) == XFER_YIELD && runs < 1000; runs++)
		;
	tap_ok(runs == 0 && reap(c) == 1 && cqs[0].cookie == ck && cqs[0].status == -RP_EUNEXPORTED,
	       "its exporter freed the region meanwhile (%d): the copy ends at the next run, once",
	       r);
	th_jobs_run(&t, TH_MAX_JOBS);
	tap_ok(r == 0 || (d->n_replies > before && th_reply(d)->status == 0),
	       "and the free is answered once it is done");

	/* A 5 MiB SEND to a local endpoint moves in pieces too. */
	if (th_region(d, BIG, &rd2, (void **)&pd2) || th_ep_bind(d, "d.ep", &ep) ||
	    th_dest_open(c, "", "d.ep", &dsd))
		abort();
	ck = sub(d, sqe(RP_SQE_POST_RECV, rd2, 0, ep, 0, BIG));
	th_run(d);
	fill(pc, BIG, 31);
	sub(c, sqe(RP_SQE_SEND, rc, 0, dsd, 0, BIG));
	tap_is_int(th_run(c), XFER_YIELD, "a 5 MiB SEND to a local endpoint: a piece per run");
	for (runs = 0; th_run(c) == XFER_YIELD && runs < 1000; runs++)
		;
	tap_ok(reap(c) == 1 && cqs[0].status == 0 && reap(d) == 1 && cqs[0].cookie == ck &&
		       cqs[0].status == 0 && cqs[0].len == BIG && !memcmp(pd2, pc, BIG),
	       "then the SEND and the RECV complete, the message whole");
	ck = sub(d, sqe(RP_SQE_POST_RECV, rd2, 0, ep, 0, BIG));
	th_run(d);
	th_dest_open(e, "", "d.ep", &dse);
	gone = sub(e, sqe(RP_SQE_SEND, re, 0, dse, 0, BIG));
	tap_ok(th_run(e) == XFER_YIELD && e->s.copying, "another client's 5 MiB SEND, half done");
	expected[gone] = 0; /* its session dies: no completion */
	th_session_close(e);
	tap_ok(t.n_ops == 0 && reap(d) == 0, "its client gone, it ended; the receive did not");
	memset(pc, 0x5a, 16);
	tap_is_int(status_of(c, sqe(RP_SQE_SEND, rc, 0, dsd, 0, 16)), 0, "the next SEND");
	tap_ok(reap(d) == 1 && cqs[0].cookie == ck && cqs[0].len == 16 && !memcmp(pd2, pc, 16),
	       "takes that receive, still posted");

	/* A client that goes with a copy half done: the copy ends with it. */
	e = th_session_new(&t, 1000, 1000);
	if (th_hello(e) || th_region(e, BIG, &re, (void **)&pe))
		abort();
	th_export_for(d, rd2, RP_ACCESS_REMOTE_WRITE, "d.big2", 1000);
	th_remote_open(e, "", "d.big2", &he);
	gone = sub(e, sqe(RP_SQE_WRITE, re, 0, he, 0, BIG));
	t.core->pass_sessions = 2; /* as the engine says when other sessions had work */
	tap_ok(th_run(e) == XFER_YIELD && e->s.copying && e->s.copying->copied == 64u << 10,
	       "another 5 MiB WRITE, beside other busy sessions: a smaller piece (64 KiB) done");
	t.core->pass_sessions = 0;
	expected[gone] = 0; /* its session dies: no completion */
	th_session_close(e);
	tap_ok(t.n_ops == 0, "its client gone, it ended too");
	th_session_close(c);
	th_session_close(d);
	t.cfg.max_registered_bytes = was_bytes;
	free(want);
}

/*
 * A region freed while an op still holds it: its id may name another region
 * of the client's by now, so no completion names it. A NOTIFY is not
 * delivered; a receive is cancelled without a region, and one still posted
 * is not filled.
 */
/*
 * Submissions still waiting in the ring when the client closes the handle,
 * unbinds the endpoint or frees the region they name: the id is not handed
 * out again before the daemon took them, so they fail -RP_EBADHANDLE
 * instead of acting on the new object that got the id.
 */
static void test_held_ids(void)
{
	struct th_session *c = th_session_new(&t, 1000, 1000), *d = th_session_new(&t, 1000, 1000);
	uint32_t rc = 0, rd = 0, rd2 = 0, h = 0, h2 = 0, h3 = 0, ep = 0, ep2 = 0, ds = 0, rc2 = 0,
		 rc3 = 0;
	unsigned char *pc, *pd;
	uint64_t wk, rk, fk;
	int st;

	if (th_hello(c) || th_hello(d) || th_region(c, PAGE, &rc, (void **)&pc) ||
	    th_region(d, 2 * PAGE, &rd, (void **)&pd) ||
	    th_export(d, rd, RP_ACCESS_REMOTE_WRITE, "held.a") || th_region(d, PAGE, &rd2, NULL) ||
	    th_export(d, rd2, RP_ACCESS_REMOTE_WRITE, "held.b") ||
	    th_remote_open(c, "", "held.a", &h))
		abort();
	memset(pc, 0x5a, PAGE);
	memset(pd, 0, 2 * PAGE);
	/* A WRITE to held.a waits in the ring; its handle is closed, held.b opened. */
	wk = sub(c, sqe(RP_SQE_WRITE, rc, 0, h, 0, 8));
	tap_is_int(th_remote_close(c, h), 0, "a handle closed with a WRITE still in the ring");
	st = th_remote_open(c, "", "held.b", &h2);
	tap_ok(st == 0 && h2 != h, "the next handle gets another id (%u, not %u)", h2, h);
	th_run(c);
	tap_ok(reap(c) == 1 && cqs[0].cookie == wk && cqs[0].status == -RP_EBADHANDLE,
	       "the WRITE fails -RP_EBADHANDLE: it does not go to the new handle's export");
	tap_is_int(th_remote_close(c, h2), 0, "that handle closed, nothing waiting");
	st = th_remote_open(c, "", "held.a", &h3);
	tap_ok(st == 0 && (h3 == h || h3 == h2),
	       "once the ring moved past them, the ids are used again (%u)", h3);

	/* A receive waits in the ring; its endpoint is unbound and another bound. */
	if (th_ep_bind(d, "held.ep", &ep))
		abort();
	rk = sub(d, sqe(RP_SQE_POST_RECV, rd, 0, ep, 0, 64));
	tap_is_int(th_ep_unbind(d, ep), 0, "an endpoint unbound with a receive still in the ring");
	st = th_ep_bind(d, "held.ep2", &ep2);
	tap_ok(st == 0 && ep2 != ep, "the next endpoint gets another id (%u, not %u)", ep2, ep);
	th_run(d);
	tap_ok(reap(d) == 1 && cqs[0].cookie == rk && cqs[0].status == -RP_EBADHANDLE,
	       "the receive fails -RP_EBADHANDLE: it is not posted on the new endpoint");
	if (th_dest_open(c, "", "held.ep2", &ds))
		abort();
	tap_is_int(status_of(c, sqe(RP_SQE_SEND, rc, 0, ds, 0, 8)), -RP_ENORECV,
		   "a message to the new endpoint finds no receive");

	/* A WRITE from a region waits in the ring; the region is freed, another made. */
	if (th_region(c, PAGE, &rc2, NULL))
		abort();
	fk = sub(c, sqe(RP_SQE_WRITE, rc2, 0, h3, 0, 8));
	tap_is_int(th_region_free(c, rc2), 0, "a region freed with a WRITE from it in the ring");
	th_jobs_run(&t, TH_MAX_JOBS);
	st = th_region(c, PAGE, &rc3, NULL);
	tap_ok(st == 0 && rc3 != rc2, "the next region gets another id (%u, not %u)", rc3, rc2);
	th_run(c);
	tap_ok(reap(c) == 1 && cqs[0].cookie == fk && cqs[0].status == -RP_EBADHANDLE,
	       "the WRITE fails -RP_EBADHANDLE: it does not write from the new region");
	th_session_close(c);
	th_session_close(d);
}

static void test_freed_ids(void)
{
	uint64_t was_bytes = t.cfg.max_registered_bytes;
	uint32_t was_regions = t.cfg.max_regions;
	struct th_session *c = th_session_new(&t, 1000, 1000), *d = th_session_new(&t, 1001, 1001);
	uint32_t rc = 0, rd = 0, rd2 = 0, rd3 = 0, rd4 = 0, h = 0, ep = 0, ds = 0, rx = 0, re = 0,
		 dse = 0, ids[20], again[20];
	uint32_t rf = 0, epf = 0, dsf = 0;
	struct th_session *e, *f;
	uint64_t gone;
	unsigned char *pc, *pd;
	unsigned runs, notes, i, k;
	struct rp_sqe q;
	uint64_t ck, rk;
	int n;

	t.cfg.max_registered_bytes = 4ull * BIG;
	t.cfg.max_regions = 64;
	if (th_hello(c) || th_hello(d) || th_region(c, BIG, &rc, (void **)&pc) ||
	    th_region(d, BIG, &rd, (void **)&pd) ||
	    th_export_for(d, rd, RP_ACCESS_REMOTE_WRITE, "d.note", 1000) ||
	    th_remote_open(c, "", "d.note", &h))
		abort();
	q = sqe(RP_SQE_WRITE, rc, 0, h, 0, BIG);
	q.flags = RP_NOTIFY;
	ck = sub(c, q);
	tap_ok(th_run(c) == XFER_YIELD && c->s.copying, "a notified 5 MiB WRITE, a piece done");
	th_region_free(d, rd);
	th_jobs_run(&t, TH_MAX_JOBS);
	if (th_region(d, BIG, &rd2, (void **)&pd))
		abort();
	tap_is_int(rd2, rd, "its target region freed, the exporter's next region has its id");
	for (runs = 0; th_run(c) == XFER_YIELD && runs < 1000; runs++)
		;
	tap_ok(reap(c) == 1 && cqs[0].cookie == ck && cqs[0].status == -RP_EUNEXPORTED,
	       "the WRITE fails (its target withdrawn), once");
	n = reap(d);
	for (i = notes = 0; i < (unsigned)n; i++)
		notes += cqs[i].op == RP_OP_NOTIFY;
	tap_is_int(notes, 0, "the exporter gets no NOTIFY naming that id");
	tap_is_int(d->s.rings.cq_reserved, 0, "its notification slot is given back");

	/* A receive posted, its region freed: a message does not go into it. */
	if (th_ep_bind(d, "d.ep.ids", &ep) || th_dest_open(c, "", "d.ep.ids", &ds))
		abort();
	rk = sub(d, sqe(RP_SQE_POST_RECV, rd2, 0, ep, 0, 64));
	th_run(d);
	th_region_free(d, rd2);
	th_jobs_run(&t, TH_MAX_JOBS);
	if (th_region(d, BIG, &rd3, (void **)&pd))
		abort();
	tap_is_int(rd3, rd2, "a receive posted in a region, freed; the next region has its id");
	tap_is_int(status_of(c, sqe(RP_SQE_SEND, rc, 0, ds, 0, 16)), -RP_ENORECV,
		   "a SEND finds no receive to fill");
	tap_ok(reap(d) == 1 && cqs[0].cookie == rk && cqs[0].status == -ECANCELED &&
		       cqs[0].region == 0 && cqs[0].len == 0,
	       "the receive is cancelled, naming no region");

	/* A receive a 5 MiB SEND is filling, its region freed meanwhile. */
	rk = sub(d, sqe(RP_SQE_POST_RECV, rd3, 0, ep, 0, BIG));
	th_run(d);
	ck = sub(c, sqe(RP_SQE_SEND, rc, 0, ds, 0, BIG));
	tap_ok(th_run(c) == XFER_YIELD && c->s.copying,
	       "a 5 MiB SEND takes a receive, a piece done");
	th_region_free(d, rd3);
	th_jobs_run(&t, TH_MAX_JOBS);
	if (th_region(d, BIG, &rd, (void **)&pd))
		abort();
	tap_is_int(rd, rd3, "the receive's region freed; the next region has its id");
	tap_ok(th_run(c) == XFER_EMPTY && !c->s.copying, "the SEND stops at its next piece");
	tap_ok(reap(c) == 1 && cqs[0].cookie == ck && cqs[0].status == -RP_ENORECV,
	       "the SEND ends -RP_ENORECV, once: nobody got it");
	tap_ok(reap(d) == 1 && cqs[0].cookie == rk && cqs[0].status == -ECANCELED &&
		       cqs[0].region == 0 && cqs[0].len == 0,
	       "the receive is cancelled, naming no region");

	/* A receive being filled, its region freed, then the message fails: its sender goes. */
	e = th_session_new(&t, 1000, 1000);
	if (th_hello(e) || th_region(e, BIG, &re, NULL) || th_dest_open(e, "", "d.ep.ids", &dse) ||
	    th_region(d, BIG, &rd4, NULL))
		abort();
	rk = sub(d, sqe(RP_SQE_POST_RECV, rd4, 0, ep, 0, BIG));
	th_run(d);
	gone = sub(e, sqe(RP_SQE_SEND, re, 0, dse, 0, BIG));
	tap_ok(th_run(e) == XFER_YIELD && e->s.copying, "another 5 MiB SEND takes a receive");
	th_region_free(d, rd4);
	th_jobs_run(&t, TH_MAX_JOBS);
	expected[gone] = 0; /* its session dies: no completion */
	th_session_close(e);
	tap_ok(reap(d) == 1 && cqs[0].cookie == rk && cqs[0].status == -ECANCELED &&
		       cqs[0].region == 0,
	       "its region freed, then its sender gone: the receive is cancelled, not put back");

	/* A receive being filled, its client gone: the SEND stops, nobody got it. */
	f = th_session_new(&t, 1001, 1001);
	if (th_hello(f) || th_region(f, BIG, &rf, NULL) || th_ep_bind(f, "f.ep", &epf) ||
	    th_dest_open(c, "", "f.ep", &dsf))
		abort();
	gone = sub(f, sqe(RP_SQE_POST_RECV, rf, 0, epf, 0, BIG));
	th_run(f);
	expected[gone] = 0; /* its session dies: no completion */
	ck = sub(c, sqe(RP_SQE_SEND, rc, 0, dsf, 0, BIG));
	tap_ok(th_run(c) == XFER_YIELD && c->s.copying, "a 5 MiB SEND takes a receive of F's");
	th_session_close(f);
	th_jobs_run(&t, TH_MAX_JOBS);
	tap_ok(th_run(c) == XFER_EMPTY && !c->s.copying && reap(c) == 1 && cqs[0].cookie == ck &&
		       cqs[0].status == -RP_ENORECV,
	       "F gone: the SEND stops at its next piece, -RP_ENORECV, once");

	/* A NOTIFY naming a region is in the ring, not reaped, when that region is freed. */
	if (th_export_for(d, rd, RP_ACCESS_REMOTE_WRITE, "d.note2", 1000) ||
	    th_remote_open(c, "", "d.note2", &h))
		abort();
	q = sqe(RP_SQE_WRITE, rc, 0, h, 0, 64);
	q.flags = RP_NOTIFY;
	tap_is_int(status_of(c, q), 0, "a notified WRITE; its exporter does not reap yet");
	th_region_free(d, rd);
	th_jobs_run(&t, TH_MAX_JOBS);
	if (th_region(d, PAGE, &rd2, NULL))
		abort();
	tap_ok(rd2 != rd, "its region freed: the next region gets another id (%u, not %u)", rd2,
	       rd);
	tap_ok(reap(d) == 1 && cqs[0].op == RP_OP_NOTIFY && cqs[0].region == rd,
	       "the NOTIFY names the freed id, which names nothing else");
	th_region_free(d, rd2);
	th_jobs_run(&t, TH_MAX_JOBS);
	if (th_region(d, PAGE, &rd3, NULL))
		abort();
	tap_ok(rd3 == rd || rd3 == rd2, "once reaped, freed ids are used again (%u)", rd3);

	/* The queue of freed ids, wrapped and grown: each comes back once, none twice. */
	if (th_region(d, PAGE, &rx, NULL) ||
	    th_export_for(d, rx, RP_ACCESS_REMOTE_WRITE, "d.note3", 1000) ||
	    th_remote_open(c, "", "d.note3", &h))
		abort();
	q = sqe(RP_SQE_WRITE, rc, 0, h, 0, 8);
	q.flags = RP_NOTIFY;
	for (k = 0; k < 3; k++) {
		unsigned cnt = k ? 20 : 10, hits = 0, same = 0, j;

		if (status_of(c, q) != 0)
			abort(); /* a NOTIFY that the exporter does not reap yet */
		for (j = 0; j < cnt; j++)
			if (th_region(d, PAGE, &ids[j], NULL))
				abort();
		for (j = 0; j < cnt; j++)
			th_region_free(d, ids[j]);
		th_jobs_run(&t, TH_MAX_JOBS);
		reap(d);
		for (j = 0; j < cnt; j++)
			if (th_region(d, PAGE, &again[j], NULL))
				abort();
		for (j = 0; j < cnt; j++)
			for (i = 0; i < cnt; i++) {
				hits += again[j] == ids[i];
				same += i != j && again[j] == again[i];
			}
		tap_ok(hits == cnt && !same,
		       "round %u: %u regions freed unreaped, then reaped: the next %u get their "
		       "ids, "
		       "each once (%u of %u, %u twice)",
		       k + 1, cnt, cnt, hits, cnt, same);
		for (j = 0; j < cnt; j++)
			th_region_free(d, again[j]);
		th_jobs_run(&t, TH_MAX_JOBS);
	}
	th_session_close(c);
	th_session_close(d);
	th_jobs_run(&t, TH_MAX_JOBS);
	t.cfg.max_registered_bytes = was_bytes;
	t.cfg.max_regions = was_regions;
}

int main(void)
{
	unsigned i, missing = 0, dup = 0, extra = 0;

	log_set_level(LOG_ERR);
	if (th_init(&t) < 0 || memguard_init() < 0)
		return 99;
	setup();
	test_write_read();
	test_self();
	test_big_copy();
	test_freed_ids();
	test_held_ids();
	test_notify();
	test_doorbells();
	test_batching();
	test_stall_give_back();
	test_send_recv();
	test_take();
	test_take_acl();
	test_notify_hold();
	test_inflight();
	test_stall();
	test_corrupt();
	test_entry_index();
	test_corrupt_consumer();
	test_peer_ops();
	test_teardown();

	for (i = 1; i <= next_cookie; i++) {
		missing += expected[i] && !seen[i];
		dup += seen[i] > 1;
		extra += !expected[i] && seen[i];
	}
	tap_ok(next_cookie > 2000 && !missing && !dup && !extra && !stray,
	       "every accepted submission got exactly one completion (%u missing, %u twice, "
	       "%u unexpected, %u stray of %llu)",
	       missing, dup, extra, stray, (unsigned long long)next_cookie);
	th_session_close(a);
	th_session_close(b);
	tap_is_int(t.dead_sends, 0, "no reply offered for a dead session");
	tap_is_int(t.n_freed, t.core->next_id - 1, "every session freed once");
	tap_ok(t.core->sessions == NULL && t.core->accts == NULL && t.core->exports == NULL &&
		       t.core->endpoint_names.n == 0 && t.core->export_names.n == 0 &&
		       t.core->n_remotes == 0 && t.core->remote_keys.n == 0 &&
		       t.core->n_exports == 0 && t.core->n_regions == 0 && t.n_ops == 0,
	       "nothing is left");
	th_fini(&t);
	tap_plan_done();
	return tap_exit();
}
