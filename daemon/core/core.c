/* SPDX-License-Identifier: MIT */
/*
 * The base of the client core: its context, per-uid accounts, id tables and
 * maps, and a session's lifetime and replies. Sessions are embedded in the
 * glue's connection objects; the glue frees them (through its hook) once it
 * has detached and no operation, lookup or pending reply holds them.
 */
#include "core/core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A free slot's content: a link to the free slot with id @next (0: none). */
static void *free_link(uint32_t next)
{
	return (void *)((uintptr_t)next << 1 | 1u);
}

static uint32_t free_next(const void *p)
{
	return (uint32_t)((uintptr_t)p >> 1);
}

int idtab_add(struct idtab *t, void *p, uint32_t max, uint32_t *ret_id)
{
	uint32_t i, n;
	void **nv;

	if (!t->free) {
		if (t->n >= max)
			return -ENOSPC;
		n = t->n ? t->n * 2 : 8;
		if (n > max)
			n = max;
		nv = realloc(t->v, sizeof(*nv) * n);
		if (!nv)
			return -ENOMEM;
		/* The new slots, lowest id first. */
		for (i = t->n; i < n; i++)
			nv[i] = free_link(i + 1 < n ? i + 2 : 0);
		t->v = nv;
		t->free = t->n + 1;
		t->n = n;
	}
	i = t->free - 1;
	t->free = free_next(t->v[i]);
	t->v[i] = p;
	t->used++;
	*ret_id = i + 1;
	return 0;
}

void *idtab_get(const struct idtab *t, uint32_t id)
{
	return id && id <= t->n ? idtab_at(t, id - 1) : NULL;
}

void *idtab_take(struct idtab *t, uint32_t id)
{
	void *p = idtab_get(t, id);

	if (p) {
		t->v[id - 1] = free_link(0); /* reads as free; on no list */
		t->used--;
	}
	return p;
}

void idtab_release(struct idtab *t, uint32_t id)
{
	t->v[id - 1] = free_link(t->free);
	t->free = id;
}

void *idtab_del(struct idtab *t, uint32_t id)
{
	void *p = idtab_take(t, id);

	if (p)
		idtab_release(t, id);
	return p;
}

void idtab_hold(struct idtab *t, uint32_t id, uint32_t cq_pos, uint32_t sq_pos)
{
	struct idtab_held *v;
	uint32_t cap, i;

	if (t->held_n == t->held_cap) {
		cap = t->held_cap ? t->held_cap * 2 : 16;
		v = malloc(sizeof(*v) * cap);
		if (!v) {
			idtab_release(t, id); /* reused at once, as before there was a hold */
			return;
		}
		for (i = 0; i < t->held_n; i++)
			v[i] = t->held[(t->held_head + i) % t->held_cap];
		free(t->held);
		t->held = v;
		t->held_cap = cap;
		t->held_head = 0;
	}
	v = &t->held[(t->held_head + t->held_n) % t->held_cap];
	*v = (struct idtab_held){ .id = id, .cq_pos = cq_pos, .sq_pos = sq_pos };
	t->held_n++;
}

/*
 * Is consumer index @cons still short of @pos? A position is never more than
 * a ring ahead of its consumer: one further ahead was passed long ago, and
 * the indexes have wrapped since (2^31 operations later, a signed difference
 * would call it ahead again).
 */
static bool short_of(uint32_t cons, uint32_t pos)
{
	return pos - cons - 1u < IDTAB_HELD_WINDOW;
}

void idtab_unhold(struct idtab *t, uint32_t cq_cons, uint32_t sq_cons, uint32_t max, bool all)
{
	const struct idtab_held *h;

	while (t->held_n) {
		h = &t->held[t->held_head];
		if (!all && (short_of(cq_cons, h->cq_pos) || short_of(sq_cons, h->sq_pos)) &&
		    (t->free || t->n < max))
			break;
		idtab_release(t, h->id);
		t->held_head = (t->held_head + 1) % t->held_cap;
		t->held_n--;
	}
}

void session_id_hold(struct session *s, struct idtab *t, uint32_t id, bool named_in_cq)
{
	struct rings *r = &s->rings;

	if (!r->base) {
		idtab_release(t, id);
		return;
	}
	idtab_hold(t, id, named_in_cq ? r->cq_tail : rp_ring_load(&r->v.cq->consumer),
		   rp_ring_load(&r->v.sq->producer));
}

void session_ids_reuse(struct session *s, struct idtab *t, uint32_t max)
{
	struct rings *r = &s->rings;

	idtab_unhold(t, r->base ? rp_ring_load(&r->v.cq->consumer) : 0, r->sq_head, max, !r->base);
}

