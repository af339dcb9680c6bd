/* SPDX-License-Identifier: MIT */
/*
 * rdmaproxy-perf, the measuring side: one session per (test, size) with the
 * server over the control fd, a discarded warm-up phase, then the measured
 * phase.
 *
 * Accounting: every submission carries a cookie (phase generation << 40 |
 * sequence number) and every completion must match exactly one submission
 * of the current phase that has not completed yet; anything else (an
 * unknown, stale or repeated cookie, a completion of the wrong kind) aborts
 * the run as a protocol error. A phase ends only when every op it submitted
 * has completed.
 *
 * Latency methods:
 *  - write_lat: ib_write_lat's ping-pong. Each side writes its buffer into
 *    the other's exported buffer and spins on the last byte of its own
 *    buffer for the new sequence value; one sample is half a round trip.
 *  - send_lat: ping-pong of messages between two endpoints; half a round trip.
 *  - read_lat: one read outstanding, submit to completion: a full round trip
 *    (as ib_read_lat).
 *  - write_sync: the same for a write: what an application that waits for
 *    each write's completion pays (there is no perftest counterpart).
 */
#include "perf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GEN_SHIFT 40
#define SEQ_MASK ((1ull << GEN_SHIFT) - 1)
#define RECV_TAG (1ull << 39)
#define STALL_US 30e6 /* no completion for this long: give up */
/*
 * Empty reaps between looks at the clock while waiting for a completion: a
 * clock read costs about as much as a poll of the ring, and on the timed
 * path it would be part of what is measured.
 */
#define STALL_CHECK 1024u
#define LAT_REAP_BATCH 16

struct perf_client {
	const struct perf_opts *o;
	struct rp_client *c;
	int ctl;
	unsigned session;
	const char *peer; /* NULL: this node */
	/* The current session. */
	enum perf_op op;
	enum perf_metric metric;
	size_t size, nslots, used_slots;
	struct rp_region *data, *land, *credit;
	struct rp_remote *rm;
	struct rp_endpoint *ep;
	struct perf_msg ready;
	char c_name[RP_NAME_LEN + 1];
	uint64_t *slot_hash;
	uint64_t credit_seen, sent_total, ok_total, sum, recv_seq;
	uint8_t lat_v;
	/* The current phase. */
	uint64_t gen, posted, done, ok, errors;
	int first_error;
	uint8_t *seen;
	uint64_t seen_cap;
	double *samples;
	uint64_t nsamples, samples_cap;
	double last_progress;
	double lat_end; /* latency phases: when the last timed op ended (us) */
	const char *label;
};

const char *perf_client_node(const struct perf_client *pc)
{
	return rp_node_name(pc->c);
}

int perf_client_new(const struct perf_opts *o, int ctl, struct perf_client **ret)
{
	struct perf_client *pc = calloc(1, sizeof(*pc));
	int r;

	if (!pc)
		return -ENOMEM;
	pc->o = o;
	pc->ctl = ctl;
	r = rp_connect(o->socket, &pc->c);
	if (r < 0) {
		perf_set_error("connect to the daemon: %s", rp_strerror(r));
		free(pc);
		return r;
	}
	pc->peer = o->peer && strcmp(o->peer, rp_node_name(pc->c)) ? o->peer : NULL;
	*ret = pc;
	return 0;
}

void perf_client_free(struct perf_client *pc)
{
	struct perf_msg quit = { .type = MSG_QUIT };

	if (!pc)
		return;
	perf_send_msg(pc->ctl, &quit);
	rp_disconnect(pc->c);
	free(pc->seen);
	free(pc->slot_hash);
	free(pc);
}

static int fail(int err, const char *what)
{
	perf_set_error("%s: %s", what, rp_strerror(err));
	return err;
}

/* ---- accounting ------------------------------------------------------- */

static int grow_seen(struct perf_client *pc)
{
	uint64_t cap = pc->seen_cap ? pc->seen_cap * 2 : 1 << 16;
	uint8_t *p;

	while (cap * 8 <= pc->posted)
		cap *= 2;
	p = realloc(pc->seen, cap);
	if (!p)
		return -ENOMEM;
	memset(p + pc->seen_cap, 0, cap - pc->seen_cap);
	pc->seen = p;
	pc->seen_cap = cap;
	return 0;
}

