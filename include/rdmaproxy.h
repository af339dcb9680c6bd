/* SPDX-License-Identifier: MIT */
/*
 * librdmaproxy: the client library of rdmaproxyd.
 *
 * An application connects to the local daemon, keeps its data in regions of
 * shared memory that the daemon registers, publishes regions under names
 * (exports), opens names published by others (remote handles), and moves
 * data with one-sided writes and reads or two-sided sends and receives. The
 * daemon does the moving; the application submits operations through a
 * shared-memory ring and reaps one completion per accepted operation.
 *
 * Conventions:
 *  - Every function that can fail returns 0 (or a count) on success and a
 *    negative error code on failure: a negated errno value or a negated
 *    RP_E* code below. rp_strerror() explains both.
 *  - Out-parameters are written only on success.
 *  - The library never logs, never starts threads, never calls exit() and
 *    imposes no event loop: rp_fd() gives a file descriptor for the
 *    application's own poll/epoll/libuv loop, and rp_wait() is a blocking
 *    helper built on it.
 *  - A struct rp_client and everything created from it must be used by one
 *    thread at a time (use one client per thread, or lock around calls).
 *  - Operations need a completion: an application that never reaps
 *    completions eventually gets -EAGAIN from submissions.
 *  - If the daemon goes away (crash, restart), every accepted operation
 *    that had no completion yet still gets exactly one, from the library:
 *    -RP_EOUTCOME for a write, read or send the daemon had taken (it may or
 *    may not have happened), -RP_EDAEMON for one it never took and for
 *    posted receives (not done). Completions the daemon wrote before it
 *    went come first, as they are. Once they are all reaped, rp_poll() and
 *    rp_wait() return -RP_EDAEMON. Submissions fail with -RP_EDAEMON once
 *    the library has seen the hang-up; they look for it at most every
 *    10 ms, so one made within about 10 ms of the death may still be
 *    accepted, and is then reported like the others. Connect again to go on.
 */
#ifndef RDMAPROXY_H
#define RDMAPROXY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* uid_t, gid_t */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RP_BUILDING_LIBRARY)
#define RP_EXPORT __attribute__((visibility("default")))
#else
#define RP_EXPORT
#endif

/* Opaque handles. */
struct rp_client;   /* a connection to the daemon */
struct rp_region;   /* a registered shared-memory region of this client */
struct rp_remote;   /* an opened export (possibly another client's region) */
struct rp_endpoint; /* a bound message endpoint of this client */

/* Socket used when rp_connect() is given NULL and RDMAPROXY_SOCKET is unset. */
#define RP_DEFAULT_SOCKET_PATH "/run/rdmaproxy/rdmaproxy.sock"
#define RP_SOCKET_ENV "RDMAPROXY_SOCKET"
/* Longest node, export or endpoint name, without the terminating NUL. */
#define RP_NAME_LEN 63

/*
 * Error codes beyond errno, returned negated (e.g. -RP_EREMOTEACCESS). They
 * are above every errno value, so `err <= -RP_EBASE` tells them apart.
 */
