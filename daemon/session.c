/* SPDX-License-Identifier: MIT */
/*
 * The control protocol of one client session, without the event loop:
 * validate a packet, act on it, send the reply. Per-uid accounting lives
 * here too, since the limits are checked at these requests.
 */
#include "session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "clients.h"
#include "log.h"
#include "manager.h"
#include "peer.h"
#include "rdma_dev.h"

/* Per-session table caps (ids must fit the 16-bit region field of a CQE). */
#define MAX_SESSION_REGIONS 65535u
#define MAX_SESSION_HANDLES 65536u

int idtab_add(struct idtab *t, void *p, uint32_t max, uint32_t *ret_id)
{
	uint32_t i;
	void **nv;

	for (i = 0; i < t->n; i++)
		if (!t->v[i])
			goto found;
	if (t->n >= max)
		return -ENOSPC;
	nv = realloc(t->v, sizeof(*nv) * (t->n ? t->n * 2 : 8));
	if (!nv)
		return -ENOMEM;
	memset(nv + t->n, 0, sizeof(*nv) * (t->n ? t->n : 8));
	t->v = nv;
	t->n = t->n ? t->n * 2 : 8;
	if (t->n > max)
		t->n = max;
found:
	t->v[i] = p;
	*ret_id = i + 1;
	return 0;
}

void *idtab_get(const struct idtab *t, uint32_t id)
{
	return id && id <= t->n ? t->v[id - 1] : NULL;
}

void *idtab_del(struct idtab *t, uint32_t id)
{
	void *p = idtab_get(t, id);

	if (p)
		t->v[id - 1] = NULL;
	return p;
}

void idtab_free(struct idtab *t)
{
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

struct uid_acct *acct_get(struct clients *c, uid_t uid)
{
	struct uid_acct *a;

	for (a = c->accts; a; a = a->next)
		if (a->uid == uid)
			break;
	if (!a) {
		a = calloc(1, sizeof(*a));
		if (!a)
			return NULL;
		a->uid = uid;
		a->next = c->accts;
		c->accts = a;
	}
	a->refs++;
	return a;
}

void acct_put(struct clients *c, struct uid_acct *a)
{
	struct uid_acct **pp;

	if (!a || --a->refs)
		return;
	for (pp = &c->accts; *pp; pp = &(*pp)->next)
		if (*pp == a) {
			*pp = a->next;
			break;
		}
	free(a);
}

int session_init(struct clients *c, struct session *s, int fd)
{
	socklen_t sl = sizeof(s->cred);

	s->owner = c;
	s->fd = fd;
	s->rings.memfd = s->rings.sq_efd = s->rings.cq_efd = -1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &s->cred, &sl) < 0)
		return -errno;
	s->id = c->next_id++;
	return 0;
}

