/* SPDX-License-Identifier: MIT */
/*
 * The tcp transport's byte stream, without the loop: framing of the peer
 * protocol (peer_proto.h) on one TCP connection, in both directions, and
 * the ops sent and not yet answered. The loop glue (tcp_uv.c) owns the
 * socket: it asks where received bytes go (tstream_rx_buf), says how many
 * came (tstream_consumed), and writes what the stream queues through its
 * io hooks. Everything a message means is the peer layer's (transport.h).
 *
 * Nearly zero copy: the reader frames the stream itself. Headers and fixed
 * parts arrive through a small staging buffer (one read takes many of them,
 * and the first bytes of a payload); the rest of a payload is read straight
 * into the target slice of the region. Outgoing payloads are written with
 * an iovec into the source region, which the peer layer keeps referenced
 * until the op is reported, i.e. after the write completed.
 *
 * Ordering: the far side answers requests in the order it reads them, so
 * outstanding ops form a FIFO and every reply must match its head; anything
 * else is a protocol violation and ends the connection.
 */
#ifndef RP_DAEMON_TCP_STREAM_H
#define RP_DAEMON_TCP_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "peer/peer_proto.h"
#include "peer/transport.h"

struct tstream;

struct tstream_io {
	/*
	 * Queue @len bytes of @msg, then @plen bytes at @payload. @rx: an incoming
	 * READ served from a region; the glue ends it (peer_x_rx_end) once the
	 * payload is written. @owned (NULL or the payload itself: a copy made
	 * from memory that may fault) is the glue's to give back with
	 * tstream_bounce_free() once written, or at once if it fails. 0 or <0
	 * (the stream then fails the connection); -ECONNABORTED: part of it
	 * went out before the rest could not be queued.
	 */
	int (*write)(struct tstream *st, const void *msg, size_t len, const void *payload,
		     uint64_t plen, const struct peer_rx *rx, void *owned);
	/* Close the connection: the first @err and @why are the ones reported. */
	void (*fail)(struct tstream *st, int err, const char *why);
};

enum tstream_phase { TS_HDR, TS_FIXED, TS_PAYLOAD, TS_DISCARD };

/* Embedded first in the glue's struct xconn: transport ops cast one to the other. */
struct tstream {
	const struct tstream_io *io;
	struct peer_link *link;
	bool failed;

	/* Receive framing. */
	enum tstream_phase phase;
	_Alignas(8) uint8_t fixed[PP_FIXED_MAX];
	size_t have, need;
	char *dst;		/* TS_PAYLOAD: where the next bytes go */
	uint64_t left;		/* payload bytes still to come */
	bool dst_fault;		/* dst is on hugetlbfs: copied into, guarded, never read into */
	uint64_t served_bounce; /* bytes of READs served from copies, not yet written */
	int pay_err;		/* -EFAULT: the rest of the payload was discarded */
	struct peer_rx rx;	/* the incoming WRITE/SEND whose payload is being read */
	bool rx_active;
	int rx_status;	  /* status to answer after a discarded payload */
	uint16_t rx_type; /* PP_WRITE or PP_SEND (reply type - 1) */
	uint64_t rx_id;
	struct peer_op *rop; /* READ_R payload goes into this op's region */
	/*
	 * Headers and fixed parts are read through a small staging buffer, many
	 * per read; a payload beyond what the buffer holds is read straight into
	 * its region (rx_direct).
	 */
	char *rbuf;
	size_t rpos, rlen;
	bool rx_direct;

	/* Ops sent and not answered, oldest first (linked through scratch[0]). */
	struct peer_op *head, *tail;
	uint64_t next_id;
};

void tstream_init(struct tstream *st, const struct tstream_io *io, struct peer_link *link);
/* Give back a payload's copy (tstream_io.write's @owned); NULL is a no-op. */
void tstream_bounce_free(void *owned);
/* Where the next received bytes go, and at most how many (0: no memory). */
void tstream_rx_buf(struct tstream *st, char **ret_buf, size_t *ret_len);
/* @n bytes arrived at the buffer tstream_rx_buf() gave: act on them. */
void tstream_consumed(struct tstream *st, size_t n);
/* The glue is closing the connection: act on nothing more it received. */
void tstream_stop(struct tstream *st);
/* The connection is gone: end an incoming transfer in progress, free buffers. */
void tstream_fini(struct tstream *st);

/* Transport ops (transport.h); @x starts with its struct tstream. */
int tstream_send_ctrl(struct xconn *x, const void *msg, size_t len);
int tstream_submit(struct xconn *x, struct peer_op *op);

#endif
