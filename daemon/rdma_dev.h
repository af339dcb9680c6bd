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
 * each completion to that owner. So the loopback QP and every peer QP share
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
 * Completion-channel readiness: get the event, acknowledge (batched), re-arm,
 * then drain the CQ into the handler. Returns completions handled or -errno.
 */
int rdev_cq_event(struct rdev *d);
/* Poll without waiting for an event (used when spinning). */
int rdev_cq_drain(struct rdev *d);

/*
 * Read one async event if any: 1 and a description in @desc, 0 if none was
 * pending, or -errno. @fatal is set for events that leave the device unusable.
 * QP events are also handed to the QP's struct rdev_qp_ev, if it has one.
 */
int rdev_async_event(struct rdev *d, char *desc, size_t len, int *fatal);

#endif