static uint64_t next_cookie(struct perf_client *pc)
{
	return pc->gen << GEN_SHIFT | pc->posted;
}

static void new_phase(struct perf_client *pc)
{
	pc->gen++;
	pc->posted = pc->done = pc->ok = pc->errors = 0;
	pc->first_error = 0;
	if (pc->seen)
		memset(pc->seen, 0, pc->seen_cap);
	pc->nsamples = 0;
}

/* One completion of one of our submissions: exactly once, or a hard error. */
static int account(struct perf_client *pc, const struct rp_completion *c, uint32_t op)
{
	uint64_t seq = c->cookie & SEQ_MASK;

	if (c->op != op || c->cookie >> GEN_SHIFT != pc->gen || seq >= pc->posted ||
	    (pc->seen[seq / 8] & (1u << (seq % 8)))) {
		perf_set_error("completion accounting: unexpected completion (op %u cookie %#llx "
			       "status %s) in phase %llu with %llu submitted",
			       c->op, (unsigned long long)c->cookie, rp_strerror(c->status),
			       (unsigned long long)pc->gen, (unsigned long long)pc->posted);
		return -EPROTO;
	}
	pc->seen[seq / 8] |= (uint8_t)(1u << (seq % 8));
	pc->done++;
	if (c->status) {
		pc->errors++;
		if (!pc->first_error)
			pc->first_error = c->status;
		return 0;
	}
	pc->ok++;
	pc->ok_total++;
	if (pc->op == PERF_SEND && pc->slot_hash)
		pc->sum += pc->slot_hash[seq % pc->nslots];
	return 0;
}

static int posted_one(struct perf_client *pc)
{
	pc->posted++;
	if (pc->op == PERF_SEND)
		pc->sent_total++;
	if (pc->posted >= pc->seen_cap * 8)
		return grow_seen(pc);
	return 0;
}

/* Reap what is ready (sleep up to 100 ms in --events mode if @may_sleep). */
static int reap(struct perf_client *pc, bool may_sleep, uint32_t op,
		int (*other)(struct perf_client *, const struct rp_completion *))
{
	struct rp_completion comps[64];
	int n, i, r;

	n = rp_poll(pc->c, comps, 64);
	if (n == 0 && may_sleep && pc->o->events)
		n = rp_wait(pc->c, comps, 64, 100);
	else if (n == 0)
		rp_relax(pc->c); /* yields if the daemon may need this CPU to make progress */
	if (n < 0)
		return fail(n, "reaping completions");
	for (i = 0; i < n; i++) {
		if (other && comps[i].op != op)
			r = other(pc, &comps[i]);
		else
			r = account(pc, &comps[i], op);
		if (r < 0)
			return r;
	}
	return n;
}

/* ---- progress --------------------------------------------------------- */

static void progress(struct perf_client *pc, double frac, bool final)
{
	double now;

	if (!pc->o->progress || !pc->label)
		return;
	if (final) {
		fprintf(stderr, "\r\033[K");
		return;
	}
	now = perf_now_us();
	if (now - pc->last_progress < 1e6)
		return;
	pc->last_progress = now;
	fprintf(stderr, "\r\033[K%s %zu B: %3.0f%%", pc->label, pc->size,
		100 * (frac > 1 ? 1 : frac));
}

static double phase_frac(struct perf_client *pc, long n, double t0, double dur)
{
	return n ? (double)pc->done / n : (perf_now_us() - t0) / (dur * 1e6);
}

/* ---- bandwidth -------------------------------------------------------- */

static bool have_credit(struct perf_client *pc)
{
	uint64_t v;

	if (pc->op != PERF_SEND)
		return true;
	if (pc->sent_total < pc->credit_seen)
		return true;
	v = __atomic_load_n((uint64_t *)rp_region_ptr(pc->credit), __ATOMIC_ACQUIRE);
	if (v > pc->credit_seen)
		pc->credit_seen = v;
	return pc->sent_total < pc->credit_seen;
}