enum rp_error {
	RP_EBASE = 4096,
	RP_EPEERUNKNOWN = RP_EBASE, /* peer is neither this node nor a configured peer */
	RP_EPEERDOWN,		    /* the peer is configured but not connected */
	RP_EREMOTEACCESS,	    /* the export does not grant this access */
	RP_EOUTCOME,		    /* the connection broke after posting: outcome unknown */
	RP_ENOEXPORT,		    /* no export of that name */
	RP_EUNEXPORTED,		    /* the remote handle's export was withdrawn */
	RP_ENOENDPOINT,		    /* no endpoint of that name is bound */
	RP_ENORECV,		    /* the endpoint has no receive posted (or it was cancelled) */
	RP_ERECVSMALL,		    /* the posted receive is smaller than the message */
	RP_ENOTIFYSPACE,	    /* the exporter's completion ring is full */
	RP_EDAEMON,		    /* the daemon closed the connection (or went away) */
	RP_EDENIED,		    /* this user is not allowed by the daemon's config */
	RP_ELIMIT_CONN,		    /* per-user limit on connections reached */
	RP_ELIMIT_BYTES,	    /* per-user limit on registered bytes reached */
	RP_ELIMIT_REGIONS,	    /* per-user limit on regions reached */
	RP_ELIMIT_INFLIGHT,	    /* per-user limit on operations in flight reached */
	RP_ENOHUGE,		    /* no huge pages available for RP_REGION_HUGE */
	RP_EREGION_TYPE,	    /* region fd is not a regular file (pipe, socket, device) */
	RP_EREGION_FS,		    /* region fd is not shared memory (e.g. a file on disk) */
	RP_EREGION_SEALS,	    /* region memfd lacks F_SEAL_SHRINK | F_SEAL_GROW */
	RP_EREGION_SIZE,	    /* region file size differs from the claimed length */
	RP_EREGION_MODE,	    /* region fd is O_PATH or not open read-write */
	RP_EBOUNDS,		    /* local offset + length outside the region */
	RP_EREMOTEBOUNDS,	    /* remote offset + length outside the export */
	RP_EBADHANDLE,		    /* unknown region, remote or endpoint id */
	RP_ESTALE,		    /* the peer restarted since this remote handle was opened */
	RP_ELIMIT_EXPORTS,	    /* per-user limit on exports (max_regions) reached */
	RP_EEXPORT_DENIED,	    /* the export does not let this user (or peer) open it */
	RP_EENDPOINT_DENIED,	    /* the endpoint does not let this user (or peer) send to it */
	RP_ELIMIT_ENDPOINTS,	    /* per-user limit on endpoints (max_regions) reached */
	RP_EMAX
};

/* Region allocation flags. */
#define RP_REGION_HUGE 0x1u /* back with huge pages (hugetlbfs) */

/* Export access rights (what others may do to the region). */
#define RP_ACCESS_REMOTE_READ 0x1u
#define RP_ACCESS_REMOTE_WRITE 0x2u

/*
 * Who may open an export. Always: clients of the exporting user and of root
 * on this node. Besides them, only whom the exporter names here (and the
 * peers the operator grants exports in rdmaproxy.conf). A NULL or zeroed
 * struct names nobody: that is what rp_region_export() does. The same list
 * says who may send to an endpoint (rp_endpoint_bind_acl(), where the
 * operator's grants do not count).
 */
#define RP_EXPORT_ANY_USER 0x1u /* every local user the daemon admits */
#define RP_EXPORT_ANY_PEER 0x2u /* the clients of every configured peer */
#define RP_EXPORT_ACL_MAX 32	/* entries in each list, at most */

struct rp_export_acl {
	uint32_t comp_mask; /* optional fields that follow: none defined yet, must be 0 */
	uint32_t flags;	    /* RP_EXPORT_ANY_* */
	const uid_t *uids;  /* local users who may open it */
	size_t n_uids;
	/*
	 * Local groups: a client may open it if its primary group or one of its
	 * supplementary groups, as the kernel had them when it connected
	 * (SO_PEERCRED, SO_PEERGROUPS), is one of these.
	 */
	const gid_t *gids;
	size_t n_gids;
	/* Configured peers (node names) whose clients may open it. */
	const char *const *peers;
	size_t n_peers;
};

/* Operation flags. */
#define RP_NOTIFY 0x1u /* rp_write: the exporter gets an RP_OP_NOTIFY completion */

/* Completion kinds (struct rp_completion.op). */
enum rp_op {
	RP_OP_WRITE = 1,  /* your rp_write() finished */
	RP_OP_READ = 2,	  /* your rp_read() finished */
	RP_OP_SEND = 3,	  /* your rp_send() was delivered into a posted receive */
	RP_OP_RECV = 4,	  /* a message arrived in a buffer posted by rp_post_recv() */
	RP_OP_NOTIFY = 5, /* someone wrote into your export with RP_NOTIFY */
};

