/* SPDX-License-Identifier: MIT */
/*
 * Who may open an export: the one decision, as pure functions of the
 * export's access list, its owner's credentials and the asker's (a local
 * client's credentials, or a peer's section of the running config). The
 * callers (session.c for local opens, the peer layer for LOOKUPs) log and
 * count refusals; nothing here has state.
 *
 * Local credentials are the kernel's, taken when the client connected:
 * SO_PEERCRED for the uid and primary gid, SO_PEERGROUPS for the
 * supplementary groups. They are what the process held, like the
 * credentials a file open is checked against; the user database (which
 * may say otherwise, or block on a network service) is never asked.
 */
#include "core/core.h"

#include <errno.h>
#include <string.h>

void session_creds(const struct session *s, struct creds *ret)
{
	ret->uid = s->cred.uid;
	ret->gid = s->cred.gid;
	ret->groups = s->groups;
	ret->n_groups = s->n_groups;
}

bool creds_in_group(const struct creds *c, gid_t g)
{
	size_t i;

	if (c->gid == g)
		return true;
	for (i = 0; i < c->n_groups; i++)
		if (c->groups[i] == g)
			return true;
	return false;
}

static bool uid_in(uid_t uid, const uid_t *set, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (set[i] == uid)
			return true;
	return false;
}

static bool any_group_in(const struct creds *c, const gid_t *set, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (creds_in_group(c, set[i]))
			return true;
	return false;
}

bool name_rule_allows(const struct name_conf *rule, const struct creds *who)
{
	return !rule || who->uid == 0 || uid_in(who->uid, rule->uids, rule->n_uids) ||
	       any_group_in(who, rule->gids, rule->n_gids);
}

/* The @n used entries of @v are ids; the rest must be zero. */
static bool ids_ok(const uint32_t *v, size_t used)
{
	size_t i;

	for (i = used; i < RP_EXPORT_ACL_MAX; i++)
		if (v[i])
			return false;
	return true;
}

int acl_from_wire(const struct rp_export_acl_req *req, struct export_acl *ret)
{
	uint32_t known = RP_EXPORT_ANY_USER | RP_EXPORT_ANY_PEER;
	static const char zero[RP_NAME_MAX];
	unsigned i;

	if (req->pad[0] || req->pad[1] || req->pad[2])
		return -EPROTO;
	if ((req->flags & ~known) || req->n_uids > RP_EXPORT_ACL_MAX ||
	    req->n_gids > RP_EXPORT_ACL_MAX || req->n_peers > RP_EXPORT_ACL_MAX ||
	    !ids_ok(req->uids, req->n_uids) || !ids_ok(req->gids, req->n_gids))
		return -EINVAL;
	for (i = 0; i < RP_EXPORT_ACL_MAX; i++)
		if (i < req->n_peers ? !name_valid(req->peers[i], RP_NAME_MAX)
				     : memcmp(req->peers[i], zero, RP_NAME_MAX) != 0)
			return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	ret->flags = req->flags;
	ret->n_uids = req->n_uids;
	ret->n_gids = req->n_gids;
	ret->n_peers = req->n_peers;
	for (i = 0; i < req->n_uids; i++)
		ret->uids[i] = req->uids[i];
	for (i = 0; i < req->n_gids; i++)
		ret->gids[i] = req->gids[i];
	memcpy(ret->peers, req->peers, sizeof(ret->peers));
	return 0;
}

bool acl_allows_local(const struct export_acl *acl, const struct creds *owner,
		      const struct creds *who)
{
	if (who->uid == 0 || who->uid == owner->uid)
		return true;
	if (!acl)
		return false;
	return (acl->flags & RP_EXPORT_ANY_USER) || uid_in(who->uid, acl->uids, acl->n_uids) ||
	       any_group_in(who, acl->gids, acl->n_gids);
}

static bool peer_named(const struct export_acl *acl, const char *peer)
{
	uint32_t i;

	for (i = 0; i < acl->n_peers; i++)
		if (!strcmp(acl->peers[i], peer))
			return true;
	return false;
}

bool acl_names_peer(const struct export_acl *acl, const char *peer)
{
	return acl && ((acl->flags & RP_EXPORT_ANY_PEER) || peer_named(acl, peer));
}

bool acl_allows_peer(const struct export_acl *acl, const struct creds *owner,
		     const struct peer_conf *pc)
{
	if (!pc)
		return false;
	if (acl_names_peer(acl, pc->name))
		return true;
	/* What the operator grants this peer, whatever the exporter said. */
	return pc->exports == PEER_EXPORTS_ALL ||
	       uid_in(owner->uid, pc->export_uids, pc->n_export_uids) ||
	       any_group_in(owner, pc->export_gids, pc->n_export_gids);
}
