/* SPDX-License-Identifier: MIT */
/*
 * Client sessions: loop glue around each accepted socket, the control
 * protocol dispatcher, and per-session state. Bad input from a client ends
 * that client's session; it never stops the daemon.
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
#include "rdma_dev.h"
#include "rp-proto.h"

struct session {
	struct clients *owner;
	struct session *prev, *next;
	uv_poll_t poll;
	int fd;
	struct ucred cred;
	char comm[16];
	uint32_t id;
	uint16_t version; /* 0 until HELLO succeeded */
	bool closing;
};

struct clients {
	struct manager *m;
	struct session *head;
	unsigned count;
	uint32_t next_id;
};

int clients_new(struct manager *m, struct clients **ret)
{
	struct clients *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
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
	return 0;
}

unsigned long long clients_registered_bytes(const struct clients *c)
{
	return 0;
}

static void on_session_closed(uv_handle_t *h)
{
	struct session *s = h->data;
	struct clients *c = s->owner;

	if (s->prev)
		s->prev->next = s->next;
	else
		c->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	c->count--;
	close(s->fd);
	free(s);
}

static void session_close(struct session *s, const char *why)
{
	if (s->closing)
		return;
	s->closing = true;
	if (why)
		log_info("client %u (pid %d uid %d %s) disconnected: %s", s->id, (int)s->cred.pid,
			 (int)s->cred.uid, s->comm, why);
	uv_close((uv_handle_t *)&s->poll, on_session_closed);
}

static int send_reply(struct session *s, const struct rp_hdr *req, int status, const void *body,
		      size_t len)
{
	char buf[RP_PROTO_MSG_MAX];
	struct rp_hdr *h = (struct rp_hdr *)buf;

	if (sizeof(*h) + len > sizeof(buf))
		return -EMSGSIZE;
	memset(h, 0, sizeof(*h));
	h->len = (uint32_t)(sizeof(*h) + len);
	h->type = (uint16_t)(req->type | RP_MSG_REPLY);
	h->seq = req->seq;
	h->status = status;
	if (len)
		memcpy(buf + sizeof(*h), body, len);
	if (send(s->fd, buf, h->len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return -errno;
	return 0;
}

static uint16_t wire_transport(const struct manager *m)
{
	return m->transport == RP_TRANSPORT_VERBS ? RP_WIRE_TRANSPORT_VERBS : RP_WIRE_TRANSPORT_TCP;
}

static int handle_hello(struct session *s, const struct rp_hdr *h, const void *body)
{
	const struct rp_hello *req = body;
	struct manager *m = s->owner->m;
	struct rp_hello_reply rep = { 0 };
	int status = 0;

	rep.magic = RP_PROTO_MAGIC;
	rep.version_min = RP_PROTO_VERSION_MIN;
	rep.version_max = RP_PROTO_VERSION_MAX;
	if (req->magic != RP_PROTO_MAGIC || req->flags)
		return -EPROTO;
	if (req->version_max < RP_PROTO_VERSION_MIN || req->version_min > RP_PROTO_VERSION_MAX) {
		log_warn("client pid %d speaks protocol %u..%u, this daemon %u..%u: refused",
			 (int)s->cred.pid, req->version_min, req->version_max,
			 RP_PROTO_VERSION_MIN, RP_PROTO_VERSION_MAX);
		status = -EPROTONOSUPPORT;
	} else if (!config_user_allowed(m->cfg, s->cred.uid, s->cred.gid)) {
		log_warn("client pid %d uid %d (%s) is not an allowed user: refused",
			 (int)s->cred.pid, (int)s->cred.uid, s->comm);
		status = -EACCES;
	}
	if (status == 0) {
		s->version = req->version_max < RP_PROTO_VERSION_MAX ? req->version_max
								     : RP_PROTO_VERSION_MAX;
		rep.version = s->version;
		rep.client_id = s->id;
		rep.transport = wire_transport(m);
		snprintf(rep.node_name, sizeof(rep.node_name), "%s", m->cfg->node_name);
	}
	send_reply(s, h, status, &rep, sizeof(rep));
	return status ? -ECONNABORTED : 0;
}

static void fill_device(const struct manager *m, struct rp_status_reply *rep)
{
	struct rdev_info info;

	if (!m->rdev || rdev_query(m->rdev, &info) < 0)
		return;
	snprintf(rep->device, sizeof(rep->device), "%s", info.name);
	snprintf(rep->port_state, sizeof(rep->port_state), "%s", info.state);
	if (info.n_gids)
		snprintf(rep->gid, sizeof(rep->gid), "%s", info.gids[info.n_gids - 1]);
	rep->port = info.port;
	rep->active_mtu = info.active_mtu;
}

static int handle_status(struct session *s, const struct rp_hdr *h)
{
	const struct manager *m = s->owner->m;
	struct rp_status_reply rep = { 0 };

	snprintf(rep.version, sizeof(rep.version), "%s", PACKAGE_VERSION);
	snprintf(rep.node_name, sizeof(rep.node_name), "%s", m->cfg->node_name);
	rep.uptime_sec = (uint64_t)(time(NULL) - m->started);
	rep.incarnation = m->incarnation;
	rep.transport = wire_transport(m);
	rep.clients = clients_count(s->owner);
	rep.regions = (uint32_t)clients_regions(s->owner);
	rep.registered_bytes = clients_registered_bytes(s->owner);
	rep.peers_total = (uint32_t)m->cfg->n_peers;
	fill_device(m, &rep);
	return send_reply(s, h, 0, &rep, sizeof(rep));
}

/* Exact body sizes per request type: anything else is malformed. */
static long body_size(uint16_t type)
{
	switch (type) {
	case RP_MSG_HELLO:
		return sizeof(struct rp_hello);
	case RP_MSG_STATUS:
		return 0;
	default:
		return -1;
	}
}

static int dispatch(struct session *s, const struct rp_hdr *h, const void *body)
{
	if (s->version == 0 && h->type != RP_MSG_HELLO)
		return -EPROTO;
	switch (h->type) {
	case RP_MSG_HELLO:
		return s->version ? -EPROTO : handle_hello(s, h, body);
	case RP_MSG_STATUS:
		return handle_status(s, h);
	default:
		return -EPROTO;
	}
}

static void close_passed_fds(struct msghdr *mh)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t n, i;
		int *fds = (int *)CMSG_DATA(cm);

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++)
			close(fds[i]);
	}
}

