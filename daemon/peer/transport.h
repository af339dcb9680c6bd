/* SPDX-License-Identifier: MIT */
/*
 * The interface between the peer layer (peer*.c: peer state machine,
 * handshake, control protocol, lookups, op tracking, exactly-once reports)
 * and a transport (tcp_uv.c + tcp_stream.c, verbs_peer*.c: moving bytes between two
 * daemons). A transport implements struct transport_ops; the peer layer
 * implements the peer_x_*() up-calls declared at the end. Everything runs on
 * the manager's one loop: no call here blocks, no call is made from another
 * thread. The loop glue makes the transports (tcp_uv.h, verbs_transport_new
 * below) and hands them to the peer layer (peers_new).
 *
 * Objects
 *   struct transport   one per kind per daemon (tcp, verbs), made by the
 *                      constructor at the bottom; owns the listener.
 *   struct xconn       the transport's half of one connection. Opaque to the
 *                      peer layer.
 *   struct peer_link   the peer layer's half of the same connection. Opaque
 *                      to the transport; passed back in every up-call.
 *   struct peer_op     one client operation (write, read, send) travelling
 *                      over a link, allocated by the peer layer.
 *
 * Life of a connection
 *   1. Outbound: ops->connect(); the transport calls peer_x_connected() once
 *      the byte stream / QP is usable. Inbound: the transport accepts, then
 *      calls peer_x_accepted(), which returns the peer_link to use (or NULL:
 *      the transport closes it; peer_x_failed() is NOT called then).
 *   2. The peer layer runs the handshake with ops->send_ctrl(); the
 *      transport delivers every control message it receives with
 *      peer_x_ctrl(), in order. Until peer_x_ctrl() has seen the handshake
 *      finish, a data message from the wire is a protocol violation (the
 *      transport closes the connection); peer_x_rx_begin() refuses them
 *      too, so a transport may also just rely on that.
 *   3. Data: ops->write/read/send for outgoing ops; peer_x_rx_*() for what
 *      the other side asks of this daemon (tcp) and peer_x_notify() for
 *      notifications that arrive out of band (verbs WRITE_WITH_IMM).
 *   4. End: either side calls ops->close(), or the transport detects a
 *      failure. In both cases the transport finishes every op it still
 *      holds, then calls peer_x_failed() EXACTLY ONCE per xconn, when it no
 *      longer references any peer_op, region or rx (tcp: from the uv_close
 *      callback, after libuv has cancelled queued writes; verbs: after the
 *      QP is flushed or destroyed). After peer_x_failed() returns, the
 *      transport must not use the peer_link again, and the xconn may be
 *      freed by the transport (the peer layer never touches it again).
 *
 * Exactly-once reports
 *   Every op handed to ops->write/read/send gets exactly one report:
 *   - the transport calls peer_x_op_done(op, status) when the far side
 *     answered: status 0 (acknowledged: the data is there / here), or the
 *     far side's refusal (-RP_EREMOTEACCESS, -RP_EREMOTEBOUNDS,
 *     -RP_EUNEXPORTED, -RP_ESTALE, -RP_ENOENDPOINT, -RP_ENORECV,
 *     -RP_ERECVSMALL, -RP_ENOTIFYSPACE...);
 *   - or nothing, and the op is still outstanding when peer_x_failed() is
 *     called: the peer layer then reports it -RP_EOUTCOME if op->fate is
 *     PEER_OP_POSTED (something may have reached the far side) or
 *     -RP_EPEERDOWN if not (it certainly did not happen). A transport sets
 *     op->fate = PEER_OP_POSTED before the first byte of the op can leave
 *     (tcp: before it is queued for writing; verbs: before ibv_post_send()).
 *     A flush error seen before peer_x_failed() may also be reported
 *     directly with peer_x_op_done(op, -RP_EOUTCOME) or (never posted)
 *     -RP_EPEERDOWN.
 *   A synchronous failure of ops->submit (negative return) means the
 *   transport did not take the op; the peer layer reports it itself, except
 *   -EAGAIN: the connection is failing after the far side refused a request
 *   (it is about to be replaced), so the op is held for the next link like
 *   the ops flushed behind that request.
 *   Never report OK for an op whose outcome is unknown.
 *
 * Remote exports and transport-specific export info
 *   The exporting daemon answers a LOOKUP with the export's id, length and
 *   access plus an opaque blob filled by ITS transport (ops->export_info):
 *   tcp leaves it empty; verbs registers a per-export MR with exactly the
 *   export's access (IBV_ACCESS_REMOTE_WRITE/READ | LOCAL_WRITE) and puts
 *   its address and rkey there (the region's own lkey MR stays private).
 *   The initiating daemon's transport gets the blob back in every
 *   peer_op (op->xinfo) and uses it for one-sided ops. When the export is
 *   withdrawn (unexport, region freed, client gone) the peer layer sends
 *   PP_REVOKE to every peer that looked it up (now, or on its next link)
 *   and keeps the export's verbs MR registered until that peer answers
 *   PP_REVOKE_R (the importer's ops->revoke makes sure nothing of it is
 *   still in flight) or 5 s pass; a withdrawal therefore never sends a
 *   one-sided op into a deregistered MR. If one still does (the peer was
 *   away longer), the exporter's device refuses it, the QP fails, that op
 *   is reported -RP_EUNEXPORTED (PEER_OP_REFUSED), and the ops flushed behind
 *   it are replayed on the next link (PEER_OP_FLUSHED).
 *   Blobs never reach clients: they hold opaque handles only.
 *
 * Incarnations
 *   Every remote handle carries the exporting daemon's incarnation (learnt in
 *   the handshake). The peer layer refuses ops on handles of an older
 *   incarnation with -RP_ESTALE before they reach a transport, and the
 *   exporting side checks op->export_inc / rx->export_inc again.
 */
