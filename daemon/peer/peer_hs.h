/* SPDX-License-Identifier: MIT */
/*
 * The peer handshake as a pure state machine: consume a message, maybe
 * produce one. No sockets, no loop, no logging: unit-tested as is (see
 * peer_proto.h for the conversation and the MAC transcript).
 */
#ifndef RP_DAEMON_PEER_HS_H
#define RP_DAEMON_PEER_HS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "peer/peer_proto.h"

/* Responder side: the key of configured peer @name, or NULL (unknown peer). */
typedef const struct peer_conf *(*peer_hs_lookup_fn)(void *ctx, const char *name);

enum peer_hs_state {
	HS_I_SENT_HELLO = 1, /* initiator: waiting for CHALLENGE */
	HS_I_SENT_AUTH,	     /* initiator: waiting for READY */
	HS_R_WAIT_HELLO,     /* responder: waiting for HELLO */
	HS_R_SENT_CHALLENGE, /* responder: waiting for AUTH */
	HS_DONE,
	HS_FAILED,
};

struct peer_hs {
	enum peer_hs_state state;
	bool initiator;
	uint16_t version;
	char my_name[RP_NAME_MAX];
	char peer_name[RP_NAME_MAX]; /* initiator: who we dialled; responder: from HELLO */
	uint64_t my_inc, peer_inc;
	uint8_t my_nonce[PP_NONCE_LEN], peer_nonce[PP_NONCE_LEN];
	uint8_t key[RP_PEER_KEY_MAX];
	size_t key_len;
	peer_hs_lookup_fn lookup;
	void *lookup_ctx;
	uint32_t reject_code;  /* why it failed: enum pp_reject */
	bool rejected_by_peer; /* the other side sent REJECT */
	char why[160];	       /* human reason of the failure */
};

/* Version range this build speaks (tests narrow it to provoke mismatches). */
extern uint16_t peer_hs_version_min, peer_hs_version_max;

/* Initiator: fills @out (a HELLO of sizeof(struct pp_hello)) to send first. */
void peer_hs_init_initiator(struct peer_hs *hs, const char *my_name, uint64_t my_inc,
			    const struct peer_conf *peer, struct pp_hello *out);
void peer_hs_init_responder(struct peer_hs *hs, const char *my_name, uint64_t my_inc,
			    peer_hs_lookup_fn lookup, void *ctx);

enum hs_step {
	HS_STEP_FAILED = -1, /* reason in hs->why and hs->reject_code */
	HS_STEP_MORE = 0,    /* go on */
	HS_STEP_DONE = 1,    /* authenticated: HS_DONE */
};

/*
 * Consume one whole message (already framed; checked here): enum hs_step.
 * *@outlen is set to the length of a message to send from @out (>=
 * PP_FIXED_MAX bytes), or 0: on failure this is a REJECT unless the other
 * side rejected first.
 */
int peer_hs_consume(struct peer_hs *hs, const void *msg, size_t len, void *out, size_t *outlen);

/* Build a REJECT (e.g. on a handshake timeout); returns its length. */
size_t peer_hs_reject(void *out, uint32_t code, const char *reason);
const char *peer_hs_reject_name(uint32_t code);
/* Wipe key material. */
void peer_hs_clear(struct peer_hs *hs);

#endif
