/* SPDX-License-Identifier: MIT */
/*
 * The tcp transport, loop glue: one TCP connection per peer through libuv
 * (resolve, connect, accept, read, write, close). The framing and the op
 * FIFO are tcp_stream.c's; message checks are peer_proto.c's; everything a
 * message means is the peer layer's.
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
#include "tcp_uv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/evloop.h"
#include "base/log.h"
#include "base/stats.h"
#include "peer/tcp_stream.h"
#include "base/util.h"

#define WQ_HIGH (4u << 20) /* queued replies' cost at which reading stops */
#define WQ_LOW (1u << 20)  /* ... and below which it resumes */
#define STALL_MS 5000	   /* == PEER_KEEPALIVE_DEAD_MS */
#define STALL_CHECK_MS 1000

struct tcp_transport {
	struct transport base;
	uv_loop_t *loop;
	uv_tcp_t listener;
	bool listening;
	struct evloop *ev;
	struct ev_timer *flusher;    /* "soon": writes the corked messages at the end of the pass */
	struct xconn *corked;	     /* connections with corked messages */
	void (*on_bytes)(void *arg); /* bytes came from a peer (tcp_transport_new) */
	void *on_bytes_arg;
};

struct xconn {
	struct tstream st; /* first: the transport ops cast between the two */
	struct tcp_transport *t;
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

	/*
	 * Small messages without payload (replies, control) are corked: copied
	 * here and written together, once per loop turn, so a burst of requests
	 * costs one write of their replies, not one per reply.
	 */
	char *cork;
	size_t cork_len, cork_cap;
	unsigned cork_replies;
	struct xconn *cork_next; /* in t->corked */
	bool on_cork_list;

	/* Write queue (see "Backpressure"). */
	size_t reply_cost; /* of the replies queued and not yet written */
	unsigned replies;  /* how many */
	bool paused;	   /* reading stopped until the replies drain */
	bool stall_armed;
	size_t stall_size;    /* libuv's write queue size at the last check */
	uint64_t progress_ms; /* when the write queue last moved */
};

struct wreq {
	uv_write_t req;
	struct xconn *x;
	bool has_rx;	  /* an incoming READ served from a region: end it when written */
	void *owned;	  /* the payload's copy, freed when written */
	unsigned replies; /* replies in it, counted in x->replies and x->reply_cost */
	size_t cost;
	struct peer_rx rx;
	_Alignas(8) uint8_t msg[]; /* the fixed part */
};