struct rp_completion {
	uint64_t cookie;	  /* the cookie given at submission; 0 for RP_OP_NOTIFY */
	int status;		  /* 0, or a negative code as described above */
	uint32_t op;		  /* enum rp_op */
	uint32_t len;		  /* bytes moved; RP_OP_RECV: the message length */
	uint32_t imm;		  /* RP_OP_NOTIFY: the 32-bit immediate */
	uint64_t offset;	  /* RP_OP_NOTIFY: where in the region the write landed */
	struct rp_region *region; /* RP_OP_NOTIFY / RP_OP_RECV: the region written */
};

/*
 * Connect to the daemon at @path. NULL means $RDMAPROXY_SOCKET, else
 * /run/rdmaproxy/rdmaproxy.sock, else (non-root, when that does not exist)
 * $XDG_RUNTIME_DIR/rdmaproxy/rdmaproxy.sock. Negotiates the protocol and maps
 * the submission and completion rings.
 * Returns 0 and *ret; -ENOENT/-ECONNREFUSED (no daemon), -EACCES (the
 * socket's permissions), -ENAMETOOLONG (the path), -EPROTONOSUPPORT
 * (protocol versions do not overlap), -RP_EDENIED (user not allowed),
 * -RP_ELIMIT_CONN, -EPROTO (malformed reply), -ENOMEM.
 */
RP_EXPORT int rp_connect(const char *path, struct rp_client **ret);

/*
 * Close the connection. The daemon releases everything the client held
 * (regions, exports, endpoints, remote handles); regions stay mapped in this
 * process until their handles are freed here, so every handle derived from
 * @c is freed by this call and must not be used afterwards. NULL is a no-op.
 */
RP_EXPORT void rp_disconnect(struct rp_client *c);

/* The daemon's node name (from the hello), valid until rp_disconnect(). */
RP_EXPORT const char *rp_node_name(const struct rp_client *c);

/*
 * Allocate a region of @len bytes, rounded up to the page size (huge page
 * size with RP_REGION_HUGE): a sealed memfd, pre-faulted, mapped here and
 * registered with the daemon.
 * Returns 0 and *ret; -EINVAL (len 0 or unknown flags), -RP_ENOHUGE,
 * -ENOMEM, -RP_ELIMIT_BYTES, -RP_ELIMIT_REGIONS, -RP_EDAEMON; -EMFILE when
 * the daemon had no file descriptor left to receive the region's (the
 * connection stays usable: try again later).
 */
RP_EXPORT int rp_region_alloc(struct rp_client *c, size_t len, unsigned flags,
			      struct rp_region **ret);

/*
 * Release a region. The daemon keeps it registered until operations using
 * it finish; its exports are withdrawn. Local mapping is removed now.
 * Receives posted in it complete with -ECANCELED and no region (a message
 * is not put into them; one a message was already arriving into completes
 * so when the message ends, and its SEND with -RP_ENORECV), and a write into it that
 * ends after the free brings no RP_OP_NOTIFY. The daemon gives the id to
 * a new region only once completions written before the free are reaped
 * (a client with all 65535 ids in use or so held gets the oldest back),
 * nor before the daemon has taken the operations submitted before the free
 * (those that use the region then complete with -RP_EBADHANDLE).
 * Otherwise it returns once the daemon has deregistered and unmapped it
 * (its bytes count against the user's limits until then).
 * Returns 0, -EINVAL, or -RP_EDAEMON (the handle is freed regardless).
 */
RP_EXPORT int rp_region_free(struct rp_region *r);
RP_EXPORT void *rp_region_ptr(const struct rp_region *r);
RP_EXPORT size_t rp_region_len(const struct rp_region *r);

