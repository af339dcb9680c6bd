/* SPDX-License-Identifier: MIT */
/*
 * Peers: the daemon-to-daemon layer. Every [peer "NAME"] of the config is
 * dialled at start-up and kept connected (exponential backoff with jitter,
 * keepalives); the listener accepts configured peers only, after a mutual
 * HMAC challenge-response with the per-peer key (peer_hs.h). Over an
 * authenticated link the peer layer resolves export names (LOOKUP), carries
 * client writes, reads, sends and notifications through a transport
 * (transport.h) and reports every accepted operation exactly once.
 *
 * Timing (constants in peer_int.h):
 *   keepalive   a PING every 1 s on an up link; a link on which nothing at
 *               all arrived for 5 s is declared dead ("keepalive timeout").
 *   handshake   must finish within 5 s of the connection.
 *   backoff     after a failure: 100 ms, 200 ms, ... doubling, capped at
 *               30 s, each delay drawn uniformly from [d/2, d] (jitter);
 *               back to 100 ms once a link has been up.
 *   duplicates  when both daemons dial each other, the connection initiated
 *               by the lexically smaller node name is kept.
 */
#ifndef RP_DAEMON_PEER_H
#define RP_DAEMON_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/config.h"
#include "rp-proto.h"

struct config;
struct core;
struct evloop;
struct peers;
struct transport;

enum peer_state {
	PEER_DOWN = 0,	  /* not dialled (removed, shutting down, no transport) */
	PEER_CONNECTING,  /* transport connect in progress */
	PEER_HANDSHAKING, /* connected, authenticating */
	PEER_UP,	  /* authenticated: lookups and data flow */
	PEER_BACKOFF,	  /* waiting before the next attempt */
};

const char *peer_state_name(enum peer_state s);

/* ---- Read-only view for status and rdmaproxyctl (admin.c). ---- */

struct peer_info {
	const char *name;
	const char *address;   /* configured "HOST:PORT" */
	const char *transport; /* "tcp", "verbs", or "none" */
	enum peer_state state;
	uint64_t state_since_ms;      /* CLOCK_REALTIME, milliseconds */
	const char *last_error;	      /* reason of the last failure, "" if none yet */
	const char *direction;	      /* up link: "outbound" or "inbound"; else "" */
	uint64_t incarnation;	      /* the peer's, from the last handshake; 0 if never */
	int64_t rtt_us;		      /* last keepalive round trip, -1 if unknown */
	uint64_t bytes_out, bytes_in; /* payload bytes this daemon sent / received */
	uint64_t ops_out, ops_in;     /* ops initiated here / served for the peer */
	uint64_t errors;	      /* ops reported with an error, either way */
	uint64_t reconnects;	      /* times the peer came up after the first */
};

/* Calls @cb for every configured peer, in config order. @info is valid during @cb only. */
void peers_foreach(struct peers *p, void (*cb)(const struct peer_info *info, void *ctx), void *ctx);
/*
 * Inbound connections that have not authenticated yet, and source addresses
 * refused now after failed handshakes (metrics); 0 for NULL.
 */
void peers_admission(const struct peers *p, unsigned *ret_pending, unsigned *ret_refused);
/* Peers currently up (systemd STATUS=, rdmaproxyctl status); 0 for NULL. */
unsigned peers_up(const struct peers *p);

/*
 * Round trip through the peer channel. 0: @cb will be called exactly once
 * (status 0 and the round trip, or -RP_EPEERDOWN / -ETIMEDOUT after 5 s),
 * from a later loop callback. <0 (-RP_EPEERUNKNOWN, -RP_EPEERDOWN, -ENOMEM):
 * @cb is not called.
 */
int peer_ping(struct peers *p, const char *name, void (*cb)(void *ctx, int status, uint64_t rtt_us),
	      void *ctx);
/* Forget every pending ping of @ctx (its requester went away): @cb is not called. */
void peer_ping_cancel(struct peers *p, void *ctx);

/* ---- Lifecycle (manager.c). ---- */

/* What the peer layer runs with; the transports are made by the loop glue. */
struct peers_env {
	struct core *core; /* its hooks (core.h) are set by peers_new() */
	const struct config *cfg;
	struct evloop *ev;
	uint64_t incarnation;		  /* this daemon's, never 0 */
	enum rp_transport_kind transport; /* for peers with transport = auto, and the listener */
	struct transport *tcp;		  /* always */
	struct transport *verbs;	  /* NULL without an RDMA device */
};

/* Open the peer listener, dial every configured peer. */
int peers_new(const struct peers_env *env, struct peers **ret);
/* After a reload: dial added peers, drain and close removed ones. */
void peers_reload(struct peers *p, const struct config *cfg);
/* Begin closing everything (manager_stop); handles close asynchronously. */
void peers_shutdown(struct peers *p);
struct peers *peers_free(struct peers *p);

#endif
