/* SPDX-License-Identifier: MIT */
/* Internal: the library's objects, shared by its source files. */
#ifndef RP_LIBCLIENT_CLIENT_H
#define RP_LIBCLIENT_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "rdmaproxy.h"
#include "rp-ring.h"

struct rp_region {
	struct rp_client *c;
	uint32_t id;
	void *ptr;
	size_t len;
};

struct rp_remote {
	struct rp_client *c;
	struct rp_remote *prev, *next;
	uint32_t id;
	uint32_t access;
	uint64_t len;
};

struct rp_endpoint {
	struct rp_client *c;
	struct rp_endpoint *prev, *next;
	uint32_t id;
};

struct rp_dest {
	struct rp_dest *next;
	uint32_t id;
	char peer[RP_NAME_MAX];
	char name[RP_NAME_MAX];
};

struct rp_client {
	struct rp_conn conn;
	void *ring_base;
	size_t ring_size;
	struct rp_ring_view v;
	int sq_efd, cq_efd;
	uint32_t sq_tail; /* private producer index */
	uint32_t cq_head; /* private consumer index */
	bool dead;
	bool fd_user; /* rp_fd() was asked for: empty polls must leave the doorbell armed */
	uint8_t wait_mode;    /* enum rp_wait_mode */
	uint32_t spin_ns;     /* rp_wait()'s current spin before sleeping (adaptive) */
	uint64_t next_check_ns; /* when an empty poll next looks at the daemon's socket */
	struct rp_region **regions; /* by id - 1 */
	uint32_t n_regions;
	struct rp_remote *remotes;
	struct rp_endpoint *endpoints;
	struct rp_dest *dests;
};

/* ring.c */
int client_submit(struct rp_client *c, const struct rp_sqe *q);
/* The waiting policy from RDMAPROXY_WAIT (rp_connect()). */
void client_wait_init(struct rp_client *c);
/* Check a region and a range of it for an operation of @c. */
int client_check_range(struct rp_client *c, const struct rp_region *r, size_t off, size_t len);

#endif
