/* SPDX-License-Identifier: MIT */
/*
 * The control protocol of one client session: act on a validated packet,
 * send the reply. Regions, exports, remote handles, endpoints and send
 * destinations are created and released here; administration requests go
 * to admin.c (the glue routes them) and never reach this file.
 */
#include "core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/stats.h"

/* Per-session table caps (ids must fit the 16-bit region field of a CQE). */
#define MAX_SESSION_REGIONS 65535u
#define MAX_SESSION_HANDLES 65536u

/* The key of the rate-limited lines about clients of @s's uid. */
static const char *uid_key(const struct session *s, char *buf, size_t len)
{
	snprintf(buf, len, "clients of uid %d", (int)s->cred.uid);
	return buf;
}

static int hello_admit(struct session *s)
{
	struct core *c = s->core;
	const struct config *cfg = c->cfg;
	struct uid_acct *a;
	char key[32];
	int r;

	if (!config_user_allowed(cfg, s->cred.uid, s->cred.gid)) {
		log_ratelimited(uid_key(s, key, sizeof(key)), LOG_WARNING,
				"client pid %d uid %d (%s) is not an allowed user: refused",
				(int)s->cred.pid, (int)s->cred.uid, s->comm);
		return -EACCES;
	}
	a = acct_get(c, s->cred.uid);
	if (!a)
		return -ENOMEM;
	if (a->conns >= cfg->max_connections) {
		log_ratelimited(uid_key(s, key, sizeof(key)), LOG_WARNING,
				"client pid %d uid %d (%s): connection limit %u reached: refused",
				(int)s->cred.pid, (int)s->cred.uid, s->comm, cfg->max_connections);
		acct_put(c, a);
		return -RP_ELIMIT_CONN;
	}
	r = rings_new(&s->rings);
	if (r < 0) {
		log_ratelimited(uid_key(s, key, sizeof(key)), LOG_WARNING,
				"client pid %d uid %d (%s): cannot set up its rings: %s: refused",
				(int)s->cred.pid, (int)s->cred.uid, s->comm, strerror(-r));
		acct_put(c, a);
		return r;
	}
	a->conns++;
	s->acct = a;
	return 0;
}

