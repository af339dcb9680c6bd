/* SPDX-License-Identifier: MIT */
/*
 * The peer layer's test bench (peer-bench.h): a manual evloop, a tcp
 * transport around the real tcp_stream.c without sockets, the far daemon,
 * and the fixture.
 */
#include "peer-bench.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../daemon/base/evloop.h"
#include "../../daemon/base/log.h"
#include "fuzz-link.h"

#define PAGE 4096

/* An invariant of the bench: a violation is a crash, with the condition. */
#define need(cond)                                                                 \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                   \
		}                                                                  \
	} while (0)

bool pb_trace;

/* ---- Random bytes: a fixed sequence, started again by every pb_init(). ---- */

static uint64_t rng_state;

static uint32_t rng_random(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static void rng_buf(void *const buf, const size_t size)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < size; i++)
		p[i] = (uint8_t)rng_random();
}

static const char *rng_name(void)
{
	return "peer-bench";
}

static randombytes_implementation rng = {
	.implementation_name = rng_name,
	.random = rng_random,
	.buf = rng_buf,
};

/* ---- The evloop: timers run when the bench says. ---- */

struct ev_timer {
	struct ev_timer *next;
	struct pb *pb;
	void (*cb)(void *arg);
	void *arg;
	uint64_t serial;
	bool armed;
	uint64_t ms, repeat_ms;
};

static struct pb *ev_pb(struct evloop *ev)
{
	return (struct pb *)((char *)ev - offsetof(struct pb, ev));
}

static int ev_timer_new_(struct evloop *ev, void (*cb)(void *arg), void *arg, struct ev_timer **ret)
{
	struct pb *pb = ev_pb(ev);
	struct ev_timer *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->pb = pb;
	t->cb = cb;
	t->arg = arg;
	t->serial = ++pb->timer_serial;
	t->next = pb->timers;
	pb->timers = t;
	*ret = t;
	return 0;
}

static void ev_timer_start_(struct ev_timer *t, uint64_t ms, uint64_t repeat_ms)
{
	t->armed = true;
	t->ms = ms;
	t->repeat_ms = repeat_ms;
}

static void ev_timer_stop_(struct ev_timer *t)
{
	t->armed = false;
}

