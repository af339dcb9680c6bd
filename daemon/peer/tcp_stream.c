/* SPDX-License-Identifier: MIT */
/* The tcp transport's framing and op FIFO (tcp_stream.h); no loop here. */
#include "peer/tcp_stream.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memguard.h"
#include "core/core.h" /* struct region */

/*
 * The staging buffer: big enough for a read to take many replies at once,
 * small enough that little of a large payload is copied through it.
 */
#define RBUF 4096
#define PAYLOAD_CHUNK (64u << 20) /* largest single read into a region */

/*
 * Payloads sent from memory that may fault (hugetlbfs) are copied first:
 * this much at most, daemon-wide, at any moment, and of that at most
 * SERVED_MAX for the READs one peer has asked for (so that one peer reading
 * slowly cannot take it all). A copy that does not fit fails its operation
 * with -ENOMEM (try again later) instead of growing the daemon without bound.
 */
#define BOUNCE_MAX (256ull << 20)
#define SERVED_MAX (64ull << 20)

static uint64_t bounce_bytes;

struct bounce {
	uint64_t len;
	struct tstream *served; /* a READ this stream's peer asked for */
	_Alignas(16) char data[];
};

/* A guarded copy of @len bytes at @src: 0 and *ret, -EFAULT or -ENOMEM. */
static int bounce_new(const void *src, uint64_t len, struct tstream *served, char **ret)
{
	struct bounce *b;
	int r;

	if (len > BOUNCE_MAX - bounce_bytes || (served && len > SERVED_MAX - served->served_bounce))
		return -ENOMEM;
	b = malloc(sizeof(*b) + len);
	if (!b)
		return -ENOMEM;
	r = guarded_memmove(b->data, src, len);
	if (r < 0) {
		free(b);
		return r;
	}
	b->len = len;
	b->served = served;
	bounce_bytes += len;
	if (served)
		served->served_bounce += len;
	*ret = b->data;
	return 0;
}

void tstream_bounce_free(void *data)
{
	struct bounce *b;

	if (!data)
		return;
	b = (struct bounce *)((char *)data - offsetof(struct bounce, data));
	bounce_bytes -= b->len;
	if (b->served)
		b->served->served_bounce -= b->len;
	free(b);
}

#define OP_NEXT(op) (*(struct peer_op **)&(op)->scratch[0])
#define OP_ID(op) ((op)->scratch[1])

