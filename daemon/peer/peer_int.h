/* SPDX-License-Identifier: MIT */
/*
 * Peer layer internals, shared by its three files, from the bottom:
 *   peer_link.c  finding peers, sending on and closing links, and the
 *                duplicate-connection rule
 *   peer_data.c  lookups, client ops, withdrawals, replays, incoming requests
 *   peers.c      peers and links: dialling, handshake, state machine,
 *                keepalives, reload, status, the transport up-calls
 * and, beside them, peer_gate.c: who may start a handshake at all.
 * It sees neither the loop (timers come through evloop.h) nor the client
 * core's internals (the named functions of core.h only).
 */
#ifndef RP_DAEMON_PEER_INT_H
#define RP_DAEMON_PEER_INT_H

#include "base/config.h"
#include "core/core.h"
#include "base/evloop.h"
#include "peer/peer.h"
#include "peer/peer_gate.h"
#include "peer/peer_hs.h"
#include "peer/transport.h"

#define PEER_TICK_MS 1000
#define PEER_KEEPALIVE_DEAD_MS 5000
#define PEER_HANDSHAKE_MS 5000
#define PEER_DRAIN_MS 10000
#define PEER_PING_TIMEOUT_MS 5000
#define PEER_BACKOFF_MIN_MS 100
#define PEER_BACKOFF_MAX_MS 30000
#define PEER_DEAD_IDS 32

struct pop;
struct plookup;
struct pping;
struct prevoke;

struct peer {
	struct peers *p;
	struct peer *next;
	struct peer_conf conf; /* deep copy: the config it came from may be freed by a reload */
	char address[96];
	struct transport *t; /* NULL: no usable transport (state down) */
	enum peer_state state;
	uint64_t since_ms;
	char reason[256];
	struct peer_link *up;  /* the authenticated link */
	struct peer_link *out; /* our connection attempt in progress */
	struct ev_timer *backoff;
	unsigned attempts;
	unsigned links; /* links that point here */
	bool removed;	/* gone from the config: draining, then freed */
	bool ever_up;
	uint64_t incarnation;
	int64_t rtt_us;
	struct pop *parked, *parked_tail; /* ops to send again on the next link (oldest first) */
	struct prevoke *revokes;	  /* our withdrawals it has not confirmed yet */
	uint64_t dead_ids[PEER_DEAD_IDS]; /* exports it withdrew lately (replays skip them) */
	unsigned dead_next;
	uint64_t bytes_out, bytes_in, ops_out, ops_in, errors, reconnects;
};

enum link_state {
	LINK_CONNECTING,  /* outbound: the transport is connecting */
	LINK_HANDSHAKING, /* the transport is ready: authenticating */
	LINK_UP,	  /* authenticated: lookups and data flow */
	LINK_DRAINING,	  /* up, but its peer was removed: no new ops, closed once idle */
	LINK_CLOSING,	  /* being closed; peer_x_failed() ends it */
};

/* What a link's end means for its peer's state and dialling. */
enum link_end {
	LINK_END_FAILURE,    /* failed or closed: the peer is redialled with backoff */
	LINK_END_SUPERSEDED, /* lost a duplicate-connection race, or shutdown: nothing */
};

struct rxtok;
struct pserve;

struct peer_link {
	struct peers *p;
	struct peer_link *next; /* in p->links */
	struct peer *peer;	/* NULL until an inbound HELLO names it */
	struct transport *t;
	struct xconn *x;
	bool outbound; /* we dialled it */
	enum link_state state;
	enum link_end end;
	uint64_t created_ms, last_rx_ms, drain_ms;
	uint64_t remote_inc; /* the peer's incarnation once authenticated (never 0), else 0 */
	uint64_t next_id;
	struct peer_hs hs;
	char addr[96];
	char host[PGATE_HOST_MAX]; /* inbound: addr without the port */
	bool proven;		   /* inbound: the other daemon proved the key (its AUTH) */
	bool logged;		   /* inbound: its failure has been logged already */
	uint64_t hold_until_ms;	   /* failed: our REJECT is held back until then (0: not) */
	char why[256];		   /* our reason for closing it, if we did */
	int err;
	struct pop *ops;	  /* client ops in flight on this link */
	struct plookup *lookups;  /* LOOKUPs waiting for their reply */
	struct u64map lookup_ids; /* @lookups by id: a reply finds its own in O(1) */
	struct pserve *serving;	  /* its LOOKUPs waiting for their MR here */
	struct rxtok *rxs;	  /* its requests moving bytes of our exports (pinning them) */
};

