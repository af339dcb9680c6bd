/* SPDX-License-Identifier: MIT */
/*
 * The node's export name table (named regions others may open) and the
 * handles clients hold to exports: local ones, and remote ones that another
 * daemon's LOOKUP answered. Names are looked up on the control path; peers
 * find an export by the id its LOOKUP gave them, in O(1).
 */
#include "core/core.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "rdma/verbs_local.h"

/* Per-session cap on remote handles. */
#define MAX_SESSION_HANDLES 65536u
/* Per-session cap on EXPORTs whose MR is being registered (-EBUSY beyond). */
#define MAX_SESSION_EXPORTING 4u
/* Per-registration cap on the LOOKUPs waiting for one peer MR (-EAGAIN beyond). */
#define MAX_MR_WAITS 1024u

/* Opens, peers' lookups: a hash, not a walk past every other user's exports. */
struct export *export_find(struct core *c, const char *name)
{
	struct name_node *n = nametab_find(&c->export_names, name);

	return n ? NAMETAB_ENTRY(n, struct export, node) : NULL;
}

/*
 * @e onto the core's list @list, into @names and onto its region's list
 * @rlist: the public ones, or those whose MR is being registered.
 */
static void lists_add(struct export *e, struct export **list, struct nametab *names,
		      struct export **rlist)
{
	e->next = *list;
	if (e->next)
		e->next->pprev = &e->next;
	e->pprev = list;
	*list = e;
	nametab_add(names, &e->node, e->name);
	e->rnext = *rlist;
	if (e->rnext)
		e->rnext->rpprev = &e->rnext;
	e->rpprev = rlist;
	*rlist = e;
	e->region->acct->exports++;
}

/* @e off the lists lists_add() put it on (@names among them). */
static void lists_del(struct export *e, struct nametab *names)
{
	nametab_del(names, &e->node);
	*e->pprev = e->next;
	if (e->next)
		e->next->pprev = e->pprev;
	e->next = NULL;
	e->pprev = NULL;
	*e->rpprev = e->rnext;
	if (e->rnext)
		e->rnext->rpprev = e->rpprev;
	e->rnext = NULL;
	e->rpprev = NULL;
	e->region->acct->exports--;
}

/* @e goes public: on the list and in the name table. */
static void export_link(struct core *c, struct export *e)
{
	lists_add(e, &c->exports, &c->export_names, &e->region->exports);
	c->n_exports++;
	e->s->exports++;
}

static void export_unlink(struct core *c, struct export *e)
{
	lists_del(e, &c->export_names);
	c->n_exports--;
	e->s->exports--;
}

static unsigned vmr_access(uint32_t access)
{
	return (access & RP_ACCESS_REMOTE_READ ? VMR_REMOTE_READ : 0) |
	       (access & RP_ACCESS_REMOTE_WRITE ? VMR_REMOTE_WRITE : 0);
}

/*
 * An MR of an export's region, registered off the loop thread: the export's
 * own (export_add()) or a looking peer's (export_peer_mr_prepare()). The job
 * holds the region, so its memory stays mapped while the device pins it.
 */
struct mr_job {
	struct core_job job; /* first */
	struct export *e;    /* referenced */
	struct region *r;    /* referenced */
	struct vlocal *vlocal;
	unsigned access;
	atomic_bool cancelled; /* nobody wants it any more: the work need not be done */
	struct vmr *mr;	       /* the result */
	int status;
	/* export_add(): the request to answer */
	struct session *s; /* held */
	struct rp_hdr h;
	/* export_peer_mr_prepare(): the looker, and whom to tell (in order) */
	char peer[RP_NAME_MAX];
	struct mr_wait *waits, **waits_tail;
	unsigned n_waits;
};

struct mr_wait {
	struct mr_wait *next;
	void (*cb)(void *arg, int status);
	void *arg;
};

static void mr_job_work(struct core_job *cj)
{
	struct mr_job *j = (struct mr_job *)cj;

	if (atomic_load_explicit(&j->cancelled, memory_order_relaxed))
		j->status = -ECANCELED;
	else
		j->status = vmr_reg(j->vlocal, j->r->addr, j->r->len, j->access, &j->mr);
}

/* Nobody will use its result: a job not begun yet skips the work. */
static void mr_job_cancel(struct mr_job *j)
{
	if (j)
		atomic_store_explicit(&j->cancelled, true, memory_order_relaxed);
}

