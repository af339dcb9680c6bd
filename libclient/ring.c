/* SPDX-License-Identifier: MIT */
/*
 * The data path: submissions into the shared submission ring, completions
 * out of the completion ring, doorbells only when the other side sleeps.
 */
#include "client.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

/* An empty rp_poll() looks at the daemon's socket (a system call) at most this often. */
#define LIVENESS_CHECK_NS 10000000ull
/*
 * rp_wait() spins before it arms the doorbell and sleeps, since a
 * completion is often microseconds away and a wake-up costs far more. The
 * spin adapts between these bounds: it grows when a sleep ended soon after
 * it began (spinning a little longer would have caught it) and shrinks when
 * spins keep ending in long sleeps (they bought nothing).
 */
#define SPIN_MIN_NS 2000u
#define SPIN_MAX_NS 200000u
#define SPIN_START_NS 20000u
/* A spin ends when the daemon's engine has not moved for this long. */
#define STILL_NS 20000u
/*
 * While more tasks are runnable than there are CPUs, spinning only pays
 * while the daemon's engine is running and working on another CPU (its
 * count of passes with work moves: the rule of the kernel's
 * mutex_spin_on_owner): a yield then would only cost a system call and hand
 * this CPU to another spinner. Once it has done no work for this long, the
 * engine is not running, or is idle because what it waits for (a client,
 * maybe the one this waiter waits for) needs a CPU: the waiter yields
 * between polls.
 */
#define OWNER_STILL_NS 2000u
/*
 * The same for rp_relax(), whose caller does its own looping between calls
 * (1 us: on the host a longer still spin cost a 3-party ping-pong 20 %).
 */
#define RELAX_STILL_NS 1000u
/* rp_relax() calls in a row after empty polls before it may sleep (below). */
#define RELAX_POLL_CALLS 4u
/*
 * While the CPUs are crowded, rp_relax() called after an empty rp_poll()
 * sleeps on the doorbell (for the usual wait, at most RELAX_SLEEP_MAX_MS)
 * instead of yielding once this client's waits for a completion usually
 * last long: a yield keeps the spinner runnable, and the scheduler still
 * gives it its share of a CPU the daemon needs for the very work it waits
 * for (in the guest, 4 clients spinning on 64 KiB writes took 30 % of the
 * CPU, the daemon's data copies 60 %; on the host, a client spinning
 * through 1 MiB reads from a tcp peer took a third of a CPU from the two
 * daemons that move the bytes). One wake-up per wait costs far less than
 * that once the wait is RELAX_WAKE_RATIO times what a wake-up costs: long
 * is that, but at least RELAX_SLEEP_WAIT_MIN_NS and at most
 * RELAX_SLEEP_WAIT_NS, which is also the rule while the cost is not known.
 * A wake-up costs 100 us or more of the sleeper's own CPU in the emulated
 * test guest, where the rule stays at RELAX_SLEEP_WAIT_NS or near it, and
 * a few microseconds on an idle host, but up to milliseconds of waiting on
 * a host whose CPUs are all busy (the woken client waits for one): it is
 * measured, not assumed (wake_note()); below a millisecond a wait is
 * slept through only once it has lasted as long as a wake-up costs
 * (long_wait()). Each sleep of rp_relax() that the daemon's doorbell ends
 * measures it
 * (rp-ring.h: rung_ns; rp_wait()'s sleeps do not, which spares them a
 * system call); so that a client whose waits are too short for the rule
 * yet still learns it, once its usual wait is RELAX_SLEEP_WAIT_MIN_NS or
 * more, one wait sleeps to learn it, and again once every
 * RELAX_LEARN_WAITS waits. In the busy mode (RDMAPROXY_WAIT=busy: a
 * thread with a core of its own) only the millisecond rule holds.
 */