int session_reply(struct session *s, const struct rp_hdr *req, int status, const void *body,
		  size_t len, const int *fds, int nfds)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	struct rp_hdr *h = (struct rp_hdr *)buf;
	union {
		struct cmsghdr align;
		char b[CMSG_SPACE(sizeof(int) * RP_HELLO_FDS)];
	} ctl;
	struct iovec iov = { .iov_base = buf };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (sizeof(*h) + len > sizeof(buf) || nfds > RP_HELLO_FDS)
		return -EMSGSIZE;
	memset(h, 0, sizeof(*h));
	h->len = (uint32_t)(sizeof(*h) + len);
	h->type = (uint16_t)(req->type | RP_MSG_REPLY);
	h->seq = req->seq;
	h->status = status;
	if (len)
		memcpy(buf + sizeof(*h), body, len);
	iov.iov_len = h->len;
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
	if (sendmsg(s->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return -errno;
	return 0;
}

static uint16_t wire_transport(const struct manager *m)
{
	return m->transport == RP_TRANSPORT_VERBS ? RP_WIRE_TRANSPORT_VERBS : RP_WIRE_TRANSPORT_TCP;
}

static int hello_admit(struct session *s)
{
	struct clients *c = s->owner;
	const struct config *cfg = c->m->cfg;
	struct uid_acct *a;
	int r;

	if (!config_user_allowed(cfg, s->cred.uid, s->cred.gid)) {
		log_warn("client pid %d uid %d (%s) is not an allowed user: refused",
			 (int)s->cred.pid, (int)s->cred.uid, s->comm);
		return -EACCES;
	}
	a = acct_get(c, s->cred.uid);
	if (!a)
		return -ENOMEM;
	if (a->conns >= cfg->max_connections) {
		log_warn("client pid %d uid %d (%s): connection limit %u reached: refused",
			 (int)s->cred.pid, (int)s->cred.uid, s->comm, cfg->max_connections);
		acct_put(c, a);
		return -RP_ELIMIT_CONN;
	}
	r = rings_new(&s->rings);
	if (r < 0) {
		acct_put(c, a);
		return r;
	}
	a->conns++;
	s->acct = a;
	return 0;
}

static int handle_hello(struct session *s, const struct rp_hdr *h, const struct rp_hello *req)
{
	struct manager *m = s->owner->m;
	struct rp_hello_reply rep = { 0 };
	int fds[RP_HELLO_FDS];
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
	} else {
		status = hello_admit(s);
	}
	if (status) {
		session_reply(s, h, status, &rep, sizeof(rep), NULL, 0);
		return -ECONNABORTED;
	}
	s->version = req->version_max < RP_PROTO_VERSION_MAX ? req->version_max
							     : RP_PROTO_VERSION_MAX;
	rep.version = s->version;
	rep.client_id = s->id;
	rep.transport = wire_transport(m);
	snprintf(rep.node_name, sizeof(rep.node_name), "%s", m->cfg->node_name);
	rep.sq_entries = s->rings.v.sq_entries;
	rep.cq_entries = s->rings.v.cq_entries;
	rep.ring_size = s->rings.size;
	fds[0] = s->rings.memfd;
	fds[1] = s->rings.sq_efd;
	fds[2] = s->rings.cq_efd;
	status = session_reply(s, h, 0, &rep, sizeof(rep), fds, RP_HELLO_FDS);
	/* The client holds the ring memfd now; our mapping keeps the memory. */
	close(s->rings.memfd);
	s->rings.memfd = -1;
	log_info("client %u connected: pid %d uid %d (%s)", s->id, (int)s->cred.pid,
		 (int)s->cred.uid, s->comm);
	return status;
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
	rep.peers_up = peers_up(m);
	fill_device(m, &rep);
	return session_reply(s, h, 0, &rep, sizeof(rep), NULL, 0);
}

static int handle_region_reg(struct session *s, const struct rp_hdr *h,
			     const struct rp_region_reg *req, int fd)
{
	struct rp_id rep = { 0 };
	struct region *r = NULL;
	int status;

	if (req->pad || (req->flags & ~RP_REGION_HUGE)) {
		close(fd);
		return -EPROTO;
	}
	status = region_new(s->owner, s, fd, req->len, &r); /* consumes fd */
	if (status == 0) {
		status = idtab_add(&s->regions, r, MAX_SESSION_REGIONS, &rep.id);
		if (status < 0)
			region_unref(r);
		else
			r->id = rep.id;
	}
	if (status < 0)
		log_debug("client %u: region of %llu bytes refused: %s", s->id,
			  (unsigned long long)req->len, rp_strerror(status));
	return session_reply(s, h, status, &rep, sizeof(rep), NULL, 0);
}

static int handle_region_free(struct session *s, const struct rp_hdr *h, const struct rp_id *req)
{
	struct region *r = idtab_del(&s->regions, req->id);

	if (!r)
		return session_reply(s, h, -RP_EBADHANDLE, NULL, 0, NULL, 0);
	export_remove_region(s->owner, r);
	r->s = NULL;
	region_unref(r);
	return session_reply(s, h, 0, NULL, 0, NULL, 0);
}

static int handle_export(struct session *s, const struct rp_hdr *h,
			 const struct rp_export_req *req)
{
	struct region *r = idtab_get(&s->regions, req->region);
	uint32_t all = RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE;
	int status;

	if (!name_valid(req->name, sizeof(req->name)))
		status = -EINVAL;
	else if (!r)
		status = -RP_EBADHANDLE;
	else if (!req->access || (req->access & ~all))
		status = -EINVAL;
	else if (exports_of_uid(s->owner, s->cred.uid) >= s->owner->m->cfg->max_regions)
		status = -RP_ELIMIT_EXPORTS;
	else
		status = export_add(s->owner, r, req->name, req->access);
	return session_reply(s, h, status, NULL, 0, NULL, 0);
}

