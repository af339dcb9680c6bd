/* SPDX-License-Identifier: MIT */
/*
 * An unauthenticated verbs connector (tests/vm/guest-peers.sh): connects to
 * rdmaproxyd's verbs peer listener with a well-formed CM hello, learns the
 * notify ring's address and rkey from the ACCEPT's private data, and tries
 * to RDMA WRITE into it without ever running the HMAC handshake.
 *
 *   vp-intruder HOST PORT
 *   vp-intruder HOST PORT hold
 *
 * Prints "write: <ibv_wc_status_str>" and exits 0 if the daemon's QP
 * refused the write (a remote access or invalid request NAK), 1 if the
 * write landed, 2 on anything else (setup failure, no answer). With "hold",
 * it writes nothing: once connected it prints "connected", then keeps the
 * connection until the daemon drops it (it never authenticates) and exits 0;
 * if the daemon refuses the connection it prints the reason the daemon gave
 * ("rejected: ...") and exits 3.
 */
#include <infiniband/verbs.h>
#include <netdb.h>
#include <stdbool.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "peer/verbs_peer_io.h" /* struct vp_cm_hello, VP_MAGIC, VP_VERSION, VP_NRING */

static struct rdma_cm_event *wait_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev)) {
		perror("rdma_get_cm_event");
		return NULL;
	}
	if (ev->event != want) {
		fprintf(stderr, "cm event %s (status %d), wanted %s\n", rdma_event_str(ev->event),
			ev->status, rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct addrinfo *ai, hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_conn_param p = { 0 };
	struct vp_cm_hello h = { 0 }, theirs;
	static uint8_t buf[sizeof(struct vp_notify)];
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc;
	time_t end;
	int n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	bool hold = argc == 4 && !strcmp(argv[3], "hold");

	if ((argc != 3 && !hold) || getaddrinfo(argv[1], argv[2], &hints, &ai)) {
		fprintf(stderr, "usage: vp-intruder HOST PORT [hold]\n");
		return 2;
	}
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, ai->ai_addr, 2000) ||
	    !(ev = wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED))) {
		perror("resolve address");
		return 2;
	}
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 2000) || !(ev = wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED))) {
		perror("resolve route");
		return 2;
	}
	rdma_ack_cm_event(ev);
	pd = ibv_alloc_pd(id->verbs);
	cq = pd ? ibv_create_cq(id->verbs, 16, NULL, NULL, 0) : NULL;
	mr = cq ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (!mr || rdma_create_qp(id, pd, &qa)) {
		perror("QP");
		return 2;
	}
	h.magic = VP_MAGIC;
	h.version = VP_VERSION;
	h.credits = 2;
	h.chunk = 4096;
	h.ring_slots = VP_NRING;
	h.ring_addr = (uintptr_t)buf; /* never used: we do not take part further */
	h.ring_rkey = mr->rkey;
	p.private_data = &h;
	p.private_data_len = sizeof(h);
	p.initiator_depth = p.responder_resources = 1;
	p.retry_count = 1;
	p.rnr_retry_count = 1;
	if (hold) {
		if (rdma_connect(id, &p) || rdma_get_cm_event(ch, &ev)) {
			perror("connect");
			return 2;
		}
		if (ev->event == RDMA_CM_EVENT_REJECTED) {
			const char *why = ev->param.conn.private_data;
			int len = (int)ev->param.conn.private_data_len;

			/* The daemon's reason: a NUL-terminated string in the private data. */
			printf("rejected: %.*s\n", why ? len : 0, why ? why : "");
			return 3;
		}
		if (ev->event != RDMA_CM_EVENT_ESTABLISHED) {
			fprintf(stderr, "cm event %s\n", rdma_event_str(ev->event));
			return 2;
		}
		rdma_ack_cm_event(ev);
		printf("connected\n");
		/* Until the daemon gives up on the handshake that never comes. */
		if (rdma_get_cm_event(ch, &ev) == 0) {
			printf("then %s\n", rdma_event_str(ev->event));
			rdma_ack_cm_event(ev);
		}
		return 0;
	}
	if (rdma_connect(id, &p) || !(ev = wait_event(ch, RDMA_CM_EVENT_ESTABLISHED))) {
		perror("connect");
		return 2;
	}
	if (!ev->param.conn.private_data || ev->param.conn.private_data_len < sizeof(theirs)) {
		fprintf(stderr, "no hello in the accept\n");
		return 2;
	}
	memcpy(&theirs, ev->param.conn.private_data, sizeof(theirs));
	rdma_ack_cm_event(ev);
	printf("connected: ring at %#llx rkey %#x, no handshake\n",
	       (unsigned long long)theirs.ring_addr, theirs.ring_rkey);

	/* A forged notify descriptor into slot 0 of its ring. */
	memset(buf, 0xee, sizeof(buf));
	sge.addr = (uintptr_t)buf;
	sge.length = sizeof(buf);
	sge.lkey = mr->lkey;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = theirs.ring_addr;
	wr.wr.rdma.rkey = theirs.ring_rkey;
	if (ibv_post_send(id->qp, &wr, &bad)) {
		perror("ibv_post_send");
		return 2;
	}
	end = time(NULL) + 30;
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && time(NULL) < end)
		;
	if (n != 1) {
		fprintf(stderr, "no completion\n");
		return 2;
	}
	printf("write: %s\n", ibv_wc_status_str(wc.status));
	rdma_disconnect(id);
	rdma_destroy_qp(id);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	freeaddrinfo(ai);
	if (wc.status == IBV_WC_SUCCESS)
		return 1;
	return wc.status == IBV_WC_REM_ACCESS_ERR || wc.status == IBV_WC_REM_INV_REQ_ERR ? 0 : 2;
}
