/* SPDX-License-Identifier: MIT */
/*
 * Timers and fd watches for the layers that must not see the loop (the peer
 * layer, the verbs transport). The loop glue implements it (evloop_uv.c)
 * and hands a struct evloop down; the layers call it only through these
 * inline helpers, so nothing below the glue depends on libuv.
 *
 * A callback never runs after its object was freed; freeing is allowed from
 * inside the object's own callback. ev_timer_start(t, 0, 0) runs the
 * callback soon, after the current callback returns and before the loop
 * sleeps: the way to batch work done by several callbacks of one loop turn.
 */
#ifndef RP_DAEMON_EVLOOP_H
#define RP_DAEMON_EVLOOP_H

#include <stdint.h>

struct evloop;
struct ev_timer;
struct ev_watch;

struct evloop_ops {
	int (*timer_new)(struct evloop *ev, void (*cb)(void *arg), void *arg,
			 struct ev_timer **ret);
	/* (Re)start: first run after @ms, then every @repeat_ms (0: once). */
	void (*timer_start)(struct ev_timer *t, uint64_t ms, uint64_t repeat_ms);
	void (*timer_stop)(struct ev_timer *t);
	void (*timer_free)(struct ev_timer *t);
	/* @cb runs whenever @fd is readable (level-triggered). */
	int (*watch_new)(struct evloop *ev, int fd, void (*cb)(void *arg), void *arg,
			 struct ev_watch **ret);
	void (*watch_free)(struct ev_watch *w);
	/* The loop's idea of now, in milliseconds (monotonic, cached per turn). */
	uint64_t (*now_ms)(struct evloop *ev);
};

struct evloop {
	const struct evloop_ops *ops;
};

static inline int ev_timer_new(struct evloop *ev, void (*cb)(void *arg), void *arg,
			       struct ev_timer **ret)
{
	return ev->ops->timer_new(ev, cb, arg, ret);
}

static inline void ev_timer_start(struct evloop *ev, struct ev_timer *t, uint64_t ms,
				  uint64_t repeat_ms)
{
	ev->ops->timer_start(t, ms, repeat_ms);
}

static inline void ev_timer_stop(struct evloop *ev, struct ev_timer *t)
{
	ev->ops->timer_stop(t);
}

/* NULL-safe. */
static inline void ev_timer_free(struct evloop *ev, struct ev_timer *t)
{
	if (t)
		ev->ops->timer_free(t);
}

static inline int ev_watch_new(struct evloop *ev, int fd, void (*cb)(void *arg), void *arg,
			       struct ev_watch **ret)
{
	return ev->ops->watch_new(ev, fd, cb, arg, ret);
}

static inline void ev_watch_free(struct evloop *ev, struct ev_watch *w)
{
	if (w)
		ev->ops->watch_free(w);
}

static inline uint64_t ev_now_ms(struct evloop *ev)
{
	return ev->ops->now_ms(ev);
}

#endif
