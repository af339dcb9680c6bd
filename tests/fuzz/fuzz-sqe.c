/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for submission-entry validation and the operations that
 * follow. Two sessions get a fixed set of regions, exports, handles (local,
 * on a fake peer, to one's own export), endpoints and destinations; then the
 * input (format in fuzz-core.h) writes entries into their rings, runs
 * xfer_run(), reaps, ends operations the fake peer layer holds, delivers
 * messages and notified writes from a peer, sends control requests, and
 * overwrites ring indexes.
 *
 * Every input starts from the same state, so that a crash reproduces alone,
 * but the sessions and their regions (rings and memfds: most of the cost)
 * are kept while they live: once everything owed was delivered, their ring
 * indexes are set back to a fresh ring's, and what the input closed, freed,
 * withdrew or unbound is made again with the same ids.
 *
 * Checked, besides "no crash, no leak": a completion carries the cookie of
 * an entry its own session submitted and the daemon consumed, at most once;
 * the completion producer never passes the consumer by more than the ring's
 * entries and the daemon never consumes past the producer; a failed
 * operation reports no bytes. A client that wrote a ring index is hostile:
 * for it only "no crash" holds. At the end, for a session that is still
 * well-behaved, every consumed entry got exactly one completion, nothing
 * stays reserved or in flight; a closed session is freed exactly once, once
 * the peer layer let go of it, and leaves no region or account behind.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/base/log.h"
#include "../unit/core-harness.h"
#include "fuzz-core.h"

#define FUZZ_MAX_INPUT 16384
#define MAX_COOKIES 8192
#define PAGE 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

_Static_assert(FS_RAW_LEN == offsetof(struct rp_sqe, seq), "FS_RAW_LEN");

struct side {
	struct th_session *ts; /* NULL once closed (it may be freed) */
	bool hostile;	       /* wrote a ring index */
	bool insane;	       /* submitted an entry the daemon must refuse (-EPROTO) */
	uint32_t accounted;    /* submission index up to which consumption is recorded */
	uint64_t cookie_at[RP_RING_SQ_ENTRIES];
};

static struct th t;
static struct side sides[2];
static uint8_t owner[MAX_COOKIES]; /* side + 1 */
static uint8_t consumed[MAX_COOKIES], seen[MAX_COOKIES];
static uint64_t next_cookie;
static unsigned n_closed; /* sessions closed, each to be freed exactly once */
static bool trace;	  /* FUZZ_CORE_TRACE set: say what happens, to write seeds */

/* An invariant: a violation is a crash libFuzzer reports, with the condition. */
#define check(cond)                                                                \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                   \
		}                                                                  \
	} while (0)

/* ---- The fixture. ---- */

#define expect_id(status, id, want) check((status) == 0 && (id) == (want))

/* Side @k's session with its regions and destinations (there is no DEST_CLOSE). */
static void build_side(int k)
{
	static const char *const ep[2] = { "a.ep", "b.ep" };
	struct th_session *ts = th_session_new(&t, 1000 + k, 1000 + k);
	uint32_t id = 0;

	/* A speaks the newest protocol, B version 2 (ring entries without their index). */
	check(th_hello_v(ts, RP_PROTO_VERSION_MIN, k ? 2 : RP_PROTO_VERSION_MAX) == 0);
	expect_id(th_region(ts, 4 * PAGE, &id, NULL), id, FS_REGION_BIG);
	expect_id(th_region(ts, PAGE, &id, NULL), id, FS_REGION_SMALL);
	/* The other side's endpoint, one's own, nobody's, one on the peer. */
	expect_id(th_dest_open(ts, "", ep[!k], &id), id, FS_D_B);
	expect_id(th_dest_open(ts, "", ep[k], &id), id, FS_D_SELF);
	expect_id(th_dest_open(ts, "", "nobody", &id), id, FS_D_NOBODY);
	expect_id(th_dest_open(ts, TH_PEER, "far.ep", &id), id, FS_D_FAR);
	memset(&sides[k], 0, sizeof(sides[k]));
	sides[k].ts = ts;
}

/* Handle @id of @ts leads to the live local export @name, or is opened again. */
static void local_handle(struct th_session *ts, uint32_t id, const char *name)
{
	struct export *e = idtab_get(&ts->s.remotes, id);
	uint32_t got = 0;

	if (e && e == export_find(t.core, name))
		return;
	if (e)
		check(th_remote_close(ts, id) == 0);
	expect_id(th_remote_open(ts, "", name, &got), got, id);
}

