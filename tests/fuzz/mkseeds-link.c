/* SPDX-License-Identifier: MIT */
/*
 * Writes the seed corpora of fuzz-link and fuzz-admin (formats in
 * fuzz-link.h) into DIR/link and DIR/admin: every peer message type, on a
 * link that is authenticated and on one that is not, through the tcp stream
 * and the way the verbs transport hands them over, the replies to each of
 * our requests, and every administration request with its refusals.
 *
 *   mkseeds-link DIR        (tests/fuzz/corpus)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/peer/peer_proto.h"
#include "fuzz-link.h"

/* The bench's constants (peer-bench.h, which needs the whole daemon). */
#define PB_RAW_IN 0
#define PB_UP_IN 1
#define PB_UP_OUT 2
#define PB_RAW_OUT 3
#define PB_F_LOOKED_UP 0x1u
#define PB_F_REMOTE 0x2u
#define PB_F_ROOT 0x4u
#define PB_F_ADMIN_GID 0x8u
#define PB_F_GID 0x10u
#define PB_INC 0x1111111111111111ull
#define PB_FAR_INC 0x2222222222222222ull
#define PB_FAR_EXPORT 7

struct seed {
	uint8_t b[65536];
	size_t n;
};

static struct seed sd;
static const char *dir;

static void put(const void *p, size_t n)
{
	if (!n)
		return;
	if (sd.n + n > sizeof(sd.b))
		abort();
	memcpy(sd.b + sd.n, p, n);
	sd.n += n;
}

static void u8(unsigned v)
{
	uint8_t b = (uint8_t)v;

	put(&b, 1);
}

static void u16(unsigned v)
{
	u8(v & 0xff);
	u8(v >> 8);
}

static void begin(unsigned mode, unsigned flags)
{
	sd.n = 0;
	u8(mode | flags << FL_SETUP_FLAGS_SHIFT);
}

static void save(const char *sub, const char *name)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	f = fopen(path, "wb");
	if (!f || fwrite(sd.b, 1, sd.n, f) != sd.n || fclose(f)) {
		fprintf(stderr, "mkseeds-link: %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

/* ---- Records. ---- */

static void cmd(unsigned c)
{
	u8(c);
}

/* A message (and its payload) from the far side, read in reads of @chunk bytes. */
static void bytes(const void *msg, size_t len, unsigned chunk)
{
	u8(FL_BYTES);
	u16((unsigned)len);
	u8(chunk);
	put(msg, len);
}

static void ctrl(const void *msg, size_t len)
{
	u8(FL_CTRL);
	u16((unsigned)len);
	put(msg, len);
}

static void op(unsigned kind, unsigned off, unsigned len)
{
	u8(FL_OP);
	u8(kind);
	u8(off);
	u16(len);
}

/* ---- Peer messages. ---- */

static void name(char *dst, const char *src)
{
	memset(dst, 0, RP_NAME_MAX);
	memcpy(dst, src, strlen(src));
}

static void hello(const char *who, unsigned vmin, unsigned vmax)
{
	struct pp_hello m;

	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, PP_HELLO, 0);
	m.magic = PP_MAGIC;
	m.version_min = (uint16_t)vmin;
	m.version_max = (uint16_t)vmax;
	m.incarnation = PB_FAR_INC;
	memset(m.nonce, 0x42, sizeof(m.nonce));
	name(m.name, who);
	bytes(&m, sizeof(m), 0);
}

static void simple(uint16_t type, uint64_t id)
{
	struct pp_hdr h;

	pp_hdr_init(&h, type, id);
	bytes(&h, sizeof(h), 0);
}

static void auth(void)
{
	struct pp_auth m;

	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, PP_AUTH, 0);
	memset(m.mac, 0x17, sizeof(m.mac));
	bytes(&m, sizeof(m), 0);
}

static void challenge(void)
{
	struct pp_challenge m;

	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, PP_CHALLENGE, 0);
	m.magic = PP_MAGIC;
	m.version = PP_VERSION_MAX;
	m.incarnation = PB_FAR_INC;
	memset(m.nonce, 0x33, sizeof(m.nonce));
	name(m.name, "nodeB");
	memset(m.mac, 0x99, sizeof(m.mac));
	bytes(&m, sizeof(m), 0);
}

