/* SPDX-License-Identifier: MIT */
#include "rdma/rdma_dev.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/vx.h"

/* Acknowledging CQ events takes a lock; doing it in batches keeps it cheap. */
#define CQ_ACK_BATCH 64
#define CQ_POLL_BATCH 32

struct rdev {
	struct ibv_context **list; /* rdma_get_devices(): contexts rdma_cm ids will use */
	struct ibv_context *ctx;
	uint8_t port;
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan;
	struct ibv_cq *cq;
	uint32_t cq_depth, cq_claimed; /* rdev_cq_claim() */
	unsigned unacked;
	uint64_t emptied;  /* rdev_cq_emptied() */
	unsigned draining; /* rdev_cq_drain() calls under way (a handler may drain too) */
};

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static const char *port_state_name(enum ibv_port_state s)
{
	return ibv_port_state_str(s);
}

/* The first active port of @ctx, or @want if it is active; 0 if none. */
static unsigned find_port(struct ibv_context *ctx, unsigned want, char *why, size_t whylen)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	unsigned p;

	if (vx_query_device(ctx, &da) < 0)
		return 0;
	for (p = 1; p <= da.phys_port_cnt; p++) {
		if (want && p != want)
			continue;
		if (vx_query_port(ctx, (uint8_t)p, &pa) < 0)
			continue;
		if (pa.state == IBV_PORT_ACTIVE)
			return p;
		snprintf(why, whylen, "%s port %u is %s", ibv_get_device_name(ctx->device), p,
			 port_state_name(pa.state));
	}
	if (want && want > da.phys_port_cnt)
		snprintf(why, whylen, "%s has no port %u", ibv_get_device_name(ctx->device), want);
	return 0;
}

static int pick_device(struct rdev *d, const char *want, unsigned want_port, char *why,
		       size_t whylen)
{
	char found[256] = "";
	int n = 0, i;

	if (vx_rdma_get_devices(&d->list, &n) < 0 || n == 0) {
		snprintf(why, whylen,
			 "no RDMA devices found (is a driver such as rdma_rxe loaded?)");
		return -ENODEV;
	}
	snprintf(why, whylen, "no RDMA device has an active port");
	for (i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(d->list[i]->device);
		unsigned p;

		snprintf(found + strlen(found), sizeof(found) - strlen(found), "%s%s",
			 found[0] ? ", " : "", name);
		if (want && strcmp(want, name) != 0)
			continue;
		p = find_port(d->list[i], want_port, why, whylen);
		if (p) {
			d->ctx = d->list[i];
			d->port = (uint8_t)p;
			return 0;
		}
		if (want)
			return -ENODEV;
	}
	if (want)
		snprintf(why, whylen, "no RDMA device named %s (found: %s)", want, found);
	return -ENODEV;
}

static int alloc_resources(struct rdev *d, uint32_t cq_depth, char *why, size_t whylen)
{
	const char *what = "ibv_alloc_pd";
	int r;

	r = vx_alloc_pd(d->ctx, &d->pd);
	if (r == 0) {
		what = "ibv_create_comp_channel";
		r = vx_create_comp_channel(d->ctx, &d->chan);
	}
	if (r == 0) {
		struct ibv_device_attr da;

		/* More than the device allows: what it allows (rdev_cq_room() says how many). */
		if (vx_query_device(d->ctx, &da) == 0 && da.max_cqe > 0 &&
		    cq_depth > (uint32_t)da.max_cqe)
			cq_depth = (uint32_t)da.max_cqe;
		what = "ibv_create_cq";
		r = vx_create_cq(d->ctx, (int)cq_depth, d, d->chan, &d->cq);
		d->cq_depth = r == 0 ? cq_depth : 0; /* asked, clamped; the CQ may be bigger */
	}
	if (r == 0) {
		what = "making the device fds non-blocking";
		r = set_nonblock(d->chan->fd);
		if (r == 0)
			r = set_nonblock(d->ctx->async_fd);
	}
	if (r == 0) {
		what = "ibv_req_notify_cq";
		r = vx_req_notify_cq(d->cq);
	}
	if (r < 0)
		snprintf(why, whylen, "%s: %s", what, strerror(-r));
	return r;
}

int rdev_open(const char *want, unsigned port, uint32_t cq_depth, struct rdev **ret, char *why,
	      size_t whylen)
{
	struct rdev *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return -ENOMEM;
	r = pick_device(d, want, port, why, whylen);
	if (r < 0)
		goto out_free;
	r = alloc_resources(d, cq_depth, why, whylen);
	if (r < 0)
		goto out_free;
	*ret = d;
	return 0;

out_free:
	rdev_free(d);
	return r;
}

