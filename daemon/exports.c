/* SPDX-License-Identifier: MIT */
/*
 * The node's name tables: exports (named regions others may open) and
 * message endpoints (named receive queues). Lists are fine: names are looked
 * up on the control path, and operations hold pointers.
 */
#include "session.h"

#include "manager.h"
#include "peer.h"
#include "verbs_local.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* 1..RP_NAME_MAX-1 characters from [A-Za-z0-9._-], NUL-terminated inside @size. */
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

struct export *export_find(struct clients *c, const char *name)
{
	struct export *e;

	for (e = c->exports; e; e = e->next)
		if (!strcmp(e->name, name))
			return e;
	return NULL;
}

/* Exports are bounded per uid (by max_regions): each costs memory and lookups. */
unsigned exports_of_uid(const struct clients *c, uid_t uid)
{
	const struct export *e;
	unsigned n = 0;

	for (e = c->exports; e; e = e->next)
		n += e->s && e->s->cred.uid == uid;
	return n;
}

int export_add(struct clients *c, struct region *r, const char *name, uint32_t access)
{
	struct export *e;

	if (export_find(c, name))
		return -EEXIST;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->refs = 1;
	e->region = r;
	e->s = r->s;
	e->access = access;
	if (c->m->vlocal) {
		unsigned a = (access & RP_ACCESS_REMOTE_READ ? VMR_REMOTE_READ : 0) |
			     (access & RP_ACCESS_REMOTE_WRITE ? VMR_REMOTE_WRITE : 0);
		int err = vmr_reg(c->m->vlocal, r->addr, r->len, a, &e->xport);

		if (err < 0) {
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

/*
 * The device must stop honouring an export as soon as it is withdrawn, but
 * not under an op still using its MR: the MR goes when the last such op ends.
 */
void export_release_mr(struct export *e)
{
	struct session *s = e->waiter;

	if (!e->dead || e->ops)
		return;
	e->xport = vmr_dereg(e->xport);
	if (e->xregion)
		region_unref(e->xregion);
	e->xregion = NULL;
	if (s) {
		/* Nothing can reach the memory any more: the UNEXPORT is done. */
		e->waiter = NULL;
		if (!s->dead)
			session_reply(s, &e->waiter_h, 0, NULL, 0, NULL, 0);
		session_put(s);
	}
}

void export_unref(struct export *e)
{
	if (e && --e->refs == 0) {
		e->dead = true;
		export_release_mr(e);
		if (e->remote)
			peers_remote_free(e);
		free(e->lookers);
		free(e);
	}
}

static void export_kill(struct clients *c, struct export **pp)
{
	struct export *e = *pp;

	*pp = e->next;
	e->dead = true;
	peers_export_gone(c->m, e); /* while e->region is still there */
	e->region = NULL;
	export_release_mr(e);
	export_unref(e);
}

int export_add_looker(struct export *e, const char *name)
{
	char(*v)[RP_NAME_MAX];
	unsigned i;

	for (i = 0; i < e->n_lookers; i++)
		if (!strcmp(e->lookers[i], name))
			return 0;
	v = realloc(e->lookers, (e->n_lookers + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	e->lookers = v;
	snprintf(v[e->n_lookers++], RP_NAME_MAX, "%s", name);
	return 0;
}

int export_remove(struct clients *c, struct session *s, const struct rp_hdr *h, uint32_t region,
		  const char *name)
{
	struct export **pp, *e;
	int r;

	for (pp = &c->exports; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->name, name))
			continue;
		if ((*pp)->s != s || (*pp)->region->id != region)
			return -ENOENT;
		e = *pp;
		e->refs++;
		export_kill(c, pp);
		/*
		 * Peers that may still hold its rkey, or local verbs ops, keep the
		 * MR (and so the client's memory) reachable: the client hears
		 * "done" only when they are gone, so after rp_region_unexport()
		 * returns nothing writes into the region through this export.
		 */
		r = 0;
		if (e->ops) {
			e->waiter = s;
			e->waiter_h = *h;
			s->ops_pending++;
			r = 1;
		}
		export_unref(e);
		return r;
	}
	return -ENOENT;
}

void export_remove_region(struct clients *c, struct region *r)
{
	struct export **pp = &c->exports;

	while (*pp)
		if ((*pp)->region == r)
			export_kill(c, pp);
		else
			pp = &(*pp)->next;
}

struct endpoint *endpoint_find(struct clients *c, const char *name)
{
	struct endpoint *ep;

	for (ep = c->endpoints; ep; ep = ep->next)
		if (!strcmp(ep->name, name))
			return ep;
	return NULL;
}

int endpoint_bind(struct clients *c, struct session *s, const char *name, uint32_t *ret_id)
{
	struct endpoint *ep;
	int r;

	if (endpoint_find(c, name))
		return -EEXIST;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	r = idtab_add(&s->endpoints, ep, 65536, &ep->id);
	if (r < 0) {
		free(ep);
		return r;
	}
	ep->s = s;
	strcpy(ep->name, name);
	ep->next = c->endpoints;
	c->endpoints = ep;
	*ret_id = ep->id;
	return 0;
}

/* Each posted receive is an operation in flight holding a completion slot. */
static void recv_drop(struct session *s, struct recv_buf *rb, bool cancel)
{
	struct rp_cqe cqe = {
		.cookie = rb->cookie,
		.status = -ECANCELED,
		.op = RP_OP_RECV,
		.region = (uint16_t)rb->region->id,
	};

	if (cancel)
		xfer_complete(s, &cqe);
	else if (s->rings.cq_reserved)
		s->rings.cq_reserved--;
	s->acct->inflight--;
	region_unref(rb->region);
	free(rb);
}

int endpoint_unbind(struct clients *c, struct session *s, uint32_t id, bool cancel)
{
	struct endpoint *ep = idtab_del(&s->endpoints, id), **pp;
	struct recv_buf *rb;

	if (!ep)
		return -RP_EBADHANDLE;
	for (pp = &c->endpoints; *pp; pp = &(*pp)->next)
		if (*pp == ep) {
			*pp = ep->next;
			break;
		}
	while ((rb = ep->head)) {
		ep->head = rb->next;
		recv_drop(s, rb, cancel && !s->dead);
	}
	free(ep);
	return 0;
}
