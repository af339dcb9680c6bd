/* SPDX-License-Identifier: MIT */
/*
 * The per-client data path: a submission ring (client produces, daemon
 * consumes) and a completion ring (daemon produces, client consumes) in one
 * sealed memfd created by the daemon, io_uring style.
 *
 * Layout (offsets in bytes):
 *   0                   struct rp_ring_info
 *   RP_RING_SQ_CTL_OFF  struct rp_ring_ctl for the submission ring
 *   RP_RING_CQ_CTL_OFF  struct rp_ring_ctl for the completion ring
 *   RP_RING_SQES_OFF    struct rp_sqe[sq_entries]
 *   then                struct rp_cqe[cq_entries]
 * rounded up to the page size.
 *
 * Indexes are free-running uint32_t; entry i lives at [i & (entries - 1)].
 * Producer and consumer indexes sit on separate cache lines. A producer
 * publishes with a release store after writing the entry; a consumer reads
 * the index with an acquire load, copies the entry, then releases its own
 * index. Either side may be hostile: a reader always checks that
 * producer - consumer <= entries (rp_ring_count()) and treats anything else
 * as corruption.
 *
 * From protocol version 3 (RP_PROTO_VERSION_SEQ) each entry also carries
 * its own index, stored last with a release store: the submission entry's
 * seq (index + 1) and the completion entry's lap (rp_cqe_lap()). The
 * consumer polls the entry at its index instead of the producer index, so a
 * hand-off moves one cache line instead of two; the producer index is still
 * stored after it (wake-ups and the other side's count of free slots use
 * it). Before version 3 both are zero.
 *
 * Wake-ups: a side about to sleep sets its NEED_WAKEUP flag, issues a full
 * fence and re-checks the ring; the other side, after publishing, issues a
 * full fence and rings the doorbell only if the flag is set.
 */
#ifndef RP_RING_H
#define RP_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RP_RING_MAGIC 0x52494e47u /* "RING" */
#define RP_RING_SQ_CTL_OFF 64
#define RP_RING_CQ_CTL_OFF 256
#define RP_RING_SQES_OFF 512
#define RP_RING_SQ_ENTRIES 256
#define RP_RING_CQ_ENTRIES 1024

/* rp_ring_ctl.flags */
#define RP_RING_NEED_WAKEUP 0x1u /* the consumer sleeps: ring its doorbell */
#define RP_RING_STALLED 0x2u	 /* SQ only: the daemon waits for completion space */

/* rp_ring_info.cpus */
#define RP_CPUS_UNKNOWN 0u
#define RP_CPUS_FREE 1u
#define RP_CPUS_CROWDED 2u

struct rp_ring_info {
	uint32_t magic;
	uint32_t sq_entries;
	uint32_t cq_entries;
	uint32_t pad;
	uint64_t size;
	/*
	 * Advanced by the daemon at least every few passes of its engine while it
	 * polls this ring (relaxed stores; each field here is stored only when
	 * it changed): a waiting client spins only while it moves,
	 * since spinning pays only while the party it waits for is running.
	 * Still: the daemon is asleep or descheduled, and the client should
	 * sleep rather than take a CPU the daemon may need (or it is inside a
	 * long call, a device's post: see engine_cpu).
	 */
	_Atomic uint32_t daemon_passes;
	/*
	 * RP_CPUS_*, stored with daemon_passes: whether more tasks are runnable
	 * than the daemon has CPUs. Free: a spinning client has a CPU the daemon
	 * does not need, and spins with `pause` only; crowded (or unknown, from
	 * a daemon that does not say): it yields the CPU between polls.
	 */
	_Atomic uint32_t cpus;
	/*
	 * Stored with daemon_passes: the number of the engine's passes that
	 * found work (for any client). While the CPUs are crowded, a client
	 * spins without yielding only while this moves: the daemon is then
	 * running and busy, and a completion is microseconds away. An engine
	 * spinning idle moves daemon_passes but not this: whatever the client
	 * waits for (the daemon may be waiting for a client too) needs a CPU.
	 */
	_Atomic uint32_t daemon_work;
	/*
	 * Stored with daemon_passes: 1 + the CPU the engine's thread ran on
	 * when it last read its clock (every few passes, and on waking up); 0:
	 * not known (a daemon that does not say). A client that waits for data
	 * a device call may be delivering spins through a still engine only if
	 * the engine is on another CPU: on its own, it would take the CPU the
	 * engine waits for (librdmaproxy's RELAX_RESUME_MIN_NS).
	 */
	_Atomic uint32_t engine_cpu;
	uint8_t reserved[24];
};
_Static_assert(sizeof(struct rp_ring_info) == 64, "rp_ring_info");