#define RELAX_SLEEP_WAIT_NS 1000000u
#define RELAX_SLEEP_WAIT_MIN_NS 50000u
#define RELAX_WAKE_RATIO 8u
#define RELAX_LEARN_WAITS 256u
#define RELAX_SLEEP_MAX_MS 10
/*
 * While the CPUs are free, the same sleep, but only from a wait's
 * RELAX_FREE_CALLS-th call on, which is also where its timing starts (a
 * short wait reads no clock, and the usual wait is then that of the waits
 * this long). Calls, not time, for that clock's sake: 32 calls are ~1-3 us
 * on a host, far more under emulation. "Free" is the daemon's reading as it
 * last published it while polling this client's ring (sampled every
 * millisecond while it runs), of a moment its own loop thread was running:
 * a client that spins through a 10 ms wait takes a CPU that the daemon's
 * lane threads need the moment they post (guest, 4 clients writing 64 KiB:
 * 95 % of the clients' rp_relax() calls returned at once on "free").
 */
#define RELAX_FREE_CALLS 32u
/*
 * rp_relax()'s still-time yield (below) took RELAX_RESUME_MIN_NS or more:
 * another task ran on this CPU meanwhile. Until as long again after it
 * returned (at most RELAX_RESUME_MAX_NS later), and until the next
 * submission, a caller that spins on something other than completions (a
 * flag in a region: no rp_poll() between its calls) keeps spinning through
 * a still engine instead of yielding after RELAX_STILL_NS, as long as the
 * engine polls this ring (not armed), makes no passes and last ran on
 * another CPU. That is what an engine inside a device call looks like, and
 * rxe delivers a write's data inside its post call, about halfway through:
 * what the caller waits for is most likely that data, since the task that
 * ran here had its turn, and a yield now would cost about as long again.
 * Guest, write ping-pong: a client that yielded a few microseconds before
 * the data landed paid a second pair of process switches per half round
 * trip (~45 us instead of ~25) in about a third of the daemon's runs, set
 * by timing for the whole run. After a submission the next step is another
 * task's; an engine making passes holds nothing this wait needs; an armed
 * ring's counters do not move at all; and on the engine's own CPU the spin
 * would take the CPU the engine waits for: the short still time then.
 */
#define RELAX_RESUME_MIN_NS 10000u
#define RELAX_RESUME_MAX_NS 100000u
/*
 * rp_relax() sleeps on the doorbell, however short this client's waits
 * usually are, once the engine has published no pass to this client's ring
 * for this long while the wait goes on: it is not running (waiting for a
 * CPU), asleep, inside one long call, or no longer polls this ring (quiet
 * for longer than it usually is: its completions ring the doorbell).
 * Spinning on does not bring the completion nearer: a yield need not hand
 * over the CPU (the scheduler may hold the engine back until its turn
 * comes, whatever its weight), and a stale "free" reading (published while
 * the engine last ran) makes no yield at all, so the spinner keeps its CPU
 * for the rest of its time slice. On the host, a client writing 8 B
 * synchronously while another user registered 2 GiB had 5-19 operations
 * over 3 ms without this, 0-8 with it. An engine inside a device call under
 * emulation stays still for up to hundreds of microseconds, and one sleep
 * too many costs one wake-up.
 */
