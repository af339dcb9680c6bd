/* SPDX-License-Identifier: MIT */
/*
 * A raw-protocol probe for integration tests: speaks (or deliberately
 * mis-speaks) the control protocol without the client library, so tests can
 * check what the daemon does with good and bad input.
 *
 *   rp-probe SOCKET status           hello + status; prints key=value lines,
 *                                    with the pid and uid that SO_PEERCRED gives:
 *                                    the daemon's, unless it was socket-activated
 *                                    (then whoever called listen())
 *   rp-probe SOCKET version MIN MAX  hello with that version range
 *   rp-probe SOCKET garbage          send 7 random-ish bytes after hello
 *   rp-probe SOCKET nohello          send STATUS before HELLO
 *   rp-probe SOCKET fd               send STATUS with an fd attached
 *   rp-probe SOCKET oversize         send a packet larger than the maximum
 *   rp-probe SOCKET region KIND      register a region backed by KIND: good,
 *                                    unsealed, pipe, socket, devnull, disk, opath,
 *                                    size, rdonly, wseal; prints region_status= and
 *                                    region_error=; twofds and nofd expect a hang-up
 *
 * For the abuse modes it exits 0 if the daemon closed the connection, 1 if
 * it kept talking.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "rdmaproxy.h"
#include "rp-proto.h"

static int conn(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct timeval tv = { .tv_sec = 60 }; /* a bound, not a timing check (busy hosts) */

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "rp-probe: connect %s: %s\n", path, strerror(errno));
		exit(3);
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void send_msg(int fd, uint16_t type, uint32_t seq, const void *body, size_t len, int pass)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	struct rp_hdr *h = (struct rp_hdr *)buf;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(*h) + len };
	union {
		struct cmsghdr a;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	memset(h, 0, sizeof(*h));
	h->len = (uint32_t)(sizeof(*h) + len);
	h->type = type;
	h->seq = seq;
	if (len)
		memcpy(buf + sizeof(*h), body, len);
	if (pass >= 0) {
		struct cmsghdr *cm;

		mh.msg_control = ctl.b;
		mh.msg_controllen = sizeof(ctl.b);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass, sizeof(int));
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0) {
		fprintf(stderr, "rp-probe: send: %s\n", strerror(errno));
		exit(3);
	}
}

/* Returns the reply length, 0 on hang-up. */
static ssize_t recv_msg(int fd, void *buf, size_t len)
{
	ssize_t n = recv(fd, buf, len, 0);

	if (n < 0 && errno != ECONNRESET) {
		fprintf(stderr, "rp-probe: recv: %s\n", strerror(errno));
		exit(3);
	}
	return n < 0 ? 0 : n;
}

static int hello(int fd, uint16_t vmin, uint16_t vmax)
{
	struct rp_hello h = { .magic = RP_PROTO_MAGIC, .version_min = vmin, .version_max = vmax };
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	struct rp_hdr *rh = (struct rp_hdr *)buf;
	struct rp_hello_reply *rep = (struct rp_hello_reply *)(buf + sizeof(*rh));
	ssize_t n;

	send_msg(fd, RP_MSG_HELLO, 1, &h, sizeof(h), -1);
	n = recv_msg(fd, buf, sizeof(buf));
	if (n != (ssize_t)(sizeof(*rh) + sizeof(*rep))) {
		fprintf(stderr, "rp-probe: bad hello reply (%zd bytes)\n", n);
		return -EPROTO;
	}
	if (rh->status) {
		printf("hello_status=%d\nhello_error=%s\ndaemon_versions=%u..%u\n", rh->status,
		       strerror(-rh->status), rep->version_min, rep->version_max);
		return rh->status;
	}
	printf("hello=ok\nversion=%u\nnode=%s\ntransport=%s\nclient_id=%u\n", rep->version,
	       rep->node_name, rep->transport == RP_WIRE_TRANSPORT_VERBS ? "verbs" : "tcp",
	       rep->client_id);
	return 0;
}

static int status(int fd)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	struct rp_hdr *rh = (struct rp_hdr *)buf;
	struct rp_status_reply *s = (struct rp_status_reply *)(buf + sizeof(*rh));
	struct ucred cred;
	socklen_t len = sizeof(cred);

	send_msg(fd, RP_MSG_STATUS, 2, NULL, 0, -1);
	if (recv_msg(fd, buf, sizeof(buf)) != (ssize_t)(sizeof(*rh) + sizeof(*s)) || rh->status)
		return 1;
	printf("daemon_version=%s\nstatus_node=%s\ndevice=%s\nport=%u\nport_state=%s\nmtu=%u\n"
	       "gid=%s\nclients=%u\nuptime=%llu\n",
	       s->version, s->node_name, s->device, s->port, s->port_state, s->active_mtu, s->gid,
	       s->clients, (unsigned long long)s->uptime_sec);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
		printf("daemon_pid=%d\ndaemon_uid=%u\ndaemon_gid=%u\n", (int)cred.pid,
		       (unsigned)cred.uid, (unsigned)cred.gid);
	return 0;
}

/* 0 if the daemon hung up on us within the receive timeout. */
static int expect_hangup(int fd)
{
	char buf[RP_PROTO_MSG_MAX];

	return recv_msg(fd, buf, sizeof(buf)) == 0 ? 0 : 1;
}

