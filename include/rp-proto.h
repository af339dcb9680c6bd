/* SPDX-License-Identifier: MIT */
/*
 * The client <-> daemon control protocol: the whole contract in one header.
 *
 * Transport: a SOCK_SEQPACKET Unix socket, one message per packet. Every
 * message starts with struct rp_hdr; a reply carries the request's type with
 * RP_MSG_REPLY set, the request's seq, and a status (0 or a negative code).
 * All fields are host-endian (the socket is local), fixed width, explicitly
 * padded; every struct's size is asserted. Numbers are grouped by area;
 * retired numbers stay in the list as unused so they are never reused.
 */
#ifndef RP_PROTO_H
#define RP_PROTO_H

#include <stdint.h>

#include "rdmaproxy.h" /* RP_E* error codes travel in rp_hdr.status */

#define RP_PROTO_MAGIC 0x52444d50u /* "RDMP" */
/*
 * Version 2 adds RP_MSG_EXPORT_ACL; a version 1 session sending it is a
 * protocol error. Version 3 changes the ring entries (rp-ring.h). Version 4
 * adds RP_MSG_EP_BIND_ACL, a protocol error before it. Everything else is
 * the same in all.
 */
#define RP_PROTO_VERSION_MIN 1
/* A test build of the daemon speaks an older one (libclient/local.mk). */
#ifndef RP_PROTO_VERSION_MAX
#define RP_PROTO_VERSION_MAX 4
#endif
#define RP_PROTO_VERSION_ACL 2	  /* the first with RP_MSG_EXPORT_ACL */
#define RP_PROTO_VERSION_SEQ 3	  /* the first whose ring entries carry their index (rp-ring.h) */
#define RP_PROTO_VERSION_EP_ACL 4 /* the first with RP_MSG_EP_BIND_ACL */
#define RP_PROTO_MSG_MAX 4096	  /* largest packet either side sends */
#define RP_NAME_MAX 64		  /* node, peer, export and endpoint names, NUL included */

struct rp_hdr {
	uint32_t len;	/* the whole packet, header included */
	uint16_t type;	/* enum rp_msg_type, | RP_MSG_REPLY in replies */
	uint16_t flags; /* requests: must be 0; replies: per type (RELOAD), else 0 */
	uint32_t seq;	/* chosen by the requester, echoed in the reply */
	int32_t status; /* replies: 0 or negative error; requests: 0 */
};
_Static_assert(sizeof(struct rp_hdr) == 16, "rp_hdr");

#define RP_MSG_REPLY 0x8000u

enum rp_msg_type {
	/* 0x00xx: session */
	RP_MSG_HELLO = 0x0001,

	/* 0x01xx: regions. REGION_REG is the only message that carries an fd. */
	RP_MSG_REGION_REG = 0x0101,
	RP_MSG_REGION_FREE = 0x0102,

	/* 0x02xx: exports */
	RP_MSG_EXPORT = 0x0201,
	RP_MSG_UNEXPORT = 0x0202,
	RP_MSG_EXPORT_ACL = 0x0203, /* version 2: EXPORT with an access list */

	/* 0x03xx: remote handles */
	RP_MSG_REMOTE_OPEN = 0x0301,
	RP_MSG_REMOTE_CLOSE = 0x0302,

	/* 0x04xx: message endpoints */
	RP_MSG_EP_BIND = 0x0401,
	RP_MSG_EP_UNBIND = 0x0402,
	RP_MSG_DEST_OPEN = 0x0403,   /* name a send destination once, send by id */
	RP_MSG_EP_BIND_ACL = 0x0404, /* version 4: EP_BIND with an access list */

	/* 0x08xx: administration (rdmaproxyctl); see the admin section below. */
	RP_MSG_STATUS = 0x0801,
	RP_MSG_ADMIN_CLIENTS = 0x0802, /* page of struct rp_admin_client */
	RP_MSG_ADMIN_REGIONS = 0x0803, /* page of struct rp_admin_region */
	RP_MSG_ADMIN_PEERS = 0x0804,   /* page of struct rp_admin_peer */
	RP_MSG_ADMIN_METRICS = 0x0805, /* page of Prometheus text */
	RP_MSG_ADMIN_PING = 0x0806,
	RP_MSG_ADMIN_RELOAD = 0x0807,
	RP_MSG_ADMIN_ENDPOINTS = 0x0808, /* page of struct rp_admin_endpoint */
};

