/* SPDX-License-Identifier: MIT */
/*
 * The host's RDMA device as the daemon holds it: context, protection domain,
 * completion channel and one completion queue. This and the other verbs
 * files are the only ones that call libibverbs/librdmacm, and the one place
 * where their error conventions become negative errno values.
 */
#ifndef RP_DAEMON_RDMA_DEV_H
#define RP_DAEMON_RDMA_DEV_H

#include <stddef.h>
#include <stdint.h>

struct rdev;
struct ibv_wc;
struct ibv_pd;
struct ibv_cq;
struct ibv_context;

/*
 * Every work request posted on the device's CQ carries, as wr_id, a pointer
 * to a struct rdev_wr embedded in its owner's state; the drain loop hands
 * each completion to that owner. So the loopback QPs and every peer QP share
 * one CQ without a lookup table.
 */
struct rdev_wr {
	void (*done)(struct rdev_wr *w, const struct ibv_wc *wc);
};

/*
 * Affiliated async events of a QP (QP_FATAL, QP_ACCESS_ERR, COMM_EST, ...)
 * reach its owner when the QP was created with qp_context pointing to a
 * struct rdev_qp_ev embedded in the owner. The handler runs before the event
 * is acknowledged, so it must not destroy the QP (ibv_destroy_qp waits for
 * the acknowledgement): flag the QP and act from a later loop callback.
 */
struct rdev_qp_ev {
	void (*event)(struct rdev_qp_ev *q, int ibv_event_type);
};

#define RDEV_MAX_GIDS 4

struct rdev_info {
	char name[64];
	unsigned port;
	const char *state;	/* "ACTIVE", "DOWN", ... */
	unsigned active_mtu;	/* bytes */
	const char *link_layer; /* "Ethernet" or "InfiniBand" */
	unsigned n_gids;
	char gids[RDEV_MAX_GIDS][48];
};

/*
 * Open @want (NULL: the first device with an active port) on @port (0: the
 * first active one), with a CQ of @cq_depth entries armed for events.
 * -ENODEV when there is no usable device; @why says what was found.
 */
int rdev_open(const char *want, unsigned port, uint32_t cq_depth, struct rdev **ret, char *why,
	      size_t whylen);
struct rdev *rdev_free(struct rdev *d);

int rdev_comp_fd(const struct rdev *d);
int rdev_async_fd(const struct rdev *d);
int rdev_query(const struct rdev *d, struct rdev_info *info);

struct ibv_context *rdev_context(const struct rdev *d);
struct ibv_pd *rdev_pd(const struct rdev *d);
struct ibv_cq *rdev_cq(const struct rdev *d);
/*
 * The CQ is shared: each user claims the completions it may have outstanding
 * at once (every WR of its queues, since an error flushes them all), so that
 * together they never overflow it. rdev_cq_claim(): 0, or -ENOSPC if fewer
 * than @n of the @cq_depth entries are unclaimed; rdev_cq_room(): how many are.
 */
int rdev_cq_claim(struct rdev *d, uint32_t n);
void rdev_cq_unclaim(struct rdev *d, uint32_t n);
uint32_t rdev_cq_room(const struct rdev *d);

/*
 * The CQ is polled while the daemon is busy and raises an event only when
 * armed, which the engine does just before it sleeps:
 *   rdev_cq_take_event()  the completion channel is readable: take the event
 *                         (acknowledged in batches). 1: taken, 0: none; the
 *                         CQ is disarmed until rdev_cq_arm().
 *   rdev_cq_arm()         ask for an event on the next completion. 0 or -errno.
 *   rdev_cq_drain()       hand every completion there is to its owner: how
 *                         many, or -errno. Arm, then drain once more before
 *                         sleeping: one may have landed in between.
 */
int rdev_cq_take_event(struct rdev *d);
int rdev_cq_arm(struct rdev *d);
int rdev_cq_drain(struct rdev *d);
/*
 * How many times an outermost drain (not one inside a completion handler)
 * found the CQ empty. Once it has changed since a moment T, every completion
 * made before T has been handed to its owner.
 */
uint64_t rdev_cq_emptied(const struct rdev *d);

/*
 * Read one async event if any: 1 and a description in @desc, 0 if none was
 * pending, or -errno. @fatal is set for events that leave the device unusable.
 * QP events are also handed to the QP's struct rdev_qp_ev, if it has one.
 */
int rdev_async_event(struct rdev *d, char *desc, size_t len, int *fatal);

#endif
