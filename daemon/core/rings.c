/* SPDX-License-Identifier: MIT */
/*
 * A session's rings (rp-ring.h): the shared memory the client submits into
 * and reaps from, its two doorbells, and the completion slots. Every
 * accepted submission first reserves a completion slot, so the completion
 * ring can never overflow; notifications and receive completions for other
 * sessions reserve a slot there or fail the operation.
 */
#include "core/core.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

/*
 * The doorbells; each ring is 8 bytes (what an eventfd took: clients read
 * and write 8). Not eventfds: an eventfd is one open file description for
 * both sides, and a client that cleared its O_NONBLOCK and filled the
 * counter made the daemon's next write(2) block its loop. Each end here is
 * its own description.
 *
 * The submission doorbell (the client rings, the daemon reads) is an
 * AF_UNIX datagram socket pair, shut for writing on the daemon's end: a
 * ring after the daemon went away fails ECONNREFUSED (a pipe would kill the
 * client with SIGPIPE), and a client that closes its end does not leave
 * ours readable for ever (a pipe's would be, at end-of-file, and the loop
 * would spin).
 *
 * The completion doorbell (the daemon rings, the client reads) is a pipe:
 * a client sleeping in rp_wait() for each completion is woken ~2.8 us
 * sooner than through a datagram pair (host, sync 8 B writes, 1.7-1.9 us
 * against 4.6-4.7). The client cannot write into its end, and a ring after
 * the client closed it fails EPIPE (the daemon ignores SIGPIPE: main.c).
 */
static int sq_bell_new(int *daemon_end, int *client_end)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	if (shutdown(sv[0], SHUT_WR) < 0) {
		close(sv[0]);
		close(sv[1]);
		return -errno;
	}
	*daemon_end = sv[0];
	*client_end = sv[1];
	return 0;
}

static int cq_bell_new(int *daemon_end, int *client_end)
{
	int p[2];

	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return -errno;
	/* One page holds 512 rings; a full pipe means a wake-up is pending anyway. */
	if (fcntl(p[1], F_SETPIPE_SZ, (int)sysconf(_SC_PAGESIZE)) < 0) {
		/* Kept at its default size. */
	}
	*daemon_end = p[1];
	*client_end = p[0];
	return 0;
}

