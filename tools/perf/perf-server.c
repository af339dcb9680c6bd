/* SPDX-License-Identifier: MIT */
/*
 * rdmaproxy-perf, the passive side: exports the target of writes and reads,
 * binds the endpoint that sends go to and keeps receives posted, and answers
 * ping-pongs. It serves SETUP ... FINISH sessions on one control fd until
 * QUIT or hang-up. Every operation it submits itself (credit writes, pongs)
 * is reaped and accounted before it reports DONE.
 *
 * Send bandwidth flow control: rp_send() to an endpoint without a posted
 * receive fails (RP_ENORECV, not retried), so the sender may only have as
 * many messages on the way as receives are posted. The server posts
 * rx_posted receives up front and, every quarter of that, writes the running
 * total of receives it has posted into the client's exported credit word
 * (through the proxy, like any application would). The client never sends
 * past the credit it has seen.
 */
#include "perf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CREDIT_SLOTS 64
#define SPIN_CTL_CHECK 256 /* empty polls between looks at the control fd */

struct srv {
	struct rp_client *c;
	int ctl;
	struct perf_msg req;
	struct rp_region *data, *src;
	struct rp_endpoint *ep;
	struct rp_remote *back; /* the client's export */
	const char *peer;	/* the client's node (NULL: ours) */
	char name[RP_NAME_LEN + 1];
	uint32_t rx;
	uint64_t count, sum, reposted, flushed, credit_seq;
	unsigned outstanding; /* our own writes and sends in flight */
	int error;
	bool finish; /* FINISH read, its count in @want */
	uint64_t want;
	uint32_t used_slots; /* FINISH: slots the client used, for the checksum */
};

static void note_error(struct srv *s, int err)
{
	if (!s->error)
		s->error = err;
}

/* Reap what is there; RECV completions are handled by @on_recv. */
static int srv_reap(struct srv *s, void (*on_recv)(struct srv *, const struct rp_completion *),
		    int timeout_ms)
{
	struct rp_completion comps[64];
	int n, i;

	n = timeout_ms ? rp_wait(s->c, comps, 64, timeout_ms) : rp_poll(s->c, comps, 64);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		if (comps[i].op == RP_OP_RECV) {
			if (on_recv && comps[i].status != -ECANCELED)
				on_recv(s, &comps[i]);
			continue;
		}
		if (comps[i].op == RP_OP_WRITE || comps[i].op == RP_OP_SEND) {
			if (s->outstanding == 0)
				note_error(s, -EPROTO); /* a completion nobody asked for */
			else
				s->outstanding--;
		}
		if (comps[i].status)
			note_error(s, comps[i].status);
	}
	return n;
}

static int flush_credit(struct srv *s)
{
	uint64_t *slot = (uint64_t *)rp_region_ptr(s->src) + s->credit_seq % CREDIT_SLOTS;
	size_t off = (s->credit_seq % CREDIT_SLOTS) * sizeof(uint64_t);
	int r;

	/* Never rewrite a slot the daemon may still be reading. */
	while (s->outstanding >= CREDIT_SLOTS)
		if ((r = srv_reap(s, NULL, 1000)) < 0)
			return r;
	*slot = s->rx + s->reposted;
	for (;;) {
		r = rp_write(s->c, s->src, off, s->back, 0, sizeof(uint64_t), s->credit_seq, 0);
		if (r != -EAGAIN)
			break;
		if ((r = srv_reap(s, NULL, 1000)) < 0)
			return r;
	}
	if (r < 0)
		return r;
	s->outstanding++;
	s->credit_seq++;
	s->flushed = s->reposted;
	return 0;
}

static void on_recv_bw(struct srv *s, const struct rp_completion *c)
{
	size_t slot = c->cookie, size = s->req.size;
	int r;

	if (c->status) {
		note_error(s, c->status);
		return;
	}
	s->count++;
	if (s->req.verify)
		s->sum += perf_fnv1a((char *)rp_region_ptr(s->data) + slot * size, c->len);
	r = rp_post_recv(s->ep, s->data, slot * size, size, slot);
	if (r < 0) {
		note_error(s, r);
		return;
	}
	s->reposted++;
	if (s->reposted - s->flushed >= (s->rx + 3) / 4 && (r = flush_credit(s)) < 0)
		note_error(s, r);
}