#ifndef RP_DAEMON_TRANSPORT_H
#define RP_DAEMON_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp-proto.h" /* RP_NAME_MAX, RP_E* */

struct config;
struct core;
struct evloop;
struct rdev;
struct region;
struct export;
struct transport;
struct xconn;
struct peer_link;

/* Largest transport-specific export info blob (verbs: addr + rkey + spare). */
#define PEER_XINFO_MAX 32
/* Largest control message (peer_proto.h); a transport may rely on it for buffers. */
#define PEER_CTRL_MAX 512

enum peer_op_kind {
	PEER_OP_WRITE = 1, /* local slice -> remote export at remote_off */
	PEER_OP_READ = 2,  /* remote export slice -> local slice */
	PEER_OP_SEND = 3,  /* local slice -> next receive posted on remote endpoint */
};

#define PEER_OP_F_NOTIFY 0x1u /* WRITE: exporter's client gets RP_OP_NOTIFY with imm */

/* What is known of an op's execution when its link fails (set by the transport). */
enum peer_op_fate {
	PEER_OP_QUEUED, /* nothing of it can have reached the wire */
	PEER_OP_POSTED, /* set before any of it may reach the wire: it may have happened */
	/*
	 * Posted, but none of it executed after all (verbs: every WR of it was
	 * flushed behind a request the far side refused, which executes nothing
	 * after it). The peer layer holds the op and submits it again on the
	 * peer's next link instead of failing it.
	 */
	PEER_OP_FLUSHED,
	/*
	 * The far device refused this op itself (verbs: remote access error on a
	 * WRITE/READ checked here against the export). It is not sent again:
	 * once the peer is back, the same incarnation means the export's MR is
	 * gone (-RP_EUNEXPORTED), a new one that the peer restarted (it was
	 * dying) (-RP_EPEERDOWN).
	 */
	PEER_OP_REFUSED,
};

/*
 * One outgoing operation. The peer layer fills the first block and keeps the
 * local region referenced (op->region) until the op is reported; the
 * transport may read it and use scratch[] freely. Embedded in a larger
 * private struct of the peer layer: never copy or free it.
 */