/*
 * Publish @r under @name (1..RP_NAME_LEN characters from [A-Za-z0-9._-]) on
 * this node with @access (RP_ACCESS_REMOTE_READ and/or _WRITE). Only clients
 * of this user and of root on this node may open it: see
 * rp_region_export_acl() to let others in. With an RDMA device it returns
 * once the daemon has registered the region for remote access.
 * Returns 0; -EINVAL, -EEXIST (name taken), -RP_EDENIED (the daemon's
 * config reserves the name for other users: [names] in rdmaproxy.conf(5)),
 * -RP_ELIMIT_EXPORTS, -RP_EDAEMON.
 */
RP_EXPORT int rp_region_export(struct rp_region *r, const char *name, unsigned access);
/*
 * rp_region_export() that also lets the users, groups and peers of @acl
 * (NULL: nobody more) open the export. Peers must be configured on this
 * node. The list is fixed for the export's life: unexport and export again
 * to change it.
 * Returns 0; -EINVAL (as rp_region_export(), unknown flags, a list longer
 * than RP_EXPORT_ACL_MAX, NULL entries, an invalid peer name),
 * -EOPNOTSUPP (comp_mask bits this library does not know, or a daemon too
 * old to keep access lists: then nothing was exported), -RP_EPEERUNKNOWN (a
 * peer is not configured), -EEXIST, -RP_EDENIED, -RP_ELIMIT_EXPORTS, -RP_EDAEMON.
 */
RP_EXPORT int rp_region_export_acl(struct rp_region *r, const char *name, unsigned access,
				   const struct rp_export_acl *acl);
/*
 * Withdraw export @name of @r. Remote handles to it fail later operations
 * with -RP_EUNEXPORTED. Returns once nothing can reach the region through
 * the export any more: operations already under way finish first (a large
 * copy the daemon's CPU is doing between two local clients stops at its
 * next piece with -RP_EUNEXPORTED), and connected peers confirm they will
 * send nothing more (at most ~5 s for a peer that does not answer; a peer
 * still moving bytes of it ~10 s later loses its link, which ends them).
 * Returns 0; -ENOENT (not an export of @r), -EINVAL, -RP_EDAEMON.
 */
RP_EXPORT int rp_region_unexport(struct rp_region *r, const char *name);

/*
 * Open export @name on @peer: NULL, "" or this node's name mean local.
 * Returns 0 and *ret; -RP_ENOEXPORT, -RP_EEXPORT_DENIED (the export does not
 * allow this user, or on a peer, this node), -RP_EPEERUNKNOWN,
 * -RP_EPEERDOWN, -EINVAL, -ENOMEM, -RP_EDAEMON.
 */
RP_EXPORT int rp_remote_open(struct rp_client *c, const char *peer, const char *name,
			     struct rp_remote **ret);
RP_EXPORT size_t rp_remote_len(const struct rp_remote *rm);
/* The access the export grants (RP_ACCESS_*). */
RP_EXPORT unsigned rp_remote_access(const struct rp_remote *rm);
/*
 * Close a remote handle. Operations on it submitted before, that the daemon
 * had not taken from the submission ring yet, complete with -RP_EBADHANDLE
 * (its id is not given to another handle before they are taken).
 * Returns 0, -EINVAL or -RP_EDAEMON (freed regardless).
 */
RP_EXPORT int rp_remote_close(struct rp_remote *rm);

/*
 * Submit a write of @len bytes from @r at @off into @dst at @roff. With
 * RP_NOTIFY, the exporter receives an RP_OP_NOTIFY completion carrying @imm
 * (rp_write() sends imm 0). Completion op RP_OP_WRITE with @cookie.
 * Returns 0 when submitted; -EINVAL (bad argument or flag, region of another
 * client), -RP_EBOUNDS (checked here too), -EAGAIN (submission ring full:
 * reap completions and retry), -RP_EDAEMON. Failures after submission come
 * in the completion: -RP_EREMOTEBOUNDS, -RP_EREMOTEACCESS, -RP_EUNEXPORTED,
 * -RP_EEXPORT_DENIED (a peer's right to the export was taken away),
 * -RP_ENOTIFYSPACE, -RP_ELIMIT_INFLIGHT, -RP_EOUTCOME.
 */
