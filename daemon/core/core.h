/* SPDX-License-Identifier: MIT */
/*
 * The client core: sessions, regions, exports, endpoints and operations,
 * without the event loop and without sockets. A packet goes in
 * (session_dispatch), replies come out through the glue's send hook; a
 * submission ring is drained by xfer_run(); every operation ends in
 * op_end(). It never includes <uv.h>: the loop glue (clients.c) drives it,
 * and the unit tests drive it with no daemon at all.
 *
 * Files, from the bottom (no file calls one above it):
 *   core.c      the context, per-uid accounts, id tables, session lifetime
 *               and replies
 *   rings.c     a session's shared-memory rings and completion slots
 *   region.c    client memory: checks, mapping, registration
 *   access.c    who may open an export: the one decision, pure
 *   exports.c   the export name table and remote handles
 *   op.c        one operation's life, from submission to its one completion
 *   endpoint.c  message endpoints and their posted receives
 *   xfer.c      draining a submission ring into operations
 *   session.c   the control protocol
 *
 * Upward calls go through two small hook tables set by the layers above:
 * the glue's (send a reply, free a session) and the peer layer's (lookups,
 * operations on another daemon, withdrawals).
 */
#ifndef RP_DAEMON_CORE_H
#define RP_DAEMON_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "base/config.h"
#include "base/nametab.h"
#include "rp-proto.h"
#include "rp-ring.h"
#include "base/stats.h"

struct core;
struct session;
struct export;
struct region;
struct op;
struct dest;
struct vlocal;
struct vmr;
struct admin_session;
struct core_job;

/* ---- Hooks: what the layers above provide. ---- */

struct core_glue_ops {
	/* Send one reply packet on @s's socket, with @nfds fds. 0 or -errno. */
	int (*send)(struct session *s, const void *buf, size_t len, const int *fds, int nfds);
	/*
	 * @s has submissions to look at again (a stalled ring whose client has
	 * nothing to reap): have its ring polled soon, not from inside this
	 * call. NULL: nothing (tests that run rings by hand).
	 */
	void (*kick)(struct session *s);
	/* The glue released @s and no operation refers to it any more: free it. */
	void (*free)(struct session *s);
	/*
	 * Run @j->work(@j) off the loop thread, then core_job_done(@j) on it. NULL:
	 * both run at once, in the caller (tests).
	 */
	void (*offload)(struct core_job *j);
};

/*
 * Work that can take milliseconds (mapping, pre-faulting, registering an
 * MR): work() touches no core state, so it runs off the loop thread; done()
 * takes its result in on the loop and frees the job.
 *
 * core_job_run() queues it for the user it is done for (@acct: the owner of
 * the region or export; NULL: the daemon's own) and hands the glue at most
 * core->jobs_max at once, at most one fewer of one user's, taking the users
 * in turn (core.c). libuv's thread pool, which runs them, takes its work first
 * come, first served: without this a user who queued a hundred
 * registrations of large regions (each pinning and registering hundreds of
 * MiB for tens of milliseconds) made every other user's next registration,
 * export or unmapping wait for all of them. Each user's jobs still run in
 * the order they were queued.
 */
struct core_job {
	struct core *core;
	void (*work)(struct core_job *j);
	void (*done)(struct core_job *j);
	struct uid_acct *acct; /* core_job_run(): its queue (held) */
	struct core_job *next; /* in it */
};

void core_job_run(struct core_job *j, struct uid_acct *acct);
/* The glue: @j's work() has run (off the loop thread); now, on the loop, its done(). */
void core_job_done(struct core_job *j);
/*
 * Deregister @n MRs of @mrs (NULLs skipped) and unmap @len bytes at @addr
 * (NULL: none) off the loop thread, then @then(@arg) on the loop (NULL:
 * nothing; at once when there is nothing to drop), as a job of @acct's
 * (core_job_run()). For a large region each takes milliseconds (unpinning
 * every page, freeing them).
 */
void core_drop_then(struct core *c, struct uid_acct *acct, struct vmr *const *mrs, unsigned n,
		    void *addr, size_t len, void (*then)(void *arg), void *arg);

