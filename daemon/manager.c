/* SPDX-License-Identifier: MIT */
/* Loop glue: the manager's libuv handles and what they call. */
#include "manager.h"

#include <errno.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clients.h"
#include "core/core.h"
#include "engine.h"
#include "evloop_uv.h"
#include "base/log.h"
#include "manager_uv.h"
#include "notify.h"
#include "peer/peer.h"
#include "rdma/rdma_dev.h"
#include "rp-proto.h"
#include "base/stats.h"
#include "tcp_uv.h"
#include "base/util.h"
#include "rdma/verbs_local.h"

/*
 * When fds run out (EMFILE/ENFILE, or a new client's fd in the last part of
 * the reserve, util.h), stop accepting for a moment instead of spinning,
 * and resume only once a fd below that part is free.
 */
#define ACCEPT_PAUSE_MS 100
/* STATUS= is refreshed at most this often, and only when it changed. */
#define STATUS_REFRESH_MS 1000

struct mloop {
	uv_loop_t loop;
	bool loop_open;
	struct evloop *ev; /* timers and watches for the peer layer and transports */
	uv_poll_t listen_poll;
	uv_poll_t comp_poll;
	uv_poll_t async_poll;
	uv_signal_t sig_term, sig_int, sig_hup;
	uv_timer_t watchdog;
	uv_timer_t accept_pause;
	uv_timer_t status_timer; /* refreshes STATUS= when it changed */
};

uv_loop_t *manager_loop(struct manager *m)
{
	return &m->lp->loop;
}

static void on_close_free_nothing(uv_handle_t *h)
{
	(void)h;
}

static void close_handle(uv_handle_t *h)
{
	if (h->loop && !uv_is_closing(h))
		uv_close(h, on_close_free_nothing);
}

void manager_status_line(const struct manager *m, char *buf, size_t len)
{
	const struct core *c = m->core;
	char sz[32];

	snprintf(buf, len, "%s transport, %u/%zu peers up, %u clients, %s registered",
		 config_transport_name(m->transport), peers_up(m->peers), m->cfg->n_peers,
		 c ? c->n_sessions : 0, fmt_bytes(c ? c->bytes : 0, sz, sizeof(sz)));
}

/* Tell systemd the status line again if it changed since it was last sent. */
static void on_status_timer(uv_timer_t *t)
{
	struct manager *m = t->data;
	char status[sizeof(m->status_sent)];

	log_ratelimit_flush(); /* summaries of the bursts that ended */
	manager_status_line(m, status, sizeof(status));
	if (!strcmp(status, m->status_sent))
		return;
	memcpy(m->status_sent, status, sizeof(status));
	notify_status(status);
}

void manager_stop(struct manager *m, int exit_code)
{
	if (m->stopping)
		return;
	m->stopping = true;
	m->exit_code = exit_code;
	notify_stopping();
	clients_shutdown(m->clients);
	peers_shutdown(m->peers); /* after the clients: their ops report to dead sessions */
	if (m->lp) {
		close_handle((uv_handle_t *)&m->lp->listen_poll);
		close_handle((uv_handle_t *)&m->lp->comp_poll);
		close_handle((uv_handle_t *)&m->lp->async_poll);
		close_handle((uv_handle_t *)&m->lp->sig_term);
		close_handle((uv_handle_t *)&m->lp->sig_int);
		close_handle((uv_handle_t *)&m->lp->sig_hup);
		close_handle((uv_handle_t *)&m->lp->watchdog);
		close_handle((uv_handle_t *)&m->lp->accept_pause);
		close_handle((uv_handle_t *)&m->lp->status_timer);
	}
	listener_close(&m->listener);
}

static void on_listen(uv_poll_t *h, int status, int events);

static void on_accept_resume(uv_timer_t *t)
{
	struct manager *m = t->data;

	if (m->stopping)
		return;
	if (fd_reserve_reached(m->listener.fd, FD_CLIENT))
		uv_timer_start(t, on_accept_resume, ACCEPT_PAUSE_MS, 0);
	else
		uv_poll_start(&m->lp->listen_poll, UV_READABLE, on_listen);
}