static int handle_unexport(struct session *s, const struct rp_hdr *h,
			   const struct rp_export_req *req)
{
	int status = -EINVAL;

	if (name_valid(req->name, sizeof(req->name)) && !req->access)
		status = export_remove(s->owner, s, h, req->region, req->name);
	if (status == 1)
		return 0; /* answered when the export's MR is gone */
	return session_reply(s, h, status, NULL, 0, NULL, 0);
}

static bool peer_is_local(struct session *s, const char *peer)
{
	return !peer[0] || !strcmp(peer, s->owner->m->cfg->node_name);
}

int session_peer_local(struct session *s, const char *peer)
{
	if (peer_is_local(s, peer))
		return 0;
	return peers_known(s->owner->m, peer) < 0 ? -RP_EPEERUNKNOWN : 1;
}

static int handle_remote_open(struct session *s, const struct rp_hdr *h,
			      const struct rp_name_req *req)
{
	struct rp_remote_reply rep = { 0 };
	struct export *e = NULL;
	int status;

	if (!name_valid(req->name, sizeof(req->name)) ||
	    (req->peer[0] && !name_valid(req->peer, sizeof(req->peer))))
		status = -EINVAL;
	else
		status = session_peer_local(s, req->peer);
	if (status == 1) {
		/* Another daemon: the reply is sent when its LOOKUP answers. */
		status = peers_remote_open(s, h, req->peer, req->name);
		if (status == 0)
			return 0;
	}
	if (status == 0) {
		e = export_find(s->owner, req->name);
		status = e ? idtab_add(&s->remotes, e, MAX_SESSION_HANDLES, &rep.id)
			   : -RP_ENOEXPORT;
	}
	if (status == 0) {
		e->refs++;
		rep.access = e->access;
		rep.len = e->region->len;
	}
	return session_reply(s, h, status, &rep, sizeof(rep), NULL, 0);
}

static int handle_remote_close(struct session *s, const struct rp_hdr *h, const struct rp_id *req)
{
	struct export *e = idtab_del(&s->remotes, req->id);

	if (e)
		export_unref(e);
	return session_reply(s, h, e ? 0 : -RP_EBADHANDLE, NULL, 0, NULL, 0);
}

static int handle_ep_bind(struct session *s, const struct rp_hdr *h, const struct rp_ep_req *req)
{
	struct rp_id rep = { 0 };
	int status = -EINVAL;

	if (name_valid(req->name, sizeof(req->name)))
		status = endpoint_bind(s->owner, s, req->name, &rep.id);
	return session_reply(s, h, status, &rep, sizeof(rep), NULL, 0);
}

static int handle_ep_unbind(struct session *s, const struct rp_hdr *h, const struct rp_id *req)
{
	int status = endpoint_unbind(s->owner, s, req->id, true);

	return session_reply(s, h, status, NULL, 0, NULL, 0);
}

static int handle_dest_open(struct session *s, const struct rp_hdr *h,
			    const struct rp_name_req *req)
{
	struct rp_id rep = { 0 };
	char *name = NULL;
	int status;

	if (!name_valid(req->name, sizeof(req->name)) ||
	    (req->peer[0] && !name_valid(req->peer, sizeof(req->peer))))
		status = -EINVAL;
	else
		status = session_peer_local(s, req->peer);
	if (status == 1) {
		/* "PEER/ENDPOINT": sends go to that peer (xfer.c do_send). */
		status = asprintf(&name, "%s/%s", req->peer, req->name) < 0 ? -ENOMEM : 0;
		name = status ? NULL : name;
		if (status == 0)
			status = idtab_add(&s->dests, name, MAX_SESSION_HANDLES, &rep.id);
		if (status < 0)
			free(name);
	} else if (status == 0) {
		name = strdup(req->name);
		status = name ? idtab_add(&s->dests, name, MAX_SESSION_HANDLES, &rep.id) : -ENOMEM;
		if (status < 0)
			free(name);
	}
	return session_reply(s, h, status, &rep, sizeof(rep), NULL, 0);
}

