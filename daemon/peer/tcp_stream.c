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

/*
 * WRITEs from memory that may fault and READs (the exporter's memory may be
 * hugetlb, and what it copies for one peer is bounded by SERVED_MAX) bigger
 * than PIECES_FROM go as a sequence of requests of PIECE bytes, each sent
 * once the one before was answered: the copy of such a WRITE is PIECE
 * bytes whatever its size (one copy, reused for each piece, held until the
 * op ends). Smaller ones go whole, as before: a round trip per 16 MiB is
 * nothing on a LAN, but it would be on a long link.
 */
#define PIECE (16u << 20)
#define PIECES_FROM SERVED_MAX

static uint64_t bounce_bytes;

struct bounce {
	uint64_t len;
	unsigned refs;		/* the write that sends it, and a piecewise op's own */
	struct tstream *served; /* a READ this stream's peer asked for */
	_Alignas(16) char data[];
};

static struct bounce *bounce_of(void *data)
{
	return (struct bounce *)((char *)data - offsetof(struct bounce, data));
}

/* @len bytes for copies within the budget: 0 and *ret, or -ENOMEM. */
static int bounce_alloc(uint64_t len, struct tstream *served, char **ret)
{
	struct bounce *b;

	if (len > BOUNCE_MAX - bounce_bytes || (served && len > SERVED_MAX - served->served_bounce))
		return -ENOMEM;
	b = malloc(sizeof(*b) + len);
	if (!b)
		return -ENOMEM;
	b->len = len;
	b->refs = 1;
	b->served = served;
	bounce_bytes += len;
	if (served)
		served->served_bounce += len;
	*ret = b->data;
	return 0;
}

/* A guarded copy of @len bytes at @src: 0 and *ret, -EFAULT or -ENOMEM. */
static int bounce_new(const void *src, uint64_t len, struct tstream *served, char **ret)
{
	int r = bounce_alloc(len, served, ret);

	if (r == 0 && (r = guarded_memmove(*ret, src, len)) < 0) {
		tstream_bounce_free(*ret);
		*ret = NULL;
	}
	return r;
}

void tstream_bounce_free(void *data)
{
	struct bounce *b;

	if (!data)
		return;
	b = bounce_of(data);
	if (--b->refs)
		return;
	bounce_bytes -= b->len;
	if (b->served)
		b->served->served_bounce -= b->len;
	free(b);
}

#define OP_NEXT(op) (*(struct peer_op **)&(op)->scratch[0])
#define OP_ID(op) ((op)->scratch[1])
/* A piecewise op: bytes answered so far, bytes of the piece in flight, a WRITE's copy. */
#define OP_DONE(op) ((op)->scratch[2])
#define OP_PIECE(op) ((op)->scratch[3])
#define OP_COPY(op) (*(char **)&(op)->scratch[4])

/* Does @op go in pieces (PIECE)? */
static bool piecewise(const struct peer_op *op)
{
	return op->len > PIECES_FROM &&
	       (op->kind == PEER_OP_READ || (op->kind == PEER_OP_WRITE && op->region->huge));
}

/* A piecewise op is answered: give back its copy. */
static void piece_end(struct peer_op *op)
{
	tstream_bounce_free(OP_COPY(op));
	OP_COPY(op) = NULL;
}

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
	struct peer_op *op;

	st->failed = true;
	/* The ops it still holds are the peer layer's to report: their copies go now. */
	while ((op = st->head)) {
		st->head = OP_NEXT(op);
		piece_end(op);
	}
	st->tail = NULL;
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

/* @op's request @id is on the wire: its answer comes after those of the ops before it. */
static void op_queue(struct tstream *st, struct peer_op *op, uint64_t id)
{
	OP_ID(op) = id;
	OP_NEXT(op) = NULL;
	if (st->tail)
		OP_NEXT(st->tail) = op;
	else
		st->head = op;
	st->tail = op;
}

/*
 * Send @op, or its next piece (at OP_DONE): 0, or <0 when nothing of this
 * piece was queued (-ECONNABORTED: part of it went out before the rest could
 * not be queued, and the stream failed; the op is held and reported with it).
 */
