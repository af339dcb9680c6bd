/* SPDX-License-Identifier: MIT */
/*
 * Every rdma-core call that can fail, as the daemon makes it. rdma-core has
 * three error conventions:
 *   - a positive errno as the return value, errno not necessarily set
 *     (ibv_modify_qp, ibv_post_send/recv, ibv_req_notify_cq, ibv_query_*
 *     except ibv_query_gid, ibv_destroy_*, ibv_dereg_mr, ...);
 *   - NULL with errno (ibv_create_*, ibv_alloc_pd, ibv_reg_mr,
 *     rdma_create_event_channel, rdma_get_devices);
 *   - -1 with errno (rdma_*, ibv_get_cq_event, ibv_get_async_event,
 *     ibv_query_gid).
 * Here, and only here, they become the daemon's one convention: 0 or a
 * negative errno, objects through ret_* out-parameters that are left
 * untouched on failure. No other file calls a failing rdma-core function
 * (tests/check-layers.sh enforces it); what remains elsewhere are the
 * string helpers and the void ack/free calls.
 */
#ifndef RP_DAEMON_VX_H
#define RP_DAEMON_VX_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* Convention 1 (positive errno); a provider returning -1 with errno is tolerated. */
static inline int vx_ret(int r)
{
	if (r > 0)
		return -r;
	if (r < 0)
		return errno > 0 ? -errno : -EIO;
	return 0;
}

#ifdef RP_VX_FAULTS
/*
 * Fault injection, built only into tests/helpers/verbs-local-check (the
 * daemon never defines RP_VX_FAULTS). rxe cannot be made to refuse a post
 * or a state change on demand, so the test arms one here, and the call fails
 * as a provider's would; in a refused post list the WRs before the refused
 * one still go to the real device.
 */
extern int vx_fault_post_at; /* >= 0: the next post list is refused at this WR */
extern int vx_fault_modify;  /* > 0: that many of the next modify_qp calls fail */
int vx_fault_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
#endif

/* Conventions 2 and 3: the call failed, errno says why. */
static inline int vx_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

/* ---- Device, PD, CQ, completion channel ---- */

static inline int vx_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	return vx_ret(ibv_query_device(ctx, a));
}

static inline int vx_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a)
{
	return vx_ret(ibv_query_port(ctx, port, a));
}

static inline int vx_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	return ibv_query_gid(ctx, port, index, gid) ? vx_errno() : 0;
}

static inline int vx_query_gid_ex(struct ibv_context *ctx, uint8_t port, uint32_t index,
				  struct ibv_gid_entry *e)
{
	return vx_ret(ibv_query_gid_ex(ctx, port, index, e, 0));
}

static inline int vx_alloc_pd(struct ibv_context *ctx, struct ibv_pd **ret)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	if (!pd)
		return vx_errno();
	*ret = pd;
	return 0;
}

static inline int vx_dealloc_pd(struct ibv_pd *pd)
{
	return vx_ret(ibv_dealloc_pd(pd));
}

static inline int vx_create_comp_channel(struct ibv_context *ctx, struct ibv_comp_channel **ret)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);

	if (!ch)
		return vx_errno();
	*ret = ch;
	return 0;
}

static inline int vx_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	return vx_ret(ibv_destroy_comp_channel(ch));
}

static inline int vx_create_cq(struct ibv_context *ctx, int depth, void *user,
			       struct ibv_comp_channel *ch, struct ibv_cq **ret)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, depth, user, ch, 0);

	if (!cq)
		return vx_errno();
	*ret = cq;
	return 0;
}

static inline int vx_destroy_cq(struct ibv_cq *cq)
{
	return vx_ret(ibv_destroy_cq(cq));
}

static inline int vx_req_notify_cq(struct ibv_cq *cq)
{
	return vx_ret(ibv_req_notify_cq(cq, 0));
}

/* Completions polled (>= 0) or a negative errno. */
static inline int vx_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int r = ibv_poll_cq(cq, n, wc);

	return r >= 0 ? r : -EIO; /* "a negative value": no errno is promised */
}

/* 0 with the event taken, -EAGAIN when none is pending, or a negative errno. */
static inline int vx_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **ret_cq)
{
	void *ctx;

	return ibv_get_cq_event(ch, ret_cq, &ctx) ? vx_errno() : 0;
}

static inline int vx_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	return ibv_get_async_event(ctx, ev) ? vx_errno() : 0;
}

/* ---- Memory regions ---- */

static inline int vx_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access,
			    struct ibv_mr **ret)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, access);

	if (!mr)
		return vx_errno();
	*ret = mr;
	return 0;
}

static inline int vx_dereg_mr(struct ibv_mr *mr)
{
	return vx_ret(ibv_dereg_mr(mr));
}

/* ---- Queue pairs ---- */

static inline int vx_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia, struct ibv_qp **ret)
{
	struct ibv_qp *qp = ibv_create_qp(pd, ia);

	if (!qp)
		return vx_errno();
	*ret = qp;
	return 0;
}

