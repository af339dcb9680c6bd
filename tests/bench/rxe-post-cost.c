/* SPDX-License-Identifier: MIT */
/*
 * rxe-post-cost: what one RDMA WRITE costs the thread that posts it, and when
 * its data lands, on the first RDMA device (Soft-RoCE in the test guest).
 * Run by hand; no timing is asserted anywhere:
 *
 *   tests/vm/rp-vm run -- tests/bench/rxe-post-cost [--self] [-s SIZE]
 *       [-n ITERS] [--gid N] [--region BYTES]
 *
 * Each iteration writes a new value into the last byte of SIZE bytes and
 * posts one signalled RDMA WRITE of them from one QP to another (--self: to
 * itself, as the daemon's loopback lanes do), then waits for the completion.
 * A second thread spins on the target byte. Printed, over the iterations after
 * the first tenth: how long ibv_post_send() took, and how long after the
 * post started the peer could see the data.
 *
 * Why: rxe does a user QP's whole protocol work inside the post's write()
 * system call: the request, the responder writing the data, the ACK, the
 * completion. The data is visible about halfway through. A ping-pong between
 * two processes (ib_write_lat) overlaps the second half of one side's call
 * with the other side's next post. A daemon thread that posts both directions
 * cannot: its half round trip is at least the whole call.
 *
 * Exit status: 0, 1 on an error, 77 without a device.
 */
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench-util.h"

#define WAIT_US 2e6 /* a write whose data has not landed by then: error */

static _Atomic uint8_t *target;
static _Atomic unsigned want;	  /* the value the watcher waits for */
static _Atomic unsigned seen_for; /* the value @landed is for */
static double landed;		  /* when the watcher saw it (bench_now_us()) */
static _Atomic bool stop;

static void *watch(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		unsigned w = atomic_load_explicit(&want, memory_order_acquire);

		/*
		 * A stale @w (the last write's) finds seen_for == w already, so a
		 * late look never stamps the current write.
		 */
		if (atomic_load_explicit(&seen_for, memory_order_relaxed) != w &&
		    atomic_load_explicit(target, memory_order_relaxed) == w) {
			landed = bench_now_us();
			atomic_store_explicit(&seen_for, w, memory_order_release);
		}
	}
	return NULL;
}

static struct ibv_qp *qp_new(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64,
			 .max_recv_wr = 1,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &ia);
}

