/* SPDX-License-Identifier: MIT */
/*
 * evloop.h on the manager's libuv loop. A timer is a uv_timer_t, a watch a
 * uv_poll_t; both are freed in their close callbacks, as libuv requires.
 * A timer started with 0 ms runs "soon": at the end of the engine's current
 * pass (evloop_uv_run_soon), or from an idle handle in this loop turn,
 * before the loop polls, when no pass runs.
 */
#include "evloop_uv.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

struct uvev {
	struct evloop ev; /* first */
	uv_loop_t *loop;
	struct ev_timer *soon; /* started with 0 ms: run at the end of the engine's pass */
};

struct ev_timer {
	uv_timer_t timer;
	uv_idle_t idle; /* runs it soon when no engine pass does */
	struct uvev *u;
	struct ev_timer *soon_next;
	bool soon;
	unsigned open;
	void (*cb)(void *arg);
	void *arg;
};

static void soon_remove(struct ev_timer *t)
{
	struct ev_timer **pp;

	if (!t->soon)
		return;
	t->soon = false;
	uv_idle_stop(&t->idle);
	for (pp = &t->u->soon; *pp; pp = &(*pp)->soon_next)
		if (*pp == t) {
			*pp = t->soon_next;
			t->soon_next = NULL;
			break;
		}
}

struct ev_watch {
	uv_poll_t poll;
	void (*cb)(void *arg);
	void *arg;
};

static void on_timer(uv_timer_t *h)
{
	struct ev_timer *t = h->data;

	t->cb(t->arg);
}

static void on_idle(uv_idle_t *h)
{
	struct ev_timer *t = h->data;

	soon_remove(t);
	t->cb(t->arg);
}

void evloop_uv_run_soon(struct evloop *ev)
{
	struct uvev *u = (struct uvev *)ev;
	struct ev_timer *t, *list;

	if (!u)
		return;
	/* Those started again by these callbacks run at the next pass. */
	list = u->soon;
	u->soon = NULL;
	while ((t = list)) {
		list = t->soon_next;
		t->soon_next = NULL;
		if (!t->soon)
			continue; /* stopped or freed by an earlier callback */
		t->soon = false;
		uv_idle_stop(&t->idle);
		t->cb(t->arg);
	}
}

static int timer_new(struct evloop *ev, void (*cb)(void *arg), void *arg, struct ev_timer **ret)
{
	struct uvev *u = (struct uvev *)ev;
	struct ev_timer *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->cb = cb;
	t->arg = arg;
	t->u = u;
	uv_timer_init(u->loop, &t->timer);
	uv_idle_init(u->loop, &t->idle);
	t->timer.data = t->idle.data = t;
	t->open = 2;
	*ret = t;
	return 0;
}

static void timer_start(struct ev_timer *t, uint64_t ms, uint64_t repeat_ms)
{
	if (uv_is_closing((uv_handle_t *)&t->timer))
		return;
	if (ms == 0 && repeat_ms == 0) {
		if (t->soon)
			return;
		t->soon = true;
		t->soon_next = t->u->soon;
		t->u->soon = t;
		uv_idle_start(&t->idle, on_idle);
		return;
	}
	uv_timer_start(&t->timer, on_timer, ms, repeat_ms);
}

static void timer_stop(struct ev_timer *t)
{
	uv_timer_stop(&t->timer);
	soon_remove(t);
}

static void on_timer_closed(uv_handle_t *h)
{
	struct ev_timer *t = h->data;

	if (--t->open == 0)
		free(t);
}

static void timer_free(struct ev_timer *t)
{
	soon_remove(t);
	uv_close((uv_handle_t *)&t->timer, on_timer_closed);
	uv_close((uv_handle_t *)&t->idle, on_timer_closed);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct ev_watch *w = h->data;

	/* An error on the fd: let the owner read it and find out. */
	w->cb(w->arg);
}

static void on_watch_closed(uv_handle_t *h)
{
	free(h->data);
}

static int watch_new(struct evloop *ev, int fd, void (*cb)(void *arg), void *arg,
		     struct ev_watch **ret)
{
	struct uvev *u = (struct uvev *)ev;
	struct ev_watch *w = calloc(1, sizeof(*w));
	int r;

	if (!w)
		return -ENOMEM;
	r = uv_poll_init(u->loop, &w->poll, fd);
	if (r < 0) {
		free(w);
		return r;
	}
	w->cb = cb;
	w->arg = arg;
	w->poll.data = w;
	r = uv_poll_start(&w->poll, UV_READABLE, on_poll);
	if (r < 0) {
		uv_close((uv_handle_t *)&w->poll, on_watch_closed);
		return r;
	}
	*ret = w;
	return 0;
}

static void watch_free(struct ev_watch *w)
{
	uv_close((uv_handle_t *)&w->poll, on_watch_closed);
}

static uint64_t now_ms(struct evloop *ev)
{
	return uv_now(((struct uvev *)ev)->loop);
}

static const struct evloop_ops uv_ops = {
	.timer_new = timer_new,
	.timer_start = timer_start,
	.timer_stop = timer_stop,
	.timer_free = timer_free,
	.watch_new = watch_new,
	.watch_free = watch_free,
	.now_ms = now_ms,
};

int evloop_uv_new(uv_loop_t *loop, struct evloop **ret)
{
	struct uvev *u = calloc(1, sizeof(*u));

	if (!u)
		return -ENOMEM;
	u->ev.ops = &uv_ops;
	u->loop = loop;
	*ret = &u->ev;
	return 0;
}

struct evloop *evloop_uv_free(struct evloop *ev)
{
	free(ev);
	return NULL;
}