int rings_new(struct rings *r)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t size =
		(rp_ring_bytes(RP_RING_SQ_ENTRIES, RP_RING_CQ_ENTRIES) + page - 1) & ~(page - 1);
	int err;

	r->memfd = memfd_create("rdmaproxy-rings", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->memfd < 0)
		return -errno;
	/* Sealed so a client cannot shrink it under the daemon's mapping (SIGBUS). */
	if (ftruncate(r->memfd, (off_t)size) < 0 ||
	    fcntl(r->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto out_errno;
	r->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->memfd, 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		goto out_errno;
	}
	r->size = size;
	rp_ring_view_init(&r->v, r->base, size, RP_RING_SQ_ENTRIES, RP_RING_CQ_ENTRIES);
	r->v.info->magic = RP_RING_MAGIC;
	r->v.info->sq_entries = RP_RING_SQ_ENTRIES;
	r->v.info->cq_entries = RP_RING_CQ_ENTRIES;
	r->v.info->size = size;
	/* The daemon starts asleep: the first submission must ring. */
	rp_ring_arm(r->v.sq, RP_RING_NEED_WAKEUP);
	if (sq_bell_new(&r->sq_bell, &r->sq_client) < 0 ||
	    cq_bell_new(&r->cq_bell, &r->cq_client) < 0)
		goto out_errno;
	return 0;

out_errno:
	err = -errno;
	rings_free(r);
	return err;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void rings_free(struct rings *r)
{
	if (r->base)
		munmap(r->base, r->size);
	r->base = NULL;
	close_fd(&r->memfd);
	close_fd(&r->sq_bell);
	close_fd(&r->cq_bell);
	close_fd(&r->sq_client);
	close_fd(&r->cq_client);
}

int xfer_reserve(struct session *s)
{
	struct rings *r = &s->rings;
	int64_t used;

	if (s->dead || !r->base)
		return -ENOSPC;
	/*
	 * The client's consumer index is read only when the copy we have says
	 * there is no room: its client stores it on every reap, and reading it
	 * for every op would move that line between CPUs twice per op.
	 */
	used = rp_ring_count(r->cq_tail, r->cq_cons, r->v.cq_entries);
	if (used < 0 || (uint64_t)used + r->cq_reserved >= r->v.cq_entries) {
		r->cq_cons = rp_ring_load(&r->v.cq->consumer);
		used = rp_ring_count(r->cq_tail, r->cq_cons, r->v.cq_entries);
	}
	if (used < 0)
		return -EPROTO;
	if ((uint64_t)used + r->cq_reserved >= r->v.cq_entries)
		return -ENOSPC;
	r->cq_reserved++;
	return 0;
}

void xfer_release(struct session *s)
{
	if (s->rings.cq_reserved)
		s->rings.cq_reserved--;
}

/* Ring the client's completion doorbell (8 bytes: clients read 8). */
static void ring(int bell)
{
	uint64_t one = 1;

	if (write(bell, &one, sizeof(one)) < 0) {
		/* EAGAIN: the pipe is full, so the client has a wake-up pending; EPIPE: gone. */
	}
}

void xfer_give_back(struct session *s)
{
	struct rings *r = &s->rings;

	xfer_release(s);
	/*
	 * No entry comes of it, so the client has nothing to reap, and a reap
	 * is what rings a stalled ring's doorbell: have the ring polled instead.
	 */
	if (!s->dead && r->base && rp_ring_take_wakeup(r->v.sq, RP_RING_STALLED) &&
	    s->core->glue->kick)
		s->core->glue->kick(s);
}

/* Make the completions written so far visible, and ring if the client sleeps. */
static void publish(struct session *s)
{
	struct rings *r = &s->rings;

	if (s->dead || !r->base)
		return;
	rp_ring_store(&r->v.cq->producer, r->cq_tail);
	if (!rp_ring_take_wakeup(r->v.cq, RP_RING_NEED_WAKEUP))
		return;
	stats_totals.client_doorbells++;
	/* The sleeper reads what its wake-up cost (rp-ring.h); a vDSO read next to a write(2). */
	atomic_store_explicit(&r->v.cq->rung_ns, mono_ns(), memory_order_release);
	ring(r->cq_bell);
}

void xfer_complete(struct session *s, const struct rp_cqe *cqe)
{
	struct rings *r = &s->rings;
	struct core *c = s->core;

	xfer_release(s);
	if (s->dead || !r->base)
		return;
	if (r->seq) {
		/* The op and its lap last: the client polls them. */
		struct rp_cqe *e = &r->v.cqes[r->cq_tail & (r->v.cq_entries - 1)];

		/*
		 * Visible at once, so what was written before it must be too:
		 * an exporter of protocol 1-2 sees its notification only once
		 * published, and the writer must not see OK before that.
		 */
		if (c->dirty_legacy)
			core_publish(c);
		memcpy(e, cqe, offsetof(struct rp_cqe, op));
		e->region = cqe->region;
		rp_cqe_op_store(e, (uint16_t)(cqe->op | rp_cqe_lap(r->cq_tail, r->v.cq_entries)));
	} else {
		/*
		 * Published only with the session: if sessions first written to
		 * after it hold entries (a notification of this write), they go
		 * first, or the writer could see OK before the notification.
		 */
		if (s->dirty && c->dirty_tail != s)
			core_publish(c);
		r->v.cqes[r->cq_tail & (r->v.cq_entries - 1)] = *cqe;
	}
	r->cq_tail++;
	if (!c->batching) {
		publish(s);
		return;
	}
	/*
	 * Published in the order sessions were first written to: a notification
	 * is visible before the completion of the write that caused it (op_end()
	 * writes the notification first), as when each was published at once.
	 */
	if (!s->dirty) {
		s->dirty = true;
		c->dirty_legacy += !r->seq;
		s->dirty_next = NULL;
		if (c->dirty_tail)
			c->dirty_tail->dirty_next = s;
		else
			c->dirty = s;
		c->dirty_tail = s;
	}
}

void core_undirty(struct core *c, struct session *s)
{
	struct session **pp, *prev = NULL;

	if (!s->dirty)
		return;
	for (pp = &c->dirty; *pp != s; pp = &(*pp)->dirty_next)
		prev = *pp;
	*pp = s->dirty_next;
	if (c->dirty_tail == s)
		c->dirty_tail = prev;
	c->dirty_legacy -= !s->rings.seq;
	s->dirty = false;
	s->dirty_next = NULL;
}

void core_publish(struct core *c)
{
	struct session *s;

	c->dirty_tail = NULL;
	c->dirty_legacy = 0;
	while ((s = c->dirty)) {
		c->dirty = s->dirty_next;
		s->dirty = false;
		s->dirty_next = NULL;
		publish(s);
	}
}