static void pause_accepts(struct manager *m, const char *why)
{
	stats_totals.client_accept_pauses++;
	log_ratelimited("client accepts paused", LOG_WARNING,
			"pausing client accepts: %s; the file descriptors left are for the "
			"clients connected",
			why);
	uv_poll_stop(&m->lp->listen_poll);
	uv_timer_start(&m->lp->accept_pause, on_accept_resume, ACCEPT_PAUSE_MS, 0);
}

static void accept_all(struct manager *m)
{
	for (;;) {
		int fd = accept4(m->listener.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0) {
			bool last = fd_reserved(fd, FD_CLIENT);

			clients_accept(m->clients, fd);
			if (last) {
				pause_accepts(m, "file descriptors are running out");
				return;
			}
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EMFILE || errno == ENFILE) {
			pause_accepts(m, strerror(errno));
		} else if (errno != EAGAIN) {
			log_err("accept on %s: %s", m->listener.path, strerror(errno));
		}
		return;
	}
}

static void on_listen(uv_poll_t *h, int status, int events)
{
	struct manager *m = h->data;

	if (status < 0) {
		log_err("listening socket: %s", uv_strerror(status));
		return;
	}
	accept_all(m);
}

static void on_comp(uv_poll_t *h, int status, int events)
{
	struct manager *m = h->data;

	if (status < 0) {
		log_err("completion channel: %s", uv_strerror(status));
		return;
	}
	engine_cq_event(clients_engine(m->clients));
}

static void on_async(uv_poll_t *h, int status, int events)
{
	struct manager *m = h->data;
	char desc[128];
	int fatal = 0, r;

	while ((r = rdev_async_event(m->rdev, desc, sizeof(desc), &fatal)) > 0) {
		if (fatal) {
			log_err("RDMA device event: %s; stopping", desc);
			manager_stop(m, EXIT_FAILURE);
			return;
		}
		log_notice("RDMA device event: %s", desc);
	}
	if (r < 0)
		log_err("reading RDMA async events: %s", strerror(-r));
}

static void on_stop_signal(uv_signal_t *h, int signum)
{
	struct manager *m = h->data;

	log_info("received %s, shutting down", strsignal(signum));
	manager_stop(m, EXIT_SUCCESS);
}

static bool str_differ(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a && strcmp(a, b));
}

/* The settings that changed but are only read at start-up: RP_RESTART_* bits. */
static unsigned restart_needed(const struct config *old, const struct config *new)
{
	unsigned bits = 0;

	if (str_differ(old->node_name, new->node_name))
		bits |= RP_RESTART_NODE_NAME;
	if (str_differ(old->socket_path, new->socket_path))
		bits |= RP_RESTART_SOCKET;
	if (old->socket_mode != new->socket_mode)
		bits |= RP_RESTART_SOCKET_MODE;
	if (old->socket_group != new->socket_group)
		bits |= RP_RESTART_SOCKET_GROUP;
	if (old->transport != new->transport)
		bits |= RP_RESTART_TRANSPORT;
	if (str_differ(old->listen_host, new->listen_host) || old->listen_port != new->listen_port)
		bits |= RP_RESTART_LISTEN;
	if (str_differ(old->device, new->device))
		bits |= RP_RESTART_DEVICE;
	if (old->port_num != new->port_num)
		bits |= RP_RESTART_PORT;
	if (old->gid_index != new->gid_index)
		bits |= RP_RESTART_GID_INDEX;
	if (old->cq_depth != new->cq_depth)
		bits |= RP_RESTART_CQ_DEPTH;
	if (old->sq_depth != new->sq_depth)
		bits |= RP_RESTART_SQ_DEPTH;
	if (old->rq_depth != new->rq_depth)
		bits |= RP_RESTART_RQ_DEPTH;
	if (old->ack_timeout != new->ack_timeout)
		bits |= RP_RESTART_ACK_TIMEOUT;
	if (old->retry_count != new->retry_count)
		bits |= RP_RESTART_RETRY_COUNT;
	if (old->local_qps != new->local_qps)
		bits |= RP_RESTART_LOCAL_QPS;
	if (old->inline_size != new->inline_size)
		bits |= RP_RESTART_INLINE_SIZE;
	return bits;
}

/* "daemon.listen, verbs.cq_depth" for @bits into @buf. */
static void restart_list(unsigned bits, char *buf, size_t len)
{
	unsigned bit;
	size_t n = 0;

	buf[0] = '\0';
	for (bit = 1; bit & RP_RESTART_ALL; bit <<= 1) {
		if (!(bits & bit) || n >= len)
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
				      rp_restart_setting(bit));
	}
}

