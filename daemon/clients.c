/* SPDX-License-Identifier: MIT */
/*
 * Client sessions, loop glue: each accepted socket and each session's
 * submission doorbell join the loop through uv_poll_t; the protocol and the
 * data path are in session.c and xfer.c, which never see the loop. Bad input
 * from a client ends that client's session; it never stops the daemon.
 */
#include "clients.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "manager.h"
#include "rp-fdpass.h"
#include "session.h"

/* Up to this many fds are received per packet so that extra ones can be closed. */
#define MAX_RECV_FDS 8
/*
 * After a session's submission ring runs empty the daemon keeps polling it
 * this long before arming its doorbell: a client that submits again within
 * that time (a ping-pong, a pipeline) costs neither side a system call or a
 * wake-up (an eventfd round trip is 94-187 us in the test guest).
 */
#define SQ_SPIN_NS 100000
/* Control packets taken from one client per wake-up, so none can hog the loop. */
#define CTRL_BUDGET 32
/*
 * Connections that have not said HELLO yet are not counted against any
 * user's limits, so they get their own: a few per uid, a ceiling overall,
 * and a deadline. Otherwise one local user could hold every fd the daemon
 * has by connecting and saying nothing.
 */
#define PREHELLO_PER_UID 8
#define PREHELLO_MAX 256
#define HELLO_DEADLINE_NS 5000000000ull
#define HELLO_SWEEP_MS 1000

struct conn {
	struct session s; /* first: conn and session addresses coincide */
	uv_poll_t poll;
	uv_poll_t sq_poll;
	bool sq_started;
	bool closing;
	unsigned open_handles;
	struct conn *hot_prev, *hot_next; /* in the spinner's list while polled */
	uint64_t hot_until;
	bool hot;
	uint64_t accepted_at; /* uv_hrtime() at accept, for the HELLO deadline */
};

/* Sessions whose rings are polled from the loop's idle phase. */
struct spinner {
	uv_idle_t idle;
	struct conn *hot;
	uv_timer_t hello_sweep; /* runs while some connection has not said HELLO */
	uint64_t refused;	/* connections refused by the pre-HELLO caps, for the log */
};

static void hot_unlink(struct spinner *sp, struct conn *k)
{
	if (!k->hot)
		return;
	if (k->hot_prev)
		k->hot_prev->hot_next = k->hot_next;
	else
		sp->hot = k->hot_next;
	if (k->hot_next)
		k->hot_next->hot_prev = k->hot_prev;
	k->hot = false;
	k->hot_prev = k->hot_next = NULL;
	if (!sp->hot)
		uv_idle_stop(&sp->idle);
}

static void conn_close(struct conn *k, const char *why);

/* Poll one hot session. false: it left the list. */
static bool spin_one(struct spinner *sp, struct conn *k, uint64_t now)
{
	int r = 1;

	if (xfer_pending(&k->s)) {
		r = xfer_run(&k->s, false, true);
		k->hot_until = now + SQ_SPIN_NS;
	} else if (now >= k->hot_until && !xfer_arm(&k->s)) {
		r = xfer_run(&k->s, false, false);
	} else if (now >= k->hot_until) {
		r = 0;
	}
	if (r == 1)
		return true;
	hot_unlink(sp, k);
	if (r < 0)
		conn_close(k, r == -EPROTO ? "corrupt submission ring" : strerror(-r));
	return false;
}

static void on_spin(uv_idle_t *h)
{
	struct spinner *sp = h->data;
	uint64_t now = uv_hrtime();
	struct conn *k = sp->hot, *next;

	for (; k; k = next) {
		next = k->hot_next;
		spin_one(sp, k, now);
	}
}

static void make_hot(struct clients *c, struct conn *k)
{
	struct spinner *sp = c->glue;

	k->hot_until = uv_hrtime() + SQ_SPIN_NS;
	if (k->hot)
		return;
	k->hot = true;
	k->hot_prev = NULL;
	k->hot_next = sp->hot;
	if (sp->hot)
		sp->hot->hot_prev = k;
	else
		uv_idle_start(&sp->idle, on_spin);
	sp->hot = k;
}

int clients_new(struct manager *m, struct clients **ret)
{
	struct clients *c = calloc(1, sizeof(*c));
	struct spinner *sp = calloc(1, sizeof(*sp));
	int r;

	if (!c || !sp) {
		free(c);
		free(sp);
		return -ENOMEM;
	}
	r = uv_idle_init(&m->loop, &sp->idle);
	if (r == 0)
		r = uv_timer_init(&m->loop, &sp->hello_sweep);
	if (r < 0) {
		free(c);
		free(sp);
		return r;
	}
	sp->idle.data = sp;
	sp->hello_sweep.data = c;
	c->glue = sp;
	c->m = m;
	c->next_id = 1;
	*ret = c;
	return 0;
}