static int submit_bw(struct perf_client *pc)
{
	size_t off = (pc->posted % pc->nslots) * pc->size;
	uint64_t cookie = next_cookie(pc);

	switch (pc->op) {
	case PERF_WRITE:
		return rp_write(pc->c, pc->data, off, pc->rm, off, pc->size, cookie, 0);
	case PERF_READ:
		return rp_read(pc->c, pc->data, off, pc->rm, off, pc->size, cookie, 0);
	default:
		return rp_send(pc->c, pc->peer, pc->ready.s_name, pc->data, off, pc->size, cookie);
	}
}

static uint32_t rp_op_of(enum perf_op op)
{
	return op == PERF_WRITE ? RP_OP_WRITE : op == PERF_READ ? RP_OP_READ : RP_OP_SEND;
}

static int fill_window(struct perf_client *pc, long n, bool stop)
{
	int r;

	while (!stop && pc->posted - pc->done < (uint64_t)pc->o->depth &&
	       (!n || pc->posted < (uint64_t)n) && have_credit(pc)) {
		r = submit_bw(pc);
		if (r == -EAGAIN)
			break;
		if (r < 0)
			return fail(r, "submitting");
		if ((r = posted_one(pc)) < 0)
			return r;
	}
	return 0;
}

static int bw_phase(struct perf_client *pc, long n, double dur, struct perf_result *res)
{
	double t0 = perf_now_us(), now = t0, last = t0;
	bool stop = false;
	int r;

	new_phase(pc);
	for (;;) {
		stop = n ? pc->posted >= (uint64_t)n : now - t0 >= dur * 1e6;
		if ((r = fill_window(pc, n, stop)) < 0)
			return r;
		if (stop && pc->done == pc->posted)
			break;
		r = reap(pc, pc->posted > pc->done, rp_op_of(pc->op), NULL);
		if (r < 0)
			return r;
		now = perf_now_us();
		if (r > 0)
			last = now;
		else if (now - last > STALL_US)
			return perf_set_error("no completion for %.0f s (%llu of %llu done)",
					      STALL_US / 1e6, (unsigned long long)pc->done,
					      (unsigned long long)pc->posted),
			       -ETIMEDOUT;
		if (res)
			progress(pc, phase_frac(pc, n, t0, dur), false);
	}
	if (pc->posted > pc->used_slots)
		pc->used_slots = pc->posted < pc->nslots ? pc->posted : pc->nslots;
	if (res) {
		progress(pc, 1, true);
		res->t0 = t0;
		res->t1 = last;
	}
	return 0;
}

/* ---- latency ---------------------------------------------------------- */

static int add_sample(struct perf_client *pc, double us)
{
	double *p;

	if (pc->nsamples == pc->samples_cap) {
		pc->samples_cap = pc->samples_cap ? pc->samples_cap * 2 : 4096;
		p = realloc(pc->samples, pc->samples_cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		pc->samples = p;
	}
	pc->samples[pc->nsamples++] = us;
	return 0;
}

/* Reap until at most @keep of our ops are outstanding. */
static int reap_down(struct perf_client *pc, uint64_t keep, uint32_t op,
		     int (*other)(struct perf_client *, const struct rp_completion *))
{
	double t0 = 0;
	unsigned empty = 0;
	int r;

	while (pc->posted - pc->done > keep) {
		r = reap(pc, true, op, other);
		if (r < 0)
			return r;
		if (r > 0) {
			empty = 0;
			continue;
		}
		if (++empty % STALL_CHECK)
			continue;
		if (!t0)
			t0 = perf_now_us();
		else if (perf_now_us() - t0 > STALL_US)
			return perf_set_error("no completion for %.0f s", STALL_US / 1e6),
			       -ETIMEDOUT;
	}
	return 0;
}

static int spin_for_byte(struct perf_client *pc, volatile uint8_t *p, uint8_t v)
{
	unsigned long spins = 0;
	double t0 = 0;

	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != v) {
		rp_relax(pc->c); /* see reap() */
		if (++spins % (1u << 16))
			continue;
		if (!t0)
			t0 = perf_now_us();
		else if (perf_now_us() - t0 > STALL_US)
			return perf_set_error("write_lat: no pong for %.0f s", STALL_US / 1e6),
			       -ETIMEDOUT;
		if (perf_fd_closed(pc->ctl))
			return perf_set_error("write_lat: the server went away"), -EPIPE;
	}
	return 0;
}