struct peer_op {
	/* Set by the peer layer, read-only for the transport. */
	uint16_t kind;	       /* enum peer_op_kind */
	uint16_t flags;	       /* PEER_OP_F_* */
	uint32_t imm;	       /* NOTIFY immediate */
	struct region *region; /* local region (addr, len, xport = verbs MR) */
	uint64_t off;	       /* local offset; the slice is checked against region */
	uint64_t len;	       /* bytes, <= UINT32_MAX */
	uint64_t remote_off;   /* WRITE/READ: offset in the export (checked remotely) */
	uint64_t export_id;    /* WRITE/READ: exporter's id from LOOKUP */
	uint64_t export_inc;   /* WRITE/READ: exporter incarnation the id belongs to */
	uint64_t export_len;   /* WRITE/READ: export length from LOOKUP (verbs may pre-check) */
	uint32_t xinfo_len;    /* WRITE/READ: bytes of xinfo */
	uint8_t xinfo[PEER_XINFO_MAX]; /* WRITE/READ: exporter's transport blob */
	char endpoint[RP_NAME_MAX];    /* SEND: remote endpoint name */

	/* Owned by the transport. */
	enum peer_op_fate fate;
	uint64_t scratch[6]; /* transport-private (wr_id, queue links, ...) */
};

/*
 * One incoming data request (tcp: WRITE / READ / SEND messages from the
 * other daemon; verbs: SEND messages). The transport fills the request
 * fields and calls peer_x_rx_begin(), which checks the export or endpoint
 * and, on success, fills addr (and pins the memory behind it) until the
 * transport calls peer_x_rx_end().
 */
enum peer_rx_kind {
	PEER_RX_WRITE = 1, /* payload of len bytes goes to addr */
	PEER_RX_READ = 2,  /* len bytes at addr go back to the requester */
	PEER_RX_SEND = 3,  /* payload of len bytes goes to addr (a posted receive) */
};

struct peer_rx {
	/* Request, filled by the transport from the wire. */
	uint16_t kind;	/* enum peer_rx_kind */
	uint16_t flags; /* PEER_OP_F_NOTIFY for WRITE */
	uint32_t imm;
	uint64_t export_id;  /* WRITE/READ */
	uint64_t export_inc; /* WRITE/READ: must equal this daemon's incarnation */
	uint64_t off;	     /* WRITE/READ: offset in the export */
	uint64_t len;
	char endpoint[RP_NAME_MAX]; /* SEND, NUL-terminated (the transport validates) */

	/* Result of peer_x_rx_begin(), owned by the peer layer. */
	void *addr;	/* len bytes, valid until peer_x_rx_end() */
	void *token;	/* peer layer's state for this rx */
	bool may_fault; /* addr is on hugetlbfs: copy with guarded_memmove() */
};

struct transport_ops {
	const char *name; /* "tcp", "verbs": logs and status */

	/*
	 * Start accepting peer connections on host:port (the daemon's listen
	 * setting). 0, or a negative errno with a human reason in @why.
	 */
	int (*listen)(struct transport *t, const char *host, uint16_t port, char *why,
		      size_t whylen);
	/*
	 * Begin connecting to host:port for @link. 0 and *ret: the outcome comes
	 * as peer_x_connected() or peer_x_failed(). <0: nothing was started.
	 */
	int (*connect)(struct transport *t, const char *host, uint16_t port, struct peer_link *link,
		       struct xconn **ret);
	/* "HOST:PORT" of the other end, for logs and status. */
	const char *(*remote_addr)(const struct xconn *x);
	/*
	 * Tear the connection down (handshake failed, keepalive, peer removed,
	 * shutdown). Idempotent. Ends with peer_x_failed() (not from inside
	 * this call: from a later loop callback) unless the link was never
	 * reported to the peer layer.
	 */
	void (*close)(struct xconn *x);
	/*
	 * The handshake has authenticated the other daemon (called before our
	 * next handshake message goes out, so it precedes anything the other
	 * side may do after it): allow its one-sided access from now on (verbs:
	 * the QP's remote access flags, 0 until here). May be NULL. 0 or <0.
	 */
	int (*open_access)(struct xconn *x);
	/* Queue one control message (<= PEER_CTRL_MAX bytes, copied). 0 or <0. */
	int (*send_ctrl)(struct xconn *x, const void *msg, size_t len);
	/* Take an op (see "Exactly-once reports"). 0: taken; <0: not taken. */
	int (*submit)(struct xconn *x, struct peer_op *op);
	/*
	 * Exporting side: fill @buf (up to PEER_XINFO_MAX) with what peer
	 * @peer's transport (of the same kind) needs for one-sided access to
	 * @e, which it looked up (export_publish()); on verbs that is an MR of
	 * its own (export_peer_mr(), registered at its first LOOKUP: peer_mr). Returns
	 * the length (0 for tcp) or a negative errno (the LOOKUP is answered
	 * with that error). Called for every LOOKUP.
	 */
	int (*export_info)(struct transport *t, struct export *e, const char *peer, void *buf,
			   size_t cap);
	/* export_info() needs the looker's own MR: export_peer_mr_prepare() first. */
	bool peer_mr;
	/*
	 * Importing side: the peer withdrew @export_id (PP_REVOKE). Post nothing
	 * more for it (ops not yet wholly posted end -RP_EUNEXPORTED), then send
	 * the control message @ack once nothing posted before can still touch
	 * the export (verbs: a fenced SEND behind every earlier WRITE and READ).
	 * NULL: ack with send_ctrl() (tcp: the exporter checks every op itself).
	 */
	int (*revoke)(struct xconn *x, uint64_t export_id, const void *ack, size_t len);
	/* Free the transport at shutdown, after every xconn has reported failed. */
	void (*free)(struct transport *t);
};