static void xfail(struct xconn *x, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void tcp_close(struct xconn *x);

static void cork_unlist(struct xconn *x)
{
	struct xconn **pp;

	if (!x->on_cork_list)
		return;
	for (pp = &x->t->corked; *pp; pp = &(*pp)->cork_next)
		if (*pp == x) {
			*pp = x->cork_next;
			break;
		}
	x->on_cork_list = false;
}

static void xconn_unref(struct xconn *x)
{
	if (--x->handles)
		return;
	tstream_fini(&x->st);
	cork_unlist(x);
	free(x->cork);
	free(x);
}

static void on_timer_closed(uv_handle_t *h)
{
	xconn_unref(h->data);
}

static void on_closed(uv_handle_t *h)
{
	struct xconn *x = h->data;

	tstream_fini(&x->st);
	if (!x->silent && x->st.link)
		peer_x_failed(x->st.link, x->err ? x->err : -ECONNRESET,
			      x->why[0] ? x->why : "connection closed");
	xconn_unref(x);
}

static void close_handles(struct xconn *x)
{
	uv_close((uv_handle_t *)&x->stall, on_timer_closed);
	uv_close((uv_handle_t *)&x->tcp, on_closed);
}

static int write_out(struct xconn *x, const void *msg, size_t len, unsigned replies,
		     const void *payload, uint64_t plen, const struct peer_rx *rx, void *owned);

static void tcp_close(struct xconn *x)
{
	if (x->closing)
		return;
	/* What is corked (a REJECT saying why, say) still goes out, if it can. */
	if (x->cork_len && !x->resolving)
		write_out(x, x->cork, x->cork_len, x->cork_replies, NULL, 0, NULL, NULL);
	x->cork_len = 0;
	x->cork_replies = 0;
	x->closing = true;
	tstream_stop(&x->st);
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

static void stream_fail(struct tstream *st, int err, const char *why)
{
	xfail((struct xconn *)st, err, "%s", why);
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
	if (w->replies) {
		x->reply_cost -= w->cost;
		x->replies -= w->replies;
	}
	if (w->has_rx)
		peer_x_rx_end(x->st.link, &w->rx, status < 0 ? -ECONNRESET : 0);
	tstream_bounce_free(w->owned);
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

/*
 * Write what we can of @len bytes of @msg and @plen at @payload now, with no
 * write request and no change to what the loop polls for. Returns the bytes
 * written: 0 when the socket is full, writes are queued, or it failed.
 */
static int64_t write_now(struct xconn *x, const void *msg, size_t len, const void *payload,
			 uint64_t plen)
{
	uv_buf_t bufs[2] = {
		uv_buf_init((char *)msg, (unsigned)len),
		uv_buf_init((char *)payload, (unsigned)plen),
	};
	int n;

	/*
	 * With bytes still queued it says UV_EAGAIN: order on the wire is kept.
	 * An error is left to the queued write, whose callback reports it (this
	 * runs inside tcp_close() too, which must not be entered again).
	 */
	n = uv_try_write((uv_stream_t *)&x->tcp, bufs, plen ? 2 : 1);
	if (n < 0)
		return 0;
	x->progress_ms = uv_now(x->tcp.loop);
	return n;
}

/* Write @len bytes of @msg (holding @replies replies) and @plen bytes at @payload. */
static int write_out(struct xconn *x, const void *msg, size_t len, unsigned replies,
		     const void *payload, uint64_t plen, const struct peer_rx *rx, void *owned)
{
	struct wreq *w;
	uv_buf_t bufs[2];
	int64_t done = 0;
	unsigned n = 0;
	int r;

	/*
	 * Most writes go out at once: then nothing is queued, and a reply
	 * never pauses reading. A READ's payload (@rx) is ended by on_written().
	 */
	if (!rx) {
		done = write_now(x, msg, len, payload, plen);
		if ((uint64_t)done == len + plen) {
			tstream_bounce_free(owned);
			return 0;
		}
		if ((size_t)done >= len) {
			payload = (const char *)payload + (done - (int64_t)len);
			plen -= (uint64_t)done - len;
			msg = (const char *)msg + len;
			len = 0;
		} else {
			msg = (const char *)msg + done;
			len -= (size_t)done;
		}
	}
	/* Failing after part of it went out: the far side has a torn message. */
	w = malloc(sizeof(*w) + len);
	if (!w) {
		tstream_bounce_free(owned);
		return done ? -ECONNABORTED : -ENOMEM;
	}
	w->x = x;
	w->owned = owned;
	w->req.data = w;
	w->has_rx = rx != NULL;
	if (rx)
		w->rx = *rx;
	w->replies = replies;
	w->cost = sizeof(*w) + len;
	memcpy(w->msg, msg, len);
	if (len)
		bufs[n++] = uv_buf_init((char *)w->msg, (unsigned)len);
	if (plen)
		bufs[n++] = uv_buf_init((char *)payload, (unsigned)plen);
	r = uv_write(&w->req, (uv_stream_t *)&x->tcp, bufs, n, on_written);
	if (r < 0) {
		tstream_bounce_free(owned);
		free(w);
		return done ? -ECONNABORTED : -ENOTCONN;
	}
	if (replies) {
		x->reply_cost += w->cost;
		x->replies += replies;
		read_pause(x);
	}
	stall_arm(x);
	return 0;
}

/* Write what is corked on @x, in one write. */
static int cork_flush(struct xconn *x)
{
	int r = 0;

	if (x->cork_len && !x->closing)
		r = write_out(x, x->cork, x->cork_len, x->cork_replies, NULL, 0, NULL, NULL);
	x->cork_len = 0;
	x->cork_replies = 0;
	if (r < 0)
		xfail(x, r, "cannot queue a write");
	return r;
}

static void on_flush(void *arg)
{
	struct tcp_transport *t = arg;
	struct xconn *x;

	while ((x = t->corked)) {
		t->corked = x->cork_next;
		x->cork_next = NULL;
		x->on_cork_list = false;
		cork_flush(x);
	}
}

/* Cork a small message: written with the others before the loop next polls. */
static int cork(struct xconn *x, const void *msg, size_t len, bool reply)
{
	struct tcp_transport *t = x->t;

	if (x->cork_len + len > x->cork_cap) {
		size_t cap = x->cork_cap ? x->cork_cap * 2 : 4096;
		char *nb;

		while (cap < x->cork_len + len)
			cap *= 2;
		nb = realloc(x->cork, cap);
		if (!nb)
			return -ENOMEM;
		x->cork = nb;
		x->cork_cap = cap;
	}
	memcpy(x->cork + x->cork_len, msg, len);
	x->cork_len += len;
	x->cork_replies += reply;
	if (!x->on_cork_list) {
		x->on_cork_list = true;
		x->cork_next = t->corked;
		t->corked = x;
		ev_timer_start(t->ev, t->flusher, 0, 0);
	}
	return 0;
}

/* Queue a fixed part plus an optional payload iovec, in order with what is corked. */
static int queue(struct xconn *x, const void *msg, size_t len, const void *payload, uint64_t plen,
		 const struct peer_rx *rx, void *owned)
{
	const struct pp_hdr *h = msg;

	if (!x->closing && !plen && !rx)
		return cork(x, msg, len, is_reply(h->type));
	if (x->closing || cork_flush(x) < 0) {
		tstream_bounce_free(owned);
		return -ENOTCONN;
	}
	return write_out(x, msg, len, is_reply(h->type), payload, plen, rx, owned);
}

static int stream_write(struct tstream *st, const void *msg, size_t len, const void *payload,
			uint64_t plen, const struct peer_rx *rx, void *owned)
{
	return queue((struct xconn *)st, msg, len, payload, plen, rx, owned);
}

static const struct tstream_io stream_io = {
	.write = stream_write,
	.fail = stream_fail,
};

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct xconn *x = h->data;
	char *b;
	size_t n;

	tstream_rx_buf(&x->st, &b, &n);
	*buf = uv_buf_init(b, (unsigned)n);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct xconn *x = s->data;

	if (x->closing)
		return;
	if (n < 0) {
		xfail(x, -ECONNRESET, "%s",
		      n == UV_EOF ? "closed by the peer" : uv_strerror((int)n));
		return;
	}
	if (n == 0)
		return;
	peer_x_alive(x->st.link);
	if (x->t->on_bytes)
		x->t->on_bytes(x->t->on_bytes_arg);
	tstream_consumed(&x->st, (size_t)n);
}

static void start_reading(struct xconn *x)
{
	int r;

	uv_tcp_nodelay(&x->tcp, 1);
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
		peer_x_connected(x->st.link);
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

static struct xconn *xconn_new(struct tcp_transport *t, struct peer_link *link)
{
	struct xconn *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	tstream_init(&x->st, &stream_io, link);
	x->t = t;
	if (uv_tcp_init(t->loop, &x->tcp) < 0) {
		free(x);
		return NULL;
	}
	uv_timer_init(t->loop, &x->stall);
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
	struct xconn *x = xconn_new(t, link);
	int r;

	if (!x)
		return -ENOMEM;
	x->port = port;
	snprintf(x->addr, sizeof(x->addr), strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
	x->gai.data = x;
	x->resolving = true;
	r = uv_getaddrinfo(t->loop, &x->gai, on_resolved, host, NULL, &hints);
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
		snprintf(buf, len, "%s:%u", host,
			 ntohs(((const struct sockaddr_in *)ss)->sin_port));
	}
}

/* The fd reserve (util.h) is for local clients: no peer connection may take from it. */
static bool in_reserve(struct xconn *x)
{
	uv_os_fd_t fd;

	if (uv_fileno((uv_handle_t *)&x->tcp, &fd) < 0 || !fd_reserved(fd, FD_PEER))
		return false;
	stats_totals.peer_refused[STATS_REFUSED_FDS]++;
	log_ratelimited("peer connections refused (file descriptors)", LOG_WARNING,
			"refusing a peer connection from %s: the file descriptors left are kept "
			"for local clients (fd %d, RLIMIT_NOFILE)",
			x->addr, (int)fd);
	return true;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct tcp_transport *t = server->data;
	struct sockaddr_storage ss;
	int sl = sizeof(ss);
	struct xconn *x;

	if (status < 0) {
		/* EMFILE: libuv has accepted and closed them with its spare fd. */
		if (status == UV_EMFILE || status == UV_ENFILE)
			stats_totals.peer_refused[STATS_REFUSED_FDS]++;
		return;
	}
	x = xconn_new(t, NULL);
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
	if (in_reserve(x)) {
		x->silent = true;
		tcp_close(x);
		return;
	}
	x->st.link = peer_x_accepted(&t->base, x, x->addr);
	if (!x->st.link) {
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
	r = uv_tcp_init(t->loop, &t->listener);
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

static int tcp_export_info(struct transport *t, struct export *e, const char *peer, void *buf,
			   size_t cap)
{
	return 0; /* the exporting daemon checks every op itself */
}

static void on_transport_closed(uv_handle_t *h)
{
	free(h->data);
}

static void tcp_free(struct transport *tt)
{
	struct tcp_transport *t = (struct tcp_transport *)tt;

	ev_timer_free(t->ev, t->flusher);
	if (t->listening)
		uv_close((uv_handle_t *)&t->listener, on_transport_closed);
	else
		free(t);
}

static const struct transport_ops tcp_ops = {
	.name = "tcp",
	.listen = tcp_listen,
	.connect = tcp_connect,
	.remote_addr = tcp_remote_addr,
	.close = tcp_close,
	.send_ctrl = tstream_send_ctrl,
	.submit = tstream_submit,
	.export_info = tcp_export_info,
	.free = tcp_free,
};

int tcp_transport_new(uv_loop_t *loop, struct evloop *ev, void (*on_bytes)(void *arg), void *arg,
		      struct transport **ret)
{
	struct tcp_transport *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->on_bytes = on_bytes;
	t->on_bytes_arg = arg;
	if (ev_timer_new(ev, on_flush, t, &t->flusher) < 0) {
		free(t);
		return -ENOMEM;
	}
	t->base.ops = &tcp_ops;
	t->loop = loop;
	t->ev = ev;
	*ret = &t->base;
	return 0;
}