/* Teardown order: CQ, completion channel, PD, then the device list. */
struct rdev *rdev_free(struct rdev *d)
{
	if (!d)
		return NULL;
	if (d->cq) {
		if (d->unacked)
			ibv_ack_cq_events(d->cq, d->unacked);
		vx_destroy_cq(d->cq);
	}
	if (d->chan)
		vx_destroy_comp_channel(d->chan);
	if (d->pd)
		vx_dealloc_pd(d->pd);
	if (d->list)
		rdma_free_devices(d->list);
	free(d);
	return NULL;
}

int rdev_comp_fd(const struct rdev *d)
{
	return d->chan->fd;
}

int rdev_async_fd(const struct rdev *d)
{
	return d->ctx->async_fd;
}

struct ibv_context *rdev_context(const struct rdev *d)
{
	return d->ctx;
}

struct ibv_pd *rdev_pd(const struct rdev *d)
{
	return d->pd;
}

struct ibv_cq *rdev_cq(const struct rdev *d)
{
	return d->cq;
}

int rdev_cq_claim(struct rdev *d, uint32_t n)
{
	if (n > d->cq_depth - d->cq_claimed)
		return -ENOSPC;
	d->cq_claimed += n;
	return 0;
}

void rdev_cq_unclaim(struct rdev *d, uint32_t n)
{
	d->cq_claimed -= n < d->cq_claimed ? n : d->cq_claimed;
}

uint32_t rdev_cq_room(const struct rdev *d)
{
	return d->cq_depth - d->cq_claimed;
}

static unsigned mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

static void query_gids(const struct rdev *d, const struct ibv_port_attr *pa, struct rdev_info *info)
{
	int i;

	for (i = 0; i < pa->gid_tbl_len && info->n_gids < RDEV_MAX_GIDS; i++) {
		union ibv_gid gid;
		static const uint8_t zero[16];

		if (vx_query_gid(d->ctx, d->port, i, &gid) < 0 || !memcmp(gid.raw, zero, 16))
			continue;
		inet_ntop(AF_INET6, gid.raw, info->gids[info->n_gids++], sizeof(info->gids[0]));
	}
}

int rdev_query(const struct rdev *d, struct rdev_info *info)
{
	struct ibv_port_attr pa;
	int r;

	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%s", ibv_get_device_name(d->ctx->device));
	info->port = d->port;
	r = vx_query_port(d->ctx, d->port, &pa);
	if (r < 0)
		return r;
	info->state = port_state_name(pa.state);
	info->active_mtu = mtu_bytes(pa.active_mtu);
	info->link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
	query_gids(d, &pa, info);
	return 0;
}

int rdev_cq_drain(struct rdev *d)
{
	struct ibv_wc wc[CQ_POLL_BATCH];
	int n, i, total = 0;

	d->draining++;
	while ((n = vx_poll_cq(d->cq, CQ_POLL_BATCH, wc)) > 0) {
		for (i = 0; i < n; i++) {
			struct rdev_wr *w = (struct rdev_wr *)(uintptr_t)wc[i].wr_id;

			if (w)
				w->done(w, &wc[i]);
		}
		total += n;
	}
	/*
	 * Only the outermost drain counts: one inside a handler may empty the
	 * CQ while completions the outer one took are still in its hands.
	 */
	if (--d->draining == 0 && n == 0)
		d->emptied++;
	return n < 0 ? n : total;
}

uint64_t rdev_cq_emptied(const struct rdev *d)
{
	return d->emptied;
}

int rdev_cq_take_event(struct rdev *d)
{
	struct ibv_cq *cq;
	int r = vx_get_cq_event(d->chan, &cq);

	if (r < 0)
		return r == -EAGAIN ? 0 : r;
	if (++d->unacked >= CQ_ACK_BATCH) {
		ibv_ack_cq_events(cq, d->unacked);
		d->unacked = 0;
	}
	return 1;
}

int rdev_cq_arm(struct rdev *d)
{
	return vx_req_notify_cq(d->cq);
}

static bool event_is_fatal(enum ibv_event_type t)
{
	return t == IBV_EVENT_DEVICE_FATAL;
}

int rdev_async_event(struct rdev *d, char *desc, size_t len, int *fatal)
{
	struct ibv_async_event ev;
	int r = vx_get_async_event(d->ctx, &ev);

	if (r < 0)
		return r == -EAGAIN ? 0 : r;
	switch (ev.event_type) {
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_GID_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
		snprintf(desc, len, "%s on port %d", ibv_event_type_str(ev.event_type),
			 ev.element.port_num);
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		snprintf(desc, len, "%s on QP %u", ibv_event_type_str(ev.event_type),
			 ev.element.qp->qp_num);
		if (ev.element.qp->qp_context) {
			struct rdev_qp_ev *q = ev.element.qp->qp_context;

			q->event(q, ev.event_type);
		}
		break;
	default:
		snprintf(desc, len, "%s", ibv_event_type_str(ev.event_type));
		break;
	}
	*fatal = event_is_fatal(ev.event_type);
	ibv_ack_async_event(&ev);
	return 1;
}