struct core_peer_ops {
	/* Is @peer a configured peer? 0 or -RP_EPEERUNKNOWN. */
	int (*known)(void *peers, const char *peer);
	/*
	 * REMOTE_OPEN of @name on @peer, request @h of @s: 0 when the reply will
	 * come through remote_opened(), <0 to reply now with that status.
	 */
	int (*remote_open)(void *peers, struct session *s, const struct rp_hdr *h, const char *peer,
			   const char *name);
	/*
	 * An operation on another daemon (a WRITE/READ on a remote handle, a SEND
	 * to a remote destination): 0 when taken (it ends with op_end() later),
	 * <0 for the status to end it with now.
	 */
	int (*submit)(void *peers, struct op *op);
	/* @e was withdrawn here: tell the peers that looked it up. */
	void (*export_gone)(void *peers, struct export *e);
};

/* ---- core.c ---- */

/* Per-uid usage, shared by every session of that uid. */
struct uid_acct {
	struct uid_acct *next;
	uid_t uid;
	unsigned refs; /* sessions, live regions, operations */
	unsigned conns;
	unsigned regions;
	unsigned endpoints; /* bound (bounded by max_regions, as exports are) */
	unsigned exports;   /* public and being added (bounded by max_regions) */
	unsigned inflight;
	uint64_t bytes;
	/* Its jobs (core_job_run()): waiting, in order; handed to the glue, not done yet. */
	struct core_job *jobs, **jobs_tail;
	unsigned jobs_running;
	struct uid_acct *jobs_next; /* in core->jobs_turn while it has one waiting it may start */
	bool jobs_turn;		    /* it is in core->jobs_turn */
};

/*
 * A small id -> pointer table; ids are index + 1 so 0 is never valid. Free
 * slots hold a tagged link (bit 0 set) to the next free slot, so an add
 * takes the last freed id in O(1) instead of scanning for a hole; walks
 * use idtab_at(), which reads a free slot as NULL.
 */
struct idtab {
	void **v;
	uint32_t n;    /* slots */
	uint32_t used; /* slots holding a pointer */
	uint32_t free; /* id of the first free slot, 0: none */
	/*
	 * Ids taken (idtab_take()) and held back from reuse, oldest first, each
	 * until the client's rings have moved past two indexes (idtab_hold()).
	 */
	struct idtab_held {
		uint32_t id, cq_pos, sq_pos;
	} * held;
	uint32_t held_head, held_n, held_cap;
};

int idtab_add(struct idtab *t, void *p, uint32_t max, uint32_t *ret_id);
void *idtab_get(const struct idtab *t, uint32_t id);
void *idtab_del(struct idtab *t, uint32_t id);
/* As idtab_del(), but the id is not handed out again until idtab_release(). */
void *idtab_take(struct idtab *t, uint32_t id);
void idtab_release(struct idtab *t, uint32_t id);
/*
 * Release @id (taken) once idtab_unhold() sees the completion ring's
 * consumer reach @cq_pos and the daemon's submission consumer reach @sq_pos
 * (with no memory to remember it: at once).
 */
void idtab_hold(struct idtab *t, uint32_t id, uint32_t cq_pos, uint32_t sq_pos);
/* Larger than any ring: how far ahead of its consumer a position can be. */
#define IDTAB_HELD_WINDOW 65536u
/*
 * Release the held ids the rings passed (@cq_cons, @sq_cons), oldest first;
 * with @all, or with no free id left below @max, the oldest regardless.
 */
void idtab_unhold(struct idtab *t, uint32_t cq_cons, uint32_t sq_cons, uint32_t max, bool all);
void idtab_free(struct idtab *t);

/* Slot @i (id i + 1) of @t: its pointer, or NULL if the slot is free. */
static inline void *idtab_at(const struct idtab *t, uint32_t i)
{
	void *p = t->v[i];

	return (uintptr_t)p & 1u ? NULL : p;
}

/* A u64 -> pointer map (export ids given to peers): O(1) lookups. */
struct u64map {
	struct u64map_ent **b;
	uint32_t nb, n;
};

int u64map_put(struct u64map *m, uint64_t key, void *p);
void *u64map_get(const struct u64map *m, uint64_t key);
void u64map_del(struct u64map *m, uint64_t key);
void u64map_free(struct u64map *m);

struct rings {
	void *base;
	size_t size;
	struct rp_ring_view v;
	/*
	 * Doorbells (rings.c): the daemon keeps one end of each (sq_bell, a
	 * datagram socket it reads; cq_bell, a pipe it writes), the client gets
	 * the other (sq_client, cq_client) at HELLO.
	 */
	int memfd, sq_bell, cq_bell, sq_client, cq_client;
	uint32_t sq_head;     /* daemon's private consumer index */
	uint32_t cq_tail;     /* daemon's private producer index */
	uint32_t cq_cons;     /* the client's consumer index as last read (xfer_reserve) */
	uint32_t cq_reserved; /* promised completions not yet posted */
	bool seq;	      /* protocol 3: entries carry their index (rp-ring.h) */
};

