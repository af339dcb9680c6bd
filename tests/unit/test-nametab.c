/* SPDX-License-Identifier: MIT */
/*
 * daemon/base/nametab.c: names found, not found, removed and added again
 * while the table grows; names that differ only at their end (a client
 * binding endpoints "aaa...0000001", "aaa...0000002", ...) spread over the
 * chains; two tables hash the same names differently (their keys differ);
 * while the table grows, names are found wherever they are (the old chains
 * or the new), and removed and added back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/base/nametab.h"
#include "tap.h"

#define N 100000

struct obj {
	struct name_node node;
	char name[64];
};

static struct obj *objs;

static void name_of(char *buf, unsigned i)
{
	memset(buf, 'a', 56);
	snprintf(buf + 56, 8, "%07u", i);
}

static struct obj *find(const struct nametab *t, const char *name)
{
	struct name_node *n = nametab_find(t, name);

	return n ? NAMETAB_ENTRY(n, struct obj, node) : NULL;
}

/* The longest chain, and how many chains have a name. */
static size_t longest(const struct nametab *t, size_t *used)
{
	size_t i, len, max = 0;
	struct name_node *n;

	*used = 0;
	for (i = 0; i < t->n_chains; i++) {
		for (len = 0, n = t->chains[i]; n; n = n->next)
			len++;
		*used += len > 0;
		if (len > max)
			max = len;
	}
	return max;
}

int main(void)
{
	struct nametab t, u, v;
	unsigned i, ok;
	size_t used, max;
	char name[64];

	objs = calloc(N, sizeof(*objs));
	if (!objs || nametab_init(&t) < 0 || nametab_init(&u) < 0 || nametab_init(&v) < 0) {
		perror("nametab");
		return 1;
	}
	tap_ok(find(&t, "x") == NULL, "an empty table finds nothing");
	for (ok = 1, i = 0; i < N; i++) {
		name_of(objs[i].name, i);
		nametab_add(&t, &objs[i].node, objs[i].name);
		/* While the names move to twice the chains, a few chains per add. */
		ok &= find(&t, objs[i / 2].name) == &objs[i / 2] &&
		      find(&t, objs[i].name) == &objs[i];
		if (t.old && i % 7 == 0) { /* an older one removed and added back mid-move */
			nametab_del(&t, &objs[i / 3].node);
			ok &= find(&t, objs[i / 3].name) == NULL && t.n == i;
			nametab_add(&t, &objs[i / 3].node, objs[i / 3].name);
		}
	}
	tap_ok(ok, "while the table grows (names moved a few chains per add), every name is "
		   "found, and one removed mid-move is gone until added again");
	tap_is_int(t.n, N, "100000 names added");
	tap_ok(t.old == NULL, "the last move is over: no old chains left");
	tap_ok(t.n_chains >= N && (t.n_chains & (t.n_chains - 1)) == 0,
	       "the table grew to at least as many chains as names (%zu), a power of two",
	       t.n_chains);
	for (ok = 1, i = 0; i < N; i++) {
		name_of(name, i);
		ok &= find(&t, name) == &objs[i];
	}
	tap_ok(ok, "each name finds its own object");
	name_of(name, N);
	tap_ok(find(&t, name) == NULL && find(&t, "") == NULL && find(&t, "aaaa") == NULL,
	       "names not added are not found (a longer one, the empty one, a prefix)");
	max = longest(&t, &used);
	/* Uniform hashing: ~63 % of the chains used, the longest ~8. One chain: 100000. */
	tap_ok(max <= 16 && used > t.n_chains / 2,
	       "names that differ only at their end spread out: longest chain %zu, %zu of %zu "
	       "chains used",
	       max, used, t.n_chains);
	for (i = 0; i < N; i += 2)
		nametab_del(&t, &objs[i].node);
	for (ok = 1, i = 0; i < N; i++) {
		name_of(name, i);
		ok &= find(&t, name) == (i % 2 ? &objs[i] : NULL);
	}
	tap_ok(ok && t.n == N / 2, "every other name removed: those are gone, the rest found");
	for (i = 0; i < N; i += 2)
		nametab_add(&t, &objs[i].node, objs[i].name);
	for (ok = 1, i = 0; i < N; i++) {
		name_of(name, i);
		ok &= find(&t, name) == &objs[i];
	}
	tap_ok(ok && t.n == N, "added again: all found");
	/* Removals: the table shrinks, a few chains per removal, and finds go on. */
	{
		size_t big = t.n_chains, most = 0;
		unsigned shrinks = 0, mid = 0, ok2 = 1;

		for (ok = 1, i = 0; i < N - 100; i++) {
			size_t was = t.n_chains;

			nametab_del(&t, &objs[i].node);
			shrinks += t.n_chains < was;
			most = t.n_chains > most ? t.n_chains : most;
			ok &= find(&t, objs[i].name) == NULL &&
			      find(&t, objs[N - 1].name) == &objs[N - 1];
			if (i % 101 == 0) /* a name still there, wherever it is now */
				ok &= find(&t, objs[(i + N) / 2].name) == &objs[(i + N) / 2];
			if (t.old && t.n_old > t.n_chains && i % 13 == 0) { /* mid-shrink */
				nametab_add(&t, &objs[i].node, objs[i].name);
				ok2 &= find(&t, objs[i].name) == &objs[i];
				nametab_del(&t, &objs[i].node);
				ok2 &= find(&t, objs[i].name) == NULL;
				mid++;
			}
		}
		for (i = N - 100; i < N; i++)
			ok &= find(&t, objs[i].name) == &objs[i];
		tap_ok(ok && t.n == 100 && most == big,
		       "all but 100 names removed: each gone, the others found throughout");
		tap_ok(ok2 && mid > 0,
		       "a name added back while a shrink moves the names (%u times) is found, and "
		       "gone once removed again",
		       mid);
		tap_ok(shrinks >= 2 && t.n_chains <= 512 && t.n_chains >= 64 && t.old == NULL,
		       "the chains shrank as the names went (%zu -> %zu, in %u steps), the last "
		       "move over",
		       big, t.n_chains, shrinks);
		max = longest(&t, &used);
		tap_ok(max <= 8, "the 100 names left spread over %zu chains (longest %zu)",
		       t.n_chains, max);
		for (i = N - 100; i < N; i++)
			nametab_del(&t, &objs[i].node);
		tap_ok(t.n == 0 && t.n_chains == 64 && t.old == NULL &&
			       find(&t, objs[N - 1].name) == NULL,
		       "the last name gone: the first 64 chains only");
		for (ok = 1, i = 0; i < N; i++) {
			nametab_add(&t, &objs[i].node, objs[i].name);
			ok &= find(&t, objs[i / 2].name) == &objs[i / 2];
		}
		tap_ok(ok && t.n == N && t.n_chains >= N, "and it grows again: all %u found", N);
	}
	{
		struct obj x = { .name = "endpoint" }, y = { .name = "endpoint" };

		nametab_add(&u, &x.node, x.name);
		nametab_add(&v, &y.node, y.name);
		tap_ok(x.node.hash != y.node.hash && find(&u, "endpoint") == &x &&
			       find(&v, "endpoint") == &y,
		       "two tables hash the same name differently (keys drawn at start)");
		nametab_del(&u, &x.node);
		tap_ok(find(&u, "endpoint") == NULL && u.n == 0, "the only name removed");
	}
	nametab_fini(&t);
	nametab_fini(&u);
	nametab_fini(&v);
	free(objs);
	tap_plan_done();
	return tap_exit();
}