static void reject(unsigned code, const char *why)
{
	struct pp_reject m;

	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, PP_REJECT, 0);
	m.code = code;
	snprintf(m.reason, sizeof(m.reason), "%s", why);
	bytes(&m, sizeof(m), 0);
}

static void ping(uint16_t type, uint64_t id)
{
	struct pp_ping m;

	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, type, id);
	m.t_usec = 12345;
	bytes(&m, sizeof(m), 0);
}

static void lookup(uint64_t id, const char *what, bool verbs)
{
	struct pp_lookup m;

	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, PP_LOOKUP, id);
	memcpy(m.name, what, strlen(what)); /* may be invalid on purpose */
	if (verbs)
		ctrl(&m, sizeof(m));
	else
		bytes(&m, sizeof(m), 0);
}

static void lookup_r(uint64_t id, int status, uint64_t inc, uint64_t len, uint32_t access)
{
	struct pp_lookup_r m;

	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, PP_LOOKUP_R, id);
	m.status = status;
	if (!status) {
		m.export_id = PB_FAR_EXPORT;
		m.export_inc = inc;
		m.len = len;
		m.access = access;
	}
	bytes(&m, sizeof(m), 0);
}

static void revoke(uint16_t type, uint64_t export_id, uint64_t inc, bool verbs)
{
	struct pp_revoke m;

	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, type, 0);
	m.export_id = export_id;
	m.export_inc = inc;
	if (verbs)
		ctrl(&m, sizeof(m));
	else
		bytes(&m, sizeof(m), 0);
}

static void notify(uint64_t id, uint64_t export_id, uint64_t inc, uint64_t off, uint64_t len)
{
	struct pp_notify m;

	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, PP_NOTIFY, id);
	m.export_id = export_id;
	m.export_inc = inc;
	m.off = off;
	m.len = len;
	m.imm = 0xbeef;
	bytes(&m, sizeof(m), 0);
}

static void status_msg(uint16_t type, uint64_t id, int status)
{
	struct pp_status m;

	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, type, id);
	m.status = status;
	bytes(&m, sizeof(m), 0);
}

/* A WRITE (notify: with PP_F_NOTIFY) and its payload, read in @chunk-byte reads. */
static void write_msg(uint64_t id, uint64_t export_id, uint64_t inc, uint64_t off, uint64_t len,
		      bool notify_it, unsigned chunk)
{
	struct {
		struct pp_write m;
		uint8_t payload[16384];
	} w;

	memset(&w, 0, sizeof(w.m));
	pp_hdr_init(&w.m.h, PP_WRITE, id);
	w.m.h.flags = notify_it ? PP_F_NOTIFY : 0;
	w.m.export_id = export_id;
	w.m.export_inc = inc;
	w.m.off = off;
	w.m.len = len;
	w.m.imm = 7;
	if (len > sizeof(w.payload))
		len = 0; /* announced, never sent: the input ends inside the payload */
	memset(w.payload, 0x5a, len);
	bytes(&w, sizeof(w.m) + len, chunk);
}

static void read_msg(uint64_t id, uint64_t export_id, uint64_t inc, uint64_t off, uint64_t len)
{
	struct pp_read m;

	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, PP_READ, id);
	m.export_id = export_id;
	m.export_inc = inc;
	m.off = off;
	m.len = len;
	bytes(&m, sizeof(m), 0);
}

static void read_r(uint64_t id, int status, uint64_t len, unsigned chunk)
{
	struct {
		struct pp_read_r m;
		uint8_t payload[16384];
	} r;

	memset(&r, 0, sizeof(r.m));
	pp_hdr_init(&r.m.h, PP_READ_R, id);
	r.m.status = status;
	r.m.len = len;
	memset(r.payload, 0x3c, len);
	bytes(&r, sizeof(r.m) + len, chunk);
}

