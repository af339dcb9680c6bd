/* SPDX-License-Identifier: MIT */
#include "base/nametab.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define NAMETAB_FIRST 64u
/* Chains moved from the old to the new array at each add or removal while resizing. */
#define NAMETAB_STEP 64u
/* Fewer chains once the names are under 1/NAMETAB_SHRINK of them (shrink()). */
#define NAMETAB_SHRINK 8u

static uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define SIPROUND                   \
	do {                       \
		v0 += v1;          \
		v1 = rotl(v1, 13); \
		v1 ^= v0;          \
		v0 = rotl(v0, 32); \
		v2 += v3;          \
		v3 = rotl(v3, 16); \
		v3 ^= v2;          \
		v0 += v3;          \
		v3 = rotl(v3, 21); \
		v3 ^= v0;          \
		v2 += v1;          \
		v1 = rotl(v1, 17); \
		v1 ^= v2;          \
		v2 = rotl(v2, 32); \
	} while (0)

/* SipHash-1-3 of @len bytes at @p with @k (Aumasson and Bernstein). */
static uint64_t siphash13(const uint64_t k[2], const unsigned char *p, size_t len)
{
	uint64_t v0 = 0x736f6d6570736575ull ^ k[0], v1 = 0x646f72616e646f6dull ^ k[1];
	uint64_t v2 = 0x6c7967656e657261ull ^ k[0], v3 = 0x7465646279746573ull ^ k[1];
	uint64_t m, b = (uint64_t)len << 56;
	size_t i;

	for (; len >= 8; p += 8, len -= 8) {
		for (m = 0, i = 0; i < 8; i++)
			m |= (uint64_t)p[i] << (8 * i);
		v3 ^= m;
		SIPROUND;
		v0 ^= m;
	}
	for (i = 0; i < len; i++)
		b |= (uint64_t)p[i] << (8 * i);
	v3 ^= b;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

static int grow(struct nametab *t);

int nametab_init(struct nametab *t)
{
	memset(t, 0, sizeof(*t));
	if (getrandom(t->key, sizeof(t->key), GRND_NONBLOCK) != (ssize_t)sizeof(t->key)) {
		/*
		 * The kernel's generator is not seeded yet (early boot). It still
		 * gave this process 16 bytes at exec (AT_RANDOM, what the C
		 * library takes its stack guard from), as random as it could
		 * then, and only this process and its own user can read them:
		 * harder to guess than the clock alone. The clock and the
		 * table's address make two tables' keys differ.
		 */
		const unsigned char *ar = (const unsigned char *)getauxval(AT_RANDOM);
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (ar)
			memcpy(t->key, ar, sizeof(t->key));
		t->key[0] ^= (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
		t->key[1] ^= (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)t;
	}
	return grow(t);
}

void nametab_fini(struct nametab *t)
{
	free(t->chains);
	free(t->old);
	t->chains = t->old = NULL;
	t->n_chains = t->n_old = t->moved = t->n = 0;
}

static uint64_t hash_of(const struct nametab *t, const char *name)
{
	return siphash13(t->key, (const unsigned char *)name, strlen(name));
}

/* Where a node of hash @h is: its new chain, or its old one while not moved yet. */
static struct name_node **chain_of(const struct nametab *t, uint64_t h, bool old)
{
	if (old) {
		size_t i = h & (t->n_old - 1);

		return t->old && i >= t->moved ? &t->old[i] : NULL;
	}
	return &t->chains[h & (t->n_chains - 1)];
}

struct name_node *nametab_find(const struct nametab *t, const char *name)
{
	struct name_node **c, *n;
	uint64_t h;
	int old;

	if (!t->n)
		return NULL;
	h = hash_of(t, name);
	for (old = 0; old < 2; old++)
		for (c = chain_of(t, h, old), n = c ? *c : NULL; n; n = n->next)
			if (n->hash == h && !strcmp(n->name, name))
				return n;
	return NULL;
}

/* Move up to NAMETAB_STEP old chains to the new array; free the old one once empty. */
static void step(struct nametab *t)
{
	size_t end = t->moved + NAMETAB_STEP < t->n_old ? t->moved + NAMETAB_STEP : t->n_old;
	struct name_node *n, *next, **c;

	for (; t->moved < end; t->moved++)
		for (n = t->old[t->moved], t->old[t->moved] = NULL; n; n = next) {
			next = n->next;
			c = &t->chains[n->hash & (t->n_chains - 1)];
			n->next = *c;
			*c = n;
		}
	if (t->moved == t->n_old) {
		free(t->old);
		t->old = NULL;
		t->n_old = t->moved = 0;
	}
}

/*
 * Start moving the names to @nc chains (a power of two): 0, or -ENOMEM
 * (then they stay as they are). step() moves them, a few chains at a time.
 */
static int resize(struct nametab *t, size_t nc)
{
	struct name_node **c = calloc(nc, sizeof(*c));

	if (!c)
		return -ENOMEM;
	t->old = t->chains;
	t->n_old = t->old ? t->n_chains : 0;
	t->moved = 0;
	t->chains = c;
	t->n_chains = nc;
	return 0;
}

/* Twice the chains (or the first ones). */
static int grow(struct nametab *t)
{
	return resize(t, t->n_chains ? 2 * t->n_chains : NAMETAB_FIRST);
}

void nametab_add(struct nametab *t, struct name_node *node, const char *name)
{
	struct name_node **c;

	if (t->old)
		step(t);
	else if (t->n >= t->n_chains && grow(t) == 0 && t->old)
		step(t); /* else longer chains */
	node->name = name;
	node->hash = hash_of(t, name);
	c = chain_of(t, node->hash, false);
	node->next = *c;
	*c = node;
	t->n++;
}

/*
 * Fewer chains once the names are few: at under an eighth of the chains,
 * twice the names' count (at least NAMETAB_FIRST), moved a few chains per
 * removal like a growth; it grows again only at twice as many names. With
 * no name left (a shrink that found no memory before), the chains are all
 * empty: the first ones at once.
 */
static void shrink(struct nametab *t)
{
	struct name_node **c;
	size_t nc = NAMETAB_FIRST;

	if (t->n_chains <= NAMETAB_FIRST || t->n >= t->n_chains / NAMETAB_SHRINK)
		return;
	if (!t->n && (c = calloc(NAMETAB_FIRST, sizeof(*c)))) {
		free(t->chains);
		free(t->old);
		t->chains = c;
		t->n_chains = NAMETAB_FIRST;
		t->old = NULL;
		t->n_old = t->moved = 0;
		return;
	}
	while (nc < 2 * t->n)
		nc *= 2;
	if (resize(t, nc) == 0)
		step(t);
}

void nametab_del(struct nametab *t, struct name_node *node)
{
	struct name_node **pp;
	int old;

	for (old = 0; old < 2; old++) {
		for (pp = chain_of(t, node->hash, old); pp && *pp && *pp != node; pp = &(*pp)->next)
			;
		if (pp && *pp) {
			*pp = node->next;
			t->n--;
			break;
		}
	}
	node->next = NULL;
	if (t->old)
		step(t);
	else
		shrink(t);
}
