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
#define RP_PROTO_VERSION_MIN 1
#define RP_PROTO_VERSION_MAX 1
#define RP_PROTO_MSG_MAX 4096 /* largest packet either side sends */
#define RP_NAME_MAX 64	      /* node, peer, export and endpoint names, NUL included */

struct rp_hdr {
	uint32_t len;	/* the whole packet, header included */
	uint16_t type;	/* enum rp_msg_type, | RP_MSG_REPLY in replies */
	uint16_t flags; /* none defined: must be 0 */
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

	/* 0x03xx: remote handles */
	RP_MSG_REMOTE_OPEN = 0x0301,
	RP_MSG_REMOTE_CLOSE = 0x0302,

	/* 0x04xx: message endpoints */
	RP_MSG_EP_BIND = 0x0401,
	RP_MSG_EP_UNBIND = 0x0402,
	RP_MSG_DEST_OPEN = 0x0403, /* name a send destination once, send by id */

	/* 0x08xx: administration (rdmaproxyctl) */
	RP_MSG_STATUS = 0x0801,
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
 * the rings (rp-ring.h, ring_size bytes), the submission doorbell eventfd
 * (client writes) and the completion doorbell eventfd (daemon writes).
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

/* RP_MSG_REGION_REG: exactly one fd attached, a sealed shmem/hugetlbfs memfd of @len. */
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

/* RP_MSG_EXPORT; UNEXPORT uses the same body (access must be 0). */
struct rp_export_req {
	uint32_t region;
	uint32_t access; /* RP_ACCESS_* */
	char name[RP_NAME_MAX];
};
_Static_assert(sizeof(struct rp_export_req) == 72, "rp_export_req");

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

#endif
