/* SPDX-License-Identifier: MIT */
/*
 * Message endpoints: named receive queues. Each posted receive is an
 * operation in flight (it holds a completion slot from the moment it was
 * posted) that ends when a message fills it, or with -ECANCELED when its
 * endpoint goes away. A message is taken from the head of the queue; if it
 * does not arrive whole, the receive goes back to the head.
 *
 * An endpoint bound with an access list (EP_BIND_ACL) takes messages only
 * from clients of its owner's uid and of root on this node, and from the
 * users, groups and peers the list names; a refused message takes no
 * receive. One bound without a list takes them from everyone.
 */
#include "core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/stats.h"

#define MAX_SESSION_ENDPOINTS 65536u

/* Every send looks its endpoint up: a hash, not a walk past other users' names. */
static struct endpoint *endpoint_find(struct core *c, const char *name)
{
	struct name_node *n = nametab_find(&c->endpoint_names, name);

	return n ? NAMETAB_ENTRY(n, struct endpoint, node) : NULL;
}

static void endpoint_free(struct endpoint *ep)
{
	free(ep->acl);
	free(ep);
}

int endpoint_bind(struct session *s, const char *name, bool restricted,
		  const struct export_acl *acl, uint32_t *ret_id)
{
	struct core *c = s->core;
	struct endpoint *ep;
	int r;

	session_ids_reuse(s, &s->endpoints, MAX_SESSION_ENDPOINTS);
	if (endpoint_find(c, name))
		return -EEXIST;
	/* Each costs memory and makes every send's name lookup longer. */
	if (s->acct->endpoints >= c->cfg->max_regions)
		return -RP_ELIMIT_ENDPOINTS;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	/* A list that names nobody costs nothing: the owner and root need none. */
	if (acl && !acl->flags && !acl->n_uids && !acl->n_gids && !acl->n_peers)
		acl = NULL;
	if (acl && !(ep->acl = malloc(sizeof(*acl)))) {
		free(ep);
		return -ENOMEM;
	}
	if (acl)
		*ep->acl = *acl;
	ep->restricted = restricted;
	r = idtab_add(&s->endpoints, ep, MAX_SESSION_ENDPOINTS, &ep->id);
	if (r < 0) {
		endpoint_free(ep);
		return r;
	}
	ep->s = s;
	s->acct->endpoints++;
	strcpy(ep->name, name);
	nametab_add(&c->endpoint_names, &ep->node, ep->name);
	*ret_id = ep->id;
	return 0;
}

int endpoint_unbind(struct session *s, uint32_t id)
{
	struct endpoint *ep = idtab_take(&s->endpoints, id);
	struct op *op;

	if (!ep)
		return -RP_EBADHANDLE;
	session_id_hold(s, &s->endpoints, id, false);
	nametab_del(&s->core->endpoint_names, &ep->node);
	s->acct->endpoints--;
	while ((op = ep->head)) {
		ep->head = op->next;
		op_end(op, -ECANCELED);
	}
	/* Receives a message is being copied into end when it has arrived. */
	ep->unbound = true;
	if (!ep->taken)
		endpoint_free(ep);
	return 0;
}

int endpoint_post(struct op *op)
{
	struct endpoint *ep = idtab_get(&op->s->endpoints, op->q.target);

	if (!ep)
		return -RP_EBADHANDLE;
	op->ep = ep;
	op->next = NULL;
	if (ep->head)
		ep->tail->next = op;
	else
		ep->head = op;
	ep->tail = op;
	return OP_PENDING;
}

void endpoints_cancel_region(struct session *s, const struct region *r)
{
	struct op **pp, *op, *last;
	struct endpoint *ep;
	uint32_t i;

	for (i = 0; i < s->endpoints.n; i++) {
		ep = idtab_at(&s->endpoints, i);
		if (!ep)
			continue;
		for (pp = &ep->head, last = NULL; (op = *pp);) {
			if (op->region != r) {
				last = op;
				pp = &op->next;
				continue;
			}
			*pp = op->next;
			op->next = NULL;
			op_end(op, -ECANCELED);
		}
		ep->tail = last;
	}
}

bool endpoint_admits(const struct endpoint *ep, const struct session *from, const char *peer)
{
	struct creds owner, who;

	if (!ep->restricted)
		return true;
	if (!from)
		return acl_names_peer(ep->acl, peer);
	session_creds(ep->s, &owner);
	session_creds(from, &who);
	return acl_allows_local(ep->acl, &owner, &who);
}

/* A message @ep refused: counted, and logged per sending uid or peer (rate-limited). */
static int refused(const struct endpoint *ep, const struct session *from, const char *peer)
{
	char key[RP_NAME_MAX + 32];

	stats_totals.send_refused[from ? STATS_FROM_LOCAL : STATS_FROM_PEER]++;
	if (from) {
		snprintf(key, sizeof(key), "sends of uid %d", (int)from->cred.uid);
		log_ratelimited(key, LOG_WARNING,
				"client %u (pid %d uid %d %s): send to endpoint '%s' of uid %d "
				"refused: it allows neither this user nor a group of the client",
				from->id, (int)from->cred.pid, (int)from->cred.uid, from->comm,
				ep->name, (int)ep->s->cred.uid);
	} else {
		snprintf(key, sizeof(key), "sends of peer %s", peer);
		log_ratelimited(key, LOG_WARNING,
				"peer %s: send to endpoint '%s' of uid %d refused: the endpoint "
				"does not name this peer",
				peer, ep->name, (int)ep->s->cred.uid);
	}
	return -RP_EENDPOINT_DENIED;
}

int endpoint_take(struct core *c, const char *name, uint64_t len, const struct session *from,
		  const char *peer, struct op **ret)
{
	struct endpoint *ep = endpoint_find(c, name);
	struct op *rop;

	if (!ep)
		return -RP_ENOENDPOINT;
	if (!endpoint_admits(ep, from, peer))
		return refused(ep, from, peer);
	/* (None of them is in a freed region: endpoints_cancel_region(), recv_finish().) */
	rop = ep->head;
	if (!rop)
		return -RP_ENORECV;
	if (len > rop->q.len)
		return -RP_ERECVSMALL;
	ep->head = rop->next;
	rop->next = NULL;
	ep->taken++;
	*ret = rop;
	return 0;
}

void *recv_addr(const struct op *rop)
{
	return (char *)rop->region->addr + rop->q.offset;
}

bool recv_gone(const struct op *rop)
{
	return rop->s->dead || rop->region->s != rop->s;
}

int recv_finish(struct core *c, struct op *rop, uint64_t len, int status)
{
	struct endpoint *ep = rop->ep;
	bool gone = recv_gone(rop);

	ep->taken--;
	/* Not arrived whole: back first in line, unless its region was freed meanwhile. */
	if (status && !ep->unbound && !gone) {
		rop->next = ep->head;
		if (!ep->head)
			ep->tail = rop;
		ep->head = rop;
		return status;
	}
	if (ep->unbound && !ep->taken)
		endpoint_free(ep);
	rop->recv_len = (uint32_t)len;
	op_end(rop, status ? -ECANCELED : 0);
	/* Arrived whole, but into a receive cancelled meanwhile (op_end()): nobody got it. */
	return !status && gone ? -RP_ENORECV : status;
}