struct session {
	struct core *core;
	struct session *prev, *next; /* in core->sessions */
	struct ucred cred;
	gid_t *groups; /* supplementary groups at connect (SO_PEERGROUPS); owned */
	size_t n_groups;
	char comm[16];
	uint32_t id;
	uint16_t version;     /* 0 until HELLO succeeded */
	bool dead;	      /* hung up or misbehaved: stop touching its rings */
	unsigned exporting;   /* its EXPORTs whose MR is being registered */
	unsigned exports;     /* its public exports */
	bool detached;	      /* the glue is done with it; freed when ops_pending drops to 0 */
	unsigned ops_pending; /* operations, lookups and replies that still refer to it */
	struct uid_acct *acct;
	struct rings rings;
	struct idtab regions;	/* struct region * */
	uint64_t region_bytes;	/* the length of those */
	struct idtab remotes;	/* struct export * */
	struct idtab endpoints; /* struct endpoint * */
	struct idtab dests;	/* struct dest * */
	struct stats_session stats;
	struct admin_session *admin; /* admin.c's per-session state */
	struct session *dirty_next;  /* in core->dirty: completions written, not yet published */
	bool dirty;
	struct op *copying;  /* a local copy done a piece per pass (xfer.c); its ring waits */
	uint64_t turn_bytes; /* copied in this xfer_run() */
};

/* A handle to another daemon's export: what its LOOKUP answered. */
struct remote_key;
struct remote {
	struct remote *prev, *next; /* handles with the same @key (exports.c) */
	struct remote_key *key;	    /* peer, incarnation and id: in core->remote_keys */
	char peer[RP_NAME_MAX];
	uint64_t inc, id, len;
	bool revoked; /* the exporter withdrew it (PP_REVOKE, or its device said so) */
	uint32_t access;
	uint32_t xinfo_len;
	uint8_t xinfo[32]; /* the exporter's transport blob (PEER_XINFO_MAX) */
};

/* A SEND destination, resolved once at DEST_OPEN. */
struct dest {
	bool remote;		/* on another daemon (@peer) */
	char peer[RP_NAME_MAX]; /* "" when local */
	char endpoint[RP_NAME_MAX];
};

/* The core: everything the clients of this daemon own, and what it runs with. */
struct core {
	const struct config *cfg; /* the running config (a reload swaps it) */
	struct vlocal *vlocal;	  /* loopback QP (verbs transport), else NULL */
	uint16_t wire_transport;  /* enum rp_wire_transport, for HELLO */
	const struct core_glue_ops *glue;
	void *glue_ctx;			      /* the glue's own, for its hooks */
	const struct core_peer_ops *peer_ops; /* NULL until the peer layer exists */
	void *peers;
	struct session *sessions;
	unsigned n_sessions;
	uint32_t next_id;
	struct uid_acct *accts;
	/* Jobs (core_job_run()): the daemon's own queue, whose turn is next, how many run. */
	struct uid_acct own_jobs;
	struct uid_acct *jobs_turn, **jobs_turn_tail;
	unsigned jobs_max; /* handed to the glue at once: its threads for them (default 4) */
	unsigned jobs_running, jobs_waiting;
	uint64_t jobs_done; /* since start */
	bool jobs_starting;
	struct export *exports;
	struct export *exports_adding; /* their MRs being registered: names taken, not visible */
	struct nametab adding_names;   /* @exports_adding, by name */
	struct u64map by_peer_id;      /* exports looked up by peers, by the id they were given */
	uint64_t next_peer_id;
	struct nametab remote_keys; /* handles to other daemons' exports, by peer, inc and id */
	size_t n_remotes;
	unsigned pass_sessions;	       /* sessions with work in the engine's last pass */
	unsigned pass_entries;	       /* submissions taken in the current pass (engine) */
	uint64_t pass_bytes;	       /* bytes copied locally in it */
	struct nametab export_names;   /* @exports (not exports_adding), by name */
	unsigned n_exports;	       /* on @exports */
	struct nametab endpoint_names; /* bound endpoints, by name */
	size_t n_regions;	       /* live mappings, for status */
	uint64_t bytes;
	/*
	 * While the engine runs a pass, completions are written but published
	 * (producer index, doorbell) once per session at the end of the pass:
	 * core_publish(). Otherwise each is published at once. (A client of
	 * protocol 3 sees each entry as soon as it is written: rp-ring.h.)
	 */
	bool batching;
	struct session *dirty, *dirty_tail; /* in the order they were first written to */
	unsigned dirty_legacy;		    /* of them, sessions of protocol 1-2 */
};