struct rp_ring_ctl {
	_Alignas(64) _Atomic uint32_t producer;
	_Alignas(64) _Atomic uint32_t consumer;
	_Alignas(64) _Atomic uint32_t flags;
	/*
	 * Completion ring only (in what was the flags line's padding, so a
	 * daemon that does not store it leaves 0): CLOCK_MONOTONIC in ns just
	 * before the daemon last rang the completion doorbell, stored with
	 * release. A client that slept on the doorbell learns from it what a
	 * wake-up costs it on this machine right now (librdmaproxy: rp_relax()).
	 */
	_Atomic uint64_t rung_ns;
};
_Static_assert(sizeof(struct rp_ring_ctl) == 192, "rp_ring_ctl");

/* Submission opcodes. */
enum rp_sqe_op {
	RP_SQE_WRITE = 1,
	RP_SQE_READ = 2,
	RP_SQE_SEND = 3,
	RP_SQE_POST_RECV = 4,
};

struct rp_sqe {
	uint64_t cookie;
	uint64_t offset;	/* in the local region */
	uint64_t remote_offset; /* WRITE/READ: in the export */
	uint64_t len;
	uint32_t region; /* local region id */
	uint32_t target; /* WRITE/READ: remote id; SEND: dest id; POST_RECV: endpoint id */
	uint32_t imm;
	uint16_t opcode; /* enum rp_sqe_op */
	uint16_t flags;	 /* RP_NOTIFY */
	uint32_t seq;	 /* version 3: index + 1, stored last (rp_sqe_seq_store()); else 0 */
	uint8_t pad[12];
};
_Static_assert(sizeof(struct rp_sqe) == 64, "rp_sqe");

struct rp_cqe {
	uint64_t cookie; /* NOTIFY: 0; RECV: the posted buffer's cookie */
	uint64_t offset; /* NOTIFY: offset of the write in the region */
	uint32_t len;
	uint32_t imm;
	int32_t status;
	/*
	 * enum rp_op in bits 0-7; version 3: the entry's lap in bits 8-15
	 * (rp_cqe_lap()), stored last (rp_cqe_op_store()); before: 0.
	 */
	uint16_t op;
	uint16_t region; /* NOTIFY/RECV: region id (ids fit 16 bits: see limits) */
};
_Static_assert(sizeof(struct rp_cqe) == 32, "rp_cqe");

#define RP_CQE_OP_MASK 0xffu

/* Everything both sides derive from the info block. */
struct rp_ring_view {
	struct rp_ring_info *info;
	struct rp_ring_ctl *sq;
	struct rp_ring_ctl *cq;
	struct rp_sqe *sqes;
	struct rp_cqe *cqes;
	uint32_t sq_entries;
	uint32_t cq_entries;
};

static inline bool rp_ring_pow2(uint32_t n)
{
	return n && !(n & (n - 1));
}

/* Bytes of the shared area for these ring sizes (page rounding is the caller's). */
static inline size_t rp_ring_bytes(uint32_t sq_entries, uint32_t cq_entries)
{
	return RP_RING_SQES_OFF + (size_t)sq_entries * sizeof(struct rp_sqe) +
	       (size_t)cq_entries * sizeof(struct rp_cqe);
}

