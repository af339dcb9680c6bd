/* SPDX-License-Identifier: MIT */
/*
 * Client sessions without the event loop: the control protocol (consume a
 * packet, produce a reply), regions, exports, endpoints, the per-client rings
 * and per-uid accounting. clients.c is the libuv glue that drives this; no
 * file here includes <uv.h>, so it is testable without sockets.
 */
#ifndef RP_DAEMON_SESSION_H
#define RP_DAEMON_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "rp-proto.h"
#include "rp-ring.h"

struct manager;
struct session;
struct admin_session;
struct vmr;
struct remote;

/* Per-uid usage, shared by every session of that uid. */
struct uid_acct {
	struct uid_acct *next;
	uid_t uid;
	unsigned refs; /* sessions + live regions */
	unsigned conns;
	unsigned regions;
	unsigned inflight;
	uint64_t bytes;
};

/* A mapped client region. Operations hold references; unmapped at zero. */
struct region {
	unsigned refs;
	struct clients *owner;
	struct uid_acct *acct;
	struct session *s; /* NULL once freed by its client or its client died */
	void *addr;
	uint64_t len;
	uint32_t id;
	void *xport; /* transport state (verbs MR), NULL on tcp */
};

struct export {
	struct export *next;
	unsigned refs; /* the name table + remote handles */
	bool dead;     /* unexported: region must not be touched */
	struct region *region;
	struct session *s;
	uint32_t access;
	unsigned ops;		/* verbs ops in flight that target it */
	struct vmr *xport;	/* verbs: MR with exactly @access; kept while ops run */
	struct region *xregion; /* referenced while @xport exists */
	uint64_t peer_id;	/* id given to peers by their LOOKUP (peer_data.c), 0: none */
	char (*lookers)[RP_NAME_MAX]; /* peers that looked it up (they may hold its rkey) */
	unsigned n_lookers;
	struct session *waiter; /* held: its UNEXPORT is answered once the MR is gone */
	struct rp_hdr waiter_h;
	struct remote *remote;	/* a handle to another daemon's export (peer_data.c) */
	char name[RP_NAME_MAX];
};

struct recv_buf {
	struct recv_buf *next;
	struct region *region; /* referenced */
	uint64_t off, len, cookie;
};

struct endpoint {
	struct endpoint *next; /* in the daemon's name table */
	struct session *s;
	uint32_t id;
	struct recv_buf *head, *tail;
	char name[RP_NAME_MAX];
};

/* A small id -> pointer table; ids are index + 1 so 0 is never valid. */
struct idtab {
	void **v;
	uint32_t n;
};

struct rings {
	void *base;
	size_t size;
	struct rp_ring_view v;
	int memfd, sq_efd, cq_efd;
	uint32_t sq_head;     /* daemon's private consumer index */
	uint32_t cq_tail;     /* daemon's private producer index */
	uint32_t cq_reserved; /* promised completions not yet posted */
};

struct session {
	struct clients *owner;
	struct session *prev, *next;
	int fd;
	struct ucred cred;
	char comm[16];
	uint32_t id;
	uint16_t version; /* 0 until HELLO succeeded */
	bool dead;	  /* hung up or misbehaved: stop touching its rings */
	bool freed;	  /* the glue is done with it; free when ops_pending drops to 0 */
	unsigned ops_pending; /* async ops (verbs) that still refer to this session */
	struct uid_acct *acct;
	struct rings rings;
	struct idtab regions;	/* struct region * */
	struct idtab remotes;	/* struct export * */
	struct idtab endpoints; /* struct endpoint * */
	struct idtab dests;	/* char * (endpoint names) */
	void (*wake)(struct session *s); /* glue: SQ work may be pending again */
	struct admin_session *admin;	 /* admin.c: counters, metrics snapshot */
};

struct clients {
	struct manager *m;
	struct session *head;
	unsigned count;
	uint32_t next_id;
	struct uid_acct *accts;
	struct export *exports;
	struct endpoint *endpoints;
	size_t n_regions; /* live mappings, for status */
	uint64_t bytes;
	void *glue; /* clients.c: loop-side state (the submission spinner) */
};

/* session.c: the control protocol. */
int session_init(struct clients *c, struct session *s, int fd);
/*
 * Handle one validated packet (@fd: the attached fd or -1; always consumed).
 * 0: continue; -ECONNABORTED: refused at hello; other <0: disconnect.
 */