static void send_msg(uint64_t id, const char *ep, uint64_t len, unsigned chunk)
{
	struct {
		struct pp_send m;
		uint8_t payload[8192];
	} s;

	memset(&s, 0, sizeof(s.m));
	pp_hdr_init(&s.m.h, PP_SEND, id);
	s.m.len = len;
	name(s.m.endpoint, ep);
	memset(s.payload, 0x61, len);
	bytes(&s, sizeof(s.m) + len, chunk);
}

/* ---- fuzz-link seeds. ---- */

#define UP PB_UP_IN
#define LOOKED PB_F_LOOKED_UP
#define REMOTE PB_F_REMOTE
#define RW (RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE)

static void link_seeds(void)
{
	uint8_t junk[40];
	int i;

	/* Before authentication: the handshake from its first message, and what it refuses. */
	begin(PB_RAW_IN, 0);
	hello("nodeX", 2, 2);
	save("link", "raw-hello-unknown");
	begin(PB_RAW_IN, 0);
	hello("nodeB", 1, 1);
	save("link", "raw-hello-version");
	begin(PB_RAW_IN, 0);
	hello("nodeB", 2, 2);
	auth();
	cmd(FL_TICK);
	save("link", "raw-hello-wrong-mac");
	begin(PB_RAW_IN, 0);
	write_msg(1, 1, PB_INC, 0, 16, false, 0);
	read_msg(2, 1, PB_INC, 0, 16);
	save("link", "raw-data-before-auth");
	begin(PB_RAW_IN, 0);
	simple(PP_READY, 0);
	ping(PP_PING, 1);
	save("link", "raw-out-of-order");
	begin(PB_RAW_IN, 0);
	memset(junk, 0xff, sizeof(junk));
	bytes(junk, sizeof(junk), 3);
	save("link", "raw-garbage");
	begin(PB_RAW_IN, 0);
	reject(PP_REJ_SHUTDOWN, "going away");
	save("link", "raw-reject");
	/* Admission: connections from one address beyond the cap, failed handshakes. */
	begin(PB_RAW_IN, 0);
	for (i = 0; i < 4; i++) {
		cmd(FL_ACCEPT);
		u8(0);
		hello("nodeB", 2, 2);
		auth();
		cmd(FL_TURN);
	}
	cmd(FL_ACCEPT);
	u8(4);
	cmd(FL_HANDSHAKE);
	save("link", "raw-gate");
	/* Our own connection: the input answers our HELLO. */
	begin(PB_RAW_OUT, 0);
	challenge();
	save("link", "raw-out-challenge");
	begin(PB_RAW_OUT, 0);
	reject(PP_REJ_AUTH, "wrong key");
	cmd(FL_TICK);
	cmd(FL_CONNECT);
	cmd(FL_HANDSHAKE);
	save("link", "raw-out-rejected-redial");

	/* Authenticated: liveness and the handshake messages that no longer belong. */
	begin(UP, 0);
	ping(PP_PING, 5);
	ping(PP_PONG, 99);
	cmd(FL_PING);
	cmd(FL_ANSWER);
	cmd(FL_TICK);
	cmd(FL_ANSWER);
	save("link", "up-ping-pong");
	begin(UP, 0);
	hello("nodeB", 2, 2);
	save("link", "up-hello-again");
	begin(PB_UP_OUT, 0);
	reject(PP_REJ_SHUTDOWN, "bye");
	cmd(FL_TICK);
	save("link", "up-reject");
	begin(UP, 0);
	status_msg(PP_NOTIFY_R, 3, 0);
	simple(0x0999, 0);
	save("link", "up-unknown-type");

	/* LOOKUP of our exports, and the replies to ours. */
	begin(UP, 0);
	lookup(1, "a.rw", false);
	lookup(2, "a.ro", false);
	lookup(3, "nothere", false);
	lookup(4, "a.priv", false);
	lookup(5, "bad name!", false);
	save("link", "up-lookup");
	begin(UP, 0);
	cmd(FL_OPEN);
	u8(0);
	cmd(FL_OPEN);
	u8(1);
	lookup_r(1, 0, PB_FAR_INC, 65536, RW);
	lookup_r(2, -RP_ENOEXPORT, 0, 0, 0);
	lookup_r(9, 0, PB_FAR_INC, 4096, RW);
	save("link", "up-lookup-reply");
	begin(UP, 0);
	cmd(FL_OPEN);
	u8(0);
	lookup_r(1, 0, 0x3333, 4096, RW);
	save("link", "up-lookup-reply-stale");
	begin(UP, 0);
	cmd(FL_OPEN);
	u8(0);
	cmd(FL_BREAK);
	cmd(FL_TURN);
	save("link", "up-lookup-link-lost");

	/* Data requests into our exports and endpoint. */
	begin(UP, LOOKED);
	write_msg(1, 1, PB_INC, 0, 100, false, 0);
	write_msg(2, 1, PB_INC, 64, 12000, false, 0); /* beyond the staging buffer */
	write_msg(3, 1, PB_INC, 16380, 8, false, 0);  /* out of bounds: discarded */
	write_msg(4, 2, PB_INC, 0, 8, false, 0);      /* read-only */
	write_msg(5, 1, 0x4444, 0, 8, false, 0);      /* another incarnation */
	write_msg(6, 77, PB_INC, 0, 8, false, 0);     /* no such export */
	write_msg(7, 1, PB_INC, 0, 0, false, 0);      /* empty */
	save("link", "up-write");
	begin(UP, LOOKED);
	write_msg(1, 1, PB_INC, 8, 300, true, 7);
	cmd(FL_REAP);
	save("link", "up-write-notify-chunks");
	begin(UP, LOOKED);
	write_msg(1, 1, PB_INC, 0, 1u << 20, false, 0); /* the input ends in the payload */
	save("link", "up-write-cut");
	begin(UP, LOOKED);
	read_msg(1, 1, PB_INC, 0, 512);
	read_msg(2, 2, PB_INC, 0, 4096);
	read_msg(3, 2, PB_INC, 1, 4096);
	read_msg(4, 1, PB_INC, 0, 0);
	cmd(FL_TURN);
	read_msg(5, 1, PB_INC, 0, 64);
	cmd(FL_BREAK);
	cmd(FL_TURN);
	save("link", "up-read");
	begin(UP, 0);
	send_msg(1, "a.ep", 100, 0);
	send_msg(2, "a.ep", 3000, 0); /* larger than the receive */
	send_msg(3, "nobody", 10, 0);
	send_msg(4, "a.ep", 0, 0);
	send_msg(5, "a.ep", 20, 1);
	cmd(FL_RECV);
	send_msg(6, "a.ep", 2048, 0);
	cmd(FL_REAP);
	save("link", "up-send");
	begin(UP, LOOKED);
	notify(1, 1, PB_INC, 0, 16);
	notify(2, 1, PB_FAR_INC, 0, 16);
	notify(3, 2, PB_INC, 0, 16);
	cmd(FL_REAP);
	save("link", "up-notify");

	/* Our requests (the client's ops) and their replies. */
	begin(UP, REMOTE);
	op(0, 0, 100);
	op(1, 1, 200);
	op(2, 2, 50);
	op(3, 0, 8);
	status_msg(PP_WRITE_R, 1, 0);
	read_r(2, 0, 200, 0);
	status_msg(PP_SEND_R, 3, -RP_ENORECV);
	status_msg(PP_WRITE_R, 4, 0);
	cmd(FL_REAP);
	save("link", "up-op-replies");
	begin(UP, REMOTE);
	op(1, 0, 16000);
	read_r(1, 0, 16000, 0);
	op(1, 0, 64);
	read_r(2, 0, 32, 0); /* the wrong length */
	cmd(FL_TURN);
	cmd(FL_REAP);
	save("link", "up-read-reply");
	begin(UP, REMOTE);
	op(0, 0, 10);
	op(1, 0, 10);
	status_msg(PP_WRITE_R, 2, 0); /* out of order */
	cmd(FL_TURN);
	cmd(FL_REAP);
	save("link", "up-reply-mismatch");
	begin(UP, REMOTE);
	op(0, 0, 100);
	op(2, 0, 100);
	cmd(FL_ANSWER);
	op(0, 255, 65535); /* beyond the export: refused before it leaves */
	cmd(FL_REAP);
	save("link", "up-op-answered");
	begin(PB_UP_OUT, REMOTE);
	op(0, 0, 100);
	op(1, 0, 100);
	cmd(FL_BREAK);
	cmd(FL_TURN);
	cmd(FL_TICK);
	cmd(FL_CONNECT);
	cmd(FL_HANDSHAKE);
	op(0, 0, 10);
	cmd(FL_ANSWER);
	cmd(FL_REAP);
	save("link", "up-out-link-lost-reconnect");

	/* What the peer layer refuses before an op leaves, from what LOOKUP said. */
	begin(UP, REMOTE);
	cmd(FL_OPEN);
	u8(0);
	lookup_r(2, 0, PB_FAR_INC, 100, RP_ACCESS_REMOTE_READ);
	op(0 | 8, 0, 10);  /* handle 2 is read-only */
	op(1 | 8, 1, 200); /* beyond its 100 bytes */
	op(0, 0, 10);
	status_msg(PP_WRITE_R, 1, -RP_EUNEXPORTED);
	op(0, 0, 10); /* withdrawn since */
	op(1 | 16, 255, 10);
	cmd(FL_REAP);
	save("link", "up-op-refused");
	/* The far daemon restarts: handles of its old incarnation are stale. */
	begin(UP, REMOTE);
	op(0, 0, 10);
	cmd(FL_RESTART);
	cmd(FL_TURN);
	cmd(FL_ACCEPT);
	u8(0);
	cmd(FL_HANDSHAKE);
	op(0, 0, 10);
	cmd(FL_OPEN);
	u8(0);
	cmd(FL_ANSWER);
	cmd(FL_REAP);
	save("link", "up-far-restart");
	/* Our own connection authenticating: new ops wait for it, then go out on it. */
	begin(PB_RAW_OUT, 0);
	cmd(FL_HS_STEP);
	cmd(FL_HS_STEP);
	op(2, 0, 10);
	cmd(FL_HS_STEP);
	cmd(FL_ANSWER);
	cmd(FL_REAP);
	save("link", "out-settling");
	begin(PB_RAW_OUT, 0);
	cmd(FL_HS_STEP);
	cmd(FL_HS_STEP);
	op(2, 0, 10);
	cmd(FL_ACCEPT);
	u8(0);
	cmd(FL_HANDSHAKE);
	cmd(FL_BREAK);
	cmd(FL_TICK);
	save("link", "out-settling-duplicate");
	/* Reloaded onto a transport the daemon has not: the peer cannot come back. */
	begin(UP, 0);
	cmd(FL_RELOAD);
	u8(3);
	cmd(FL_ACCEPT);
	u8(0);
	cmd(FL_HANDSHAKE);
	cmd(FL_TICK);
	save("link", "reload-other-transport");

	/* Withdrawals, both ways. */
	begin(UP, REMOTE);
	revoke(PP_REVOKE, PB_FAR_EXPORT, PB_FAR_INC, false);
	revoke(PP_REVOKE, PB_FAR_EXPORT, 0x5555, false);
	op(0, 0, 10);
	cmd(FL_REAP);
	save("link", "up-revoke");
	begin(UP, LOOKED);
	cmd(FL_WITHDRAW);
	u8(0);
	cmd(FL_WITHDRAW);
	u8(2);
	revoke(PP_REVOKE_R, 1, PB_INC, false);
	revoke(PP_REVOKE_R, 1, PB_INC, false);
	cmd(FL_TICK);
	save("link", "up-revoke-reply");
	begin(UP, LOOKED);
	cmd(FL_WITHDRAW);
	u8(1);
	cmd(FL_ANSWER);
	cmd(FL_BREAK);
	cmd(FL_TURN);
	save("link", "up-withdraw-answered");

	/* The verbs transport's up-calls. */
	begin(UP, LOOKED);
	lookup(5, "a.rw", true);
	revoke(PP_REVOKE, PB_FAR_EXPORT, PB_FAR_INC, true);
	ctrl(junk, 5);
	save("link", "verbs-ctrl");
	begin(UP, LOOKED);
	{
		struct pp_write w;

		memset(&w, 0, sizeof(w));
		pp_hdr_init(&w.h, PP_WRITE, 1);
		w.export_id = 1;
		w.export_inc = PB_INC;
		ctrl(&w, sizeof(w)); /* data has no place among control messages */
	}
	save("link", "verbs-ctrl-data");
	begin(UP, LOOKED);
	cmd(FL_NOTIFY);
	u8(1);
	u16(0);
	u16(16);
	u8(9);
	cmd(FL_NOTIFY);
	u8(2);
	u16(4090);
	u16(16);
	u8(9);
	cmd(FL_REAP);
	save("link", "verbs-notify");
	begin(UP, 0);
	cmd(FL_VSEND);
	u8(0);
	u16(100);
	u8(0x11);
	u8(0);
	cmd(FL_VSEND);
	u8(0);
	u16(10);
	u8(0x22);
	u8(1);
	cmd(FL_VSEND);
	u8(1);
	u16(10);
	u8(0);
	u8(0);
	cmd(FL_REAP);
	save("link", "verbs-send");

	/* The peer layer around the link: reload, the client leaving, a second link. */
	begin(UP, LOOKED | REMOTE);
	op(0, 0, 10);
	cmd(FL_RELOAD);
	u8(1);
	cmd(FL_ANSWER);
	cmd(FL_TICK);
	cmd(FL_RELOAD);
	u8(0);
	save("link", "up-reload-remove");
	begin(UP, REMOTE);
	cmd(FL_RELOAD);
	u8(2);
	cmd(FL_TICK);
	save("link", "up-reload-key");
	begin(UP, REMOTE);
	op(0, 0, 10);
	op(1, 0, 10);
	cmd(FL_CLIENT_CLOSE);
	cmd(FL_ANSWER);
	save("link", "up-client-gone");
	begin(UP, REMOTE);
	op(0, 0, 10);
	cmd(FL_ACCEPT);
	u8(0);
	cmd(FL_HANDSHAKE);
	op(0, 0, 10);
	cmd(FL_ANSWER);
	cmd(FL_TURN);
	cmd(FL_REAP);
	save("link", "up-in-again");
	begin(PB_UP_OUT, REMOTE);
	cmd(FL_ACCEPT);
	u8(0);
	cmd(FL_HANDSHAKE);
	cmd(FL_BREAK);
	cmd(FL_TICK);
	save("link", "up-out-duplicate");
}

