/* SPDX-License-Identifier: MIT */
/* The control connection: socket path, hello, request/reply. */
#include "conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "rdmaproxy.h"
#include "rp-fdpass.h"

#define MAX_REPLY_FDS 8

int conn_socket_path(const char *path, char *buf, size_t len)
{
	const char *env = getenv(RP_SOCKET_ENV), *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	int n;

	if (path && *path)
		n = snprintf(buf, len, "%s", path);
	else if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (geteuid() != 0 && xdg && *xdg && stat(RP_DEFAULT_SOCKET_PATH, &st) < 0)
		n = snprintf(buf, len, "%s/rdmaproxy/rdmaproxy.sock", xdg);
	else
		n = snprintf(buf, len, "%s", RP_DEFAULT_SOCKET_PATH);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static void close_fds(int *fds, int n)
{
	int i;

	for (i = 0; i < n; i++)
		close(fds[i]);
}

int conn_send(struct rp_conn *c, uint16_t type, const void *body, size_t len, int fd)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	struct rp_hdr *h = (struct rp_hdr *)buf;
	union {
		struct cmsghdr a;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(*h) + len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (sizeof(*h) + len > sizeof(buf))
		return -EMSGSIZE;
	memset(h, 0, sizeof(*h));
	h->len = (uint32_t)(sizeof(*h) + len);
	h->type = type;
	h->seq = ++c->seq;
	if (len)
		memcpy(buf + sizeof(*h), body, len);
	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.b;
		mh.msg_controllen = sizeof(ctl.b);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	do
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EPIPE || errno == ECONNRESET ? -RP_EDAEMON : -errno;
	return 0;
}

/* Receive the reply to the last request. fds (only hello has any) into @fds. */
static int recv_reply(struct rp_conn *c, uint16_t type, void *reply, size_t replylen, int *fds,
		      int *nfds)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	const struct rp_hdr *h = (const struct rp_hdr *)buf;
	union {
		struct cmsghdr a;
		char b[CMSG_SPACE(sizeof(int) * MAX_REPLY_FDS)];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	size_t body;
	ssize_t n;

	mh.msg_control = ctl.b;
	mh.msg_controllen = sizeof(ctl.b);
	do
		n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	*nfds = n > 0 ? rp_take_fds(&mh, fds, MAX_REPLY_FDS) : 0;
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return -RP_EDAEMON;
	if (n < 0)
		return -errno;
	body = (size_t)n - sizeof(*h);
	if ((size_t)n < sizeof(*h) || h->len != (size_t)n || h->type != (type | RP_MSG_REPLY) ||
	    h->seq != c->seq || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || h->status > 0 ||
	    (body != replylen && !(h->status < 0 && body == 0)))
		goto out_proto;
	if (body)
		memcpy(reply, buf + sizeof(*h), body);
	return h->status;

out_proto:
	close_fds(fds, *nfds);
	*nfds = 0;
	return -EPROTO;
}

int conn_request(struct rp_conn *c, uint16_t type, const void *body, size_t len, int fd,
		 void *reply, size_t replylen)
{
	int fds[MAX_REPLY_FDS], nfds = 0, r;

	r = conn_send(c, type, body, len, fd);
	if (r == 0)
		r = recv_reply(c, type, reply, replylen, fds, &nfds);
	if (nfds) {
		/* Only the hello reply carries fds. */
		close_fds(fds, nfds);
		r = -EPROTO;
	}
	return r;
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static int hello(struct rp_conn *c, int *ret_fds)
{
	struct rp_hello req = {
		.magic = RP_PROTO_MAGIC,
		.version_min = RP_PROTO_VERSION_MIN,
		.version_max = RP_PROTO_VERSION_MAX,
	};
	int fds[MAX_REPLY_FDS], nfds = 0, r;

	r = conn_send(c, RP_MSG_HELLO, &req, sizeof(req), -1);
	if (r == 0)
		r = recv_reply(c, RP_MSG_HELLO, &c->hello, sizeof(c->hello), fds, &nfds);
	if (r == -EACCES)
		r = -RP_EDENIED;
	if (r == 0 &&
	    (nfds != RP_HELLO_FDS || c->hello.magic != RP_PROTO_MAGIC ||
	     c->hello.version < RP_PROTO_VERSION_MIN || c->hello.version > RP_PROTO_VERSION_MAX ||
	     !memchr(c->hello.node_name, 0, sizeof(c->hello.node_name))))
		r = -EPROTO;
	if (r == 0 && ret_fds) {
		memcpy(ret_fds, fds, sizeof(int) * RP_HELLO_FDS);
		nfds = 0;
	}
	close_fds(fds, nfds);
	return r;
}

int conn_open(struct rp_conn *c, const char *path, int *fds)
{
	char buf[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	int r;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	r = conn_socket_path(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	r = connect_to(buf);
	if (r < 0)
		return r;
	c->fd = r;
	r = hello(c, fds);
	if (r < 0)
		conn_close(c);
	return r;
}

void conn_close(struct rp_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}