static int send_op(struct tstream *st, struct peer_op *op)
{
	union {
		struct pp_write w;
		struct pp_read r;
		struct pp_send s;
	} m;
	bool pieces = piecewise(op);
	uint64_t done = pieces ? OP_DONE(op) : 0, id;
	uint64_t n = pieces && op->len - done > PIECE ? PIECE : op->len - done;
	const char *payload = (const char *)op->region->addr + op->off + done;
	char *bounce = NULL;
	size_t len;
	int r;

	if (st->failed)
		return -ENOTCONN;
	memset(&m, 0, sizeof(m));
	id = st->next_id + 1;
	switch (op->kind) {
	case PEER_OP_WRITE:
		pp_hdr_init(&m.w.h, PP_WRITE, id);
		/* In pieces, a NOTIFY follows the last (send_notify()). */
		m.w.h.flags = op->flags & PEER_OP_F_NOTIFY && !pieces ? PP_F_NOTIFY : 0;
		m.w.export_id = op->export_id;
		m.w.export_inc = op->export_inc;
		m.w.off = op->remote_off + done;
		m.w.len = n;
		m.w.imm = op->imm;
		len = sizeof(m.w);
		break;
	case PEER_OP_READ:
		pp_hdr_init(&m.r.h, PP_READ, id);
		m.r.export_id = op->export_id;
		m.r.export_inc = op->export_inc;
		m.r.off = op->remote_off + done;
		m.r.len = n;
		len = sizeof(m.r);
		break;
	case PEER_OP_SEND:
		pp_hdr_init(&m.s.h, PP_SEND, id);
		m.s.len = n;
		memcpy(m.s.endpoint, op->endpoint, sizeof(m.s.endpoint));
		len = sizeof(m.s);
		break;
	default:
		return -EINVAL;
	}
	if (op->kind != PEER_OP_READ && n && op->region->huge) {
		/*
		 * A hole the client punched would fail the socket's write: copy
		 * first. A piecewise WRITE reuses its copy: the piece it held was
		 * answered, so all of it left this host.
		 */
		if (pieces && !OP_COPY(op) && (r = bounce_alloc(PIECE, NULL, &OP_COPY(op))) < 0)
			return r;
		if (pieces) {
			r = guarded_memmove(OP_COPY(op), payload, n);
			bounce = OP_COPY(op);
			bounce_of(bounce)->refs++; /* the write's */
		} else {
			r = bounce_new(payload, n, NULL, &bounce);
		}
		if (r < 0) {
			tstream_bounce_free(bounce);
			return r;
		}
		payload = bounce;
	}
	st->next_id = id;
	OP_PIECE(op) = n;
	op->fate = PEER_OP_POSTED;
	r = st->io->write(st, &m, len, payload, op->kind == PEER_OP_READ ? 0 : n, NULL, bounce);
	if (r < 0 && r != -ECONNABORTED) {
		/* A later piece: earlier ones are there; the caller reports the op. */
		op->fate = done ? PEER_OP_POSTED : PEER_OP_QUEUED;
		return r;
	}
	op_queue(st, op, id);
	if (r == -ECONNABORTED)
		/* Part of it is on the wire: its outcome is unknown when the link goes. */
		sfail(st, -ENOMEM, "cannot queue the rest of a write");
	return 0;
}

int tstream_submit(struct xconn *x, struct peer_op *op)
{
	int r;

	OP_DONE(op) = 0;
	OP_COPY(op) = NULL;
	r = send_op((struct tstream *)x, op);
	if (r < 0)
		piece_end(op);
	return r;
}

/*
 * Every piece of notifying WRITE @op is there: the exporter's client is told
 * of the whole write as a verbs peer tells it of a one-sided one (PP_NOTIFY,
 * answered PP_NOTIFY_R; a full completion ring fails it then). 0 or <0.
 */
static int send_notify(struct tstream *st, struct peer_op *op)
{
	struct pp_notify m;
	int r;

	if (st->failed)
		return -ENOTCONN;
	memset(&m, 0, sizeof(m));
	pp_hdr_init(&m.h, PP_NOTIFY, st->next_id + 1);
	m.export_id = op->export_id;
	m.export_inc = op->export_inc;
	m.off = op->remote_off;
	m.len = op->len;
	m.imm = op->imm;
	r = st->io->write(st, &m, sizeof(m), NULL, 0, NULL, NULL);
	if (r < 0)
		return r;
	OP_DONE(op) = op->len;
	OP_PIECE(op) = 0;
	op_queue(st, op, ++st->next_id);
	return 0;
}

/*
 * Piece OP_PIECE of @op was answered with @status: send the next (or the
 * NOTIFY), or report the op (the first failure, or 0 once every piece is
 * there).
 */
static void piece_done(struct tstream *st, struct peer_op *op, int status)
{
	int r = 0;

	if (status == 0 && piecewise(op) && OP_DONE(op) + OP_PIECE(op) < op->len) {
		OP_DONE(op) += OP_PIECE(op);
		r = send_op(st, op);
	} else if (status == 0 && piecewise(op) && (op->flags & PEER_OP_F_NOTIFY) &&
		   OP_DONE(op) < op->len) {
		r = send_notify(st, op);
	} else {
		piece_end(op);
		peer_x_op_done(op, status);
		return;
	}
	if (r < 0) {
		/* Earlier pieces are there: what it did is unknown (a fault: its own). */
		piece_end(op);
		peer_x_op_done(op, r == -EFAULT ? r : -RP_EOUTCOME);
	}
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
	else if (h->type == PP_NOTIFY_R)
		op = pop_op(st, h->id, PEER_OP_WRITE);
	/* A NOTIFY_R answers a piecewise WRITE's NOTIFY, and nothing else. */
	if (op && (h->type == PP_NOTIFY_R) != (piecewise(op) && OP_DONE(op) == op->len)) {
		sfail(st, -EPROTO, "reply 0x%04x id %llu does not answer what it was sent", h->type,
		      (unsigned long long)h->id);
		piece_end(op); /* on no list now: the peer layer reports it when the link fails */
		return;
	}
	if (!op) {
		sfail(st, -EPROTO, "reply 0x%04x id %llu matches no request", h->type,
		      (unsigned long long)h->id);
		return;
	}
	if (h->type == PP_READ_R) {
		struct pp_read_r rr;

		memcpy(&rr, st->fixed, sizeof(rr));
		if (rr.status == 0 && rr.len != OP_PIECE(op)) {
			/* Still outstanding: the peer layer reports it when the link fails. */
			sfail(st, -EPROTO, "read reply of the wrong length");
			piece_end(op);
			return;
		}
		if (rr.status == 0 && rr.len) {
			st->rop = op;
			expect_payload(st, (char *)op->region->addr + op->off + OP_DONE(op), rr.len,
				       op->region->huge);
			return;
		}
		piece_done(st, op, rr.status);
		return;
	}
	memcpy(&m, st->fixed, sizeof(m));
	piece_done(st, op, m.status); /* after a NOTIFY_R (OP_DONE at the end): reported */
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
	case PP_NOTIFY_R: /* the tcp transport's own NOTIFYs are for piecewise WRITEs */
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
		piece_done(st, op, st->pay_err);
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
