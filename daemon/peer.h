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
 * Timing (constants in peer.c):
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

#include "rp-proto.h"
#include "rp-ring.h"

struct manager;
struct config;
struct session;
struct export;
struct peers;

enum peer_state {
	PEER_DOWN = 0,	   /* not dialled (removed, shutting down, no transport) */
	PEER_CONNECTING,   /* transport connect in progress */
	PEER_HANDSHAKING,  /* connected, authenticating */
	PEER_UP,	   /* authenticated: lookups and data flow */
	PEER_BACKOFF,	   /* waiting before the next attempt */
};

const char *peer_state_name(enum peer_state s);

/* ---- Read-only view for status and rdmaproxyctl (admin.c). ---- */

struct peer_info {
	const char *name;
	const char *address;   /* configured "HOST:PORT" */
	const char *transport; /* "tcp", "verbs", or "none" */
	enum peer_state state;
	uint64_t state_since_ms; /* CLOCK_REALTIME, milliseconds */
	const char *last_error;	 /* reason of the last failure, "" if none yet */
	const char *direction;	 /* up link: "outbound" or "inbound"; else "" */
	uint64_t incarnation;	 /* the peer's, from the last handshake; 0 if never */
	int64_t rtt_us;		 /* last keepalive round trip, -1 if unknown */
	uint64_t bytes_out, bytes_in; /* payload bytes this daemon sent / received */
	uint64_t ops_out, ops_in;     /* ops initiated here / served for the peer */
	uint64_t errors;	      /* ops reported with an error, either way */
	uint64_t reconnects;	      /* times the peer came up after the first */
};

/* Calls @cb for every configured peer, in config order. @info is valid during @cb only. */
void peers_foreach(struct manager *m, void (*cb)(const struct peer_info *info, void *ctx),
		   void *ctx);
/* Peers currently up (systemd STATUS=, rdmaproxyctl status). */
unsigned peers_up(const struct manager *m);

/*
 * Round trip through the peer channel. 0: @cb will be called exactly once
 * (status 0 and the round trip, or -RP_EPEERDOWN / -ETIMEDOUT after 5 s),
 * from a later loop callback. <0 (-RP_EPEERUNKNOWN, -RP_EPEERDOWN, -ENOMEM):
 * @cb is not called.
 */
int peer_ping(struct manager *m, const char *name,
	      void (*cb)(void *ctx, int status, uint64_t rtt_us), void *ctx);
/* Forget every pending ping of @ctx (its requester went away): @cb is not called. */
void peer_ping_cancel(struct manager *m, void *ctx);

/* ---- Lifecycle (manager.c). ---- */

/* Create transports, open the peer listener, dial every configured peer. */
int peers_new(struct manager *m, struct peers **ret);
/* After a reload swapped m->cfg: dial added peers, drain and close removed ones. */
void peers_reload(struct peers *p);
/* Begin closing everything (manager_stop); handles close asynchronously. */
void peers_shutdown(struct peers *p);
struct peers *peers_free(struct peers *p);

/* ---- Client side hooks (session.c, xfer.c, exports.c). ---- */

/* Is @peer a configured peer? 0, or -RP_EPEERUNKNOWN. */
int peers_known(struct manager *m, const char *peer);
/*
 * REMOTE_OPEN of @name on configured peer @peer: sends a LOOKUP and replies
 * to request @h of @s when it answers (or the link fails). 0: the reply will
 * come (or the session died meanwhile); <0: reply now with that status.
 */
int peers_remote_open(struct session *s, const struct rp_hdr *h, const char *peer,
		      const char *name);
/* A remote handle (struct export with ->remote set) is being closed. */
void peers_remote_free(struct export *e);
/*
 * Submit a WRITE/READ on remote handle @e, or a SEND to @peer/@endpoint.
 * 0: accepted, the completion comes later through xfer_complete(); <0: the
 * status to complete @q with now. The caller has counted the op in flight.
 */
int peers_submit_rw(struct session *s, const struct rp_sqe *q, struct export *e);
int peers_submit_send(struct session *s, const struct rp_sqe *q, const char *peer,
		      const char *endpoint);
/* @s is going away: its pending lookups and ops must not touch it any more. */
void peers_session_gone(struct session *s);
/* @e was withdrawn (unexport, region freed, owner gone). */
void peers_export_gone(struct manager *m, struct export *e);

#endif