static void swap_str(char **a, char **b)
{
	char *t = *a;

	*a = *b;
	*b = t;
}

/*
 * A reloaded config keeps the running values of what is read only at
 * start-up, so that m->cfg says what the daemon does, and a later reload
 * still reports them until the restart happened.
 */
static void keep_running(struct config *old, struct config *new)
{
	swap_str(&old->node_name, &new->node_name);
	swap_str(&old->socket_path, &new->socket_path);
	new->socket_path_set = old->socket_path_set;
	new->socket_mode = old->socket_mode;
	new->socket_group = old->socket_group;
	new->socket_access_set = old->socket_access_set;
	new->transport = old->transport;
	swap_str(&old->listen_host, &new->listen_host);
	new->listen_port = old->listen_port;
	swap_str(&old->device, &new->device);
	new->port_num = old->port_num;
	new->gid_index = old->gid_index;
	new->cq_depth = old->cq_depth;
	new->sq_depth = old->sq_depth;
	new->rq_depth = old->rq_depth;
	new->ack_timeout = old->ack_timeout;
	new->retry_count = old->retry_count;
	new->local_qps = old->local_qps;
	new->inline_size = old->inline_size;
}

/*
 * Give the engine's thread (this one) the configured priority: while more
 * processes are runnable than there are CPUs, every client's operations
 * wait for the engine, and a fair share of a CPU (one task among many) is
 * not enough (librdmaproxy's waiting leaves the engine the CPU while it
 * runs; a higher weight makes the scheduler give it one). Lowering the nice
 * value needs CAP_SYS_NICE or RLIMIT_NICE: under the shipped unit, Nice=
 * sets it before the daemon starts and this finds nothing to do.
 */
static void apply_nice(int want)
{
	int cur;

	if (want == CONFIG_NICE_KEEP)
		return;
	errno = 0;
	cur = getpriority(PRIO_PROCESS, 0);
	if (errno == 0 && cur == want)
		return;
	if (setpriority(PRIO_PROCESS, 0, want) < 0)
		log_notice("cannot set the engine's nice value to %d (it stays %d): %s; start the "
			   "daemon with it (systemd: Nice=%d), or set nice = keep",
			   want, cur, strerror(errno), want);
	else
		log_info("engine runs at nice %d", want);
}

static void reload_rejected(const char *err, char *msg, size_t msglen)
{
	log_err("reload rejected, keeping the running configuration: %s", err);
	if (msg)
		snprintf(msg, msglen, "reload rejected, keeping the running configuration: %s",
			 err);
}

/*
 * The reply to a reload. A long config path gives way to the list of
 * settings that need a restart: it keeps its last part behind "...".
 */
static void reload_text(char *msg, size_t msglen, const char *path, const struct config *cfg,
			const char *restart)
{
	char rest[512];
	size_t plen = strlen(path), room;
	int n;

	n = snprintf(rest, sizeof(rest), ": log level %s, %zu peer(s)%s%s",
		     log_level_name(cfg->log_level), cfg->n_peers,
		     restart ? "; restart to apply: " : "", restart ? restart : "");
	room = msglen - sizeof("reloaded ");
	room = (size_t)n < room ? room - (size_t)n : 0;
	if (plen > room && room > 3)
		snprintf(msg, msglen, "reloaded ...%s%s", path + plen - (room - 3), rest);
	else
		snprintf(msg, msglen, "reloaded %s%s", path, rest);
}

/* Swap @cfg in; returns the RP_RESTART_* bits of what it cannot change now. */
static unsigned reload_apply(struct manager *m, struct config *cfg, char *msg, size_t msglen)
{
	unsigned restart = restart_needed(m->cfg, cfg);
	char list[256];

	keep_running(m->cfg, cfg);
	config_free(m->cfg);
	m->cfg = cfg;
	m->core->cfg = cfg;
	m->admin.cfg = cfg;
	peers_reload(m->peers, cfg); /* dial added peers, drain and close removed ones */
	log_set_level(cfg->log_level);
	apply_nice(cfg->nice);
	restart_list(restart, list, sizeof(list));
	log_info("reloaded %s: log level %s, %zu peer(s)", m->config_path,
		 log_level_name(cfg->log_level), cfg->n_peers);
	if (restart)
		log_warn("reload: changed settings that apply only at the next restart: %s", list);
	if (msg)
		reload_text(msg, msglen, m->config_path, cfg, restart ? list : NULL);
	return restart;
}

