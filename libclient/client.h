/* SPDX-License-Identifier: MIT */
/* Internal: the library's objects, shared by its source files. */
#ifndef RP_LIBCLIENT_CLIENT_H
#define RP_LIBCLIENT_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "rdmaproxy.h"
#include "rp-ring.h"

struct rp_region {
	struct rp_client *c;
	uint32_t id;
	void *ptr;
	size_t len;
};

struct rp_remote {
	struct rp_client *c;
	struct rp_remote *prev, *next;
	uint32_t id;
	uint32_t access;
	uint64_t len;
};

struct rp_endpoint {
	struct rp_client *c;
	struct rp_endpoint *prev, *next;
	uint32_t id;
};

struct rp_dest {
	struct rp_dest *next;
	uint32_t id;
	char peer[RP_NAME_MAX];
	char name[RP_NAME_MAX];
};

/*
 * One accepted operation without its completion yet. The daemon sees the
 * slot, not the application's cookie: the submission carries
 * gen << 32 | (index + 1), so each completion finds its operation exactly,
 * and when the daemon goes away the slots still in use are the operations
 * that need a completion from the library.
 */
struct op_slot {
	uint64_t cookie;   /* the application's */
	uint64_t offset;   /* POST_RECV: the buffer's offset in its region */
	uint32_t gen;	   /* bumped when the slot is freed: stale wire cookies do not match */
	uint32_t next;	   /* free list: index + 1 of the next free slot, 0: none */
	uint32_t sq_index; /* its submission ring index: did the daemon take it? */
	uint16_t op;	   /* enum rp_op; 0: free */
	uint16_t region;   /* POST_RECV: the region id */
};

struct rp_client {
	struct rp_conn conn;
	void *ring_base;
	size_t ring_size;
	struct rp_ring_view v;
	int sq_bell, cq_bell;
	int ep_fd;	  /* rp_fd(): epoll of cq_bell and the socket (its hang-up) */
	uint32_t sq_tail; /* private producer index */
	uint32_t sq_cons; /* the daemon's consumer index as last read (ring.c: client_submit) */
	uint32_t cq_head; /* private consumer index */
	bool seq;	  /* protocol 3: ring entries carry their index (rp-ring.h) */
	bool dead;
	bool fd_user;	     /* rp_fd() was asked for: empty polls must leave the doorbell armed */
	uint8_t wait_mode;   /* enum rp_wait_mode */
	uint32_t spin_ns;    /* rp_wait()'s current spin before sleeping (adaptive) */
	uint32_t relax_seen; /* rp_relax(): the engine's count of busy passes it last saw */
	uint64_t relax_still_ns;     /* rp_relax(): engine first seen still (0: not yet) */
	uint32_t relax_still_passes; /* rp_relax(): the engine's pass count then */
	/* rp_relax(): until when a spin on a flag may wait longer (RELAX_RESUME_MIN_NS; 0: not) */
	uint64_t resume_end_ns;
	bool poll_empty;      /* the last rp_poll() found nothing */
	uint32_t relax_polls; /* rp_relax(): calls in a row right after an empty rp_poll() */
	/* rp_relax(): when its current wait for a completion began (0: none); the usual wait */
	uint64_t wait_ns, wait_avg_ns;
	/*
	 * rp_relax(): what a sleep on the doorbell costs (an average of the
	 * longer of the wait to run again after the ring and the sleep's CPU
	 * time; 0: not known yet), the waits ended so far, and the count at
	 * the last sleep taken to learn it (RELAX_LEARN_WAITS).
	 */
	uint64_t wake_avg_ns;
	uint32_t waits, learned_at;
	/* rp_relax(): the engine's pass count as last seen in a wait; since when (0: not yet) */
	uint32_t gone_passes;
	uint64_t gone_ns;
	bool relaxed;		/* the last call was an rp_relax() in such a wait */
	uint64_t next_check_ns; /* when an empty poll or a submission next looks at the socket */
	struct op_slot *ops;
	uint32_t n_ops;		    /* slots allocated */
	uint32_t free_op;	    /* index + 1 of the first free slot, 0: none */
	uint32_t inflight;	    /* slots in use: ops submitted and not yet completed */
	uint32_t recv_inflight;	    /* of them, posted receives */
	uint32_t sweep;		    /* daemon gone: the next slot to report */
	struct rp_region **regions; /* by id - 1 */
	uint32_t n_regions;
	struct rp_remote *remotes;
	struct rp_endpoint *endpoints;
	struct rp_dest *dests;
};

/* ring.c */
/* Queue @q (its cookie is the application's): 0, -EAGAIN, -ENOMEM, -RP_EDAEMON, -EPROTO. */
int client_submit(struct rp_client *c, const struct rp_sqe *q);
/* The waiting policy from RDMAPROXY_WAIT (rp_connect()). */
void client_wait_init(struct rp_client *c);
/* conn_request() that remembers a daemon that hung up. */
int client_request(struct rp_client *c, uint16_t type, const void *body, size_t len, int fd,
		   void *reply, size_t replylen);
/* rp_fd()'s epoll set: 0 or -errno. */
int client_poll_set(struct rp_client *c);

/* ops.c */
/* Give @q a slot; *ret_wire is the cookie the daemon sees. 0 or -ENOMEM. */
int ops_track(struct rp_client *c, const struct rp_sqe *q, uint64_t *ret_wire);
/* A completion from the daemon: its operation's cookie, slot freed. 0 or -EPROTO. */
int ops_complete(struct rp_client *c, const struct rp_cqe *e, uint64_t *ret_cookie);
/* Daemon gone: a completion for each operation still in a slot, up to @max. */
/* Region @id was freed: receives posted in it name no region when reported. */
void ops_forget_region(struct rp_client *c, uint32_t id);
int ops_report_dead(struct rp_client *c, struct rp_completion *comps, int max);
void ops_release(struct rp_client *c);
/* Check a region and a range of it for an operation of @c. */
int client_check_range(struct rp_client *c, const struct rp_region *r, size_t off, size_t len);

#endif
