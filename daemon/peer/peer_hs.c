/* SPDX-License-Identifier: MIT */
/*
 * Peer handshake: version, names, incarnations and a mutual HMAC-SHA256
 * challenge-response with the per-peer pre-shared key (libsodium). Each side
 * contributes a fresh random nonce; each MAC covers both nonces, both names,
 * both incarnations, the chosen version and a direction label, so a MAC is
 * useful only in the one connection and direction it was made for. MACs are
 * compared in constant time.
 */
#include "peer/peer_hs.h"

#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

uint16_t peer_hs_version_min = PP_VERSION_MIN;
uint16_t peer_hs_version_max = PP_VERSION_MAX;

static const char label_i[] = "rdmaproxy peer v1 initiator";
static const char label_r[] = "rdmaproxy peer v1 responder";

static void mac(const struct peer_hs *hs, bool of_initiator, uint8_t out[PP_MAC_LEN])
{
	crypto_auth_hmacsha256_state st;
	const char *label = of_initiator ? label_i : label_r;
	const char *name_i = hs->initiator ? hs->my_name : hs->peer_name;
	const char *name_r = hs->initiator ? hs->peer_name : hs->my_name;
	uint64_t inc_i = hs->initiator ? hs->my_inc : hs->peer_inc;
	uint64_t inc_r = hs->initiator ? hs->peer_inc : hs->my_inc;
	const uint8_t *n_i = hs->initiator ? hs->my_nonce : hs->peer_nonce;
	const uint8_t *n_r = hs->initiator ? hs->peer_nonce : hs->my_nonce;
	char names[2 * RP_NAME_MAX];
	uint8_t v[2] = { (uint8_t)hs->version, (uint8_t)(hs->version >> 8) };

	/*
	 * Fixed-size, zero-padded fields (both arrays are zero past the NUL):
	 * the transcript is unambiguous without separators.
	 */
	memcpy(names, name_i, RP_NAME_MAX);
	memcpy(names + RP_NAME_MAX, name_r, RP_NAME_MAX);
	crypto_auth_hmacsha256_init(&st, hs->key, hs->key_len);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)label, sizeof(label_i));
	crypto_auth_hmacsha256_update(&st, v, sizeof(v));
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)names, sizeof(names));
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)&inc_i, sizeof(inc_i));
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)&inc_r, sizeof(inc_r));
	crypto_auth_hmacsha256_update(&st, n_i, PP_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, n_r, PP_NONCE_LEN);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

static void set_key(struct peer_hs *hs, const struct peer_conf *p)
{
	memcpy(hs->key, p->key, p->key_len);
	hs->key_len = p->key_len;
}

void peer_hs_init_initiator(struct peer_hs *hs, const char *my_name, uint64_t my_inc,
			    const struct peer_conf *peer, struct pp_hello *out)
{
	memset(hs, 0, sizeof(*hs));
	hs->initiator = true;
	hs->state = HS_I_SENT_HELLO;
	snprintf(hs->my_name, sizeof(hs->my_name), "%s", my_name);
	snprintf(hs->peer_name, sizeof(hs->peer_name), "%s", peer->name);
	hs->my_inc = my_inc;
	set_key(hs, peer);
	randombytes_buf(hs->my_nonce, sizeof(hs->my_nonce));
	memset(out, 0, sizeof(*out));
	pp_hdr_init(&out->h, PP_HELLO, 0);
	out->magic = PP_MAGIC;
	out->version_min = peer_hs_version_min;
	out->version_max = peer_hs_version_max;
	out->incarnation = my_inc;
	memcpy(out->nonce, hs->my_nonce, sizeof(out->nonce));
	memcpy(out->name, hs->my_name, sizeof(out->name));
}

void peer_hs_init_responder(struct peer_hs *hs, const char *my_name, uint64_t my_inc,
			    peer_hs_lookup_fn lookup, void *ctx)
{
	memset(hs, 0, sizeof(*hs));
	hs->state = HS_R_WAIT_HELLO;
	snprintf(hs->my_name, sizeof(hs->my_name), "%s", my_name);
	hs->my_inc = my_inc;
	hs->lookup = lookup;
	hs->lookup_ctx = ctx;
	randombytes_buf(hs->my_nonce, sizeof(hs->my_nonce));
}

const char *peer_hs_reject_name(uint32_t code)
{
	switch (code) {
	case PP_REJ_VERSION:
		return "incompatible protocol version";
	case PP_REJ_UNKNOWN:
		return "unknown peer";
	case PP_REJ_AUTH:
		return "authentication failed";
	case PP_REJ_NAME:
		return "wrong node name";
	case PP_REJ_DUPLICATE:
		return "duplicate connection";
	case PP_REJ_PROTO:
		return "protocol violation";
	case PP_REJ_SHUTDOWN:
		return "shutting down";
	default:
		return "rejected";
	}
}

size_t peer_hs_reject(void *out, uint32_t code, const char *reason)
{
	struct pp_reject rej;
	size_t i;

	memset(&rej, 0, sizeof(rej));
	pp_hdr_init(&rej.h, PP_REJECT, 0);
	rej.code = code;
	snprintf(rej.reason, sizeof(rej.reason), "%s", reason);
	for (i = 0; rej.reason[i]; i++)
		if ((unsigned char)rej.reason[i] < 0x20 || (unsigned char)rej.reason[i] > 0x7e)
			rej.reason[i] = '?';
	memcpy(out, &rej, sizeof(rej));
	return sizeof(rej);
}

__attribute__((format(printf, 5, 6))) static int fail(struct peer_hs *hs, void *out, size_t *outlen,
						      uint32_t code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(hs->why, sizeof(hs->why), fmt, ap);
	va_end(ap);
	hs->state = HS_FAILED;
	hs->reject_code = code;
	*outlen = peer_hs_reject(out, code, hs->why);
	return HS_STEP_FAILED;
}

static int on_reject(struct peer_hs *hs, const struct pp_reject *rej, size_t *outlen)
{
	hs->state = HS_FAILED;
	hs->rejected_by_peer = true;
	hs->reject_code = rej->code;
	snprintf(hs->why, sizeof(hs->why), "rejected by the peer: %s", rej->reason);
	*outlen = 0;
	return HS_STEP_FAILED;
}

/* Responder: HELLO -> CHALLENGE. */
static int on_hello(struct peer_hs *hs, const struct pp_hello *m, void *out, size_t *outlen)
{
	const struct peer_conf *p;
	struct pp_challenge ch;

	memcpy(hs->peer_name, m->name, sizeof(hs->peer_name));
	if (m->version_max < peer_hs_version_min || m->version_min > peer_hs_version_max)
		return fail(hs, out, outlen, PP_REJ_VERSION,
			    "%s speaks peer protocol %u..%u, this node %u..%u", m->name,
			    m->version_min, m->version_max, peer_hs_version_min,
			    peer_hs_version_max);
	p = hs->lookup ? hs->lookup(hs->lookup_ctx, m->name) : NULL;
	if (!p)
		return fail(hs, out, outlen, PP_REJ_UNKNOWN, "'%s' is not a configured peer of %s",
			    m->name, hs->my_name);
	set_key(hs, p);
	hs->version = m->version_max < peer_hs_version_max ? m->version_max : peer_hs_version_max;
	hs->peer_inc = m->incarnation;
	memcpy(hs->peer_nonce, m->nonce, PP_NONCE_LEN);
	memset(&ch, 0, sizeof(ch));
	pp_hdr_init(&ch.h, PP_CHALLENGE, 0);
	ch.magic = PP_MAGIC;
	ch.version = hs->version;
	ch.incarnation = hs->my_inc;
	memcpy(ch.nonce, hs->my_nonce, PP_NONCE_LEN);
	memcpy(ch.name, hs->my_name, sizeof(ch.name));
	mac(hs, false, ch.mac);
	memcpy(out, &ch, sizeof(ch));
	*outlen = sizeof(ch);
	hs->state = HS_R_SENT_CHALLENGE;
	return HS_STEP_MORE;
}