unsigned clients_count(const struct clients *c)
{
	return c ? c->count : 0;
}

size_t clients_regions(const struct clients *c)
{
	return c ? c->n_regions : 0;
}

unsigned long long clients_registered_bytes(const struct clients *c)
{
	return c ? c->bytes : 0;
}

static void on_handle_closed(uv_handle_t *h)
{
	struct conn *k = h->data;
	struct clients *c = k->s.owner;

	if (--k->open_handles)
		return;
	if (k->s.prev)
		k->s.prev->next = k->s.next;
	else
		c->head = k->s.next;
	if (k->s.next)
		k->s.next->prev = k->s.prev;
	c->count--;
	close(k->s.fd);
	k->s.freed = true;
	if (!k->s.ops_pending)
		free(k);
}

void session_put(struct session *s)
{
	/* struct conn starts with its session: freeing one frees the other. */
	if (--s->ops_pending == 0 && s->freed)
		free((struct conn *)s);
}

static void conn_close(struct conn *k, const char *why)
{
	struct session *s = &k->s;

	if (k->closing)
		return;
	k->closing = true;
	/* Unlinked now: the conn may be freed before the spinner runs again. */
	hot_unlink(s->owner->glue, k);
	/* Everything the client held goes now; the handles close asynchronously. */
	session_release(s);
	if (why)
		log_info("client %u (pid %d uid %d %s) disconnected: %s", s->id, (int)s->cred.pid,
			 (int)s->cred.uid, s->comm, why);
	uv_close((uv_handle_t *)&k->poll, on_handle_closed);
	if (k->sq_started)
		uv_close((uv_handle_t *)&k->sq_poll, on_handle_closed);
}

static void on_sq(uv_poll_t *p, int status, int events)
{
	struct conn *k = p->data;
	int r;

	if (k->closing)
		return;
	r = status < 0 ? status : xfer_run(&k->s, true, true);
	if (r == 1)
		make_hot(k->s.owner, k);
	else if (r < 0)
		conn_close(k, r == -EPROTO ? "corrupt submission ring" : strerror(-r));
}

static int start_sq(struct conn *k)
{
	struct manager *m = k->s.owner->m;
	int r = uv_poll_init(&m->loop, &k->sq_poll, k->s.rings.sq_efd);

	if (r < 0)
		return r;
	k->sq_poll.data = k;
	k->sq_started = true;
	k->open_handles++;
	return uv_poll_start(&k->sq_poll, UV_READABLE, on_sq);
}

static void close_fds(int *fds, int n)
{
	int i;

	for (i = 0; i < n; i++)
		close(fds[i]);
}

/*
 * Read one packet. >0: its length, with the passed fds in @fds/@nfds;
 * 0: nothing pending; <0: end the session (why in @why), fds already closed.
 */
static int read_packet(struct session *s, char *buf, size_t len, int *fds, int *nfds,
		       const char **why)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * MAX_RECV_FDS)];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	n = recvmsg(s->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	/* On error the kernel leaves msg_controllen as it was: nothing was received. */
	*nfds = n >= 0 ? rp_take_fds(&mh, fds, MAX_RECV_FDS) : 0;
	if (n <= 0) {
		close_fds(fds, *nfds);
		*why = n == 0 ? "hang-up" : strerror(errno);
		return -ECONNRESET;
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		close_fds(fds, *nfds);
		*why = mh.msg_flags & MSG_CTRUNC ? "too many file descriptors" : "oversized message";
		return -EPROTO;
	}
	return (int)n;
}

static void handle_packet(struct conn *k, char *buf, int n, int *fds, int nfds)
{
	struct session *s = &k->s;
	const char *why = NULL;
	int r;

	if (session_validate((struct rp_hdr *)buf, (size_t)n, nfds, &why) < 0) {
		close_fds(fds, nfds);
		conn_close(k, why);
		return;
	}
	r = session_dispatch(s, (struct rp_hdr *)buf, buf + sizeof(struct rp_hdr),
			     nfds ? fds[0] : -1);
	if (r == 0 && s->version && !k->sq_started)
		r = start_sq(k);
	if (r == -ECONNABORTED)
		conn_close(k, "refused at hello");
	else if (r < 0)
		conn_close(k, r == -EPROTO ? "protocol violation" : strerror(-r));
}

