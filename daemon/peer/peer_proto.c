/* SPDX-License-Identifier: MIT */
/*
 * Peer protocol checks: the length table and the per-type validation of
 * everything a peer sends, before any other code looks at it. Pure: no
 * sockets, no loop, so it is unit-tested and fuzzed as is.
 */
#include "peer/peer_proto.h"

#include <errno.h>
#include <string.h>

size_t pp_fixed_len(uint16_t type)
{
	switch (type) {
	case PP_HELLO:
		return sizeof(struct pp_hello);
	case PP_CHALLENGE:
		return sizeof(struct pp_challenge);
	case PP_AUTH:
		return sizeof(struct pp_auth);
	case PP_READY:
		return sizeof(struct pp_ready);
	case PP_REJECT:
		return sizeof(struct pp_reject);
	case PP_PING:
	case PP_PONG:
		return sizeof(struct pp_ping);
	case PP_LOOKUP:
		return sizeof(struct pp_lookup);
	case PP_LOOKUP_R:
		return sizeof(struct pp_lookup_r);
	case PP_NOTIFY:
		return sizeof(struct pp_notify);
	case PP_REVOKE:
	case PP_REVOKE_R:
		return sizeof(struct pp_revoke);
	case PP_NOTIFY_R:
	case PP_WRITE_R:
	case PP_SEND_R:
		return sizeof(struct pp_status);
	case PP_WRITE:
		return sizeof(struct pp_write);
	case PP_READ:
		return sizeof(struct pp_read);
	case PP_READ_R:
		return sizeof(struct pp_read_r);
	case PP_SEND:
		return sizeof(struct pp_send);
	default:
		return 0;
	}
}

bool pp_is_data(uint16_t type)
{
	return type >= PP_WRITE && type <= PP_SEND_R;
}

bool pp_name_ok(const char *name, size_t size)
{
	size_t i;

	for (i = 0; i < size && name[i]; i++)
		if (!(name[i] >= 'a' && name[i] <= 'z') && !(name[i] >= 'A' && name[i] <= 'Z') &&
		    !(name[i] >= '0' && name[i] <= '9') && name[i] != '.' && name[i] != '_' &&
		    name[i] != '-')
			return false;
	if (i == 0 || i == size)
		return false;
	for (; i < size; i++)
		if (name[i])
			return false;
	return true;
}