/* RP_MSG_HELLO: must be the first message; anything else first disconnects. */
struct rp_hello {
	uint32_t magic;
	uint16_t version_min;
	uint16_t version_max;
	uint32_t flags; /* none defined: must be 0 */
	uint32_t pad;
};
_Static_assert(sizeof(struct rp_hello) == 16, "rp_hello");

/*
 * Reply to HELLO. On a version mismatch the status is -EPROTONOSUPPORT and
 * version_min/version_max say what the daemon speaks. On success the reply
 * carries three fds (SCM_RIGHTS), in this order: the sealed memfd holding
 * the rings (rp-ring.h, ring_size bytes), the submission doorbell (client
 * writes 8 bytes) and the completion doorbell (client reads; the daemon
 * writes 8 bytes). Earlier daemons sent eventfds; now these are the
 * client's end of an AF_UNIX datagram socket pair and the read end of a
 * pipe, whose other ends only the daemon holds: reading and writing 8
 * bytes suits both.
 * Other refusals: -EACCES (user not allowed), -RP_ELIMIT_CONN.
 */
struct rp_hello_reply {
	uint32_t magic;
	uint16_t version; /* the negotiated version */
	uint16_t version_min;
	uint16_t version_max;
	uint16_t transport; /* enum rp_wire_transport */
	uint32_t client_id;
	char node_name[RP_NAME_MAX];
	uint32_t sq_entries;
	uint32_t cq_entries;
	uint64_t ring_size;
};
_Static_assert(sizeof(struct rp_hello_reply) == 96, "rp_hello_reply");
#define RP_HELLO_FDS 3

/*
 * RP_MSG_REGION_REG: exactly one fd attached, a sealed shmem/hugetlbfs memfd
 * of @len. When the kernel could not install the fd in the daemon (its fd
 * table is full), the request is answered -EMFILE and the session goes on.
 */
struct rp_region_reg {
	uint64_t len;	/* page-aligned, > 0, == the file's size */
	uint32_t flags; /* RP_REGION_* */
	uint32_t pad;
};
_Static_assert(sizeof(struct rp_region_reg) == 16, "rp_region_reg");

/* Reply to REGION_REG; also the body of REGION_FREE, REMOTE_CLOSE, EP_UNBIND. */
struct rp_id {
	uint32_t id;
	uint32_t pad;
};
_Static_assert(sizeof(struct rp_id) == 8, "rp_id");

/*
 * RP_MSG_EXPORT; UNEXPORT uses the same body (access must be 0). An export
 * made with EXPORT may be opened by clients of its owner's uid and of root
 * on this node only. With a device, EXPORT is answered once the export's MR
 * is registered (other requests may be answered meanwhile); a connection
 * with 4 such EXPORTs outstanding is answered -EBUSY. UNEXPORT is answered
 * once no MR of the export is registered any more, REGION_FREE once the
 * daemon has unmapped the region, unless something still holds it then
 * (operations, an EXPORT of it being registered, an export of it that
 * peers have not let go of yet): it is unmapped after them.
 */
struct rp_export_req {
	uint32_t region;
	uint32_t access; /* RP_ACCESS_* */
	char name[RP_NAME_MAX];
};
_Static_assert(sizeof(struct rp_export_req) == 72, "rp_export_req");

/*
 * RP_MSG_EXPORT_ACL: EXPORT, and whom else to let open it (struct
 * rp_export_acl of rdmaproxy.h). Lists hold at most RP_EXPORT_ACL_MAX
 * entries; unused entries and padding must be zero, flags only
 * RP_EXPORT_ANY_*. Every peer must be a valid name (a peer that is not
 * configured is answered -RP_EPEERUNKNOWN). Replies like EXPORT.
 */