int core_new(const struct config *cfg, const struct core_glue_ops *glue, struct core **ret);
/* After every session has been released and detached. */
struct core *core_free(struct core *c);

struct uid_acct *acct_get(struct core *c, uid_t uid);
void acct_put(struct core *c, struct uid_acct *a);

/* A new session for a client with credentials @cred (the glue embeds @s). */
void session_init(struct core *c, struct session *s, const struct ucred *cred);
/*
 * The client's supplementary groups, as the kernel gave them at connect
 * (copied; freed by session_release()). 0 or -ENOMEM.
 */
int session_set_groups(struct session *s, const gid_t *groups, size_t n);
/* Keep @s (its memory) while something that will answer or report on it runs. */
void session_hold(struct session *s);
void session_put(struct session *s);
/* The glue is done with @s (its socket is closed): free once nothing holds it. */
void session_detach(struct session *s);
/* Reply to request @req; nothing is sent to a dead session. 0 or -errno. */
int session_reply(struct session *s, const struct rp_hdr *req, int status, const void *body,
		  size_t len, const int *fds, int nfds);
/* The same with rp_hdr.flags set (replies whose type defines flags). */
int session_reply_flags(struct session *s, const struct rp_hdr *req, int status, uint16_t flags,
			const void *body, size_t len, const int *fds, int nfds);
/* 1..RP_NAME_MAX-1 characters from [A-Za-z0-9._-], NUL-padded to @size. */
bool name_valid(const char *name, size_t size);

/*
 * The client freed @id of table @t (taken with idtab_take()): hold it from
 * reuse until the daemon has taken every submission made before (one may
 * name the id: it fails -RP_EBADHANDLE instead of acting on a new object)
 * and, @named_in_cq (regions), the client reaped every completion written
 * before (one may name the id, and its library must not read it as the
 * new region's).
 */
void session_id_hold(struct session *s, struct idtab *t, uint32_t id, bool named_in_cq);
/* Before an add to @t: give back the held ids the rings passed (all, once @s has no rings). */
void session_ids_reuse(struct session *s, struct idtab *t, uint32_t max);

/* ---- rings.c ---- */

int rings_new(struct rings *r);
void rings_free(struct rings *r);
/* Reserve a completion slot at @s: 0, -ENOSPC, or -EPROTO on a corrupt ring. */
int xfer_reserve(struct session *s);
/* Give a reserved slot back unused. */
void xfer_release(struct session *s);
/* The same from outside a drain (a notification that will not come): wakes a stalled ring. */
void xfer_give_back(struct session *s);
/* Post one completion into a reserved slot (rings the doorbell if the client sleeps). */
void xfer_complete(struct session *s, const struct rp_cqe *cqe);
/*
 * A pass over the busy sessions begins: what it takes and copies is counted
 * from 0 (xfer_run() gives smaller turns once it took much).
 */
static inline void core_pass_begin(struct core *c)
{
	c->pass_entries = 0;
	c->pass_bytes = 0;
}
/*
 * Publish the completions written during a pass: one producer store and at
 * most one doorbell per session.
 */
void core_publish(struct core *c);
/* Take @s off the sessions to publish (it is going away). */
void core_undirty(struct core *c, struct session *s);

/* ---- region.c ---- */

/* A mapped client region. Operations hold references; unmapped at zero. */
struct region {
	unsigned refs;
	struct core *core;
	struct uid_acct *acct;
	struct session *s; /* NULL once freed by its client or its client died */
	void *addr;
	uint64_t len;
	uint32_t id;
	struct vmr *xport;	/* local-access MR (verbs), NULL on tcp */
	bool huge;		/* hugetlbfs: a page may vanish (copy with guarded_memmove()) */
	struct session *waiter; /* held: its REGION_FREE is answered once it is unmapped */
	struct rp_hdr waiter_h;
	struct export *exports; /* its public exports (export->rnext), for region frees */
	struct export *adding;	/* its exports being added (export->rnext) */
};