int manager_reload(struct manager *m, char *msg, size_t msglen, unsigned *ret_restart)
{
	struct config *cfg = NULL;
	char err[512], status[256];
	unsigned restart = 0;
	int r;

	notify_reloading();
	r = config_load(m->config_path, &cfg, err, sizeof(err));
	if (r < 0)
		reload_rejected(err, msg, msglen);
	else
		restart = reload_apply(m, cfg, msg, msglen);
	manager_status_line(m, status, sizeof(status));
	notify_ready(status);
	snprintf(m->status_sent, sizeof(m->status_sent), "%s", status);
	if (ret_restart)
		*ret_restart = restart;
	return r;
}

static void on_hup(uv_signal_t *h, int signum)
{
	manager_reload(h->data, NULL, 0, NULL);
}

static void on_watchdog(uv_timer_t *t)
{
	notify_watchdog();
}

/*
 * The loopback QPs' size: every WR of theirs may need a completion at once
 * (an error flushes them all), so lanes * (depth + 1) must fit the @room
 * left on the device CQ (vlocal_new() claims it).
 */
static void loopback_size(const struct config *cfg, uint32_t room, uint32_t *depth, unsigned *lanes)
{
	*depth = cfg->sq_depth < room ? cfg->sq_depth : room - 1;
	*lanes = cfg->local_qps;
	while (*lanes > 1 && (uint64_t)*lanes * (*depth + 1) > room)
		(*lanes)--;
	if (*depth != cfg->sq_depth || *lanes != cfg->local_qps)
		log_warn("cq_depth %u holds %u loopback QP(s) of %u WRs, not %u of %u: raise "
			 "[verbs] cq_depth",
			 cfg->cq_depth, *lanes, *depth, cfg->local_qps, cfg->sq_depth);
}

static int select_transport(struct manager *m)
{
	const struct config *cfg = m->cfg;
	char why[240] = "";
	unsigned lanes;
	uint32_t depth;
	int r;

	if (cfg->transport == RP_TRANSPORT_TCP) {
		m->transport = RP_TRANSPORT_TCP;
		snprintf(m->transport_why, sizeof(m->transport_why), "transport = tcp in config");
		return 0;
	}
	r = rdev_open(cfg->device, cfg->port_num, cfg->cq_depth, &m->rdev, why, sizeof(why));
	if (r == 0) {
		if (rdev_cq_room(m->rdev) < cfg->cq_depth)
			log_warn("cq_depth %u is more than the device's completion queues hold: "
				 "using %u",
				 cfg->cq_depth, rdev_cq_room(m->rdev));
		loopback_size(cfg, rdev_cq_room(m->rdev), &depth, &lanes);
		r = vlocal_new(m->rdev, depth, lanes, cfg->gid_index, cfg->inline_size,
			       op_verbs_done, &m->vlocal, why, sizeof(why));
	}
	if (r < 0)
		m->rdev = rdev_free(m->rdev);
	if (r == 0) {
		uint32_t inl = vlocal_max_inline(m->vlocal);
		char inline_says[40] = "no inline writes";
		struct rdev_info info;

		m->transport = RP_TRANSPORT_VERBS;
		rdev_query(m->rdev, &info);
		/* What the loopback QPs were granted; each peer link's QP asks the same. */
		if (inl)
			snprintf(inline_says, sizeof(inline_says), "writes up to %u B inline", inl);
		snprintf(m->transport_why, sizeof(m->transport_why), "%s port %u, %s, MTU %u, %s",
			 info.name, info.port, info.state, info.active_mtu, inline_says);
		return 0;
	}
	if (cfg->transport == RP_TRANSPORT_VERBS) {
		log_err("transport = verbs, but %s", why);
		return r;
	}
	m->transport = RP_TRANSPORT_TCP;
	snprintf(m->transport_why, sizeof(m->transport_why), "no usable RDMA device: %s", why);
	return 0;
}

