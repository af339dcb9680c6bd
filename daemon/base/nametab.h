/* SPDX-License-Identifier: MIT */
/*
 * A table of names (exports, endpoints): a chained hash table whose nodes
 * live in the named objects. The names come from clients and peers, so the
 * hash is keyed with a secret drawn at start (SipHash-1-3): a client cannot
 * pick names that all land in one chain and make every other client's
 * lookups walk it. The table doubles once it holds as many names as it has
 * chains, and moves the names to the new chains a few chains at each add
 * (NAMETAB_STEP), not all at once: with 65,536 names a move of them all
 * took 2 ms of the loop thread. Once the names are under an eighth of the
 * chains it shrinks the same way, a few chains at each removal.
 */
#ifndef RP_DAEMON_NAMETAB_H
#define RP_DAEMON_NAMETAB_H

#include <stddef.h>
#include <stdint.h>

struct name_node {
	struct name_node *next;
	const char *name; /* the object's own copy, NUL-terminated */
	uint64_t hash;
};

struct nametab {
	struct name_node **chains;
	size_t n_chains; /* a power of two */
	size_t n;
	/* While resizing: the chains before, of which those below @moved are empty now. */
	struct name_node **old;
	size_t n_old, moved;
	uint64_t key[2];
};

/* Draws the table's key and makes its first chains: 0 or -ENOMEM. */
int nametab_init(struct nametab *t);
/* Frees the chains; the nodes are the objects' own. */
void nametab_fini(struct nametab *t);
struct name_node *nametab_find(const struct nametab *t, const char *name);
/* Adds @node named @name (not already in). Without memory to grow, chains get longer. */
void nametab_add(struct nametab *t, struct name_node *node, const char *name);
/* Removes @node, which is in @t. */
void nametab_del(struct nametab *t, struct name_node *node);

#define NAMETAB_ENTRY(node, type, member) ((type *)(void *)((char *)(node)-offsetof(type, member)))

#endif
