/* SPDX-License-Identifier: MIT */
/*
 * The export name table and the handles to exports: adding, finding and
 * withdrawing exports (by their owner only, or all of a region at once),
 * the ids peers get for them and the O(1) lookup by id after many adds and
 * removals, and handles to other daemons' exports (remote_opened(),
 * remotes_revoke()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/base/log.h"
#include "core-harness.h"
#include "tap.h"

#define PAGE 4096
#define N_MANY 600

static struct th t;
static const struct rp_hdr add_h = { .type = RP_MSG_EXPORT };

static struct region *new_region(struct th_session *ts)
{
	uint32_t id = 0;

	if (th_region(ts, PAGE, &id, NULL) != 0)
		abort();
	return idtab_get(&ts->s.regions, id);
}

static void test_add_find(struct th_session *a, struct th_session *b)
{
	struct region *ra = new_region(a), *rb = new_region(b);
	struct rp_hdr h = { .type = RP_MSG_UNEXPORT, .seq = 1 };
	struct export *e;

	tap_is_int(export_add(ra->s, &add_h, ra, "one", RP_ACCESS_REMOTE_READ, NULL), 0,
		   "export_add");
	e = export_find(t.core, "one");
	tap_ok(e && e->region == ra && e->s == &a->s && e->access == RP_ACCESS_REMOTE_READ &&
		       !e->dead && e->refs == 1 && !e->remote,
	       "export_find finds it with its region, session and access");
	tap_is_int(export_add(rb->s, &add_h, rb, "one", RP_ACCESS_REMOTE_WRITE, NULL), -EEXIST,
		   "a name is taken node-wide");
	tap_is_int(export_add(rb->s, &add_h, rb, "two", RP_ACCESS_REMOTE_WRITE, NULL), 0,
		   "another name");
	tap_ok(export_find(t.core, "nope") == NULL, "an unknown name is not found");
	tap_ok(export_find(t.core, "on") == NULL && export_find(t.core, "one1") == NULL,
	       "names match whole");
	tap_ok(ra->acct->exports == 1 && a->s.exports == 1 && rb->acct->exports == 1 &&
		       b->s.exports == 1 && t.core->n_exports == 2,
	       "one export of uid 1000, one of uid 1001, counted per uid, client and node");

	tap_is_int(export_remove(t.core, &b->s, &h, ra->id, "one"), -ENOENT,
		   "another session cannot withdraw it");
	tap_is_int(export_remove(t.core, &a->s, &h, ra->id + 1, "one"), -ENOENT,
		   "nor its owner naming another region");
	tap_is_int(export_remove(t.core, &a->s, &h, ra->id, "none"), -ENOENT,
		   "nor an unknown name");
	tap_ok(export_find(t.core, "one") == e, "still there");
	tap_is_int(export_remove(t.core, &a->s, &h, ra->id, "one"), EXPORT_REMOVED,
		   "its owner withdraws it");
	tap_ok(export_find(t.core, "one") == NULL, "gone");
	tap_is_int(export_add(ra->s, &add_h, ra, "one", RP_ACCESS_REMOTE_READ, NULL), 0,
		   "the name can be used again");
	th_unexport(a, ra->id, "one");
	th_unexport(b, rb->id, "two");
	th_region_free(a, ra->id);
	th_region_free(b, rb->id);
}

static void test_remove_region(struct th_session *a)
{
	struct region *r1 = new_region(a), *r2 = new_region(a);
	unsigned gone = t.n_gone_calls;
	struct export *keep;

	export_add(r1->s, &add_h, r1, "r1.a", RP_ACCESS_REMOTE_READ, NULL);
	export_add(r2->s, &add_h, r2, "r2.a", RP_ACCESS_REMOTE_READ, NULL);
	export_add(r1->s, &add_h, r1, "r1.b", RP_ACCESS_REMOTE_WRITE, NULL);
	export_add(r1->s, &add_h, r1, "r1.c", RP_ACCESS_REMOTE_WRITE, NULL);
	keep = export_find(t.core, "r2.a");
	export_remove_region(t.core, r1);
	tap_ok(!export_find(t.core, "r1.a") && !export_find(t.core, "r1.b") &&
		       !export_find(t.core, "r1.c"),
	       "export_remove_region withdraws every export of the region");
	tap_ok(export_find(t.core, "r2.a") == keep, "and none of another region");
	tap_is_int(t.n_gone_calls - gone, 3, "the peer layer heard of each");
	export_remove_region(t.core, r1);
	tap_is_int(t.n_gone_calls - gone, 3, "a second call finds nothing");
	th_region_free(a, r1->id);
	th_region_free(a, r2->id);
	tap_ok(t.core->exports == NULL, "freeing a region withdraws the rest");
}

/* Peers find an export by the id their LOOKUP gave them, after any churn. */
static void test_peer_ids(struct th_session *a)
{
	static struct export *e[N_MANY];
	struct rp_hdr h = { .type = RP_MSG_UNEXPORT };
	struct region *r = new_region(a);
	char name[32];
	unsigned i, bad = 0, ids = 0, gone = 0, live = 0;
	uint64_t first;

	for (i = 0; i < N_MANY; i++) {
		snprintf(name, sizeof(name), "many.%u", i);
		export_add(r->s, &add_h, r, name, RP_ACCESS_REMOTE_READ, NULL);
		e[i] = export_find(t.core, name);
		if (!e[i] || e[i]->peer_id)
			bad++;
	}
	tap_is_int(bad, 0, "600 exports, none with a peer id yet");
	tap_ok(export_by_peer_id(t.core, 0) == NULL && export_by_peer_id(t.core, 1) == NULL,
	       "no lookup succeeds before a peer looked one up");
	first = t.core->next_peer_id + 1;
	for (i = 0; i < N_MANY; i++)
		if (export_publish(t.core, e[i], TH_PEER) != 0 || e[i]->peer_id != first + i)
			bad++;
	tap_is_int(bad, 0, "export_publish gives consecutive ids");
	tap_ok(export_publish(t.core, e[7], TH_PEER) == 0 && e[7]->peer_id == first + 7 &&
		       e[7]->n_lookers == 1,
	       "publishing again to the same peer changes nothing");
	tap_ok(export_publish(t.core, e[7], "nodeC") == 0 && e[7]->peer_id == first + 7 &&
		       e[7]->n_lookers == 2 && !strcmp(e[7]->lookers[1].name, "nodeC"),
	       "another peer is remembered, the id stays");
	for (i = 0; i < N_MANY; i++)
		ids += export_by_peer_id(t.core, e[i]->peer_id) == e[i];
	tap_is_int(ids, N_MANY, "each found by its id");

	/* Withdraw every third one (the peer layer hears of those with lookers). */
	for (i = 0; i < N_MANY; i += 3) {
		snprintf(name, sizeof(name), "many.%u", i);
		if (export_remove(t.core, &a->s, &h, r->id, name) != EXPORT_REMOVED)
			bad++;
	}
	for (i = 0; i < N_MANY; i++) {
		struct export *f = export_by_peer_id(t.core, first + i);

		if (i % 3 == 0)
			gone += f == NULL;
		else
			live += f == e[i] && f->peer_id == first + i;
	}
	tap_is_int(bad, 0, "200 withdrawn");
	tap_is_int(gone, N_MANY / 3, "their ids find nothing");
	tap_is_int(live, N_MANY - N_MANY / 3, "the others are still found by id");
	tap_ok(t.core->by_peer_id.n == N_MANY - N_MANY / 3 &&
		       t.core->by_peer_id.nb >= t.core->by_peer_id.n,
	       "the id map holds the live ones, at most one per bucket on average");
	export_add(r->s, &add_h, r, "late", RP_ACCESS_REMOTE_READ, NULL);
	export_publish(t.core, export_find(t.core, "late"), TH_PEER);
	tap_ok(export_find(t.core, "late")->peer_id == first + N_MANY, "ids are never reused");
	tap_ok(export_by_peer_id(t.core, first + N_MANY + 1) == NULL, "an id not given yet");
	th_region_free(a, r->id);
	tap_ok(t.core->by_peer_id.n == 0 && export_by_peer_id(t.core, first + 1) == NULL,
	       "freeing the region empties the id map");
}

