/* SPDX-License-Identifier: MIT */
/*
 * Peer layer internals shared by peer.c (peers, links, handshake, timers,
 * status) and peer_data.c (lookups, client ops, incoming requests).
 */
#ifndef RP_DAEMON_PEER_INT_H
#define RP_DAEMON_PEER_INT_H

#include <uv.h>

#include "config.h"
#include "peer.h"
#include "peer_hs.h"
#include "session.h"
#include "transport.h"

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
	uv_timer_t backoff;
	unsigned attempts;
	unsigned links;	 /* links that point here */
	bool removed;	 /* gone from the config: draining, then freed */
	bool timer_open; /* backoff handle initialised and not yet closed */
	bool ever_up;
	uint64_t incarnation;
	int64_t rtt_us;
	struct pop *parked, *parked_tail; /* ops to send again on the next link (oldest first) */
	struct prevoke *revokes;	  /* our withdrawals it has not confirmed yet */
	uint64_t dead_ids[PEER_DEAD_IDS]; /* exports it withdrew lately (replays skip them) */
	unsigned dead_next;
	uint64_t bytes_out, bytes_in, ops_out, ops_in, errors, reconnects;
};

struct peer_link {
	struct peers *p;
	struct peer_link *next; /* in p->links */
	struct peer *peer;	/* NULL until an inbound HELLO names it */
	struct transport *t;
	struct xconn *x;
	bool outbound;
	bool connected; /* transport ready, handshake running */
	bool up;
	bool closing;
	bool superseded; /* lost a duplicate-connection race: no state change */
	bool draining;
	uint64_t created_ms, last_rx_ms, drain_ms;
	uint64_t remote_inc;
	uint64_t next_id;
	struct peer_hs hs;
	char addr[96];
	char why[256]; /* our reason for closing it, if we did */
	int err;
	struct pop *ops;	  /* client ops in flight on this link */
	struct plookup *lookups;  /* LOOKUPs waiting for their reply */
};

struct peers {
	struct manager *m;
	struct transport *tcp, *verbs;
	struct peer *head;
	struct peer_link *links;
	struct pping *pings;
	uv_timer_t tick;
	char node_name[RP_NAME_MAX];
	uint64_t next_export_id;
	uint64_t ping_seq;
	bool stopping;
	bool freed_transports;
};

uint64_t peer_now_ms(void);
struct peer *peer_find(struct peers *p, const char *name);
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
/* Once a second: withdrawal and replay deadlines. */
void data_tick(struct peers *p, uint64_t now);

#endif
