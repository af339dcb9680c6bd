/* SPDX-License-Identifier: MIT */
/*
 * The data-path engine (loop glue). While there is work, one loop callback
 * runs passes to completion: drain the submission rings of the busy
 * sessions, poll the device CQ, post what the passes gathered (one post
 * list per QP, capped while one session submits: rdma/verbs_local.c says
 * why), publish completions (one producer store and at most one
 * doorbell per client per pass). No system call is made per operation:
 * the rings and the CQ are read from memory, the clock is read every
 * CLOCK_PASSES passes, and the loop is handed back to libuv only every
 * BUDGET_NS (control work: new clients, peers, timers) or when nothing is
 * left to do. It counts the sessions that have work: while several do, heavy
 * post lists go to the lanes' threads (vlocal_shared()).
 *
 * Idle, the engine spins a while before sleeping, since a submission or a
 * completion is often microseconds away and a wake-up costs far more
 * (RXE-FACTS: an eventfd round trip is ~100 us in the test guest); a session
 * that submits at a steady pace keeps it awake for twice its usual gap
 * between submissions (had_work()). The spin is bounded and polite: `pause`
 * first, then, only while more tasks are runnable than there are CPUs
 * (cpuload.h, sampled every millisecond), sched_yield() so that a client
 * sharing this CPU runs (a spinner that does not yield then takes the CPU
 * the others need to make the progress it waits for); while a lane's thread
 * posts a list (such a party: on rxe it copies the data in that call), it
 * blocks until a poster is done instead, for POST_WAIT_NS at most; with a
 * CPU to spare, the spin makes no system call. Each client's ring says which
 * it is, so that its library waits the same way. The spin's length adapts:
 * it grows when the engine was woken right after it gave up, it shrinks when
 * it keeps spinning for nothing. Bytes from a tcp peer (engine_net) keep it
 * spinning too, looking at the sockets every NET_LOOK_NS: a request or reply
 * over tcp is then met by a running loop instead of a wake-up. Before
 * sleeping it arms every doorbell (the clients' SQ flags, the CQ's event)
 * and looks once more, so nothing that raced is missed.
 */
#include "engine.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "base/cpuload.h"
#include "base/util.h"
#include "core/core.h"
#include "evloop_uv.h"
#include "rdma/rdma_dev.h"
#include "base/stats.h"
#include "rdma/verbs_local.h"

/* One callback runs passes for at most this long before libuv gets the loop back. */
#define BUDGET_NS 500000u
/*
 * An idle spin hands the loop to libuv (one epoll_wait(0)) once per this
 * long: a session not polled here (quiet for a whole spin, so armed) rings
 * its doorbell when it submits again, and only libuv sees that.
 */
#define LOOK_NS 10000u
/*
 * The same while bytes came from a tcp peer within the current spin: its
 * socket is seen only by libuv, and a reply is often a few microseconds away.
 */
#define NET_LOOK_NS 2000u
/* The clock is read once every this many passes, */
#define CLOCK_PASSES 16u
/* ... and after a pass that took this many submissions (each may cost a microsecond), */
#define CLOCK_ENTRIES 64u
/* ... or copied this many bytes locally (tcp transport: ~10 us). */
#define CLOCK_BYTES (64u << 10)
/* A client's ring says the engine is running at least once per this many passes. */
#define PUBLISH_PASSES 8u
/* An idle spin reads the clock once every this many passes while it only pauses. */
#define IDLE_CLOCK_PASSES 4u
/* Idle passes spent with `pause` before each further one yields the CPU, if crowded. */
#define PAUSE_PASSES 8u
/*
 * The longest an idle pass waits for a lane's poster thread to finish its
 * list (rings, the CQ and libuv are not looked at meanwhile).
 */
#define POST_WAIT_NS 200000u
/*
 * A session that submits every G (a ping-pong, a request loop) keeps its
 * ring polled, and the engine awake, for 2G after each submission, at most
 * HOT_MAX_NS: its next submission then finds a running engine instead of
 * paying a doorbell and a wake-up (RXE-FACTS: ~100 us each in the guest,
 * more than the whole operation, which would lengthen G in turn). Sessions
 * that submit less often than every HOT_GAP_MAX_NS get the idle spin only.
 */
#define HOT_MAX_NS 2000000u
#define HOT_GAP_MAX_NS 8000000u
/*
 * The sessions that had work are counted per SHARED_EPOCH_NS: while more
 * than one did in this epoch or the last, a heavy post list goes to its
 * lane's thread even while the other lanes are empty (vlocal_shared()).
 * Long enough to span a heavy list that the loop thread posts itself (128
 * WRs of 64 B take ~2 ms in the guest, and no other ring is looked at
 * meanwhile: with 2 ms, 4 clients still found "one session" at most of
 * their lists).
 */