static void sfail(struct tstream *st, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void sfail(struct tstream *st, int err, const char *fmt, ...)
{
	char why[96];
	va_list ap;

	if (st->failed)
		return;
	st->failed = true;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	st->io->fail(st, err, why);
}

static void expect_hdr(struct tstream *st)
{
	st->phase = TS_HDR;
	st->have = 0;
	st->need = sizeof(struct pp_hdr);
}

void tstream_init(struct tstream *st, const struct tstream_io *io, struct peer_link *link)
{
	memset(st, 0, sizeof(*st));
	st->io = io;
	st->link = link;
	expect_hdr(st);
}

void tstream_fini(struct tstream *st)
{
	st->failed = true;
	if (st->rx_active) {
		st->rx_active = false;
		peer_x_rx_end(st->link, &st->rx, -ECONNRESET);
	}
	free(st->rbuf);
	st->rbuf = NULL;
}

void tstream_stop(struct tstream *st)
{
	st->failed = true;
}

int tstream_send_ctrl(struct xconn *x, const void *msg, size_t len)
{
	struct tstream *st = (struct tstream *)x;

	if (len > PP_FIXED_MAX)
		return -EMSGSIZE;
	if (st->failed)
		return -ENOTCONN;
	return st->io->write(st, msg, len, NULL, 0, NULL, NULL);
}

int tstream_submit(struct xconn *x, struct peer_op *op)
{
	struct tstream *st = (struct tstream *)x;
	union {
		struct pp_write w;
		struct pp_read r;
		struct pp_send s;
	} m;
	const char *payload = (const char *)op->region->addr + op->off;
	char *bounce = NULL;
	uint64_t id = ++st->next_id;
	size_t len;
	int r;

	if (st->failed)
		return -ENOTCONN;
	memset(&m, 0, sizeof(m));
	switch (op->kind) {
	case PEER_OP_WRITE:
		pp_hdr_init(&m.w.h, PP_WRITE, id);
		m.w.h.flags = op->flags & PEER_OP_F_NOTIFY ? PP_F_NOTIFY : 0;
		m.w.export_id = op->export_id;
		m.w.export_inc = op->export_inc;
		m.w.off = op->remote_off;
		m.w.len = op->len;
		m.w.imm = op->imm;
		len = sizeof(m.w);
		break;
	case PEER_OP_READ:
		pp_hdr_init(&m.r.h, PP_READ, id);
		m.r.export_id = op->export_id;
		m.r.export_inc = op->export_inc;
		m.r.off = op->remote_off;
		m.r.len = op->len;
		len = sizeof(m.r);
		break;
	case PEER_OP_SEND:
		pp_hdr_init(&m.s.h, PP_SEND, id);
		m.s.len = op->len;
		memcpy(m.s.endpoint, op->endpoint, sizeof(m.s.endpoint));
		len = sizeof(m.s);
		break;
	default:
		return -EINVAL;
	}
	if (op->kind != PEER_OP_READ && op->len && op->region->huge) {
		/* A hole the client punched would fail the socket's write: copy first. */
		r = bounce_new(payload, op->len, NULL, &bounce);
		if (r < 0)
			return r;
		payload = bounce;
	}
	op->fate = PEER_OP_POSTED;
	r = st->io->write(st, &m, len, payload, op->kind == PEER_OP_READ ? 0 : op->len, NULL,
			  bounce);
	if (r < 0 && r != -ECONNABORTED) {
		op->fate = PEER_OP_QUEUED;
		return r;
	}
	OP_ID(op) = id;
	OP_NEXT(op) = NULL;
	if (st->tail)
		OP_NEXT(st->tail) = op;
	else
		st->head = op;
	st->tail = op;
	if (r == -ECONNABORTED)
		/* Part of it is on the wire: its outcome is unknown when the link goes. */
		sfail(st, -ENOMEM, "cannot queue the rest of a write");
	return 0;
}

/* The reply to the oldest op, which must be of @kind with @id. */
static struct peer_op *pop_op(struct tstream *st, uint64_t id, uint16_t kind)
{
	struct peer_op *op = st->head;

	if (!op || OP_ID(op) != id || op->kind != kind)
		return NULL;
	st->head = OP_NEXT(op);
	if (!st->head)
		st->tail = NULL;
	return op;
}

/*
 * @may_fault: @dst is on hugetlbfs, where a client may punch a hole that
 * raises SIGBUS when touched: it is then filled only through the staging
 * buffer with guarded copies, and a fault costs this transfer (-EFAULT), not
 * the daemon or the link (a read() straight into it would fail the socket).
 */
static void expect_payload(struct tstream *st, void *dst, uint64_t len, bool may_fault)
{
	if (!len)
		return; /* nothing follows the fixed part: the next header does */
	st->have = 0;
	st->left = len;
	st->dst = dst;
	st->dst_fault = may_fault;
	st->pay_err = 0;
	st->phase = dst ? TS_PAYLOAD : TS_DISCARD;
}

static void reply_status(struct tstream *st, uint16_t type, uint64_t id, int status)
{
	struct pp_status m;

	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, type, id);
	m.status = status;
	if (st->io->write(st, &m, sizeof(m), NULL, 0, NULL, NULL) < 0)
		sfail(st, -ENOMEM, "cannot queue a reply");
}

/* An incoming WRITE or SEND: place its payload, or discard it and refuse. */
static void rx_start(struct tstream *st, const struct pp_hdr *h)
{
	memset(&st->rx, 0, sizeof(st->rx));
	if (h->type == PP_WRITE) {
		struct pp_write m;

		memcpy(&m, st->fixed, sizeof(m));
		st->rx.kind = PEER_RX_WRITE;
		st->rx.flags = m.h.flags & PP_F_NOTIFY ? PEER_OP_F_NOTIFY : 0;
		st->rx.imm = m.imm;
		st->rx.export_id = m.export_id;
		st->rx.export_inc = m.export_inc;
		st->rx.off = m.off;
		st->rx.len = m.len;
	} else {
		struct pp_send m;

		memcpy(&m, st->fixed, sizeof(m));
		st->rx.kind = PEER_RX_SEND;
		st->rx.len = m.len;
		memcpy(st->rx.endpoint, m.endpoint, sizeof(m.endpoint));
	}
	st->rx_type = h->type;
	st->rx_id = h->id;
	st->rx_status = peer_x_rx_begin(st->link, &st->rx);
	if (st->rx_status == -EPROTO) {
		sfail(st, -EPROTO, "data before authentication");
		return;
	}
	st->rx_active = st->rx_status == 0;
	expect_payload(st, st->rx_active ? st->rx.addr : NULL, st->rx.len, st->rx.may_fault);
}