/* An export pinned by an operation or a peer: UNEXPORT drains. */
static void test_pinned(struct th_session *a)
{
	struct region *r = new_region(a);
	struct rp_hdr h = { .type = RP_MSG_UNEXPORT, .seq = 42 };
	unsigned before = a->n_replies;
	struct export *e;

	export_add(r->s, &add_h, r, "pinned", RP_ACCESS_REMOTE_WRITE, NULL);
	e = export_ref(export_find(t.core, "pinned"));
	export_pin(e);
	tap_is_int(export_remove(t.core, &a->s, &h, r->id, "pinned"), EXPORT_DRAINING,
		   "withdrawing a pinned export drains");
	tap_ok(e->dead && !e->region && e->waiter == &a->s, "dead, detached from its region");
	tap_is_int(a->s.ops_pending, 1, "the session is held for the answer");
	export_unpin(e);
	tap_ok(a->n_replies == before + 1 && th_reply(a)->seq == 42 && th_reply(a)->status == 0 &&
		       th_reply(a)->type == (RP_MSG_UNEXPORT | RP_MSG_REPLY),
	       "the last unpin answers the UNEXPORT");
	tap_is_int(a->s.ops_pending, 0, "and lets the session go");
	export_unref(e);
	th_region_free(a, r->id);
}