/* A's handle to an export on the peer, not withdrawn, or opened again. */
static void far_handle(struct th_session *a)
{
	struct remote far = { .peer = TH_PEER, .inc = 1, .id = 1, .len = 1 << 16 };
	struct export *e = idtab_get(&a->s.remotes, FS_H_FAR);

	if (e && e->remote && !e->remote->revoked)
		return;
	if (e)
		check(th_remote_close(a, FS_H_FAR) == 0);
	check(th_remote_open(a, TH_PEER, "far", NULL) == 1);
	far.access = RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE;
	th_open_answer(&t, t.n_opens - 1, 0, &far);
	check(((const struct rp_remote_reply *)th_reply_body(a))->id == FS_H_FAR);
}

/* Exports are private to their owner: each names the other side's uid. */
static void export_once(struct th_session *ts, uint32_t access, const char *name,
			const struct th_session *other)
{
	if (!export_find(t.core, name))
		check(th_export_for(ts, FS_REGION_BIG, access, name, other->s.cred.uid) == 0);
}

/*
 * The fixture every input starts from, made or repaired: what an earlier
 * input closed, freed, withdrew or unbound is made again, with the same ids.
 * Sessions and regions (rings and memfds) are most of the cost, so they are
 * kept while they live.
 */
static void make(void)
{
	uint32_t rw = RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE, id = 0;
	struct th_session *a, *b;
	int k;

	if (!t.core) {
		if (th_init(&t) < 0)
			abort();
		t.lean = true;
	}
	for (k = 0; k < 2; k++) {
		if (!sides[k].ts)
			build_side(k);
		if (!idtab_get(&sides[k].ts->s.regions, FS_REGION_SMALL))
			expect_id(th_region(sides[k].ts, PAGE, &id, NULL), id, FS_REGION_SMALL);
	}
	a = sides[0].ts;
	b = sides[1].ts;
	export_once(b, rw, "b.rw", a);
	export_once(b, RP_ACCESS_REMOTE_READ, "b.ro", a);
	export_once(a, rw, "a.self", b);
	local_handle(a, FS_H_RW, "b.rw");
	local_handle(a, FS_H_RO, "b.ro");
	far_handle(a);
	local_handle(a, FS_H_SELF, "a.self");
	local_handle(b, 1, "a.self");
	if (!idtab_get(&a->s.endpoints, FS_EP))
		expect_id(th_ep_bind(a, "a.ep", &id), id, FS_EP);
	if (!idtab_get(&b->s.endpoints, FS_EP))
		expect_id(th_ep_bind(b, "b.ep", &id), id, FS_EP);
}

/* ---- What the client does. ---- */

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static void submit(int k, struct rp_sqe q)
{
	static const uint8_t zero[sizeof(q.pad)];
	struct side *sd = &sides[k];
	struct th_ring *r;
	int err;

	if (!sd->ts || next_cookie + 1 >= MAX_COOKIES)
		return;
	r = &sd->ts->ring;
	q.cookie = ++next_cookie;
	owner[q.cookie] = (uint8_t)(k + 1);
	if (sd->hostile) {
		/* Whatever the indexes say: a hostile client writes anyway. */
		if (sd->ts->s.version >= RP_PROTO_VERSION_SEQ)
			q.seq = r->sq_tail + 1;
		r->v.sqes[r->sq_tail & (r->v.sq_entries - 1)] = q;
		rp_ring_store(&r->v.sq->producer, ++r->sq_tail);
		return;
	}
	err = th_submit(sd->ts, &q);
	check(err == 0 || err == -EAGAIN);
	if (err)
		return;
	sd->cookie_at[(r->sq_tail - 1) & (RP_RING_SQ_ENTRIES - 1)] = q.cookie;
	if (q.opcode < RP_SQE_WRITE || q.opcode > RP_SQE_POST_RECV ||
	    memcmp(q.pad, zero, sizeof(zero)) ||
	    (q.seq && sd->ts->s.version < RP_PROTO_VERSION_SEQ))
		sd->insane = true;
}

static struct rp_sqe compact(const uint8_t *p)
{
	struct rp_sqe q;
	const struct fs_sqe *c = (const struct fs_sqe *)p;

