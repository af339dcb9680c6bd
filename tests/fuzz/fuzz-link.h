/* SPDX-License-Identifier: MIT */
/*
 * The input formats of the fuzz targets on the peer bench (peer-bench.h),
 * shared with their seed generator (mkseeds-link.c).
 *
 * Both start with one setup byte:
 *   bits 0-1  enum pb_mode: the connection the input starts with
 *   bit 2     PB_F_LOOKED_UP: the far daemon looked up a.rw (export id 1)
 *             and a.ro (id 2) on it (up modes only)
 *   bit 3     PB_F_REMOTE: the client has handle 1 to the far daemon's b.x
 *             (export id PB_FAR_EXPORT, PB_FAR_LEN bytes; up modes only)
 *   bits 4-6  fuzz-admin only: PB_F_ROOT (the client is uid 0, else 1000),
 *             PB_F_ADMIN_GID (admin_group is PB_ADMIN_GID), PB_F_GID (the
 *             client's gid is PB_ADMIN_GID, else 1000)
 * The fixture besides: our client has region 1 (4 pages)
 * exported read-write as a.rw, region 2 (1 page) exported read-only as a.ro
 * (both open to nodeB) and read-write as a.priv (to nobody but its owner),
 * endpoint 1 "a.ep" with two half-page receives posted from region 2, and
 * destination 1 "far.ep" on nodeB. Our incarnation is PB_INC, the far
 * daemon's PB_FAR_INC. Ids the daemon gives on a link start at 1 there:
 * LOOKUPs it sends, data requests it sends (the stream's own counter),
 * PINGs (one counter for the whole peer layer).
 *
 * Then records, each a command byte and its operands (fuzz-link: every byte
 * is a command, taken modulo FL_N; fuzz-admin: bytes from FA_PKT up are its
 * own, the others as in fuzz-link). Multi-byte values are little-endian; an
 * input that ends early just ends.
 * Records that act on "the connection" take the newest connected one that
 * is not closing, and do nothing without one.
 *   FL_BYTES  [len:2] [chunk] [len bytes]  bytes from the far side, read in
 *                                          reads of at most chunk (0: any)
 *   FL_CTRL   [len:2] [len bytes]          a control message as the verbs
 *                                          transport delivers one (at most
 *                                          PEER_CTRL_MAX bytes)
 *   FL_NOTIFY [export] [off:2] [len:2] [imm]   a notified one-sided write (verbs)
 *   FL_VSEND  [ep] [len:2] [fill] [end]    a message into a posted receive as
 *                                          the verbs transport moves it; ep & 3:
 *                                          a.ep, nobody, "", a.rw; end & 1: the
 *                                          connection breaks before it ends
 *   FL_OP     [kind] [off] [len:2]         the client submits: kind & 3 WRITE,
 *                                          READ, SEND, WRITE|NOTIFY on handle
 *                                          2 if kind & 8, else 1 (SEND:
 *                                          destination 1), from region 2 if
 *                                          kind & 4, else 1, at off * 64; in
 *                                          the export at off * 256 if kind &
 *                                          16, else off * 64
 *   FL_RECV                                the client posts a receive on a.ep
 *   FL_OPEN   [name]                       REMOTE_OPEN of b.x (missing if name & 1)
 *   FL_WITHDRAW [which]                    which % 3: UNEXPORT a.rw, UNEXPORT
 *                                          a.ro, REGION_FREE 1
 *   FL_TURN                                one loop turn
 *   FL_TICK                                every timer fires (keepalive, backoff)
 *   FL_ANSWER                              the far daemon answers what it read
 *   FL_BREAK                               the newest connection breaks (or
 *                                          our dial in progress fails)
 *   FL_ACCEPT [addr]                       an inbound connection from
 *                                          192.0.2.(2 + addr % 4)
 *   FL_HANDSHAKE                           the far daemon runs the handshake
 *   FL_CONNECT                             our pending dial connects
 *   FL_REAP                                the client takes its completions
 *   FL_RELOAD [which]                      pb_reload(which % 4)
 *   FL_PING                                a ping of nodeB (rdmaproxyctl ping)
 *   FL_CLIENT_CLOSE                        the client disconnects
 *   FL_HS_STEP                             the far daemon takes one step of the
 *                                          handshake (its HELLO, or its answer
 *                                          to one message of ours)
 *   FL_RESTART                             the far daemon restarts: a new
 *                                          incarnation, its connections break
 * fuzz-admin's own:
 *   FA_PKT [ctl] [len:2] [len bytes]       a request packet: of the second
 *                                          client (no HELLO) if ctl & 0x80;
 *                                          rp_hdr.len set to len if ctl & 4
 *   FA_REQ [type] [cursor:8] [seq]         a well-formed request of enum
 *                                          fa_type (type % FA_NTYPES); PING names
 *                                          nodeB, this node or "nosuch" by
 *                                          cursor % 3
 *   FA_NEXT                                the next page of the last list
 *   FA_SESSION                             another client (HELLO, one region)
 */
#ifndef RP_TESTS_FUZZ_LINK_H
#define RP_TESTS_FUZZ_LINK_H

#include "rp-proto.h"

#define FL_SETUP_MODE 0x03
#define FL_SETUP_FLAGS_SHIFT 2 /* (setup >> 2) & 0x1f: PB_F_* */

enum fl_cmd {
	FL_BYTES,
	FL_CTRL,
	FL_NOTIFY,
	FL_VSEND,
	FL_OP,
	FL_RECV,
	FL_OPEN,
	FL_WITHDRAW,
	FL_TURN,
	FL_TICK,
	FL_ANSWER,
	FL_BREAK,
	FL_ACCEPT,
	FL_HANDSHAKE,
	FL_CONNECT,
	FL_REAP,
	FL_RELOAD,
	FL_PING,
	FL_CLIENT_CLOSE,
	FL_HS_STEP,
	FL_RESTART,
	FL_N,
};

#define FA_PKT 0xf0
#define FA_REQ 0xf1
#define FA_NEXT 0xf2
#define FA_SESSION 0xf3
#define FA_PKT_SECOND 0x80
#define FA_PKT_FIXLEN 0x04

/* FA_REQ's request types. */
enum fa_type {
	FA_STATUS,
	FA_CLIENTS,
	FA_REGIONS,
	FA_PEERS,
	FA_METRICS,
	FA_PING,
	FA_RELOAD,
	FA_ENDPOINTS,
	FA_NTYPES,
};

#endif