void idtab_free(struct idtab *t)
{
	free(t->v);
	free(t->held);
	memset(t, 0, sizeof(*t));
}

struct u64map_ent {
	struct u64map_ent *next;
	uint64_t key;
	void *p;
};

static uint32_t u64map_slot(const struct u64map *m, uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (uint32_t)key & (m->nb - 1);
}

/* Double the buckets when the map is fuller than one entry per bucket. */
static int u64map_grow(struct u64map *m)
{
	uint32_t nb = m->nb ? m->nb * 2 : 16, i;
	struct u64map old = *m;
	struct u64map_ent *e;

	m->b = calloc(nb, sizeof(*m->b));
	if (!m->b) {
		*m = old;
		return -ENOMEM;
	}
	m->nb = nb;
	for (i = 0; i < old.nb; i++)
		while ((e = old.b[i])) {
			uint32_t s = u64map_slot(m, e->key);

			old.b[i] = e->next;
			e->next = m->b[s];
			m->b[s] = e;
		}
	free(old.b);
	return 0;
}

int u64map_put(struct u64map *m, uint64_t key, void *p)
{
	struct u64map_ent *e;
	uint32_t s;

	if (m->n >= m->nb && u64map_grow(m) < 0 && !m->nb)
		return -ENOMEM;
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	s = u64map_slot(m, key);
	e->key = key;
	e->p = p;
	e->next = m->b[s];
	m->b[s] = e;
	m->n++;
	return 0;
}

void *u64map_get(const struct u64map *m, uint64_t key)
{
	const struct u64map_ent *e;

	if (!m->nb)
		return NULL;
	for (e = m->b[u64map_slot(m, key)]; e; e = e->next)
		if (e->key == key)
			return e->p;
	return NULL;
}

void u64map_del(struct u64map *m, uint64_t key)
{
	struct u64map_ent **pp, *e;

	if (!m->nb)
		return;
	for (pp = &m->b[u64map_slot(m, key)]; (e = *pp); pp = &e->next)
		if (e->key == key) {
			*pp = e->next;
			free(e);
			m->n--;
			return;
		}
}

void u64map_free(struct u64map *m)
{
	uint32_t i;
	struct u64map_ent *e;

	for (i = 0; i < m->nb; i++)
		while ((e = m->b[i])) {
			m->b[i] = e->next;
			free(e);
		}
	free(m->b);
	memset(m, 0, sizeof(*m));
}

/*
 * Jobs handed to the glue at once (core->jobs_max: the threads that run
 * them), and of them one user's: one thread stays free for the other users
 * while one user has work queued.
 */
#define JOBS_MAX_DEFAULT 4u
#define JOBS_USER_MAX(c) ((c)->jobs_max > 1 ? (c)->jobs_max - 1 : 1)

int core_new(const struct config *cfg, const struct core_glue_ops *glue, struct core **ret)
{
	struct core *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->cfg = cfg;
	c->glue = glue;
	c->next_id = 1;
	c->wire_transport = RP_WIRE_TRANSPORT_TCP;
	c->jobs_turn_tail = &c->jobs_turn;
	c->own_jobs.jobs_tail = &c->own_jobs.jobs;
	c->jobs_max = JOBS_MAX_DEFAULT;
	if (nametab_init(&c->export_names) < 0 || nametab_init(&c->endpoint_names) < 0 ||
	    nametab_init(&c->remote_keys) < 0 || nametab_init(&c->adding_names) < 0) {
		core_free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

/* @a has a job waiting that it may start: it takes its turn after those in line. */
static void jobs_line_up(struct core *c, struct uid_acct *a)
{
	if (a->jobs_turn || !a->jobs || a->jobs_running >= JOBS_USER_MAX(c))
		return;
	a->jobs_turn = true;
	a->jobs_next = NULL;
	*c->jobs_turn_tail = a;
	c->jobs_turn_tail = &a->jobs_next;
}

/* Hand the glue the next job of each user in turn while there is room. */
static void jobs_start(struct core *c)
{
	/* A job the glue runs at once ends inside this loop: its done() may queue more. */
	if (c->jobs_starting)
		return;
	c->jobs_starting = true;
	while (c->jobs_running < c->jobs_max && c->jobs_turn) {
		struct uid_acct *a = c->jobs_turn;
		struct core_job *j = a->jobs;

		c->jobs_turn = a->jobs_next;
		if (!c->jobs_turn)
			c->jobs_turn_tail = &c->jobs_turn;
		a->jobs_turn = false;
		a->jobs = j->next;
		if (!a->jobs)
			a->jobs_tail = &a->jobs;
		a->jobs_running++;
		c->jobs_running++;
		c->jobs_waiting--;
		jobs_line_up(c, a); /* its next one, after the others' */
		if (c->glue->offload) {
			c->glue->offload(j);
		} else {
			j->work(j);
			core_job_done(j);
		}
	}
	c->jobs_starting = false;
}

void core_job_run(struct core_job *j, struct uid_acct *acct)
{
	struct core *c = j->core;
	struct uid_acct *a = acct ? acct : &c->own_jobs;

	if (acct)
		acct->refs++;
	j->acct = a;
	j->next = NULL;
	*a->jobs_tail = j;
	a->jobs_tail = &j->next;
	c->jobs_waiting++;
	jobs_line_up(c, a);
	jobs_start(c);
}

void core_job_done(struct core_job *j)
{
	struct core *c = j->core;
	struct uid_acct *a = j->acct;

	a->jobs_running--;
	c->jobs_running--;
	c->jobs_done++;
	jobs_line_up(c, a);
	j->done(j); /* frees @j */
	if (a != &c->own_jobs)
		acct_put(c, a);
	jobs_start(c);
}

struct core *core_free(struct core *c)
{
	if (!c)
		return NULL;
	u64map_free(&c->by_peer_id);
	nametab_fini(&c->export_names);
	nametab_fini(&c->remote_keys);
	nametab_fini(&c->endpoint_names);
	nametab_fini(&c->adding_names);
	free(c);
	return NULL;
}

struct uid_acct *acct_get(struct core *c, uid_t uid)
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
		a->jobs_tail = &a->jobs;
		a->next = c->accts;
		c->accts = a;
	}
	a->refs++;
	return a;
}