/* Point @v into @base of @size bytes. -1 if the sizes do not fit. */
static inline int rp_ring_view_init(struct rp_ring_view *v, void *base, size_t size,
				    uint32_t sq_entries, uint32_t cq_entries)
{
	char *b = (char *)base;

	if (!rp_ring_pow2(sq_entries) || !rp_ring_pow2(cq_entries) || sq_entries > (1u << 16) ||
	    cq_entries > (1u << 16) || rp_ring_bytes(sq_entries, cq_entries) > size)
		return -1;
	v->info = (struct rp_ring_info *)b;
	v->sq = (struct rp_ring_ctl *)(b + RP_RING_SQ_CTL_OFF);
	v->cq = (struct rp_ring_ctl *)(b + RP_RING_CQ_CTL_OFF);
	v->sqes = (struct rp_sqe *)(b + RP_RING_SQES_OFF);
	v->cqes = (struct rp_cqe *)(b + RP_RING_SQES_OFF +
				    (size_t)sq_entries * sizeof(struct rp_sqe));
	v->sq_entries = sq_entries;
	v->cq_entries = cq_entries;
	return 0;
}

/* Entries between @cons and @prod, or -1 if the pair cannot be valid. */
static inline int64_t rp_ring_count(uint32_t prod, uint32_t cons, uint32_t entries)
{
	uint32_t n = prod - cons;

	return n > entries ? -1 : (int64_t)n;
}

/*
 * Version 3: the lap bits (8-15 of rp_cqe.op) of completion entry @idx: the
 * number of times the ring has wrapped before it, plus 1, modulo 256. The
 * slot holds the entry of the lap before (or, in the first lap, zeroes),
 * which never matches; the index wraps at 2^32, a multiple of 256 laps.
 */
static inline uint16_t rp_cqe_lap(uint32_t idx, uint32_t entries)
{
	return (uint16_t)((((idx >> __builtin_ctz(entries)) + 1) & 0xffu) << 8);
}

/* Version 3: publish a written submission entry / completion entry (release). */
static inline void rp_sqe_seq_store(struct rp_sqe *e, uint32_t seq)
{
	__atomic_store_n(&e->seq, seq, __ATOMIC_RELEASE);
}

static inline uint32_t rp_sqe_seq_load(const struct rp_sqe *e)
{
	return __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
}

static inline void rp_cqe_op_store(struct rp_cqe *e, uint16_t op)
{
	__atomic_store_n(&e->op, op, __ATOMIC_RELEASE);
}

static inline uint16_t rp_cqe_op_load(const struct rp_cqe *e)
{
	return __atomic_load_n(&e->op, __ATOMIC_ACQUIRE);
}

/* Version 3: does @e, the slot of completion @idx, hold that entry yet (its lap)? */
static inline bool rp_cqe_ready(const struct rp_cqe *e, uint32_t idx, uint32_t entries)
{
	return (rp_cqe_op_load(e) & ~RP_CQE_OP_MASK) == rp_cqe_lap(idx, entries);
}

static inline uint32_t rp_ring_load(_Atomic uint32_t *p)
{
	return atomic_load_explicit(p, memory_order_acquire);
}

static inline void rp_ring_store(_Atomic uint32_t *p, uint32_t v)
{
	atomic_store_explicit(p, v, memory_order_release);
}

/* One step of a spin on shared memory: tell the CPU (and a hyperthread sibling). */
static inline void rp_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Set @bit, then a full fence so the caller's re-check sees new entries. */
static inline void rp_ring_arm(struct rp_ring_ctl *c, uint32_t bit)
{
	atomic_fetch_or_explicit(&c->flags, bit, memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
}

/*
 * After publishing: does the other side want a doorbell for @bit? Clears the
 * bit, so one doorbell answers one arming (the sleeper re-arms each time).
 */
static inline bool rp_ring_take_wakeup(struct rp_ring_ctl *c, uint32_t bit)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (!(atomic_load_explicit(&c->flags, memory_order_relaxed) & bit))
		return false;
	return atomic_fetch_and_explicit(&c->flags, ~bit, memory_order_seq_cst) & bit;
}

#endif
