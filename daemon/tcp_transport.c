/* SPDX-License-Identifier: MIT */
/*
 * The tcp transport: the peer protocol over one TCP connection per peer,
 * through libuv. Loop glue only; message checks are peer_proto.c's and
 * everything a message means is the peer layer's (peer.c).
 *
 * Zero copy: the reader frames the stream itself, reading a header, then
 * the fixed part, then pointing libuv's read buffer straight at the target
 * slice of the region for the payload (alloc_cb never offers more than the
 * current part, so a read never crosses a message boundary). Outgoing
 * payloads are written with an iovec into the source region, which the peer
 * layer keeps referenced until the op is reported, i.e. after the write
 * callback.
 *
 * Ordering: the far side answers requests in the order it reads them, so
 * outstanding ops form a FIFO and every reply must match its head; anything
 * else is a protocol violation and ends the connection.
 *
 * Backpressure: every request the far side makes (PING, LOOKUP, READ, ...)
 * queues a reply here, so a peer that sends requests and never reads would
 * grow our write queue without limit. When the replies queued on a
 * connection cost more than WQ_HIGH, we stop reading from it (no new
 * requests) until they drain below WQ_LOW. The cost is the memory each
 * reply holds (its struct wreq), not the payload of a READ reply: that is
 * region memory that exists anyway, and counting it would let two daemons
 * reading large slices from each other both stop reading and deadlock.
 * Our own requests are not counted either (clients' limits bound them, and
 * their replies are what the far side is waiting for us to read). A
 * connection whose write queue makes no progress for STALL_MS (the far side
 * does not read at all) is closed; its ops are reported as usual.
 */
#include "transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "manager.h"
#include "peer_proto.h"
#include "session.h"

#define DISCARD_BUF (64 * 1024)
#define PAYLOAD_CHUNK (64u << 20) /* largest single read into a region */
#define WQ_HIGH (4u << 20)	  /* queued replies' cost at which reading stops */
#define WQ_LOW (1u << 20)	  /* ... and below which it resumes */
#define STALL_MS 5000		  /* == PEER_KEEPALIVE_DEAD_MS */
#define STALL_CHECK_MS 1000

struct tcp_transport {
	struct transport base;
	uv_tcp_t listener;
	bool listening;
};

enum rx_phase { RX_HDR, RX_FIXED, RX_PAYLOAD, RX_DISCARD };

struct xconn {
	struct tcp_transport *t;
	struct peer_link *link;
	uv_tcp_t tcp;
	uv_timer_t stall; /* checks the write queue's progress while it is not empty */
	unsigned handles; /* open libuv handles: x is freed when the last one closes */
	uv_connect_t creq;
	uv_getaddrinfo_t gai;
	uint16_t port;
	bool resolving;
	bool closing;
	bool silent; /* refused at accept: the peer layer never heard of it */
	int err;
	char why[96];
	char addr[80];

	/* Receive framing. */
	enum rx_phase phase;
	_Alignas(8) uint8_t fixed[PP_FIXED_MAX];
	size_t have, need;
	char *dst;	  /* RX_PAYLOAD: where the next bytes go */
	uint64_t left;	  /* payload bytes still to come */
	struct peer_rx rx; /* the incoming WRITE/SEND whose payload is being read */
	bool rx_active;
	int rx_status;	     /* status to answer after a discarded payload */
	uint16_t rx_type;    /* PP_WRITE or PP_SEND (reply type - 1) */
	uint64_t rx_id;
	struct peer_op *rop; /* READ_R payload goes into this op's region */
	char *discard;

	/* Ops sent and not answered, oldest first (linked through scratch[0]). */
	struct peer_op *head, *tail;
	uint64_t next_id;

	/* Write queue (see "Backpressure"). */
	size_t reply_cost;   /* of the replies queued and not yet written */
	unsigned replies;    /* how many */
	bool paused;	     /* reading stopped until the replies drain */
	bool stall_armed;
	size_t stall_size;   /* libuv's write queue size at the last check */
	uint64_t progress_ms; /* when the write queue last moved */
};

struct wreq {
	uv_write_t req;
	struct xconn *x;
	bool has_rx; /* an incoming READ served from a region: end it when written */
	bool reply;  /* counted in x->reply_cost */
	size_t cost;
	struct peer_rx rx;
	_Alignas(8) uint8_t msg[]; /* the fixed part */
};