/*
 * vx_create_qp() with as much of @ia->cap.max_inline_data as the device
 * takes: a device refuses (EINVAL) a QP that asks for more than it supports
 * (rxe: 512 B), so on that refusal the inline size is halved and tried
 * again, down to none (below 32 B it is not worth a WR's room). Any other
 * failure is the result. On success ia->cap.max_inline_data is what may be
 * posted inline: at most what was asked, although a provider may report
 * more (rxe grants at least 16 B per send SGE).
 */
static inline int vx_create_qp_inline(struct ibv_pd *pd, struct ibv_qp_init_attr *ia,
				      struct ibv_qp **ret)
{
	const struct ibv_qp_cap asked = ia->cap; /* a provider may write cap and still fail */
	uint32_t want = asked.max_inline_data;
	int r;

	for (;;) {
		ia->cap = asked;
		ia->cap.max_inline_data = want;
		r = vx_create_qp(pd, ia, ret);
		if (r == 0) {
			if (ia->cap.max_inline_data > want)
				ia->cap.max_inline_data = want;
			return 0;
		}
		if (r != -EINVAL || !want)
			return r;
		want = want / 2 >= 32 ? want / 2 : 0;
	}
}

static inline int vx_destroy_qp(struct ibv_qp *qp)
{
	return vx_ret(ibv_destroy_qp(qp));
}

static inline int vx_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
#ifdef RP_VX_FAULTS
	if (vx_fault_modify > 0) {
		vx_fault_modify--;
		return -EIO;
	}
#endif
	return vx_ret(ibv_modify_qp(qp, a, mask));
}

static inline int vx_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
#ifdef RP_VX_FAULTS
	if (vx_fault_post_at >= 0)
		return vx_fault_post_send(qp, wr, bad);
#endif
	return vx_ret(ibv_post_send(qp, wr, bad));
}

static inline int vx_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return vx_ret(ibv_post_recv(qp, wr, bad));
}

/* ---- rdma_cm ---- */

static inline int vx_rdma_get_devices(struct ibv_context ***ret, int *ret_n)
{
	int n = 0;
	struct ibv_context **list = rdma_get_devices(&n);

	if (!list)
		return errno > 0 ? -errno : -ENODEV;
	*ret = list;
	*ret_n = n;
	return 0;
}

static inline int vx_rdma_create_event_channel(struct rdma_event_channel **ret)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch)
		return vx_errno();
	*ret = ch;
	return 0;
}

static inline int vx_rdma_create_id(struct rdma_event_channel *ch, void *ctx,
				    struct rdma_cm_id **ret)
{
	return rdma_create_id(ch, ret, ctx, RDMA_PS_TCP) ? vx_errno() : 0;
}

static inline int vx_rdma_destroy_id(struct rdma_cm_id *id)
{
	return rdma_destroy_id(id) ? vx_errno() : 0;
}

static inline int vx_rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *dst, int ms)
{
	return rdma_resolve_addr(id, NULL, dst, ms) ? vx_errno() : 0;
}

static inline int vx_rdma_resolve_route(struct rdma_cm_id *id, int ms)
{
	return rdma_resolve_route(id, ms) ? vx_errno() : 0;
}

static inline int vx_rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	return rdma_connect(id, p) ? vx_errno() : 0;
}

static inline int vx_rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	return rdma_accept(id, p) ? vx_errno() : 0;
}

static inline int vx_rdma_reject(struct rdma_cm_id *id, const void *pd, uint8_t len)
{
	return rdma_reject(id, pd, len) ? vx_errno() : 0;
}

static inline int vx_rdma_establish(struct rdma_cm_id *id)
{
	return rdma_establish(id) ? vx_errno() : 0;
}

static inline int vx_rdma_disconnect(struct rdma_cm_id *id)
{
	return rdma_disconnect(id) ? vx_errno() : 0;
}

static inline int vx_rdma_notify(struct rdma_cm_id *id, enum ibv_event_type ev)
{
	return rdma_notify(id, ev) ? vx_errno() : 0;
}

static inline int vx_rdma_bind_listen(struct rdma_cm_id *id, struct sockaddr *a, int backlog)
{
	if (rdma_bind_addr(id, a) || rdma_listen(id, backlog))
		return vx_errno();
	return 0;
}

static inline int vx_rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *a, int *ret_mask)
{
	return rdma_init_qp_attr(id, a, ret_mask) ? vx_errno() : 0;
}

/* 0 with the event, -EAGAIN when none is pending, or a negative errno. */
static inline int vx_rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ret)
{
	return rdma_get_cm_event(ch, ret) ? vx_errno() : 0;
}

static inline int vx_rdma_ack_cm_event(struct rdma_cm_event *ev)
{
	return rdma_ack_cm_event(ev) ? vx_errno() : 0;
}

#endif