struct peers {
	struct core *core;
	const struct config *cfg;
	struct evloop *ev;
	uint64_t incarnation;		  /* ours */
	enum rp_transport_kind transport; /* for peers with transport = auto */
	struct transport *tcp, *verbs;
	struct peer *head;
	struct peer_link *links;
	struct pping *pings;
	struct peer_gate *gate; /* unauthenticated connections: caps, failures, refusals */
	struct ev_timer *tick;
	char node_name[RP_NAME_MAX];
	uint64_t ping_seq;
	bool stopping;
	bool freed_transports;
};

/* The link is closing (peer_x_failed() still to come). */
static inline bool link_closing(const struct peer_link *l)
{
	return l->state == LINK_CLOSING;
}

/* New lookups and ops may go on it. */
static inline bool link_usable(const struct peer_link *l)
{
	return l->state == LINK_UP;
}

/* Authenticated and not closing (it may be draining). */
static inline bool link_live(const struct peer_link *l)
{
	return l->state == LINK_UP || l->state == LINK_DRAINING;
}

/* It passed the handshake at some point (a closing link may have). */
static inline bool link_authenticated(const struct peer_link *l)
{
	return l->remote_inc != 0;
}

/* peer_link.c */
uint64_t peer_now_ms(void);
uint64_t peer_mono_us(void);
struct peer *peer_find(struct peers *p, const char *name);
/* Which of two links between the same two daemons survives. */
bool link_prefer(const struct peer_link *a, const struct peer_link *b);
/*
 * Our own connection attempt to @pr is authenticating and will be (or may
 * replace) the link: new ops wait for it rather than fail or go on a link
 * about to be superseded.
 */
bool peer_settling(const struct peer *pr);
/* Our authenticated attempt (not @l) will be the link, winning over @l if given. */
bool peer_out_pending(const struct peer *pr, const struct peer_link *l);
/* Close @l (idempotent); @why is logged and kept as the failure reason. */
void link_close(struct peer_link *l, int err, const char *why);
int link_send(struct peer_link *l, const void *msg, size_t len);

/* peer_data.c: the core's hooks (core.h) */
extern const struct core_peer_ops peers_core_ops;
/* peer_data.c */
void data_on_ctrl(struct peer_link *l, const void *msg, size_t len);
/* Report every op and lookup still on @l (the link is gone). */
void data_link_failed(struct peer_link *l);
/* A draining link with nothing in flight is closed. */
void data_check_drained(struct peer_link *l);
/* @l authenticated: send pending withdrawals, then the ops parked for a replay. */
void data_link_up(struct peer_link *l);
/* A competing link of @pr went away: replay parked ops on the link that is up. */
void data_replay(struct peer *pr);
/* Report the ops parked on @pr with @status (peer removed, shutdown). */
void data_peer_drop(struct peer *pr, int status);
/* Peer @pr's pending withdrawals, taken off it (a changed peer hands them on). */
struct prevoke *data_take_revokes(struct peer *pr);
/* ... given to @pr (NULL: released) and sent on its next link. */
void data_give_revokes(struct peer *pr, struct prevoke *list);
/* Peer @pr is going (removed, its links closed): forget its lookups and drop their MRs. */
void data_peer_forget(struct peers *p, struct peer *pr);
/*
 * After a reload: every configured peer that looked an export up but may no
 * longer open it under the new config is forgotten as a looker (its ops on
 * the export are refused from now on) and told to withdraw its handles
 * (PP_REVOKE); one line per peer says so. Peers removed by the reload drain
 * as before.
 */
void data_recheck(struct peers *p);
/* Once a second: withdrawal and replay deadlines. */
void data_tick(struct peers *p, uint64_t now);

#endif