RP_EXPORT int rp_write(struct rp_client *c, struct rp_region *r, size_t off, struct rp_remote *dst,
		       size_t roff, size_t len, uint64_t cookie, unsigned flags);
RP_EXPORT int rp_write_imm(struct rp_client *c, struct rp_region *r, size_t off,
			   struct rp_remote *dst, size_t roff, size_t len, uint64_t cookie,
			   unsigned flags, uint32_t imm);
/* Read @len bytes of @src at @roff into @r at @off. As rp_write(); no flags yet (0). */
RP_EXPORT int rp_read(struct rp_client *c, struct rp_region *r, size_t off, struct rp_remote *src,
		      size_t roff, size_t len, uint64_t cookie, unsigned flags);

/*
 * Bind a message endpoint @name on this node. Every client of this daemon,
 * of any user, and the clients of every configured peer may send to it: see
 * rp_endpoint_bind_acl() to keep the others out. A name belongs to whoever
 * binds it first (as with exports), so a sender cannot tell who receives,
 * unless the operator reserves it ([names] in rdmaproxy.conf(5)).
 * Returns 0 and *ret; -EEXIST, -RP_EDENIED (reserved for other users),
 * -EINVAL, -ENOMEM, -RP_ELIMIT_ENDPOINTS,
 * -RP_EDAEMON.
 */
RP_EXPORT int rp_endpoint_bind(struct rp_client *c, const char *name, struct rp_endpoint **ret);
/*
 * rp_endpoint_bind() for an endpoint that only clients of this user and of
 * root on this node, and the users, groups and peers @acl names (NULL or
 * zeroed: nobody more), may send to: the list means for sending what it
 * means for opening an export (struct rp_export_acl). The operator's grants
 * to peers (exports = all, export_users in rdmaproxy.conf) are about
 * exports and do not apply. A send it refuses completes with
 * -RP_EENDPOINT_DENIED and takes no posted receive.
 * Returns 0 and *ret; -EINVAL (as rp_endpoint_bind(), or an invalid list as
 * for rp_region_export_acl()), -EOPNOTSUPP (comp_mask bits this library
 * does not know, or a daemon too old to keep the list: then nothing was
 * bound), -RP_EPEERUNKNOWN (a peer is not configured), -EEXIST,
 * -RP_EDENIED, -RP_ELIMIT_ENDPOINTS, -ENOMEM, -RP_EDAEMON.
 */
RP_EXPORT int rp_endpoint_bind_acl(struct rp_client *c, const char *name,
				   const struct rp_export_acl *acl, struct rp_endpoint **ret);
/*
 * Unbind; posted receives complete with -ECANCELED, except one a message
 * is already arriving into, which completes when it has arrived; receives
 * still in the submission ring complete with -RP_EBADHANDLE. Returns 0,
 * -EINVAL or -RP_EDAEMON.
 */
RP_EXPORT int rp_endpoint_unbind(struct rp_endpoint *ep);
/*
 * Post a receive buffer (@r at @off, @len bytes). It completes (RP_OP_RECV,
 * @cookie, len = message length) when a message arrives. Messages take an
 * endpoint's receives in the order they were posted; a long message may
 * complete after a shorter one that took a later receive. A posted receive
 * counts as an operation in flight. Returns 0; -EINVAL, -RP_EBOUNDS,
 * -EAGAIN, -RP_EDAEMON.
 */
RP_EXPORT int rp_post_recv(struct rp_endpoint *ep, struct rp_region *r, size_t off, size_t len,
			   uint64_t cookie);
/*
 * Send @len bytes of @r at @off to endpoint @endpoint on @peer (NULL/""/own
 * node: local). Completion RP_OP_SEND; in it -RP_ENOENDPOINT, -RP_ENORECV
 * (nothing posted: not retried; or the receive it was arriving into was
 * cancelled, its region freed or its client gone: nobody got it),
 * -RP_ERECVSMALL, -RP_EENDPOINT_DENIED, -RP_EPEERDOWN. Returns as
 * rp_write(), plus -RP_EPEERUNKNOWN, -ENOMEM, and -ENOSPC once this
 * connection has sent to 65536 different endpoint names (they are kept for
 * its life: reconnect to start again).
 */
