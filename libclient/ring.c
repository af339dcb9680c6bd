/* SPDX-License-Identifier: MIT */
/*
 * The data path: submissions into the shared submission ring, completions
 * out of the completion ring, doorbells only when the other side sleeps.
 */
#include "client.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* An empty rp_poll() looks at the daemon's socket (a system call) at most this often. */
#define LIVENESS_CHECK_NS 10000000ull
/* rp_wait() polls this long before it arms the doorbell and sleeps. */
#define WAIT_SPIN_NS 50000ull

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void ring_doorbell(int efd)
{
	uint64_t one = 1;

	/* EAGAIN means the counter is saturated: the daemon is awake anyway. */
	if (write(efd, &one, sizeof(one)) < 0) {
	}
}

int client_check_range(struct rp_client *c, const struct rp_region *r, size_t off, size_t len)
{
	if (!c || !r || r->c != c)
		return -EINVAL;
	if (off > r->len || len > r->len - off)
		return -RP_EBOUNDS;
	if (len > UINT32_MAX)
		return -EINVAL;
	return 0;
}

int client_submit(struct rp_client *c, const struct rp_sqe *q)
{
	uint32_t mask = c->v.sq_entries - 1;
	int64_t used;

	if (c->dead || c->conn.fd < 0)
		return -RP_EDAEMON;
	used = rp_ring_count(c->sq_tail, rp_ring_load(&c->v.sq->consumer), c->v.sq_entries);
	if (used < 0)
		return -EPROTO;
	if (used == c->v.sq_entries)
		return -EAGAIN;
	memcpy(&c->v.sqes[c->sq_tail & mask], q, sizeof(*q));
	c->sq_tail++;
	rp_ring_store(&c->v.sq->producer, c->sq_tail);
	if (rp_ring_take_wakeup(c->v.sq, RP_RING_NEED_WAKEUP))
		ring_doorbell(c->sq_efd);
	return 0;
}

static int rw(struct rp_client *c, uint16_t op, struct rp_region *r, size_t off,
	      struct rp_remote *rm, size_t roff, size_t len, uint64_t cookie, unsigned flags,
	      uint32_t imm)
{
	struct rp_sqe q = {
		.cookie = cookie,
		.offset = off,
		.remote_offset = roff,
		.len = len,
		.imm = imm,
		.opcode = op,
		.flags = (uint16_t)flags,
	};
	int err = client_check_range(c, r, off, len);

	if (err < 0)
		return err;
	if (!rm || rm->c != c || (flags & ~(op == RP_SQE_WRITE ? RP_NOTIFY : 0u)))
		return -EINVAL;
	q.region = r->id;
	q.target = rm->id;
	return client_submit(c, &q);
}

RP_EXPORT int rp_write(struct rp_client *c, struct rp_region *r, size_t off,
		       struct rp_remote *dst, size_t roff, size_t len, uint64_t cookie,
		       unsigned flags)
{
	return rw(c, RP_SQE_WRITE, r, off, dst, roff, len, cookie, flags, 0);
}

RP_EXPORT int rp_write_imm(struct rp_client *c, struct rp_region *r, size_t off,
			   struct rp_remote *dst, size_t roff, size_t len, uint64_t cookie,
			   unsigned flags, uint32_t imm)
{
	return rw(c, RP_SQE_WRITE, r, off, dst, roff, len, cookie, flags, imm);
}

RP_EXPORT int rp_read(struct rp_client *c, struct rp_region *r, size_t off, struct rp_remote *src,
		      size_t roff, size_t len, uint64_t cookie, unsigned flags)
{
	return rw(c, RP_SQE_READ, r, off, src, roff, len, cookie, flags, 0);
}

static void to_completion(struct rp_client *c, const struct rp_cqe *e, struct rp_completion *out)
{
	memset(out, 0, sizeof(*out));
	out->cookie = e->cookie;
	out->status = e->status;
	out->op = e->op;
	out->len = e->len;
	out->imm = e->imm;
	out->offset = e->offset;
	if ((e->op == RP_OP_NOTIFY || e->op == RP_OP_RECV) && e->region &&
	    e->region <= c->n_regions)
		out->region = c->regions[e->region - 1];
}

