/* SPDX-License-Identifier: MIT */
/*
 * The node's export name table (named regions others may open) and the
 * handles clients hold to exports: local ones, and remote ones that another
 * daemon's LOOKUP answered. Names are looked up on the control path; peers
 * find an export by the id its LOOKUP gave them, in O(1).
 */
#include "core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/verbs_local.h"

/* Per-session cap on remote handles. */
#define MAX_SESSION_HANDLES 65536u

struct export *export_find(struct core *c, const char *name)
{
	struct export *e;

	for (e = c->exports; e; e = e->next)
		if (!strcmp(e->name, name))
			return e;
	return NULL;
}

/* Exports are bounded per uid (by max_regions): each costs memory and lookups. */
unsigned exports_of_uid(const struct core *c, uid_t uid)
{
	const struct export *e;
	unsigned n = 0;

	for (e = c->exports; e; e = e->next)
		n += e->s && e->s->cred.uid == uid;
	return n;
}

static unsigned vmr_access(uint32_t access)
{
	return (access & RP_ACCESS_REMOTE_READ ? VMR_REMOTE_READ : 0) |
	       (access & RP_ACCESS_REMOTE_WRITE ? VMR_REMOTE_WRITE : 0);
}

int export_add(struct core *c, struct region *r, const char *name, uint32_t access,
	       const struct export_acl *acl)
{
	struct export *e;

	if (export_find(c, name))
		return -EEXIST;
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
	if (c->vlocal) {
		int err = vmr_reg(c->vlocal, r->addr, r->len, vmr_access(access), &e->xport);

		if (err < 0) {
			free(e->acl);
			free(e);
			return err;
		}
		e->xregion = region_ref(r);
	}
	strcpy(e->name, name);
	e->next = c->exports;
	c->exports = e;
	return 0;
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

static void drop_looker_mrs(struct export *e)
{
	unsigned i;

	for (i = 0; i < e->n_lookers; i++)
		e->lookers[i].mr = vmr_dereg(e->lookers[i].mr);
}

/*
 * The device must stop honouring an export as soon as it is withdrawn, but
 * not under an op still using its MR: the MR goes when the last pin goes.
 * The peers' own MRs go with it (peers' pending withdrawals pin it).
 */
static void release_mr(struct export *e)
{
	struct session *s = e->waiter;

	if (!e->dead || e->ops)
		return;
	drop_looker_mrs(e);
	e->xport = vmr_dereg(e->xport);
	if (e->xregion)
		region_unref(e->xregion);
	e->xregion = NULL;
	if (s) {
		/* Nothing can reach the memory any more: the UNEXPORT is done. */
		e->waiter = NULL;
		session_reply(s, &e->waiter_h, 0, NULL, 0, NULL, 0);
		session_put(s);
	}
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

static void remote_unlink(struct core *c, struct remote *rm)
{
	if (rm->prev)
		rm->prev->next = rm->next;
	else
		c->remotes = rm->next;
	if (rm->next)
		rm->next->prev = rm->prev;
}

void export_unref(struct export *e)
{
	if (!e || --e->refs)
		return;
	e->dead = true;
	release_mr(e);
	if (e->remote) {
		remote_unlink(e->core, e->remote);
		free(e->remote);
	}
	free(e->lookers);
	free(e->acl);
	free(e);
}

static void export_kill(struct core *c, struct export **pp)
{
	struct export *e = *pp;

	*pp = e->next;
	e->dead = true;
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

int export_peer_mr(struct export *e, const char *peer, struct vmr **ret)
{
	struct looker *lk = looker_find(e, peer);
	int r;

	if (!lk || !e->xport || !e->region || e->dead)
		return -EOPNOTSUPP;
	if (!lk->mr) {
		r = vmr_reg(e->core->vlocal, e->region->addr, e->region->len, vmr_access(e->access),
			    &lk->mr);
		if (r < 0)
			return r;
	}
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
	mr = lk->mr;
	memmove(lk, lk + 1, (size_t)(e->n_lookers - (unsigned)(lk - e->lookers) - 1) * sizeof(*lk));
	e->n_lookers--;
	return mr;
}

void export_mr_drop(struct vmr *mr)
{
	vmr_dereg(mr);
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

int export_remove(struct core *c, struct session *s, const struct rp_hdr *h, uint32_t region,
		  const char *name)
{
	struct export **pp, *e;
	int r;

	for (pp = &c->exports; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->name, name))
			continue;
		if ((*pp)->s != s || (*pp)->region->id != region)
			return -ENOENT;
		e = export_ref(*pp);
		export_kill(c, pp);
		/*
		 * Peers that may still hold its rkey, or local verbs ops, keep the
		 * MR (and so the client's memory) reachable: the client hears
		 * "done" only when they are gone, so after rp_region_unexport()
		 * returns nothing writes into the region through this export.
		 */
		r = EXPORT_REMOVED;
		if (e->ops) {
			e->waiter = s;
			e->waiter_h = *h;
			session_hold(s);
			r = EXPORT_DRAINING;
		}
		export_unref(e);
		return r;
	}
	return -ENOENT;
}

void export_remove_region(struct core *c, struct region *r)
{
	struct export **pp = &c->exports;

	while (*pp)
		if ((*pp)->region == r)
			export_kill(c, pp);
		else
			pp = &(*pp)->next;
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
		status =
			e && rm ? idtab_add(&s->remotes, e, MAX_SESSION_HANDLES, &rep.id) : -ENOMEM;
	}
	if (status == 0) {
		*rm = *info;
		rm->prev = NULL;
		rm->next = c->remotes;
		if (c->remotes)
			c->remotes->prev = rm;
		c->remotes = rm;
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
	struct remote *rm;

	for (rm = c->remotes; rm; rm = rm->next)
		if (rm->id == id && rm->inc == inc && !strcmp(rm->peer, peer))
			rm->revoked = true;
}
