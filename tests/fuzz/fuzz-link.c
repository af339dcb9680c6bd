/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for everything a peer's bytes reach after the framing
 * that fuzz-peer.c covers: the tcp stream decoder (tcp_stream.c) with the
 * real peer layer above it (handshake on a live link, admission, PING/PONG,
 * LOOKUP and its reply, REVOKE and its confirmation, NOTIFY, REJECT, the
 * data requests WRITE/READ/SEND and the replies to ours, with payloads) and
 * the real client core under it; and the peer layer's up-calls the way the
 * verbs transport makes them (control messages framed by nothing but their
 * length, notified writes, messages into posted receives).
 *
 * The bench (peer-bench.h) starts every input from the same fixture, with
 * a connection that is authenticated or not (format in fuzz-link.h); the
 * input then interleaves bytes from the far side with what the client, the
 * far daemon, the loop and the admin do. At the end the client leaves and
 * the peer layer shuts down as the manager does it.
 *
 * Checked, besides "no crash, no leak": every completion the client reaps
 * is well-formed and comes once per cookie; every connection is reported
 * failed exactly once; at the end every operation was reported, the session
 * freed exactly once and the core is empty.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../daemon/base/log.h"
#include "fuzz-link.h"
#include "peer-bench.h"

#define FUZZ_MAX_INPUT 65536

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pb pb;
	static bool quiet;
	size_t off = 1, n;

	if (!quiet) {
		log_set_level(LOG_CRIT);
		quiet = true;
	}
	if (size < 1 || size > FUZZ_MAX_INPUT)
		return 0;
	pb_init(&pb, data[0] & FL_SETUP_MODE, (data[0] >> FL_SETUP_FLAGS_SHIFT) & 3);
	while (off < size && (n = pb_event(&pb, data + off, size - off)) > 0)
		off += n;
	pb_fini(&pb);
	return 0;
}