	memset(&q, 0, sizeof(q));
	q.opcode = (c->opcode & 3) + RP_SQE_WRITE;
	q.region = c->region;
	q.target = c->target;
	q.flags = c->flags;
	q.offset = le(c->offset, 2);
	q.remote_offset = le(c->remote_offset, 2);
	q.len = le(c->len, 2);
	q.imm = c->imm;
	return q;
}

static void close_side(int k)
{
	if (!sides[k].ts)
		return;
	n_closed++;
	th_session_close(sides[k].ts);
	sides[k].ts = NULL;
}

/* Entries the daemon consumed since the last look are now owed a completion. */
static void account(int k)
{
	struct side *sd = &sides[k];
	uint32_t cons;

	if (!sd->ts || sd->hostile)
		return;
	cons = rp_ring_load(&sd->ts->ring.v.sq->consumer);
	check(rp_ring_count(sd->ts->ring.sq_tail, cons, RP_RING_SQ_ENTRIES) >= 0);
	check(rp_ring_count(cons, sd->accounted, RP_RING_SQ_ENTRIES) >= 0);
	for (; sd->accounted != cons; sd->accounted++)
		consumed[sd->cookie_at[sd->accounted & (RP_RING_SQ_ENTRIES - 1)]] = 1;
}

static void run(int k, uint8_t cmd)
{
	struct session *s;
	int r;

	if (!sides[k].ts)
		return;
	s = &sides[k].ts->s;
	t.core->batching = cmd & FS_RUN_PASS;
	core_pass_begin(t.core);
	r = xfer_run(s);
	core_publish(t.core);
	t.core->batching = false;
	check(!t.core->dirty && !s->dirty);
	check(r == XFER_EMPTY || r == XFER_STALLED || r == XFER_YIELD || r == -EPROTO);
	check(r != -EPROTO || sides[k].hostile || sides[k].insane); /* only bad input is fatal */
	account(k);
	if (trace)
		fprintf(stderr, "%c: xfer_run %d, consumed up to %u\n", 'A' + k, r,
			sides[k].accounted);
	if (r < 0) {
		close_side(k); /* the glue disconnects it */
		return;
	}
	if ((cmd & FS_RUN_ARM) && !xfer_arm(s))
		check(xfer_pending(s));
}

static void check_cqe(int k, const struct rp_cqe *c)
{
	if (trace)
		fprintf(stderr, "%c: cqe cookie %llu op %u status %d len %u\n", 'A' + k,
			(unsigned long long)c->cookie, c->op, c->status, c->len);
	if (c->op == RP_OP_NOTIFY) {
		check(c->cookie == 0 && c->status == 0 && c->region);
		return;
	}
	check(c->op >= RP_OP_WRITE && c->op <= RP_OP_RECV && c->status <= 0);
	check(c->status == 0 || c->len == 0);
	check(c->cookie && c->cookie < MAX_COOKIES && owner[c->cookie] == k + 1);
	check(consumed[c->cookie] && !seen[c->cookie]++);
}

/* Reap up to @max completions: how many. */
static int reap(int k, int max)
{
	struct rp_cqe c[64];
	int n, i, total = 0;

	if (!sides[k].ts || sides[k].hostile)
		return 0;
	while (max > 0) {
		n = th_reap(sides[k].ts, c, max < 64 ? max : 64);
		check(n >= 0);
		if (!n)
			break;
		for (i = 0; i < n; i++)
			check_cqe(k, &c[i]);
		total += n;
		max -= n;
	}
	return total;
}

static void set_index(int k, uint8_t which, uint32_t v)
{
	struct th_ring *r;

	if (!sides[k].ts)
		return;
	r = &sides[k].ts->ring;
	sides[k].hostile = true;
	switch (which % FS_IX_N) {
	case FS_IX_SQ_PRODUCER:
		r->sq_tail = v;
		rp_ring_store(&r->v.sq->producer, v);
		break;
	case FS_IX_CQ_CONSUMER:
		r->cq_head = v;
		rp_ring_store(&r->v.cq->consumer, v);
		break;
	case FS_IX_SQ_CONSUMER:
		rp_ring_store(&r->v.sq->consumer, v);
		break;
	default:
		rp_ring_store(&r->v.cq->producer, v);
		break;
	}
}

/* ---- What the rest of the world does. ---- */