/* A local handle outlives the export's withdrawal; the export object outlives the name. */
static void test_local_handle(struct th_session *a, struct th_session *b)
{
	struct region *r = new_region(b);
	uint32_t id = 0;
	struct export *e;

	th_export_for(b, r->id, RP_ACCESS_REMOTE_READ, "held", a->s.cred.uid);
	th_remote_open(a, "", "held", &id);
	e = idtab_get(&a->s.remotes, id);
	tap_ok(e && e == export_find(t.core, "held") && e->refs == 2,
	       "a handle references the export");
	th_unexport(b, r->id, "held");
	tap_ok(e->dead && e->refs == 1, "withdrawn: the handle keeps a dead export");
	tap_is_int(th_remote_close(a, id), 0, "closing the handle frees it");
	th_region_free(b, r->id);
}

static void remote_info(struct remote *info, const char *peer, uint64_t inc, uint64_t id)
{
	memset(info, 0, sizeof(*info));
	snprintf(info->peer, sizeof(info->peer), "%s", peer);
	info->inc = inc;
	info->id = id;
	info->len = 1 << 16;
	info->access = RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE;
	info->xinfo_len = 4;
	memcpy(info->xinfo, "xyzw", 4);
}

static uint32_t open_remote(struct th_session *a, const struct remote *info)
{
	struct rp_hdr h = { .type = RP_MSG_REMOTE_OPEN, .seq = 99 };

	remote_opened(&a->s, &h, 0, info);
	return th_reply(a)->status ? 0 : ((const struct rp_remote_reply *)th_reply_body(a))->id;
}