static struct mr_job *mr_job_new(struct export *e, struct region *r,
				 void (*done)(struct core_job *j))
{
	struct mr_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->job.core = e->core;
	j->job.work = mr_job_work;
	j->job.done = done;
	j->e = export_ref(e);
	j->r = region_ref(r);
	j->vlocal = e->core->vlocal;
	j->access = vmr_access(e->access);
	return j;
}

/* @e's MR is being registered: its name is taken, it is not public yet. */
static void adding_link(struct core *c, struct export *e)
{
	lists_add(e, &c->exports_adding, &c->adding_names, &e->region->adding);
}

static void adding_unlink(struct core *c, struct export *e)
{
	lists_del(e, &c->adding_names);
}

static void unref_region(void *arg)
{
	region_unref(arg);
}

/* The export's MR is there, or not: it goes public, or it goes. */
static void export_job_done(struct core_job *cj)
{
	struct mr_job *j = (struct mr_job *)cj;
	struct export *e = j->e;
	struct core *c = e->core;
	int status = j->status;

	e->job = NULL;
	j->s->exporting--;
	/* Killed meanwhile (its region freed, its client gone): it is unlinked already. */
	if (e->dead)
		status = -RP_EBADHANDLE;
	else
		adding_unlink(c, e);
	if (status == 0) {
		e->xport = j->mr;
		e->xregion = j->r; /* the job's reference is the export's now */
		export_link(c, e);
	} else {
		if (!j->s->dead)
			log_debug("client %u: export '%s' failed: %s", j->s->id, e->name,
				  rp_strerror(status));
		/* The region stays until the MR that pinned it is gone. */
		core_drop_then(c, j->r->acct, &j->mr, 1, NULL, 0, unref_region, j->r);
		e->dead = true;
		export_unref(e); /* the name table's reference */
	}
	export_unref(e); /* the job's */
	session_reply(j->s, &j->h, status, NULL, 0, NULL, 0);
	session_put(j->s);
	free(j);
}

static bool name_taken(struct core *c, const char *name)
{
	return nametab_find(&c->adding_names, name) || export_find(c, name);
}

int export_add(struct session *s, const struct rp_hdr *h, struct region *r, const char *name,
	       uint32_t access, const struct export_acl *acl)
{
	struct core *c = s->core;
	struct mr_job *j = NULL;
	struct export *e;

	if (name_taken(c, name))
		return -EEXIST;
	/* A client has one request out at a time: more is pipelining to fill the thread pool. */
	if (c->vlocal && s->exporting >= MAX_SESSION_EXPORTING)
		return -EBUSY;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	if (acl) {
		e->acl = malloc(sizeof(*e->acl));
		if (!e->acl) {
			free(e);
			return -ENOMEM;
		}
		*e->acl = *acl;
	}
	e->core = c;
	e->refs = 1;
	e->region = r;
	e->s = r->s;
	e->access = access;
	strcpy(e->name, name);
	if (!c->vlocal) {
		export_link(c, e);
		return 0;
	}
	/* Registering pins every page of the region: milliseconds for a large one. */
	j = mr_job_new(e, r, export_job_done);
	if (!j) {
		free(e->acl);
		free(e);
		return -ENOMEM;
	}
	j->s = s;
	j->h = *h;
	session_hold(s);
	s->exporting++;
	e->job = j;
	adding_link(c, e);
	core_job_run(&j->job, j->r->acct);
	return EXPORT_LATER;
}

void export_owner(const struct export *e, struct creds *ret)
{
	session_creds(e->s, ret);
}

bool export_may_open_local(const struct export *e, const struct session *s)
{
	struct creds owner, who;

	export_owner(e, &owner);
	session_creds(s, &who);
	return acl_allows_local(e->acl, &owner, &who);
}

bool export_may_open_peer(const struct export *e, const struct peer_conf *pc)
{
	struct creds owner;

	export_owner(e, &owner);
	return acl_allows_peer(e->acl, &owner, pc);
}

struct export *export_ref(struct export *e)
{
	e->refs++;
	return e;
}

/*
 * Once @e's MRs are given up and none is still being deregistered, its
 * region may go (the MRs pinned its pages) and the UNEXPORT waiting for
 * it is answered.
 */
