/* SPDX-License-Identifier: MIT */
/*
 * The client core's test bench (core-harness.h): fake glue and peer hooks,
 * request builders, and a client's view of the rings.
 */
#include "core-harness.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- The glue's hooks. ---- */

static int th_send(struct session *s, const void *buf, size_t len, const int *fds, int nfds)
{
	struct th_session *ts = (struct th_session *)s;
	int i;

	if (s->dead)
		ts->th->dead_sends++;
	if (ts->send_err)
		return ts->send_err;
	if (len > sizeof(ts->reply))
		abort();
	memcpy(ts->reply, buf, len);
	ts->reply_len = len;
	ts->n_replies++;
	if (!nfds)
		return 0;
	/* SCM_RIGHTS gives the client copies; the daemon's own fds stay its own. */
	for (i = 0; i < ts->nfds; i++)
		close(ts->fds[i]);
	for (i = 0; i < nfds; i++)
		ts->fds[i] = ts->th->lean ? -1 : fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
	ts->nfds = nfds;
	return 0;
}

static void client_forget(struct th_session *ts)
{
	unsigned i;
	int k;

	for (k = 0; k < ts->nfds; k++)
		if (ts->fds[k] >= 0)
			close(ts->fds[k]);
	ts->nfds = 0;
	if (ts->ring.base && !ts->th->lean)
		munmap(ts->ring.base, ts->ring.size);
	ts->ring.base = NULL;
	for (i = 0; i < ts->n_maps; i++)
		munmap(ts->maps[i].addr, ts->maps[i].len);
	ts->n_maps = 0;
}

static void th_free(struct session *s)
{
	struct th_session *ts = (struct th_session *)s;

	ts->th->n_freed++;
	client_forget(ts);
	free(ts);
}

/* Keep the job: the test runs it later, as the thread pool would. */
static void th_offload(struct core_job *j)
{
	struct th *t = j->core->glue_ctx;

	if (t->n_jobs == TH_MAX_JOBS) {
		j->work(j);
		core_job_done(j);
		return;
	}
	t->jobs[t->n_jobs++] = j;
}

static void th_kick(struct session *s)
{
	((struct th_session *)s)->kicks++;
}

static const struct core_glue_ops th_glue = {
	.send = th_send,
	.kick = th_kick,
	.free = th_free,
};

static const struct core_glue_ops th_glue_deferred = {
	.send = th_send,
	.kick = th_kick,
	.free = th_free,
	.offload = th_offload,
};

void th_defer_jobs(struct th *t, bool defer)
{
	if (!defer)
		th_jobs_run(t, TH_MAX_JOBS); /* what is left, as the pool would */
	t->defer_jobs = defer;
	t->core->glue = defer ? &th_glue_deferred : &th_glue;
}

unsigned th_jobs_run(struct th *t, unsigned n)
{
	unsigned i;

	for (i = 0; i < n && t->n_jobs; i++) {
		struct core_job *j = t->jobs[0];

		memmove(&t->jobs[0], &t->jobs[1], --t->n_jobs * sizeof(t->jobs[0]));
		j->work(j);
		core_job_done(j);
	}
	return i;
}

/* ---- The fake peer layer. ---- */

static int fp_known(void *peers, const char *peer)
{
	struct th *t = peers;

	t->n_known_calls++;
	return strcmp(peer, TH_PEER) ? -RP_EPEERUNKNOWN : 0;
}

static int fp_remote_open(void *peers, struct session *s, const struct rp_hdr *h, const char *peer,
			  const char *name)
{
	struct th *t = peers;
	struct th_open *o;

	if (t->open_status < 0)
		return t->open_status;
	if (t->n_opens == TH_MAX_OPENS)
		return -ENOMEM;
	o = &t->opens[t->n_opens++];
	o->s = s;
	o->h = *h;
	snprintf(o->peer, sizeof(o->peer), "%s", peer);
	snprintf(o->name, sizeof(o->name), "%s", name);
	session_hold(s); /* the reply comes later: the session must still be there */
	return 0;
}

