/* SPDX-License-Identifier: MIT */
/*
 * The shared ring layout and its helpers: sizes and offsets both sides rely
 * on, index validation against hostile values, wrap-around, the
 * needs-wakeup handshake, and a two-thread producer/consumer run in which
 * every entry must arrive exactly once and in order.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rp-ring.h"
#include "tap.h"

#define N_ITEMS 2000000u

static _Alignas(64) char area[1 << 16];

static void test_layout(void)
{
	struct rp_ring_view v;
	size_t need = rp_ring_bytes(256, 1024);

	tap_is_int(need, 512 + 256 * 64 + 1024 * 32, "ring bytes for 256/1024 entries");
	tap_ok(rp_ring_view_init(&v, area, sizeof(area), 256, 1024) == 0, "view fits 64 KiB");
	tap_is_int((char *)v.sq - area, RP_RING_SQ_CTL_OFF, "sq control offset");
	tap_is_int((char *)v.cq - area, RP_RING_CQ_CTL_OFF, "cq control offset");
	tap_is_int((char *)v.sqes - area, RP_RING_SQES_OFF, "sqe array offset");
	tap_is_int((char *)v.cqes - area, RP_RING_SQES_OFF + 256 * 64, "cqe array offset");
	tap_is_int((char *)&v.sq->consumer - (char *)&v.sq->producer, 64,
		   "producer and consumer on separate cache lines");
	tap_is_int((char *)&v.sq->flags - (char *)&v.sq->consumer, 64, "flags on its own line");
	tap_ok(rp_ring_view_init(&v, area, need - 1, 256, 1024) < 0, "too small an area refused");
	tap_ok(rp_ring_view_init(&v, area, sizeof(area), 100, 1024) < 0,
	       "non-power-of-two entries refused");
	tap_ok(rp_ring_view_init(&v, area, sizeof(area), 0, 1024) < 0, "zero entries refused");
}

static void test_count(void)
{
	tap_is_int(rp_ring_count(0, 0, 8), 0, "empty");
	tap_is_int(rp_ring_count(8, 0, 8), 8, "full");
	tap_is_int(rp_ring_count(9, 0, 8), -1, "over-full is corruption");
	tap_is_int(rp_ring_count(0, 1, 8), -1, "consumer ahead of producer is corruption");
	tap_is_int(rp_ring_count(3, UINT32_MAX - 2, 8), 6, "count across the 32-bit wrap");
	tap_is_int(rp_ring_count(0x80000000u, 0, 8), -1, "garbage index refused");
}

static void test_wakeup(void)
{
	struct rp_ring_view v;

	memset(area, 0, sizeof(area));
	rp_ring_view_init(&v, area, sizeof(area), 8, 8);
	tap_ok(!rp_ring_take_wakeup(v.sq, RP_RING_NEED_WAKEUP), "no doorbell when not armed");
	rp_ring_arm(v.sq, RP_RING_NEED_WAKEUP);
	tap_ok(rp_ring_take_wakeup(v.sq, RP_RING_NEED_WAKEUP), "doorbell when armed");
	tap_ok(!rp_ring_take_wakeup(v.sq, RP_RING_NEED_WAKEUP), "one doorbell per arming");
	rp_ring_arm(v.sq, RP_RING_STALLED);
	tap_ok(!rp_ring_take_wakeup(v.sq, RP_RING_NEED_WAKEUP), "flags are independent");
	tap_ok(rp_ring_take_wakeup(v.sq, RP_RING_STALLED), "stalled flag taken");
}

/* Single-threaded wrap-around through many laps of a small ring. */
static void test_wrap(void)
{
	struct rp_ring_view v;
	uint32_t prod = UINT32_MAX - 20, cons = prod, i, bad = 0;

	memset(area, 0, sizeof(area));
	rp_ring_view_init(&v, area, sizeof(area), 8, 8);
	for (i = 0; i < 1000; i++) {
		unsigned k, n = 1 + i % 8;

		for (k = 0; k < n; k++) {
			v.sqes[prod & 7].cookie = prod;
			prod++;
		}
		if (rp_ring_count(prod, cons, 8) != n)
			bad++;
		for (k = 0; k < n; k++) {
			if (v.sqes[cons & 7].cookie != cons)
				bad++;
			cons++;
		}
	}
	tap_is_int(bad, 0, "1000 laps across the index wrap, every entry in place");
}

struct pc {
	struct rp_ring_view v;
	uint64_t sum;
	unsigned errors;
};

static void *producer(void *arg)
{
	struct pc *p = arg;
	uint32_t tail = 0, i = 0;

	while (i < N_ITEMS) {
		if (rp_ring_count(tail, rp_ring_load(&p->v.sq->consumer), p->v.sq_entries) ==
		    p->v.sq_entries)
			continue;
		p->v.sqes[tail & (p->v.sq_entries - 1)].cookie = i++;
		rp_ring_store(&p->v.sq->producer, ++tail);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	struct pc *p = arg;
	uint32_t head = 0, want = 0;

	while (want < N_ITEMS) {
		uint32_t prod = rp_ring_load(&p->v.sq->producer);

		if (rp_ring_count(prod, head, p->v.sq_entries) < 0) {
			p->errors++;
			break;
		}
		while (head != prod) {
			uint64_t c = p->v.sqes[head & (p->v.sq_entries - 1)].cookie;

			if (c != want)
				p->errors++;
			p->sum += c;
			want++;
			rp_ring_store(&p->v.sq->consumer, ++head);
		}
	}
	return NULL;
}

static void test_threads(void)
{
	struct pc p = { 0 };
	pthread_t a, b;

	memset(area, 0, sizeof(area));
	rp_ring_view_init(&p.v, area, sizeof(area), 64, 64);
	pthread_create(&b, NULL, consumer, &p);
	pthread_create(&a, NULL, producer, &p);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	tap_is_int(p.errors, 0, "2M entries through a 64-entry ring between threads, in order");
	tap_ok(p.sum == (uint64_t)N_ITEMS * (N_ITEMS - 1) / 2, "every entry exactly once (sum)");
}

int main(void)
{
	test_layout();
	test_count();
	test_wakeup();
	test_wrap();
	test_threads();
	tap_plan_done();
	return tap_exit();
}