/* Exact body sizes per request type: anything else is malformed. */
static long body_size(uint16_t type)
{
	switch (type) {
	case RP_MSG_HELLO:
		return sizeof(struct rp_hello);
	case RP_MSG_STATUS:
		return 0;
	case RP_MSG_REGION_REG:
		return sizeof(struct rp_region_reg);
	case RP_MSG_REGION_FREE:
	case RP_MSG_REMOTE_CLOSE:
	case RP_MSG_EP_UNBIND:
		return sizeof(struct rp_id);
	case RP_MSG_EXPORT:
	case RP_MSG_UNEXPORT:
		return sizeof(struct rp_export_req);
	case RP_MSG_REMOTE_OPEN:
	case RP_MSG_DEST_OPEN:
		return sizeof(struct rp_name_req);
	case RP_MSG_EP_BIND:
		return sizeof(struct rp_ep_req);
	default:
		return admin_body_size(type);
	}
}

int session_validate(const struct rp_hdr *h, size_t n, int nfds, const char **why)
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
	if (nfds != (h->type == RP_MSG_REGION_REG ? 1 : 0)) {
		*why = nfds ? "file descriptor(s) sent with a message that takes none, or more "
			      "than one"
			    : "region registration without its file descriptor";
		return -EPROTO;
	}
	return 0;
}

static int dispatch_ready(struct session *s, const struct rp_hdr *h, const void *body, int fd)
{
	switch (h->type) {
	case RP_MSG_STATUS:
		return handle_status(s, h);
	case RP_MSG_REGION_REG:
		return handle_region_reg(s, h, body, fd);
	case RP_MSG_REGION_FREE:
		return handle_region_free(s, h, body);
	case RP_MSG_EXPORT:
		return handle_export(s, h, body);
	case RP_MSG_UNEXPORT:
		return handle_unexport(s, h, body);
	case RP_MSG_REMOTE_OPEN:
		return handle_remote_open(s, h, body);
	case RP_MSG_REMOTE_CLOSE:
		return handle_remote_close(s, h, body);
	case RP_MSG_EP_BIND:
		return handle_ep_bind(s, h, body);
	case RP_MSG_EP_UNBIND:
		return handle_ep_unbind(s, h, body);
	case RP_MSG_DEST_OPEN:
		return handle_dest_open(s, h, body);
	default:
		return (h->type & 0xff00) == 0x0800 ? admin_dispatch(s, h, body) : -EPROTO;
	}
}

int session_dispatch(struct session *s, const struct rp_hdr *h, const void *body, int fd)
{
	if (h->type == RP_MSG_HELLO || s->version == 0) {
		if (fd >= 0)
			close(fd);
		if (s->version || h->type != RP_MSG_HELLO)
			return -EPROTO;
		return handle_hello(s, h, body);
	}
	return dispatch_ready(s, h, body, fd);
}

static void release_table(struct session *s, struct idtab *t, void (*drop)(struct session *,
									     void *, uint32_t))
{
	uint32_t i;

	for (i = 0; i < t->n; i++)
		if (t->v[i])
			drop(s, t->v[i], i + 1);
	idtab_free(t);
}

static void drop_region(struct session *s, void *p, uint32_t id)
{
	struct region *r = p;

	export_remove_region(s->owner, r);
	r->s = NULL;
	region_unref(r);
}

static void drop_remote(struct session *s, void *p, uint32_t id)
{
	export_unref(p);
}

static void drop_endpoint(struct session *s, void *p, uint32_t id)
{
	endpoint_unbind(s->owner, s, id, false);
}

static void drop_dest(struct session *s, void *p, uint32_t id)
{
	free(p);
}

void session_release(struct session *s)
{
	struct clients *c = s->owner;

	s->dead = true;
	/* Endpoints first: their posted receives reference regions. */
	release_table(s, &s->endpoints, drop_endpoint);
	release_table(s, &s->remotes, drop_remote);
	release_table(s, &s->dests, drop_dest);
	release_table(s, &s->regions, drop_region);
	rings_free(&s->rings);
	admin_session_release(s);
	if (s->acct) {
		s->acct->conns--;
		acct_put(c, s->acct);
		s->acct = NULL;
	}
}
