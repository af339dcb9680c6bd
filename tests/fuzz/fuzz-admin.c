/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for administration requests (rdmaproxyctl's protocol):
 * packets of a client go through ctl_validate() and admin_route(), the two
 * steps the glue (clients.c) takes for every packet, into admin.c and
 * admin_metrics.c: STATUS, the paged lists of clients, regions and peers,
 * the paged metrics snapshot, PING through the peer channel and RELOAD with
 * its authorization rules. Behind them run the real client core and the real
 * peer layer on the peer bench (peer-bench.h), so that the lists have
 * something in them and a ping has a link to go over; the input moves that
 * state with the records of fuzz-link.h between its requests.
 *
 * The client is root, an admin by group, or neither (setup byte); a second
 * client that never sent HELLO sends what the input says too. A packet the
 * glue would disconnect for ends that client's session, as the glue does.
 *
 * Checked, besides "no crash, no leak": every reply answers a request (type
 * with the reply bit, status <= 0), a reply to a request made now carries
 * its seq, and a successful reply has the body its type defines: a page
 * header with whole records that fit one packet, a status record, a ping
 * reply, a reason text that is NUL-terminated. At the end everything is
 * torn down as the manager does it and the core is empty.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/base/log.h"
#include "fuzz-link.h"
#include "peer-bench.h"

#define FUZZ_MAX_INPUT 65536

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define check(cond)                                                                \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                   \
		}                                                                  \
	} while (0)

static struct pb pb;
static struct th_session *second;    /* the client without HELLO, made on first use */
static struct th_session *others[4]; /* more clients (FA_SESSION), connected till the end */
static unsigned n_others;
static uint16_t last_list; /* type of the last page reply that had a next page */
static uint64_t last_next;
static uint32_t seq;

/* Size of one record of a list reply (METRICS: bytes), 0 if @type has no pages. */
static size_t record_size(uint16_t type)
{
	switch (type) {
	case RP_MSG_ADMIN_CLIENTS:
		return sizeof(struct rp_admin_client);
	case RP_MSG_ADMIN_REGIONS:
		return sizeof(struct rp_admin_region);
	case RP_MSG_ADMIN_PEERS:
		return sizeof(struct rp_admin_peer);
	case RP_MSG_ADMIN_ENDPOINTS:
		return sizeof(struct rp_admin_endpoint);
	case RP_MSG_ADMIN_METRICS:
		return 1;
	default:
		return 0;
	}
}

static void check_page(uint16_t type, const char *body, size_t len)
{
	size_t rec = record_size(type);
	struct rp_admin_page pg;

	check(len >= sizeof(pg));
	memcpy(&pg, body, sizeof(pg));
	check(len == sizeof(pg) + pg.count * rec);
	check(len <= sizeof(pg) + RP_ADMIN_PAGE_MAX);
	check(type != RP_MSG_ADMIN_METRICS || pg.count <= pg.total);
	if (pg.next) {
		last_list = type;
		last_next = pg.next;
	} else if (last_list == type) {
		last_list = 0;
	}
}

/* The last reply of @ts, well-formed for its type. */
static void check_reply(const struct th_session *ts)
{
	const struct rp_hdr *h = th_reply(ts);
	const char *body = th_reply_body(ts);
	size_t len = ts->reply_len - sizeof(*h);
	uint16_t type = h->type & ~RP_MSG_REPLY;

	if (pb_trace)
		fprintf(stderr, "  reply 0x%04x seq %u status %d: %.*s\n", type, h->seq, h->status,
			h->status < 0 && ts->reply_len > sizeof(*h)
				? (int)(ts->reply_len - sizeof(*h))
				: 0,
			body);
	check(ts->reply_len >= sizeof(*h) && h->len == ts->reply_len);
	check((h->type & RP_MSG_REPLY) && h->status <= 0 && ctl_body_size(type) >= 0);
	if (!ctl_is_admin(type))
		return; /* the core's own replies: fuzz-ctl checks those */
	if (h->status < 0) {
		check(len == 0 || len == sizeof(struct rp_admin_text));
		check(!len || memchr(body, 0, len));
		return;
	}
	switch (type) {
	case RP_MSG_STATUS:
		check(len == sizeof(struct rp_status_reply));
		return;
	case RP_MSG_ADMIN_PING:
		check(len == sizeof(struct rp_admin_ping_reply));
		return;
	case RP_MSG_ADMIN_RELOAD:
		check(len == sizeof(struct rp_admin_text) && memchr(body, 0, len));
		return;
	default:
		check_page(type, body, len);
		return;
	}
}

static void closed(struct th_session *ts)
{
	admin_session_release(&ts->s);
	th_session_close(ts);
	if (ts == pb.a)
		pb.a = NULL;
	else
		second = NULL;
}

/* One packet as clients.c handles it: a negative result closes the connection. */
static void packet(struct th_session *ts, const void *pkt, size_t n)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	const struct rp_hdr *h = (const struct rp_hdr *)buf;
	unsigned before = ts->n_replies;
	const char *why = NULL;
	int r;

	if (n > sizeof(buf) || n < sizeof(*h)) {
		closed(ts);
		return;
	}
	memcpy(buf, pkt, n);
	if (ctl_validate(h, n, 0, &why) < 0) {
		check(why);
		closed(ts);
		return;
	}
	r = admin_route(&pb.admin, &ts->s, h, buf + sizeof(*h), -1);
	if (ts->n_replies != before) {
		check_reply(ts);
		if ((th_reply(ts)->type & ~RP_MSG_REPLY) == h->type)
			check(th_reply(ts)->seq == h->seq);
	}
	if (r < 0)
		closed(ts);
}

