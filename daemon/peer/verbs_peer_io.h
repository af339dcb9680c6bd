/* SPDX-License-Identifier: MIT */
/*
 * The verbs peer transport (transport.h), private to verbs_peer*.c: its
 * wire format and objects. Named after the lower of its two files.
 *
 *   verbs_peer.c     rdma_cm: listen, connect, accept, events, teardown, the
 *                    transport's ops table and constructor (on top)
 *   verbs_peer_io.c  one RC QP per connection: queues, credits, post lists,
 *                    completions, failure, the wire format of its SEND
 *                    messages (below: it never calls verbs_peer.c)
 * The rdma_cm event channel, the deadline tick and the batched flush join
 * the loop through evloop.h; nothing here sees libuv.
 *
 * Wire (every SEND on the QP, into a pre-posted VP_RBUF-byte receive):
 *   struct vp_hdr, then by type:
 *     VP_CTRL      a peer-layer control message (<= PEER_CTRL_MAX bytes)
 *     VP_CREDIT    nothing: returns receive credits only
 *     VP_SEND      struct vp_send + up to VP_CHUNK payload bytes (one chunk of
 *                  a message; chunks of one message are contiguous on the QP)
 *     VP_NOTIFY_R, VP_SEND_R   struct vp_status, hdr.id = the request's id
 *   Every header carries the receive credits its sender returns.
 *
 * Notifications (RP_NOTIFY): the data goes as RDMA WRITEs, then one
 * RDMA WRITE_WITH_IMM puts a struct vp_notify (export, offset, length, the
 * client's immediate, request id) into slot k of the far side's notify ring
 * (a per-connection MR whose address and rkey travel in the CM private
 * data) with imm_data = k. RC executes in order, so when the far side's
 * receive completes with IBV_WC_RECV_RDMA_WITH_IMM the data and the
 * descriptor have landed; it notifies its client and answers VP_NOTIFY_R,
 * after which slot k is free again. The WRITE_WITH_IMM consumes a receive
 * like a SEND does, so it takes a credit.
 *
 * Data: PEER_OP_WRITE/READ are RDMA WRITE/READ straight between the local
 * region's MR (region->xport) and the MR the exporter registered of the
 * export for this peer alone (published by export_info as struct vp_xinfo):
 * zero copy on both hosts. PEER_OP_SEND is
 * zero copy on the sending host (the payload SGE points into the client's
 * region) and one memcpy on the receiving host, from the receive buffer
 * into the client's posted receive.
 */
#ifndef RP_DAEMON_VERBS_PEER_IO_H
#define RP_DAEMON_VERBS_PEER_IO_H

#include <stdbool.h>
#include <stdint.h>

#include "base/evloop.h"
#include "rdma/rdma_dev.h"
#include "peer/transport.h"

struct ibv_qp;
struct ibv_mr;
struct ibv_send_wr;
struct ibv_sge;
struct config;
struct ibv_wc;
struct rdma_cm_id;
struct rdma_event_channel;

/* ---- Wire format ---- */

#define VP_MAGIC 0x52505642u /* "BVPR" in the CM private data */
#define VP_VERSION 2

enum vp_type {
	VP_CTRL = 1,
	VP_CREDIT = 2,
	/* 3 was a NOTIFY message (version 1); notifications are WRITE_WITH_IMM now. */
	VP_NOTIFY_R = 4,
	VP_SEND = 5,
	VP_SEND_R = 6,
};

#define VP_F_FIRST 0x1u /* VP_SEND: first chunk of a message */
#define VP_F_LAST 0x2u	/* VP_SEND: last chunk of a message */

struct vp_hdr {
	uint8_t type;
	uint8_t flags;
	uint16_t credits; /* receives the sender re-posted since its last return */
	uint32_t len;	  /* bytes after this header */
	uint64_t id;	  /* NOTIFY / SEND: request id, echoed by the reply */
};
_Static_assert(sizeof(struct vp_hdr) == 16, "vp_hdr");

/* One slot of the notify ring, written by the far side's WRITE_WITH_IMM. */
struct vp_notify {
	uint64_t export_id;
	uint64_t export_inc;
	uint64_t off;
	uint64_t len;
	uint64_t id; /* echoed by VP_NOTIFY_R */
	uint32_t imm;
	uint32_t pad;
};
_Static_assert(sizeof(struct vp_notify) == 48, "vp_notify");