/* ---- fuzz-admin seeds. ---- */

static void req(unsigned type_idx, uint64_t cursor, unsigned s)
{
	int i;

	u8(FA_REQ);
	u8(type_idx);
	for (i = 0; i < 8; i++)
		u8((unsigned)(cursor >> (8 * i)) & 0xff);
	u8(s);
}

/* A raw request packet: header (len set by the target) and @body. */
static void pkt(unsigned ctl, uint16_t type, uint16_t flags, const void *body, size_t len)
{
	struct rp_hdr h = { .type = type, .flags = flags, .seq = 77 };

	h.len = (uint32_t)(sizeof(h) + len);
	u8(FA_PKT);
	u8(ctl | FA_PKT_FIXLEN);
	u16((unsigned)(sizeof(h) + len));
	put(&h, sizeof(h));
	put(body, len);
}

static void admin_seeds(void)
{
	struct rp_admin_page_req pr = { 0 };
	struct rp_admin_ping_req ping_req;
	int i;

	begin(UP, 0);
	req(FA_STATUS, 0, 1);
	req(FA_CLIENTS, 0, 2);
	req(FA_REGIONS, 0, 3);
	req(FA_PEERS, 0, 4);
	req(FA_ENDPOINTS, 0, 5);
	save("admin", "lists");
	begin(UP, LOOKED);
	u8(FA_SESSION);
	u8(FA_SESSION);
	req(FA_CLIENTS, 2, 1);
	req(FA_REGIONS, (uint64_t)1 << 32 | 1 << 16, 2);
	req(FA_REGIONS, ~0ull, 3);
	req(FA_PEERS, 1, 4);
	req(FA_PEERS, 2, 5);
	save("admin", "cursors");
	begin(UP, REMOTE);
	req(FA_METRICS, 0, 1);
	for (i = 0; i < 8; i++)
		u8(FA_NEXT);
	save("admin", "metrics-pages");
	begin(PB_RAW_IN, 0);
	req(FA_METRICS, 100, 1); /* no snapshot yet */
	req(FA_METRICS, 0, 2);
	req(FA_METRICS, 1u << 30, 3); /* beyond it */
	save("admin", "metrics-cursor");
	begin(UP, 0);
	req(FA_PING, 0, 1);
	req(FA_PING, 0, 2); /* still in flight */
	cmd(FL_ANSWER);
	req(FA_PING, 1, 3); /* this node */
	req(FA_PING, 2, 4); /* nobody */
	req(FA_PING, 0, 5);
	cmd(FL_BREAK);
	cmd(FL_TURN);
	req(FA_PING, 0, 6); /* down */
	save("admin", "ping");
	begin(UP, 0);
	req(FA_PING, 0, 1);
	cmd(FL_CLIENT_CLOSE);
	cmd(FL_ANSWER);
	save("admin", "ping-client-gone");
	begin(PB_RAW_IN, 0);
	req(FA_PING, 0, 1);
	save("admin", "ping-not-up");
	begin(UP, PB_F_ROOT);
	req(FA_RELOAD, 0, 1);
	req(FA_PEERS, 0, 2);
	cmd(FL_TICK);
	req(FA_RELOAD, 0, 3);
	req(FA_RELOAD, 0, 4);
	req(FA_STATUS, 0, 5);
	save("admin", "reload-root");
	begin(UP, PB_F_ADMIN_GID | PB_F_GID);
	req(FA_RELOAD, 0, 1);
	save("admin", "reload-admin-group");
	begin(UP, 0);
	req(FA_RELOAD, 0, 1);
	save("admin", "reload-refused");
	begin(UP, PB_F_ADMIN_GID);
	req(FA_RELOAD, 0, 1);
	save("admin", "reload-refused-group");

	/* Malformed: the glue disconnects. */
	begin(UP, 0);
	pr.flags = 1;
	pkt(0, RP_MSG_ADMIN_CLIENTS, 0, &pr, sizeof(pr));
	save("admin", "page-flags");
	begin(UP, 0);
	pr.flags = 0;
	pr.pad = 1;
	pkt(0, RP_MSG_ADMIN_PEERS, 0, &pr, sizeof(pr));
	save("admin", "page-pad");
	begin(UP, 0);
	memset(&ping_req, 0, sizeof(ping_req));
	memset(ping_req.peer, 'x', sizeof(ping_req.peer));
	pkt(0, RP_MSG_ADMIN_PING, 0, &ping_req, sizeof(ping_req));
	memset(&ping_req, 0, sizeof(ping_req));
	name(ping_req.peer, "nodeB");
	ping_req.flags = 2;
	pkt(0, RP_MSG_ADMIN_PING, 0, &ping_req, sizeof(ping_req));
	save("admin", "ping-malformed");
	begin(UP, 0);
	pkt(0, 0x0809, 0, &pr, sizeof(pr));
	save("admin", "unknown-type");
	begin(UP, 0);
	pkt(0, RP_MSG_STATUS, 1, NULL, 0);
	save("admin", "header-flags");
	begin(UP, 0);
	pkt(0, RP_MSG_ADMIN_RELOAD, 0, &pr, 4);
	save("admin", "body-length");
	begin(UP, 0);
	pkt(FA_PKT_SECOND, RP_MSG_STATUS, 0, NULL, 0);
	save("admin", "before-hello");
	begin(UP, 0);
	pr.pad = 0;
	pkt(FA_PKT_SECOND, RP_MSG_ADMIN_METRICS, 0, &pr, sizeof(pr));
	req(FA_METRICS, 0, 1);
	save("admin", "metrics-before-hello");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds-link DIR\n");
		return 2;
	}
	dir = argv[1];
	link_seeds();
	admin_seeds();
	return 0;
}