/* The payload of the incoming WRITE/SEND is complete (or was discarded). */
static void rx_finish(struct tstream *st)
{
	int status = st->rx_status;

	if (st->rx_active) {
		st->rx_active = false;
		status = peer_x_rx_end(st->link, &st->rx, st->pay_err);
		st->pay_err = 0;
	}
	reply_status(st, (uint16_t)(st->rx_type + 1), st->rx_id, status);
}

static void serve_read(struct tstream *st, const struct pp_hdr *h)
{
	struct pp_read m;
	struct pp_read_r rr;
	struct peer_rx rx;
	char *bounce = NULL;
	int status;

	memcpy(&m, st->fixed, sizeof(m));
	memset(&rx, 0, sizeof(rx));
	rx.kind = PEER_RX_READ;
	rx.export_id = m.export_id;
	rx.export_inc = m.export_inc;
	rx.off = m.off;
	rx.len = m.len;
	status = peer_x_rx_begin(st->link, &rx);
	if (status == -EPROTO) {
		sfail(st, -EPROTO, "data before authentication");
		return;
	}
	if (!status && rx.may_fault && m.len) {
		/*
		 * A hole the exporter punched would fail the socket's write: copy
		 * first. The copy is what goes out, so the export is let go now.
		 */
		status = bounce_new(rx.addr, m.len, st, &bounce);
		peer_x_rx_end(st->link, &rx, status);
	}
	memset(&rr, 0, sizeof(rr));
	pp_hdr_init(&rr.h, PP_READ_R, h->id);
	rr.status = status;
	rr.len = status ? 0 : m.len;
	if (st->io->write(st, &rr, sizeof(rr), bounce ? bounce : rx.addr, rr.len,
			  status || bounce ? NULL : &rx, bounce) < 0) {
		if (!status && !bounce)
			peer_x_rx_end(st->link, &rx, -ECONNRESET);
		sfail(st, -ENOMEM, "cannot queue a read reply");
	}
}

static void on_reply(struct tstream *st, const struct pp_hdr *h)
{
	static const uint16_t kind[] = { [PP_WRITE_R - PP_WRITE_R] = PEER_OP_WRITE,
					 [PP_READ_R - PP_WRITE_R] = PEER_OP_READ,
					 [PP_SEND_R - PP_WRITE_R] = PEER_OP_SEND };
	struct peer_op *op = NULL;
	struct pp_status m;

	if (h->type == PP_WRITE_R || h->type == PP_READ_R || h->type == PP_SEND_R)
		op = pop_op(st, h->id, kind[h->type - PP_WRITE_R]);
	if (!op) {
		sfail(st, -EPROTO, "reply 0x%04x id %llu matches no request", h->type,
		      (unsigned long long)h->id);
		return;
	}
	if (h->type == PP_READ_R) {
		struct pp_read_r rr;

		memcpy(&rr, st->fixed, sizeof(rr));
		if (rr.status == 0 && rr.len != op->len) {
			/* Still outstanding: the peer layer reports it when the link fails. */
			sfail(st, -EPROTO, "read reply of the wrong length");
			return;
		}
		if (rr.status == 0 && rr.len) {
			st->rop = op;
			expect_payload(st, (char *)op->region->addr + op->off, rr.len,
				       op->region->huge);
			return;
		}
		peer_x_op_done(op, rr.status);
		return;
	}
	memcpy(&m, st->fixed, sizeof(m));
	peer_x_op_done(op, m.status);
}

