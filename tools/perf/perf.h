/* SPDX-License-Identifier: MIT */
/*
 * rdmaproxy-perf internals: the options, the control protocol between the
 * measuring side (client) and the exporting/receiving side (server), and the
 * per-test results. The control channel is a plain stream fd: a socketpair to
 * a forked server in the self-contained mode, a TCP connection with
 * --server/--client. Only setup and teardown cross it; the measured data path
 * is librdmaproxy alone.
 */
#ifndef RP_PERF_H
#define RP_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaproxy.h"

enum perf_op { PERF_WRITE, PERF_READ, PERF_SEND };
/* PERF_SYNC: one op outstanding, submit to completion (the full round trip). */
enum perf_metric { PERF_BW, PERF_LAT, PERF_SYNC };

#define PERF_MAX_TESTS 8
#define PERF_SLOT_BYTES (64u << 20) /* cap on a region's slot area */
#define PERF_DEFAULT_PORT 18599

struct perf_test {
	enum perf_op op;
	enum perf_metric metric;
};

struct perf_opts {
	struct perf_test tests[PERF_MAX_TESTS];
	int ntests;
	size_t sizes[32];
	int nsizes;
	long iters;	  /* per size; 0 = by duration */
	bool iters_given; /* -n given: no per-size byte cap */
	double duration;  /* -D seconds, 0 = by iterations */
	long warmup;	  /* -1 = default */
	int depth;	  /* -q */
	int clients;	  /* -c */
	int stagger_ms;	  /* --stagger: client w starts w * this many ms late */
	const char *peer; /* -P, NULL = local node */
	const char *socket;
	bool events; /* -e: sleep in rp_wait instead of spinning */
	bool verify;
	bool json;
	bool quiet;
	bool progress;
	int role; /* 0 self-contained, 1 server, 2 client */
	const char *host;
	int port;
};

/* Control messages (host byte order: both ends run this binary). */
enum perf_msg_type { MSG_SETUP = 1, MSG_READY, MSG_FINISH, MSG_DONE, MSG_QUIT };

struct perf_msg {
	uint32_t type;
	int32_t status;	 /* replies: 0 or a negative code */
	uint32_t op;	 /* enum perf_op */
	uint32_t metric; /* enum perf_metric */
	uint64_t size;
	uint32_t nslots; /* data slots of @size in each side's region */
	uint32_t depth;
	uint64_t seed;
	uint32_t verify;
	uint32_t rx_posted; /* READY (send bw): receives posted up front */
	uint64_t count;	    /* FINISH: ops the client completed OK; DONE: ops the server saw */
	uint64_t sum;	    /* DONE: checksum (see perf-server.c) */
	char node[RP_NAME_LEN + 1];   /* SETUP: the client's node; READY: the server's */
	char c_name[RP_NAME_LEN + 1]; /* SETUP: client export + endpoint name */
	char s_name[RP_NAME_LEN + 1]; /* READY: server export + endpoint name */
};

/* One measured (test, size) of one client process. */
struct perf_result {
	int test;
	size_t size;
	uint64_t ops;	 /* completed OK */
	uint64_t errors; /* completed with an error */
	uint64_t bytes;
	double t0, t1; /* CLOCK_MONOTONIC µs, measured phase */
	int verified;  /* -1 not checked, 0 mismatch, 1 match */
	uint32_t nsamples;
	double *samples; /* latency, µs per op (one-way for ping-pong) */
};

/* Shared pieces (perf-util.c). */
double perf_now_us(void);
uint64_t perf_fnv1a(const void *p, size_t n);
void perf_fill(void *p, size_t n, uint64_t seed);
int perf_write_full(int fd, const void *buf, size_t n);
int perf_read_full(int fd, void *buf, size_t n);
int perf_send_msg(int fd, struct perf_msg *m);
/*
 * Export @r as @name for the other side: on @peer (NULL: this node, where
 * it runs as the same user and may open it anyway) its node is named.
 */
int perf_export(struct rp_region *r, const char *name, unsigned access, const char *peer);
int perf_recv_msg(int fd, struct perf_msg *m, uint32_t want);
bool perf_fd_closed(int fd);
const char *perf_op_name(enum perf_op op);
size_t perf_nslots(size_t size, int depth);
void perf_set_name(char *dst, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The server side of one control connection (perf-server.c). */
int perf_serve(const char *socket, int ctl);

/* The measuring side (perf-client.c): one (test, size) on an open client. */
struct perf_client;
int perf_client_new(const struct perf_opts *o, int ctl, struct perf_client **ret);
void perf_client_free(struct perf_client *pc);
int perf_client_run(struct perf_client *pc, int test, size_t size, long iters, long warmup,
		    struct perf_result *res, void (*sync)(void *), void *sync_arg);
const char *perf_client_node(const struct perf_client *pc);
const char *perf_last_error(void);
void perf_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
