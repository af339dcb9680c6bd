/* SPDX-License-Identifier: MIT */
/*
 * The daemon <-> daemon peer protocol: every message on a peer connection.
 *
 * Every message is a fixed part (struct pp_hdr + one body struct per type,
 * exactly pp_fixed_len(type) bytes, hdr.len says so) optionally followed by
 * a payload whose length is in the body (tcp data messages only). All
 * integers are little-endian on the wire; the daemon only builds on
 * little-endian hosts (asserted below), so the structs are the wire format.
 * Every struct has fixed-width fields, explicit padding that must be zero,
 * and a size assertion. Receivers check the length table, flags and padding
 * (pp_check) and disconnect the peer on anything malformed.
 *
 * Conversation:
 *   initiator                          responder
 *   HELLO(name, inc, nonce_i)    ->
 *                                <-    CHALLENGE(name, inc, nonce_r, mac_r)
 *   AUTH(mac_i)                  ->
 *                                <-    READY
 *   ... both authenticated: control (LOOKUP, PING, NOTIFY) and data ...
 *   REJECT(code, reason) may replace any handshake message; then close.
 *
 * mac_X = HMAC-SHA256(key, label_X || version || name_i || name_r || inc_i ||
 * inc_r || nonce_i || nonce_r), label "rdmaproxy peer v1 initiator" or
 * "... responder": each side proves the key over both fresh nonces, both
 * names and both incarnations, and one side's MAC is never valid as the
 * other's. Nothing but handshake messages is accepted before READY.
 *
 * Numbers are grouped; retired numbers stay listed as unused.
 */
#ifndef RP_DAEMON_PEER_PROTO_H
#define RP_DAEMON_PEER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp-proto.h" /* RP_NAME_MAX */

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "peer wire format is little-endian");

#define PP_MAGIC 0x52445050u /* "RDPP" */
#define PP_VERSION_MIN 2     /* 2: REVOKE / REVOKE_R */
#define PP_VERSION_MAX 2
#define PP_NONCE_LEN 32
#define PP_MAC_LEN 32
#define PP_REASON_LEN 120
#define PP_XINFO_MAX 32	 /* == PEER_XINFO_MAX */
#define PP_FIXED_MAX 512 /* == PEER_CTRL_MAX: no fixed part is larger */

struct pp_hdr {
	uint32_t len;	/* fixed part: header + body (payload not included) */
	uint16_t type;	/* enum pp_type */
	uint16_t flags; /* PP_F_*, per type; others must be 0 */
	uint64_t id;	/* request id, echoed by its reply; 0 when unused */
};
_Static_assert(sizeof(struct pp_hdr) == 16, "pp_hdr");

enum pp_type {
	/* 0x00xx: handshake */
	PP_HELLO = 0x0001,
	PP_CHALLENGE = 0x0002,
	PP_AUTH = 0x0003,
	PP_READY = 0x0004,
	PP_REJECT = 0x0005,

	/* 0x01xx: liveness */
	PP_PING = 0x0101,
	PP_PONG = 0x0102,

	/* 0x02xx: exports and notifications */
	PP_LOOKUP = 0x0201,
	PP_LOOKUP_R = 0x0202,
	PP_NOTIFY = 0x0203, /* after the last piece of a tcp WRITE that went in pieces */
	PP_NOTIFY_R = 0x0204,
	PP_REVOKE = 0x0205,   /* exporter: stop using this export, then answer */
	PP_REVOKE_R = 0x0206, /* importer: nothing of mine can touch it any more */

	/* 0x03xx: data (tcp transport; verbs uses one-sided ops instead) */
	PP_WRITE = 0x0301, /* + payload of len bytes */
	PP_WRITE_R = 0x0302,
	PP_READ = 0x0303,
	PP_READ_R = 0x0304, /* + payload of len bytes when status is 0 */
	PP_SEND = 0x0305,   /* + payload of len bytes */
	PP_SEND_R = 0x0306,
};

#define PP_F_NOTIFY 0x1u /* PP_WRITE */

/* Reject codes (both sides log them). */
enum pp_reject_code {
	PP_REJ_VERSION = 1,   /* no common protocol version */
	PP_REJ_UNKNOWN = 2,   /* the name is not a configured peer */
	PP_REJ_AUTH = 3,      /* MAC did not verify: wrong key */
	PP_REJ_NAME = 4,      /* the responder is not who the initiator dialled */
	PP_REJ_DUPLICATE = 5, /* a connection between the two already wins */
	PP_REJ_PROTO = 6,     /* malformed or unexpected message */
	PP_REJ_SHUTDOWN = 7,  /* going away / peer removed from config */
};

struct pp_hello {
	struct pp_hdr h;
	uint32_t magic;
	uint16_t version_min;
	uint16_t version_max;
	uint64_t incarnation;
	uint8_t nonce[PP_NONCE_LEN];
	char name[RP_NAME_MAX];
};
_Static_assert(sizeof(struct pp_hello) == 128, "pp_hello");