static void on_readable(uv_poll_t *p, int status, int events)
{
	struct conn *k = p->data;
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	int fds[MAX_RECV_FDS];
	const char *why = NULL;
	int n, nfds = 0, budget = CTRL_BUDGET;

	if (status < 0) {
		conn_close(k, uv_strerror(status));
		return;
	}
	/* The poll is level-triggered: what is left is read on the next turn. */
	while (!k->closing && budget-- > 0 &&
	       (n = read_packet(&k->s, buf, sizeof(buf), fds, &nfds, &why)) != 0) {
		if (n < 0) {
			conn_close(k, why);
			return;
		}
		handle_packet(k, buf, n, fds, nfds);
	}
}

static void read_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static void on_hello_sweep(uv_timer_t *t)
{
	struct clients *c = t->data;
	uint64_t now = uv_hrtime();
	struct session *s, *next;
	unsigned waiting = 0;

	for (s = c->head; s; s = next) {
		struct conn *k = (struct conn *)s;

		next = s->next;
		if (s->version || k->closing)
			continue;
		if (now - k->accepted_at >= HELLO_DEADLINE_NS)
			conn_close(k, "no HELLO within 5 s");
		else
			waiting++;
	}
	if (!waiting)
		uv_timer_stop(t);
}

/* May a connection from @uid wait for its HELLO? Counts the ones already waiting. */
static bool prehello_room(struct clients *c, uid_t uid)
{
	unsigned all = 0, mine = 0;
	struct session *s;

	for (s = c->head; s; s = s->next) {
		if (s->version || ((struct conn *)s)->closing)
			continue;
		all++;
		mine += s->cred.uid == uid;
	}
	return all < PREHELLO_MAX && mine < PREHELLO_PER_UID;
}

static void refuse_prehello(struct clients *c, struct conn *k)
{
	struct spinner *sp = c->glue;

	/* One line per burst, not one per connection. */
	if (sp->refused++ % 1000 == 0)
		log_warn("refusing connections from uid %d (pid %d): too many connections "
			 "waiting to say HELLO (%llu refused so far)",
			 (int)k->s.cred.uid, (int)k->s.cred.pid, (unsigned long long)sp->refused);
	close(k->s.fd);
	free(k);
}

void clients_accept(struct clients *c, int fd)
{
	struct conn *k = calloc(1, sizeof(*k));
	struct spinner *sp = c->glue;
	int r = k ? session_init(c, &k->s, fd) : -ENOMEM;

	if (r == 0 && !prehello_room(c, k->s.cred.uid)) {
		refuse_prehello(c, k);
		return;
	}
	if (r == 0)
		r = uv_poll_init(&c->m->loop, &k->poll, fd);
	if (r < 0) {
		log_err("cannot accept a client: %s", r == -ENOMEM ? strerror(ENOMEM) : uv_strerror(r));
		free(k);
		close(fd);
		return;
	}
	k->poll.data = k;
	k->open_handles = 1;
	k->accepted_at = uv_hrtime();
	if (!uv_is_active((uv_handle_t *)&sp->hello_sweep))
		uv_timer_start(&sp->hello_sweep, on_hello_sweep, HELLO_SWEEP_MS, HELLO_SWEEP_MS);
	read_comm(k->s.cred.pid, k->s.comm, sizeof(k->s.comm));
	k->s.next = c->head;
	if (c->head)
		c->head->prev = &k->s;
	c->head = &k->s;
	c->count++;
	uv_poll_start(&k->poll, UV_READABLE | UV_DISCONNECT, on_readable);
	log_debug("client %u connected: pid %d uid %d gid %d (%s)", k->s.id, (int)k->s.cred.pid,
		  (int)k->s.cred.uid, (int)k->s.cred.gid, k->s.comm);
}

void clients_shutdown(struct clients *c)
{
	struct spinner *sp;
	struct session *s;

	if (!c)
		return;
	for (s = c->head; s; s = s->next)
		conn_close((struct conn *)s, NULL);
	sp = c->glue;
	if (!uv_is_closing((uv_handle_t *)&sp->idle))
		uv_close((uv_handle_t *)&sp->idle, NULL);
	if (!uv_is_closing((uv_handle_t *)&sp->hello_sweep))
		uv_close((uv_handle_t *)&sp->hello_sweep, NULL);
}

/* After the loop has run the close callbacks. */
struct clients *clients_free(struct clients *c)
{
	if (!c)
		return NULL;
	free(c->glue);
	free(c);
	return NULL;
}