static int handle_hello(struct session *s, const struct rp_hdr *h, const struct rp_hello *req)
{
	struct core *c = s->core;
	struct rp_hello_reply rep = { 0 };
	int fds[RP_HELLO_FDS];
	int status = 0;
	char key[32];

	rep.magic = RP_PROTO_MAGIC;
	rep.version_min = RP_PROTO_VERSION_MIN;
	rep.version_max = RP_PROTO_VERSION_MAX;
	if (req->magic != RP_PROTO_MAGIC || req->flags)
		return -EPROTO;
	if (req->version_max < RP_PROTO_VERSION_MIN || req->version_min > RP_PROTO_VERSION_MAX) {
		log_ratelimited(uid_key(s, key, sizeof(key)), LOG_WARNING,
				"client pid %d speaks protocol %u..%u, this daemon %u..%u: refused",
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
	s->version =
		req->version_max < RP_PROTO_VERSION_MAX ? req->version_max : RP_PROTO_VERSION_MAX;
	rep.version = s->version;
	s->rings.seq = s->version >= RP_PROTO_VERSION_SEQ;
	rep.client_id = s->id;
	rep.transport = c->wire_transport;
	snprintf(rep.node_name, sizeof(rep.node_name), "%s", c->cfg->node_name);
	rep.sq_entries = s->rings.v.sq_entries;
	rep.cq_entries = s->rings.v.cq_entries;
	rep.ring_size = s->rings.size;
	fds[0] = s->rings.memfd;
	fds[1] = s->rings.sq_client;
	fds[2] = s->rings.cq_client;
	status = session_reply(s, h, 0, &rep, sizeof(rep), fds, RP_HELLO_FDS);
	/* The client holds the ring memfd and its doorbell ends now; our mapping keeps the memory.
	 */
	close(s->rings.memfd);
	close(s->rings.sq_client);
	close(s->rings.cq_client);
	s->rings.memfd = s->rings.sq_client = s->rings.cq_client = -1;
	/* Routine (a metrics scrape is a client): debug, like its disconnection. */
	log_debug("client %u connected: pid %d uid %d (%s)", s->id, (int)s->cred.pid,
		  (int)s->cred.uid, s->comm);
	return status;
}

static int handle_region_reg(struct session *s, const struct rp_hdr *h,
			     const struct rp_region_reg *req, int fd)
{
	struct region_job *j;
	int status;

	if (req->pad || (req->flags & ~RP_REGION_HUGE)) {
		close(fd);
		return -EPROTO;
	}
	status = region_job_new(s, h, fd, req->len, &j); /* consumes fd */
	if (status < 0) {
		struct rp_id rep = { 0 };

		log_debug("client %u: region of %llu bytes refused: %s", s->id,
			  (unsigned long long)req->len, rp_strerror(status));
		return session_reply(s, h, status, &rep, sizeof(rep), NULL, 0);
	}
	/* Mapping and registering take a while: the reply comes when they are done. */
	core_job_run(&j->job, j->acct);
	return 0;
}

int session_name_check(const struct session *s, const char *name, const char *what)
{
	const struct name_conf *rule = config_name_rule(s->core->cfg, name);
	struct creds who;
	char key[32];

	session_creds(s, &who);
	if (name_rule_allows(rule, &who))
		return 0;
	stats_totals.names_refused++;
	/* Its own key: retries of a reserved name hide no other line about the user. */
	snprintf(key, sizeof(key), "names of uid %d", (int)s->cred.uid);
	log_ratelimited(key, LOG_WARNING,
			"client %u (pid %d uid %d %s): %s '%s' refused: the config reserves names "
			"starting with '%s' for other users ([names] at line %u)",
			s->id, (int)s->cred.pid, (int)s->cred.uid, s->comm, what, name,
			rule->prefix, rule->line);
	return -RP_EDENIED;
}

int session_fd_lost(struct session *s, const struct rp_hdr *h)
{
	struct rp_id rep = { 0 };
	char key[32];

	stats_totals.client_fd_lost++;
	log_ratelimited(uid_key(s, key, sizeof(key)), LOG_WARNING,
			"client %u (pid %d uid %d %s): region registration failed: the daemon has "
			"no file descriptor left to receive the region's (RLIMIT_NOFILE)",
			s->id, (int)s->cred.pid, (int)s->cred.uid, s->comm);
	return session_reply(s, h, -EMFILE, &rep, sizeof(rep), NULL, 0);
}

void session_region_done(struct core_job *cj)
{
	struct region_job *j = (struct region_job *)cj;
	struct session *s = j->s;
	struct rp_id rep = { 0 };
	struct region *r = NULL;
	int status = region_job_done(j, &r);

	if (status == 0) {
		session_ids_reuse(s, &s->regions, MAX_SESSION_REGIONS);
		status = idtab_add(&s->regions, r, MAX_SESSION_REGIONS, &rep.id);
		if (status < 0) {
			region_unref(r);
		} else {
			r->id = rep.id;
			s->region_bytes += r->len;
		}
	}
	if (status < 0 && !s->dead)
		log_debug("client %u: region of %llu bytes refused: %s", s->id,
			  (unsigned long long)j->len, rp_strerror(status));
	session_reply(s, &j->h, status, &rep, sizeof(rep), NULL, 0);
	session_put(s);
	free(j);
}

static int handle_region_free(struct session *s, const struct rp_hdr *h, const struct rp_id *req)
{
	struct region *r = idtab_take(&s->regions, req->id);

	if (!r)
		return session_reply(s, h, -RP_EBADHANDLE, NULL, 0, NULL, 0);
	session_id_hold(s, &s->regions, req->id, true);
	s->region_bytes -= r->len;
	r->s = NULL; /* what its ops report from now on names no id (op_end()) */
	endpoints_cancel_region(s, r);
	export_remove_region(s->core, r);
	if (region_free(r, s, h) == REGION_LATER)
		return 0;
	return session_reply(s, h, 0, NULL, 0, NULL, 0);
}

/*
 * EXPORT and EXPORT_ACL (request @h): the status of publishing @req with @acl
 * (NULL: none), or EXPORT_LATER when it is answered later.
 */
static int export_status(struct session *s, const struct rp_hdr *h, const struct rp_export_req *req,
			 const struct export_acl *acl)
{
	struct region *r = idtab_get(&s->regions, req->region);
	uint32_t all = RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE;
	int status;

	if (!name_valid(req->name, sizeof(req->name)))
		return -EINVAL;
	status = session_name_check(s, req->name, "export");
	if (status < 0)
		return status;
	if (!r)
		return -RP_EBADHANDLE;
	if (!req->access || (req->access & ~all))
		return -EINVAL;
	if (r->acct->exports >= s->core->cfg->max_regions)
		return -RP_ELIMIT_EXPORTS;
	return export_add(s, h, r, req->name, req->access, acl);
}

static int handle_export(struct session *s, const struct rp_hdr *h, const struct rp_export_req *req)
{
	int status = export_status(s, h, req, NULL);

	if (status == EXPORT_LATER)
		return 0;
	return session_reply(s, h, status, NULL, 0, NULL, 0);
}

/* Every peer the list names must be configured: a typo is an error now, not a refusal later. */
static int acl_peers_known(struct session *s, const struct export_acl *acl)
{
	const struct core *c = s->core;
	uint32_t i;

	for (i = 0; i < acl->n_peers; i++)
		if (!c->peer_ops || c->peer_ops->known(c->peers, acl->peers[i]) < 0)
			return -RP_EPEERUNKNOWN;
	return 0;
}

/* The checked access list of an EXPORT_ACL or EP_BIND_ACL request, its peers configured. */
static int acl_of(struct session *s, const struct rp_export_acl_req *req, struct export_acl *ret)
{
	int status = acl_from_wire(req, ret);

	return status ? status : acl_peers_known(s, ret);
}

static int handle_export_acl(struct session *s, const struct rp_hdr *h,
			     const struct rp_export_acl_req *req)
{
	struct export_acl *acl;
	int status;

	if (s->version < RP_PROTO_VERSION_ACL)
		return -EPROTO; /* a version 1 client cannot have meant it */
	acl = malloc(sizeof(*acl));
	if (!acl)
		return session_reply(s, h, -ENOMEM, NULL, 0, NULL, 0);
	status = acl_of(s, req, acl);
	if (status == 0)
		status = export_status(s, h, &req->x, acl);
	free(acl);
	if (status == EXPORT_LATER)
		return 0;
	if (status == -EPROTO)
		return status;
	return session_reply(s, h, status, NULL, 0, NULL, 0);
}

static int handle_unexport(struct session *s, const struct rp_hdr *h,
			   const struct rp_export_req *req)
{
	int status = -EINVAL;

	if (name_valid(req->name, sizeof(req->name)) && !req->access)
		status = export_remove(s->core, s, h, req->region, req->name);
	if (status == EXPORT_DRAINING)
		return 0; /* answered when the export's MR is gone */
	return session_reply(s, h, status, NULL, 0, NULL, 0);
}

enum peer_where {
	PEER_HERE,  /* this node */
	PEER_THERE, /* a configured peer */
};

/* Where @peer is: enum peer_where, or -RP_EPEERUNKNOWN. */
static int peer_where(struct session *s, const char *peer)
{
	struct core *c = s->core;

	if (!peer[0] || !strcmp(peer, c->cfg->node_name))
		return PEER_HERE;
	if (!c->peer_ops || c->peer_ops->known(c->peers, peer) < 0)
		return -RP_EPEERUNKNOWN;
	return PEER_THERE;
}

/* REMOTE_OPEN and DEST_OPEN name a peer and a name: both must be valid. */
static int name_req_where(struct session *s, const struct rp_name_req *req)
{
	if (!name_valid(req->name, sizeof(req->name)) ||
	    (req->peer[0] && !name_valid(req->peer, sizeof(req->peer))))
		return -EINVAL;
	return peer_where(s, req->peer);
}

/* A local export @e that @s may not open: counted, and logged per uid. */
static int open_refused(struct session *s, const struct export *e)
{
	char key[32];

	stats_totals.export_refused[STATS_FROM_LOCAL]++;
	log_ratelimited(uid_key(s, key, sizeof(key)), LOG_WARNING,
			"client %u (pid %d uid %d %s): opening export '%s' of uid %d refused: "
			"it allows neither this user nor a group of the client",
			s->id, (int)s->cred.pid, (int)s->cred.uid, s->comm, e->name,
			(int)e->s->cred.uid);
	return -RP_EEXPORT_DENIED;
}

/* A handle to local export @e, its id in *ret_id: 0 or <0. */
static int remote_add(struct session *s, struct export *e, uint32_t *ret_id)
{
	session_ids_reuse(s, &s->remotes, MAX_SESSION_HANDLES);
	return idtab_add(&s->remotes, e, MAX_SESSION_HANDLES, ret_id);
}

static int handle_remote_open(struct session *s, const struct rp_hdr *h,
			      const struct rp_name_req *req)
{
	struct core *c = s->core;
	struct rp_remote_reply rep = { 0 };
	struct export *e = NULL;
	int status = name_req_where(s, req);

	if (status == PEER_THERE) {
		/* Another daemon: the reply is sent when its LOOKUP answers. */
		status = c->peer_ops->remote_open(c->peers, s, h, req->peer, req->name);
		if (status == 0)
			return 0;
	} else if (status == PEER_HERE) {
		e = export_find(c, req->name);
		if (!e)
			status = -RP_ENOEXPORT;
		else if (!export_may_open_local(e, s))
			status = open_refused(s, e);
		else
			status = remote_add(s, e, &rep.id);
	}
	if (status == 0) {
		export_ref(e);
		rep.access = e->access;
		rep.len = e->region->len;
	}
	return session_reply(s, h, status, &rep, sizeof(rep), NULL, 0);
}

static int handle_remote_close(struct session *s, const struct rp_hdr *h, const struct rp_id *req)
{
	struct export *e = idtab_take(&s->remotes, req->id);

	if (e) {
		session_id_hold(s, &s->remotes, req->id, false);
		export_unref(e);
	}
	return session_reply(s, h, e ? 0 : -RP_EBADHANDLE, NULL, 0, NULL, 0);
}

static int handle_ep_bind(struct session *s, const struct rp_hdr *h, const struct rp_ep_req *req)
{
	struct rp_id rep = { 0 };
	int status = -EINVAL;

	if (name_valid(req->name, sizeof(req->name)))
		status = session_name_check(s, req->name, "endpoint");
	if (status == 0)
		status = endpoint_bind(s, req->name, false, NULL, &rep.id);
	return session_reply(s, h, status, &rep, sizeof(rep), NULL, 0);
}

static int handle_ep_bind_acl(struct session *s, const struct rp_hdr *h,
			      const struct rp_export_acl_req *req)
{
	struct rp_id rep = { 0 };
	struct export_acl *acl;
	int status;

	if (s->version < RP_PROTO_VERSION_EP_ACL)
		return -EPROTO; /* an older client cannot have meant it */
	acl = malloc(sizeof(*acl));
	if (!acl)
		return session_reply(s, h, -ENOMEM, &rep, sizeof(rep), NULL, 0);
	status = acl_of(s, req, acl);
	if (status == 0 &&
	    (req->x.region || req->x.access || !name_valid(req->x.name, sizeof(req->x.name))))
		status = -EINVAL;
	if (status == 0)
		status = session_name_check(s, req->x.name, "endpoint");
	if (status == 0)
		status = endpoint_bind(s, req->x.name, true, acl, &rep.id);
	free(acl);
	if (status == -EPROTO)
		return status;
	return session_reply(s, h, status, &rep, sizeof(rep), NULL, 0);
}

static int handle_ep_unbind(struct session *s, const struct rp_hdr *h, const struct rp_id *req)
{
	int status = endpoint_unbind(s, req->id);

	return session_reply(s, h, status, NULL, 0, NULL, 0);
}

static int handle_dest_open(struct session *s, const struct rp_hdr *h,
			    const struct rp_name_req *req)
{
	struct rp_id rep = { 0 };
	struct dest *d = NULL;
	int status = name_req_where(s, req);

	if (status >= 0) {
		d = calloc(1, sizeof(*d));
		status = d ? idtab_add(&s->dests, d, MAX_SESSION_HANDLES, &rep.id) : -ENOMEM;
	}
	if (status == 0) {
		/* Resolved once: sends by id never parse names again. */
		d->remote = name_req_where(s, req) == PEER_THERE;
		if (d->remote)
			memcpy(d->peer, req->peer, sizeof(d->peer));
		memcpy(d->endpoint, req->name, sizeof(d->endpoint));
		d = NULL;
	}
	free(d);
	return session_reply(s, h, status, &rep, sizeof(rep), NULL, 0);
}

static int dispatch_ready(struct session *s, const struct rp_hdr *h, const void *body, int fd)
{
	switch (h->type) {
	case RP_MSG_REGION_REG:
		return handle_region_reg(s, h, body, fd);
	case RP_MSG_REGION_FREE:
		return handle_region_free(s, h, body);
	case RP_MSG_EXPORT:
		return handle_export(s, h, body);
	case RP_MSG_UNEXPORT:
		return handle_unexport(s, h, body);
	case RP_MSG_EXPORT_ACL:
		return handle_export_acl(s, h, body);
	case RP_MSG_REMOTE_OPEN:
		return handle_remote_open(s, h, body);
	case RP_MSG_REMOTE_CLOSE:
		return handle_remote_close(s, h, body);
	case RP_MSG_EP_BIND:
		return handle_ep_bind(s, h, body);
	case RP_MSG_EP_BIND_ACL:
		return handle_ep_bind_acl(s, h, body);
	case RP_MSG_EP_UNBIND:
		return handle_ep_unbind(s, h, body);
	case RP_MSG_DEST_OPEN:
		return handle_dest_open(s, h, body);
	default:
		return -EPROTO; /* admin requests never come here (ctl_is_admin) */
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

static void release_table(struct session *s, struct idtab *t,
			  void (*drop)(struct session *, void *, uint32_t))
{
	uint32_t i;
	void *p;

	for (i = 0; i < t->n; i++)
		if ((p = idtab_at(t, i)))
			drop(s, p, i + 1);
	idtab_free(t);
}

static void drop_region(struct session *s, void *p, uint32_t id)
{
	struct region *r = p;

	export_remove_region(s->core, r);
	r->s = NULL;
	region_unref(r);
}

static void drop_remote(struct session *s, void *p, uint32_t id)
{
	export_unref(p);
}

static void drop_endpoint(struct session *s, void *p, uint32_t id)
{
	endpoint_unbind(s, id);
}

static void drop_dest(struct session *s, void *p, uint32_t id)
{
	free(p);
}

void session_release(struct session *s)
{
	struct core *c = s->core;

	s->dead = true;
	xfer_abandon(s);
	/* Nothing is published to it any more (its rings go now). */
	core_undirty(c, s);
	/* Endpoints first: their posted receives reference regions. */
	release_table(s, &s->endpoints, drop_endpoint);
	release_table(s, &s->remotes, drop_remote);
	release_table(s, &s->dests, drop_dest);
	release_table(s, &s->regions, drop_region);
	s->region_bytes = 0;
	/* Its exports are gone with its regions: nothing reads its groups any more. */
	session_set_groups(s, NULL, 0);
	rings_free(&s->rings);
	if (s->acct) {
		s->acct->conns--;
		acct_put(c, s->acct);
		s->acct = NULL;
	}
}