#define SHARED_EPOCH_NS 10000000u
/* The idle spin before sleeping adapts between these. */
#define SPIN_MIN_NS 10000u
#define SPIN_MAX_NS 200000u
#define SPIN_START_NS 50000u

struct engine {
	uv_loop_t *loop;
	uv_idle_t idle; /* active while a pass ran out of budget with work left */
	struct core *core;
	struct rdev *rdev;     /* NULL on tcp */
	struct vlocal *vlocal; /* NULL on tcp */
	struct evloop *ev;     /* its "soon" timers run at the end of each pass */
	const struct engine_ops *ops;
	struct engine_ent *hot; /* sessions whose rings are polled */
	bool running;
	bool asleep;
	uint64_t now;	   /* the clock as last read */
	uint64_t last_cq;  /* last completion seen on the CQ */
	uint64_t last_net; /* last bytes from a tcp peer (engine_net) */
	uint64_t busy_at;  /* last pass with work, or last look at the doorbells */
	uint64_t slept_at; /* when it last went to sleep */
	struct cpuload load;
	uint32_t cpus;	   /* RP_CPUS_FREE or RP_CPUS_CROWDED, as last sampled */
	uint32_t cpu;	   /* 1 + the CPU this thread ran on, as last sampled (0: not known) */
	uint64_t epoch_at; /* when the current epoch began (SHARED_EPOCH_NS) */
	uint32_t epoch;
	unsigned epoch_sessions, last_sessions; /* sessions with work in it, in the last */
	struct engine_stats st;
};

static void shared_update(struct engine *e)
{
	vlocal_shared(e->vlocal, e->epoch_sessions > 1 || e->last_sessions > 1);
}

/* Read the clock and, when due, how crowded the CPUs are; start a new epoch. */
static void tick(struct engine *e)
{
	int cpu;

	e->now = mono_ns();
	e->cpus = cpuload_crowded(&e->load, e->now) ? RP_CPUS_CROWDED : RP_CPUS_FREE;
	cpu = sched_getcpu(); /* rseq: a load */
	e->cpu = cpu >= 0 ? (uint32_t)cpu + 1 : 0;
	if (e->now - e->epoch_at >= SHARED_EPOCH_NS) {
		/* After a sleep of more than an epoch the last one saw nothing. */
		e->last_sessions =
			e->now - e->epoch_at < 2 * SHARED_EPOCH_NS ? e->epoch_sessions : 0;
		e->epoch_sessions = 0;
		e->epoch++;
		e->epoch_at = e->now;
		shared_update(e);
	}
}

static void run(struct engine *e);

static void on_idle(uv_idle_t *h)
{
	run(h->data);
}

int engine_new(uv_loop_t *loop, struct core *core, struct rdev *rdev, struct vlocal *vlocal,
	       struct evloop *ev, const struct engine_ops *ops, struct engine **ret)
{
	struct engine *e = calloc(1, sizeof(*e));
	int r;

	if (!e)
		return -ENOMEM;
	r = uv_idle_init(loop, &e->idle);
	if (r < 0) {
		free(e);
		return r;
	}
	e->idle.data = e;
	e->loop = loop;
	e->core = core;
	e->rdev = rdev;
	e->vlocal = vlocal;
	e->ev = ev;
	e->ops = ops;
	e->st.spin_ns = SPIN_START_NS;
	e->asleep = true;
	cpuload_init(&e->load, "/proc/loadavg");
	e->cpus = RP_CPUS_CROWDED;
	e->epoch = 1; /* a new session's is 0 */
	*ret = e;
	return 0;
}

static void hot_unlink(struct engine *e, struct engine_ent *ent)
{
	if (!ent->hot)
		return;
	if (ent->prev)
		ent->prev->next = ent->next;
	else
		e->hot = ent->next;
	if (ent->next)
		ent->next->prev = ent->prev;
	ent->hot = false;
	ent->prev = ent->next = NULL;
}

static void hot_link(struct engine *e, struct engine_ent *ent)
{
	ent->last_ns = e->now;
	if (ent->hot)
		return;
	ent->hot = true;
	ent->prev = NULL;
	ent->next = e->hot;
	if (e->hot)
		e->hot->prev = ent;
	e->hot = ent;
}