static int qp_connect(struct ibv_qp *q, uint32_t dqpn, const union ibv_gid *gid,
		      unsigned long gid_index, const struct ibv_port_attr *pa)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE,
	};

	if (ibv_modify_qp(q, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = pa->active_mtu;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = 1;
	a.ah_attr.dlid = pa->lid;
	if (pa->link_layer == IBV_LINK_LAYER_ETHERNET) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = *gid;
		a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	if (ibv_modify_qp(q, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(q, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)
		       ? -1
		       : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rxe-post-cost [--self] [-s SIZE] [-n ITERS] [--gid N] [--region BYTES]\n");
}

static int bad_arg(const char *opt, const char *val)
{
	fprintf(stderr, "rxe-post-cost: invalid value '%s' for %s\n", val, opt);
	usage(stderr);
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "self", no_argument, NULL, 'S' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "gid", required_argument, NULL, 'g' },
		{ "region", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long size = 2, region = 1u << 20, iters = 5000, gid_index = 0;
	size_t skip, i;
	int self = 0, c, ndev, rc = 1;
	struct ibv_device **dl;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct ibv_mr *msrc, *mdst;
	struct ibv_qp *a, *b;
	uint8_t *src, *dst;
	double *post, *land;
	struct bench_stats st;
	pthread_t th;

	while ((c = getopt_long(argc, argv, "s:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'S':
			self = 1;
			break;
		case 's':
			if (!bench_parse_ulong(optarg, 1, 1ul << 30, &size))
				return bad_arg("-s", optarg);
			break;
		case 'n':
			if (!bench_parse_ulong(optarg, 10, 10000000, &iters))
				return bad_arg("-n", optarg);
			break;
		case 'g':
			if (!bench_parse_ulong(optarg, 0, 255, &gid_index))
				return bad_arg("--gid", optarg);
			break;
		case 'r':
			if (!bench_parse_ulong(optarg, 1, 1ul << 36, &region))
				return bad_arg("--region", optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (region < size) {
		fprintf(stderr,
			"rxe-post-cost: the region (%lu B) is smaller than a write (%lu B)\n",
			region, size);
		return 2;
	}
	dl = ibv_get_device_list(&ndev);
	if (!dl || ndev < 1) {
		fprintf(stderr, "rxe-post-cost: no RDMA device\n");
		return 77;
	}
	ctx = ibv_open_device(dl[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = ctx ? ibv_create_cq(ctx, 256, NULL, NULL, 0) : NULL;
	if (!pd || !cq || ibv_query_port(ctx, 1, &pa) ||
	    ibv_query_gid(ctx, 1, (int)gid_index, &gid)) {
		fprintf(stderr, "rxe-post-cost: opening %s: %s\n", ibv_get_device_name(dl[0]),
			strerror(errno));
		return 1;
	}
	src = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE,
		   -1, 0);
	dst = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE,
		   -1, 0);
	if (src == MAP_FAILED || dst == MAP_FAILED) {
		perror("rxe-post-cost: mmap");
		return 1;
	}
	msrc = ibv_reg_mr(pd, src, region, IBV_ACCESS_LOCAL_WRITE);
	mdst = ibv_reg_mr(pd, dst, region, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	a = qp_new(pd, cq);
	b = self ? a : qp_new(pd, cq);
	if (!msrc || !mdst || !a || !b || qp_connect(a, b->qp_num, &gid, gid_index, &pa) ||
	    (!self && qp_connect(b, a->qp_num, &gid, gid_index, &pa))) {
		fprintf(stderr, "rxe-post-cost: setting up the QPs: %s\n", strerror(errno));
		return 1;
	}
	post = calloc((size_t)iters, sizeof(*post));
	land = calloc((size_t)iters, sizeof(*land));
	target = (_Atomic uint8_t *)&dst[size - 1];
	if (!post || !land || pthread_create(&th, NULL, watch, NULL)) {
		fprintf(stderr, "rxe-post-cost: out of memory or threads\n");
		return 1;
	}
	for (i = 0; i < (size_t)iters; i++) {
		uint8_t v = (uint8_t)(i % 250 + 1);
		struct ibv_sge sge = { .addr = (uintptr_t)src,
				       .length = (uint32_t)size,
				       .lkey = msrc->lkey };
		struct ibv_send_wr wr = {
			.wr_id = i,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)dst, .rkey = mdst->rkey },
		};
		struct ibv_send_wr *bad;
		struct ibv_wc wc;
		double t0, t1, seen;
		int n;

		src[size - 1] = v;
		atomic_store_explicit(&want, v, memory_order_release);
		t0 = bench_now_us();
		if ((errno = ibv_post_send(a, &wr, &bad))) {
			perror("rxe-post-cost: ibv_post_send");
			goto out;
		}
		t1 = bench_now_us();
		while (atomic_load_explicit(&seen_for, memory_order_acquire) != v)
			if (bench_now_us() - t0 > WAIT_US) {
				fprintf(stderr, "rxe-post-cost: write %zu never landed\n", i);
				goto out;
			}
		seen = landed;
		while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
			if (bench_now_us() - t0 > WAIT_US) {
				fprintf(stderr, "rxe-post-cost: no completion for write %zu\n", i);
				goto out;
			}
		if (n < 0 || wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "rxe-post-cost: write %zu: %s\n", i,
				n < 0 ? "polling the CQ failed" : ibv_wc_status_str(wc.status));
			goto out;
		}
		post[i] = t1 - t0;
		land[i] = seen - t0;
	}
	skip = (size_t)iters / 10;
	printf("rxe-post-cost: %s, %s QP%s, %lu B writes, GID %lu, %lu B regions, %zu iterations\n",
	       ibv_get_device_name(dl[0]), self ? "one" : "two", self ? " (to itself)" : "s", size,
	       gid_index, region, (size_t)iters - skip);
	/* post: until ibv_post_send() returns; visible: until the other thread saw the data. */
	bench_stats(post + skip, (size_t)iters - skip, &st);
	bench_print_stats("post", &st, false);
	bench_stats(land + skip, (size_t)iters - skip, &st);
	bench_print_stats("visible", &st, false);
	rc = 0;
out:
	atomic_store(&stop, true);
	pthread_join(th, NULL);
	return rc;
}