/* A printable, NUL-terminated reason with a zero tail (it ends up in logs). */
static bool reason_ok(const char *s, size_t size)
{
	size_t i;

	for (i = 0; i < size && s[i]; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	if (i == size)
		return false;
	for (; i < size; i++)
		if (s[i])
			return false;
	return true;
}

int pp_check_hdr(const struct pp_hdr *h, const char **why)
{
	size_t want = pp_fixed_len(h->type);

	if (!want) {
		*why = "unknown message type";
		return -EPROTO;
	}
	if (h->len != want) {
		*why = "wrong message length";
		return -EPROTO;
	}
	if (h->flags & ~(h->type == PP_WRITE ? PP_F_NOTIFY : 0u)) {
		*why = "unknown flags";
		return -EPROTO;
	}
	return 0;
}

#define FAIL(reason)             \
	do {                     \
		*why = (reason); \
		return -EPROTO;  \
	} while (0)

static int check_body(const void *msg, uint16_t type, const char **why)
{
	union {
		struct pp_hello hello;
		struct pp_challenge ch;
		struct pp_reject rej;
		struct pp_lookup lk;
		struct pp_lookup_r lr;
		struct pp_notify nt;
		struct pp_status st;
		struct pp_write wr;
		struct pp_read rd;
		struct pp_read_r rr;
		struct pp_send sd;
		struct pp_revoke rv;
	} u;

	memcpy(&u, msg, pp_fixed_len(type));
	switch (type) {
	case PP_HELLO:
		if (u.hello.magic != PP_MAGIC)
			FAIL("bad magic");
		if (u.hello.version_min > u.hello.version_max || !u.hello.incarnation)
			FAIL("bad version range or incarnation");
		if (!pp_name_ok(u.hello.name, sizeof(u.hello.name)))
			FAIL("invalid node name");
		return 0;
	case PP_CHALLENGE:
		if (u.ch.magic != PP_MAGIC || u.ch.pad || !u.ch.incarnation)
			FAIL("malformed challenge");
		if (!pp_name_ok(u.ch.name, sizeof(u.ch.name)))
			FAIL("invalid node name");
		return 0;
	case PP_REJECT:
		if (u.rej.pad || !reason_ok(u.rej.reason, sizeof(u.rej.reason)))
			FAIL("malformed reject");
		return 0;
	case PP_LOOKUP:
		if (!pp_name_ok(u.lk.name, sizeof(u.lk.name)))
			FAIL("invalid export name");
		return 0;
	case PP_LOOKUP_R:
		if (u.lr.pad || u.lr.xinfo_len > PP_XINFO_MAX || u.lr.status > 0 ||
		    (u.lr.status && (u.lr.export_id || u.lr.xinfo_len)))
			FAIL("malformed lookup reply");
		return 0;
	case PP_NOTIFY:
		if (u.nt.pad || u.nt.len > PP_PAYLOAD_MAX)
			FAIL("malformed notify");
		return 0;
	case PP_REVOKE:
	case PP_REVOKE_R:
		if (!u.rv.export_id || !u.rv.export_inc)
			FAIL("malformed revoke");
		return 0;
	case PP_NOTIFY_R:
	case PP_WRITE_R:
	case PP_SEND_R:
		if (u.st.pad || u.st.status > 0)
			FAIL("malformed status");
		return 0;
	case PP_WRITE:
		if (u.wr.pad || u.wr.len > PP_PAYLOAD_MAX)
			FAIL("malformed write");
		return 0;
	case PP_READ:
		if (u.rd.len > PP_PAYLOAD_MAX)
			FAIL("malformed read");
		return 0;
	case PP_READ_R:
		if (u.rr.pad || u.rr.status > 0 || u.rr.len > PP_PAYLOAD_MAX ||
		    (u.rr.status && u.rr.len))
			FAIL("malformed read reply");
		return 0;
	case PP_SEND:
		if (u.sd.len > PP_PAYLOAD_MAX || !pp_name_ok(u.sd.endpoint, sizeof(u.sd.endpoint)))
			FAIL("malformed send");
		return 0;
	default: /* AUTH, READY, PING, PONG: nothing beyond the length */
		return 0;
	}
}

int pp_check(const void *msg, size_t n, const char **why)
{
	struct pp_hdr h;
	int r;

	if (n < sizeof(h))
		FAIL("short message");
	memcpy(&h, msg, sizeof(h));
	r = pp_check_hdr(&h, why);
	if (r < 0)
		return r;
	if (n != h.len)
		FAIL("wrong message length");
	return check_body(msg, h.type, why);
}

uint64_t pp_payload_len(const void *msg)
{
	struct pp_hdr h;
	uint64_t len;

	memcpy(&h, msg, sizeof(h));
	switch (h.type) {
	case PP_WRITE:
		memcpy(&len, (const char *)msg + offsetof(struct pp_write, len), sizeof(len));
		return len;
	case PP_READ_R:
		memcpy(&len, (const char *)msg + offsetof(struct pp_read_r, len), sizeof(len));
		return len;
	case PP_SEND:
		memcpy(&len, (const char *)msg + offsetof(struct pp_send, len), sizeof(len));
		return len;
	default:
		return 0;
	}
}

void pp_hdr_init(struct pp_hdr *h, uint16_t type, uint64_t id)
{
	h->len = (uint32_t)pp_fixed_len(type);
	h->type = type;
	h->flags = 0;
	h->id = id;
}