static int write_pingpong(struct perf_client *pc, uint8_t v, double *us)
{
	uint8_t *out = (uint8_t *)rp_region_ptr(pc->data) + pc->size - 1;
	volatile uint8_t *in = (uint8_t *)rp_region_ptr(pc->land) + pc->size - 1;
	double t0;
	int r;

	*out = v;
	t0 = perf_now_us();
	r = rp_write(pc->c, pc->data, 0, pc->rm, 0, pc->size, next_cookie(pc), 0);
	if (r < 0)
		return fail(r, "rp_write");
	if ((r = posted_one(pc)) < 0)
		return r;
	if (v && (r = spin_for_byte(pc, in, v)) < 0)
		return r;
	pc->lat_end = perf_now_us();
	*us = (pc->lat_end - t0) / 2;
	/* Our own write completions: reaped in batches, off the timed path. */
	if (pc->posted - pc->done >= LAT_REAP_BATCH)
		return reap_down(pc, 0, RP_OP_WRITE, NULL);
	return 0;
}

/* One read or write outstanding, submit to completion. */
static int sync_once(struct perf_client *pc, double *us)
{
	double t0 = perf_now_us();
	int r = pc->op == PERF_READ
			? rp_read(pc->c, pc->data, 0, pc->rm, 0, pc->size, next_cookie(pc), 0)
			: rp_write(pc->c, pc->data, 0, pc->rm, 0, pc->size, next_cookie(pc), 0);

	if (r < 0)
		return fail(r, pc->op == PERF_READ ? "rp_read" : "rp_write");
	if ((r = posted_one(pc)) < 0)
		return r;
	if ((r = reap_down(pc, 0, rp_op_of(pc->op), NULL)) < 0)
		return r;
	pc->lat_end = perf_now_us();
	*us = pc->lat_end - t0;
	return 0;
}

static int post_recv(struct perf_client *pc)
{
	int r = rp_post_recv(pc->ep, pc->land, 0, pc->size, RECV_TAG | ++pc->recv_seq);

	return r < 0 ? fail(r, "rp_post_recv") : 0;
}

static int on_pong(struct perf_client *pc, const struct rp_completion *c)
{
	if (c->op != RP_OP_RECV || c->cookie != (RECV_TAG | pc->recv_seq)) {
		perf_set_error("completion accounting: unexpected op %u cookie %#llx", c->op,
			       (unsigned long long)c->cookie);
		return -EPROTO;
	}
	if (c->status)
		return fail(c->status, "send_lat: receive");
	return post_recv(pc);
}

static int send_pingpong(struct perf_client *pc, double *us)
{
	uint64_t want = pc->recv_seq + 1;
	double t0 = perf_now_us(), start = 0;
	unsigned empty = 0;
	int r = rp_send(pc->c, pc->peer, pc->ready.s_name, pc->data, 0, pc->size, next_cookie(pc));

	if (r < 0)
		return fail(r, "rp_send");
	if ((r = posted_one(pc)) < 0)
		return r;
	while (pc->recv_seq < want) {
		if ((r = reap(pc, true, RP_OP_SEND, on_pong)) < 0)
			return r;
		if (pc->first_error) /* a failed ping gets no pong */
			return fail(pc->first_error, "rp_send");
		if (r > 0 || ++empty % STALL_CHECK)
			continue;
		if (!start)
			start = perf_now_us();
		else if (perf_now_us() - start > STALL_US)
			return perf_set_error("send_lat: no pong for %.0f s", STALL_US / 1e6),
			       -ETIMEDOUT;
	}
	pc->lat_end = perf_now_us();
	*us = (pc->lat_end - t0) / 2;
	return 0;
}

static int lat_phase(struct perf_client *pc, long n, double dur, struct perf_result *res)
{
	double t0 = perf_now_us(), us = 0;
	long i;
	int r = 0;

	new_phase(pc);
	pc->lat_end = t0;
	/* The clock is read twice per op, at its start and end, as the floors do. */
	for (i = 0; n ? i < n : pc->lat_end - t0 < dur * 1e6; i++) {
		if (pc->op == PERF_READ || pc->metric == PERF_SYNC) {
			r = sync_once(pc, &us);
		} else if (pc->op == PERF_WRITE) {
			pc->lat_v = pc->lat_v % 255 + 1;
			r = write_pingpong(pc, pc->lat_v, &us);
		} else {
			r = send_pingpong(pc, &us);
		}
		if (r < 0 || (r = add_sample(pc, us)) < 0)
			return r;
		if (res)
			progress(pc, n ? (double)i / n : (pc->lat_end - t0) / (dur * 1e6), false);
	}
	r = reap_down(pc, 0, rp_op_of(pc->op), pc->op == PERF_SEND ? on_pong : NULL);
	pc->used_slots = 1;
	if (res) {
		progress(pc, 1, true);
		res->t0 = t0;
		res->t1 = perf_now_us();
	}
	return r;
}