/*
 * A registration in three steps. region_job_new() checks @fd for a region
 * of @len (see the checks there) and the user's limits, charges it and
 * holds @s (request @h is answered when the job is done); it consumes @fd.
 * region_job_work() maps, pre-faults and registers it: it touches no core
 * state, so the glue runs it off the loop thread. region_job_done() (on the
 * loop) makes the region, or undoes everything and returns the error.
 */
struct region_job {
	struct core_job job;   /* first */
	struct session *s;     /* held until the reply */
	struct uid_acct *acct; /* referenced, charged */
	struct rp_hdr h;
	int fd;
	uint64_t len;
	bool huge; /* hugetlbfs: its pages may fault (VMR_MAY_FAULT) */
	struct vlocal *vlocal;
	void *addr; /* results of the work */
	struct vmr *mr;
	int status;
};

int region_job_new(struct session *s, const struct rp_hdr *h, int fd, uint64_t len,
		   struct region_job **ret);
void region_job_work(struct core_job *j);
int region_job_done(struct region_job *j, struct region **ret);
struct region *region_ref(struct region *r);
/* The last reference goes: its pages are unpinned and unmapped off the loop thread. */
void region_unref(struct region *r);
/* region_free(): request @h is answered when the region is unmapped. */
#define REGION_LATER 1
/*
 * REGION_FREE of @r (request @h of @s), its client's reference: 0 (answer
 * now: operations still hold it) or REGION_LATER. Its user's limits count
 * its bytes until it is unmapped.
 */
int region_free(struct region *r, struct session *s, const struct rp_hdr *h);
/* off + len inside the region, with overflow checks. */
bool region_range_ok(const struct region *r, uint64_t off, uint64_t len);

/* ---- access.c ---- */

/*
 * Who may open an export. Locally: clients of its owner's uid and of root,
 * always. Besides them only what the export's access list names (users,
 * groups, peers, or every user / every peer), and for a peer what its
 * [peer "NAME"] section grants (exports = all, export_users,
 * export_groups: see rdmaproxy.conf(5)). A peer daemon is one identity:
 * which of its users asks cannot be known here.
 */
struct export_acl {
	uint32_t flags; /* RP_EXPORT_ANY_USER, RP_EXPORT_ANY_PEER */
	uint32_t n_uids, n_gids, n_peers;
	uid_t uids[RP_EXPORT_ACL_MAX];
	gid_t gids[RP_EXPORT_ACL_MAX];
	char peers[RP_EXPORT_ACL_MAX][RP_NAME_MAX];
};

/* A local client's credentials, as the kernel gave them when it connected. */
struct creds {
	uid_t uid;
	gid_t gid;
	const gid_t *groups; /* supplementary */
	size_t n_groups;
};

void session_creds(const struct session *s, struct creds *ret);
/* @g is the primary or a supplementary group of @c. */
bool creds_in_group(const struct creds *c, gid_t g);
/* May a client with @who publish a name under reservation @rule (NULL: none)? */
bool name_rule_allows(const struct name_conf *rule, const struct creds *who);
/*
 * The access list of an EXPORT_ACL request, checked: 0, -EINVAL (counts,
 * flags, names, entries past the counts), -EPROTO (padding). Whether the
 * peers are configured is the caller's to check.
 */
int acl_from_wire(const struct rp_export_acl_req *req, struct export_acl *ret);
/* May a local client with @who open an export of @owner with @acl (NULL: none)? */
bool acl_allows_local(const struct export_acl *acl, const struct creds *owner,
		      const struct creds *who);
/*
 * May the clients of peer @pc (its section of the running config; NULL: not
 * configured) open an export of @owner with @acl (NULL: none)?
 */
bool acl_allows_peer(const struct export_acl *acl, const struct creds *owner,
		     const struct peer_conf *pc);
/* Does @acl (NULL: none) name peer @peer, or every peer? The operator's grants do not count. */
bool acl_names_peer(const struct export_acl *acl, const char *peer);

/* ---- exports.c ---- */

/*
 * A peer that looked an export up. On verbs it gets an MR of its own over
 * the export's memory, with the export's access: the rkey it holds is that
 * MR's, so taking its right away (a reload) can take the rkey away from it
 * alone, whatever it does with it afterwards.
 */