struct vp_status {
	int32_t status;
	uint32_t pad;
};
_Static_assert(sizeof(struct vp_status) == 8, "vp_status");

struct vp_send {
	uint64_t total; /* message length */
	uint64_t off;	/* of this chunk's payload in the message */
	char endpoint[RP_NAME_MAX];
};
_Static_assert(sizeof(struct vp_send) == 80, "vp_send");

/* CM private data of CONNECT and ACCEPT (<= 56 bytes: the REQ limit). */
struct vp_cm_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t credits;    /* receives posted for the other side */
	uint32_t chunk;	     /* largest VP_SEND payload the sender accepts */
	uint32_t ring_slots; /* notify ring: slots, address and rkey */
	uint64_t ring_addr;
	uint32_t ring_rkey;
	uint32_t pad;
};
_Static_assert(sizeof(struct vp_cm_hello) == 32, "vp_cm_hello");

/* export_info's blob: what a remote initiator needs for one-sided access. */
struct vp_xinfo {
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t magic; /* VP_MAGIC */
};
_Static_assert(sizeof(struct vp_xinfo) <= PEER_XINFO_MAX, "vp_xinfo");

/* SEND payload per receive buffer; a receive buffer holds one message. */
#define VP_CHUNK (32u * 1024)
#define VP_RBUF (sizeof(struct vp_hdr) + sizeof(struct vp_send) + VP_CHUNK)
/* Per send slot: the header (and, for control messages, the body) of a SEND. */
#define VP_SBUF (sizeof(struct vp_hdr) + PEER_CTRL_MAX)
/* One-sided ops are split into pieces this large, taken round-robin between ops. */
#define VP_RW_PIECE (256u << 10)
/* One-sided bytes posted and not yet completed, per connection (see add_rw()). */
#define VP_RW_WINDOW (2u << 20)
/* One-sided pieces this large are always signalled, so the window frees steadily. */
#define VP_RW_SIGNAL_BYTES (256u << 10)
/* Signal at least every this many WRs (and always the last of a post list). */
#define VP_SIGNAL_EVERY 16
/* Per-connection queue sizes (capped by the config's depths). */
#define VP_SQ_MAX 256
#define VP_RQ_MAX 64
/* Control messages queued but not yet posted, per connection. */
#define VP_CTRLQ_MAX 4096
/* Notify ring slots per connection (notifying writes awaiting their reply). */
#define VP_NRING 64

/* ---- Objects ---- */

struct vconn;

/* One send-queue slot: every WR carries one as wr_id. */
struct vp_sslot {
	struct rdev_wr w;
	struct vconn *c;
	struct peer_op *op; /* NULL: a message of the transport itself */
	uint32_t idx;
	uint32_t bytes; /* one-sided payload of the WR, counted in vconn.rw_posted */
};

/* One receive slot with its buffer at rbuf + idx * VP_RBUF. */
struct vp_rslot {
	struct rdev_wr w;
	struct vconn *c;
	uint32_t idx;
};

/* A queued transport or control message. */
struct vp_msg {
	struct vp_msg *next;
	uint8_t type;
	bool fence; /* post it only after every earlier READ completed */
	uint64_t id;
	uint32_t len;
	uint8_t body[];
};

/* Transport-private state of a peer_op, in op->scratch. */
struct vp_opx {
	struct peer_op *next;  /* in rwq / sendq */
	struct peer_op *rnext; /* in the awaiting-reply list */
	uint64_t done;	       /* bytes posted */
	uint64_t id;	       /* SEND / NOTIFY request id */
	uint32_t wrs;	       /* WRs posted and not yet retired */
	int32_t status;	       /* first error seen */
	uint16_t flags;	       /* VPX_*: what happened to its WRs */
	uint16_t slot;	       /* NOTIFY: the far notify ring slot it holds, or VPX_NO_SLOT */
	uint8_t reply;	       /* enum vpx_reply */
	uint8_t pad[3];
};
_Static_assert(sizeof(struct vp_opx) <= sizeof(((struct peer_op *)0)->scratch), "vp_opx");

