/* SPDX-License-Identifier: MIT */
/*
 * A bench for the client core (daemon/core/core.h) with no loop, no socket and
 * no daemon: the glue hooks record the replies a session would have been
 * sent and count the sessions they free, and a fake peer layer keeps the
 * lookups and operations it is given until the test decides how they end.
 * The core itself is the real one. Shared by the unit tests and the fuzz
 * targets of the core; it never prints, so every test program keeps its own
 * TAP count.
 */
#ifndef RP_TESTS_CORE_HARNESS_H
#define RP_TESTS_CORE_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../daemon/core/core.h"
#include "../../daemon/base/ctl_wire.h"

#define TH_NODE "nodeA" /* this node */
#define TH_PEER "nodeB" /* the one peer the fake peer layer knows */
#define TH_MAX_OPS 256
#define TH_MAX_OPENS 64
#define TH_MAX_GONE 64
#define TH_MAX_MAPS 32
#define TH_MAX_JOBS 16

struct th;

/* A client's side of its rings: what librdmaproxy keeps. */
struct th_ring {
	void *base;
	size_t size;
	struct rp_ring_view v;
	uint32_t sq_tail; /* client's producer index */
	uint32_t cq_head; /* client's consumer index */
};

/* A session as the glue would embed it, plus what its client saw. */
struct th_session {
	struct session s; /* first: the hooks get &s */
	struct th *th;
	int send_err;	    /* the send hook fails with this (0: it succeeds) */
	unsigned n_replies; /* replies delivered */
	unsigned kicks;	    /* the glue's kick hook for it (a stalled ring to look at again) */
	_Alignas(8) char reply[RP_PROTO_MSG_MAX]; /* the last one */
	size_t reply_len;
	int fds[RP_HELLO_FDS]; /* fds of the last reply that carried some, as received */
	int nfds;
	uint32_t seq;
	struct th_ring ring; /* mapped by th_hello() from the reply's memfd */
	struct {
		void *addr;
		size_t len;
	} maps[TH_MAX_MAPS]; /* the client's mappings of its regions */
	unsigned n_maps;
};

/* An operation the fake peer layer holds, with what it copied at submission. */
struct th_op {
	struct op *op;
	bool send;
	char endpoint[RP_NAME_MAX]; /* SEND: the destination's endpoint */
};

/* A REMOTE_OPEN the fake peer layer answers later. */
struct th_open {
	struct session *s; /* held */
	struct rp_hdr h;
	char peer[RP_NAME_MAX];
	char name[RP_NAME_MAX];
};

struct th {
	struct config cfg;
	struct core *core;
	unsigned n_freed;    /* sessions the glue's free hook got */
	unsigned dead_sends; /* replies offered for a dead session: must stay 0 */
	bool lean; /* fuzzing: clients keep no fds and see their rings in the daemon's mapping */
	/* Jobs (registrations, unmappings) the glue runs later (th_defer_jobs()), in order. */
	bool defer_jobs;
	struct core_job *jobs[TH_MAX_JOBS];
	unsigned n_jobs;
	/* The fake peer layer. */
	int open_status;   /* remote_open: 0 answers later (th_open_answer), <0 refuses now */
	int submit_status; /* submit: 0 keeps the op (th_op_end), <0 refuses now */
	bool pin_gone;	   /* export_gone: pin and hold the export, as a pending revocation */
	unsigned n_known_calls, n_submits, n_gone_calls;
	struct th_open opens[TH_MAX_OPENS];
	unsigned n_opens;
	struct th_op ops[TH_MAX_OPS];
	unsigned n_ops;
	struct export *gone[TH_MAX_GONE];
	unsigned n_gone;
};

/* A core with the fake hooks and small limits (see th_init for the values). */
int th_init(struct th *t);
/* After every session was closed: ends what the fake peer layer holds, frees the core. */
void th_fini(struct th *t);

/*
 * Jobs (core_job: registrations, unmappings): with @defer, the glue's
 * offload hook keeps each until th_jobs_run() (as the thread pool would run
 * it later); without, the kept ones run now, the hook is NULL and the core
 * runs the next ones at once.
 */