static const int peer_statuses[] = {
	0,
	-RP_EREMOTEACCESS,
	-RP_EREMOTEBOUNDS,
	-RP_EOUTCOME,
	-RP_EPEERDOWN,
	-RP_EUNEXPORTED,
	-ECANCELED,
	-RP_ENORECV,
};

static void peer_end(uint8_t i, uint8_t st)
{
	if (t.n_ops)
		th_op_end(&t, i % t.n_ops, peer_statuses[st % 8]);
}

static void ctl(int k, uint8_t action)
{
	struct th_session *ts = sides[k].ts, *b = sides[1].ts, *a = sides[0].ts;

	switch (action % FS_CTL_N) {
	case FS_CTL_FREE_REGION:
		if (ts)
			check(th_region_free(ts, FS_REGION_SMALL) <= 0);
		break;
	case FS_CTL_UNEXPORT:
		if (b)
			check(th_unexport(b, FS_REGION_BIG, "b.rw") <= 0);
		break;
	case FS_CTL_UNBIND:
		if (ts)
			check(th_ep_unbind(ts, FS_EP) <= 0);
		break;
	case FS_CTL_CLOSE_HANDLE:
		if (a)
			check(th_remote_close(a, FS_H_RW) <= 0);
		break;
	case FS_CTL_PEER_REFUSE:
		t.submit_status = t.submit_status ? 0 : -RP_EPEERDOWN;
		break;
	case FS_CTL_INFLIGHT:
		t.cfg.max_inflight = t.cfg.max_inflight == 2 ? 4096 : 2;
		break;
	case FS_CTL_RELEASE:
		close_side(k);
		break;
	case FS_CTL_REVOKE:
		remotes_revoke(t.core, TH_PEER, 1, 1);
		break;
	}
}

/* A peer's SEND to this side's endpoint, or its notified WRITE into this side's export. */
static void rx(int k, uint8_t cmd, uint8_t len, uint8_t st)
{
	struct session *ns = NULL;
	struct export *e;
	struct op *rop;
	struct region *region;

	if (cmd & 0x08) {
		if (endpoint_take(t.core, k ? "b.ep" : "a.ep", len, NULL, "p", &rop) < 0)
			return;
		memset(recv_addr(rop), 0xab, len);
		recv_finish(t.core, rop, len, st & 1 ? -EIO : 0);
		return;
	}
	e = export_find(t.core, k ? "b.rw" : "a.self");
	if (e && notify_hold(e, &ns, &region) == 0)
		notify_finish(ns, region, len, 1, st, st & 1 ? -EIO : 0);
}

/* The completion ring of a well-behaved live side never overflows. */
static void invariants(void)
{
	int k;

	for (k = 0; k < 2; k++) {
		struct th_ring *r;

		if (!sides[k].ts || sides[k].hostile)
			continue;
		r = &sides[k].ts->ring;
		check(rp_ring_count(rp_ring_load(&r->v.cq->producer), r->cq_head,
				    r->v.cq_entries) >= 0);
	}
}

/* One record: its length, or 0 if the input ends inside it. */
static size_t step(const uint8_t *p, size_t n)
{
	uint8_t cmd = p[0];
	int k = cmd & FS_B ? 1 : 0;
	struct rp_sqe q;
	unsigned i;

	switch (cmd & FS_CMD_MASK) {
	case FS_SQE:
		if (n < 2 + sizeof(struct fs_sqe))
			return 0;
		q = compact(p + 2);
		for (i = 0; i <= p[1]; i++)
			submit(k, q);
		return 2 + sizeof(struct fs_sqe);
	case FS_RAW:
		i = cmd & FS_RAW_PAD ? sizeof(q) : FS_RAW_LEN;
		if (n < 1 + i)
			return 0;
		memset(&q, 0, sizeof(q));
		memcpy(&q, p + 1, i);
		submit(k, q);
		return 1 + i;
	case FS_RUN:
		run(k, cmd);
		return 1;
	case FS_REAP:
		if (n < 2)
			return 0;
		reap(k, p[1] + 1);
		return 2;
	case FS_INDEX:
		if (n < 6)
			return 0;
		set_index(k, p[1], (uint32_t)le(p + 2, 4));
		return 6;
	case FS_PEER:
		if (n < 3)
			return 0;
		peer_end(p[1], p[2]);
		return 3;
	case FS_CTL:
		if (n < 2)
			return 0;
		ctl(k, p[1]);
		return 2;
	default:
		if (n < 3)
			return 0;
		rx(k, cmd, p[1], p[2]);
		return 3;
	}
}