static void ev_timer_free_(struct ev_timer *t)
{
	struct ev_timer **pp;

	for (pp = &t->pb->timers; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	free(t);
}

static int ev_watch_new_(struct evloop *ev, int fd, void (*cb)(void *arg), void *arg,
			 struct ev_watch **ret)
{
	return -ENOSYS; /* the verbs transport's; not on this bench */
}

static void ev_watch_free_(struct ev_watch *w)
{
}

static uint64_t ev_now_ms_(struct evloop *ev)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static const struct evloop_ops bench_ev_ops = {
	.timer_new = ev_timer_new_,
	.timer_start = ev_timer_start_,
	.timer_stop = ev_timer_stop_,
	.timer_free = ev_timer_free_,
	.watch_new = ev_watch_new_,
	.watch_free = ev_watch_free_,
	.now_ms = ev_now_ms_,
};

static struct ev_timer *timer_by_serial(struct pb *pb, uint64_t serial)
{
	struct ev_timer *t;

	for (t = pb->timers; t; t = t->next)
		if (t->serial == serial)
			return t;
	return NULL;
}

/*
 * Run the armed timers (only "soon" ones unless @all) once each. A callback
 * may free or start any timer, its own included: they are found again by
 * serial before each call.
 */
static bool run_timers(struct pb *pb, bool all)
{
	uint64_t serials[64];
	unsigned n = 0, i;
	struct ev_timer *t;

	for (t = pb->timers; t && n < 64; t = t->next)
		if (t->armed && (all || t->ms == 0))
			serials[n++] = t->serial;
	for (i = 0; i < n; i++) {
		t = timer_by_serial(pb, serials[i]);
		if (!t || !t->armed)
			continue;
		if (!t->repeat_ms)
			t->armed = false;
		t->cb(t->arg);
	}
	return n > 0;
}

/* ---- The transport: tcp_uv.c around tcp_stream.c, without the socket. ---- */

static struct pb *tcp_pb(struct transport *t)
{
	return (struct pb *)((char *)t - offsetof(struct pb, tcp));
}

static void conn_close(struct xconn *x)
{
	if (x->closing)
		return;
	x->closing = true;
	tstream_stop(&x->st);
}

static void stream_fail(struct tstream *st, int err, const char *why)
{
	struct xconn *x = (struct xconn *)st;

	if (!x->err) {
		x->err = err;
		snprintf(x->why, sizeof(x->why), "%s", why);
	}
	conn_close(x);
}

static int stream_write(struct tstream *st, const void *msg, size_t len, const void *payload,
			uint64_t plen, const struct peer_rx *rx, void *owned)
{
	struct xconn *x = (struct xconn *)st;
	const volatile uint8_t *p = payload;
	uint8_t sum = 0;
	uint64_t i;

	need(len >= sizeof(struct pp_hdr) && len <= PP_FIXED_MAX);
	if (x->closing || (rx && x->n_rx == PB_MAX_RX)) {
		tstream_bounce_free(owned); /* the glue could not queue it either */
		return x->closing ? -ENOTCONN : -ENOMEM;
	}
	/* The payload is read where the stream says it is, as writev() would. */
	for (i = 0; i < plen; i++)
		sum ^= p[i];
	(void)sum;
	if (rx)
		x->rx[x->n_rx++] = *rx;
	if (pb_trace) {
		const struct pp_hdr *h = msg;

		int32_t status = 0;

		/* Every reply but PONG and REVOKE_R has its status right after the header. */
		if ((h->type & 1) == 0 && h->type > PP_PONG && h->type != PP_REVOKE_R)
			memcpy(&status, (const char *)msg + sizeof(*h), sizeof(status));
		fprintf(stderr, "  %s: we wrote 0x%04x id %llu status %d (%zu + %llu bytes)\n",
			x->addr, h->type, (unsigned long long)h->id, status, len,
			(unsigned long long)plen);
	}
	if (x->q_n < PB_QUEUE) {
		struct pb_msg *m = &x->q[(x->q_head + x->q_n++) % PB_QUEUE];

		memcpy(m->m, msg, len);
		m->len = (uint32_t)len;
	}
	x->written += len + plen;
	tstream_bounce_free(owned);
	return 0;
}

static const struct tstream_io bench_io = {
	.write = stream_write,
	.fail = stream_fail,
};

static struct xconn *conn_new(struct pb *pb, struct peer_link *link, bool outbound,
			      const char *addr)
{
	struct xconn *x = calloc(1, sizeof(*x));

	need(x);
	tstream_init(&x->st, &bench_io, link);
	x->pb = pb;
	x->outbound = outbound;
	snprintf(x->addr, sizeof(x->addr), "%s", addr);
	x->next = pb->conns;
	pb->conns = x;
	return x;
}

static void conn_free(struct xconn *x)
{
	struct xconn **pp;

	for (pp = &x->pb->conns; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			break;
		}
	peer_hs_clear(&x->far);
	free(x);
}

static int tcp_listen(struct transport *t, const char *host, uint16_t port, char *why,
		      size_t whylen)
{
	return 0;
}

static int tcp_connect(struct transport *t, const char *host, uint16_t port, struct peer_link *link,
		       struct xconn **ret)
{
	struct pb *pb = tcp_pb(t);
	char addr[80];

	if (pb->connect_err)
		return pb->connect_err;
	snprintf(addr, sizeof(addr), "%s:%u", host, port);
	*ret = conn_new(pb, link, true, addr);
	return 0;
}

static const char *tcp_remote_addr(const struct xconn *x)
{
	return x->addr;
}

static int tcp_export_info(struct transport *t, struct export *e, const char *peer, void *buf,
			   size_t cap)
{
	return 0;
}

static void tcp_free(struct transport *t)
{
	struct pb *pb = tcp_pb(t);

	need(!pb->tcp_freed);
	pb->tcp_freed = true;
}

static const struct transport_ops bench_tcp_ops = {
	.name = "tcp",
	.listen = tcp_listen,
	.connect = tcp_connect,
	.remote_addr = tcp_remote_addr,
	.close = conn_close,
	.send_ctrl = tstream_send_ctrl,
	.submit = tstream_submit,
	.export_info = tcp_export_info,
	.free = tcp_free,
};

/*
 * What libuv does for a closed connection on the next turn: its writes are
 * cancelled (a served READ ends -ECONNRESET), then the close callback ends
 * the stream and reports the link.
 */
static bool report_closed(struct pb *pb)
{
	struct xconn *x;
	unsigned i;

	for (x = pb->conns; x; x = x->next)
		if (x->closing)
			break;
	if (!x)
		return false;
	for (i = 0; i < x->n_rx; i++)
		peer_x_rx_end(x->st.link, &x->rx[i], -ECONNRESET);
	x->n_rx = 0;
	tstream_fini(&x->st);
	if (pb_trace)
		fprintf(stderr, "  %s: closed: %s\n", x->addr,
			x->why[0] ? x->why : "(by the peer layer)");
	if (!x->silent && x->st.link)
		peer_x_failed(x->st.link, x->err ? x->err : -ECONNRESET,
			      x->why[0] ? x->why : "connection closed");
	conn_free(x);
	return true;
}

/* Served READs whose payload was written: the stream's rx ends (on_written). */
static bool finish_writes(struct pb *pb)
{
	struct xconn *x;
	bool did = false;

	for (x = pb->conns; x; x = x->next) {
		while (x->n_rx && !x->closing) {
			struct peer_rx rx = x->rx[0];

			memmove(&x->rx[0], &x->rx[1], --x->n_rx * sizeof(rx));
			peer_x_rx_end(x->st.link, &rx, 0);
			did = true;
		}
	}
	return did;
}

void pb_turn(struct pb *pb)
{
	unsigned rounds = 0;
	bool did;

	do {
		need(++rounds < 10000);
		did = finish_writes(pb);
		did |= run_timers(pb, false);
		did |= report_closed(pb);
	} while (did);
}

void pb_tick(struct pb *pb)
{
	pb_turn(pb);
	run_timers(pb, true);
	pb_turn(pb);
}

/* ---- Connections and the far daemon. ---- */

struct xconn *pb_conn(struct pb *pb)
{
	struct xconn *x;

	for (x = pb->conns; x; x = x->next)
		if (x->connected && !x->closing)
			return x;
	return NULL;
}

struct xconn *pb_accept(struct pb *pb, const char *addr)
{
	struct xconn *x = conn_new(pb, NULL, false, addr);

	x->st.link = peer_x_accepted(&pb->tcp, x, addr);
	if (!x->st.link) {
		conn_free(x); /* closed silently: the peer layer never heard of it */
		return NULL;
	}
	x->connected = true;
	return x;
}

struct xconn *pb_connect_out(struct pb *pb)
{
	struct xconn *x;

	for (x = pb->conns; x; x = x->next)
		if (x->outbound && !x->closing && !x->connected)
			break;
	if (!x)
		return NULL;
	x->connected = true;
	peer_x_connected(x->st.link);
	return x;
}

void pb_feed(struct xconn *x, const void *data, size_t n, size_t chunk)
{
	const uint8_t *p = data;

	while (n && !x->closing) {
		char *buf;
		size_t cap;

		tstream_rx_buf(&x->st, &buf, &cap);
		if (!buf || !cap)
			return;
		if (cap > n)
			cap = n;
		if (chunk && cap > chunk)
			cap = chunk;
		memcpy(buf, p, cap);
		p += cap;
		n -= cap;
		peer_x_alive(x->st.link);
		tstream_consumed(&x->st, cap);
	}
}

/* The oldest message we wrote that the far side has not read, or NULL. */
static struct pb_msg *far_next(struct xconn *x)
{
	struct pb_msg *m;

	if (!x->q_n)
		return NULL;
	m = &x->q[x->q_head];
	x->q_head = (x->q_head + 1) % PB_QUEUE;
	x->q_n--;
	x->pb->far_read += m->len;
	return m;
}

static const struct peer_conf *far_lookup(void *ctx, const char *name)
{
	struct pb *pb = ctx;

	return !strcmp(name, PB_NODE) ? &pb->near_conf : NULL;
}

/* The far daemon's next handshake step on @x: false when it has none to take. */
static bool far_step(struct xconn *x)
{
	_Alignas(8) uint8_t out[PP_FIXED_MAX];
	struct pb *pb = x->pb;
	struct pb_msg *m;
	size_t n = 0;

	if (x->closing)
		return false;
	if (!x->far_hs) {
		x->far_hs = true;
		if (x->outbound) {
			peer_hs_init_responder(&x->far, PB_FAR, pb->far_inc, far_lookup, pb);
		} else {
			struct pp_hello hello;

			peer_hs_init_initiator(&x->far, PB_FAR, pb->far_inc, &pb->near_conf,
					       &hello);
			pb_feed(x, &hello, sizeof(hello), 0);
		}
		return true;
	}
	if (x->far.state == HS_DONE || x->far.state == HS_FAILED || !(m = far_next(x)))
		return false;
	peer_hs_consume(&x->far, m->m, m->len, out, &n);
	if (n)
		pb_feed(x, out, n, 0);
	return true;
}

bool pb_handshake_step(struct xconn *x)
{
	far_step(x);
	return !x->closing && x->far.state == HS_DONE;
}

bool pb_handshake(struct xconn *x)
{
	while (far_step(x))
		;
	return !x->closing && x->far.state == HS_DONE;
}

void pb_far_restart(struct pb *pb)
{
	struct xconn *x;

	pb->far_inc++;
	for (x = pb->conns; x; x = x->next)
		if (!x->closing)
			pb_break(x, x->connected ? -ECONNRESET : -ECONNREFUSED);
}

void pb_break(struct xconn *x, int err)
{
	stream_fail(&x->st, err, "connection broken by the bench");
}

/* The far daemon's honest answer to one message we sent. */
static void far_answer_one(struct xconn *x, const struct pb_msg *m)
{
	union {
		struct pp_hdr h;
		struct pp_ping ping;
		struct pp_lookup lk;
		struct pp_lookup_r lr;
		struct pp_revoke rv;
		struct pp_status st;
		struct pp_read rd;
		struct pp_read_r rr;
		struct pp_notify nt;
	} in, out;
	uint8_t *payload;

	memcpy(&in, m->m, m->len < sizeof(in) ? m->len : sizeof(in));
	memset(&out, 0, sizeof(out));
	switch (in.h.type) {
	case PP_PING:
		out.ping = in.ping;
		out.ping.h.type = PP_PONG;
		pb_feed(x, &out.ping, sizeof(out.ping), 0);
		return;
	case PP_LOOKUP:
		pp_hdr_init(&out.h, PP_LOOKUP_R, in.h.id);
		if (!strcmp(in.lk.name, PB_FAR_MISSING)) {
			out.lr.status = -RP_ENOEXPORT;
		} else {
			out.lr.export_id = PB_FAR_EXPORT;
			out.lr.export_inc = x->pb->far_inc;
			out.lr.len = PB_FAR_LEN;
			out.lr.access = RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE;
		}
		pb_feed(x, &out.lr, sizeof(out.lr), 0);
		return;
	case PP_REVOKE:
		out.rv = in.rv;
		out.rv.h.type = PP_REVOKE_R;
		out.rv.h.id = 0;
		pb_feed(x, &out.rv, sizeof(out.rv), 0);
		return;
	case PP_NOTIFY:
	case PP_WRITE:
	case PP_SEND:
		pp_hdr_init(&out.h, (uint16_t)(in.h.type + 1), in.h.id);
		pb_feed(x, &out.st, sizeof(out.st), 0);
		return;
	case PP_READ:
		pp_hdr_init(&out.h, PP_READ_R, in.h.id);
		out.rr.len = in.rd.len;
		pb_feed(x, &out.rr, sizeof(out.rr), 0);
		if (!in.rd.len || in.rd.len > PB_FAR_LEN)
			return;
		payload = malloc(in.rd.len);
		need(payload);
		memset(payload, 0xab, in.rd.len);
		pb_feed(x, payload, in.rd.len, 0);
		free(payload);
		return;
	default:
		return; /* replies and handshake messages need no answer */
	}
}

void pb_far_answer(struct xconn *x)
{
	struct pb_msg *m;

	while (!x->closing && (m = far_next(x)))
		far_answer_one(x, m);
}

/* ---- The client. ---- */

void pb_submit(struct pb *pb, struct rp_sqe q)
{
	if (!pb->a || !pb->a->ring.base || pb->next_cookie + 1 >= PB_MAX_COOKIES)
		return;
	q.cookie = ++pb->next_cookie;
	if (th_submit(pb->a, &q) == 0)
		th_run(pb->a);
}

void pb_reap(struct pb *pb)
{
	struct rp_cqe cqe[64];
	int n;

	if (!pb->a || !pb->a->ring.base)
		return;
	while ((n = th_reap(pb->a, cqe, 64)) > 0) {
		int i;

		for (i = 0; i < n; i++) {
			const struct rp_cqe *c = &cqe[i];

			need(c->op >= RP_OP_WRITE && c->op <= RP_OP_NOTIFY && c->status <= 0);
			need(c->status == 0 || c->len == 0);
			need(c->op == RP_OP_NOTIFY ? !c->cookie : c->cookie < pb->next_cookie + 1);
			need(!c->cookie || !pb->seen[c->cookie]++);
			if (pb_trace)
				fprintf(stderr, "  completion op %u cookie %llu status %d len %u\n",
					c->op, (unsigned long long)c->cookie, c->status, c->len);
		}
		pb->ops_reaped += (unsigned)n;
	}
	/* Room in the completion ring again: what waited in the ring goes on. */
	th_run(pb->a);
}

static void ping_cb(void *ctx, int status, uint64_t rtt_us)
{
	struct pb *pb = ctx;

	pb->pings_done++;
}

void pb_ping(struct pb *pb)
{
	peer_ping(pb->peers, PB_FAR, ping_cb, pb);
}

void pb_client_close(struct pb *pb)
{
	if (!pb->a)
		return;
	admin_session_release(&pb->a->s);
	th_session_close(pb->a);
	pb->a = NULL;
}

/* ---- Configs. ---- */

static struct peer_conf far_conf_template(void)
{
	static char name[] = PB_FAR, host[] = "192.0.2.2";
	struct peer_conf c = {
		.name = name,
		.host = host,
		.port = 7471,
		.transport = RP_TRANSPORT_TCP,
		.key_len = 32,
	};

	memcpy(c.key, "0123456789abcdef0123456789abcdef", 32);
	return c;
}

void pb_reload(struct pb *pb, unsigned which)
{
	static struct peer_conf other;

	if (which == 0) {
		peers_reload(pb->peers, &pb->th.cfg);
		return;
	}
	pb->alt = pb->th.cfg;
	if (which == 1) {
		pb->alt.peers = NULL;
		pb->alt.n_peers = 0;
	} else {
		other = far_conf_template();
		if (which == 2)
			memcpy(other.key, "fedcba9876543210fedcba9876543210", 32);
		else
			other.transport = RP_TRANSPORT_VERBS; /* none on this bench */
		pb->alt.peers = &other;
		pb->alt.n_peers = 1;
	}
	peers_reload(pb->peers, &pb->alt);
}

static int reload_hook(void *arg, char *msg, size_t msglen, unsigned *ret_restart)
{
	struct pb *pb = arg;
	unsigned which = pb->reloads++ % 4;

	pb_reload(pb, which);
	snprintf(msg, msglen, "reloaded: configuration %u", which);
	*ret_restart = 0;
	return 0;
}

/* ---- The fixture. ---- */

static void client_setup(struct pb *pb, uid_t uid, gid_t gid)
{
	uint32_t rw = RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE, id = 0;
	struct rp_sqe q = { .opcode = RP_SQE_POST_RECV, .region = 2, .target = 1 };
	struct th_session *a = th_session_new(&pb->th, uid, gid);
	struct rp_export_acl_req far = { .n_peers = 1, .peers = { PB_FAR } };

	pb->a = a;
	pb->sessions++;
	need(th_hello(a) == 0);
	need(th_region(a, 4 * PAGE, &id, NULL) == 0 && id == 1);
	need(th_region(a, PAGE, &id, NULL) == 0 && id == 2);
	need(th_export_acl(a, 1, rw, "a.rw", &far) == 0);
	need(th_export_acl(a, 2, RP_ACCESS_REMOTE_READ, "a.ro", &far) == 0);
	need(th_export(a, 2, rw, "a.priv") == 0); /* its owner's only: peers are refused */
	need(th_ep_bind(a, "a.ep", &id) == 0 && id == 1);
	need(th_dest_open(a, PB_FAR, "far.ep", &id) == 0 && id == 1);
	/* Two receives waiting on a.ep, a half page each. */
	q.len = PAGE / 2;
	pb_submit(pb, q);
	q.offset = PAGE / 2;
	pb_submit(pb, q);
}

void pb_init(struct pb *pb, enum pb_mode mode, unsigned flags)
{
	static bool once;
	struct peers_env env = { 0 };
	struct xconn *x = NULL;
	struct config *cfg;

	if (!once) {
		once = true;
		pb_trace = getenv("FUZZ_LINK_TRACE") != NULL;
		need(randombytes_set_implementation(&rng) == 0);
		need(sodium_init() >= 0);
	}
	rng_state = 0x5eed;
	memset(pb, 0, sizeof(*pb));
	pb->far_inc = PB_FAR_INC;
	need(th_init(&pb->th) == 0);
	pb->th.lean = true;
	cfg = &pb->th.cfg;
	cfg->node_name = PB_NODE;
	cfg->listen_host = "192.0.2.1";
	cfg->listen_port = 7471;
	cfg->max_unauthenticated = 4;
	cfg->max_unauthenticated_per_address = 2;
	cfg->max_failed_handshakes = 3;
	cfg->refusal_seconds = 60;
	pb->far_conf = far_conf_template();
	pb->near_conf = pb->far_conf;
	pb->near_conf.name = (char *)PB_NODE;
	cfg->peers = &pb->far_conf;
	cfg->n_peers = 1;

	pb->ev.ops = &bench_ev_ops;
	pb->tcp.ops = &bench_tcp_ops;
	pb->connect_err = mode == PB_UP_OUT || mode == PB_RAW_OUT ? 0 : -ECONNREFUSED;
	env.core = pb->th.core;
	env.cfg = cfg;
	env.ev = &pb->ev;
	env.incarnation = PB_INC;
	env.transport = RP_TRANSPORT_TCP;
	env.tcp = &pb->tcp;
	need(peers_new(&env, &pb->peers) == 0);
	pb->connect_err = 0;

	pb->admin.cfg = cfg;
	pb->admin.core = pb->th.core;
	pb->admin.peers = pb->peers;
	pb->admin.transport = RP_TRANSPORT_TCP;
	pb->admin.incarnation = PB_INC;
	pb->admin.started = time(NULL);
	pb->admin.reload = reload_hook;
	pb->admin.reload_arg = pb;

	if (flags & PB_F_ADMIN_GID)
		cfg->admin_gid = PB_ADMIN_GID;
	client_setup(pb, flags & PB_F_ROOT ? 0 : 1000, flags & PB_F_GID ? PB_ADMIN_GID : 1000);
	switch (mode) {
	case PB_RAW_IN:
	case PB_UP_IN:
		x = pb_accept(pb, "192.0.2.2:40000");
		need(x);
		break;
	case PB_UP_OUT:
	case PB_RAW_OUT:
		x = pb_connect_out(pb);
		need(x);
		break;
	}
	if (mode == PB_UP_IN || mode == PB_UP_OUT)
		need(pb_handshake(x));
	if (flags & PB_F_LOOKED_UP && (mode == PB_UP_IN || mode == PB_UP_OUT)) {
		struct pp_lookup lk[2];

		memset(lk, 0, sizeof(lk));
		pp_hdr_init(&lk[0].h, PP_LOOKUP, 1);
		snprintf(lk[0].name, sizeof(lk[0].name), "a.rw");
		pp_hdr_init(&lk[1].h, PP_LOOKUP, 2);
		snprintf(lk[1].name, sizeof(lk[1].name), "a.ro");
		pb_feed(x, lk, sizeof(lk), 0);
		x->q_n = 0; /* the far side takes note of the ids: 1 and 2 */
	}
	if (flags & PB_F_REMOTE && (mode == PB_UP_IN || mode == PB_UP_OUT)) {
		uint32_t id = 0;

		need(th_remote_open(pb->a, PB_FAR, "b.x", NULL) == 1);
		pb_far_answer(x);
		id = ((const struct rp_remote_reply *)th_reply_body(pb->a))->id;
		need(th_reply(pb->a)->status == 0 && id == 1);
	}
	pb_turn(pb);
}

void pb_fini(struct pb *pb)
{
	struct th *t = &pb->th;

	/* The manager's order: the clients go first, then the peer layer. */
	pb_client_close(pb);
	pb_turn(pb);
	peers_shutdown(pb->peers);
	pb_turn(pb);
	need(!pb->conns && pb->tcp_freed);
	pb->peers = peers_free(pb->peers);
	need(!pb->timers);
	need(t->n_freed == pb->sessions && t->dead_sends == 0);
	need(!t->core->sessions && !t->core->accts && !t->core->exports &&
	     !t->core->endpoint_names.n && !t->core->export_names.n && !t->core->n_remotes &&
	     !t->core->remote_keys.n && !t->core->n_exports && !t->core->n_regions &&
	     !t->core->bytes && !t->core->by_peer_id.n);
	th_fini(t);
}

/* ---- Records (fuzz-link.h). ---- */

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static void ev_ctrl(struct pb *pb, const uint8_t *msg, size_t len)
{
	struct xconn *x = pb_conn(pb);

	/* The verbs transport's framing: at most PEER_CTRL_MAX bytes, nothing checked. */
	if (x && len <= PEER_CTRL_MAX)
		peer_x_ctrl(x->st.link, msg, len);
}

static void ev_notify(struct pb *pb, const uint8_t *p)
{
	struct xconn *x = pb_conn(pb);

	if (x)
		peer_x_notify(x->st.link, p[0], le(p + 1, 2), le(p + 3, 2), p[5]);
}

static void ev_vsend(struct pb *pb, const uint8_t *p)
{
	static const char *const eps[4] = { "a.ep", "nobody", "", "a.rw" };
	struct peer_rx rx = { .kind = PEER_RX_SEND };
	struct xconn *x = pb_conn(pb);

	if (!x)
		return;
	rx.len = le(p + 1, 2);
	snprintf(rx.endpoint, sizeof(rx.endpoint), "%s", eps[p[0] & 3]);
	if (peer_x_rx_begin(x->st.link, &rx) < 0)
		return;
	memset(rx.addr, p[3], rx.len);
	peer_x_rx_end(x->st.link, &rx, p[4] & 1 ? -ECONNRESET : 0);
}

static void ev_op(struct pb *pb, const uint8_t *p)
{
	static const uint16_t ops[4] = { RP_SQE_WRITE, RP_SQE_READ, RP_SQE_SEND, RP_SQE_WRITE };
	struct rp_sqe q = { .imm = 0x5a };

	q.opcode = ops[p[0] & 3];
	q.flags = (p[0] & 3) == 3 ? RP_NOTIFY : 0;
	q.region = p[0] & 4 ? 2 : 1;
	q.target = p[0] & 8 ? 2 : 1;
	q.offset = (uint64_t)p[1] * 64;
	q.remote_offset = (uint64_t)p[1] * (p[0] & 16 ? 256 : 64);
	q.len = le(p + 2, 2);
	pb_submit(pb, q);
}

static void ev_recv(struct pb *pb)
{
	struct rp_sqe q = { .opcode = RP_SQE_POST_RECV, .region = 2, .target = 1 };

	q.len = PAGE / 2;
	pb_submit(pb, q);
}

static void ev_withdraw(struct pb *pb, uint8_t which)
{
	if (!pb->a)
		return;
	switch (which % 3) {
	case 0:
		th_unexport(pb->a, 1, "a.rw");
		break;
	case 1:
		th_unexport(pb->a, 2, "a.ro");
		break;
	default:
		th_region_free(pb->a, 1);
		break;
	}
}

static void ev_accept(struct pb *pb, uint8_t addr)
{
	char a[64];

	snprintf(a, sizeof(a), "192.0.2.%u:%u", 2 + addr % 4, 40001 + addr);
	pb_accept(pb, a);
}

size_t pb_event(struct pb *pb, const uint8_t *p, size_t n)
{
	struct xconn *x = pb_conn(pb);
	size_t len;

	if (!n)
		return 0;
	if (pb_trace)
		fprintf(stderr, "record %u\n", p[0] % FL_N);
	switch (p[0] % FL_N) {
	case FL_BYTES:
		if (n < 4 || n - 4 < (len = le(p + 1, 2)))
			return 0;
		if (x)
			pb_feed(x, p + 4, len, p[3]);
		return 4 + len;
	case FL_CTRL:
		if (n < 3 || n - 3 < (len = le(p + 1, 2)))
			return 0;
		ev_ctrl(pb, p + 3, len);
		return 3 + len;
	case FL_NOTIFY:
		if (n < 7)
			return 0;
		ev_notify(pb, p + 1);
		return 7;
	case FL_VSEND:
		if (n < 6)
			return 0;
		ev_vsend(pb, p + 1);
		return 6;
	case FL_OP:
		if (n < 5)
			return 0;
		ev_op(pb, p + 1);
		return 5;
	case FL_RECV:
		ev_recv(pb);
		return 1;
	case FL_OPEN:
		if (n < 2)
			return 0;
		if (pb->a)
			th_remote_open(pb->a, PB_FAR, p[1] & 1 ? PB_FAR_MISSING : "b.x", NULL);
		return 2;
	case FL_WITHDRAW:
		if (n < 2)
			return 0;
		ev_withdraw(pb, p[1]);
		return 2;
	case FL_TURN:
		pb_turn(pb);
		return 1;
	case FL_TICK:
		pb_tick(pb);
		return 1;
	case FL_ANSWER:
		if (x)
			pb_far_answer(x);
		return 1;
	case FL_BREAK:
		/* The newest connection, connected or still connecting (then it is refused). */
		for (x = pb->conns; x && x->closing; x = x->next)
			;
		if (x)
			pb_break(x, x->connected ? -ECONNRESET : -ECONNREFUSED);
		return 1;
	case FL_ACCEPT:
		if (n < 2)
			return 0;
		ev_accept(pb, p[1]);
		return 2;
	case FL_HANDSHAKE:
		if (x)
			pb_handshake(x);
		return 1;
	case FL_CONNECT:
		pb_connect_out(pb);
		return 1;
	case FL_REAP:
		pb_reap(pb);
		return 1;
	case FL_RELOAD:
		if (n < 2)
			return 0;
		pb_reload(pb, p[1] % 4);
		return 2;
	case FL_PING:
		pb_ping(pb);
		return 1;
	case FL_CLIENT_CLOSE:
		pb_client_close(pb);
		return 1;
	case FL_HS_STEP:
		if (x)
			pb_handshake_step(x);
		return 1;
	default: /* FL_RESTART */
		pb_far_restart(pb);
		return 1;
	}
}