/* Read one packet. 1: got one; 0: nothing pending; <0: end the session (why in @why). */
static int read_packet(struct session *s, char *buf, size_t len, const char **why)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	n = recvmsg(s->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		*why = n == 0 ? "hang-up" : strerror(errno);
		return -ECONNRESET;
	}
	if (mh.msg_controllen) {
		/* No message type of this version carries file descriptors. */
		close_passed_fds(&mh);
		*why = "file descriptor sent with a message that takes none";
		return -EPROTO;
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		*why = "oversized message";
		return -EPROTO;
	}
	return (int)n;
}

static int validate(const struct rp_hdr *h, size_t n, const char **why)
{
	long want;

	if (n < sizeof(*h) || h->len != n) {
		*why = "malformed message header";
		return -EPROTO;
	}
	want = body_size(h->type);
	if (want < 0 || h->flags || h->status || n - sizeof(*h) != (size_t)want) {
		*why = want < 0 ? "unknown message type" : "malformed message";
		return -EPROTO;
	}
	return 0;
}

static void on_readable(uv_poll_t *p, int status, int events)
{
	struct session *s = p->data;
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	const char *why = NULL;
	int n, r;

	if (status < 0) {
		session_close(s, uv_strerror(status));
		return;
	}
	while (!s->closing && (n = read_packet(s, buf, sizeof(buf), &why)) != 0) {
		if (n < 0 || validate((struct rp_hdr *)buf, (size_t)n, &why) < 0) {
			session_close(s, why);
			return;
		}
		r = dispatch(s, (struct rp_hdr *)buf, buf + sizeof(struct rp_hdr));
		if (r == -ECONNABORTED)
			session_close(s, "refused at hello");
		else if (r < 0)
			session_close(s, r == -EPROTO ? "protocol violation" : strerror(-r));
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

void clients_accept(struct clients *c, int fd)
{
	struct session *s = calloc(1, sizeof(*s));
	socklen_t sl = sizeof(s ? s->cred : (struct ucred){ 0 });

	if (!s || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &s->cred, &sl) < 0 ||
	    uv_poll_init(&c->m->loop, &s->poll, fd) < 0) {
		log_err("cannot accept a client: %s", strerror(s ? errno : ENOMEM));
		free(s);
		close(fd);
		return;
	}
	s->owner = c;
	s->fd = fd;
	s->id = c->next_id++;
	s->poll.data = s;
	read_comm(s->cred.pid, s->comm, sizeof(s->comm));
	s->next = c->head;
	if (c->head)
		c->head->prev = s;
	c->head = s;
	c->count++;
	uv_poll_start(&s->poll, UV_READABLE | UV_DISCONNECT, on_readable);
	log_debug("client %u connected: pid %d uid %d gid %d (%s)", s->id, (int)s->cred.pid,
		  (int)s->cred.uid, (int)s->cred.gid, s->comm);
}

void clients_shutdown(struct clients *c)
{
	struct session *s;

	if (!c)
		return;
	for (s = c->head; s; s = s->next)
		session_close(s, NULL);
}

struct clients *clients_free(struct clients *c)
{
	free(c);
	return NULL;
}