struct rp_export_acl_req {
	struct rp_export_req x;
	uint32_t flags; /* RP_EXPORT_ANY_* */
	uint16_t n_uids;
	uint16_t n_gids;
	uint16_t n_peers;
	uint16_t pad[3];
	uint32_t uids[RP_EXPORT_ACL_MAX];
	uint32_t gids[RP_EXPORT_ACL_MAX];
	char peers[RP_EXPORT_ACL_MAX][RP_NAME_MAX];
};
_Static_assert(sizeof(struct rp_export_acl_req) == 2392, "rp_export_acl_req");

/* RP_MSG_REMOTE_OPEN and RP_MSG_DEST_OPEN (the latter replies with struct rp_id). */
struct rp_name_req {
	char peer[RP_NAME_MAX]; /* "" or the node name: local */
	char name[RP_NAME_MAX];
};
_Static_assert(sizeof(struct rp_name_req) == 128, "rp_name_req");

struct rp_remote_reply {
	uint32_t id;
	uint32_t access;
	uint64_t len;
};
_Static_assert(sizeof(struct rp_remote_reply) == 16, "rp_remote_reply");

/* RP_MSG_EP_BIND; replies with struct rp_id. */
struct rp_ep_req {
	char name[RP_NAME_MAX];
};
_Static_assert(sizeof(struct rp_ep_req) == 64, "rp_ep_req");

/*
 * RP_MSG_EP_BIND_ACL: the body of EXPORT_ACL with x.region and x.access 0;
 * x.name is the endpoint's name and the lists say who else may send to it
 * (rp_endpoint_bind_acl() in rdmaproxy.h), under the same rules. Replies
 * like EP_BIND.
 */

enum rp_wire_transport {
	RP_WIRE_TRANSPORT_TCP = 1,
	RP_WIRE_TRANSPORT_VERBS = 2,
};

/* RP_MSG_STATUS has no request body. */
struct rp_status_reply {
	char version[16];
	char node_name[RP_NAME_MAX];
	char device[RP_NAME_MAX]; /* empty on tcp */
	char port_state[16];
	char gid[48];
	uint64_t uptime_sec;
	uint64_t incarnation;
	uint64_t registered_bytes;
	uint32_t transport; /* enum rp_wire_transport */
	uint32_t port;
	uint32_t active_mtu;
	uint32_t clients;
	uint32_t regions;
	uint32_t peers_up;
	uint32_t peers_total;
	uint32_t pad;
};
_Static_assert(sizeof(struct rp_status_reply) == 264, "rp_status_reply");

/*
 * Administration. Read-only queries (STATUS, CLIENTS, REGIONS, PEERS,
 * METRICS, PING) are answered for every allowed user; RELOAD, and anything
 * that changes state, only for root or members of the configured
 * admin_group (decided from SO_PEERCRED). REGIONS shows administrators
 * everything; others see the regions of their own uid and the exports they
 * may open, nothing else of other users. A refused or failed admin request
 * is a reply with a negative status and either no body or a struct
 * rp_admin_text saying why.
 *
 * Lists can outgrow one packet, so they come in pages: a request carries a
 * cursor (0: from the start), the reply a struct rp_admin_page followed by
 * @count fixed-size records, and the cursor of the next page (0: this was
 * the last). Cursors are keys, not positions: entries that come or go
 * between pages never shift the others. METRICS pages are byte ranges of a
 * text snapshot taken when the cursor is 0, so a scrape is consistent.
 */
#define RP_ADMIN_TEXT_MAX 256

struct rp_admin_text {
	char text[RP_ADMIN_TEXT_MAX]; /* NUL-terminated */
};
_Static_assert(sizeof(struct rp_admin_text) == 256, "rp_admin_text");

/* CLIENTS, REGIONS, PEERS, METRICS. */
struct rp_admin_page_req {
	uint64_t cursor;
	uint32_t flags; /* none defined: must be 0 */
	uint32_t pad;
};
_Static_assert(sizeof(struct rp_admin_page_req) == 16, "rp_admin_page_req");

struct rp_admin_page {
	uint64_t next;	/* cursor of the next page, 0: no more */
	uint32_t count; /* records (METRICS: bytes of text) after this header */
	uint32_t total; /* records in the whole list (METRICS: bytes in the snapshot) */
};
_Static_assert(sizeof(struct rp_admin_page) == 16, "rp_admin_page");
#define RP_ADMIN_PAGE_MAX (RP_PROTO_MSG_MAX - sizeof(struct rp_hdr) - sizeof(struct rp_admin_page))

