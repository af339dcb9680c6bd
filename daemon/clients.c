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
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "admin.h"
#include "core/core.h"
#include "base/ctl_wire.h"
#include "engine.h"
#include "base/log.h"
#include "rp-fdpass.h"

/* Up to this many fds are received per packet so that extra ones can be closed. */
#define MAX_RECV_FDS 8
/* Control packets taken from one client per wake-up, so none can hog the loop. */
#define CTRL_BUDGET 32
/*
 * Connections that have not said HELLO yet are not counted against any
 * user's limits, so they are bounded on their own: at most PREHELLO_MAX
 * of them and a deadline each, so that nobody can hold the daemon's fds by
 * connecting and saying nothing. A HELLO that is already waiting is read
 * as the connection is accepted, so a burst of clients starting together
 * (the usual start-up of a many-process application) is never refused.
 * When the ceiling is reached, the oldest silent connection of the user who
 * holds the most is dropped to make room: an idle flood costs its author
 * its own connections, not everyone else's.
 */
#define PREHELLO_MAX 256
#define HELLO_DEADLINE_NS 5000000000ull
#define HELLO_SWEEP_MS 1000

struct conn {
	struct session s; /* first: conn and session addresses coincide */
	struct clients *owner;
	int fd;
	uv_poll_t poll;
	uv_poll_t sq_poll;
	bool sq_started;
	bool closing;
	unsigned open_handles;
	struct engine_ent ent; /* the engine polls its ring while it is busy */
	uint64_t accepted_at;  /* uv_hrtime() at accept, for the HELLO deadline */
};

/* The glue's state: the core it drives and the engine that runs its data path. */
struct clients {
	uv_loop_t *loop;
	struct admin_ctx *admin;
	struct core *core;
	struct engine *engine;
	uv_timer_t hello_sweep; /* runs while some connection has not said HELLO */
	uint64_t dropped;	/* silent connections dropped at the ceiling, for the log */
};

static void conn_close(struct conn *k, const char *why);

/* A client that hangs up is routine (a metrics scrape is one): debug. Anything else is not. */
static void log_disconnect(const struct session *s, const char *why)
{
	char key[32];

	if (!strcmp(why, "hang-up") || !strcmp(why, "refused at hello")) {
		log_debug("client %u (pid %d uid %d %s) disconnected: %s", s->id, (int)s->cred.pid,
			  (int)s->cred.uid, s->comm, why);
		return;
	}
	snprintf(key, sizeof(key), "clients of uid %d", (int)s->cred.uid);
	log_ratelimited(key, LOG_WARNING, "client %u (pid %d uid %d %s) disconnected: %s", s->id,
			(int)s->cred.pid, (int)s->cred.uid, s->comm, why);
}

static void on_engine_fail(struct engine_ent *ent, int err)
{
	struct conn *k = (struct conn *)ent->s;

	conn_close(k, err == -EPROTO ? "corrupt submission ring" : strerror(-err));
}

static const struct engine_ops engine_ops = {
	.fail = on_engine_fail,
};