static void export_settle(struct export *e)
{
	struct session *s = e->waiter;

	if (!e->released || e->drops)
		return;
	if (e->xregion)
		region_unref(e->xregion);
	e->xregion = NULL;
	if (!s)
		return;
	e->waiter = NULL;
	session_reply(s, &e->waiter_h, 0, NULL, 0, NULL, 0);
	session_put(s);
}

static void export_dropped(void *arg)
{
	struct export *e = arg;

	e->drops--;
	export_settle(e);
	export_unref(e);
}

/* Deregister @n of @e's MRs off the loop thread; an UNEXPORT of @e waits for them. */
static void export_drop(struct export *e, struct vmr *const *mrs, unsigned n)
{
	struct region *r = e->xregion ? e->xregion : e->region;

	e->drops++;
	export_ref(e);
	core_drop_then(e->core, r ? r->acct : NULL, mrs, n, NULL, 0, export_dropped, e);
}

/*
 * The device must stop honouring an export as soon as it is withdrawn, but
 * not under an op still using its MR: the MRs go when the last pin goes,
 * the peers' own with the export's (peers' pending withdrawals pin it).
 * Deregistering unpins every page, so it runs off the loop thread; the
 * UNEXPORT waiting for it is answered once every MR of the export is gone.
 */
static void release_mr(struct export *e)
{
	struct vmr **mrs;
	unsigned i, n = 0;

	if (!e->dead || e->ops)
		return;
	e->released = true;
	mrs = calloc(e->n_lookers + 1, sizeof(*mrs));
	for (i = 0; i <= e->n_lookers; i++) {
		struct vmr **mr = i < e->n_lookers ? &e->lookers[i].mr : &e->xport;

		if (*mr && mrs)
			mrs[n++] = *mr;
		else
			vmr_dereg(*mr); /* none, or no memory for the job: here, then */
		*mr = NULL;
	}
	if (n)
		export_drop(e, mrs, n);
	free(mrs);
	export_settle(e);
}

void export_pin(struct export *e)
{
	e->ops++;
}

void export_unpin(struct export *e)
{
	e->ops--;
	release_mr(e);
}

/*
 * Handles to one export of one incarnation of a peer, whatever the session:
 * revoked together (remotes_revoke()), found by that key in a name table,
 * not by a walk past every handle on the node. Any local user may open
 * tens of thousands of handles, and a peer's revocation (or an op refused
 * as unexported) would walk them all for each.
 */
struct remote_key {
	struct name_node node;
	struct remote *list; /* rm->prev/next */
	char key[RP_NAME_MAX + 40];
};

static void remote_key_of(char *buf, size_t len, const char *peer, uint64_t inc, uint64_t id)
{
	snprintf(buf, len, "%s/%016llx/%016llx", peer, (unsigned long long)inc,
		 (unsigned long long)id);
}

static int remote_link(struct core *c, struct remote *rm)
{
	char key[sizeof(((struct remote_key *)0)->key)];
	struct remote_key *k;
	struct name_node *n;

	remote_key_of(key, sizeof(key), rm->peer, rm->inc, rm->id);
	n = nametab_find(&c->remote_keys, key);
	if (n) {
		k = NAMETAB_ENTRY(n, struct remote_key, node);
	} else {
		k = calloc(1, sizeof(*k));
		if (!k)
			return -ENOMEM;
		memcpy(k->key, key, sizeof(key));
		nametab_add(&c->remote_keys, &k->node, k->key);
	}
	rm->key = k;
	rm->prev = NULL;
	rm->next = k->list;
	if (k->list)
		k->list->prev = rm;
	k->list = rm;
	c->n_remotes++;
	return 0;
}

static void remote_unlink(struct core *c, struct remote *rm)
{
	struct remote_key *k = rm->key;

	if (!k)
		return;
	if (rm->prev)
		rm->prev->next = rm->next;
	else
		k->list = rm->next;
	if (rm->next)
		rm->next->prev = rm->prev;
	rm->key = NULL;
	c->n_remotes--;
	if (!k->list) {
		nametab_del(&c->remote_keys, &k->node);
		free(k);
	}
}

void export_unref(struct export *e)
{
	if (!e)
		return;
	if (e->refs == 1) {
		/* The last reference: its MRs go (their deregistration holds one of its own). */
		e->dead = true;
		release_mr(e);
	}
	if (--e->refs)
		return;
	if (e->remote) {
		remote_unlink(e->core, e->remote);
		free(e->remote);
	}
	free(e->lookers);
	free(e->acl);
	free(e);
}