void acct_put(struct core *c, struct uid_acct *a)
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

void session_init(struct core *c, struct session *s, const struct ucred *cred)
{
	s->core = c;
	s->cred = *cred;
	s->rings.memfd = s->rings.sq_bell = s->rings.cq_bell = -1;
	s->rings.sq_client = s->rings.cq_client = -1;
	s->id = c->next_id++;
	s->next = c->sessions;
	if (c->sessions)
		c->sessions->prev = s;
	c->sessions = s;
	c->n_sessions++;
}

int session_set_groups(struct session *s, const gid_t *groups, size_t n)
{
	gid_t *v = NULL;

	if (n) {
		v = malloc(n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memcpy(v, groups, n * sizeof(*v));
	}
	free(s->groups);
	s->groups = v;
	s->n_groups = n;
	return 0;
}

void session_hold(struct session *s)
{
	s->ops_pending++;
}

static void session_unlink(struct session *s)
{
	struct core *c = s->core;

	if (s->prev)
		s->prev->next = s->next;
	else
		c->sessions = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
	c->n_sessions--;
}

void session_put(struct session *s)
{
	if (--s->ops_pending == 0 && s->detached)
		s->core->glue->free(s);
}

void session_detach(struct session *s)
{
	session_unlink(s);
	s->detached = true;
	if (!s->ops_pending)
		s->core->glue->free(s);
}

int session_reply(struct session *s, const struct rp_hdr *req, int status, const void *body,
		  size_t len, const int *fds, int nfds)
{
	return session_reply_flags(s, req, status, 0, body, len, fds, nfds);
}

int session_reply_flags(struct session *s, const struct rp_hdr *req, int status, uint16_t flags,
			const void *body, size_t len, const int *fds, int nfds)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	struct rp_hdr *h = (struct rp_hdr *)buf;

	if (sizeof(*h) + len > sizeof(buf) || nfds > RP_HELLO_FDS)
		return -EMSGSIZE;
	if (s->dead)
		return -ENOTCONN;
	memset(h, 0, sizeof(*h));
	h->len = (uint32_t)(sizeof(*h) + len);
	h->type = (uint16_t)(req->type | RP_MSG_REPLY);
	h->seq = req->seq;
	h->status = status;
	h->flags = flags;
	if (len)
		memcpy(buf + sizeof(*h), body, len);
	return s->core->glue->send(s, buf, h->len, fds, nfds);
}

bool name_valid(const char *name, size_t size)
{
	size_t i;

	for (i = 0; i < size && name[i]; i++)
		if (!(name[i] >= 'a' && name[i] <= 'z') && !(name[i] >= 'A' && name[i] <= 'Z') &&
		    !(name[i] >= '0' && name[i] <= '9') && !strchr("._-", name[i]))
			return false;
	if (i == 0 || i == size)
		return false;
	/* Everything after the NUL must be zero too: no hidden bytes on the wire. */
	for (; i < size; i++)
		if (name[i])
			return false;
	return true;
}