static int memfd(size_t size, unsigned seals)
{
	int fd = memfd_create("probe", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    (seals && fcntl(fd, F_ADD_SEALS, seals) < 0))
		exit(3);
	return fd;
}

/* An fd of the requested kind; -1 for an unknown kind. */
static int region_fd(const char *kind, const char *self)
{
	int p[2], fd;
	char path[64];

	if (!strcmp(kind, "good"))
		return memfd(4096, F_SEAL_SHRINK | F_SEAL_GROW);
	if (!strcmp(kind, "unsealed"))
		return memfd(4096, 0);
	if (!strcmp(kind, "size"))
		return memfd(8192, F_SEAL_SHRINK | F_SEAL_GROW);
	if (!strcmp(kind, "wseal"))
		return memfd(4096, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
	if (!strcmp(kind, "pipe") && pipe2(p, O_CLOEXEC) == 0)
		return p[0];
	if (!strcmp(kind, "socket"))
		return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!strcmp(kind, "devnull"))
		return open("/dev/null", O_RDWR | O_CLOEXEC);
	if (!strcmp(kind, "disk")) /* this very program: a regular file on disk */
		return open(self, O_RDONLY | O_CLOEXEC);
	if (!strcmp(kind, "opath") || !strcmp(kind, "rdonly")) {
		fd = memfd(4096, F_SEAL_SHRINK | F_SEAL_GROW);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		return open(path, (!strcmp(kind, "opath") ? O_PATH : O_RDONLY) | O_CLOEXEC);
	}
	return -1;
}

static void send_two_fds(int fd, const void *body, size_t len, int a, int b)
{
	_Alignas(8) char buf[64];
	struct rp_hdr *h = (struct rp_hdr *)buf;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(*h) + len };
	union {
		struct cmsghdr a;
		char b[CMSG_SPACE(sizeof(int) * 2)];
	} ctl;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	int fds[2] = { a, b };

	memset(buf, 0, sizeof(buf));
	h->len = (uint32_t)(sizeof(*h) + len);
	h->type = RP_MSG_REGION_REG;
	h->seq = 9;
	memcpy(buf + sizeof(*h), body, len);
	mh.msg_control = ctl.b;
	mh.msg_controllen = sizeof(ctl.b);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0)
		exit(3);
}

static int region(int fd, const char *kind, const char *self)
{
	struct rp_region_reg req = { .len = 4096 };
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	struct rp_hdr *rh = (struct rp_hdr *)buf;
	int rfd;

	if (!strcmp(kind, "twofds")) {
		send_two_fds(fd, &req, sizeof(req), region_fd("good", self),
			     region_fd("good", self));
		return expect_hangup(fd);
	}
	if (!strcmp(kind, "nofd")) {
		send_msg(fd, RP_MSG_REGION_REG, 9, &req, sizeof(req), -1);
		return expect_hangup(fd);
	}
	rfd = region_fd(kind, self);
	if (rfd < 0) {
		fprintf(stderr, "rp-probe: cannot make a %s fd\n", kind);
		return 3;
	}
	send_msg(fd, RP_MSG_REGION_REG, 9, &req, sizeof(req), rfd);
	close(rfd);
	if (recv_msg(fd, buf, sizeof(buf)) != (ssize_t)(sizeof(*rh) + sizeof(struct rp_id)))
		return 1;
	printf("region_status=%d\nregion_error=%s\n", rh->status, rp_strerror(rh->status));
	return 0;
}

int main(int argc, char **argv)
{
	static _Alignas(8) char big[2 * RP_PROTO_MSG_MAX];
	int fd, r;

	if (argc < 3) {
		fprintf(stderr, "usage: rp-probe SOCKET status|version MIN MAX|garbage|nohello|fd|"
				"oversize\n");
		return 2;
	}
	fd = conn(argv[1]);
	if (!strcmp(argv[2], "version") && argc == 5)
		return hello(fd, (uint16_t)atoi(argv[3]), (uint16_t)atoi(argv[4])) ? 1 : 0;
	if (!strcmp(argv[2], "nohello")) {
		send_msg(fd, RP_MSG_STATUS, 1, NULL, 0, -1);
		return expect_hangup(fd);
	}
	r = hello(fd, RP_PROTO_VERSION_MIN, RP_PROTO_VERSION_MAX);
	if (r)
		return 1;
	if (!strcmp(argv[2], "status"))
		return status(fd);
	if (!strcmp(argv[2], "garbage")) {
		if (send(fd, "\x07garbag", 7, 0) < 0)
			return 3;
		return expect_hangup(fd);
	}
	if (!strcmp(argv[2], "fd")) {
		int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

		send_msg(fd, RP_MSG_STATUS, 2, NULL, 0, devnull);
		return expect_hangup(fd);
	}
	if (!strcmp(argv[2], "region") && argc == 4)
		return region(fd, argv[3], "/proc/self/exe");
	if (!strcmp(argv[2], "oversize")) {
		struct rp_hdr *h = (struct rp_hdr *)big;

		h->len = sizeof(big);
		h->type = RP_MSG_STATUS;
		if (send(fd, big, sizeof(big), MSG_NOSIGNAL) < 0)
			return 3;
		return expect_hangup(fd);
	}
	fprintf(stderr, "rp-probe: unknown mode %s\n", argv[2]);
	return 2;
}