static void export_kill(struct core *c, struct export *e)
{
	unsigned i;

	export_unlink(c, e);
	e->dead = true;
	for (i = 0; i < e->n_lookers; i++)
		mr_job_cancel(e->lookers[i].job); /* no peer gets a key to it now */
	if (e->peer_id)
		u64map_del(&c->by_peer_id, e->peer_id);
	if (c->peer_ops)
		c->peer_ops->export_gone(c->peers, e); /* while e->region is still there */
	e->region = NULL;
	release_mr(e);
	export_unref(e);
}

static struct looker *looker_find(const struct export *e, const char *peer)
{
	unsigned i;

	for (i = 0; i < e->n_lookers; i++)
		if (!strcmp(e->lookers[i].name, peer))
			return &e->lookers[i];
	return NULL;
}

bool export_looked_up_by(const struct export *e, const char *peer)
{
	return looker_find(e, peer) != NULL;
}

/* A looker's MR is there, or not: whoever waits for it hears which. */
static void peer_mr_job_done(struct core_job *cj)
{
	struct mr_job *j = (struct mr_job *)cj;
	struct export *e = j->e;
	struct looker *lk = looker_find(e, j->peer);
	struct mr_wait *w;
	int status = j->status;

	if (lk && lk->job == j)
		lk->job = NULL;
	/* Withdrawn, or the peer's right taken away, meanwhile: it gets no key. */
	if ((status == 0 && (!lk || e->dead || !e->xport)) || status == -ECANCELED)
		status = -RP_ENOEXPORT;
	if (status == 0 && !lk->mr) {
		lk->mr = j->mr;
		j->mr = NULL;
	}
	/* Unwanted: it goes (and the export's region stays until it is gone). */
	if (j->mr)
		export_drop(e, &j->mr, 1);
	region_unref(j->r);
	while ((w = j->waits)) {
		j->waits = w->next;
		w->cb(w->arg, status);
		free(w);
	}
	export_unpin(e);
	export_unref(e);
	free(j);
}

int export_peer_mr_prepare(struct export *e, const char *peer, void (*cb)(void *arg, int status),
			   void *arg)
{
	struct looker *lk = looker_find(e, peer);
	struct mr_job *j;
	struct mr_wait *w;

	if (!lk || !e->xport || !e->region || e->dead)
		return -EOPNOTSUPP;
	if (lk->mr)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->cb = cb;
	w->arg = arg;
	/* One registration per looker: LOOKUPs meanwhile wait for the same one. */
	j = lk->job;
	if (j && j->n_waits >= MAX_MR_WAITS) {
		free(w);
		return -EAGAIN;
	}
	if (j) {
		j->n_waits++;
		*j->waits_tail = w;
		j->waits_tail = &w->next;
		return EXPORT_LATER;
	}
	j = mr_job_new(e, e->region, peer_mr_job_done);
	if (!j) {
		free(w);
		return -ENOMEM;
	}
	snprintf(j->peer, sizeof(j->peer), "%s", peer);
	j->waits = w;
	j->waits_tail = &w->next;
	j->n_waits = 1;
	lk->job = j;
	export_pin(e);
	/* Without a thread pool, @cb may be called before it returns. */
	core_job_run(&j->job, j->r->acct);
	return EXPORT_LATER;
}

int export_peer_mr(struct export *e, const char *peer, struct vmr **ret)
{
	struct looker *lk = looker_find(e, peer);

	if (!lk || !lk->mr || !e->xport || !e->region || e->dead)
		return -EOPNOTSUPP;
	*ret = lk->mr;
	return 0;
}