/* The far side's answer to an op that needs one (SEND, NOTIFY). */
enum vpx_reply {
	VPX_NO_REPLY, /* a WRITE or READ without notification: none comes */
	VPX_AWAITING, /* the reply has not come yet */
	VPX_ANSWERED, /* it came (or the op ended without it) */
};

#define VPX_NO_SLOT 0xffffu

#define VPX_ALL_POSTED 0x4u
#define VPX_SOME_DONE 0x8u    /* at least one WR of it completed successfully */
#define VPX_SOME_FAILED 0x20u /* at least one WR of it completed with an error or flush */

static inline struct vp_opx *vpx(struct peer_op *op)
{
	return (struct vp_opx *)(void *)op->scratch;
}

enum vc_state {
	VC_ADDR,    /* resolving the address */
	VC_SETUP,   /* its buffers, MRs and QP being made off the loop (struct vsetup) */
	VC_ROUTE,   /* resolving the route */
	VC_CONNECT, /* REQ sent, waiting for the REP */
	VC_ACCEPT,  /* REP sent, waiting for the RTU */
	VC_UP,	    /* RTS both ways */
	VC_FAILING, /* QP in error, waiting for its WRs to flush */
	VC_DEAD,    /* reported, waiting to be freed */
};

struct vtransport;
struct vsetup;
struct vname;
struct ibv_qp_attr;

enum vc_rx {
	VC_RX_NONE,    /* between messages */
	VC_RX_ACTIVE,  /* chunks go into rx.addr */
	VC_RX_REFUSED, /* refused at its first chunk: the rest is dropped */
};

struct vconn {
	struct vconn *next; /* in the transport's list */
	struct vtransport *t;
	struct rdma_cm_id *id;
	struct peer_link *link; /* NULL until the peer layer knows the connection */
	enum vc_state state;
	bool outbound;
	bool closed;	 /* ops->close() was called */
	bool remote_err; /* the far side refused a request: later WRs did not execute */
	int err;
	char why[200];
	char addr[64];
	uint64_t created_ms;
	uint64_t ready_ms;    /* inbound: our accept went out (VC_ACCEPT); its handshake's turn */
	uint64_t deadline_ms; /* for VC_ADDR..VC_ACCEPT */
	uint64_t fail_ms;
	bool room_wait;	   /* outbound, VC_ADDR: waits for CQ room being freed (room_wait()) */
	bool room_freeing; /* failed with CQ room claimed: counted in t->room_freeing */
	/*
	 * While set, a job off the loop thread makes the QP and the buffers
	 * (vc_io_new()): the loop touches none of them, vc_fail() only notes
	 * the failure and the connection is not destroyed until the job is back.
	 */
	struct vsetup *setup;
	struct vname *name; /* its peer's host name: looked up off the loop, or to be */

	struct ibv_qp *qp;
	struct rdev_qp_ev qev;
	uint32_t sq, rq;     /* depths */
	uint32_t max_inline; /* granted by the device at QP creation */
	uint32_t cq_share;

	/* Send side. */
	struct ibv_mr *smr;
	uint8_t *sbuf;
	struct vp_sslot *ss;
	/*
	 * Slots posted: [tail, head), free-running. 64 bits: a slot is the
	 * count modulo sq, which need not be a power of two, so a 32-bit count
	 * would map two live WRs to one slot where it wraps.
	 */
	uint64_t s_head, s_tail;
	uint32_t unsignaled;
	uint64_t rw_posted;	 /* one-sided bytes in flight (VP_RW_WINDOW) */
	struct ibv_send_wr *wrv; /* sq entries: one post list */
	struct ibv_sge *sgev;	 /* 2 * sq entries */
	bool *wr_may_fault;	 /* sq entries: wrv[i] has memory that may fault (no inline) */
	bool kick;		 /* vc_kick() wanted at the next flush */
	uint32_t credits;	 /* receives the far side has posted for us */
	uint32_t peer_rq;	 /* all it posts (its hello): credits never exceed it */
	uint32_t owed;		 /* receives re-posted here, not yet returned */
	uint32_t peer_chunk;
	struct vp_msg *mq, *mq_tail; /* control and transport messages, FIFO */
	uint32_t mq_len;
	struct peer_op *rwq, *rwq_tail;	    /* WRITE/READ, round-robin by piece */
	struct peer_op *sendq, *sendq_tail; /* SEND, one message at a time */
	struct peer_op *waiting;	    /* posted and awaiting a reply */
	bool turn_send;			    /* round-robin between rwq and sendq */
	uint64_t next_id;
	uint64_t peer_ring; /* the far side's notify ring */
	uint32_t peer_ring_rkey;
	uint16_t nfree[VP_NRING]; /* its free slots (a stack) */
	uint32_t nfree_n;

