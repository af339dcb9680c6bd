/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the peer message parser: the input is a byte stream
 * as a peer would send it. It is framed the way the tcp transport frames it
 * (header, check, fixed part, check, payload skipped) and every fixed part
 * also goes through a responder handshake, which must refuse everything but
 * a proper conversation without crashing.
 */
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/peer/peer_hs.h"
#include "../../daemon/peer/peer_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct peer_conf known = { .name = "nodeA", .key_len = 16, .key = "0123456789abcdef" };

static const struct peer_conf *lookup(void *ctx, const char *name)
{
	(void)ctx;
	return !strcmp(name, known.name) ? &known : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int inited;
	_Alignas(8) uint8_t msg[PP_FIXED_MAX], out[PP_FIXED_MAX];
	struct peer_hs hs;
	struct pp_hdr h;
	const char *why;
	size_t off = 0, n;

	if (!inited++ && sodium_init() < 0)
		abort();
	peer_hs_init_responder(&hs, "nodeB", 42, lookup, NULL);
	while (size - off >= sizeof(h)) {
		memcpy(&h, data + off, sizeof(h));
		why = NULL;
		if (pp_check_hdr(&h, &why) < 0) {
			if (!why)
				abort();
			break;
		}
		if (h.len > sizeof(msg) || h.len < sizeof(h))
			abort(); /* the length table must bound every fixed part */
		if (size - off < h.len)
			break;
		memcpy(msg, data + off, h.len);
		off += h.len;
		if (pp_check(msg, h.len, &why) < 0)
			break;
		n = (size_t)pp_payload_len(msg);
		if (n > PP_PAYLOAD_MAX)
			abort();
		if (hs.state != HS_FAILED && hs.state != HS_DONE) {
			size_t olen = 0;

			if (peer_hs_consume(&hs, msg, h.len, out, &olen) < 0 && olen &&
			    pp_check(out, olen, &why) < 0)
				abort(); /* our own REJECT must pass our own checks */
		}
		off += n < size - off ? n : size - off;
	}
	peer_hs_clear(&hs);
	return 0;
}
