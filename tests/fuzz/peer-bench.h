/* SPDX-License-Identifier: MIT */
/*
 * A bench for the peer layer with no loop and no socket: the real peer
 * layer (peers.c, peer_link.c, peer_data.c, peer_gate.c, the handshake and
 * the message checks), the real tcp stream codec (tcp_stream.c) and the real
 * client core (through tests/unit/core-harness.c), with fakes only where the
 * loop glue would be:
 *   - an evloop whose timers run when the bench says (pb_turn, pb_tick);
 *   - a tcp transport that does what tcp_uv.c does around tcp_stream.c,
 *     except that written bytes are kept for the far side instead of sent,
 *     a served READ's payload is "written" at the next turn, and a closed
 *     connection is reported (peer_x_failed) at the next turn;
 *   - the far daemon ("nodeB"): it runs the real handshake against us on a
 *     connection (pb_handshake) and can answer what we sent it, honestly
 *     (pb_far_answer). Everything else the far side says comes from the
 *     test: bytes into a connection's stream (pb_feed), or messages handed
 *     to the peer layer the way the verbs transport hands them over.
 * libsodium's random bytes are a fixed sequence, so a run is reproducible.
 *
 * Shared by the fuzz targets of the peer layer and of admin requests; the
 * fixture (pb_init) is described with the record formats in fuzz-link.h.
 */
#ifndef RP_TESTS_PEER_BENCH_H
#define RP_TESTS_PEER_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../daemon/admin.h"
#include "../../daemon/base/evloop.h"
#include "../../daemon/peer/peer.h"
#include "../../daemon/peer/peer_hs.h"
#include "../../daemon/peer/tcp_stream.h"
#include "../unit/core-harness.h"

#define PB_NODE "nodeA"			 /* this daemon */
#define PB_FAR "nodeB"			 /* the configured peer */
#define PB_INC 0x1111111111111111ull	 /* our incarnation */
#define PB_FAR_INC 0x2222222222222222ull /* the far daemon's */
#define PB_FAR_EXPORT 7			 /* export id of the far daemon's answers */
#define PB_FAR_LEN 65536		 /* ... and its length */
#define PB_FAR_MISSING "missing"	 /* a name the far daemon does not export */
#define PB_QUEUE 64			 /* messages we sent that the far side keeps */
#define PB_MAX_RX 256			 /* served READs waiting for their write */
#define PB_MAX_COOKIES 8192		 /* client submissions per run */

struct pb;

/* One message we wrote on a connection, as the far side reads it. */
struct pb_msg {
	_Alignas(8) uint8_t m[PP_FIXED_MAX];
	uint32_t len;
};

/* The transport's half of a connection (what tcp_uv.c's struct xconn is). */
struct xconn {
	struct tstream st; /* first: the transport ops cast between the two */
	struct pb *pb;
	struct xconn *next;
	bool outbound;
	bool connected; /* bytes may flow: accepted, or our dial connected */
	bool closing;
	bool silent; /* refused at accept: the peer layer never heard of it */
	int err;
	char why[96];
	char addr[96];
	struct peer_rx rx[PB_MAX_RX]; /* served READs whose payload is being written */
	unsigned n_rx;
	struct pb_msg q[PB_QUEUE]; /* what we wrote, not yet read by the far side */
	unsigned q_head, q_n;
	unsigned long long written; /* bytes we wrote, payloads included */
	/* The far daemon's end of the handshake on this connection. */
	struct peer_hs far;
	bool far_hs;
};

struct pb {
	struct th th;	      /* the core and its clients */
	struct th_session *a; /* the client (NULL once closed) */
	struct peers *peers;
	struct transport tcp;
	bool tcp_freed;
	struct evloop ev;
	struct ev_timer *timers;
	uint64_t timer_serial;
	struct xconn *conns;
	int connect_err;	      /* our dialling fails with this (0: it is kept pending) */
	struct peer_conf far_conf;    /* nodeB, as our config names it */
	struct peer_conf near_conf;   /* us, as the far daemon's config names us */
	struct config alt;	      /* a reloaded config (pb_reload) */
	struct admin_ctx admin;	      /* administration's view of all this */
	unsigned reloads;	      /* the admin reload hook ran */
	unsigned sessions;	      /* sessions made (pb_fini expects each freed once) */
	unsigned pings_done;	      /* peer_ping() callbacks */
	unsigned ops_reaped;	      /* completions the client took */
	uint64_t next_cookie;	      /* the client's, unique */
	uint8_t seen[PB_MAX_COOKIES]; /* completions per cookie: at most one */
	unsigned long long far_read;  /* bytes the far side read */
};

