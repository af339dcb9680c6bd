/* SPDX-License-Identifier: MIT */
/*
 * Internal: the control connection to rdmaproxyd (socket path, hello,
 * request/reply). Shared by librdmaproxy and the command-line tools; never
 * installed. Functions return 0 or a negative errno / -RP_E* code.
 */
#ifndef RP_LIBCLIENT_CONN_H
#define RP_LIBCLIENT_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "rp-proto.h"

struct rp_conn {
	int fd;
	uint32_t seq;
	struct rp_hello_reply hello; /* valid after conn_open() */
};

/* The socket path rp_connect(NULL) uses, into @buf. -ENAMETOOLONG if it does not fit. */
int conn_socket_path(const char *path, char *buf, size_t len);

/*
 * Connect to @path (NULL: as conn_socket_path()) and say hello. On success
 * the hello's fds (RP_HELLO_FDS of them) are stored in @fds when it is not
 * NULL, else closed. Errors: -ENOENT/-ECONNREFUSED/..., -EPROTONOSUPPORT,
 * -RP_EDENIED, -RP_ELIMIT_CONN, -EPROTO.
 */
int conn_open(struct rp_conn *c, const char *path, int *fds);

/*
 * Send a request (with @fd attached if >= 0; it stays the caller's) and wait
 * for its reply. The reply body is copied into @reply, which must be exactly
 * @replylen bytes long in a successful reply. Returns the reply's status
 * (0 or negative), -RP_EDAEMON if the daemon hung up, -EPROTO on a malformed
 * reply.
 */
int conn_request(struct rp_conn *c, uint16_t type, const void *body, size_t len, int fd,
		 void *reply, size_t replylen);

/*
 * Send one request (with @fd attached if >= 0) without waiting: for callers
 * with replies of their own shape (the admin tool's pages). 0 or <0.
 */
int conn_send(struct rp_conn *c, uint16_t type, const void *body, size_t len, int fd);

void conn_close(struct rp_conn *c);

#endif