/* @name as a looker of @e (its MR comes with its first verbs LOOKUP: export_peer_mr()). */
static int add_looker(struct export *e, const char *name)
{
	struct looker *v;

	if (looker_find(e, name))
		return 0;
	v = realloc(e->lookers, (e->n_lookers + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	e->lookers = v;
	memset(&v[e->n_lookers], 0, sizeof(*v));
	snprintf(v[e->n_lookers].name, sizeof(v->name), "%s", name);
	e->n_lookers++;
	return 0;
}

struct vmr *export_forget_looker(struct export *e, const char *peer)
{
	struct looker *lk = looker_find(e, peer);
	struct vmr *mr;

	if (!lk)
		return NULL;
	mr_job_cancel(lk->job);
	mr = lk->mr;
	memmove(lk, lk + 1, (size_t)(e->n_lookers - (unsigned)(lk - e->lookers) - 1) * sizeof(*lk));
	e->n_lookers--;
	return mr;
}

void export_mr_drop(struct export *e, struct vmr *mr)
{
	if (mr)
		export_drop(e, &mr, 1);
}

int export_publish(struct core *c, struct export *e, const char *peer)
{
	int r = add_looker(e, peer);

	if (r < 0 || e->peer_id)
		return r;
	r = u64map_put(&c->by_peer_id, c->next_peer_id + 1, e);
	if (r == 0)
		e->peer_id = ++c->next_peer_id;
	return r;
}

struct export *export_by_peer_id(struct core *c, uint64_t id)
{
	return u64map_get(&c->by_peer_id, id);
}

/* Request @h of @s is answered once @e's MRs are gone (release_mr()). */
static int export_wait(struct export *e, struct session *s, const struct rp_hdr *h)
{
	e->waiter = s;
	e->waiter_h = *h;
	session_hold(s);
	return EXPORT_DRAINING;
}

int export_remove(struct core *c, struct session *s, const struct rp_hdr *h, uint32_t region,
		  const char *name)
{
	struct export *e;
	int r;

	e = export_find(c, name);
	if (!e || e->s != s || e->region->id != region)
		return -ENOENT;
	export_ref(e);
	/*
	 * Peers that may still hold its rkey, or local verbs ops, keep the
	 * MR (and so the client's memory) reachable: the client hears
	 * "done" only when they are gone and the MRs are deregistered
	 * (off the loop thread), so after rp_region_unexport() returns
	 * nothing writes into the region through this export.
	 */
	r = EXPORT_REMOVED;
	if (e->xport || e->drops)
		r = export_wait(e, s, h);
	export_kill(c, e);
	if (r == EXPORT_REMOVED && e->ops)
		r = export_wait(e, s, h); /* the peer layer pinned it (export_gone) */
	export_unref(e);
	return r;
}

void export_remove_region(struct core *c, struct region *r)
{
	struct export *e;

	/* Its own lists: not a walk past every other user's exports. */
	while ((e = r->exports))
		export_kill(c, e); /* unlinks it */
	/* Not public yet: its job finds it dead and answers the EXPORT with an error. */
	while ((e = r->adding)) {
		adding_unlink(c, e);
		e->dead = true;
		mr_job_cancel(e->job);
	}
}

void remote_opened(struct session *s, const struct rp_hdr *h, int status, const struct remote *info)
{
	struct core *c = s->core;
	struct rp_remote_reply rep = { 0 };
	struct export *e = NULL;
	struct remote *rm = NULL;

	if (s->dead)
		return;
	if (status == 0) {
		e = calloc(1, sizeof(*e));
		rm = calloc(1, sizeof(*rm));
		status = e && rm ? 0 : -ENOMEM;
	}
	if (status == 0) {
		*rm = *info;
		rm->key = NULL;
		status = remote_link(c, rm);
	}
	if (status == 0) {
		session_ids_reuse(s, &s->remotes, MAX_SESSION_HANDLES);
		status = idtab_add(&s->remotes, e, MAX_SESSION_HANDLES, &rep.id);
		if (status < 0)
			remote_unlink(c, rm);
	}
	if (status == 0) {
		e->core = c;
		e->refs = 1;
		e->access = info->access;
		e->remote = rm;
		rep.access = info->access;
		rep.len = info->len;
		e = NULL;
		rm = NULL;
	}
	session_reply(s, h, status, &rep, sizeof(rep), NULL, 0);
	free(e);
	free(rm);
}

void remotes_revoke(struct core *c, const char *peer, uint64_t inc, uint64_t id)
{
	char key[sizeof(((struct remote_key *)0)->key)];
	struct name_node *n;
	struct remote *rm;

	remote_key_of(key, sizeof(key), peer, inc, id);
	n = nametab_find(&c->remote_keys, key);
	for (rm = n ? NAMETAB_ENTRY(n, struct remote_key, node)->list : NULL; rm; rm = rm->next)
		rm->revoked = true;
}