static int start_poll(struct manager *m, uv_poll_t *p, int fd, uv_poll_cb cb)
{
	int r = uv_poll_init(&m->lp->loop, p, fd);

	if (r < 0)
		return r;
	p->data = m;
	return uv_poll_start(p, UV_READABLE, cb);
}

static int start_signal(struct manager *m, uv_signal_t *s, int signum, uv_signal_cb cb)
{
	int r = uv_signal_init(&m->lp->loop, s);

	if (r < 0)
		return r;
	s->data = m;
	return uv_signal_start(s, cb, signum);
}

static int start_handles(struct manager *m)
{
	struct mloop *lp = m->lp;
	int r;

	r = start_poll(m, &lp->listen_poll, m->listener.fd, on_listen);
	if (!r && m->rdev)
		r = start_poll(m, &lp->comp_poll, rdev_comp_fd(m->rdev), on_comp);
	if (!r && m->rdev)
		r = start_poll(m, &lp->async_poll, rdev_async_fd(m->rdev), on_async);
	if (!r)
		r = start_signal(m, &lp->sig_term, SIGTERM, on_stop_signal);
	if (!r)
		r = start_signal(m, &lp->sig_int, SIGINT, on_stop_signal);
	if (!r)
		r = start_signal(m, &lp->sig_hup, SIGHUP, on_hup);
	if (!r)
		r = uv_timer_init(&lp->loop, &lp->watchdog);
	lp->watchdog.data = m;
	if (!r)
		r = uv_timer_init(&lp->loop, &lp->accept_pause);
	lp->accept_pause.data = m;
	if (!r)
		r = uv_timer_init(&lp->loop, &lp->status_timer);
	lp->status_timer.data = m;
	if (!r)
		r = uv_timer_start(&lp->status_timer, on_status_timer, STATUS_REFRESH_MS,
				   STATUS_REFRESH_MS);
	m->watchdog_usec = notify_watchdog_usec();
	if (!r && m->watchdog_usec) {
		/* Ping at half the interval, from the loop itself: a stuck loop stops pinging. */
		uint64_t ms = m->watchdog_usec / 2000 ? m->watchdog_usec / 2000 : 1;

		r = uv_timer_start(&lp->watchdog, on_watchdog, 0, ms);
	}
	return r;
}

static uint64_t new_incarnation(void)
{
	uint64_t v = 0;

	while (v == 0)
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	return v;
}

/* Bytes came from a tcp peer: the engine spins for what follows (engine_net). */
static void on_peer_bytes(void *arg)
{
	engine_net(arg);
}

/* The transports (loop glue makes them), then the peer layer on top of them. */
static int open_peers(struct manager *m)
{
	struct peers_env env = {
		.core = m->core,
		.cfg = m->cfg,
		.incarnation = m->incarnation,
		.transport = m->transport,
	};
	int r;

	r = tcp_transport_new(&m->lp->loop, m->lp->ev, on_peer_bytes, clients_engine(m->clients),
			      &env.tcp);
	if (r == 0 && m->transport == RP_TRANSPORT_VERBS) {
		r = verbs_transport_new(m->rdev, m->core, m->cfg, m->incarnation, m->lp->ev,
					&env.verbs);
		if (r < 0) {
			env.tcp->ops->free(env.tcp);
			return r;
		}
	}
	if (r < 0)
		return r;
	env.ev = m->lp->ev;
	return peers_new(&env, &m->peers);
}

static int reload_hook(void *arg, char *msg, size_t msglen, unsigned *ret_restart)
{
	return manager_reload(arg, msg, msglen, ret_restart);
}

/* Administration's view, filled once the transport is chosen. */
static void admin_init(struct manager *m)
{
	m->admin.cfg = m->cfg;
	m->admin.rdev = m->rdev;
	m->admin.transport = m->transport;
	m->admin.incarnation = m->incarnation;
	m->admin.started = m->started;
	m->admin.reload = reload_hook;
	m->admin.reload_arg = m;
}