/* The common head of every transport; implementations embed it first. */
struct transport {
	const struct transport_ops *ops;
	void *owner; /* the peer layer's */
};

/*
 * The verbs transport on the daemon's device (the tcp one is loop glue:
 * tcp_uv.h); @core runs its connections' set-up off the loop thread
 * (core_job_run()). 0, or <0 with the reason logged.
 */
int verbs_transport_new(struct rdev *d, struct core *core, const struct config *cfg,
			uint64_t incarnation, struct evloop *ev, struct transport **ret);

/* ---- Up-calls into the peer layer (peers.c, peer_data.c). ---- */

/* Inbound connection from @addr ("HOST:PORT"): the link to use, or NULL to refuse it. */
struct peer_link *peer_x_accepted(struct transport *t, struct xconn *x, const char *addr);
/* Outbound connection established: the handshake starts. */
void peer_x_connected(struct peer_link *link);
/* A whole control message (the transport checked only its framing). */
void peer_x_ctrl(struct peer_link *link, const void *msg, size_t len);
/* Bytes arrived (any kind): keepalive bookkeeping. Cheap; call per read. */
void peer_x_alive(struct peer_link *link);
/* The connection is gone for good; see "Life of a connection". @err: -errno. */
void peer_x_failed(struct peer_link *link, int err, const char *why);
/*
 * The transport gives up on an accepted connection for a reason of its own
 * (no room, no memory), before peer_x_failed(): its end does not count as
 * the connector's failed handshake.
 */
void peer_x_ours(struct peer_link *link);
/*
 * An accepted connection whose other side has not proved the key yet: a
 * transport may drop it (after peer_x_ours()) to free a shared resource its
 * own outbound connections need (verbs: CQ room).
 */
bool peer_x_pending(const struct peer_link *link);

/* An outgoing op's exactly-once report (see above); on 0, op->len bytes moved. */
void peer_x_op_done(struct peer_op *op, int status);

/*
 * An incoming request. 0: rx->addr/token set, do the transfer, then call
 * peer_x_rx_end(). <0: the status to answer with (do not call rx_end; a
 * transport that must still consume a payload discards it).
 */
int peer_x_rx_begin(struct peer_link *link, struct peer_rx *rx);
/*
 * The transfer of @rx finished: @status 0 (all bytes moved) or <0 (the
 * connection broke midway). Returns the status to send back (for WRITE with
 * notify this is where the exporter is notified; -RP_ENOTIFYSPACE possible;
 * a whole SEND into a receive cancelled meanwhile: -RP_ENORECV).
 * After this, rx->addr must not be touched.
 */
int peer_x_rx_end(struct peer_link *link, struct peer_rx *rx, int status);
/*
 * Out-of-band notification (verbs WRITE_WITH_IMM / a NOTIFY message after a
 * one-sided write): the exporter of @export_id gets RP_OP_NOTIFY. Returns 0
 * or -RP_EUNEXPORTED / -RP_ENOTIFYSPACE (which the transport may send back).
 */
int peer_x_notify(struct peer_link *link, uint64_t export_id, uint64_t off, uint64_t len,
		  uint32_t imm);

#endif
