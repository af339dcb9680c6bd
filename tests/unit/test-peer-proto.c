/* SPDX-License-Identifier: MIT */
/*
 * Peer protocol codec and handshake, without sockets: messages go from one
 * state machine's output straight into the other's input.
 */
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>

#include "../../daemon/peer/peer_hs.h"
#include "../../daemon/peer/peer_proto.h"
#include "tap.h"

static struct peer_conf conf_a, conf_b; /* how B knows A and how A knows B */

static void set_conf(struct peer_conf *p, char *name, const char *key)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->key_len = strlen(key);
	memcpy(p->key, key, p->key_len);
}

static const struct peer_conf *lookup_b(void *ctx, const char *name)
{
	(void)ctx;
	return !strcmp(name, conf_a.name) ? &conf_a : NULL;
}

/* Run A (initiator) against B (responder); returns A's and B's final results. */
static void run(struct peer_hs *a, struct peer_hs *b, int *ra, int *rb)
{
	_Alignas(8) char m1[PP_FIXED_MAX], m2[PP_FIXED_MAX];
	struct pp_hello hello;
	size_t n1 = 0, n2 = 0;

	peer_hs_init_initiator(a, "nodeA", 0x1111, &conf_b, &hello);
	peer_hs_init_responder(b, "nodeB", 0x2222, lookup_b, NULL);
	*ra = *rb = 0;
	*rb = peer_hs_consume(b, &hello, sizeof(hello), m1, &n1); /* -> CHALLENGE */
	if (!n1)
		return;
	*ra = peer_hs_consume(a, m1, n1, m2, &n2); /* -> AUTH */
	if (!n2)
		return;
	*rb = peer_hs_consume(b, m2, n2, m1, &n1); /* -> READY */
	if (!n1)
		return;
	if (*ra < 0) {
		/* A rejected: B sees the REJECT. */
		*rb = peer_hs_consume(b, m2, n2, m1, &n1);
		return;
	}
	*ra = peer_hs_consume(a, m1, n1, m2, &n2);
}

static void test_handshake_ok(void)
{
	struct peer_hs a, b;
	int ra, rb;

	set_conf(&conf_a, "nodeA", "0123456789abcdef-shared");
	set_conf(&conf_b, "nodeB", "0123456789abcdef-shared");
	run(&a, &b, &ra, &rb);
	tap_is_int(ra, 1, "handshake: initiator authenticated");
	tap_is_int(rb, 1, "handshake: responder authenticated");
	tap_ok(a.peer_inc == 0x2222 && b.peer_inc == 0x1111, "handshake: incarnations exchanged");
	tap_is_str(b.peer_name, "nodeA", "handshake: responder learnt the initiator's name");
	tap_ok(memcmp(a.my_nonce, b.peer_nonce, PP_NONCE_LEN) == 0, "handshake: nonces exchanged");
}

static void test_wrong_key(void)
{
	struct peer_hs a, b;
	int ra, rb;

	set_conf(&conf_a, "nodeA", "0123456789abcdef-key-one");
	set_conf(&conf_b, "nodeB", "0123456789abcdef-key-two");
	run(&a, &b, &ra, &rb);
	tap_is_int(ra, -1, "wrong key: initiator refuses the responder's proof");
	tap_is_int(a.reject_code, PP_REJ_AUTH, "wrong key: reason is authentication");
	tap_is_int(rb, -1, "wrong key: responder gets the reject");
	tap_ok(b.rejected_by_peer && strstr(b.why, "shared key"),
	       "wrong key: responder logs why (%s)", b.why);
}

static void test_unknown_peer(void)
{
	struct peer_hs a, b;
	int ra, rb;

	set_conf(&conf_a, "stranger", "0123456789abcdef-shared");
	set_conf(&conf_b, "nodeB", "0123456789abcdef-shared");
	run(&a, &b, &ra, &rb);
	tap_is_int(rb, -1, "unknown peer: responder refuses");
	tap_is_int(b.reject_code, PP_REJ_UNKNOWN, "unknown peer: reason");
	tap_ok(strstr(b.why, "nodeA") != NULL, "unknown peer: the name is in the reason (%s)",
	       b.why);
}