/* Initiator: CHALLENGE -> AUTH, once the responder proved the key. */
static int on_challenge(struct peer_hs *hs, const struct pp_challenge *m, void *out, size_t *outlen)
{
	uint8_t want[PP_MAC_LEN];
	struct pp_auth a;
	int ok;

	if (strcmp(m->name, hs->peer_name))
		return fail(hs, out, outlen, PP_REJ_NAME,
			    "dialled '%s' but the node there is named '%s'", hs->peer_name,
			    m->name);
	if (m->version < peer_hs_version_min || m->version > peer_hs_version_max)
		return fail(hs, out, outlen, PP_REJ_VERSION,
			    "%s chose peer protocol %u, this node speaks %u..%u", m->name,
			    m->version, peer_hs_version_min, peer_hs_version_max);
	hs->version = m->version;
	hs->peer_inc = m->incarnation;
	memcpy(hs->peer_nonce, m->nonce, PP_NONCE_LEN);
	mac(hs, false, want);
	ok = crypto_verify_32(want, m->mac) == 0;
	sodium_memzero(want, sizeof(want));
	if (!ok)
		return fail(hs, out, outlen, PP_REJ_AUTH,
			    "%s did not prove the shared key (wrong key_file on either side?)",
			    hs->peer_name);
	memset(&a, 0, sizeof(a));
	pp_hdr_init(&a.h, PP_AUTH, 0);
	mac(hs, true, a.mac);
	memcpy(out, &a, sizeof(a));
	*outlen = sizeof(a);
	hs->state = HS_I_SENT_AUTH;
	return HS_STEP_MORE;
}

/* Responder: AUTH -> READY. */
static int on_auth(struct peer_hs *hs, const struct pp_auth *m, void *out, size_t *outlen)
{
	uint8_t want[PP_MAC_LEN];
	struct pp_ready rd;
	int ok;

	mac(hs, true, want);
	ok = crypto_verify_32(want, m->mac) == 0;
	sodium_memzero(want, sizeof(want));
	if (!ok)
		return fail(hs, out, outlen, PP_REJ_AUTH,
			    "%s did not prove the shared key (wrong key_file on either side?)",
			    hs->peer_name);
	pp_hdr_init(&rd.h, PP_READY, 0);
	memcpy(out, &rd, sizeof(rd));
	*outlen = sizeof(rd);
	hs->state = HS_DONE;
	return HS_STEP_DONE;
}

int peer_hs_consume(struct peer_hs *hs, const void *msg, size_t len, void *out, size_t *outlen)
{
	union {
		struct pp_hdr h;
		struct pp_hello hello;
		struct pp_challenge ch;
		struct pp_auth auth;
		struct pp_reject rej;
	} m;
	const char *why = NULL;

	*outlen = 0;
	if (hs->state == HS_DONE || hs->state == HS_FAILED)
		return fail(hs, out, outlen, PP_REJ_PROTO, "message after the handshake ended");
	if (pp_check(msg, len, &why) < 0)
		return fail(hs, out, outlen, PP_REJ_PROTO, "malformed handshake message: %s", why);
	if (len > sizeof(m))
		return fail(hs, out, outlen, PP_REJ_PROTO, "unexpected message during handshake");
	memcpy(&m, msg, len);
	if (m.h.type == PP_REJECT)
		return on_reject(hs, &m.rej, outlen);
	switch (hs->state) {
	case HS_R_WAIT_HELLO:
		if (m.h.type == PP_HELLO)
			return on_hello(hs, &m.hello, out, outlen);
		break;
	case HS_I_SENT_HELLO:
		if (m.h.type == PP_CHALLENGE)
			return on_challenge(hs, &m.ch, out, outlen);
		break;
	case HS_R_SENT_CHALLENGE:
		if (m.h.type == PP_AUTH)
			return on_auth(hs, &m.auth, out, outlen);
		break;
	case HS_I_SENT_AUTH:
		if (m.h.type == PP_READY) {
			hs->state = HS_DONE;
			return HS_STEP_DONE;
		}
		break;
	default:
		break;
	}
	return fail(hs, out, outlen, PP_REJ_PROTO,
		    "unexpected message type 0x%04x during handshake", m.h.type);
}

void peer_hs_clear(struct peer_hs *hs)
{
	sodium_memzero(hs->key, sizeof(hs->key));
	hs->key_len = 0;
}