/* One client session. Counters are of operations this client submitted. */
struct rp_admin_client {
	uint32_t id;
	int32_t pid;
	uint32_t uid;
	uint32_t gid;
	char comm[16];
	uint64_t registered_bytes;
	uint64_t ops;	 /* completed operations */
	uint64_t errors; /* of those, completed with an error */
	uint64_t bytes;	 /* moved by the successful ones */
	uint32_t regions;
	uint32_t exports;
	uint32_t endpoints;
	uint32_t inflight; /* completions promised and not yet posted */
};
_Static_assert(sizeof(struct rp_admin_client) == 80, "rp_admin_client");

/*
 * One (region, export) pair: a region with several exports has one record
 * per export, a region without exports one record with n_exports 0. The
 * cursor is client id << 32 | region id << 16 | export index.
 */
struct rp_admin_region {
	uint32_t client; /* owning session id */
	int32_t pid;
	uint32_t uid;
	uint32_t id; /* region id within its client */
	uint64_t len;
	uint32_t busy;	    /* operations holding the region */
	uint32_t n_exports; /* exports of this region */
	uint32_t access;    /* RP_ACCESS_* of export_name */
	uint32_t open_to; /* RP_OPEN_* of export_name: who besides its owner and root may open it */
	char comm[16];
	char export_name[RP_NAME_MAX]; /* "" when n_exports is 0 */
};
_Static_assert(sizeof(struct rp_admin_region) == 120, "rp_admin_region");
/*
 * Before protocol version 2 open_to was padding (0), and every export was
 * open to all. RP_OPEN_PEERS: peers the export names, or that the config
 * grants it to.
 */
#define RP_OPEN_USERS 0x1u     /* local users or groups the export names */
#define RP_OPEN_ANY_USER 0x2u  /* every local user */
#define RP_OPEN_PEERS 0x4u     /* some configured peers */
#define RP_OPEN_ALL_PEERS 0x8u /* every configured peer */

/*
 * One bound message endpoint; the cursor is client id << 32 | endpoint id.
 * open_to: RP_OPEN_* of who besides its owner and root may send to it (one
 * bound without a list: every user and every peer).
 */
struct rp_admin_endpoint {
	uint32_t client; /* owning session id */
	int32_t pid;
	uint32_t uid;
	uint32_t id;	 /* endpoint id within its client */
	uint32_t posted; /* receives posted and not yet filled */
	uint32_t open_to;
	char comm[16];
	char name[RP_NAME_MAX];
};
_Static_assert(sizeof(struct rp_admin_endpoint) == 104, "rp_admin_endpoint");

/* One configured peer. Counters are since the daemon started. */
struct rp_admin_peer {
	char name[RP_NAME_MAX];
	char address[128];	     /* HOST:PORT as configured */
	char state[16];		     /* "up", "connecting", "handshaking", "backoff", "down" */
	char transport[16];	     /* "tcp", "verbs", "none" */
	char direction[16];	     /* of an up link: "outbound" or "inbound"; else "" */
	char last_error[128];	     /* reason of the last failure, "" if none yet */
	int64_t since_ms;	     /* unix time (ms) of the last state change, 0: unknown */
	int64_t rtt_us;		     /* last keepalive round trip, -1: unknown */
	uint64_t incarnation;	     /* the peer's, from the last handshake; 0: never */
	uint64_t tx_bytes, rx_bytes; /* payload bytes sent to / received from it */
	uint64_t tx_ops, rx_ops;     /* operations initiated here / served for it */
	uint64_t errors;	     /* operations reported with an error, either way */
	uint64_t reconnects;	     /* times it came up again after the first */
};
_Static_assert(sizeof(struct rp_admin_peer) == 440, "rp_admin_peer");

/* RP_MSG_ADMIN_PING: one round trip through the peer channel to @peer. */
struct rp_admin_ping_req {
	char peer[RP_NAME_MAX];
	uint32_t seq;	/* echoed */
	uint32_t flags; /* none defined: must be 0 */
};
_Static_assert(sizeof(struct rp_admin_ping_req) == 72, "rp_admin_ping_req");