RP_EXPORT int rp_send(struct rp_client *c, const char *peer, const char *endpoint,
		      struct rp_region *r, size_t off, size_t len, uint64_t cookie);

/*
 * Reap up to @max completions without blocking. Returns how many were
 * stored (0: none), -EINVAL, or -EPROTO (a malformed completion from the
 * daemon: a bug). Once rp_fd() has been called, an empty
 * rp_poll() also asks the daemon to signal rp_fd() when more arrive;
 * without it, nothing is armed (a busy poller costs the daemon no system
 * call per completion). After the daemon went away it returns the
 * completions of every operation still in flight (see above), then
 * -RP_EDAEMON.
 */
RP_EXPORT int rp_poll(struct rp_client *c, struct rp_completion *comps, int max);
/*
 * For an application that spins on rp_poll() in a loop of its own: call it
 * after a poll that found nothing. It executes the CPU's pause instruction
 * and, while the daemon says the host has more runnable tasks than CPUs and
 * its engine has not moved for a microsecond (it is not running,
 * and may need this CPU), yields the CPU (sched_yield). While the engine
 * runs on another CPU it does not: spinning then pays, and a yield would
 * only hand this CPU to another spinner. Called after an empty rp_poll()
 * with ops in flight, by a client whose waits for a completion (polls with
 * rp_relax() between, until one comes) have lately been lasting 1 ms or
 * more, or (not in the busy mode) in a wait for ops other than receives
 * during which the engine has published no pass to this client's ring for
 * 1 ms, it sleeps on the completion doorbell instead, until a completion
 * arrives or for the usual wait, at most 10 ms: from the fourth call of a
 * wait on while the CPUs are crowded, from the 32nd while they are not
 * (and then only waits that reach the 32nd call are timed, from there).
 * Returns 1 if it yielded or slept, 0 if not, -EINVAL.
 */
RP_EXPORT int rp_relax(struct rp_client *c);
/*
 * Like rp_poll(), but wait up to @timeout_ms (-1: forever) for at least one.
 * Returns the count, 0 on timeout, -EINTR, -EINVAL (a timeout below -1, or
 * as rp_poll()), -EPROTO (as rp_poll()), or -RP_EDAEMON once the daemon is
 * gone and every operation's completion has been returned. How it waits
 * is the client's wait mode (rp_set_wait_mode()).
 */
RP_EXPORT int rp_wait(struct rp_client *c, struct rp_completion *comps, int max, int timeout_ms);
/*
 * A file descriptor that becomes readable when completions may be ready,
 * and when the daemon goes away (it then stays readable: call rp_poll()
 * until it returns -RP_EDAEMON, then stop waiting on it). Wait for it only
 * after rp_poll() returned 0; then call rp_poll() again. Do not read it.
 */
RP_EXPORT int rp_fd(const struct rp_client *c);

/* How rp_wait() waits. The default comes from RDMAPROXY_WAIT (adaptive, busy, sleep). */
enum rp_wait_mode {
	/*
	 * For a shared host (the default): spin a short, adaptive while (with
	 * `pause`; yielding the CPU too while more tasks are runnable than there
	 * are CPUs and the daemon's engine is not running), then sleep on the
	 * doorbell.
	 */
	RP_WAIT_ADAPTIVE = 0,
	/* For a thread pinned to a core of its own: poll until the timeout, no yield, no sleep. */
	RP_WAIT_BUSY = 1,
	/* Sleep on the doorbell at once: least CPU, most latency. */
	RP_WAIT_SLEEP = 2,
};
RP_EXPORT int rp_set_wait_mode(struct rp_client *c, int mode);

/* A static, human-readable explanation of any code these functions return. */
RP_EXPORT const char *rp_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif
