/* SPDX-License-Identifier: MIT */
/*
 * The verbs side of local transfers: memory registration of client regions
 * and RC queue pairs connected to themselves (lanes), so that a transfer
 * between two regions on this host is a real RDMA WRITE or READ done by the
 * device. Each flow (session) uses one lane while it has ops outstanding;
 * new flows go to the lane with the fewest, so several clients keep several
 * QPs busy (the device works on different QPs in parallel).
 *
 * Every submitted operation gets exactly one done callback, with 0 or a
 * negative errno: -EACCES (the device refused access), -ECANCELED (flushed,
 * it did not happen), -ETIMEDOUT (outcome unknown: also for WRs the device
 * did not give back at vlocal_free()), -EIO (the device would not take it,
 * its queue pair could not be recovered (tried at most every 10 ms), or
 * vlocal_free() came between its chunks: nothing more of it was done; an op
 * of several chunks may have done its first ones). The callback must not
 * call into this module or drain the device's CQ: it runs in the middle of
 * the bookkeeping of the send queue.
 * Operations that cannot be posted yet (send queue full, queue pair being
 * recovered, a post list capped while one session submits) wait in order
 * within their flow (the caller's key, one per session); waiting flows of a
 * lane take turns, and the bytes on its send queue stay bounded while
 * several flows share it, so one flow's backlog cannot hold up another's
 * first op.
 */
#ifndef RP_DAEMON_VERBS_LOCAL_H
#define RP_DAEMON_VERBS_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rdev;
struct vlocal;
struct vmr;

typedef void (*vlocal_done_fn)(void *user, int status);

enum vmr_access {
	VMR_LOCAL_WRITE = 1u << 0,
	VMR_REMOTE_READ = 1u << 1,
	VMR_REMOTE_WRITE = 1u << 2,
	/*
	 * Not an access right: the memory may fault when the daemon touches it
	 * (a hugetlbfs region can lose a page to a punched hole, and the next
	 * touch raises SIGBUS with the pool empty; see base/memguard.h). Its
	 * data is never posted inline, which the provider would copy at post
	 * time, unguarded; the device reads it through the MR's pinned pages.
	 */
	VMR_MAY_FAULT = 1u << 3,
};

/*
 * @lanes QPs of @depth send WRs each (and one receive WR: the completion
 * queue needs room for @lanes * (@depth + 1) of ours).
 * @gid_index < 0: pick a RoCEv2 IPv4 GID if there is one.
 * Writes of up to @max_inline payload bytes go inline (copied into the WR),
 * as far as the device takes: vlocal_max_inline() says what it granted.
 */
int vlocal_new(struct rdev *d, uint32_t depth, unsigned lanes, int gid_index, uint32_t max_inline,
	       vlocal_done_fn done, struct vlocal **ret, char *why, size_t whylen);
/* The inline size the device granted (0: none, or @v is NULL). */
uint32_t vlocal_max_inline(const struct vlocal *v);
/* Pending operations are completed with -ECANCELED first. */
struct vlocal *vlocal_free(struct vlocal *v);

/* Register [addr, addr+len) with exactly @access (enum vmr_access bits). */
int vmr_reg(struct vlocal *v, void *addr, uint64_t len, unsigned access, struct vmr **ret);
struct vmr *vmr_dereg(struct vmr *mr);
/* What a transport needs to use an MR in work requests (verbs_peer.c). */
uint64_t vmr_addr(const struct vmr *mr);
uint64_t vmr_len(const struct vmr *mr);
uint32_t vmr_lkey(const struct vmr *mr);
/* Registered with VMR_MAY_FAULT: never post its data inline. */
bool vmr_may_fault(const struct vmr *mr);
uint32_t vmr_rkey(const struct vmr *mr);

/*
 * Copy @len bytes from @src+@soff to @dst+@doff with an RDMA WRITE, in turn
 * with the other ops of @flow (any pointer naming the submitter).
 */
int vlocal_write(struct vlocal *v, struct vmr *src, uint64_t soff, struct vmr *dst, uint64_t doff,
		 uint64_t len, const void *flow, void *user);
/* Copy @len bytes from @src+@soff into @dst+@doff with an RDMA READ (as vlocal_write()). */
int vlocal_read(struct vlocal *v, struct vmr *dst, uint64_t doff, struct vmr *src, uint64_t soff,
		uint64_t len, const void *flow, void *user);

/*
 * Batching: while deferred, vlocal_write()/vlocal_read() only queue, and
 * vlocal_flush() posts what is queued as one post list per lane (while one
 * session submits, 8 WRs, or up to 32 small ones; the engine does both
 * around each pass). Not deferred, every call posts at once.
 */
void vlocal_defer(struct vlocal *v, bool deferred);
void vlocal_flush(struct vlocal *v);
/*
 * Several sessions submit (the engine's reading of the last milliseconds):
 * vlocal_flush() then hands a heavy list to its lane's thread even while the
 * other lanes are empty, and the caller goes on with the other sessions.
 */
void vlocal_shared(struct vlocal *v, bool shared);
/*
 * With several lanes, vlocal_flush() hands lists to the lanes' poster
 * threads; while one is being posted the caller must come back to
 * vlocal_flush() (a failed post is reported there): true until then. Also
 * true while a working lane has ops waiting and nothing on its send queue
 * (e.g. a capped list whose post failed): no completion would bring the
 * caller back.
 */
bool vlocal_busy(const struct vlocal *v);
/*
 * While a poster thread posts a list (on rxe it does the copies in that
 * call), block until one of them is done or @max_ns passed, giving this CPU
 * to whoever needs it; true at once if one is done and its result not yet
 * taken (vlocal_flush() takes it), false at once if none is posting.
 */
bool vlocal_wait_post(struct vlocal *v, uint64_t max_ns);

/* For status and tests. */
uint32_t vlocal_qp_num(const struct vlocal *v, unsigned lane);
unsigned vlocal_lanes(const struct vlocal *v);
unsigned vlocal_recoveries(const struct vlocal *v);

#endif
