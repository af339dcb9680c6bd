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
#include <time.h>

#define WAIT_NS 2000000000ull /* a write whose data has not landed by then: error */

static _Atomic uint8_t *target;
static _Atomic unsigned want;	/* the value the watcher waits for; 0: none */
static _Atomic uint64_t landed; /* when it saw it */
static _Atomic bool stop;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void *watch(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		unsigned w = atomic_load_explicit(&want, memory_order_acquire);

		if (w && atomic_load_explicit(target, memory_order_relaxed) == w &&
		    !atomic_load_explicit(&landed, memory_order_relaxed))
			atomic_store_explicit(&landed, now_ns(), memory_order_release);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
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

static int qp_connect(struct ibv_qp *q, uint32_t dqpn, const union ibv_gid *gid, int gid_index,
		      const struct ibv_port_attr *pa)
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

static void print_stats(const char *what, uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	printf("%-34s median %8.2f us   p10 %8.2f   p90 %8.2f   p99 %8.2f\n", what, v[n / 2] / 1e3,
	       v[n / 10] / 1e3, v[n * 9 / 10] / 1e3, v[n * 99 / 100] / 1e3);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rxe-post-cost [--self] [-s SIZE] [-n ITERS] [--gid N] [--region BYTES]\n");
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
	size_t size = 2, region = 1u << 20, skip, i;
	long iters = 5000;
	int gid_index = 0, self = 0, c, ndev, rc = 1;
	struct ibv_device **dl;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct ibv_mr *msrc, *mdst;
	struct ibv_qp *a, *b;
	uint8_t *src, *dst;
	uint64_t *post, *land;
	pthread_t th;

	while ((c = getopt_long(argc, argv, "s:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'S':
			self = 1;
			break;
		case 's':
			size = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			iters = strtol(optarg, NULL, 0);
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 'r':
			region = strtoull(optarg, NULL, 0);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (size < 1 || region < size || iters < 10 || gid_index < 0 || gid_index > 255) {
		fprintf(stderr,
			"rxe-post-cost: need 1 <= SIZE <= REGION, ITERS >= 10, GID 0-255\n");
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
	if (!pd || !cq || ibv_query_port(ctx, 1, &pa) || ibv_query_gid(ctx, 1, gid_index, &gid)) {
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
		uint64_t t0, t1, seen;
		int n;

		src[size - 1] = v;
		atomic_store(&landed, 0);
		atomic_store_explicit(&want, v, memory_order_release);
		t0 = now_ns();
		if ((errno = ibv_post_send(a, &wr, &bad))) {
			perror("rxe-post-cost: ibv_post_send");
			goto out;
		}
		t1 = now_ns();
		while (!(seen = atomic_load_explicit(&landed, memory_order_acquire)))
			if (now_ns() - t0 > WAIT_NS) {
				fprintf(stderr, "rxe-post-cost: write %zu never landed\n", i);
				goto out;
			}
		atomic_store(&want, 0);
		while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
			if (now_ns() - t0 > WAIT_NS) {
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
	printf("rxe-post-cost: %s, %s QP%s, %zu B writes, GID %d, %zu B regions, %zu iterations\n",
	       ibv_get_device_name(dl[0]), self ? "one" : "two", self ? " (to itself)" : "s", size,
	       gid_index, region, (size_t)iters - skip);
	print_stats("ibv_post_send() returns after", post + skip, (size_t)iters - skip);
	print_stats("the data is visible after", land + skip, (size_t)iters - skip);
	rc = 0;
out:
	atomic_store(&stop, true);
	pthread_join(th, NULL);
	return rc;
}