static void on_recv_lat(struct srv *s, const struct rp_completion *c)
{
	int r;

	if (c->status) {
		note_error(s, c->status);
		return;
	}
	s->count++;
	/* Repost before answering: the next ping can only follow our pong. */
	r = rp_post_recv(s->ep, s->data, 0, s->req.size, 0);
	if (r == 0)
		r = rp_send(s->c, s->peer, s->req.c_name, s->src, 0, s->req.size, s->count);
	if (r < 0)
		note_error(s, r);
	else
		s->outstanding++;
}

/* Look for FINISH (or a hang-up) on the control fd without blocking. */
static int check_ctl(struct srv *s)
{
	struct perf_msg m;
	int r;

	if (s->finish || !perf_fd_closed(s->ctl))
		return 0;
	r = perf_recv_msg(s->ctl, &m, MSG_FINISH);
	if (r < 0)
		return r;
	s->finish = true;
	s->want = m.count;
	s->used_slots = m.nslots;
	return 0;
}

/* Send traffic: spin on completions, sleep after a while without any. */
static int serve_send(struct srv *s, void (*on_recv)(struct srv *, const struct rp_completion *),
		      bool spin_only)
{
	unsigned idle = 0;
	double deadline = 0;
	int n, r;

	for (;;) {
		n = srv_reap(s, on_recv, !spin_only && idle > 1000 ? 10 : 0);
		if (n < 0)
			return n;
		idle = n ? 0 : idle + 1;
		if (idle)
			rp_relax(s->c); /* yields if the daemon may need this CPU */
		if (n == 0 && idle % SPIN_CTL_CHECK == 0 && (r = check_ctl(s)) < 0)
			return r;
		if (s->finish && s->count >= s->want)
			return 0;
		if (s->finish && !deadline)
			deadline = perf_now_us() + 10e6;
		if (deadline && perf_now_us() > deadline) {
			note_error(s, -ETIMEDOUT);
			return 0;
		}
	}
}

/* Write ping-pong: the last byte of our region changes, we write back. */
static int serve_write_lat(struct srv *s)
{
	volatile uint8_t *in = (uint8_t *)rp_region_ptr(s->data) + s->req.size - 1;
	uint8_t *out = (uint8_t *)rp_region_ptr(s->src) + s->req.size - 1, last = 0, v;
	unsigned long spins = 0;
	int r;

	for (;;) {
		v = __atomic_load_n(in, __ATOMIC_ACQUIRE);
		if (v == last) {
			rp_relax(s->c);
			if (++spins % (1u << 16) == 0 && perf_fd_closed(s->ctl))
				return -EPIPE; /* the client gave up (FINISH comes after v == 0) */
			continue;
		}
		if (v == 0) /* the client's stop mark */
			return 0;
		last = v;
		*out = v;
		r = rp_write(s->c, s->src, 0, s->back, 0, s->req.size, s->count, 0);
		if (r < 0)
			return r;
		s->count++;
		s->outstanding++;
		/* Reap off the critical path, in batches. */
		if (s->outstanding >= 16 && (r = srv_reap(s, NULL, 0)) < 0)
			return r;
	}
}

static int setup_regions(struct srv *s)
{
	const struct perf_msg *q = &s->req;
	size_t bytes = q->nslots * q->size;
	unsigned access = RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE;
	int r;

	if (q->op == PERF_SEND && q->metric == PERF_BW) {
		s->rx = (uint32_t)perf_nslots(q->size, 2 * (int)q->depth);
		bytes = s->rx * q->size;
	}
	if ((r = rp_region_alloc(s->c, bytes ? bytes : 1, 0, &s->data)) < 0)
		return r;
	if (q->op == PERF_READ)
		perf_fill(rp_region_ptr(s->data), bytes, q->seed);
	if (q->op == PERF_SEND)
		return rp_endpoint_bind(s->c, s->name, &s->ep);
	return perf_export(s->data, s->name, access, s->peer);
}