#define RELAX_GONE_NS 1000000u

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void ring_doorbell(int bell)
{
	uint64_t one = 1;

	/* EAGAIN: its queue is full, so the daemon has a wake-up pending; ECONNREFUSED: gone. */
	if (write(bell, &one, sizeof(one)) < 0) {
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

/*
 * Has the daemon hung up? Submissions find out without a system call each:
 * the socket is looked at (poll(2), which leaves the doorbell alone) at most
 * once per LIVENESS_CHECK_NS.
 */
static bool daemon_gone(struct rp_client *c)
{
	struct pollfd p = { .fd = c->conn.fd, .events = 0 };
	uint64_t now;

	if (c->dead)
		return true;
	now = now_ns(CLOCK_MONOTONIC_COARSE);
	if (now < c->next_check_ns)
		return false;
	c->next_check_ns = now + LIVENESS_CHECK_NS;
	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
		c->dead = true;
	return c->dead;
}

int client_request(struct rp_client *c, uint16_t type, const void *body, size_t len, int fd,
		   void *reply, size_t replylen)
{
	int r = conn_request(&c->conn, type, body, len, fd, reply, replylen);

	if (r == -RP_EDAEMON)
		c->dead = true;
	return r;
}

int client_poll_set(struct rp_client *c)
{
	struct epoll_event ev = { .events = EPOLLIN };

	c->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (c->ep_fd < 0)
		return -errno;
	if (epoll_ctl(c->ep_fd, EPOLL_CTL_ADD, c->cq_bell, &ev) < 0)
		return -errno;
	/* No events asked: only the hang-up (and errors) of the daemon's socket wake it. */
	ev.events = 0;
	if (epoll_ctl(c->ep_fd, EPOLL_CTL_ADD, c->conn.fd, &ev) < 0)
		return -errno;
	return 0;
}

int client_submit(struct rp_client *c, const struct rp_sqe *q)
{
	uint32_t mask = c->v.sq_entries - 1;
	struct rp_sqe *e;
	uint64_t wire;
	int64_t used;
	int r;

	if (c->conn.fd < 0 || daemon_gone(c))
		return -RP_EDAEMON;
	/*
	 * The daemon's consumer index is read only when the copy we have says
	 * the ring is full: that line changes on every pass of the daemon, and
	 * reading it on every submission would cost a trip between CPUs.
	 */
	used = rp_ring_count(c->sq_tail, c->sq_cons, c->v.sq_entries);
	if (used < 0 || used == c->v.sq_entries) {
		c->sq_cons = rp_ring_load(&c->v.sq->consumer);
		used = rp_ring_count(c->sq_tail, c->sq_cons, c->v.sq_entries);
	}
	if (used < 0)
		return -EPROTO;
	if (used == c->v.sq_entries)
		return -EAGAIN;
	r = ops_track(c, q, &wire);
	if (r < 0)
		return r;
	e = &c->v.sqes[c->sq_tail & mask];
	memcpy(e, q, offsetof(struct rp_sqe, seq));
	e->cookie = wire;
	/* Protocol 3: the daemon polls the seq; before, it must be 0. */
	rp_sqe_seq_store(e, c->seq ? c->sq_tail + 1 : 0);
	c->sq_tail++;
	c->resume_end_ns = 0; /* the next step is another task's (RELAX_RESUME_MIN_NS) */
	rp_ring_store(&c->v.sq->producer, c->sq_tail);
	if (rp_ring_take_wakeup(c->v.sq, RP_RING_NEED_WAKEUP))
		ring_doorbell(c->sq_bell);
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

RP_EXPORT int rp_write(struct rp_client *c, struct rp_region *r, size_t off, struct rp_remote *dst,
		       size_t roff, size_t len, uint64_t cookie, unsigned flags)
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

static int to_completion(struct rp_client *c, const struct rp_cqe *e, struct rp_completion *out)
{
	uint64_t cookie;

	if (ops_complete(c, e, &cookie) < 0)
		return -EPROTO;
	memset(out, 0, sizeof(*out));
	out->cookie = cookie;
	out->status = e->status;
	out->op = e->op;
	out->len = e->len;
	out->imm = e->imm;
	out->offset = e->offset;
	if ((e->op == RP_OP_NOTIFY || e->op == RP_OP_RECV) && e->region &&
	    e->region <= c->n_regions)
		out->region = c->regions[e->region - 1];
	return 0;
}

/* A moving average: @avg with weight 3/4, the sample @w with 1/4. */
static uint64_t avg4(uint64_t avg, uint64_t w)
{
	return avg - avg / 4 + w / 4;
}

/*
 * A completion came while rp_relax() waited for one (polling, with ops in
 * flight, each poll right after an rp_relax()): how long that wait took is
 * one sample of how long this client waits for its completions (a moving
 * average, weight 1/4; one sample counts at most 20 ms). Only such waits
 * count: completions reaped in batches long after they came (a ping-pong
 * reaping its own writes now and then) or after rp_wait() say nothing.
 */
static void wait_note(struct rp_client *c)
{
	uint64_t w = now_ns(CLOCK_MONOTONIC) - c->wait_ns;

	if (w > 2ull * RELAX_SLEEP_MAX_MS * 1000000u)
		w = 2ull * RELAX_SLEEP_MAX_MS * 1000000u;
	c->wait_avg_ns = avg4(c->wait_avg_ns, w);
	c->wait_ns = 0;
	c->waits++;
}

/*
 * A sleep on the doorbell that began at @armed, with this thread's CPU
 * time at @cpu, is over: if the daemon rang it meanwhile, one sample of
 * what a wake-up costs is the longer of how long this process took to run
 * after the ring and the CPU time the sleep itself took (a moving average,
 * weight 1/4, the first sample whole; one sample counts at most
 * RELAX_SLEEP_WAIT_NS). The CPU time is what an emulator shows: in the
 * test guest a sleep and its wake-up took 100-400 us of the sleeper's own
 * CPU (a switch between processes starts with an empty software TLB),
 * 6-27 us on the host. A sleep the daemon did not ring after it began (one
 * that timed out), or a daemon that does not say when it rang (0), tells
 * nothing.
 */
static void wake_note(struct rp_client *c, uint64_t armed, uint64_t cpu)
{
	uint64_t rung = atomic_load_explicit(&c->v.cq->rung_ns, memory_order_acquire);
	uint64_t now, w;

	if (rung < armed)
		return;
	now = now_ns(CLOCK_MONOTONIC);
	w = now > rung ? now - rung : 0;
	cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
	if (cpu > w)
		w = cpu;
	if (w > RELAX_SLEEP_WAIT_NS)
		w = RELAX_SLEEP_WAIT_NS;
	c->wake_avg_ns = c->wake_avg_ns ? avg4(c->wake_avg_ns, w) : w;
}

/*
 * Should rp_relax() sleep through this wait? Yes if the usual wait is a
 * millisecond or more. If it is shorter, only once the usual wait is
 * RELAX_WAKE_RATIO times what a wake-up costs (at least
 * RELAX_SLEEP_WAIT_MIN_NS), and only once this wait has lasted as long as
 * a wake-up costs: the usual wait is an average, and after one long wait
 * it stays long for a few quick ones, which would each pay a doorbell and a
 * wake-up for a completion microseconds away; spinning first for what
 * blocking costs bounds that loss (the ski-rental rule).
 */
static bool long_wait(const struct rp_client *c)
{
	uint64_t t = (uint64_t)RELAX_WAKE_RATIO * c->wake_avg_ns;

	if (c->wait_avg_ns >= RELAX_SLEEP_WAIT_NS)
		return true;
	if (c->wait_mode == RP_WAIT_BUSY || !c->wake_avg_ns || c->wait_avg_ns < t ||
	    c->wait_avg_ns < RELAX_SLEEP_WAIT_MIN_NS)
		return false;
	return now_ns(CLOCK_MONOTONIC) - c->wait_ns >= c->wake_avg_ns;
}

/*
 * The usual wait is too short to sleep for by the rule as it stands, but
 * long enough that it might be: sleep in this wait anyway, to learn what a
 * wake-up costs, if that is not known yet or was last learned
 * RELAX_LEARN_WAITS waits ago (the first time at once).
 */
static bool learn_wake(struct rp_client *c)
{
	if (c->wait_mode == RP_WAIT_BUSY || c->wait_avg_ns < RELAX_SLEEP_WAIT_MIN_NS ||
	    (c->learned_at && c->waits + 1 - c->learned_at < RELAX_LEARN_WAITS))
		return false;
	c->learned_at = c->waits + 1;
	return true;
}

/* Is a completion at the consumer index (protocol 3: its lap; before: the producer index)? */
static bool cq_pending(const struct rp_client *c)
{
	if (c->seq)
		return rp_cqe_ready(&c->v.cqes[c->cq_head & (c->v.cq_entries - 1)], c->cq_head,
				    c->v.cq_entries);
	return rp_ring_load(&c->v.cq->producer) != c->cq_head;
}

/*
 * Copy out what is there. A completion that matches no operation of ours
 * stays in the ring and makes this -EPROTO from then on.
 */
static int reap(struct rp_client *c, struct rp_completion *comps, int max)
{
	uint32_t prod = 0, mask = c->v.cq_entries - 1;
	struct rp_cqe e;
	int n = 0, err = 0;

	if (!c->seq) {
		prod = rp_ring_load(&c->v.cq->producer);
		if (rp_ring_count(prod, c->cq_head, c->v.cq_entries) < 0)
			return -EPROTO;
		if (prod == c->cq_head) {
			/* Empty: fetch the next entry's slot now (xfer_pending() in the daemon). */
			__builtin_prefetch(&c->v.cqes[c->cq_head & mask]);
			return 0;
		}
	}
	while (n < max && (c->seq ? cq_pending(c) : c->cq_head != prod)) {
		memcpy(&e, &c->v.cqes[c->cq_head & mask], sizeof(e));
		e.op &= RP_CQE_OP_MASK;
		err = to_completion(c, &e, &comps[n]);
		if (err < 0)
			break;
		n++;
		c->cq_head++;
	}
	if (n) {
		if (c->wait_ns)
			wait_note(c);
		c->relax_polls = 0;
		rp_ring_store(&c->v.cq->consumer, c->cq_head);
		/* The daemon may be waiting for this space. */
		if (rp_ring_take_wakeup(c->v.sq, RP_RING_STALLED))
			ring_doorbell(c->sq_bell);
	}
	return n ? n : err;
}

/*
 * The daemon is gone: first what it completed before it went, then one
 * completion from the library for each operation left, then -RP_EDAEMON.
 */
static int poll_dead(struct rp_client *c, struct rp_completion *comps, int max)
{
	int n = reap(c, comps, max);

	if (n > 0)
		return n;
	n = ops_report_dead(c, comps, max);
	return n ? n : -RP_EDAEMON;
}

/* Is the daemon still there? Drains the doorbell as a side effect. */
static int check_fds(struct rp_client *c, int timeout_ms)
{
	struct pollfd p[2] = {
		{ .fd = c->cq_bell, .events = POLLIN },
		{ .fd = c->conn.fd, .events = 0 },
	};
	uint64_t v;
	int n = poll(p, 2, timeout_ms);

	if (n < 0)
		return -errno;
	if (p[0].revents & POLLIN) {
		if (read(c->cq_bell, &v, sizeof(v)) < 0) {
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
 * Ask the daemon to ring the completion doorbell, then look again: a
 * completion may have raced the flag. While the flag is still armed the
 * daemon has not rung since the last arming, so the doorbell is quiet and
 * nothing needs doing (no system call); only after the daemon used the
 * arming is the doorbell drained and the flag set again.
 */
static void arm_flag(struct rp_client *c)
{
	uint64_t v;

	if (atomic_load_explicit(&c->v.cq->flags, memory_order_acquire) & RP_RING_NEED_WAKEUP)
		return;
	if (read(c->cq_bell, &v, sizeof(v)) < 0) {
		/* EAGAIN: the daemon had not rung. */
	}
	rp_ring_arm(c->v.cq, RP_RING_NEED_WAKEUP);
}

static int arm(struct rp_client *c, struct rp_completion *comps, int max)
{
	arm_flag(c);
	return reap(c, comps, max);
}

RP_EXPORT int rp_poll(struct rp_client *c, struct rp_completion *comps, int max)
{
	uint64_t now;
	int n, r;

	if (!c || !comps || max <= 0)
		return -EINVAL;
	/* First: a corrupt ring must not keep the ops in flight from being reported. */
	if (c->dead)
		return poll_dead(c, comps, max);
	/* A wait (rp_relax()) goes on only while polls and rp_relax() calls alternate. */
	if (!c->relaxed)
		c->wait_ns = 0;
	c->relaxed = false;
	n = reap(c, comps, max);
	c->poll_empty = false;
	if (n != 0)
		return n;
	now = now_ns(CLOCK_MONOTONIC_COARSE);
	if (now >= c->next_check_ns) {
		c->next_check_ns = now + LIVENESS_CHECK_NS;
		r = check_fds(c, 0);
		if (r == -RP_EDAEMON)
			return poll_dead(c, comps, max);
		if (r < 0)
			return r;
	}
	/*
	 * Only an application that sleeps on rp_fd() needs the doorbell armed
	 * here; one that polls or uses rp_wait() arms it just before sleeping,
	 * so a busy poller costs the daemon no doorbell write per completion.
	 */
	if (c->fd_user)
		n = arm(c, comps, max);
	c->poll_empty = n == 0;
	return n;
}

void client_wait_init(struct rp_client *c)
{
	const char *m = getenv("RDMAPROXY_WAIT");

	c->spin_ns = SPIN_START_NS;
	c->wait_mode = RP_WAIT_ADAPTIVE;
	if (m && !strcmp(m, "busy"))
		c->wait_mode = RP_WAIT_BUSY;
	else if (m && !strcmp(m, "sleep"))
		c->wait_mode = RP_WAIT_SLEEP;
}

RP_EXPORT int rp_set_wait_mode(struct rp_client *c, int mode)
{
	if (!c || (mode != RP_WAIT_ADAPTIVE && mode != RP_WAIT_BUSY && mode != RP_WAIT_SLEEP))
		return -EINVAL;
	c->wait_mode = (uint8_t)mode;
	return 0;
}

/*
 * Only posted receives are in flight: what the caller waits for is another
 * process's send, and while the CPUs are crowded that process may be
 * waiting for this very CPU. A waiter then yields as soon as the engine's
 * work count stops moving, without the still time that protects a
 * submission the engine is about to take. (The count is stored once per
 * pass: a long pass, say one copying into this very receive, looks still
 * too, and then costs such a waiter a yield per call.)
 */
static bool recv_only(const struct rp_client *c)
{
	return c->inflight && c->inflight == c->recv_inflight;
}

/*
 * Poll until a completion comes or @until (ns) passes, with `pause` between
 * polls. With @watch (the adaptive wait), give up as soon as the daemon's
 * engine (the ring's daemon_passes) has not moved for STILL_NS: it is asleep
 * or not running, and spinning would only take a CPU it may need; while the
 * daemon says the CPUs are crowded (rp-ring.h: more runnable tasks than
 * CPUs), also yield between polls once it has done no work (daemon_work) for
 * OWNER_STILL_NS. The busy spin (a thread on a core of its own) never yields.
 */
static int spin(struct rp_client *c, struct rp_completion *comps, int max, uint64_t until,
		bool watch)
{
	const struct rp_ring_info *info = c->v.info;
	uint32_t seen = atomic_load_explicit(&info->daemon_passes, memory_order_relaxed);
	uint32_t worked = atomic_load_explicit(&info->daemon_work, memory_order_relaxed), v;
	uint64_t now, moved = now_ns(CLOCK_MONOTONIC), busy = moved;
	bool recv = recv_only(c); /* then no still time before a yield */
	unsigned polls = 0;
	int n;

	for (;;) {
		n = rp_poll(c, comps, max);
		if (n != 0)
			return n;
		rp_cpu_relax();
		if (++polls % 8)
			continue;
		now = now_ns(CLOCK_MONOTONIC);
		if (now >= until)
			return 0;
		if (!watch)
			continue;
		v = atomic_load_explicit(&info->daemon_passes, memory_order_relaxed);
		if (v != seen) {
			seen = v;
			moved = now;
		} else if (now - moved > STILL_NS) {
			return 0;
		}
		v = atomic_load_explicit(&info->daemon_work, memory_order_relaxed);
		if (v != worked) {
			worked = v;
			busy = now;
		} else if ((recv || now - busy > OWNER_STILL_NS) &&
			   atomic_load_explicit(&info->cpus, memory_order_relaxed) !=
				   RP_CPUS_FREE) {
			sched_yield();
		}
	}
}

/*
 * In a wait of rp_relax(): has the engine published no pass to this ring
 * for RELAX_GONE_NS? Not in the busy mode (a core of its own: spinning costs
 * nobody), nor while only receives are in flight (what they wait for is
 * another process's send, whatever the engine does).
 */
static bool engine_gone(struct rp_client *c)
{
	uint32_t p = atomic_load_explicit(&c->v.info->daemon_passes, memory_order_relaxed);
	uint64_t now;

	if (c->wait_mode == RP_WAIT_BUSY || recv_only(c))
		return false;
	now = now_ns(CLOCK_MONOTONIC);
	if (!c->gone_ns || p != c->gone_passes) {
		c->gone_passes = p;
		c->gone_ns = now;
		return false;
	}
	return now - c->gone_ns >= RELAX_GONE_NS;
}

/* rp_relax(): sleep on the doorbell until a completion comes (RELAX_SLEEP_MAX_MS). */
static int relax_sleep(struct rp_client *c)
{
	uint64_t ms = (c->wait_avg_ns + 999999u) / 1000000u, armed, cpu;

	/* No usual wait yet (a sleep for engine_gone()): a millisecond. */
	if (!ms)
		ms = 1;
	arm_flag(c);
	/* A completion may have raced the flag: take the arming back (no doorbell for it). */
	if (cq_pending(c)) {
		rp_ring_take_wakeup(c->v.cq, RP_RING_NEED_WAKEUP);
		return 0;
	}
	armed = now_ns(CLOCK_MONOTONIC);
	cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
	/* A hang-up is seen here too; the next rp_poll() reports it. */
	check_fds(c, ms < RELAX_SLEEP_MAX_MS ? (int)ms : RELAX_SLEEP_MAX_MS);
	wake_note(c, armed, cpu);
	return 1;
}

/* rp_relax(), still for RELAX_STILL_NS: spin on instead of yielding (RELAX_RESUME_MIN_NS)? */
static bool resume_spin(const struct rp_client *c, uint64_t now)
{
	const struct rp_ring_info *info = c->v.info;
	uint32_t engine = atomic_load_explicit(&info->engine_cpu, memory_order_relaxed);
	int cpu;

	if (c->relax_polls || now >= c->resume_end_ns || !engine ||
	    atomic_load_explicit(&info->daemon_passes, memory_order_relaxed) !=
		    c->relax_still_passes ||
	    (atomic_load_explicit(&c->v.sq->flags, memory_order_relaxed) &
	     (RP_RING_NEED_WAKEUP | RP_RING_STALLED)))
		return false;
	cpu = sched_getcpu();
	return cpu >= 0 && (uint32_t)cpu + 1 != engine;
}

RP_EXPORT int rp_relax(struct rp_client *c)
{
	uint64_t now, took;
	uint32_t p;
	bool cpus_free;

	if (!c)
		return -EINVAL;
	/* Calls in a row that each came right after an empty rp_poll(). */
	c->relax_polls = c->poll_empty ? c->relax_polls + 1 : 0;
	c->poll_empty = false;
	rp_cpu_relax();
	cpus_free = atomic_load_explicit(&c->v.info->cpus, memory_order_relaxed) == RP_CPUS_FREE;
	/*
	 * A wait for completions starts here and ends in reap() (or at a call
	 * not after a poll); while the CPUs are free, its timing only starts
	 * at its RELAX_FREE_CALLS-th call (a free reading later on does not
	 * restart it).
	 */
	if (!c->relax_polls || !c->inflight) {
		c->wait_ns = 0;
	} else if (!c->wait_ns && (!cpus_free || c->relax_polls >= RELAX_FREE_CALLS)) {
		c->wait_ns = now_ns(CLOCK_MONOTONIC);
		c->gone_ns = 0;
	}
	c->relaxed = c->wait_ns != 0;
	/*
	 * Polling for completions (each of the last calls came right after a
	 * poll that found none) of ops in flight, and such waits usually
	 * last long: sleep until the next, whether or not the engine is busy
	 * (with other clients' work, say) or the CPUs are free. An
	 * application that spins on something else (a flag in a region)
	 * between its polls never sleeps here.
	 */
	if (c->wait_ns && c->relax_polls >= (cpus_free ? RELAX_FREE_CALLS : RELAX_POLL_CALLS) &&
	    c->relax_polls % RELAX_POLL_CALLS == 0 && !c->dead &&
	    (engine_gone(c) || long_wait(c) || learn_wake(c))) {
		c->relax_still_ns = 0;
		return relax_sleep(c);
	}
	if (cpus_free)
		return 0;
	p = atomic_load_explicit(&c->v.info->daemon_work, memory_order_relaxed);
	if (p != c->relax_seen) {
		c->relax_seen = p; /* busy on another CPU: spinning pays */
		c->relax_still_ns = 0;
		return 0;
	}
	/* Only receives in flight and the engine's work count still: see recv_only(). */
	if (c->relax_polls && recv_only(c)) {
		c->relax_still_ns = 0;
		sched_yield();
		return 1;
	}
	/*
	 * Time, not calls: a call's `pause` costs from a few nanoseconds to
	 * microseconds (under emulation), and a spinner that keeps the CPU
	 * for 32 of them there held it for ~100 us while the peer it waited
	 * for sat on the run queue.
	 */
	now = now_ns(CLOCK_MONOTONIC);
	if (!c->relax_still_ns) {
		c->relax_still_ns = now;
		c->relax_still_passes =
			atomic_load_explicit(&c->v.info->daemon_passes, memory_order_relaxed);
		return 0;
	}
	if (now - c->relax_still_ns < RELAX_STILL_NS || resume_spin(c, now))
		return 0;
	c->relax_still_ns = 0;
	sched_yield();
	took = now_ns(CLOCK_MONOTONIC) - now;
	c->resume_end_ns =
		took < RELAX_RESUME_MIN_NS
			? 0
			: now + took + (took < RELAX_RESUME_MAX_NS ? took : RELAX_RESUME_MAX_NS);
	return 1;
}

/* A sleep of @slept ns followed a spin of c->spin_ns: adapt the next spin. */
static void adapt(struct rp_client *c, uint64_t slept)
{
	if (slept < c->spin_ns && c->spin_ns < SPIN_MAX_NS)
		c->spin_ns *= 2;
	else if (slept > 16ull * c->spin_ns && c->spin_ns > SPIN_MIN_NS)
		c->spin_ns /= 2;
}

/* A poll() timeout for @ns still to wait: rounded up, at most INT_MAX. */
static int wait_ms(uint64_t ns)
{
	uint64_t ms = ns / 1000000u + 1;

	return ms < INT_MAX ? (int)ms : INT_MAX;
}

RP_EXPORT int rp_wait(struct rp_client *c, struct rp_completion *comps, int max, int timeout_ms)
{
	uint64_t t0, end = 0, slept_at, now;
	int n, r;

	if (!c || !comps || max <= 0 || timeout_ms < -1)
		return -EINVAL;
	n = rp_poll(c, comps, max);
	if (n != 0 || timeout_ms == 0)
		return n;
	t0 = now_ns(CLOCK_MONOTONIC);
	if (timeout_ms > 0)
		end = t0 + (uint64_t)timeout_ms * 1000000ull;
	if (c->wait_mode == RP_WAIT_BUSY)
		return spin(c, comps, max, timeout_ms > 0 ? end : UINT64_MAX, false);
	if (c->wait_mode == RP_WAIT_ADAPTIVE) {
		uint64_t until = t0 + c->spin_ns;

		n = spin(c, comps, max, end && end < until ? end : until, true);
		if (n != 0)
			return n;
	}
	slept_at = now_ns(CLOCK_MONOTONIC);
	for (;;) {
		/* Arm the doorbell only now, just before sleeping. */
		n = arm(c, comps, max);
		if (n != 0)
			break;
		now = now_ns(CLOCK_MONOTONIC);
		if (end && now >= end)
			return 0;
		/* One reading of the clock: a second, past @end, would wrap to "forever". */
		r = check_fds(c, end ? wait_ms(end - now) : -1);
		/* A hang-up is not the end: what was in flight is reported first. */
		if (r == -RP_EDAEMON)
			return poll_dead(c, comps, max);
		if (r < 0)
			return r;
		n = reap(c, comps, max);
		if (n != 0)
			break;
	}
	if (n > 0 && c->wait_mode == RP_WAIT_ADAPTIVE)
		adapt(c, now_ns(CLOCK_MONOTONIC) - slept_at);
	return n;
}

RP_EXPORT int rp_fd(const struct rp_client *c)
{
	if (!c)
		return -EINVAL;
	/*
	 * From now on the application may sleep on the fd after any empty
	 * rp_poll(), so those arm the doorbell. The client is the library's
	 * own heap object: only the public prototype is const.
	 */
	((struct rp_client *)c)->fd_user = true;
	/* An epoll set of the doorbell and the socket: the daemon's death wakes it too. */
	return c->ep_fd;
}