/* A doorbell or an event woke a sleeping engine: was the last spin too short? */
static void woken(struct engine *e)
{
	uint64_t gap;

	if (!e->asleep)
		return;
	e->asleep = false;
	tick(e);
	gap = e->now - e->slept_at;
	e->st.wakeups++;
	if (gap < e->st.spin_ns && e->st.spin_ns < SPIN_MAX_NS)
		e->st.spin_ns *= 2; /* a little more spinning would have caught it */
	else if (gap > 16 * e->st.spin_ns && e->st.spin_ns > SPIN_MIN_NS)
		e->st.spin_ns /= 2; /* the spin before that sleep bought nothing */
}

void engine_kick(struct engine *e, struct engine_ent *ent)
{
	woken(e);
	hot_link(e, ent);
	run(e);
}

void engine_soon(struct engine *e, struct engine_ent *ent)
{
	woken(e);
	hot_link(e, ent);
	uv_idle_start(&e->idle, on_idle);
}

void engine_net(struct engine *e)
{
	if (!e)
		return;
	woken(e);
	tick(e);
	e->last_net = e->now;
	/* Spin once this loop turn is over (a pass here would delay the other sockets). */
	uv_idle_start(&e->idle, on_idle);
}

void engine_remove(struct engine *e, struct engine_ent *ent)
{
	hot_unlink(e, ent);
}

void engine_cq_event(struct engine *e)
{
	int r = rdev_cq_take_event(e->rdev);

	stats_count_cq(r);
	woken(e);
	e->last_cq = e->now;
	run(e);
}

/*
 * Tell @ent's client how the engine is doing (rp-ring.h). Its client reads
 * this line while it spins, so every store here moves the line between
 * CPUs: store only what changed, and the pass count only every
 * PUBLISH_PASSES passes (the client looks at it on a scale of microseconds).
 */
static void publish(struct engine *e, struct engine_ent *ent, struct rp_ring_info *info)
{
	uint32_t passes = (uint32_t)e->st.passes, work = (uint32_t)e->st.busy_passes;

	if (passes - ent->pub_passes >= PUBLISH_PASSES) {
		ent->pub_passes = passes;
		atomic_store_explicit(&info->daemon_passes, passes, memory_order_relaxed);
	}
	if (work != ent->pub_work) {
		ent->pub_work = work;
		atomic_store_explicit(&info->daemon_work, work, memory_order_relaxed);
	}
	if (e->cpus != ent->pub_cpus) {
		ent->pub_cpus = e->cpus;
		atomic_store_explicit(&info->cpus, e->cpus, memory_order_relaxed);
	}
	if (e->cpu != ent->pub_cpu) {
		ent->pub_cpu = e->cpu;
		atomic_store_explicit(&info->engine_cpu, e->cpu, memory_order_relaxed);
	}
}

/*
 * @ent's ring had work now: track the usual time between (an average of 4)
 * and how long its ring stays polled after this (HOT_MAX_NS; at least the
 * idle spin, which poll_session() adds).
 */
static void had_work(struct engine *e, struct engine_ent *ent)
{
	uint64_t gap = e->now - ent->work_ns;

	if (ent->work_ns) {
		if (gap > 2 * HOT_GAP_MAX_NS)
			gap = 2 * HOT_GAP_MAX_NS;
		ent->gap_ns = ent->gap_ns - ent->gap_ns / 4 + gap / 4;
	}
	ent->work_ns = e->now;
	ent->last_ns = e->now;
	if (ent->epoch != e->epoch) {
		ent->epoch = e->epoch;
		if (++e->epoch_sessions == 2)
			shared_update(e);
	}
	if (ent->gap_ns > HOT_GAP_MAX_NS)
		ent->window_ns = 0;
	else
		ent->window_ns = 2 * ent->gap_ns < HOT_MAX_NS ? 2 * ent->gap_ns : HOT_MAX_NS;
}

/* One session's ring in a pass: 1 if it had work. */
static int poll_session(struct engine *e, struct engine_ent *ent)
{
	struct session *s = ent->s;
	int r;

	/* Its client may spin while this moves (rp-ring.h): we are running. */
	if (s->rings.base)
		publish(e, ent, s->rings.v.info);
	if (!xfer_pending(s)) {
		if (e->now - ent->last_ns < ent->window_ns || e->now - ent->last_ns < e->st.spin_ns)
			return 0;
		/* Quiet for longer than it usually is: it rings when it submits again. */
		if (xfer_arm(s)) {
			hot_unlink(e, ent);
			return 0;
		}
	}
	had_work(e, ent);
	r = xfer_run(s);
	if (r < 0) {
		hot_unlink(e, ent);
		e->ops->fail(ent, r);
	} else if (r == XFER_STALLED) {
		hot_unlink(e, ent); /* its next reap rings the doorbell */
	}
	return 1;
}