static void test_remotes(struct th_session *a, struct th_session *c)
{
	struct rp_hdr h = { .type = RP_MSG_REMOTE_OPEN, .seq = 5 };
	struct remote info;
	struct export *e[4];
	uint32_t id[4];
	unsigned before;
	int i;

	remote_info(&info, TH_PEER, 3, 10);
	before = a->n_replies;
	id[0] = open_remote(a, &info);
	e[0] = idtab_get(&a->s.remotes, id[0]);
	tap_ok(a->n_replies == before + 1 && th_reply(a)->seq == 99 &&
		       th_reply(a)->type == (RP_MSG_REMOTE_OPEN | RP_MSG_REPLY),
	       "remote_opened answers the request");
	tap_ok(e[0] && e[0]->remote && !e[0]->region && !e[0]->dead && e[0]->refs == 1,
	       "with a handle to a remote export");
	tap_ok(e[0] && !strcmp(e[0]->remote->peer, TH_PEER) && e[0]->remote->inc == 3 &&
		       e[0]->remote->id == 10 && e[0]->remote->len == 1 << 16 &&
		       e[0]->remote->xinfo_len == 4 && !memcmp(e[0]->remote->xinfo, "xyzw", 4),
	       "that keeps what the lookup said");
	remote_info(&info, TH_PEER, 3, 11); /* another export */
	id[1] = open_remote(a, &info);
	remote_info(&info, TH_PEER, 4, 10); /* the same id, a later incarnation */
	id[2] = open_remote(a, &info);
	remote_info(&info, "nodeC", 3, 10); /* the same id on another peer */
	id[3] = open_remote(c, &info);
	for (i = 1; i < 3; i++)
		e[i] = idtab_get(&a->s.remotes, id[i]);
	e[3] = idtab_get(&c->s.remotes, id[3]);
	tap_ok(e[1] && e[2] && e[3], "four handles");

	remotes_revoke(t.core, TH_PEER, 3, 10);
	tap_ok(e[0]->remote->revoked, "remotes_revoke marks the handle of that export");
	tap_ok(!e[1]->remote->revoked && !e[2]->remote->revoked && !e[3]->remote->revoked,
	       "and none of another id, incarnation or peer");
	id[0] = open_remote(c, &(struct remote){ .peer = TH_PEER, .inc = 3, .id = 10 });
	remotes_revoke(t.core, TH_PEER, 3, 10);
	tap_ok(((struct export *)idtab_get(&c->s.remotes, id[0]))->remote->revoked,
	       "every session's handle to it");
	tap_ok(t.core->n_remotes == 5 && t.core->remote_keys.n == 4,
	       "five handles under four keys (peer, incarnation, id): %zu under %zu",
	       t.core->n_remotes, t.core->remote_keys.n);
	remotes_revoke(t.core, "nodeC", 3, 10);
	tap_ok(e[3]->remote->revoked && !e[2]->remote->revoked, "per peer");

	before = a->n_replies;
	remote_opened(&a->s, &h, -RP_ENOEXPORT, &info);
	tap_ok(a->n_replies == before + 1 && th_reply(a)->status == -RP_ENOEXPORT &&
		       th_reply(a)->seq == 5,
	       "a failed lookup is replied with its status");
	tap_is_int(th_remote_close(a, id[1]), 0, "REMOTE_CLOSE of one");
	tap_ok(idtab_get(&a->s.remotes, id[1]) == NULL, "its id is gone");
	tap_ok(t.core->n_remotes == 4 && t.core->remote_keys.n == 3,
	       "and so is its key, its only handle gone");
}

/* A lookup answered after its session went away sends nothing. */
static void test_remote_dead(void)
{
	struct th_session *d = th_session_new(&t, 1002, 1002);
	struct rp_hdr h = { .type = RP_MSG_REMOTE_OPEN, .seq = 1 };
	struct remote info;
	unsigned freed = t.n_freed, before;

	th_hello(d);
	remote_info(&info, TH_PEER, 1, 1);
	session_hold(&d->s); /* as the peer layer does while its lookup runs */
	th_session_close(d);
	tap_is_int(t.n_freed, freed, "a held session is not freed");
	before = d->n_replies;
	remote_opened(&d->s, &h, 0, &info);
	tap_ok(d->n_replies == before && t.dead_sends == 0, "no reply for a dead session");
	session_put(&d->s);
	tap_is_int(t.n_freed, freed + 1, "it is freed once the lookup let go");
}

/*
 * [names "PREFIX"] reservations: who may export or bind a name. The longest
 * prefix decides; root always may; the others are refused -RP_EDENIED,
 * which is counted, and the name stays free.
 */