#define OP_NEXT(op) (*(struct peer_op **)&(op)->scratch[0])
#define OP_ID(op) ((op)->scratch[1])

static void xfail(struct xconn *x, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void tcp_close(struct xconn *x);

static void xconn_unref(struct xconn *x)
{
	if (--x->handles)
		return;
	free(x->discard);
	free(x);
}

static void on_timer_closed(uv_handle_t *h)
{
	xconn_unref(h->data);
}

static void on_closed(uv_handle_t *h)
{
	struct xconn *x = h->data;

	if (x->rx_active) {
		x->rx_active = false;
		peer_x_rx_end(x->link, &x->rx, -ECONNRESET);
	}
	if (!x->silent && x->link)
		peer_x_failed(x->link, x->err ? x->err : -ECONNRESET,
			      x->why[0] ? x->why : "connection closed");
	xconn_unref(x);
}

static void close_handles(struct xconn *x)
{
	uv_close((uv_handle_t *)&x->stall, on_timer_closed);
	uv_close((uv_handle_t *)&x->tcp, on_closed);
}

static void tcp_close(struct xconn *x)
{
	if (x->closing)
		return;
	x->closing = true;
	if (x->resolving) {
		/* The resolver callback finishes the close. */
		uv_cancel((uv_req_t *)&x->gai);
		return;
	}
	close_handles(x);
}

static void xfail(struct xconn *x, int err, const char *fmt, ...)
{
	va_list ap;

	if (!x->err) {
		x->err = err;
		va_start(ap, fmt);
		vsnprintf(x->why, sizeof(x->why), fmt, ap);
		va_end(ap);
	}
	tcp_close(x);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

static size_t wq_size(const struct xconn *x)
{
	return uv_stream_get_write_queue_size((const uv_stream_t *)&x->tcp);
}

/* Every STALL_CHECK_MS while bytes wait in the write queue: do they move? */
static void on_stall_check(uv_timer_t *t)
{
	struct xconn *x = t->data;
	uint64_t now = uv_now(t->loop);
	size_t size = wq_size(x);

	if (x->closing)
		return;
	if (!size) {
		uv_timer_stop(t);
		x->stall_armed = false;
		return;
	}
	if (size < x->stall_size)
		x->progress_ms = now;
	x->stall_size = size;
	if (now - x->progress_ms >= STALL_MS)
		xfail(x, -ETIMEDOUT,
		      "the peer is not reading: %zu bytes to write (%u replies), no progress for "
		      "%u s",
		      size, x->replies, STALL_MS / 1000);
}

static void stall_arm(struct xconn *x)
{
	if (x->stall_armed || !wq_size(x))
		return;
	x->stall_armed = true;
	x->stall_size = wq_size(x);
	x->progress_ms = uv_now(x->stall.loop);
	uv_timer_start(&x->stall, on_stall_check, STALL_CHECK_MS, STALL_CHECK_MS);
}

static void read_pause(struct xconn *x)
{
	if (x->paused || x->reply_cost <= WQ_HIGH)
		return;
	x->paused = true;
	uv_read_stop((uv_stream_t *)&x->tcp);
}

static void read_resume(struct xconn *x)
{
	int r;

	if (!x->paused || x->closing || x->reply_cost > WQ_LOW)
		return;
	x->paused = false;
	r = uv_read_start((uv_stream_t *)&x->tcp, on_alloc, on_read);
	if (r < 0)
		xfail(x, -ECONNRESET, "read: %s", uv_strerror(r));
}

static void on_written(uv_write_t *req, int status)
{
	struct wreq *w = req->data;
	struct xconn *x = w->x;

	x->progress_ms = uv_now(x->tcp.loop);
	if (w->reply) {
		x->reply_cost -= w->cost;
		x->replies--;
	}
	if (w->has_rx)
		peer_x_rx_end(x->link, &w->rx, status < 0 ? -ECONNRESET : 0);
	if (status < 0 && status != UV_ECANCELED)
		xfail(x, -ECONNRESET, "write: %s", uv_strerror(status));
	free(w);
	read_resume(x);
}

/* Does a message of @type answer a request of the far side's? */
static bool is_reply(uint16_t type)
{
	switch (type) {
	case PP_PONG:
	case PP_LOOKUP_R:
	case PP_NOTIFY_R:
	case PP_WRITE_R:
	case PP_READ_R:
	case PP_SEND_R:
		return true;
	default:
		return false;
	}
}

/* Queue a fixed part plus an optional payload iovec. */
static int queue(struct xconn *x, const void *msg, size_t len, const void *payload, uint64_t plen,
		 const struct peer_rx *rx)
{
	const struct pp_hdr *h = msg;
	struct wreq *w;
	uv_buf_t bufs[2];
	int r;

	if (x->closing)
		return -ENOTCONN;
	w = malloc(sizeof(*w) + len);
	if (!w)
		return -ENOMEM;
	w->x = x;
	w->req.data = w;
	w->has_rx = rx != NULL;
	if (rx)
		w->rx = *rx;
	w->reply = is_reply(h->type);
	w->cost = sizeof(*w) + len;
	memcpy(w->msg, msg, len);
	bufs[0] = uv_buf_init((char *)w->msg, (unsigned)len);
	bufs[1] = uv_buf_init((char *)payload, (unsigned)plen);
	r = uv_write(&w->req, (uv_stream_t *)&x->tcp, bufs, plen ? 2 : 1, on_written);
	if (r < 0) {
		free(w);
		return -ENOTCONN;
	}
	if (w->reply) {
		x->reply_cost += w->cost;
		x->replies++;
		read_pause(x);
	}
	stall_arm(x);
	return 0;
}

static int tcp_send_ctrl(struct xconn *x, const void *msg, size_t len)
{
	if (len > PP_FIXED_MAX)
		return -EMSGSIZE;
	return queue(x, msg, len, NULL, 0, NULL);
}

static int tcp_submit(struct xconn *x, struct peer_op *op)
{
	union {
		struct pp_write w;
		struct pp_read r;
		struct pp_send s;
	} m;
	const char *payload = (const char *)op->region->addr + op->off;
	uint64_t id = ++x->next_id;
	size_t len;
	int r;

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
	op->posted = true;
	r = queue(x, &m, len, payload, op->kind == PEER_OP_READ ? 0 : op->len, NULL);
	if (r < 0) {
		op->posted = false;
		return r;
	}
	OP_ID(op) = id;
	OP_NEXT(op) = NULL;
	if (x->tail)
		OP_NEXT(x->tail) = op;
	else
		x->head = op;
	x->tail = op;
	return 0;
}

/* The reply to the oldest op, which must be of @kind with @id. */
static struct peer_op *pop_op(struct xconn *x, uint64_t id, uint16_t kind)
{
	struct peer_op *op = x->head;

	if (!op || OP_ID(op) != id || op->kind != kind)
		return NULL;
	x->head = OP_NEXT(op);
	if (!x->head)
		x->tail = NULL;
	return op;
}

static void expect_hdr(struct xconn *x)
{
	x->phase = RX_HDR;
	x->have = 0;
	x->need = sizeof(struct pp_hdr);
}

static void expect_payload(struct xconn *x, void *dst, uint64_t len)
{
	x->have = 0;
	x->left = len;
	x->dst = dst;
	x->phase = dst ? RX_PAYLOAD : RX_DISCARD;
}

static void reply_status(struct xconn *x, uint16_t type, uint64_t id, int status)
{
	struct pp_status st;

	memset(&st, 0, sizeof(st));
	pp_hdr_init(&st.h, type, id);
	st.status = status;
	if (queue(x, &st, sizeof(st), NULL, 0, NULL) < 0)
		xfail(x, -ENOMEM, "cannot queue a reply");
}

/* An incoming WRITE or SEND: place its payload, or discard it and refuse. */
static void rx_start(struct xconn *x, const struct pp_hdr *h)
{
	memset(&x->rx, 0, sizeof(x->rx));
	if (h->type == PP_WRITE) {
		struct pp_write m;

		memcpy(&m, x->fixed, sizeof(m));
		x->rx.kind = PEER_RX_WRITE;
		x->rx.flags = m.h.flags & PP_F_NOTIFY ? PEER_OP_F_NOTIFY : 0;
		x->rx.imm = m.imm;
		x->rx.export_id = m.export_id;
		x->rx.export_inc = m.export_inc;
		x->rx.off = m.off;
		x->rx.len = m.len;
	} else {
		struct pp_send m;

		memcpy(&m, x->fixed, sizeof(m));
		x->rx.kind = PEER_RX_SEND;
		x->rx.len = m.len;
		memcpy(x->rx.endpoint, m.endpoint, sizeof(m.endpoint));
	}
	x->rx_type = h->type;
	x->rx_id = h->id;
	x->rx_status = peer_x_rx_begin(x->link, &x->rx);
	if (x->rx_status == -EPROTO) {
		xfail(x, -EPROTO, "data before authentication");
		return;
	}
	x->rx_active = x->rx_status == 0;
	expect_payload(x, x->rx_active ? x->rx.addr : NULL, x->rx.len);
}

/* The payload of the incoming WRITE/SEND is complete (or was discarded). */
static void rx_finish(struct xconn *x)
{
	int st = x->rx_status;

	if (x->rx_active) {
		x->rx_active = false;
		st = peer_x_rx_end(x->link, &x->rx, 0);
	}
	reply_status(x, (uint16_t)(x->rx_type + 1), x->rx_id, st);
}

static void serve_read(struct xconn *x, const struct pp_hdr *h)
{
	struct pp_read m;
	struct pp_read_r rr;
	struct peer_rx rx;
	int st;

	memcpy(&m, x->fixed, sizeof(m));
	memset(&rx, 0, sizeof(rx));
	rx.kind = PEER_RX_READ;
	rx.export_id = m.export_id;
	rx.export_inc = m.export_inc;
	rx.off = m.off;
	rx.len = m.len;
	st = peer_x_rx_begin(x->link, &rx);
	if (st == -EPROTO) {
		xfail(x, -EPROTO, "data before authentication");
		return;
	}
	memset(&rr, 0, sizeof(rr));
	pp_hdr_init(&rr.h, PP_READ_R, h->id);
	rr.status = st;
	rr.len = st ? 0 : m.len;
	if (queue(x, &rr, sizeof(rr), rx.addr, rr.len, st ? NULL : &rx) < 0) {
		if (!st)
			peer_x_rx_end(x->link, &rx, -ECONNRESET);
		xfail(x, -ENOMEM, "cannot queue a read reply");
	}
}

static void on_reply(struct xconn *x, const struct pp_hdr *h)
{
	static const uint16_t kind[] = { [PP_WRITE_R - PP_WRITE_R] = PEER_OP_WRITE,
					 [PP_READ_R - PP_WRITE_R] = PEER_OP_READ,
					 [PP_SEND_R - PP_WRITE_R] = PEER_OP_SEND };
	struct peer_op *op = NULL;

	if (h->type == PP_WRITE_R || h->type == PP_READ_R || h->type == PP_SEND_R)
		op = pop_op(x, h->id, kind[h->type - PP_WRITE_R]);
	if (!op) {
		xfail(x, -EPROTO, "reply 0x%04x id %llu matches no request", h->type,
		      (unsigned long long)h->id);
		return;
	}
	if (h->type == PP_READ_R) {
		struct pp_read_r rr;

		memcpy(&rr, x->fixed, sizeof(rr));
		if (rr.status == 0 && rr.len != op->len) {
			/* Still outstanding: the peer layer reports it when the link fails. */
			xfail(x, -EPROTO, "read reply of the wrong length");
			return;
		}
		if (rr.status == 0 && rr.len) {
			x->rop = op;
			expect_payload(x, (char *)op->region->addr + op->off, rr.len);
			return;
		}
		peer_x_op_done(op, rr.status);
		return;
	}
	{
		struct pp_status st;

		memcpy(&st, x->fixed, sizeof(st));
		peer_x_op_done(op, st.status);
	}
}

/* A whole fixed part is in x->fixed: act on it. */
static void on_fixed(struct xconn *x)
{
	struct pp_hdr h;
	const char *why = "?";

	memcpy(&h, x->fixed, sizeof(h));
	if (pp_check(x->fixed, h.len, &why) < 0) {
		xfail(x, -EPROTO, "malformed message from the peer: %s", why);
		return;
	}
	expect_hdr(x);
	switch (h.type) {
	case PP_WRITE:
	case PP_SEND:
		rx_start(x, &h);
		if (!x->closing && x->phase == RX_HDR)
			rx_finish(x); /* zero-length payload */
		return;
	case PP_READ:
		serve_read(x, &h);
		return;
	case PP_WRITE_R:
	case PP_READ_R:
	case PP_SEND_R:
		on_reply(x, &h);
		return;
	default:
		peer_x_ctrl(x->link, x->fixed, h.len);
		return;
	}
}

static void payload_done(struct xconn *x)
{
	struct peer_op *op = x->rop;

	expect_hdr(x);
	if (op) {
		x->rop = NULL;
		peer_x_op_done(op, 0);
		return;
	}
	rx_finish(x);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct xconn *x = h->data;

	switch (x->phase) {
	case RX_HDR:
	case RX_FIXED:
		*buf = uv_buf_init((char *)x->fixed + x->have, (unsigned)(x->need - x->have));
		return;
	case RX_PAYLOAD:
		*buf = uv_buf_init(x->dst, (unsigned)(x->left < PAYLOAD_CHUNK ? x->left
									 : PAYLOAD_CHUNK));
		return;
	case RX_DISCARD:
		if (!x->discard)
			x->discard = malloc(DISCARD_BUF);
		*buf = uv_buf_init(x->discard,
				   x->discard ? (unsigned)(x->left < DISCARD_BUF ? x->left : DISCARD_BUF)
					      : 0);
		return;
	}
}

/* Account for @n bytes just read into the current part. */
static void consumed(struct xconn *x, size_t n)
{
	const char *why = "?";

	switch (x->phase) {
	case RX_HDR:
		x->have += n;
		if (x->have < x->need)
			return;
		if (pp_check_hdr((struct pp_hdr *)x->fixed, &why) < 0) {
			xfail(x, -EPROTO, "malformed message header from the peer: %s", why);
			return;
		}
		x->need = ((struct pp_hdr *)x->fixed)->len;
		x->phase = RX_FIXED;
		if (x->have == x->need)
			on_fixed(x);
		return;
	case RX_FIXED:
		x->have += n;
		if (x->have == x->need)
			on_fixed(x);
		return;
	case RX_PAYLOAD:
	case RX_DISCARD:
		if (x->phase == RX_PAYLOAD)
			x->dst += n;
		x->left -= n;
		if (!x->left)
			payload_done(x);
		return;
	}
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct xconn *x = s->data;

	if (x->closing)
		return;
	if (n < 0) {
		xfail(x, -ECONNRESET, "%s", n == UV_EOF ? "closed by the peer" : uv_strerror((int)n));
		return;
	}
	if (n == 0)
		return;
	peer_x_alive(x->link);
	consumed(x, (size_t)n);
}

static void start_reading(struct xconn *x)
{
	int r;

	uv_tcp_nodelay(&x->tcp, 1);
	expect_hdr(x);
	r = uv_read_start((uv_stream_t *)&x->tcp, on_alloc, on_read);
	if (r < 0)
		xfail(x, -ECONNRESET, "read: %s", uv_strerror(r));
}

static void on_connected(uv_connect_t *req, int status)
{
	struct xconn *x = req->data;

	if (x->closing)
		return;
	if (status < 0) {
		xfail(x, -ECONNREFUSED, "connect to %s: %s", x->addr, uv_strerror(status));
		return;
	}
	start_reading(x);
	if (!x->closing)
		peer_x_connected(x->link);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct xconn *x = req->data;
	int r;

	x->resolving = false;
	if (x->closing) {
		uv_freeaddrinfo(res);
		close_handles(x);
		return;
	}
	if (status < 0) {
		xfail(x, -EHOSTUNREACH, "resolve %s: %s", x->addr, uv_strerror(status));
		return;
	}
	if (res->ai_family == AF_INET6)
		((struct sockaddr_in6 *)res->ai_addr)->sin6_port = htons(x->port);
	else
		((struct sockaddr_in *)res->ai_addr)->sin_port = htons(x->port);
	x->creq.data = x;
	r = uv_tcp_connect(&x->creq, &x->tcp, res->ai_addr, on_connected);
	uv_freeaddrinfo(res);
	if (r < 0)
		xfail(x, -ECONNREFUSED, "connect to %s: %s", x->addr, uv_strerror(r));
}

static struct xconn *xconn_new(struct tcp_transport *t)
{
	struct xconn *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->t = t;
	if (uv_tcp_init(&t->base.m->loop, &x->tcp) < 0) {
		free(x);
		return NULL;
	}
	uv_timer_init(&t->base.m->loop, &x->stall);
	x->tcp.data = x;
	x->stall.data = x;
	x->handles = 2;
	return x;
}

static int tcp_connect(struct transport *tt, const char *host, uint16_t port,
		       struct peer_link *link, struct xconn **ret)
{
	struct tcp_transport *t = (struct tcp_transport *)tt;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct xconn *x = xconn_new(t);
	int r;

	if (!x)
		return -ENOMEM;
	x->link = link;
	x->port = port;
	snprintf(x->addr, sizeof(x->addr), strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
	x->gai.data = x;
	x->resolving = true;
	r = uv_getaddrinfo(&t->base.m->loop, &x->gai, on_resolved, host, NULL, &hints);
	if (r < 0) {
		x->resolving = false;
		x->silent = true;
		tcp_close(x);
		return -EHOSTUNREACH;
	}
	*ret = x;
	return 0;
}

static void fmt_addr(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[64] = "?";

	if (ss->ss_family == AF_INET6) {
		uv_ip6_name((const struct sockaddr_in6 *)ss, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host,
			 ntohs(((const struct sockaddr_in6 *)ss)->sin6_port));
	} else {
		uv_ip4_name((const struct sockaddr_in *)ss, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(((const struct sockaddr_in *)ss)->sin_port));
	}
}

static void on_connection(uv_stream_t *server, int status)
{
	struct tcp_transport *t = server->data;
	struct sockaddr_storage ss;
	int sl = sizeof(ss);
	struct xconn *x;

	if (status < 0)
		return;
	x = xconn_new(t);
	if (!x)
		return;
	if (uv_accept(server, (uv_stream_t *)&x->tcp) < 0) {
		x->silent = true;
		tcp_close(x);
		return;
	}
	memset(&ss, 0, sizeof(ss));
	uv_tcp_getpeername(&x->tcp, (struct sockaddr *)&ss, &sl);
	fmt_addr(&ss, x->addr, sizeof(x->addr));
	x->link = peer_x_accepted(&t->base, x, x->addr);
	if (!x->link) {
		x->silent = true;
		tcp_close(x);
		return;
	}
	start_reading(x);
}

static int tcp_listen(struct transport *tt, const char *host, uint16_t port, char *why,
		      size_t whylen)
{
	struct tcp_transport *t = (struct tcp_transport *)tt;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	char ps[8];
	int r;

	snprintf(ps, sizeof(ps), "%u", port);
	r = getaddrinfo(host, ps, &hints, &res);
	if (r) {
		snprintf(why, whylen, "peer listener %s:%u: %s", host, port, gai_strerror(r));
		return -EINVAL;
	}
	r = uv_tcp_init(&tt->m->loop, &t->listener);
	if (r == 0) {
		t->listener.data = t;
		t->listening = true;
		r = uv_tcp_bind(&t->listener, res->ai_addr, 0);
	}
	if (r == 0)
		r = uv_listen((uv_stream_t *)&t->listener, 64, on_connection);
	freeaddrinfo(res);
	if (r < 0) {
		snprintf(why, whylen, "peer listener %s:%u: %s", host, port, uv_strerror(r));
		return r == UV_EADDRINUSE ? -EADDRINUSE : -EINVAL;
	}
	return 0;
}

static const char *tcp_remote_addr(const struct xconn *x)
{
	return x->addr;
}

static int tcp_export_info(struct transport *t, struct export *e, void *buf, size_t cap)
{
	return 0; /* the exporting daemon checks every op itself */
}

static void on_listener_closed(uv_handle_t *h)
{
	free(h->data);
}

static void tcp_free(struct transport *tt)
{
	struct tcp_transport *t = (struct tcp_transport *)tt;

	if (t->listening)
		uv_close((uv_handle_t *)&t->listener, on_listener_closed);
	else
		free(t);
}

static const struct transport_ops tcp_ops = {
	.name = "tcp",
	.listen = tcp_listen,
	.connect = tcp_connect,
	.remote_addr = tcp_remote_addr,
	.close = tcp_close,
	.send_ctrl = tcp_send_ctrl,
	.submit = tcp_submit,
	.export_info = tcp_export_info,
	.free = tcp_free,
};

int tcp_transport_new(struct manager *m, struct transport **ret)
{
	struct tcp_transport *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	/*
	 * libuv writes to TCP sockets without MSG_NOSIGNAL: a peer that dies with
	 * writes pending would kill the daemon with SIGPIPE. EPIPE is handled.
	 */
	signal(SIGPIPE, SIG_IGN);
	t->base.ops = &tcp_ops;
	t->base.m = m;
	*ret = &t->base;
	return 0;
}