struct mr_job;
struct looker {
	char name[RP_NAME_MAX];
	struct vmr *mr;	    /* verbs: its own MR, from its first verbs LOOKUP (else NULL) */
	struct mr_job *job; /* that MR being registered (exports.c), else NULL */
};

/*
 * A published region, or (with ->remote) a handle to another daemon's export.
 * clang-format 14 reads "export" as the C++20 keyword and would mangle this.
 */
/* clang-format off */
struct export {
	struct export *next, **pprev; /* core->exports, or exports_adding */
	struct export *rnext, **rpprev; /* region->exports, or region->adding */
	struct name_node node;	       /* in core->export_names, or adding_names */
	struct core *core;
	unsigned refs; /* the name table + remote handles + operations */
	bool dead;     /* unexported: region must not be touched */
	struct region *region;
	struct session *s;
	uint32_t access;
	unsigned ops;		/* operations (and peers' pending withdrawals) pinning its MR */
	struct vmr *xport;	/* verbs: MR with exactly @access; kept while pinned */
	struct region *xregion; /* referenced while @xport exists */
	uint64_t peer_id;	/* id given to peers by their LOOKUP, 0: none */
	struct looker *lookers; /* peers that looked it up (they may hold an rkey) */
	unsigned n_lookers;
	struct session *waiter; /* held: its UNEXPORT is answered once the MR is gone */
	struct rp_hdr waiter_h;
	bool released;		/* its MRs are given up (release_mr()) */
	unsigned drops;		/* of its MRs, deregistrations under way (each holds a reference) */
	struct mr_job *job;	/* while its own MR is being registered (export_add()) */
	struct remote *remote;
	struct export_acl *acl; /* who else may open it; NULL: nobody (owner and root only) */
	char name[RP_NAME_MAX];
};
/* clang-format on */

enum export_removed {
	EXPORT_REMOVED,	 /* withdrawn: answer the UNEXPORT now */
	EXPORT_DRAINING, /* answered when its MR is gone (peers confirmed, ops ended) */
};

/* export_add() and export_peer_mr_prepare(): the answer comes later. */
#define EXPORT_LATER 1
/*
 * Publish @r of @s as @name; @acl (NULL: none) is copied. With a device, the
 * export's MR is registered off the loop thread: EXPORT_LATER, and request
 * @h is answered when it is (the name is taken meanwhile, but nobody can
 * open it). Else 0, or -EEXIST, -ENOMEM (answer it now).
 */
int export_add(struct session *s, const struct rp_hdr *h, struct region *r, const char *name,
	       uint32_t access, const struct export_acl *acl);
/* The owner's credentials (an export lives no longer than its owner's session). */
void export_owner(const struct export *e, struct creds *ret);
bool export_may_open_local(const struct export *e, const struct session *s);
bool export_may_open_peer(const struct export *e, const struct peer_conf *pc);
/* Peer @peer looked @e up while allowed to: it may use the id it was given. */
bool export_looked_up_by(const struct export *e, const char *peer);
/*
 * Forget that @peer looked @e up (its right to it was taken away). Returns
 * its MR (NULL: none), now the caller's to drop with export_mr_drop() once
 * the peer has confirmed the withdrawal or stopped answering.
 */
struct vmr *export_forget_looker(struct export *e, const char *peer);
/* Deregister an MR export_forget_looker() gave for @e (NULL: nothing). */
void export_mr_drop(struct export *e, struct vmr *mr);
/*
 * Looker @peer's own MR of @e (verbs LOOKUPs), before export_peer_mr(): 0
 * when it is there; EXPORT_LATER when it is being registered off the loop
 * thread (one registration per looker, whoever asks meanwhile waits for
 * it), and @cb(@arg, status) comes on the loop once it is (0: there now;
 * or -RP_ENOEXPORT when @e or its looker went meanwhile, or the device's
 * error), maybe before this returns; -EOPNOTSUPP (not a looker, no verbs
 * MR, withdrawn) or -ENOMEM, and no @cb. Meanwhile @e is pinned: an
 * UNEXPORT waits for the registration.
 */
int export_peer_mr_prepare(struct export *e, const char *peer, void (*cb)(void *arg, int status),
			   void *arg);
/*
 * Looker @peer's own MR of @e, which export_peer_mr_prepare() made: 0 and
 * *ret; -EOPNOTSUPP (not a looker, no verbs MR, withdrawn, not prepared).
 */