static int fp_submit(void *peers, struct op *op)
{
	struct th *t = peers;
	struct th_op *o;

	t->n_submits++;
	if (t->submit_status < 0)
		return t->submit_status;
	/* What the real peer layer refuses before sending anything. */
	if (op->q.opcode != RP_SQE_SEND && op->e->remote->revoked)
		return -RP_EUNEXPORTED;
	if (t->n_ops == TH_MAX_OPS)
		return -ENOMEM;
	o = &t->ops[t->n_ops++];
	o->op = op;
	o->send = op->q.opcode == RP_SQE_SEND;
	/* op->dest is valid only until submit returns: copy what is needed now. */
	if (o->send)
		memcpy(o->endpoint, op->dest->endpoint, sizeof(o->endpoint));
	return 0;
}

static void fp_export_gone(void *peers, struct export *e)
{
	struct th *t = peers;

	t->n_gone_calls++;
	if (!t->pin_gone || t->n_gone == TH_MAX_GONE)
		return;
	export_pin(export_ref(e));
	t->gone[t->n_gone++] = e;
}

static const struct core_peer_ops th_peer_ops = {
	.known = fp_known,
	.remote_open = fp_remote_open,
	.submit = fp_submit,
	.export_gone = fp_export_gone,
};

void th_open_answer(struct th *t, unsigned i, int status, const struct remote *info)
{
	struct th_open o = t->opens[i];
	struct remote none;

	memmove(&t->opens[i], &t->opens[i + 1], (t->n_opens - i - 1) * sizeof(o));
	t->n_opens--;
	if (!info) {
		memset(&none, 0, sizeof(none));
		info = &none;
	}
	remote_opened(o.s, &o.h, status, info);
	session_put(o.s);
}

void th_op_end(struct th *t, unsigned i, int status)
{
	struct op *op = t->ops[i].op;

	memmove(&t->ops[i], &t->ops[i + 1], (t->n_ops - i - 1) * sizeof(t->ops[0]));
	t->n_ops--;
	op_end(op, status);
}

void th_ops_end_all(struct th *t, int status)
{
	while (t->n_ops)
		th_op_end(t, 0, status);
}

void th_gone_release(struct th *t)
{
	while (t->n_gone) {
		struct export *e = t->gone[--t->n_gone];

		export_unpin(e);
		export_unref(e);
	}
}

/* ---- The core. ---- */

int th_init(struct th *t)
{
	int r;

	memset(t, 0, sizeof(*t));
	/* As in the daemon: a completion doorbell rung after its client closed it is EPIPE. */
	signal(SIGPIPE, SIG_IGN);
	t->cfg.node_name = TH_NODE;
	t->cfg.admin_gid = (gid_t)-1;
	t->cfg.socket_group = (gid_t)-1;
	t->cfg.max_registered_bytes = 1u << 20;
	t->cfg.max_regions = 16;
	t->cfg.max_inflight = 4096;
	t->cfg.max_connections = 4;
	r = core_new(&t->cfg, &th_glue, &t->core);
	if (r == 0)
		t->core->glue_ctx = t;
	if (r < 0)
		return r;
	t->core->peer_ops = &th_peer_ops;
	t->core->peers = t;
	return 0;
}

void th_fini(struct th *t)
{
	th_jobs_run(t, TH_MAX_JOBS);
	while (t->n_opens)
		th_open_answer(t, 0, -RP_EPEERDOWN, NULL);
	th_ops_end_all(t, -RP_EPEERDOWN);
	th_gone_release(t);
	t->core = core_free(t->core);
	op_cache_free();
}

struct th_session *th_session_new(struct th *t, uid_t uid, gid_t gid)
{
	struct th_session *ts = calloc(1, sizeof(*ts));
	struct ucred cred = { .pid = getpid(), .uid = uid, .gid = gid };

	if (!ts)
		abort();
	ts->th = t;
	session_init(t->core, &ts->s, &cred);
	snprintf(ts->s.comm, sizeof(ts->s.comm), "th-%u", ts->s.id);
	return ts;
}