	/* Receive side. */
	struct vp_notify *nring; /* our notify ring, written by the far side */
	struct ibv_mr *nmr;
	struct ibv_mr *rmr;
	uint8_t *rbuf;
	struct vp_rslot *rs;
	uint32_t r_posted;
	struct peer_rx rx;
	uint64_t rx_id;
	uint64_t rx_off;
	int rx_err;	     /* -EFAULT: a chunk could not be placed (hugetlbfs hole) */
	enum vc_rx rx_state; /* of the SEND message arriving in chunks */
};

struct vtransport {
	struct transport t; /* first */
	struct rdev *d;
	struct core *core; /* runs the connections' set-up jobs (struct vsetup) */
	struct evloop *ev;
	struct ev_watch *cm_watch; /* the rdma_cm event channel */
	struct ev_timer *tick;	   /* deadlines and teardown, while there is such work */
	struct ev_timer *flush;	   /* vc_flush(): posts batched per loop turn */
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	struct vconn *conns;
	uint32_t room_freeing; /* connections failed with CQ room still claimed */
	uint32_t room_waiters; /* dials of ours waiting for that room (c->room_wait) */
	uint32_t cq_depth;     /* [verbs] cq_depth, for messages; the claims are in rdma_dev */
	uint32_t sq_depth, rq_depth;
	uint32_t inline_size;		  /* [verbs] inline_size: asked of every QP of ours */
	uint8_t ack_timeout, retry_count; /* [verbs]: set on every QP of ours at RTS */
	uint64_t incarnation;
	uint8_t port;
	int resp_res, init_depth; /* RDMA READs in flight, both directions */
	bool listen_dead;	  /* DEVICE_REMOVAL on the listener */
	bool freeing;
	/*
	 * A loop callback is working on the transport: a conn_destroy() inside
	 * it can make the peer layer free the transport (the last link of a
	 * stopping daemon), so vp_free() only marks it and the callback frees
	 * it on the way out. Each job of the transport's (struct vsetup, vdrop,
	 * vname) holds it busy too, until its done().
	 */
	unsigned busy;
	bool free_pending;
	unsigned lookups; /* host names being looked up (struct vname) */
};

/* ---- verbs_peer_io.c, used by verbs_peer.c ---- */

/*
 * The buffers and their MRs, the QP, INIT (@init, @init_mask: from
 * rdma_init_qp_attr() on the loop), every receive posted. Touches only @c
 * and the device: it runs off the loop thread.
 */
int vc_io_new(struct vconn *c, struct ibv_qp_attr *init, int init_mask, char *why, size_t whylen);
/* The QP, then the MRs. Touches only @c and the device: it runs off the loop thread. */
void vc_io_free_verbs(struct vconn *c);
/* vc_io_free_verbs(), then the memory (on the loop: completions name it). */
void vc_io_free(struct vconn *c);
/* The QP is connected: post what waits. */
void vc_kick(struct vconn *c);
/* Fail every queued op that never reached the wire and forget them all. */
void vc_io_forget(struct vconn *c);
bool vc_io_flushed(const struct vconn *c);
/* Transport ops (transport.h) on a connection. */
int vc_send_ctrl(struct xconn *x, const void *msg, size_t len);
int vc_submit(struct xconn *x, struct peer_op *op);
int vc_revoke(struct xconn *x, uint64_t export_id, const void *ack, size_t len);
/* Start tearing @c down (idempotent): QP to error, DREQ; @err -errno, @why human. */
void vc_fail(struct vconn *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *vc_state_name(enum vc_state s);
/* Run vc_kick(@c) once the current loop turn is done (batches posts). */
void vc_defer_kick(struct vconn *c);
/* The flush timer's callback: kick every connection that asked for it. */
void vc_flush(void *transport);
/* Ask for the deadline tick soon (a connection is being set up or torn down). */
void vc_tick_soon(struct vtransport *t);

#endif