/* ---- session ---------------------------------------------------------- */

static int alloc_regions(struct perf_client *pc)
{
	size_t bytes = pc->nslots * pc->size, i;
	int r;

	if ((r = rp_region_alloc(pc->c, bytes ? bytes : 1, 0, &pc->data)) < 0)
		return fail(r, "rp_region_alloc");
	perf_fill(rp_region_ptr(pc->data), bytes, pc->session * 7919 + pc->size);
	if (pc->op == PERF_READ)
		memset(rp_region_ptr(pc->data), 0, bytes);
	if (pc->metric == PERF_SYNC)
		return 0;
	if (pc->metric == PERF_LAT) {
		if (pc->size && pc->op == PERF_WRITE)
			((uint8_t *)rp_region_ptr(pc->data))[pc->size - 1] = 0;
		if (pc->op == PERF_READ)
			return 0;
		if ((r = rp_region_alloc(pc->c, pc->size ? pc->size : 1, 0, &pc->land)) < 0)
			return fail(r, "rp_region_alloc");
		if (pc->op == PERF_SEND)
			r = rp_endpoint_bind(pc->c, pc->c_name, &pc->ep);
		else
			r = perf_export(pc->land, pc->c_name, RP_ACCESS_REMOTE_WRITE, pc->peer);
		return r < 0 ? fail(r, "export/bind") : 0;
	}
	if (pc->op == PERF_SEND) {
		if ((r = rp_region_alloc(pc->c, 4096, 0, &pc->credit)) < 0 ||
		    (r = perf_export(pc->credit, pc->c_name, RP_ACCESS_REMOTE_WRITE, pc->peer)) < 0)
			return fail(r, "credit region");
		pc->slot_hash = calloc(pc->nslots, sizeof(uint64_t));
		for (i = 0; pc->slot_hash && pc->o->verify && i < pc->nslots; i++)
			pc->slot_hash[i] = perf_fnv1a(
				(char *)rp_region_ptr(pc->data) + i * pc->size, pc->size);
	}
	return 0;
}

static int session_setup(struct perf_client *pc, const struct perf_test *t, size_t size)
{
	struct perf_msg m = { .type = MSG_SETUP };
	int r;

	pc->op = t->op;
	pc->metric = t->metric;
	pc->size = size;
	pc->nslots = t->metric != PERF_BW ? 1 : perf_nslots(size, pc->o->depth);
	pc->used_slots = pc->credit_seen = pc->sent_total = pc->ok_total = pc->sum = 0;
	pc->recv_seq = 0;
	pc->lat_v = 0;
	pc->session++;
	perf_set_name(pc->c_name, "rpperf-%d-c%u", (int)getpid(), pc->session);
	if ((r = alloc_regions(pc)) < 0)
		return r;
	if (pc->op == PERF_SEND && pc->metric == PERF_LAT && (r = post_recv(pc)) < 0)
		return r;
	m.op = t->op;
	m.metric = t->metric;
	m.size = size;
	m.nslots = (uint32_t)pc->nslots;
	m.depth = (uint32_t)pc->o->depth;
	m.seed = pc->session * 104729 + size;
	m.verify = pc->o->verify;
	snprintf(m.node, sizeof(m.node), "%s", rp_node_name(pc->c));
	snprintf(m.c_name, sizeof(m.c_name), "%s", pc->c_name);
	if ((r = perf_send_msg(pc->ctl, &m)) < 0 ||
	    (r = perf_recv_msg(pc->ctl, &pc->ready, MSG_READY)) < 0)
		return perf_set_error("control channel: %s", strerror(-r)), r;
	if (pc->ready.status < 0)
		return fail(pc->ready.status, "server setup");
	pc->credit_seen = pc->ready.rx_posted;
	if (pc->op != PERF_SEND &&
	    (r = rp_remote_open(pc->c, pc->peer, pc->ready.s_name, &pc->rm)) < 0)
		return fail(r, "rp_remote_open");
	return 0;
}