static int setup(struct srv *s)
{
	const struct perf_msg *q = &s->req;
	bool pong = q->metric == PERF_LAT && q->op != PERF_READ;
	uint32_t i;
	int r;

	if ((r = setup_regions(s)) < 0)
		return r;
	if (pong || (q->op == PERF_SEND && q->metric == PERF_BW)) {
		r = rp_region_alloc(s->c, q->size > 4096 ? q->size : 4096, 0, &s->src);
		if (r < 0)
			return r;
		perf_fill(rp_region_ptr(s->src), q->size, q->seed + 1);
		((uint8_t *)rp_region_ptr(s->src))[q->size ? q->size - 1 : 0] = 0;
	}
	if ((q->op == PERF_WRITE && pong) || (q->op == PERF_SEND && q->metric == PERF_BW)) {
		r = rp_remote_open(s->c, s->peer, q->c_name, &s->back);
		if (r < 0)
			return r;
	}
	if (q->op != PERF_SEND)
		return 0;
	if (q->metric == PERF_LAT)
		return rp_post_recv(s->ep, s->data, 0, q->size, 0);
	for (i = 0; i < s->rx; i++)
		if ((r = rp_post_recv(s->ep, s->data, i * q->size, q->size, i)) < 0)
			return r;
	return 0;
}

static void teardown(struct srv *s)
{
	if (s->ep)
		rp_endpoint_unbind(s->ep); /* posted receives complete with -ECANCELED */
	/* Our writes and sends must finish before their regions go away. */
	while (s->outstanding > 0 && srv_reap(s, NULL, 5000) > 0)
		;
	if (s->back)
		rp_remote_close(s->back);
	if (s->data)
		rp_region_free(s->data);
	if (s->src)
		rp_region_free(s->src);
	s->ep = NULL;
	s->back = NULL;
	s->data = s->src = NULL;
}

static int run_session(struct srv *s)
{
	const struct perf_msg *q = &s->req;
	struct perf_msg m = { .type = MSG_READY };
	int r;

	r = setup(s);
	m.status = r;
	m.rx_posted = s->rx;
	snprintf(m.node, sizeof(m.node), "%s", rp_node_name(s->c));
	snprintf(m.s_name, sizeof(m.s_name), "%s", s->name);
	if (perf_send_msg(s->ctl, &m) < 0 || r < 0)
		return r < 0 ? r : -EPIPE;
	if (q->op == PERF_SEND)
		r = serve_send(s, q->metric == PERF_BW ? on_recv_bw : on_recv_lat,
			       q->metric == PERF_LAT);
	else if (q->op == PERF_WRITE && q->metric == PERF_LAT)
		r = serve_write_lat(s);
	if (r < 0)
		return r;
	if (!s->finish) {
		if ((r = perf_recv_msg(s->ctl, &m, MSG_FINISH)) < 0)
			return r;
		s->used_slots = m.nslots;
	}
	if (s->used_slots > q->nslots)
		s->used_slots = q->nslots;
	if (q->op == PERF_SEND && q->metric == PERF_BW && s->reposted > s->flushed)
		flush_credit(s);
	if (q->op != PERF_SEND) /* the data area as it stands (written, or read from) */
		s->sum = perf_fnv1a(rp_region_ptr(s->data), s->used_slots * q->size);
	return 0;
}

static int serve_one(struct srv *s, unsigned n)
{
	struct perf_msg done = { .type = MSG_DONE };
	int r;

	s->peer = s->req.node[0] ? s->req.node : NULL;
	if (s->peer && !strcmp(s->peer, rp_node_name(s->c)))
		s->peer = NULL;
	s->count = s->sum = s->reposted = s->flushed = s->credit_seq = 0;
	s->outstanding = s->rx = s->used_slots = 0;
	s->error = 0;
	s->finish = false;
	perf_set_name(s->name, "rpperf-%d-s%u", (int)getpid(), n);
	r = run_session(s);
	teardown(s);
	if (r < 0 && r != -EPIPE)
		note_error(s, r);
	done.status = s->error;
	done.count = s->count;
	done.sum = s->sum;
	return r == -EPIPE ? r : perf_send_msg(s->ctl, &done);
}

int perf_serve(const char *socket, int ctl)
{
	struct srv s = { .ctl = ctl };
	unsigned n = 0;
	int r;

	if ((r = rp_connect(socket, &s.c)) < 0) {
		fprintf(stderr, "rdmaproxy-perf server: connect: %s\n", rp_strerror(r));
		return r;
	}
	for (;;) {
		if (perf_recv_msg(ctl, &s.req, 0) < 0 || s.req.type == MSG_QUIT)
			break;
		if (s.req.type != MSG_SETUP || s.req.size > (1ull << 32) || !s.req.nslots ||
		    s.req.nslots * s.req.size > 2 * (uint64_t)PERF_SLOT_BYTES || !s.req.depth) {
			r = -EPROTO;
			break;
		}
		if ((r = serve_one(&s, n++)) < 0)
			break;
	}
	rp_disconnect(s.c);
	return r < 0 ? r : 0;
}