struct th_session *th_session_new_groups(struct th *t, uid_t uid, gid_t gid, const gid_t *groups,
					 size_t n)
{
	struct th_session *ts = th_session_new(t, uid, gid);

	if (session_set_groups(&ts->s, groups, n) < 0)
		abort();
	return ts;
}

void th_session_close(struct th_session *ts)
{
	session_release(&ts->s);
	session_detach(&ts->s);
}

/* ---- Requests. ---- */

int th_packet(struct th_session *ts, const void *pkt, size_t n, int fd)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	const struct rp_hdr *h = (const struct rp_hdr *)buf;
	const char *why = NULL;

	if (n > sizeof(buf)) {
		if (fd >= 0)
			close(fd);
		return -EPROTO; /* the glue's recvmsg() truncates: MSG_TRUNC */
	}
	memcpy(buf, pkt, n);
	if (ctl_validate(h, n, fd >= 0, &why) < 0) {
		if (!why)
			abort();
		if (fd >= 0)
			close(fd);
		return -EPROTO;
	}
	if (ctl_is_admin(h->type) && ts->s.version)
		return 0; /* the glue gives these to admin.c */
	return session_dispatch(&ts->s, h, buf + sizeof(*h), fd);
}

int th_request(struct th_session *ts, uint16_t type, const void *body, size_t len, int fd)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	struct rp_hdr *h = (struct rp_hdr *)buf;

	if (sizeof(*h) + len > sizeof(buf))
		abort();
	memset(h, 0, sizeof(*h));
	h->len = (uint32_t)(sizeof(*h) + len);
	h->type = type;
	h->seq = ++ts->seq;
	memcpy(buf + sizeof(*h), body, len);
	return th_packet(ts, buf, h->len, fd);
}

const struct rp_hdr *th_reply(const struct th_session *ts)
{
	return (const struct rp_hdr *)ts->reply;
}

const void *th_reply_body(const struct th_session *ts)
{
	return ts->reply + sizeof(struct rp_hdr);
}

/* The last request's status, or 1 if it got no reply. */
static int reply_status(const struct th_session *ts, unsigned before)
{
	return ts->n_replies == before ? 1 : th_reply(ts)->status;
}

static int map_ring(struct th_session *ts)
{
	const struct rp_hello_reply *rep = th_reply_body(ts);
	struct th_ring *r = &ts->ring;

	r->size = rep->ring_size;
	if (ts->th->lean)
		r->base = ts->s.rings.base;
	else
		r->base = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, ts->fds[0], 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		return -errno;
	}
	if (rp_ring_view_init(&r->v, r->base, r->size, rep->sq_entries, rep->cq_entries) < 0)
		return -EPROTO;
	r->sq_tail = rp_ring_load(&r->v.sq->producer);
	r->cq_head = rp_ring_load(&r->v.cq->consumer);
	return 0;
}

int th_hello_v(struct th_session *ts, uint16_t min, uint16_t max)
{
	struct rp_hello req = { .magic = RP_PROTO_MAGIC, .version_min = min, .version_max = max };
	unsigned before = ts->n_replies;
	int r = th_request(ts, RP_MSG_HELLO, &req, sizeof(req), -1);

	if (r < 0 && r != -ECONNABORTED)
		return r;
	r = reply_status(ts, before);
	if (r == 0 && ts->nfds == RP_HELLO_FDS)
		r = map_ring(ts);
	return r;
}

int th_hello(struct th_session *ts)
{
	return th_hello_v(ts, RP_PROTO_VERSION_MIN, RP_PROTO_VERSION_MAX);
}