/* A whole fixed part is in st->fixed: act on it. */
static void on_fixed(struct tstream *st)
{
	struct pp_hdr h;
	const char *why = "?";

	memcpy(&h, st->fixed, sizeof(h));
	if (pp_check(st->fixed, h.len, &why) < 0) {
		sfail(st, -EPROTO, "malformed message from the peer: %s", why);
		return;
	}
	expect_hdr(st);
	switch (h.type) {
	case PP_WRITE:
	case PP_SEND:
		rx_start(st, &h);
		if (!st->failed && st->phase == TS_HDR)
			rx_finish(st); /* zero-length payload */
		return;
	case PP_READ:
		serve_read(st, &h);
		return;
	case PP_WRITE_R:
	case PP_READ_R:
	case PP_SEND_R:
		on_reply(st, &h);
		return;
	default:
		peer_x_ctrl(st->link, st->fixed, h.len);
		return;
	}
}

static void payload_done(struct tstream *st)
{
	struct peer_op *op = st->rop;

	expect_hdr(st);
	if (op) {
		st->rop = NULL;
		peer_x_op_done(op, st->pay_err);
		st->pay_err = 0;
		return;
	}
	rx_finish(st);
}

void tstream_rx_buf(struct tstream *st, char **ret_buf, size_t *ret_len)
{
	st->rx_direct = false;
	if (st->phase == TS_PAYLOAD && st->rpos == st->rlen && st->left > RBUF && !st->dst_fault) {
		st->rx_direct = true;
		*ret_buf = st->dst;
		*ret_len = st->left < PAYLOAD_CHUNK ? st->left : PAYLOAD_CHUNK;
		return;
	}
	if (!st->rbuf)
		st->rbuf = malloc(RBUF);
	if (st->rpos == st->rlen)
		st->rpos = st->rlen = 0;
	if (st->rpos && st->rlen == RBUF) {
		memmove(st->rbuf, st->rbuf + st->rpos, st->rlen - st->rpos);
		st->rlen -= st->rpos;
		st->rpos = 0;
	}
	*ret_buf = st->rbuf ? st->rbuf + st->rlen : NULL;
	*ret_len = st->rbuf ? RBUF - st->rlen : 0;
}

/* Bytes of the header or fixed part: 0 when it is complete (and acted on). */
static void take_fixed(struct tstream *st, const char *p, size_t n)
{
	const char *why = "?";

	memcpy(st->fixed + st->have, p, n);
	st->have += n;
	if (st->phase == TS_HDR && st->have == st->need) {
		if (pp_check_hdr((struct pp_hdr *)st->fixed, &why) < 0) {
			sfail(st, -EPROTO, "malformed message header from the peer: %s", why);
			return;
		}
		st->need = ((struct pp_hdr *)st->fixed)->len;
		st->phase = TS_FIXED;
	}
	if (st->phase == TS_FIXED && st->have == st->need)
		on_fixed(st);
}

/* Payload bytes (read into the region, or copied there from the staging buffer). */
static void take_payload(struct tstream *st, const char *p, size_t n)
{
	if (st->phase == TS_PAYLOAD) {
		/* p == dst: read straight into the region (rx_direct). */
		if (p != st->dst && !st->dst_fault)
			memcpy(st->dst, p, n);
		else if (p != st->dst && (st->pay_err = guarded_memmove(st->dst, p, n)) < 0)
			st->phase = TS_DISCARD; /* the rest is read and dropped */
		st->dst += n;
	}
	st->left -= n;
	if (!st->left)
		payload_done(st);
}

void tstream_consumed(struct tstream *st, size_t n)
{
	if (st->rx_direct) {
		st->rx_direct = false;
		take_payload(st, st->dst, n);
		return;
	}
	st->rlen += n;
	while (st->rpos < st->rlen && !st->failed) {
		size_t avail = st->rlen - st->rpos, take;
		const char *p = st->rbuf + st->rpos;

		if (st->phase == TS_HDR || st->phase == TS_FIXED) {
			take = st->need - st->have < avail ? st->need - st->have : avail;
			st->rpos += take;
			take_fixed(st, p, take);
		} else {
			take = st->left < avail ? st->left : avail;
			st->rpos += take;
			take_payload(st, p, take);
		}
	}
}
