/* SPDX-License-Identifier: MIT */
/*
 * Who may open an export (daemon/core/access.c): the decision for local clients
 * (owner, root, named users, groups primary or supplementary, every user)
 * and for peers (named, every peer, and what a [peer] section grants), the
 * checks of an EXPORT_ACL request's lists, and the same decisions through
 * the control protocol: REMOTE_OPEN refused with RP_EEXPORT_DENIED and
 * counted, EXPORT_ACL answered for every kind of bad list.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/base/log.h"
#include "core-harness.h"
#include "tap.h"

static struct th t;

static struct creds cr(uid_t uid, gid_t gid, const gid_t *groups, size_t n)
{
	return (struct creds){ .uid = uid, .gid = gid, .groups = groups, .n_groups = n };
}

static void test_local(void)
{
	static const gid_t sup[] = { 30, 40 };
	struct creds owner = cr(1000, 1000, NULL, 0), who;
	struct export_acl acl;

	memset(&acl, 0, sizeof(acl));
	who = cr(1000, 5, NULL, 0);
	tap_ok(acl_allows_local(NULL, &owner, &who), "the owner's uid may, whatever its group");
	who = cr(0, 0, NULL, 0);
	tap_ok(acl_allows_local(NULL, &owner, &who), "root may");
	who = cr(1001, 1000, NULL, 0);
	tap_ok(!acl_allows_local(NULL, &owner, &who),
	       "another user may not, even in the owner's primary group");
	tap_ok(!acl_allows_local(&acl, &owner, &who), "nor with an empty list");

	acl.n_uids = 2;
	acl.uids[0] = 1002;
	acl.uids[1] = 1001;
	tap_ok(acl_allows_local(&acl, &owner, &who), "a listed user may");
	who = cr(1003, 1003, sup, 2);
	tap_ok(!acl_allows_local(&acl, &owner, &who), "an unlisted one may not");

	acl.n_gids = 1;
	acl.gids[0] = 40;
	tap_ok(acl_allows_local(&acl, &owner, &who), "a listed supplementary group lets in");
	acl.gids[0] = 1003;
	tap_ok(acl_allows_local(&acl, &owner, &who), "so does a listed primary group");
	acl.gids[0] = 50;
	tap_ok(!acl_allows_local(&acl, &owner, &who), "a group the client is not in does not");
	who = cr(1003, 1003, sup, 1);
	acl.gids[0] = 40;
	tap_ok(!acl_allows_local(&acl, &owner, &who), "only the groups the client has count");

	acl.flags = RP_EXPORT_ANY_PEER;
	tap_ok(!acl_allows_local(&acl, &owner, &who), "every peer is not every local user");
	acl.flags = RP_EXPORT_ANY_USER;
	tap_ok(acl_allows_local(&acl, &owner, &who), "every user: anybody local");
	tap_ok(creds_in_group(&who, 1003) && creds_in_group(&who, 30) && !creds_in_group(&who, 40),
	       "creds_in_group: primary and the supplementary groups given");
}

static void test_peer(void)
{
	static const gid_t sup[] = { 77 };
	struct creds owner = cr(1000, 1000, sup, 1), root = cr(0, 0, NULL, 0);
	uid_t uids[] = { 1000 };
	gid_t gids[] = { 77 };
	struct peer_conf pc = { .name = "nodeB" };
	struct export_acl acl;

	memset(&acl, 0, sizeof(acl));
	tap_ok(!acl_allows_peer(NULL, &owner, NULL), "a peer that is not configured may not");
	tap_ok(!acl_allows_peer(NULL, &owner, &pc), "by default a peer may not");
	tap_ok(!acl_allows_peer(NULL, &root, &pc), "not even for root's exports");
	tap_ok(!acl_allows_peer(&acl, &owner, &pc), "nor with an empty list");
	acl.flags = RP_EXPORT_ANY_USER;
	tap_ok(!acl_allows_peer(&acl, &owner, &pc), "every local user is not every peer");
	acl.n_peers = 2;
	strcpy(acl.peers[0], "nodeC");
	strcpy(acl.peers[1], "nodeB2");
	tap_ok(!acl_allows_peer(&acl, &owner, &pc),
	       "other peers named: still not (names match whole)");
	strcpy(acl.peers[1], "nodeB");
	tap_ok(acl_allows_peer(&acl, &owner, &pc), "a named peer may");
	acl.n_peers = 0;
	acl.flags = RP_EXPORT_ANY_PEER;
	tap_ok(acl_allows_peer(&acl, &owner, &pc), "every peer: any configured one may");
	tap_ok(!acl_allows_peer(&acl, &owner, NULL), "but not one that is not configured");

	pc.exports = PEER_EXPORTS_ALL;
	tap_ok(acl_allows_peer(NULL, &owner, &pc), "exports = all grants every export");
	pc.exports = PEER_EXPORTS_NAMED;
	pc.export_uids = uids;
	pc.n_export_uids = 1;
	tap_ok(acl_allows_peer(NULL, &owner, &pc), "export_users grants that user's exports");
	tap_ok(!acl_allows_peer(NULL, &root, &pc), "and no other user's");
	pc.n_export_uids = 0;
	pc.export_gids = gids;
	pc.n_export_gids = 1;
	tap_ok(acl_allows_peer(NULL, &owner, &pc),
	       "export_groups grants the exports of the group's members (supplementary too)");
	gids[0] = 78;
	tap_ok(!acl_allows_peer(NULL, &owner, &pc), "and of nobody else");
}

static void test_wire(void)
{
	struct rp_export_acl_req *req = calloc(1, sizeof(*req));
	struct export_acl acl;
	unsigned i;

	if (!req)
		abort();
	req->flags = RP_EXPORT_ANY_USER | RP_EXPORT_ANY_PEER;
	req->n_uids = 1;
	req->uids[0] = 42;
	req->n_gids = RP_EXPORT_ACL_MAX;
	for (i = 0; i < RP_EXPORT_ACL_MAX; i++)
		req->gids[i] = 100 + i;
	req->n_peers = RP_EXPORT_ACL_MAX;
	for (i = 0; i < RP_EXPORT_ACL_MAX; i++)
		snprintf(req->peers[i], RP_NAME_MAX, "p%u", i);
	tap_is_int(acl_from_wire(req, &acl), 0, "full lists are taken");
	tap_ok(acl.flags == req->flags && acl.n_uids == 1 && acl.uids[0] == 42 &&
		       acl.n_gids == RP_EXPORT_ACL_MAX && acl.gids[31] == 131 &&
		       acl.n_peers == RP_EXPORT_ACL_MAX && !strcmp(acl.peers[31], "p31"),
	       "as they were sent");

	req->pad[2] = 1;
	tap_is_int(acl_from_wire(req, &acl), -EPROTO, "padding is a protocol violation");
	req->pad[2] = 0;
	req->flags = 4;
	tap_is_int(acl_from_wire(req, &acl), -EINVAL, "an unknown flag");
	req->flags = 0;
	req->n_uids = RP_EXPORT_ACL_MAX + 1;
	tap_is_int(acl_from_wire(req, &acl), -EINVAL, "a list longer than RP_EXPORT_ACL_MAX");
	req->n_uids = 1;
	req->uids[1] = 7;
	tap_is_int(acl_from_wire(req, &acl), -EINVAL, "a uid past the count");
	req->uids[1] = 0;
	req->n_gids = 3;
	tap_is_int(acl_from_wire(req, &acl), -EINVAL, "gids past the count");
	memset(req->gids + 3, 0, sizeof(req->gids) - 3 * sizeof(req->gids[0]));
	req->n_peers = 2;
	tap_is_int(acl_from_wire(req, &acl), -EINVAL, "a peer name past the count");
	memset(req->peers[2], 0, sizeof(req->peers) - 2 * sizeof(req->peers[0]));
	tap_is_int(acl_from_wire(req, &acl), 0, "trimmed lists are taken");
	strcpy(req->peers[1], "a b");
	tap_is_int(acl_from_wire(req, &acl), -EINVAL, "an invalid peer name");
	memset(req->peers[1], 0, RP_NAME_MAX);
	tap_is_int(acl_from_wire(req, &acl), -EINVAL, "an empty peer name within the count");
	strcpy(req->peers[1], "ok");
	req->peers[1][20] = 'x';
	tap_is_int(acl_from_wire(req, &acl), -EINVAL, "bytes hidden after a name's NUL");
	free(req);
}

static struct rp_export_acl_req *acl_req(void)
{
	struct rp_export_acl_req *req = calloc(1, sizeof(*req));

	if (!req)
		abort();
	return req;
}

/* Through the protocol: who gets a handle, who gets RP_EEXPORT_DENIED. */
static void test_open(void)
{
	static const gid_t g2000[] = { 2000 };
	struct th_session *own = th_session_new(&t, 1000, 1000);
	struct th_session *own2 = th_session_new(&t, 1000, 1000);
	struct th_session *other = th_session_new(&t, 1001, 1001);
	struct th_session *sup = th_session_new_groups(&t, 1002, 1002, g2000, 1);
	struct th_session *prim = th_session_new(&t, 1003, 2000);
	struct th_session *root = th_session_new(&t, 0, 0);
	struct rp_export_acl_req *req = acl_req();
	uint64_t refused = stats_totals.export_refused[STATS_FROM_LOCAL];
	uint32_t r = 0, id = 0;

	th_hello(own);
	th_hello(own2);
	th_hello(other);
	th_hello(sup);
	th_hello(prim);
	th_hello(root);
	th_region(own, 4096, &r, NULL);
	tap_is_int(th_export(own, r, RP_ACCESS_REMOTE_READ, "priv"), 0, "a plain EXPORT");
	tap_is_int(th_remote_open(other, "", "priv", NULL), -RP_EEXPORT_DENIED,
		   "another user's REMOTE_OPEN of it: RP_EEXPORT_DENIED");
	tap_is_int(th_remote_open(other, TH_NODE, "priv", NULL), -RP_EEXPORT_DENIED,
		   "naming this node changes nothing");
	tap_ok(other->s.remotes.n == 0 || !idtab_get(&other->s.remotes, 1), "no handle for it");
	tap_ok(stats_totals.export_refused[STATS_FROM_LOCAL] == refused + 2,
	       "each refusal is counted (rdmaproxy_export_opens_refused_total{from=\"local\"})");
	tap_is_int(th_remote_open(own2, "", "priv", &id), 0,
		   "another client of the owner's uid may");
	th_remote_close(own2, id);
	tap_is_int(th_remote_open(root, "", "priv", &id), 0, "root may");
	th_remote_close(root, id);
	tap_is_int(th_remote_open(other, "", "nothing", NULL), -RP_ENOEXPORT,
		   "a name nobody exports is still RP_ENOEXPORT");

	req->n_uids = 1;
	req->uids[0] = 1001;
	tap_is_int(th_export_acl(own, r, RP_ACCESS_REMOTE_READ, "to-1001", req), 0,
		   "EXPORT_ACL naming uid 1001");
	tap_is_int(th_remote_open(other, "", "to-1001", &id), 0, "uid 1001 may open it");
	th_remote_close(other, id);
	tap_is_int(th_remote_open(sup, "", "to-1001", NULL), -RP_EEXPORT_DENIED,
		   "uid 1002 may not");

	memset(req, 0, sizeof(*req));
	req->n_gids = 1;
	req->gids[0] = 2000;
	tap_is_int(th_export_acl(own, r, RP_ACCESS_REMOTE_READ, "to-2000", req), 0,
		   "EXPORT_ACL naming group 2000");
	tap_is_int(th_remote_open(sup, "", "to-2000", &id), 0,
		   "a client with 2000 as a supplementary group may open it");
	th_remote_close(sup, id);
	tap_is_int(th_remote_open(prim, "", "to-2000", &id), 0, "one with it as primary group too");
	th_remote_close(prim, id);
	tap_is_int(th_remote_open(other, "", "to-2000", NULL), -RP_EEXPORT_DENIED,
		   "one outside the group may not");

	memset(req, 0, sizeof(*req));
	req->flags = RP_EXPORT_ANY_USER;
	tap_is_int(th_export_acl(own, r, RP_ACCESS_REMOTE_READ, "to-all", req), 0,
		   "EXPORT_ACL for every user");
	tap_is_int(th_remote_open(other, "", "to-all", &id), 0, "anybody may open it");
	th_remote_close(other, id);

	th_region_free(own, r);
	th_session_close(own);
	th_session_close(own2);
	th_session_close(other);
	th_session_close(sup);
	th_session_close(prim);
	th_session_close(root);
	free(req);
}

