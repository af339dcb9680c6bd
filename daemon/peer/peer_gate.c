/* SPDX-License-Identifier: MIT */
/* Admission of unauthenticated peer connections (peer_gate.h). */
#include "peer/peer_gate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pgate_rec {
	char host[PGATE_HOST_MAX]; /* "": a free slot */
	unsigned fails;		   /* failed handshakes, none further apart than refusal_ms */
	uint64_t last_fail_ms;
	uint64_t refused_at_ms; /* refused from then for refusal_ms (0: not refused) */
	uint64_t used_ms;	/* for eviction */
	bool trusted;
};

struct peer_gate {
	struct pgate_rec rec[PGATE_SLOTS];
};

int pgate_new(struct peer_gate **ret)
{
	struct peer_gate *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	*ret = g;
	return 0;
}

struct peer_gate *pgate_free(struct peer_gate *g)
{
	free(g);
	return NULL;
}

void pgate_host(const char *addr, char *buf, size_t len)
{
	const char *end;

	if (addr[0] == '[') {
		addr++;
		end = strchr(addr, ']');
	} else {
		end = strrchr(addr, ':');
	}
	if (!end)
		end = addr + strlen(addr);
	snprintf(buf, len, "%.*s", (int)(end - addr), addr);
}

static struct pgate_rec *find(const struct peer_gate *g, const char *host)
{
	const struct pgate_rec *r;

	for (r = g->rec; r < g->rec + PGATE_SLOTS; r++)
		if (r->host[0] && !strncmp(r->host, host, PGATE_HOST_MAX - 1))
			return (struct pgate_rec *)r;
	return NULL;
}

/* Read against the limits of the day, so that a reload applies to refusals under way. */
static bool refused(const struct pgate_rec *r, const struct pgate_limits *lim, uint64_t now)
{
	return r->refused_at_ms && now - r->refused_at_ms < lim->refusal_ms;
}

/* Which record gives way first: free, plain, refused, trusted; the oldest of a kind. */
static int rank(const struct pgate_rec *r, const struct pgate_limits *lim, uint64_t now)
{
	if (!r->host[0])
		return 0;
	if (r->trusted)
		return 3;
	return refused(r, lim, now) ? 2 : 1;
}

static struct pgate_rec *find_or_add(struct peer_gate *g, const struct pgate_limits *lim,
				     const char *host, uint64_t now)
{
	struct pgate_rec *r = find(g, host), *v = g->rec;

	if (r)
		return r;
	for (r = g->rec; r < g->rec + PGATE_SLOTS; r++)
		if (rank(r, lim, now) < rank(v, lim, now) ||
		    (rank(r, lim, now) == rank(v, lim, now) && r->used_ms < v->used_ms))
			v = r;
	memset(v, 0, sizeof(*v));
	snprintf(v->host, sizeof(v->host), "%s", host);
	return v;
}

/* Failures of @r that still count at @now. */
static unsigned recent_fails(const struct pgate_rec *r, const struct pgate_limits *lim,
			     uint64_t now)
{
	return now - r->last_fail_ms > lim->refusal_ms ? 0 : r->fails;
}

enum pgate_verdict pgate_admit(const struct peer_gate *g, const struct pgate_limits *lim,
			       const char *host, unsigned total, unsigned mine, uint64_t now_ms)
{
	const struct pgate_rec *r = find(g, host);

	if (r && refused(r, lim, now_ms))
		return PGATE_FAILURES;
	if (total >= lim->max_total)
		return PGATE_TOTAL;
	if (mine >= lim->max_per_address)
		return PGATE_ADDRESS;
	return PGATE_ADMIT;
}

uint64_t pgate_delay(const struct peer_gate *g, const struct pgate_limits *lim, const char *host,
		     uint64_t now_ms)
{
	const struct pgate_rec *r = find(g, host);
	unsigned n;

	if (!r || r->trusted)
		return 0;
	n = recent_fails(r, lim, now_ms) + 1; /* this one included */
	if (n <= PGATE_FREE_FAILURES)
		return 0;
	return n == PGATE_FREE_FAILURES + 1 ? PGATE_DELAY_MS : 2 * PGATE_DELAY_MS;
}

bool pgate_failed(struct peer_gate *g, const struct pgate_limits *lim, const char *host,
		  uint64_t now_ms)
{
	struct pgate_rec *r = find_or_add(g, lim, host, now_ms);

	r->fails = recent_fails(r, lim, now_ms) + 1;
	r->last_fail_ms = now_ms;
	r->used_ms = now_ms;
	if (r->trusted || !lim->max_failures || r->fails < lim->max_failures)
		return false;
	r->fails = 0;
	r->refused_at_ms = now_ms ? now_ms : 1;
	return true;
}

void pgate_trust(struct peer_gate *g, const struct pgate_limits *lim, const char *host,
		 uint64_t now_ms)
{
	struct pgate_rec *r = find_or_add(g, lim, host, now_ms);

	r->trusted = true;
	r->fails = 0;
	r->refused_at_ms = 0;
	r->used_ms = now_ms;
}

unsigned pgate_refused(const struct peer_gate *g, const struct pgate_limits *lim, uint64_t now_ms)
{
	const struct pgate_rec *r;
	unsigned n = 0;

	for (r = g->rec; r < g->rec + PGATE_SLOTS; r++)
		n += r->host[0] && refused(r, lim, now_ms);
	return n;
}