/* Everything is quiet: arm what can wake us, look once more. true: asleep. */
static bool try_sleep(struct engine *e)
{
	if (e->hot || e->now - e->last_cq < e->st.spin_ns || e->now - e->last_net < e->st.spin_ns ||
	    vlocal_busy(e->vlocal))
		return false;
	if (e->rdev && rdev_cq_arm(e->rdev) == 0 && rdev_cq_drain(e->rdev) > 0) {
		e->last_cq = e->now; /* raced: keep going */
		return false;
	}
	e->asleep = true;
	e->slept_at = e->now;
	e->st.sleeps++;
	return true;
}

/* The end of a pass: post what it gathered, publish what it completed. */
static void flush(struct engine *e)
{
	evloop_uv_run_soon(e->ev);
	vlocal_flush(e->vlocal);
	core_publish(e->core);
}

static void run(struct engine *e)
{
	uint64_t start;
	unsigned pass, idle = 0;
	bool yield;
	int n;

	if (e->running)
		return;
	e->running = true;
	e->core->batching = true;
	vlocal_defer(e->vlocal, true);
	tick(e);
	start = e->now;
	for (pass = 1;; pass++) {
		struct engine_ent *ent, *next;
		int work = 0;

		core_pass_begin(e->core);
		for (ent = e->hot; ent; ent = next) {
			next = ent->next;
			work += poll_session(e, ent);
		}
		/* Sessions with work: beside others, a big local copy takes small pieces. */
		e->core->pass_sessions = (unsigned)work;
		if (e->rdev && (n = rdev_cq_drain(e->rdev)) > 0) {
			e->last_cq = e->now;
			work += n;
		}
		flush(e);
		e->st.passes++;
		idle = work ? 0 : idle + 1;
		e->st.busy_passes += work != 0;
		/* A pass that copied much, or took many entries, took long. */
		if (pass % CLOCK_PASSES == 0 || e->core->pass_entries >= CLOCK_ENTRIES ||
		    e->core->pass_bytes >= CLOCK_BYTES)
			tick(e);
		if (e->now - start >= BUDGET_NS) {
			/* Let libuv run control work, then come back. */
			uv_idle_start(&e->idle, on_idle);
			break;
		}
		if (work) {
			e->busy_at = e->now;
			continue;
		}
		/*
		 * Crowded, an idle pass yields after PAUSE_PASSES of them, or at
		 * once while a lane's thread posts a list: on rxe that thread
		 * copies the data in that call, and the spin would only take
		 * its CPU (guest, 4 and 16 clients, 64 B rate and 64 KiB
		 * bandwidth: medians from -2 % to +29 % in two boots). Better
		 * still, it then blocks until a poster is done (POST_WAIT_NS at
		 * most): a yield comes back at once, or only at the next tick,
		 * and each return is a pass that finds nothing to do (4 and 16
		 * clients writing 64 KiB: +18 % and +11 % in one boot).
		 */
		yield = e->cpus == RP_CPUS_CROWDED &&
			(idle > PAUSE_PASSES || vlocal_busy(e->vlocal));
		/*
		 * Idle passes are short (a look at each hot ring and a `pause`):
		 * the clock every few of them, every one once they yield.
		 */
		if (idle % IDLE_CLOCK_PASSES == 0 || yield)
			tick(e);
		if (try_sleep(e)) {
			uv_idle_stop(&e->idle);
			break;
		}
		if (e->now - e->busy_at >=
		    (e->now - e->last_net < e->st.spin_ns ? NET_LOOK_NS : LOOK_NS)) {
			/* A cold session's doorbell may have rung: let libuv look, come back. */
			e->busy_at = e->now;
			uv_idle_start(&e->idle, on_idle);
			break;
		}
		if (yield) {
			e->st.yields++;
			if (vlocal_wait_post(e->vlocal, POST_WAIT_NS))
				tick(e); /* it may have blocked */
			else
				sched_yield();
		} else {
			rp_cpu_relax();
		}
	}
	/*
	 * A pass may end after its flush with more written: the CQ drained by
	 * try_sleep() when its arming raced. Nothing may stay unpublished (or
	 * unposted) once the loop has the thread: a session may go away there.
	 */
	flush(e);
	vlocal_defer(e->vlocal, false);
	e->core->batching = false;
	e->running = false;
}

const struct engine_stats *engine_stats(const struct engine *e)
{
	static const struct engine_stats none;

	return e ? &e->st : &none;
}

static void on_closed(uv_handle_t *h)
{
	struct engine *e = h->data;

	cpuload_close(&e->load);
	free(e);
}

void engine_free(struct engine *e)
{
	if (e)
		uv_close((uv_handle_t *)&e->idle, on_closed);
}