/* rtt_us: measured by the daemon on the peer channel; 0 for this node itself. */
struct rp_admin_ping_reply {
	uint64_t rtt_us;
	uint32_t seq;
	uint32_t pad;
};
_Static_assert(sizeof(struct rp_admin_ping_reply) == 16, "rp_admin_ping_reply");

/*
 * RP_MSG_ADMIN_RELOAD has no request body; every reply carries a struct
 * rp_admin_text. When the new configuration was taken (status 0), the
 * reply's rp_hdr.flags has one RP_RESTART_* bit for each setting that
 * changed but applies only when the daemon restarts, and the text names
 * them too (tools that predate the bits ignore a reply's flags).
 */
#define RP_RESTART_NODE_NAME 0x0001u	/* [daemon] node_name */
#define RP_RESTART_SOCKET 0x0002u	/* [daemon] socket */
#define RP_RESTART_SOCKET_MODE 0x0004u	/* [daemon] socket_mode */
#define RP_RESTART_SOCKET_GROUP 0x0008u /* [daemon] socket_group */
#define RP_RESTART_TRANSPORT 0x0010u	/* [daemon] transport */
#define RP_RESTART_LISTEN 0x0020u	/* [daemon] listen */
#define RP_RESTART_DEVICE 0x0040u	/* [verbs] device */
#define RP_RESTART_PORT 0x0080u		/* [verbs] port */
#define RP_RESTART_GID_INDEX 0x0100u	/* [verbs] gid_index */
#define RP_RESTART_CQ_DEPTH 0x0200u	/* [verbs] cq_depth */
#define RP_RESTART_SQ_DEPTH 0x0400u	/* [verbs] send_queue_depth */
#define RP_RESTART_RQ_DEPTH 0x0800u	/* [verbs] recv_queue_depth */
#define RP_RESTART_ACK_TIMEOUT 0x1000u	/* [verbs] ack_timeout */
#define RP_RESTART_RETRY_COUNT 0x2000u	/* [verbs] retry_count */
#define RP_RESTART_LOCAL_QPS 0x4000u	/* [verbs] local_queue_pairs */
#define RP_RESTART_INLINE_SIZE 0x8000u	/* [verbs] inline_size */
/*
 * Every bit of rp_hdr.flags is now taken: the next setting that applies
 * only at a restart needs its bit somewhere else (in the reply's body, with
 * a protocol version that says so); until then the reply's text names it.
 */
#define RP_RESTART_ALL 0xffffu
_Static_assert(RP_RESTART_ALL <= UINT16_MAX, "RP_RESTART_* must fit rp_hdr.flags");

/* The setting of one RP_RESTART_* bit as "section.key", or NULL for an unknown bit. */
static inline const char *rp_restart_setting(unsigned bit)
{
	switch (bit) {
	case RP_RESTART_NODE_NAME:
		return "daemon.node_name";
	case RP_RESTART_SOCKET:
		return "daemon.socket";
	case RP_RESTART_SOCKET_MODE:
		return "daemon.socket_mode";
	case RP_RESTART_SOCKET_GROUP:
		return "daemon.socket_group";
	case RP_RESTART_TRANSPORT:
		return "daemon.transport";
	case RP_RESTART_LISTEN:
		return "daemon.listen";
	case RP_RESTART_DEVICE:
		return "verbs.device";
	case RP_RESTART_PORT:
		return "verbs.port";
	case RP_RESTART_GID_INDEX:
		return "verbs.gid_index";
	case RP_RESTART_CQ_DEPTH:
		return "verbs.cq_depth";
	case RP_RESTART_SQ_DEPTH:
		return "verbs.send_queue_depth";
	case RP_RESTART_RQ_DEPTH:
		return "verbs.recv_queue_depth";
	case RP_RESTART_ACK_TIMEOUT:
		return "verbs.ack_timeout";
	case RP_RESTART_RETRY_COUNT:
		return "verbs.retry_count";
	case RP_RESTART_LOCAL_QPS:
		return "verbs.local_queue_pairs";
	case RP_RESTART_INLINE_SIZE:
		return "verbs.inline_size";
	default:
		return NULL;
	}
}

#endif