static int open_all(struct manager *m)
{
	struct clients_env cenv = { 0 };
	char why[512];
	int r;

	r = select_transport(m);
	if (r < 0)
		return r;
	admin_init(m);
	r = listener_open(m->cfg, &m->listener, why, sizeof(why));
	if (r < 0) {
		log_err("%s", why);
		return r;
	}
	if (listener_access_differs(m->cfg, &m->listener, why, sizeof(why)))
		log_warn("%s", why);
	if (m->listener.fell_back)
		log_notice(
			"the default socket directory is not writable by this user; listening on "
			"%s instead (set RDMAPROXY_SOCKET=%s for clients)",
			m->listener.path, m->listener.path);
	r = evloop_uv_new(&m->lp->loop, &m->lp->ev);
	if (r < 0)
		return r;
	cenv.loop = &m->lp->loop;
	cenv.cfg = m->cfg;
	cenv.admin = &m->admin;
	cenv.rdev = m->rdev;
	cenv.vlocal = m->vlocal;
	cenv.ev = m->lp->ev;
	cenv.wire_transport = m->transport == RP_TRANSPORT_VERBS ? RP_WIRE_TRANSPORT_VERBS
								 : RP_WIRE_TRANSPORT_TCP;
	r = clients_new(&cenv, &m->clients);
	if (r < 0) {
		log_err("cannot set up client sessions: %s", strerror(-r));
		return r;
	}
	m->core = clients_core(m->clients);
	m->admin.core = m->core;
	m->admin.engine = engine_stats(clients_engine(m->clients));
	r = open_peers(m);
	if (r < 0) {
		log_err("cannot set up peers: %s", strerror(-r));
		return r;
	}
	m->admin.peers = m->peers;
	r = start_handles(m);
	if (r < 0)
		log_err("cannot start the event loop: %s", uv_strerror(r));
	return r;
}

int manager_new(const char *config_path, struct manager **ret)
{
	struct manager *m = calloc(1, sizeof(*m));
	char err[512];
	int r;

	if (!m)
		return -ENOMEM;
	m->listener.fd = -1;
	m->config_path = strdup(config_path);
	if (!m->config_path) {
		r = -ENOMEM;
		goto out_free;
	}
	r = config_load(config_path, &m->cfg, err, sizeof(err));
	if (r < 0) {
		log_err("%s", err);
		goto out_free;
	}
	log_set_level(m->cfg->log_level);
	apply_nice(m->cfg->nice);
	m->lp = calloc(1, sizeof(*m->lp));
	if (!m->lp) {
		r = -ENOMEM;
		goto out_free;
	}
	r = uv_loop_init(&m->lp->loop);
	if (r < 0)
		goto out_free;
	m->lp->loop_open = true;
	m->lp->loop.data = m;
	m->incarnation = new_incarnation();
	m->started = time(NULL);
	r = open_all(m);
	if (r < 0)
		goto out_free;
	*ret = m;
	return 0;

out_free:
	manager_stop(m, EXIT_FAILURE);
	manager_free(m);
	return r;
}

int manager_run(struct manager *m)
{
	char status[256];

	log_info("rdmaproxyd %s: node %s, %s transport (%s), listening on %s%s", PACKAGE_VERSION,
		 m->cfg->node_name, config_transport_name(m->transport), m->transport_why,
		 m->listener.path, m->listener.activated ? " (socket-activated)" : "");
	manager_status_line(m, status, sizeof(status));
	notify_ready(status);
	snprintf(m->status_sent, sizeof(m->status_sent), "%s", status);
	uv_run(&m->lp->loop, UV_RUN_DEFAULT);
	log_info("stopped");
	return m->exit_code;
}

struct manager *manager_free(struct manager *m)
{
	if (!m)
		return NULL;
	if (m->lp && m->lp->loop_open) {
		/* Let close callbacks run, then the loop must be empty. */
		uv_run(&m->lp->loop, UV_RUN_DEFAULT);
		if (uv_loop_close(&m->lp->loop) == UV_EBUSY)
			log_err("event loop still has open handles at exit");
	}
	clients_loop_closed(m->clients);
	/* Ops still on the loopback QPs report (flushed) before their sessions go. */
	m->vlocal = vlocal_free(m->vlocal);
	op_cache_free();
	if (m->lp)
		m->lp->ev = evloop_uv_free(m->lp->ev);
	m->peers = peers_free(m->peers);
	m->clients = clients_free(m->clients);
	m->rdev = rdev_free(m->rdev);
	config_free(m->cfg);
	free(m->config_path);
	free(m->lp);
	free(m);
	return NULL;
}