static void test_names(void)
{
	static uid_t db_uids[] = { 1000 };
	static gid_t db_gids[] = { 4242 };
	static uid_t open_uids[] = { 1001 };
	/* The longer prefix first: the longest decides, not the last that matches. */
	struct name_conf rules[] = {
		{ .prefix = "db.open.", .uids = open_uids, .n_uids = 1 },
		{ .prefix = "db.", .uids = db_uids, .n_uids = 1, .gids = db_gids, .n_gids = 1 },
		{ .prefix = "sys" },
	};
	static const gid_t g4242[] = { 7, 4242 };
	struct th_session *owner = th_session_new(&t, 1000, 1000),
			  *other = th_session_new(&t, 1001, 1001),
			  *member = th_session_new_groups(&t, 1002, 1002, g4242, 2),
			  *root = th_session_new(&t, 0, 0),
			  *primary = th_session_new(&t, 1003, 4242);
	uint64_t refused = stats_totals.names_refused;
	uint32_t ro, rx, rm, rr, rp, ep;

	t.cfg.names = rules;
	t.cfg.n_names = 3;
	if (th_hello(owner) || th_hello(other) || th_hello(member) || th_hello(root) ||
	    th_hello(primary) || th_region(primary, PAGE, &rp, NULL) ||
	    th_region(owner, PAGE, &ro, NULL) || th_region(other, PAGE, &rx, NULL) ||
	    th_region(member, PAGE, &rm, NULL) || th_region(root, PAGE, &rr, NULL))
		abort();
	tap_is_int(config_name_rule(&t.cfg, "db.open.x") - rules, 0,
		   "the longest prefix decides: db.open.x falls under \"db.open.\"");
	tap_ok(config_name_rule(&t.cfg, "db") == NULL && config_name_rule(&t.cfg, "x.db.") == NULL,
	       "a name shorter than a prefix, or holding it elsewhere, falls under none");
	tap_is_int(th_export(other, rx, RP_ACCESS_REMOTE_READ, "db.x"), -RP_EDENIED,
		   "uid 1001 may not export db.x: RP_EDENIED");
	tap_is_int(th_ep_bind(other, "db.x", NULL), -RP_EDENIED, "nor bind an endpoint db.x");
	tap_is_int(th_export(owner, ro, RP_ACCESS_REMOTE_READ, "db.x"), 0,
		   "uid 1000 (named) may, the name still free");
	tap_is_int(th_export(member, rm, RP_ACCESS_REMOTE_READ, "db.y"), 0,
		   "a member of group 4242 (supplementary) may");
	tap_is_int(th_ep_bind(member, "db.y", &ep), 0, "and may bind it");
	tap_is_int(th_export(primary, rp, RP_ACCESS_REMOTE_READ, "db.p"), 0,
		   "a client whose primary group is 4242 may");
	tap_is_int(th_export(owner, ro, RP_ACCESS_REMOTE_READ, "db.open.z"), -RP_EDENIED,
		   "under \"db.open.\" only uid 1001: uid 1000 is refused");
	tap_is_int(th_export(other, rx, RP_ACCESS_REMOTE_READ, "db.open.z"), 0, "uid 1001 may");
	tap_is_int(th_export(owner, ro, RP_ACCESS_REMOTE_READ, "system"), -RP_EDENIED,
		   "a prefix naming nobody: only root (uid 1000 refused)");
	tap_is_int(th_export(root, rr, RP_ACCESS_REMOTE_READ, "system"), 0, "root may");
	tap_is_int(th_export(other, rx, RP_ACCESS_REMOTE_READ, "other.name"), 0,
		   "a name no prefix covers: anybody may");
	tap_is_int(th_export(other, rx, RP_ACCESS_REMOTE_READ, "db.x"), -RP_EDENIED,
		   "a taken reserved name: still RP_EDENIED for the others, not EEXIST");
	tap_ok(stats_totals.names_refused == refused + 5, "each refusal is counted (%llu)",
	       (unsigned long long)(stats_totals.names_refused - refused));
	t.cfg.names = NULL;
	t.cfg.n_names = 0;
	tap_is_int(th_ep_bind(other, "db.z", NULL), 0, "without the rule (a reload), uid 1001 may");
	tap_is_int(th_export(other, rx, RP_ACCESS_REMOTE_READ, "db.x"), -EEXIST,
		   "names already taken stay with their owner");
	th_session_close(owner);
	th_session_close(other);
	th_session_close(member);
	th_session_close(root);
	th_session_close(primary);
}

int main(void)
{
	struct th_session *a, *b, *c;

	log_set_level(LOG_ERR);
	if (th_init(&t) < 0)
		return 99;
	a = th_session_new(&t, 1000, 1000);
	b = th_session_new(&t, 1001, 1001);
	c = th_session_new(&t, 1001, 1001);
	th_hello(a);
	th_hello(b);
	th_hello(c);
	test_add_find(a, b);
	test_remove_region(a);
	test_peer_ids(a);
	test_pinned(a);
	test_local_handle(a, b);
	test_remotes(a, c);
	test_remote_dead();
	test_names();
	th_session_close(a);
	th_session_close(c);
	tap_ok(t.core->n_remotes == 0 && t.core->remote_keys.n == 0,
	       "closing the sessions freed every remote");
	th_session_close(b);
	tap_is_int(t.n_freed, 9, "every session freed once");
	tap_ok(t.core->exports == NULL && t.core->n_exports == 0 && t.core->n_regions == 0 &&
		       t.core->accts == NULL && t.core->by_peer_id.n == 0,
	       "nothing is left");
	th_fini(&t);
	tap_plan_done();
	return tap_exit();
}