static int send_reply(struct session *s, const void *buf, size_t len, const int *fds, int nfds)
{
	struct conn *k = (struct conn *)s;
	union {
		struct cmsghdr align;
		char b[CMSG_SPACE(sizeof(int) * RP_HELLO_FDS)];
	} ctl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds > 0) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	if (sendmsg(k->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return -errno;
	return 0;
}

static void free_session(struct session *s)
{
	/* struct conn starts with its session: freeing one frees the other. */
	free((struct conn *)s);
}

/* A job (core_job) on libuv's thread pool: its work() touches no core state. */
struct offload {
	uv_work_t req;
	struct core_job *job;
};

/*
 * libuv makes its threads from the engine's, and they inherit its raised
 * priority (manager.c: apply_nice(); or the unit's Nice=, the whole
 * process's). Their work is bulk work (a 2 GiB registration zeroes and pins
 * 2 GiB): at the engine's weight it takes the CPUs from the clients, whose
 * own operations then wait. Each pool thread drops to normal priority (the
 * nice value is per thread on Linux) before its first job; one started
 * lower keeps its own.
 */
static void pool_thread_nice(void)
{
	static _Thread_local bool done;
	int n;

	if (done)
		return;
	done = true;
	errno = 0;
	n = getpriority(PRIO_PROCESS, 0);
	/* Raising a nice value needs no privilege. */
	if (errno == 0 && n < 0)
		(void)setpriority(PRIO_PROCESS, 0, 0);
}

static void on_work(uv_work_t *req)
{
	struct core_job *j = ((struct offload *)req->data)->job;

	pool_thread_nice();
	j->work(j);
}

static void on_work_done(uv_work_t *req, int status)
{
	struct offload *o = req->data;
	struct core_job *j = o->job;

	free(o);
	core_job_done(j);
}

static void offload(struct core_job *j)
{
	struct clients *c = j->core->glue_ctx;
	struct offload *o = c->loop ? calloc(1, sizeof(*o)) : NULL;

	if (o) {
		o->req.data = o;
		o->job = j;
		if (uv_queue_work(c->loop, &o->req, on_work, on_work_done) == 0)
			return;
		free(o);
	}
	/* No way to hand it over: do it here rather than fail it. */
	j->work(j);
	core_job_done(j);
}

/*
 * libuv starts its pool at the first uv_queue_work() and waits there until
 * every thread of it runs: 7 ms of the loop thread in the guest. One no-op
 * at start pays that before any client or peer is served, not in the middle
 * of their operations at the first registration or peer connection.
 */
static void pool_warm(uv_work_t *req)
{
	(void)req;
	pool_thread_nice();
}

static void pool_warmed(uv_work_t *req, int status)
{
	(void)status;
	free(req);
}

static void pool_start(uv_loop_t *loop)
{
	uv_work_t *req = calloc(1, sizeof(*req));

	if (req && uv_queue_work(loop, req, pool_warm, pool_warmed) != 0)
		free(req); /* the first job starts it then */
}

/* The threads of libuv's pool (UV_THREADPOOL_SIZE, read as libuv reads it). */
static unsigned pool_threads(void)
{
	const char *v = getenv("UV_THREADPOOL_SIZE");
	long n = v ? strtol(v, NULL, 10) : 4;

	return n < 1 ? 1 : n > 1024 ? 1024 : (unsigned)n;
}

/* core_glue_ops.kick: poll @s's ring in the engine's next pass. */
static void kick_session(struct session *s)
{
	struct conn *k = (struct conn *)s;

	if (!k->closing)
		engine_soon(k->owner->engine, &k->ent);
}

static const struct core_glue_ops glue_ops = {
	.send = send_reply,
	.kick = kick_session,
	.free = free_session,
	.offload = offload,
};

int clients_new(const struct clients_env *env, struct clients **ret)
{
	struct clients *c = calloc(1, sizeof(*c));
	uv_loop_t *loop = env->loop;
	int r;

	if (!c)
		return -ENOMEM;
	r = core_new(env->cfg, &glue_ops, &c->core);
	if (r == 0) {
		c->core->glue_ctx = c;
		c->core->jobs_max = pool_threads();
		c->core->vlocal = env->vlocal;
		c->core->wire_transport = env->wire_transport;
		r = engine_new(loop, c->core, env->rdev, env->vlocal, env->ev, &engine_ops,
			       &c->engine);
	}
	if (r == 0)
		r = uv_timer_init(loop, &c->hello_sweep);
	if (r < 0) {
		engine_free(c->engine);
		core_free(c->core);
		free(c);
		return r;
	}
	c->hello_sweep.data = c;
	c->loop = loop;
	c->admin = env->admin;
	pool_start(loop);
	*ret = c;
	return 0;
}

void clients_loop_closed(struct clients *c)
{
	if (c)
		c->loop = NULL;
}

struct core *clients_core(const struct clients *c)
{
	return c ? c->core : NULL;
}

struct engine *clients_engine(const struct clients *c)
{
	return c ? c->engine : NULL;
}

static void on_handle_closed(uv_handle_t *h)
{
	struct conn *k = h->data;

	if (--k->open_handles)
		return;
	close(k->fd);
	session_detach(&k->s); /* frees it now, or when its last op ends */
}

static void conn_close(struct conn *k, const char *why)
{
	struct session *s = &k->s;
	struct clients *c = k->owner;

	if (k->closing)
		return;
	k->closing = true;
	/* Unlinked now: the conn may be freed before the engine runs again. */
	engine_remove(c->engine, &k->ent);
	/* Everything the client held goes now; the handles close asynchronously. */
	admin_session_release(s);
	session_release(s);
	if (why)
		log_disconnect(s, why);
	uv_close((uv_handle_t *)&k->poll, on_handle_closed);
	if (k->sq_started)
		uv_close((uv_handle_t *)&k->sq_poll, on_handle_closed);
}

/* The client submitted while the engine slept: let it poll that ring. */
static void on_sq(uv_poll_t *p, int status, int events)
{
	struct conn *k = p->data;
	uint64_t v;
	int i;

	if (k->closing)
		return;
	if (status < 0) {
		conn_close(k, uv_strerror(status));
		return;
	}
	/* Our own end, and non-blocking per call: a ring is a datagram, drain a batch. */
	for (i = 0; i < 64 && recv(k->s.rings.sq_bell, &v, sizeof(v), MSG_DONTWAIT) >= 0; i++)
		;
	engine_kick(k->owner->engine, &k->ent);
}

static int start_sq(struct conn *k)
{
	int r = uv_poll_init(k->owner->loop, &k->sq_poll, k->s.rings.sq_bell);

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
 * Read one packet. >0: its length, with the passed fds in @fds/@nfds, and
 * *@lost set when the kernel could not install some of them (the daemon's
 * fd table is full: MSG_CTRUNC with room left in our buffer); 0: nothing
 * pending; <0: end the session (why in @why), fds already closed.
 */
static int read_packet(struct conn *k, char *buf, size_t len, int *fds, int *nfds, bool *lost,
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
	n = recvmsg(k->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	/* On error the kernel leaves msg_controllen as it was: nothing was received. */
	*nfds = n >= 0 ? rp_take_fds(&mh, fds, MAX_RECV_FDS) : 0;
	if (n <= 0) {
		close_fds(fds, *nfds);
		*why = n == 0 ? "hang-up" : strerror(errno);
		return -ECONNRESET;
	}
	*lost = (mh.msg_flags & MSG_CTRUNC) && *nfds < MAX_RECV_FDS;
	if ((mh.msg_flags & MSG_TRUNC) || ((mh.msg_flags & MSG_CTRUNC) && !*lost)) {
		close_fds(fds, *nfds);
		*why = mh.msg_flags & MSG_TRUNC ? "oversized message" : "too many file descriptors";
		return -EPROTO;
	}
	return (int)n;
}

/*
 * The kernel could not install the fd of a request (the daemon is out of
 * fds): a well-formed registration fails alone, with -EMFILE; the client
 * stays. Anything else that came with fds is still a protocol violation.
 */
static void fd_lost(struct conn *k, const struct rp_hdr *h, int n, int *fds, int nfds)
{
	struct session *s = &k->s;
	const char *why = NULL;
	int r;

	close_fds(fds, nfds);
	if (ctl_validate(h, (size_t)n, 1, &why) < 0 || !s->version) {
		conn_close(k, s->version ? why : "protocol violation");
		return;
	}
	r = session_fd_lost(s, h);
	if (r < 0)
		conn_close(k, strerror(-r));
}

static void handle_packet(struct conn *k, char *buf, int n, int *fds, int nfds, bool lost)
{
	struct session *s = &k->s;
	const char *why = NULL;
	int r;

	const struct rp_hdr *h = (const struct rp_hdr *)buf;

	if (lost) {
		fd_lost(k, h, n, fds, nfds);
		return;
	}
	if (ctl_validate(h, (size_t)n, nfds, &why) < 0) {
		close_fds(fds, nfds);
		conn_close(k, why);
		return;
	}
	r = admin_route(k->owner->admin, s, h, buf + sizeof(*h), nfds ? fds[0] : -1);
	if (r == 0 && s->version && !k->sq_started)
		r = start_sq(k);
	if (r == -ECONNABORTED)
		conn_close(k, "refused at hello");
	else if (r < 0)
		conn_close(k, r == -EPROTO ? "protocol violation" : strerror(-r));
}

/* Up to CTRL_BUDGET packets; what is left is read on the next turn (level-triggered). */
static void read_packets(struct conn *k)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	int fds[MAX_RECV_FDS];
	const char *why = NULL;
	int n, nfds = 0, budget = CTRL_BUDGET;
	bool lost = false;

	while (!k->closing && budget-- > 0 &&
	       (n = read_packet(k, buf, sizeof(buf), fds, &nfds, &lost, &why)) != 0) {
		if (n < 0) {
			conn_close(k, why);
			return;
		}
		handle_packet(k, buf, n, fds, nfds, lost);
	}
}

static void on_readable(uv_poll_t *p, int status, int events)
{
	struct conn *k = p->data;

	if (status < 0) {
		conn_close(k, uv_strerror(status));
		return;
	}
	read_packets(k);
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

	for (s = c->core->sessions; s; s = next) {
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

static bool silent(const struct session *s)
{
	return !s->version && !((const struct conn *)s)->closing;
}

/* By uid, then oldest first. */
static int cmp_silent(const void *a, const void *b)
{
	const struct conn *x = *(struct conn *const *)a, *y = *(struct conn *const *)b;

	if (x->s.cred.uid != y->s.cred.uid)
		return x->s.cred.uid < y->s.cred.uid ? -1 : 1;
	return x->accepted_at < y->accepted_at ? -1 : x->accepted_at > y->accepted_at;
}

/*
 * Over the ceiling: the oldest silent connection of the uid that holds the
 * most (of those that hold as many, the oldest). Anybody may connect, and
 * this runs at each connect over the ceiling: the silent ones are sorted
 * once, not each counted against all the others (257 x every session).
 */
static struct conn *prehello_victim(struct clients *c)
{
	struct conn **v, *best = NULL;
	unsigned all = 0, n = 0, i, j, most = 0;
	struct session *s;

	for (s = c->core->sessions; s; s = s->next)
		all += silent(s);
	if (all <= PREHELLO_MAX)
		return NULL;
	v = malloc(all * sizeof(*v));
	if (!v) { /* the oldest silent one, of whoever */
		for (s = c->core->sessions; s; s = s->next)
			if (silent(s) &&
			    (!best || ((struct conn *)s)->accepted_at < best->accepted_at))
				best = (struct conn *)s;
		return best;
	}
	for (s = c->core->sessions; s; s = s->next)
		if (silent(s))
			v[n++] = (struct conn *)s;
	qsort(v, n, sizeof(*v), cmp_silent);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && v[j]->s.cred.uid == v[i]->s.cred.uid; j++)
			;
		if (j - i > most || (j - i == most && v[i]->accepted_at < best->accepted_at)) {
			most = j - i;
			best = v[i];
		}
	}
	free(v);
	return best;
}

/* Over the ceiling: drop the oldest silent connections of the biggest holders. */
static void prehello_trim(struct clients *c)
{
	struct conn *k;

	while ((k = prehello_victim(c))) {
		/* One line per burst, not one per connection. */
		if (c->dropped++ % 1000 == 0)
			log_warn("%u connections are waiting to say HELLO: dropping the oldest of "
				 "uid %d, which holds the most (%llu dropped so far)",
				 PREHELLO_MAX, (int)k->s.cred.uid, (unsigned long long)c->dropped);
		conn_close(k, NULL);
	}
}

/*
 * The client's supplementary groups as the kernel had them at connect
 * (SO_PEERGROUPS, like SO_PEERCRED): what export access lists are checked
 * against. Without them (a kernel before 4.13) it has its primary group only:
 * it may be refused what a group would allow, never let in wrongly.
 */
static int peer_groups(int fd, struct session *s)
{
	gid_t small[64], *v = small;
	socklen_t len = sizeof(small);
	int r = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, v, &len);

	/* Too small: the kernel said how much it needs. */
	if (r < 0 && errno == ERANGE && len > sizeof(small)) {
		v = malloc(len);
		if (!v)
			return -ENOMEM;
		r = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, v, &len);
	}
	if (r < 0)
		len = 0;
	r = session_set_groups(s, v, len / sizeof(gid_t));
	if (v != small)
		free(v);
	return r;
}