struct pp_challenge {
	struct pp_hdr h;
	uint32_t magic;
	uint16_t version; /* chosen */
	uint16_t pad;
	uint64_t incarnation;
	uint8_t nonce[PP_NONCE_LEN];
	char name[RP_NAME_MAX];
	uint8_t mac[PP_MAC_LEN];
};
_Static_assert(sizeof(struct pp_challenge) == 160, "pp_challenge");

struct pp_auth {
	struct pp_hdr h;
	uint8_t mac[PP_MAC_LEN];
};
_Static_assert(sizeof(struct pp_auth) == 48, "pp_auth");

struct pp_ready {
	struct pp_hdr h;
};

struct pp_reject {
	struct pp_hdr h;
	uint32_t code; /* enum pp_reject_code */
	uint32_t pad;
	char reason[PP_REASON_LEN]; /* NUL-terminated, printable */
};
_Static_assert(sizeof(struct pp_reject) == 144, "pp_reject");

struct pp_ping {
	struct pp_hdr h; /* id: the sender's sequence, echoed in PONG */
	uint64_t t_usec; /* sender's monotonic clock, echoed */
};
_Static_assert(sizeof(struct pp_ping) == 24, "pp_ping");

struct pp_lookup {
	struct pp_hdr h;
	char name[RP_NAME_MAX];
};
_Static_assert(sizeof(struct pp_lookup) == 80, "pp_lookup");

struct pp_lookup_r {
	struct pp_hdr h;
	int32_t status;
	uint32_t access;
	uint64_t export_id;
	uint64_t export_inc;
	uint64_t len;
	uint32_t xinfo_len;
	uint32_t pad;
	uint8_t xinfo[PP_XINFO_MAX];
};
_Static_assert(sizeof(struct pp_lookup_r) == 88, "pp_lookup_r");

struct pp_notify {
	struct pp_hdr h;
	uint64_t export_id;
	uint64_t export_inc;
	uint64_t off;
	uint64_t len;
	uint32_t imm;
	uint32_t pad;
};
_Static_assert(sizeof(struct pp_notify) == 56, "pp_notify");

/*
 * REVOKE and REVOKE_R. The exporter withdrew export_id (unexport, region
 * freed, client gone). The importer refuses every later op on its handles to
 * it (RP_EUNEXPORTED) and answers once nothing it posted before can still
 * reach the export; only then does the exporter drop the verbs MR, so a
 * withdrawal never makes an RC QP fail under the other clients of the link.
 */
struct pp_revoke {
	struct pp_hdr h;
	uint64_t export_id;
	uint64_t export_inc;
};
_Static_assert(sizeof(struct pp_revoke) == 32, "pp_revoke");

/* NOTIFY_R, WRITE_R, SEND_R */
struct pp_status {
	struct pp_hdr h;
	int32_t status;
	uint32_t pad;
};
_Static_assert(sizeof(struct pp_status) == 24, "pp_status");

struct pp_write {
	struct pp_hdr h; /* flags: PP_F_NOTIFY */
	uint64_t export_id;
	uint64_t export_inc;
	uint64_t off;
	uint64_t len; /* payload bytes that follow, <= UINT32_MAX */
	uint32_t imm;
	uint32_t pad;
};
_Static_assert(sizeof(struct pp_write) == 56, "pp_write");

struct pp_read {
	struct pp_hdr h;
	uint64_t export_id;
	uint64_t export_inc;
	uint64_t off;
	uint64_t len;
};
_Static_assert(sizeof(struct pp_read) == 48, "pp_read");

struct pp_read_r {
	struct pp_hdr h;
	int32_t status;
	uint32_t pad;
	uint64_t len; /* payload that follows: the requested len if status is 0, else 0 */
};
_Static_assert(sizeof(struct pp_read_r) == 32, "pp_read_r");

struct pp_send {
	struct pp_hdr h;
	uint64_t len; /* payload bytes that follow, <= UINT32_MAX */
	char endpoint[RP_NAME_MAX];
};
_Static_assert(sizeof(struct pp_send) == 88, "pp_send");

/* Largest payload a data message may announce. */
#define PP_PAYLOAD_MAX UINT32_MAX

/* The fixed length of @type, or 0 for an unknown type. */
size_t pp_fixed_len(uint16_t type);
/* Is @type one handled by the tcp data path (WRITE.._R)? */
bool pp_is_data(uint16_t type);
/*
 * Check a complete fixed part of @n bytes (n == hdr.len == pp_fixed_len):
 * known type, flags, zero padding, NUL-terminated valid names, payload
 * length limits. 0, or -EPROTO with a static reason in *why.
 */
int pp_check(const void *msg, size_t n, const char **why);
/* Check just a header (first 16 bytes) before the rest is read. Same returns. */
int pp_check_hdr(const struct pp_hdr *h, const char **why);
/* The payload length announced by a checked fixed part (0 for most types). */
uint64_t pp_payload_len(const void *msg);
/* Fill a header for @type (len from the table). */
void pp_hdr_init(struct pp_hdr *h, uint16_t type, uint64_t id);
/* 1..RP_NAME_MAX-1 chars of [A-Za-z0-9._-], NUL, zero tail. */
bool pp_name_ok(const char *name, size_t size);

#endif