int session_dispatch(struct session *s, const struct rp_hdr *h, const void *body, int fd);
/* Packet checks: 0 or -EPROTO with @why. @nfds is the count of attached fds. */
int session_validate(const struct rp_hdr *h, size_t n, int nfds, const char **why);
/* Release everything the session holds (idempotent). */
void session_release(struct session *s);
int session_reply(struct session *s, const struct rp_hdr *req, int status, const void *body,
		  size_t len, const int *fds, int nfds);
struct uid_acct *acct_get(struct clients *c, uid_t uid);
void acct_put(struct clients *c, struct uid_acct *a);

/* idtab helpers. */
int idtab_add(struct idtab *t, void *p, uint32_t max, uint32_t *ret_id);
void *idtab_get(const struct idtab *t, uint32_t id);
void *idtab_del(struct idtab *t, uint32_t id);
void idtab_free(struct idtab *t);

/* region.c */
/* Validate @fd for a region of @len (see the checks there), then map it. */
int region_new(struct clients *c, struct session *s, int fd, uint64_t len, struct region **ret);
struct region *region_ref(struct region *r);
void region_unref(struct region *r);
/* off + len inside the region, with overflow checks. */
bool region_range_ok(const struct region *r, uint64_t off, uint64_t len);

/* exports.c: the node's export and endpoint name tables. */
bool name_valid(const char *name, size_t size);
int export_add(struct clients *c, struct region *r, const char *name, uint32_t access);
/*
 * Withdraw @name (UNEXPORT request @h of @s). 0: done, answer now. 1: the
 * answer is sent when the export's MR is gone (peers confirmed, local verbs
 * ops ended). <0: error.
 */
int export_remove(struct clients *c, struct session *s, const struct rp_hdr *h, uint32_t region,
		  const char *name);
/* Withdraw every export of @r (region freed or client gone). */
void export_remove_region(struct clients *c, struct region *r);
/* Remember that peer @name looked @e up (0 or -ENOMEM). */
int export_add_looker(struct export *e, const char *name);
struct export *export_find(struct clients *c, const char *name);
unsigned exports_of_uid(const struct clients *c, uid_t uid);
void export_unref(struct export *e);
int endpoint_bind(struct clients *c, struct session *s, const char *name, uint32_t *ret_id);
/* @cancel: complete posted receives with -ECANCELED (unbind) or drop them (death). */
int endpoint_unbind(struct clients *c, struct session *s, uint32_t id, bool cancel);
struct endpoint *endpoint_find(struct clients *c, const char *name);

/* xfer.c: the rings and operations. */
int rings_new(struct rings *r);
void rings_free(struct rings *r);
/*
 * Drain and execute submissions (@doorbell: woken by the client's eventfd,
 * which is drained). When the ring runs empty: with @spin, return 1 and
 * leave the doorbell unarmed (the caller keeps polling with xfer_pending());
 * otherwise arm it and return 0. -EPROTO: the client corrupted its ring.
 */
int xfer_run(struct session *s, bool doorbell, bool spin);
/* A submission is waiting (a cheap shared-memory read). */
bool xfer_pending(struct session *s);
/* Arm the doorbell before sleeping; false if a submission raced in (run again). */
bool xfer_arm(struct session *s);
/* Post one completion using a reserved slot; rings the doorbell if asked. */
void xfer_complete(struct session *s, const struct rp_cqe *cqe);
/* Reserve a completion slot at @s: 0 or -ENOSPC (or -EPROTO on a corrupt ring). */
int xfer_reserve(struct session *s);

/* Verbs loopback completion (vlocal_done_fn): @user is the op. */
void xfer_verbs_done(void *user, int status);
/* Free the spare op structs kept for reuse (at exit). */
void xfer_cache_free(void);
/* Drop an op's hold on a session; frees it once the glue released it too (clients.c). */
void session_put(struct session *s);
/* Release an unexported export's MR once no op uses it (exports.c). */
void export_release_mr(struct export *e);

/* Peer check shared by remote open and dest open: 0 (local), 1 (a configured peer), -RP_EPEERUNKNOWN. */
int session_peer_local(struct session *s, const char *peer);

#endif