/* EXPORT_ACL's own refusals, and the peer side of an export made with it. */
static void test_export_acl(void)
{
	struct th_session *ts = th_session_new(&t, 1000, 1000);
	struct th_session *v1 = th_session_new(&t, 1000, 1000);
	struct th_session *other = th_session_new(&t, 1001, 1001);
	struct rp_export_acl_req *req = acl_req();
	struct peer_conf pb = { .name = TH_PEER }, pz = { .name = "nodeZ" };
	struct export *e;
	uint32_t r = 0;

	th_hello(ts);
	th_region(ts, 4096, &r, NULL);
	req->n_peers = 1;
	strcpy(req->peers[0], "nodeZ");
	tap_is_int(th_export_acl(ts, r, RP_ACCESS_REMOTE_READ, "p", req), -RP_EPEERUNKNOWN,
		   "naming a peer that is not configured: RP_EPEERUNKNOWN");
	tap_ok(!export_find(t.core, "p"), "and nothing is exported");
	strcpy(req->peers[0], TH_PEER);
	tap_is_int(th_export_acl(ts, r, RP_ACCESS_REMOTE_READ, "p", req), 0,
		   "naming a configured peer");
	e = export_find(t.core, "p");
	tap_ok(e && e->acl && export_may_open_peer(e, &pb) && !export_may_open_peer(e, &pz),
	       "that peer may open it, another may not");
	tap_ok(!export_may_open_local(e, &other->s), "naming a peer lets no other local user in");
	tap_is_int(th_export_acl(ts, r, 0, "q", req), -EINVAL, "EXPORT_ACL without access");
	tap_is_int(th_export_acl(ts, 99, RP_ACCESS_REMOTE_READ, "q", req), -RP_EBADHANDLE,
		   "EXPORT_ACL of an unknown region");
	tap_is_int(th_export_acl(ts, r, RP_ACCESS_REMOTE_READ, "p", req), -EEXIST,
		   "EXPORT_ACL of a taken name");
	req->flags = 8;
	tap_is_int(th_export_acl(ts, r, RP_ACCESS_REMOTE_READ, "q", req), -EINVAL,
		   "EXPORT_ACL with an unknown flag");
	req->flags = 0;
	req->n_uids = 40;
	tap_is_int(th_export_acl(ts, r, RP_ACCESS_REMOTE_READ, "q", req), -EINVAL,
		   "EXPORT_ACL with too long a list");
	req->n_uids = 0;
	tap_ok(!export_find(t.core, "q"), "none of them exported anything");

	tap_is_int(export_publish(t.core, e, TH_PEER), 0, "a peer looks it up");
	tap_ok(export_looked_up_by(e, TH_PEER) && !export_looked_up_by(e, "nodeZ"),
	       "it is remembered as a looker, nobody else");
	tap_ok(export_forget_looker(e, TH_PEER) == NULL, "a looker on tcp has no MR of its own");
	tap_ok(!export_looked_up_by(e, TH_PEER) && e->n_lookers == 0, "and can be forgotten");

	req->pad[0] = 1;
	tap_is_int(th_export_acl(ts, r, RP_ACCESS_REMOTE_READ, "q", req), -EPROTO,
		   "EXPORT_ACL with padding set ends the session");
	th_session_close(ts);

	th_hello_v(v1, 1, 1);
	th_region(v1, 4096, &r, NULL);
	memset(req, 0, sizeof(*req));
	tap_is_int(th_export_acl(v1, r, RP_ACCESS_REMOTE_READ, "v1", req), -EPROTO,
		   "EXPORT_ACL in a version 1 session is a protocol violation");
	th_session_close(v1);
	th_session_close(other);
	free(req);
}

int main(void)
{
	unsigned sessions;

	log_set_level(LOG_ERR);
	if (th_init(&t) < 0)
		return 99;
	test_local();
	test_peer();
	test_wire();
	test_open();
	test_export_acl();

	sessions = t.core->next_id - 1;
	tap_is_int(t.n_freed, sessions, "the glue freed every session, once");
	tap_ok(t.core->sessions == NULL && t.core->accts == NULL && t.core->exports == NULL &&
		       t.core->n_regions == 0,
	       "the core is empty again");
	th_fini(&t);
	tap_plan_done();
	return tap_exit();
}
