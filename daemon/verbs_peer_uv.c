/* SPDX-License-Identifier: MIT */
/*
 * Loop glue of the verbs peer transport: the rdma_cm event channel (made
 * non-blocking by verbs_peer.c) joins the manager's loop as a uv_poll_t, and
 * one timer runs deferred work (teardown after a QP flushed, connection
 * deadlines). The timer only runs while there is such work, so an idle
 * daemon does not wake up for this transport.
 */
#include <errno.h>
#include <stdlib.h>
#include <uv.h>

#include "log.h"
#include "manager.h"
#include "verbs_peer.h"

/* While connections are being set up or torn down: look at them this often. */
#define VP_TICK_MS 100

struct vp_glue {
	uv_poll_t poll;
	uv_timer_t timer;
	uv_idle_t idle; /* runs vp_on_flush before the loop next blocks */
	struct vtransport *t;
	unsigned open; /* handles not yet closed */
};

static void on_cm(uv_poll_t *p, int status, int events)
{
	struct vp_glue *g = p->data;

	if (status < 0) {
		log_err("rdma_cm event channel: %s", uv_strerror(status));
		return;
	}
	g->t->busy++;
	vp_on_cm(g->t);
	vp_leave(g->t);
}

static void on_timer(uv_timer_t *tm)
{
	struct vp_glue *g = tm->data;
	bool again;

	g->t->busy++;
	again = vp_on_tick(g->t);
	if (!vp_leave(g->t) && again)
		uv_timer_start(&g->timer, on_timer, VP_TICK_MS, 0);
}

static void on_idle(uv_idle_t *h)
{
	struct vp_glue *g = h->data;

	uv_idle_stop(h);
	g->t->busy++;
	vp_on_flush(g->t);
	vp_leave(g->t);
}

int vp_glue_new(struct manager *m, int cm_fd, struct vtransport *t, struct vp_glue **ret)
{
	struct vp_glue *g = calloc(1, sizeof(*g));
	int r;

	if (!g)
		return -ENOMEM;
	g->t = t;
	r = uv_poll_init(&m->loop, &g->poll, cm_fd);
	if (r < 0) {
		free(g);
		return r;
	}
	g->poll.data = g;
	g->open++;
	uv_timer_init(&m->loop, &g->timer);
	g->timer.data = g;
	g->open++;
	uv_idle_init(&m->loop, &g->idle);
	g->idle.data = g;
	g->open++;
	r = uv_poll_start(&g->poll, UV_READABLE, on_cm);
	if (r < 0) {
		vp_glue_free(g);
		return r;
	}
	*ret = g;
	return 0;
}

void vp_glue_kick(struct vp_glue *g)
{
	if (g && !uv_is_closing((uv_handle_t *)&g->timer))
		uv_timer_start(&g->timer, on_timer, 0, 0);
}

void vp_glue_defer(struct vp_glue *g)
{
	if (g && !uv_is_closing((uv_handle_t *)&g->idle))
		uv_idle_start(&g->idle, on_idle);
}

uint64_t vp_now_ms(struct vp_glue *g)
{
	return uv_now(g->timer.loop);
}

static void on_closed(uv_handle_t *h)
{
	struct vp_glue *g = h->data;

	if (--g->open == 0)
		free(g);
}

void vp_glue_free(struct vp_glue *g)
{
	if (!g)
		return;
	uv_close((uv_handle_t *)&g->poll, on_closed);
	uv_close((uv_handle_t *)&g->timer, on_closed);
	uv_close((uv_handle_t *)&g->idle, on_closed);
}

static void free_now(struct vtransport *t)
{
	/* The poll handle leaves epoll in uv_close(), before the channel's fd goes. */
	vp_glue_free(t->g);
	vp_fini(t);
	free(t);
}

bool vp_leave(struct vtransport *t)
{
	if (--t->busy || !t->free_pending)
		return false;
	free_now(t);
	return true;
}

void vp_free(struct transport *xt)
{
	struct vtransport *t = (struct vtransport *)xt;

	if (t->busy) {
		t->free_pending = true;
		return;
	}
	free_now(t);
}

int verbs_transport_new(struct manager *m, struct transport **ret)
{
	struct vtransport *t;
	char why[256] = "";
	int r;

	if (!m->rdev)
		return -ENODEV;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->t.ops = &vp_ops;
	t->t.m = m;
	r = vp_init(t, m->rdev, m->cfg, m->incarnation, why, sizeof(why));
	if (r < 0) {
		log_err("verbs transport: %s", why);
		free(t);
		return r;
	}
	r = vp_glue_new(m, vp_cm_fd(t), t, &t->g);
	if (r < 0) {
		log_err("verbs transport: cannot watch the rdma_cm channel: %s", uv_strerror(r));
		vp_fini(t);
		free(t);
		return r;
	}
	log_info("verbs transport: %s", why);
	*ret = &t->t;
	return 0;
}