int export_peer_mr(struct export *e, const char *peer, struct vmr **ret);
/* Withdraw @name (request @h of @s): enum export_removed, or <0. */
int export_remove(struct core *c, struct session *s, const struct rp_hdr *h, uint32_t region,
		  const char *name);
/* Withdraw every export of @r (region freed or client gone). */
void export_remove_region(struct core *c, struct region *r);
struct export *export_find(struct core *c, const char *name);
struct export *export_ref(struct export *e);
void export_unref(struct export *e);
/* Hold the export's MR (an operation or a peer may still reach it) / let it go. */
void export_pin(struct export *e);
void export_unpin(struct export *e);
/*
 * Peer @peer looked up @e: remember it (it may hold an rkey), and give @e
 * its peer id if it has none. 0 or -ENOMEM.
 */
int export_publish(struct core *c, struct export *e, const char *peer);
/* The live export peers know as @id, or NULL. O(1). */
struct export *export_by_peer_id(struct core *c, uint64_t id);
/* A REMOTE_OPEN answered by peer @info->peer: the handle for @s, replied to @h. */
void remote_opened(struct session *s, const struct rp_hdr *h, int status,
		   const struct remote *info);
/* The exporter @peer (incarnation @inc) withdrew @id: every handle to it fails from now on. */
void remotes_revoke(struct core *c, const char *peer, uint64_t inc, uint64_t id);

/* ---- op.c ---- */

/* One client operation, from its submission entry to its one completion. */
struct op {
	struct op *next;       /* free list; an endpoint's queue (posted receives) */
	struct session *s;     /* initiator, held */
	struct uid_acct *acct; /* held; the op counts in ->inflight */
	struct region *region; /* local region, referenced (NULL only if refused early) */
	struct export *e;    /* WRITE/READ: target export or remote handle, referenced and pinned */
	struct dest *dest;   /* SEND: destination; valid until the op is submitted */
	struct endpoint *ep; /* POST_RECV: the endpoint it was posted on */
	struct session *t;   /* notify target holding a reserved slot, held; or NULL */
	struct region *t_region; /* the notified region, referenced (with @t) */
	bool on_stack;		 /* op_fail()'s: not from the pool */
	uint32_t recv_len;	 /* POST_RECV: bytes the message brought */
	uint64_t copied;	 /* a local copy done in pieces (session->copying): bytes so far */
	struct region *tregion;	 /* a local copy's target region, referenced (tcp) */
	struct op *rop;		 /* a local SEND's receive, taken, while its bytes move */
	struct rp_sqe q;	 /* the submission, copied out of the ring */
};

/* An operation's outcome beyond its status: what the caller must do next. */
enum op_state {
	OP_ENDED,   /* op_end() was called: forget the op */
	OP_PENDING, /* taken by a transport or queue: it ends later */
};

/*
 * Start @q of @s (its completion slot is reserved): the op holds the
 * session and counts in the user's in-flight ops. NULL on -ENOMEM (the
 * slot is then the caller's to fill).
 */
struct op *op_new(struct session *s, const struct rp_sqe *q);
/* End @q of @s at once with @status, without an op from the pool (no memory for one). */
void op_fail(struct session *s, const struct rp_sqe *q, int status);
/*
 * The one end of every operation: write its completion exactly once (into
 * the reserved slot), deliver or give back a notification slot, drop its
 * references, count it. @status 0 or a negative code.
 */
void op_end(struct op *op, int status);
/* enum rp_op of a submission opcode: the one mapping. */
uint16_t op_kind(uint16_t sqe_opcode);
/* The verbs loopback's report (vlocal_done_fn): @user is the op. */
void op_verbs_done(void *user, int status);
/* Free the spare ops kept for reuse (at exit). */
void op_cache_free(void);
/*
 * Reserve the notification of a write into @e (the exporter's session gets
 * a slot and is held, its region referenced). 0 or -RP_ENOTIFYSPACE.
 * notify_reserve() does it for @op->e into @op->t, which op_end() then
 * delivers or gives back.
 */
int notify_hold(struct export *e, struct session **ret_t, struct region **ret_region);
int notify_reserve(struct op *op);
/*
 * Deliver (@status 0) or give back the notification reserved at @t; drops
 * @t and @region. Not delivered if @t freed @region meanwhile: its id may
 * name another region of @t's by now.
 */
void notify_finish(struct session *t, struct region *region, uint64_t off, uint32_t len,
		   uint32_t imm, int status);