static void test_version(void)
{
	struct peer_hs a, b;
	struct pp_hello hello;
	char out[PP_FIXED_MAX];
	size_t n;

	set_conf(&conf_a, "nodeA", "0123456789abcdef-shared");
	set_conf(&conf_b, "nodeB", "0123456789abcdef-shared");
	peer_hs_init_initiator(&a, "nodeA", 1, &conf_b, &hello);
	hello.version_min = hello.version_max = PP_VERSION_MAX + 1;
	peer_hs_init_responder(&b, "nodeB", 2, lookup_b, NULL);
	tap_is_int(peer_hs_consume(&b, &hello, sizeof(hello), out, &n), -1,
		   "version: newer-only initiator refused");
	tap_ok(b.reject_code == PP_REJ_VERSION && n == sizeof(struct pp_reject),
	       "version: a REJECT goes back (%s)", b.why);
	tap_is_int(peer_hs_consume(&a, out, n, out, &n), -1, "version: initiator fails on it");
	tap_ok(a.rejected_by_peer && strstr(a.why, "protocol"), "version: initiator logs (%s)",
	       a.why);
}

static void test_wrong_name_and_replay(void)
{
	struct peer_hs a, b, a2;
	struct pp_hello hello;
	char ch[PP_FIXED_MAX], out[PP_FIXED_MAX];
	size_t n, nch;
	struct peer_conf other;

	set_conf(&conf_a, "nodeA", "0123456789abcdef-shared");
	set_conf(&conf_b, "nodeB", "0123456789abcdef-shared");
	set_conf(&other, "nodeC", "0123456789abcdef-shared");
	peer_hs_init_initiator(&a, "nodeA", 1, &other, &hello);
	peer_hs_init_responder(&b, "nodeB", 2, lookup_b, NULL);
	peer_hs_consume(&b, &hello, sizeof(hello), ch, &nch);
	tap_is_int(peer_hs_consume(&a, ch, nch, out, &n), -1, "name: dialled C, B answered");
	tap_is_int(a.reject_code, PP_REJ_NAME, "name: reason");

	/* A CHALLENGE recorded for one HELLO is useless against a fresh nonce. */
	peer_hs_init_initiator(&a, "nodeA", 1, &conf_b, &hello);
	peer_hs_init_responder(&b, "nodeB", 2, lookup_b, NULL);
	peer_hs_consume(&b, &hello, sizeof(hello), ch, &nch);
	peer_hs_init_initiator(&a2, "nodeA", 1, &conf_b, &hello);
	tap_is_int(peer_hs_consume(&a2, ch, nch, out, &n), -1, "replayed challenge refused");

	/* An initiator MAC reflected back as the responder's does not verify. */
	peer_hs_init_responder(&b, "nodeB", 2, lookup_b, NULL);
	peer_hs_init_initiator(&a, "nodeA", 1, &conf_b, &hello);
	peer_hs_consume(&b, &hello, sizeof(hello), ch, &nch);
	tap_is_int(peer_hs_consume(&a, ch, nch, out, &n), 0, "fresh challenge accepted");
	{
		struct pp_auth au;

		memcpy(&au, out, sizeof(au));
		au.mac[0] ^= 1;
		tap_is_int(peer_hs_consume(&b, &au, sizeof(au), out, &n), -1,
			   "tampered AUTH refused");
		tap_is_int(b.reject_code, PP_REJ_AUTH, "tampered AUTH: reason");
	}
}

static void test_order(void)
{
	struct peer_hs b;
	struct pp_auth au;
	struct pp_ping ping;
	char out[PP_FIXED_MAX];
	size_t n;

	memset(&au, 0, sizeof(au));
	pp_hdr_init(&au.h, PP_AUTH, 0);
	peer_hs_init_responder(&b, "nodeB", 2, lookup_b, NULL);
	tap_is_int(peer_hs_consume(&b, &au, sizeof(au), out, &n), -1, "order: AUTH before HELLO");
	memset(&ping, 0, sizeof(ping));
	pp_hdr_init(&ping.h, PP_PING, 1);
	peer_hs_init_responder(&b, "nodeB", 2, lookup_b, NULL);
	tap_is_int(peer_hs_consume(&b, &ping, sizeof(ping), out, &n), -1,
		   "order: nothing but handshake before authentication");
}

