/* SPDX-License-Identifier: MIT */
/*
 * Who may start a handshake on the peer port. Anybody can connect to it, so
 * before a connection has authenticated it is bounded three ways:
 *   - in all and per source address ([peers] max_unauthenticated,
 *     max_unauthenticated_per_address): over either cap a new connection is
 *     closed at once;
 *   - by its address's record: each connection from an address that ends
 *     without authenticating (wrong key, unknown name, garbage, timeout) is
 *     a failed handshake. From the third failure on, the daemon's answer to
 *     a failing handshake is held back (PGATE_DELAY_MS, then twice that);
 *     at max_failed_handshakes the address is refused for refusal_seconds.
 *     Failures are forgotten refusal_seconds after the last one. The limits
 *     are passed in each call: a reload applies to refusals under way.
 *   - an address from which a configured peer has authenticated since start
 *     is trusted: its failures are counted, never delayed or refused (a
 *     stranger on a peer's host must not cut the peer off).
 * The records are a fixed table (PGATE_SLOTS): when it is full the least
 * recently used record goes, untrusted and unrefused ones first. Pure
 * bookkeeping: the peer layer counts the connections and passes the clock.
 */
#ifndef RP_DAEMON_PEER_GATE_H
#define RP_DAEMON_PEER_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PGATE_SLOTS 256
#define PGATE_HOST_MAX 64
#define PGATE_FREE_FAILURES 2 /* failures answered at once */
#define PGATE_DELAY_MS 1000   /* the hold after the next one; twice that after more */

struct peer_gate;

struct pgate_limits {
	unsigned max_total;	  /* unauthenticated connections in all */
	unsigned max_per_address; /* ... from one address */
	unsigned max_failures;	  /* failed handshakes before a refusal; 0: never refuse */
	uint64_t refusal_ms;	  /* how long a refusal lasts */
};

enum pgate_verdict {
	PGATE_ADMIT,
	PGATE_TOTAL,	/* max_total are open */
	PGATE_ADDRESS,	/* max_per_address are open from this address */
	PGATE_FAILURES, /* the address is refused after failed handshakes */
};

int pgate_new(struct peer_gate **ret);
struct peer_gate *pgate_free(struct peer_gate *g);

/* The host of "HOST:PORT" or "[IPV6]:PORT", into @buf. */
void pgate_host(const char *addr, char *buf, size_t len);

/*
 * A new connection from @host, while @total unauthenticated connections
 * are open, @mine of them from @host.
 */
enum pgate_verdict pgate_admit(const struct peer_gate *g, const struct pgate_limits *lim,
			       const char *host, unsigned total, unsigned mine, uint64_t now_ms);
/* How long to hold the answer to a handshake from @host that is failing now (0: none). */
uint64_t pgate_delay(const struct peer_gate *g, const struct pgate_limits *lim, const char *host,
		     uint64_t now_ms);
/* A connection from @host ended unauthenticated. True: @host is refused from now on. */
bool pgate_failed(struct peer_gate *g, const struct pgate_limits *lim, const char *host,
		  uint64_t now_ms);
/* A configured peer authenticated from @host. */
void pgate_trust(struct peer_gate *g, const struct pgate_limits *lim, const char *host,
		 uint64_t now_ms);
/* Addresses refused at @now_ms. */
unsigned pgate_refused(const struct peer_gate *g, const struct pgate_limits *lim, uint64_t now_ms);

#endif