void clients_accept(struct clients *c, int fd)
{
	struct ucred cred;
	socklen_t sl = sizeof(cred);
	struct conn *k = NULL;
	int r = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &sl) < 0)
		r = -errno;
	if (r == 0) {
		k = calloc(1, sizeof(*k));
		r = k ? uv_poll_init(c->loop, &k->poll, fd) : -ENOMEM;
	}
	if (r < 0) {
		log_err("cannot accept a client: %s", strerror(-r));
		free(k);
		close(fd);
		return;
	}
	k->fd = fd;
	k->owner = c;
	k->ent.s = &k->s;
	k->poll.data = k;
	k->open_handles = 1;
	k->accepted_at = uv_hrtime();
	session_init(c->core, &k->s, &cred);
	if (peer_groups(fd, &k->s) < 0)
		log_warn("client %u (pid %d uid %d): out of memory for its groups: it is treated "
			 "as a member of its primary group only",
			 k->s.id, (int)cred.pid, (int)cred.uid);
	read_comm(cred.pid, k->s.comm, sizeof(k->s.comm));
	uv_poll_start(&k->poll, UV_READABLE | UV_DISCONNECT, on_readable);
	log_debug("client %u connected: pid %d uid %d gid %d (%s)", k->s.id, (int)cred.pid,
		  (int)cred.uid, (int)cred.gid, k->s.comm);
	/* Its HELLO is usually there already: answer it now, not after the burst. */
	read_packets(k);
	if (k->closing || k->s.version)
		return;
	if (!uv_is_active((uv_handle_t *)&c->hello_sweep))
		uv_timer_start(&c->hello_sweep, on_hello_sweep, HELLO_SWEEP_MS, HELLO_SWEEP_MS);
	prehello_trim(c);
}

void clients_shutdown(struct clients *c)
{
	struct session *s;

	if (!c)
		return;
	for (s = c->core->sessions; s; s = s->next)
		conn_close((struct conn *)s, NULL);
	engine_free(c->engine);
	c->engine = NULL;
	if (!uv_is_closing((uv_handle_t *)&c->hello_sweep))
		uv_close((uv_handle_t *)&c->hello_sweep, NULL);
}

/* After the loop has run the close callbacks. */
struct clients *clients_free(struct clients *c)
{
	if (!c)
		return NULL;
	core_free(c->core);
	free(c);
	return NULL;
}