void th_defer_jobs(struct th *t, bool defer);
/* Run the first @n kept jobs (work, then done on the "loop"): how many ran. */
unsigned th_jobs_run(struct th *t, unsigned n);

/* A connection of a client with these credentials (no HELLO yet). */
struct th_session *th_session_new(struct th *t, uid_t uid, gid_t gid);
/* The same with supplementary groups, as SO_PEERGROUPS would give them. */
struct th_session *th_session_new_groups(struct th *t, uid_t uid, gid_t gid, const gid_t *groups,
					 size_t n);
/* The glue's close: release everything, then detach (freed now or after its last op). */
void th_session_close(struct th_session *ts);

/*
 * One packet as the glue handles it: ctl_validate() (a bad one closes @fd
 * and returns -EPROTO), admin requests skipped (0), session_dispatch().
 */
int th_packet(struct th_session *ts, const void *pkt, size_t n, int fd);
/* A request of @type with @body, a fresh seq and @fd (-1: none). */
int th_request(struct th_session *ts, uint16_t type, const void *body, size_t len, int fd);
/* The last reply's header and body. */
const struct rp_hdr *th_reply(const struct th_session *ts);
const void *th_reply_body(const struct th_session *ts);

/* HELLO with versions @min..@max; on success the client maps its rings. Returns the status. */
int th_hello_v(struct th_session *ts, uint16_t min, uint16_t max);
int th_hello(struct th_session *ts);

/*
 * A sealed memfd of @len bytes (@seals: F_ADD_SEALS mask, 0 for none), or
 * -errno. If @ret_map, the client's shared mapping of it (kept in @ts).
 */
int th_memfd(struct th_session *ts, size_t len, unsigned seals, void **ret_map);
/* Register a sealed memfd of @len: the reply's status; id and client mapping on success. */
int th_region(struct th_session *ts, size_t len, uint32_t *ret_id, void **ret_map);
int th_region_free(struct th_session *ts, uint32_t id);
int th_export(struct th_session *ts, uint32_t region, uint32_t access, const char *name);
/* EXPORT_ACL with the lists and flags of @acl (its x part is filled from the arguments). */
int th_export_acl(struct th_session *ts, uint32_t region, uint32_t access, const char *name,
		  const struct rp_export_acl_req *acl);
/* An export that user @uid may open too (exports are private to their owner by default). */
int th_export_for(struct th_session *ts, uint32_t region, uint32_t access, const char *name,
		  uid_t uid);
int th_unexport(struct th_session *ts, uint32_t region, const char *name);
/* REMOTE_OPEN: the status (1 when no reply came yet: the peer layer answers later). */
int th_remote_open(struct th_session *ts, const char *peer, const char *name, uint32_t *ret_id);
int th_remote_close(struct th_session *ts, uint32_t id);
int th_ep_bind(struct th_session *ts, const char *name, uint32_t *ret_id);
/* EP_BIND_ACL with @acl's lists (its x.region and x.access sent as they are). */
int th_ep_bind_acl(struct th_session *ts, const char *name, const struct rp_export_acl_req *acl,
		   uint32_t *ret_id);
int th_ep_unbind(struct th_session *ts, uint32_t id);
int th_dest_open(struct th_session *ts, const char *peer, const char *name, uint32_t *ret_id);

/* Put @q into the submission ring: 0, or -EAGAIN when it is full. */
int th_submit(struct th_session *ts, const struct rp_sqe *q);
/* xfer_run() in a pass of the engine: completions are published at its end. */
int th_run(struct th_session *ts);
/* Take up to @max completions: how many, or -EPROTO. */
int th_reap(struct th_session *ts, struct rp_cqe *out, int max);

/* The fake peer layer: answer REMOTE_OPEN @i, end op @i (the others keep their order). */
void th_open_answer(struct th *t, unsigned i, int status, const struct remote *info);
void th_op_end(struct th *t, unsigned i, int status);
void th_ops_end_all(struct th *t, int status);
/* Let go of the exports export_gone() held. */
void th_gone_release(struct th *t);

#endif