int th_memfd(struct th_session *ts, size_t len, unsigned seals, void **ret_map)
{
	int fd = memfd_create("th-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *p;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0 || (seals && fcntl(fd, F_ADD_SEALS, seals) < 0))
		goto out_close;
	if (ret_map) {
		if (ts->n_maps == TH_MAX_MAPS)
			abort();
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			goto out_close;
		ts->maps[ts->n_maps].addr = p;
		ts->maps[ts->n_maps++].len = len;
		*ret_map = p;
	}
	return fd;

out_close:
	close(fd);
	return -errno;
}

int th_region(struct th_session *ts, size_t len, uint32_t *ret_id, void **ret_map)
{
	struct rp_region_reg req = { .len = len };
	unsigned before = ts->n_replies;
	int fd = th_memfd(ts, len, F_SEAL_SHRINK | F_SEAL_GROW, ret_map);
	int r;

	if (fd < 0)
		return fd;
	r = th_request(ts, RP_MSG_REGION_REG, &req, sizeof(req), fd);
	if (r < 0)
		return r;
	r = reply_status(ts, before);
	if (r == 0 && ret_id)
		*ret_id = ((const struct rp_id *)th_reply_body(ts))->id;
	return r;
}

/* A wire name: up to RP_NAME_MAX bytes of @src, NUL-padded (unterminated if that long). */
static void put_name(char *dst, const char *src)
{
	memset(dst, 0, RP_NAME_MAX);
	memcpy(dst, src, strnlen(src, RP_NAME_MAX));
}

static int id_request(struct th_session *ts, uint16_t type, uint32_t id)
{
	struct rp_id req = { .id = id };
	unsigned before = ts->n_replies;
	int r = th_request(ts, type, &req, sizeof(req), -1);

	return r < 0 ? r : reply_status(ts, before);
}

int th_region_free(struct th_session *ts, uint32_t id)
{
	return id_request(ts, RP_MSG_REGION_FREE, id);
}

static int export_request(struct th_session *ts, uint16_t type, uint32_t region, uint32_t access,
			  const char *name)
{
	struct rp_export_req req = { .region = region, .access = access };
	unsigned before = ts->n_replies;
	int r;

	put_name(req.name, name);
	r = th_request(ts, type, &req, sizeof(req), -1);
	return r < 0 ? r : reply_status(ts, before);
}

int th_export(struct th_session *ts, uint32_t region, uint32_t access, const char *name)
{
	return export_request(ts, RP_MSG_EXPORT, region, access, name);
}

int th_export_acl(struct th_session *ts, uint32_t region, uint32_t access, const char *name,
		  const struct rp_export_acl_req *acl)
{
	struct rp_export_acl_req *req = malloc(sizeof(*req));
	unsigned before = ts->n_replies;
	int r;

	if (!req)
		abort();
	*req = *acl;
	req->x.region = region;
	req->x.access = access;
	put_name(req->x.name, name);
	r = th_request(ts, RP_MSG_EXPORT_ACL, req, sizeof(*req), -1);
	free(req);
	return r < 0 ? r : reply_status(ts, before);
}

int th_export_for(struct th_session *ts, uint32_t region, uint32_t access, const char *name,
		  uid_t uid)
{
	struct rp_export_acl_req acl = { .n_uids = 1, .uids = { uid } };

	return th_export_acl(ts, region, access, name, &acl);
}

int th_unexport(struct th_session *ts, uint32_t region, const char *name)
{
	return export_request(ts, RP_MSG_UNEXPORT, region, 0, name);
}

static int name_request(struct th_session *ts, uint16_t type, const char *peer, const char *name,
			uint32_t *ret_id)
{
	struct rp_name_req req;
	unsigned before = ts->n_replies;
	int r;

	memset(&req, 0, sizeof(req));
	put_name(req.peer, peer);
	put_name(req.name, name);
	r = th_request(ts, type, &req, sizeof(req), -1);
	if (r < 0)
		return r;
	r = reply_status(ts, before);
	if (r == 0 && ret_id)
		*ret_id = *(const uint32_t *)th_reply_body(ts); /* rp_id and rp_remote_reply */
	return r;
}

int th_remote_open(struct th_session *ts, const char *peer, const char *name, uint32_t *ret_id)
{
	return name_request(ts, RP_MSG_REMOTE_OPEN, peer, name, ret_id);
}

int th_remote_close(struct th_session *ts, uint32_t id)
{
	return id_request(ts, RP_MSG_REMOTE_CLOSE, id);
}

int th_ep_bind(struct th_session *ts, const char *name, uint32_t *ret_id)
{
	struct rp_ep_req req;
	unsigned before = ts->n_replies;
	int r;

	memset(&req, 0, sizeof(req));
	put_name(req.name, name);
	r = th_request(ts, RP_MSG_EP_BIND, &req, sizeof(req), -1);
	if (r < 0)
		return r;
	r = reply_status(ts, before);
	if (r == 0 && ret_id)
		*ret_id = ((const struct rp_id *)th_reply_body(ts))->id;
	return r;
}

int th_ep_bind_acl(struct th_session *ts, const char *name, const struct rp_export_acl_req *acl,
		   uint32_t *ret_id)
{
	struct rp_export_acl_req *req = malloc(sizeof(*req));
	unsigned before = ts->n_replies;
	int r;

	if (!req)
		abort();
	*req = *acl;
	put_name(req->x.name, name);
	r = th_request(ts, RP_MSG_EP_BIND_ACL, req, sizeof(*req), -1);
	free(req);
	if (r < 0)
		return r;
	r = reply_status(ts, before);
	if (r == 0 && ret_id)
		*ret_id = ((const struct rp_id *)th_reply_body(ts))->id;
	return r;
}

int th_ep_unbind(struct th_session *ts, uint32_t id)
{
	return id_request(ts, RP_MSG_EP_UNBIND, id);
}

int th_dest_open(struct th_session *ts, const char *peer, const char *name, uint32_t *ret_id)
{
	return name_request(ts, RP_MSG_DEST_OPEN, peer, name, ret_id);
}

/* ---- The client's side of the rings (what libclient/ring.c does). ---- */

int th_submit(struct th_session *ts, const struct rp_sqe *q)
{
	struct th_ring *r = &ts->ring;
	int64_t used = rp_ring_count(r->sq_tail, rp_ring_load(&r->v.sq->consumer), r->v.sq_entries);
	struct rp_sqe *e;

	if (used < 0)
		return -EPROTO;
	if (used == r->v.sq_entries)
		return -EAGAIN;
	e = &r->v.sqes[r->sq_tail & (r->v.sq_entries - 1)];
	memcpy(e, q, offsetof(struct rp_sqe, seq));
	memcpy(e->pad, q->pad, sizeof(e->pad));
	/* A session of protocol 3 or later polls the seq; before, the caller's is passed on. */
	rp_sqe_seq_store(e, ts->s.version >= RP_PROTO_VERSION_SEQ ? r->sq_tail + 1 : q->seq);
	r->sq_tail++;
	rp_ring_store(&r->v.sq->producer, r->sq_tail);
	return 0;
}

int th_run(struct th_session *ts)
{
	struct core *c = ts->s.core;
	int r;

	c->batching = true;
	core_pass_begin(c); /* a run here is a pass of the engine's */
	r = xfer_run(&ts->s);
	core_publish(c);
	c->batching = false;
	return r;
}

int th_reap(struct th_session *ts, struct rp_cqe *out, int max)
{
	struct th_ring *r = &ts->ring;
	uint32_t prod = rp_ring_load(&r->v.cq->producer);
	bool seq = ts->s.version >= RP_PROTO_VERSION_SEQ;
	int n = 0;

	if (rp_ring_count(prod, r->cq_head, r->v.cq_entries) < 0)
		return -EPROTO;
	/*
	 * Published (the producer index) is what both protocols promise; from
	 * 3 on, each such entry must also carry its lap, and the op is given
	 * without it.
	 */
	while (r->cq_head != prod && n < max) {
		struct rp_cqe *e = &r->v.cqes[r->cq_head & (r->v.cq_entries - 1)];
		uint16_t lap = rp_cqe_op_load(e) & ~RP_CQE_OP_MASK;

		if (lap != (seq ? rp_cqe_lap(r->cq_head, r->v.cq_entries) : 0))
			return -EPROTO;
		memcpy(&out[n], e, sizeof(*out));
		out[n++].op &= RP_CQE_OP_MASK;
		r->cq_head++;
	}
	if (n)
		rp_ring_store(&r->v.cq->consumer, r->cq_head);
	return n;
}
