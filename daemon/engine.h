/* SPDX-License-Identifier: MIT */
/*
 * The data-path engine (loop glue, engine.c): runs the busy sessions' rings
 * and the device CQ in passes, with a budget, and sleeps on doorbells when
 * there is nothing to do.
 */
#ifndef RP_DAEMON_ENGINE_H
#define RP_DAEMON_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct core;
struct rdev;
struct vlocal;
struct evloop;
struct session;
struct engine;

/* A session as the engine sees it; embedded in the glue's connection. */
struct engine_ent {
	struct engine_ent *prev, *next; /* in the engine's busy list */
	struct session *s;
	uint64_t last_ns;	  /* when its ring last had work (or its doorbell rang) */
	uint64_t work_ns, gap_ns; /* when it last had work; the usual time between (engine.c) */
	uint64_t window_ns; /* how long after its last work its ring stays polled (had_work) */
	uint32_t pub_passes, pub_work; /* what its ring's info says (engine.c: publish) */
	uint32_t pub_cpus, pub_cpu;
	uint32_t epoch; /* the engine's epoch in which it last had work (engine.c) */
	bool hot;
};

struct engine_ops {
	/* @ent's ring could not be run (a corrupt ring: -EPROTO): end that client. */
	void (*fail)(struct engine_ent *ent, int err);
};

/* Counters (rdmaproxyctl metrics); spin_ns: the idle spin before sleeping, as it adapted. */
struct engine_stats {
	uint64_t passes, busy_passes, sleeps, wakeups, yields;
	uint64_t spin_ns;
};

int engine_new(uv_loop_t *loop, struct core *core, struct rdev *rdev, struct vlocal *vlocal,
	       struct evloop *ev, const struct engine_ops *ops, struct engine **ret);
/* @ent's doorbell rang (drained by the caller): poll it, run now. */
void engine_kick(struct engine *e, struct engine_ent *ent);
/* Poll @ent in the next pass, from the loop (not from inside this call). */
void engine_soon(struct engine *e, struct engine_ent *ent);
/*
 * Bytes came from a tcp peer: spin (looking at the sockets often) for the
 * current idle spin, since more traffic is likely microseconds away. NULL: no-op.
 */
void engine_net(struct engine *e);
/* @ent's session is going away: stop polling it. */
void engine_remove(struct engine *e, struct engine_ent *ent);
/* The device's completion channel is readable. */
void engine_cq_event(struct engine *e);
const struct engine_stats *engine_stats(const struct engine *e);
/* Close its handle; freed in the close callback. */
void engine_free(struct engine *e);

#endif