/* Fixture choices (fuzz-link.h says what each makes). */
enum pb_mode {
	PB_RAW_IN,  /* an inbound connection, not authenticated: the input speaks first */
	PB_UP_IN,   /* an inbound connection the far daemon authenticated */
	PB_UP_OUT,  /* our own connection, authenticated */
	PB_RAW_OUT, /* our own connection: our HELLO went out, the input answers */
};

#define PB_F_LOOKED_UP 0x1u /* the far daemon looked up a.rw (id 1) and a.ro (id 2) */
#define PB_F_REMOTE 0x2u    /* the client opened b.x on the far daemon (handle 1) */
#define PB_F_ROOT 0x4u	    /* the client is root (uid 0), else uid 1000 */
#define PB_F_ADMIN_GID 0x8u /* admin_group is gid PB_ADMIN_GID, else there is none */
#define PB_F_GID 0x10u	    /* the client's gid is PB_ADMIN_GID, else 1000 */
#define PB_ADMIN_GID 4242   /* a group no user of the host is in */

/* FUZZ_LINK_TRACE set: the bench says what goes on (on stderr), to write seeds. */
extern bool pb_trace;

/* The fixture: core, client, peer layer, one connection as @mode says. */
void pb_init(struct pb *pb, enum pb_mode mode, unsigned flags);
/*
 * Close the client, shut the peer layer down, let every connection report,
 * free it all; aborts if anything is left over (an op not reported, a
 * session not freed, a connection never reported failed).
 */
void pb_fini(struct pb *pb);

/* The connection that is connected, not closing, and was made last, or NULL. */
struct xconn *pb_conn(struct pb *pb);
/* An inbound connection from @addr (NULL if the peer layer refused it). */
struct xconn *pb_accept(struct pb *pb, const char *addr);
/* Our dialling attempt, if one is pending: it connects (our HELLO goes out). */
struct xconn *pb_connect_out(struct pb *pb);
/* The far daemon runs the handshake on @x: true once the link is up. */
bool pb_handshake(struct xconn *x);
/*
 * Bytes from the far side: fed to @x's stream as reads of at most @chunk
 * bytes (0: as much as the stream asks for), the way tcp_uv.c reads.
 */
void pb_feed(struct xconn *x, const void *data, size_t n, size_t chunk);
/* The far daemon answers what it read from @x (PING, LOOKUP, WRITE, READ, SEND, REVOKE). */
void pb_far_answer(struct xconn *x);
/* The connection breaks (a read or write error). */
void pb_break(struct xconn *x, int err);

/* One loop turn: written READ payloads end, "soon" timers run, closed connections report. */
void pb_turn(struct pb *pb);
/* Time passes: a turn, every started timer fires once (keepalive tick, backoff), a turn. */
void pb_tick(struct pb *pb);

/* The client's operations (they go through its ring and xfer_run()), with a new cookie. */
void pb_submit(struct pb *pb, struct rp_sqe q);
/* The client takes its completions. */
void pb_reap(struct pb *pb);
/* A reload: 0 the original config, 1 without nodeB, 2 nodeB with another key. */
void pb_reload(struct pb *pb, unsigned which);
/* A peer_ping() of nodeB as an admin request would make it. */
void pb_ping(struct pb *pb);
/* The client disconnects, as the glue closes a connection. */
void pb_client_close(struct pb *pb);

/*
 * One record of fuzz-link.h's format (an FL_* command byte and its
 * operands) at @p, @n bytes left: the bytes it took, or 0 when it is cut
 * short (the input ends there).
 */
size_t pb_event(struct pb *pb, const uint8_t *p, size_t n);

#endif