/* Everything still owed is delivered: each consumed entry completed exactly once. */
static void finish(void)
{
	int k;
	uint64_t c;

	th_ops_end_all(&t, 0);
	for (k = 0; k < 2; k++) {
		struct endpoint *ep =
			sides[k].ts ? idtab_get(&sides[k].ts->s.endpoints, FS_EP) : NULL;

		if (ep && ep->head) /* its posted receives end (make() binds it again) */
			check(th_ep_unbind(sides[k].ts, FS_EP) == 0);
	}
	for (k = 0; k < 2; k++) {
		if (!sides[k].ts || sides[k].hostile)
			continue;
		account(k);
		reap(k, RP_RING_CQ_ENTRIES * 2);
		for (c = 1; c <= next_cookie; c++)
			if (owner[c] == k + 1)
				check(seen[c] == consumed[c]);
	}
}

/* Closed sessions were freed once each; nothing of theirs is left. */
static void check_core(void)
{
	unsigned k, i, regions = 0, live = 0, accts = 0;
	struct uid_acct *ac;

	for (k = 0; k < 2; k++) {
		if (!sides[k].ts)
			continue;
		live++;
		for (i = 1; i <= sides[k].ts->s.regions.n; i++)
			regions += idtab_get(&sides[k].ts->s.regions, i) != NULL;
	}
	for (ac = t.core->accts; ac; ac = ac->next)
		accts++;
	check(t.n_freed == n_closed && t.dead_sends == 0 && !t.n_ops);
	check(t.core->n_sessions == live && t.core->n_regions == regions && accts == live);
}

/*
 * A quiescent session (nothing reserved, nothing in flight: finish() saw to
 * that) gets the indexes, flags and empty submission slots of a fresh ring,
 * even if its client scribbled on them.
 */
static void rewind_side(int k)
{
	struct th_session *ts = sides[k].ts;
	struct th_ring *r = &ts->ring;

	check(ts->s.rings.cq_reserved == 0 && ts->s.acct->inflight == 0);
	rp_ring_store(&r->v.sq->producer, 0);
	rp_ring_store(&r->v.sq->consumer, 0);
	rp_ring_store(&r->v.cq->producer, 0);
	rp_ring_store(&r->v.cq->consumer, 0);
	atomic_store(&r->v.sq->flags, RP_RING_NEED_WAKEUP);
	atomic_store(&r->v.cq->flags, 0);
	memset(r->v.sqes, 0, sizeof(*r->v.sqes) * r->v.sq_entries);
	memset(r->v.cqes, 0, sizeof(*r->v.cqes) * r->v.cq_entries); /* their laps */
	ts->s.rings.sq_head = ts->s.rings.cq_tail = 0;
	r->sq_tail = r->cq_head = 0;
	/* Freed ids wait for the rings to pass indices rewound here. */
	idtab_unhold(&ts->s.regions, 0, 0, 0, true);
	idtab_unhold(&ts->s.remotes, 0, 0, 0, true);
	idtab_unhold(&ts->s.endpoints, 0, 0, 0, true);
	memset(&sides[k], 0, sizeof(sides[k]));
	sides[k].ts = ts;
}

static void new_input(void)
{
	make();
	t.submit_status = 0;
	t.cfg.max_inflight = 4096;
	memset(owner, 0, sizeof(owner[0]) * (next_cookie + 1));
	memset(consumed, 0, sizeof(consumed[0]) * (next_cookie + 1));
	memset(seen, 0, sizeof(seen[0]) * (next_cookie + 1));
	next_cookie = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool quiet;
	size_t off = 0, n;
	int k;

	if (!quiet) {
		log_set_level(LOG_CRIT);
		trace = getenv("FUZZ_CORE_TRACE") != NULL;
		quiet = true;
	}
	if (size > FUZZ_MAX_INPUT)
		return 0;
	new_input();
	while (off < size && (n = step(data + off, size - off)) > 0) {
		off += n;
		invariants();
	}
	finish();
	check_core();
	for (k = 0; k < 2; k++)
		if (sides[k].ts)
			rewind_side(k);
	return 0;
}