static struct th_session *client(bool want_second)
{
	if (!want_second)
		return pb.a;
	if (!second) {
		second = th_session_new(&pb.th, 1000, 1000);
		pb.sessions++;
	}
	return second;
}

static size_t fa_pkt(const uint8_t *p, size_t n)
{
	_Alignas(8) uint8_t pkt[RP_PROTO_MSG_MAX + 64];
	struct th_session *ts;
	size_t len;

	if (n < 4 || n - 4 < (len = p[2] | (size_t)p[3] << 8))
		return 0;
	ts = client(p[1] & FA_PKT_SECOND);
	if (!ts || len > sizeof(pkt))
		return 4 + len;
	memcpy(pkt, p + 4, len);
	if ((p[1] & FA_PKT_FIXLEN) && len >= sizeof(struct rp_hdr))
		((struct rp_hdr *)pkt)->len = (uint32_t)len;
	packet(ts, pkt, len);
	return 4 + len;
}

static void request(uint16_t type, uint64_t cursor, uint8_t s)
{
	_Alignas(8) uint8_t buf[sizeof(struct rp_hdr) + sizeof(struct rp_admin_ping_req)];
	static const char *const names[3] = { PB_FAR, PB_NODE, "nosuch" };
	struct rp_hdr *h = (struct rp_hdr *)buf;
	long body = ctl_body_size(type);

	if (!pb.a)
		return;
	memset(buf, 0, sizeof(buf));
	h->type = type;
	h->seq = ++seq + (uint32_t)s * 0x10000u;
	h->len = (uint32_t)(sizeof(*h) + (size_t)body);
	if (type == RP_MSG_ADMIN_PING) {
		struct rp_admin_ping_req *pr = (void *)(buf + sizeof(*h));

		snprintf(pr->peer, sizeof(pr->peer), "%s", names[cursor % 3]);
		pr->seq = s;
	} else if (body) {
		struct rp_admin_page_req *pr = (void *)(buf + sizeof(*h));

		pr->cursor = cursor;
	}
	packet(pb.a, buf, h->len);
}

static size_t fa_req(const uint8_t *p, size_t n)
{
	static const uint16_t types[FA_NTYPES] = {
		[FA_STATUS] = RP_MSG_STATUS,	     [FA_CLIENTS] = RP_MSG_ADMIN_CLIENTS,
		[FA_REGIONS] = RP_MSG_ADMIN_REGIONS, [FA_PEERS] = RP_MSG_ADMIN_PEERS,
		[FA_METRICS] = RP_MSG_ADMIN_METRICS, [FA_PING] = RP_MSG_ADMIN_PING,
		[FA_RELOAD] = RP_MSG_ADMIN_RELOAD,   [FA_ENDPOINTS] = RP_MSG_ADMIN_ENDPOINTS,
	};
	uint64_t cursor = 0;
	int i;

	if (n < 11)
		return 0;
	for (i = 7; i >= 0; i--)
		cursor = cursor << 8 | p[2 + i];
	request(types[p[1] % FA_NTYPES], cursor, p[10]);
	return 11;
}

static void fa_session(void)
{
	struct th_session *ts;

	if (n_others == sizeof(others) / sizeof(others[0]))
		return;
	ts = th_session_new(&pb.th, 1001, 1001);
	pb.sessions++;
	others[n_others++] = ts;
	if (th_hello(ts) == 0)
		th_region(ts, 4096, NULL, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool quiet;
	unsigned before = 0, i;
	size_t off = 1, n;

	if (!quiet) {
		log_set_level(LOG_CRIT);
		quiet = true;
	}
	if (size < 1 || size > FUZZ_MAX_INPUT)
		return 0;
	pb_init(&pb, data[0] & FL_SETUP_MODE, (data[0] >> FL_SETUP_FLAGS_SHIFT) & 0x1f);
	second = NULL;
	n_others = 0;
	last_list = 0;
	seq = 0;
	while (off < size) {
		uint8_t cmd = data[off];

		if (pb.a)
			before = pb.a->n_replies;
		switch (cmd) {
		case FA_PKT:
			n = fa_pkt(data + off, size - off);
			break;
		case FA_REQ:
			n = fa_req(data + off, size - off);
			break;
		case FA_NEXT:
			if (last_list)
				request(last_list, last_next, 0);
			n = 1;
			break;
		case FA_SESSION:
			fa_session();
			n = 1;
			break;
		default:
			n = pb_event(&pb, data + off, size - off);
			/* A ping's answer may come now. */
			if (pb.a && pb.a->n_replies != before)
				check_reply(pb.a);
			break;
		}
		if (!n)
			break;
		off += n;
	}
	/* The other clients leave first; pb_fini() closes the fixture's own. */
	for (i = 0; i < n_others; i++)
		th_session_close(others[i]);
	if (second)
		closed(second);
	pb_fini(&pb);
	return 0;
}