static void test_codec(void)
{
	struct pp_write w;
	struct pp_send s;
	struct pp_lookup_r lr;
	struct pp_reject rej;
	const char *why = NULL;

	memset(&w, 0, sizeof(w));
	pp_hdr_init(&w.h, PP_WRITE, 7);
	w.len = 4096;
	tap_is_int(pp_check(&w, sizeof(w), &why), 0, "codec: valid WRITE");
	tap_is_int(pp_payload_len(&w), 4096, "codec: WRITE payload length");
	w.h.flags = PP_F_NOTIFY;
	tap_is_int(pp_check(&w, sizeof(w), &why), 0, "codec: WRITE with NOTIFY");
	w.h.flags = 2;
	tap_is_int(pp_check(&w, sizeof(w), &why), -EPROTO, "codec: unknown flag refused");
	w.h.flags = 0;
	w.pad = 1;
	tap_is_int(pp_check(&w, sizeof(w), &why), -EPROTO, "codec: non-zero padding refused");
	w.pad = 0;
	w.len = (uint64_t)UINT32_MAX + 1;
	tap_is_int(pp_check(&w, sizeof(w), &why), -EPROTO, "codec: payload over 4 GiB refused");
	w.len = 1;
	w.h.len++;
	tap_is_int(pp_check(&w, sizeof(w), &why), -EPROTO, "codec: wrong length refused");
	w.h.len--;
	tap_is_int(pp_check(&w, sizeof(w) - 1, &why), -EPROTO, "codec: short buffer refused");
	w.h.type = 0x7777;
	tap_is_int(pp_check(&w, sizeof(w), &why), -EPROTO, "codec: unknown type refused");

	memset(&s, 0, sizeof(s));
	pp_hdr_init(&s.h, PP_SEND, 1);
	strcpy(s.endpoint, "ep-1");
	tap_is_int(pp_check(&s, sizeof(s), &why), 0, "codec: valid SEND");
	s.endpoint[10] = 'x';
	tap_is_int(pp_check(&s, sizeof(s), &why), -EPROTO, "codec: bytes after the name's NUL");
	memset(s.endpoint, 'a', sizeof(s.endpoint));
	tap_is_int(pp_check(&s, sizeof(s), &why), -EPROTO, "codec: unterminated name");
	strcpy(s.endpoint, "a/b");
	memset(s.endpoint + 4, 0, sizeof(s.endpoint) - 4);
	tap_is_int(pp_check(&s, sizeof(s), &why), -EPROTO, "codec: invalid character in name");

	memset(&lr, 0, sizeof(lr));
	pp_hdr_init(&lr.h, PP_LOOKUP_R, 3);
	lr.xinfo_len = PP_XINFO_MAX + 1;
	tap_is_int(pp_check(&lr, sizeof(lr), &why), -EPROTO, "codec: oversized xinfo refused");
	lr.xinfo_len = 0;
	lr.status = 5;
	tap_is_int(pp_check(&lr, sizeof(lr), &why), -EPROTO, "codec: positive status refused");

	peer_hs_reject(&rej, PP_REJ_AUTH, "bad\nline");
	tap_is_int(pp_check(&rej, sizeof(rej), &why), 0, "codec: REJECT reasons are sanitised");
	rej.reason[3] = '\n';
	tap_is_int(pp_check(&rej, sizeof(rej), &why), -EPROTO, "codec: control bytes refused");
	tap_ok(pp_is_data(PP_READ_R) && !pp_is_data(PP_LOOKUP), "codec: data types");

	{
		struct pp_revoke rv;

		memset(&rv, 0, sizeof(rv));
		pp_hdr_init(&rv.h, PP_REVOKE, 0);
		rv.export_id = 4;
		rv.export_inc = 0x1234;
		tap_is_int(pp_check(&rv, sizeof(rv), &why), 0, "codec: valid REVOKE");
		rv.h.type = PP_REVOKE_R;
		tap_is_int(pp_check(&rv, sizeof(rv), &why), 0, "codec: valid REVOKE_R");
		rv.export_id = 0;
		tap_is_int(pp_check(&rv, sizeof(rv), &why), -EPROTO,
			   "codec: REVOKE of export 0 refused");
		rv.export_id = 4;
		rv.export_inc = 0;
		tap_is_int(pp_check(&rv, sizeof(rv), &why), -EPROTO,
			   "codec: REVOKE without an incarnation refused");
		tap_ok(!pp_is_data(PP_REVOKE), "codec: REVOKE is a control message");
	}
}

int main(void)
{
	if (sodium_init() < 0)
		return 99;
	test_handshake_ok();
	test_wrong_key();
	test_unknown_peer();
	test_version();
	test_wrong_name_and_replay();
	test_order();
	test_codec();
	tap_plan_done();
	return tap_failed ? 1 : 0;
}