/* Copy out what is there. */
static int reap(struct rp_client *c, struct rp_completion *comps, int max)
{
	uint32_t prod = rp_ring_load(&c->v.cq->producer), mask = c->v.cq_entries - 1;
	struct rp_cqe e;
	int n = 0;

	if (rp_ring_count(prod, c->cq_head, c->v.cq_entries) < 0)
		return -EPROTO;
	while (c->cq_head != prod && n < max) {
		memcpy(&e, &c->v.cqes[c->cq_head & mask], sizeof(e));
		to_completion(c, &e, &comps[n++]);
		c->cq_head++;
	}
	if (n) {
		rp_ring_store(&c->v.cq->consumer, c->cq_head);
		/* The daemon may be waiting for this space. */
		if (rp_ring_take_wakeup(c->v.sq, RP_RING_STALLED))
			ring_doorbell(c->sq_efd);
	}
	return n;
}

/* Is the daemon still there? Drains the doorbell as a side effect. */
static int check_fds(struct rp_client *c, int timeout_ms)
{
	struct pollfd p[2] = {
		{ .fd = c->cq_efd, .events = POLLIN },
		{ .fd = c->conn.fd, .events = 0 },
	};
	uint64_t v;
	int n = poll(p, 2, timeout_ms);

	if (n < 0)
		return -errno;
	if (p[0].revents & POLLIN) {
		if (read(c->cq_efd, &v, sizeof(v)) < 0) {
			/* EAGAIN: someone else drained it. */
		}
	}
	if (p[1].revents & (POLLHUP | POLLERR | POLLNVAL)) {
		c->dead = true;
		return -RP_EDAEMON;
	}
	return n;
}

/*
 * A poll that finds nothing must leave the doorbell armed (rp_fd() users
 * sleep on it next) yet must not cost a system call each time, or a busy
 * poller pays one per spin. While the flag is still armed the daemon has not
 * rung since the last arming, so the eventfd is quiet and nothing needs
 * doing; only after the daemon used the arming is the eventfd drained and
 * the flag set again. The daemon's socket is looked at now and then.
 */
RP_EXPORT int rp_poll(struct rp_client *c, struct rp_completion *comps, int max)
{
	uint64_t v, now;
	int n, r;

	if (!c || !comps || max <= 0)
		return -EINVAL;
	n = reap(c, comps, max);
	if (n != 0)
		return n;
	now = now_ns(CLOCK_MONOTONIC_COARSE);
	if (now >= c->next_check_ns) {
		c->next_check_ns = now + LIVENESS_CHECK_NS;
		r = check_fds(c, 0);
		if (r < 0)
			return r;
	}
	if (atomic_load_explicit(&c->v.cq->flags, memory_order_acquire) & RP_RING_NEED_WAKEUP)
		return 0;
	if (read(c->cq_efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: the daemon had not rung. */
	}
	/* Ask for a doorbell, then look again: a completion may have raced the flag. */
	rp_ring_arm(c->v.cq, RP_RING_NEED_WAKEUP);
	return reap(c, comps, max);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

RP_EXPORT int rp_wait(struct rp_client *c, struct rp_completion *comps, int max, int timeout_ms)
{
	long long deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : 0;
	int n, r, left = timeout_ms;

	uint64_t spin_until = now_ns(CLOCK_MONOTONIC) + WAIT_SPIN_NS;

	/* A completion is often microseconds away: a short spin beats a wake-up. */
	do {
		n = rp_poll(c, comps, max);
		if (n != 0)
			return n;
	} while (timeout_ms != 0 && now_ns(CLOCK_MONOTONIC) < spin_until);
	for (;;) {
		n = rp_poll(c, comps, max);
		if (n != 0)
			return n;
		if (timeout_ms >= 0) {
			left = (int)(deadline - now_ms());
			if (left <= 0)
				return 0;
		}
		r = check_fds(c, left);
		if (r < 0)
			return r;
	}
}

RP_EXPORT int rp_fd(const struct rp_client *c)
{
	return c ? c->cq_efd : -EINVAL;
}