/* Stop the ping-pong, collect the server's view and compare. */
static int session_finish(struct perf_client *pc, struct perf_result *res)
{
	struct perf_msg m = { .type = MSG_FINISH }, done;
	uint64_t mine = pc->sum;
	double us;
	int r;

	if (pc->op == PERF_WRITE && pc->metric == PERF_LAT) {
		new_phase(pc);
		if ((r = write_pingpong(pc, 0, &us)) < 0 ||
		    (r = reap_down(pc, 0, RP_OP_WRITE, NULL)) < 0)
			return r;
		pc->ok_total--; /* the stop mark gets no pong */
	}
	m.count = pc->ok_total;
	m.nslots = (uint32_t)pc->used_slots;
	if ((r = perf_send_msg(pc->ctl, &m)) < 0 ||
	    (r = perf_recv_msg(pc->ctl, &done, MSG_DONE)) < 0)
		return perf_set_error("control channel: %s", strerror(-r)), r;
	if (done.status < 0)
		return fail(done.status, "server");
	if (pc->op == PERF_SEND || pc->metric == PERF_LAT) {
		if (done.count != pc->ok_total && pc->op != PERF_READ)
			return perf_set_error("server saw %llu ops, client completed %llu",
					      (unsigned long long)done.count,
					      (unsigned long long)pc->ok_total),
			       -EPROTO;
	}
	if (!pc->o->verify || pc->metric == PERF_LAT)
		return 0;
	if (pc->op != PERF_SEND)
		mine = perf_fnv1a(rp_region_ptr(pc->data), pc->used_slots * pc->size);
	res->verified = mine == done.sum;
	return 0;
}

static void session_teardown(struct perf_client *pc)
{
	struct rp_completion comp;

	if (pc->ep) {
		rp_endpoint_unbind(pc->ep);
		/* The posted receive completes with -ECANCELED. */
		while (rp_wait(pc->c, &comp, 1, 2000) > 0 && comp.op != RP_OP_RECV)
			;
	}
	if (pc->rm)
		rp_remote_close(pc->rm);
	if (pc->data)
		rp_region_free(pc->data);
	if (pc->land)
		rp_region_free(pc->land);
	if (pc->credit)
		rp_region_free(pc->credit);
	free(pc->slot_hash);
	pc->slot_hash = NULL;
	pc->ep = NULL;
	pc->rm = NULL;
	pc->data = pc->land = pc->credit = NULL;
}

int perf_client_run(struct perf_client *pc, int test, size_t size, long iters, long warmup,
		    struct perf_result *res, void (*sync)(void *), void *sync_arg)
{
	const struct perf_test *t = &pc->o->tests[test];
	int (*phase)(struct perf_client *, long, double, struct perf_result *) =
		t->metric == PERF_BW ? bw_phase : lat_phase;
	static char label[32];
	int r;

	memset(res, 0, sizeof(*res));
	res->test = test;
	res->size = size;
	res->verified = -1;
	snprintf(label, sizeof(label), "%s_%s", perf_op_name(t->op),
		 t->metric == PERF_BW ? "bw" : "lat");
	pc->label = NULL;
	r = session_setup(pc, t, size);
	if (r == 0 && warmup > 0)
		r = phase(pc, warmup, 0, NULL);
	if (sync)
		sync(sync_arg);
	pc->label = label;
	if (r == 0)
		r = phase(pc, iters, pc->o->duration, res);
	res->ops = pc->ok;
	res->errors = pc->errors;
	res->bytes = pc->ok * size;
	res->nsamples = (uint32_t)pc->nsamples;
	res->samples = pc->samples;
	pc->samples = NULL;
	pc->samples_cap = pc->nsamples = 0;
	if (r == 0 && pc->first_error)
		perf_set_error("%llu of %llu ops failed, first: %s", (unsigned long long)pc->errors,
			       (unsigned long long)pc->posted, rp_strerror(pc->first_error));
	if (r == 0)
		r = session_finish(pc, res);
	session_teardown(pc);
	return r;
}
