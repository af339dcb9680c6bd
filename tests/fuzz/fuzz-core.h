/* SPDX-License-Identifier: MIT */
/*
 * The input formats of the client core's fuzz targets, shared with the seed
 * generator (mkseeds-core.c) so that seeds and targets cannot drift apart.
 *
 * fuzz-ctl: one setup byte, then records, each one of
 *   [ctl] [len lo] [len hi] [len bytes]   a packet; ctl says which fd comes
 *                                         with it (FC_FD_*) and whether the
 *                                         target sets rp_hdr.len to the
 *                                         packet's length (FC_FIXLEN)
 *   [FC_EV_*]                             something the peer layer does
 *
 * fuzz-sqe: records, each a command byte (FS_* in the low 3 bits, FS_B for
 * session B instead of A, the bits between command-specific) and its
 * operands:
 *   FS_SQE   [count] [struct fs_sqe]   count+1 copies of a compact entry
 *   FS_RAW   [48 bytes] ([16 bytes])   an entry as given, up to its padding;
 *                                      the padding too with FS_RAW_PAD
 *   FS_RUN                             xfer_run (FS_RUN_PASS, FS_RUN_ARM)
 *   FS_REAP  [max]                     the client reaps up to max+1 completions
 *   FS_INDEX [which] [u32]             the client writes a ring index
 *   FS_PEER  [index] [status]          the peer layer ends one of its operations
 *   FS_CTL   [action]                  a control request (FS_CTL_*)
 *   FS_RX    [len] [status]            a message or a notified write from a peer
 * Multi-byte values are little-endian; an input that ends early just ends.
 */
#ifndef RP_TESTS_FUZZ_CORE_H
#define RP_TESTS_FUZZ_CORE_H

#include <stdint.h>

#include "rp-proto.h"

/* fuzz-ctl setup byte: uid 1000 + (b & 3); max_regions 1 + (b >> 2 & 7). */
#define FC_SETUP_SMALL_BYTES 0x20 /* max_registered_bytes FC_MEMFD_MAX, else 1 MiB */
#define FC_MEMFD_MAX 16384	  /* larger claimed lengths get a one-page memfd */

/* fuzz-ctl record control byte. */
#define FC_FD_MASK 0x03
#define FC_FD_NONE 0x00
#define FC_FD_MEMFD 0x01    /* sealed, of the REGION_REG's length if plausible */
#define FC_FD_DEVNULL 0x02  /* /dev/null, read-write */
#define FC_FD_UNSEALED 0x03 /* a memfd of one page without seals */
#define FC_FIXLEN 0x04
#define FC_EV_OPEN_OK 0xf0	/* the oldest pending REMOTE_OPEN is found */
#define FC_EV_OPEN_FAIL 0xf1	/* or refused (-RP_ENOEXPORT) */
#define FC_EV_GONE_RELEASE 0xf2 /* withdrawn exports the peer layer held are let go */
#define FC_EV_PIN_GONE 0xf3	/* toggle: the peer layer holds withdrawn exports */
#define FC_EV_OPEN_REFUSE 0xf4	/* toggle: the peer layer refuses REMOTE_OPEN at once */
#define FC_EV_SEND_FAIL 0xf5	/* toggle: replies cannot be sent */
#define FC_EV_DEFER_JOBS 0xf6	/* toggle: region registrations wait for FC_EV_RUN_JOB */
#define FC_EV_RUN_JOB 0xf7	/* the oldest waiting registration is mapped and answered */
#define FC_MAX_PACKET (RP_PROTO_MSG_MAX + 64)

/* fuzz-sqe commands. */
#define FS_CMD_MASK 0x07
#define FS_SQE 0
#define FS_RAW 1
#define FS_RUN 2
#define FS_REAP 3
#define FS_INDEX 4
#define FS_PEER 5
#define FS_CTL 6
#define FS_RX 7
#define FS_B 0x80
#define FS_RUN_PASS 0x08 /* inside an engine pass: completions published at its end */
#define FS_RUN_ARM 0x10	 /* then arm the doorbell, as before sleeping */
#define FS_RAW_PAD 0x08
#define FS_RAW_LEN 48 /* offsetof(struct rp_sqe, seq) */

/* A compact entry: small ids and offsets reach the fixture's handles. */
struct fs_sqe {
	uint8_t opcode; /* & 3: WRITE, READ, SEND, POST_RECV (FS_RAW for the others) */
	uint8_t region;
	uint8_t target;
	uint8_t flags;
	uint8_t offset[2];
	uint8_t remote_offset[2];
	uint8_t len[2];
	uint8_t imm;
};

/* FS_INDEX which: the ring index the client writes. */
enum fs_index {
	FS_IX_SQ_PRODUCER,
	FS_IX_CQ_CONSUMER,
	FS_IX_SQ_CONSUMER, /* the daemon's own: it must not trust it */
	FS_IX_CQ_PRODUCER,
	FS_IX_N,
};

/* FS_CTL actions. */
enum fs_ctl {
	FS_CTL_FREE_REGION,  /* REGION_FREE of the session's second region */
	FS_CTL_UNEXPORT,     /* B withdraws b.rw */
	FS_CTL_UNBIND,	     /* EP_UNBIND of the session's endpoint */
	FS_CTL_CLOSE_HANDLE, /* REMOTE_CLOSE of A's first handle */
	FS_CTL_PEER_REFUSE,  /* toggle: the peer layer refuses operations */
	FS_CTL_INFLIGHT,     /* toggle: max_inflight 2 / 4096 */
	FS_CTL_RELEASE,	     /* the session disconnects */
	FS_CTL_REVOKE,	     /* the peer withdraws the export behind A's remote handle */
	FS_CTL_N,
};

/* The fixture's ids (fuzz-sqe.c sets them up in this order). */
#define FS_REGION_BIG 1	  /* 4 pages, both sessions */
#define FS_REGION_SMALL 2 /* 1 page, both sessions */
#define FS_H_RW 1	  /* A: b.rw, read-write */
#define FS_H_RO 2	  /* A: b.ro, read-only */
#define FS_H_FAR 3	  /* A: an export on the peer */
#define FS_H_SELF 4	  /* A: its own a.self */
#define FS_EP 1		  /* each session's endpoint: a.ep, b.ep */
#define FS_D_B 1	  /* A's destinations: b.ep */
#define FS_D_SELF 2	  /* a.ep */
#define FS_D_NOBODY 3	  /* an endpoint nobody bound */
#define FS_D_FAR 4	  /* an endpoint on the peer */

#endif