/* ---- endpoint.c ---- */

struct endpoint {
	struct name_node node; /* in the core's name table (core->endpoint_names) */
	struct session *s;
	uint32_t id;
	bool unbound;		/* kept only until its taken receives come back */
	bool restricted;	/* bound with a list: only its owner, root and @acl send */
	unsigned taken;		/* receives taken by messages still arriving */
	struct op *head, *tail; /* posted receives, in order */
	struct export_acl *acl; /* NULL: nobody more */
	char name[RP_NAME_MAX];
};

/* @restricted: bound with an access list (@acl, NULL: nobody more), copied here. */
int endpoint_bind(struct session *s, const char *name, bool restricted,
		  const struct export_acl *acl, uint32_t *ret_id);
/* Posted receives end with -ECANCELED (nothing is written for a dead session). */
int endpoint_unbind(struct session *s, uint32_t id);
/* May local client @from (NULL: a client of peer @peer) send to @ep? */
bool endpoint_admits(const struct endpoint *ep, const struct session *from, const char *peer);
/* Queue a posted receive on endpoint @q->target of @op->s: OP_PENDING or <0. */
int endpoint_post(struct op *op);
/* @s freed region @r: its receives still posted complete with -ECANCELED. */
void endpoints_cancel_region(struct session *s, const struct region *r);
/*
 * A message of @len bytes for endpoint @name from local client @from or,
 * with @from NULL, from a client of peer @peer: take its first posted
 * receive (-RP_ENOENDPOINT, -RP_EENDPOINT_DENIED, -RP_ENORECV,
 * -RP_ERECVSMALL otherwise). The receive is the caller's until
 * recv_finish().
 */
int endpoint_take(struct core *c, const char *name, uint64_t len, const struct session *from,
		  const char *peer, struct op **ret);
/* Where the message goes (the posted buffer). */
void *recv_addr(const struct op *rop);
/*
 * Was receive @rop (taken) cancelled since: its region freed, its client
 * gone? Then a message into it reaches nobody.
 */
bool recv_gone(const struct op *rop);
/*
 * The message taken with endpoint_take() arrived whole (@status 0: the
 * receive completes with @len) or did not (it goes back first in line, or
 * ends -ECANCELED if its endpoint is gone). Returns the sender's status:
 * @status, or -RP_ENORECV for a whole message into a receive that
 * recv_gone() (the receive completes -ECANCELED).
 */
int recv_finish(struct core *c, struct op *rop, uint64_t len, int status);

/* ---- xfer.c ---- */

enum xfer_result {
	XFER_EMPTY,   /* the ring ran empty (its doorbell is not armed: see xfer_arm()) */
	XFER_STALLED, /* no completion space: the client's next reap rings the doorbell */
	XFER_YIELD,   /* the batch budget is used up: more is waiting, run again */
};

/*
 * Drain and start the submissions waiting in @s's ring, up to a batch:
 * enum xfer_result, or -EPROTO when the client corrupted its ring.
 */
int xfer_run(struct session *s);
/* @s goes (session_release()): a local copy it left half done ends. */
void xfer_abandon(struct session *s);
/* A submission is waiting (a cheap shared-memory read). */
bool xfer_pending(struct session *s);
/* Arm the doorbell before sleeping; false if a submission raced in (run again). */
bool xfer_arm(struct session *s);

/* ---- session.c ---- */

/*
 * Handle one packet that passed ctl_validate() and is not an admin request
 * (@fd: the attached fd or -1; always consumed). 0: continue;
 * -ECONNABORTED: refused at hello; other <0: disconnect.
 */
int session_dispatch(struct session *s, const struct rp_hdr *h, const void *body, int fd);
/*
 * A well-formed REGION_REG whose fd the kernel could not hand over (the
 * daemon's fd table is full): answer it -EMFILE, keep the session. 0 or <0.
 */
int session_fd_lost(struct session *s, const struct rp_hdr *h);
/* Release everything the session holds (idempotent). */
void session_release(struct session *s);
/*
 * May @s publish @name (@what: "export", "endpoint")? 0, or -RP_EDENIED
 * (logged, counted) when a [names] section of the running config reserves
 * it for other users.
 */
int session_name_check(const struct session *s, const char *name, const char *what);
/* A registration job is done (core_job.done): answer it; frees @j. */
void session_region_done(struct core_job *j);

#endif
