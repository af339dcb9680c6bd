/* SPDX-License-Identifier: MIT */
/*
 * The client control protocol, without sockets: ctl_validate() for every
 * message type, and session_dispatch() for every request with its success
 * and error statuses, the HELLO admission rules, and the protocol violations
 * that end a session (a negative return the glue turns into a disconnect).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../daemon/base/log.h"
#include "core-harness.h"
#include "tap.h"

static struct th t;

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* ---- ctl_validate ---- */

static const struct {
	uint16_t type;
	size_t size;
	const char *name;
} types[] = {
	{ RP_MSG_HELLO, sizeof(struct rp_hello), "HELLO" },
	{ RP_MSG_REGION_REG, sizeof(struct rp_region_reg), "REGION_REG" },
	{ RP_MSG_REGION_FREE, sizeof(struct rp_id), "REGION_FREE" },
	{ RP_MSG_EXPORT, sizeof(struct rp_export_req), "EXPORT" },
	{ RP_MSG_UNEXPORT, sizeof(struct rp_export_req), "UNEXPORT" },
	{ RP_MSG_EXPORT_ACL, sizeof(struct rp_export_acl_req), "EXPORT_ACL" },
	{ RP_MSG_REMOTE_OPEN, sizeof(struct rp_name_req), "REMOTE_OPEN" },
	{ RP_MSG_REMOTE_CLOSE, sizeof(struct rp_id), "REMOTE_CLOSE" },
	{ RP_MSG_EP_BIND, sizeof(struct rp_ep_req), "EP_BIND" },
	{ RP_MSG_EP_UNBIND, sizeof(struct rp_id), "EP_UNBIND" },
	{ RP_MSG_DEST_OPEN, sizeof(struct rp_name_req), "DEST_OPEN" },
	{ RP_MSG_EP_BIND_ACL, sizeof(struct rp_export_acl_req), "EP_BIND_ACL" },
	{ RP_MSG_STATUS, 0, "STATUS" },
	{ RP_MSG_ADMIN_CLIENTS, sizeof(struct rp_admin_page_req), "ADMIN_CLIENTS" },
	{ RP_MSG_ADMIN_REGIONS, sizeof(struct rp_admin_page_req), "ADMIN_REGIONS" },
	{ RP_MSG_ADMIN_PEERS, sizeof(struct rp_admin_page_req), "ADMIN_PEERS" },
	{ RP_MSG_ADMIN_METRICS, sizeof(struct rp_admin_page_req), "ADMIN_METRICS" },
	{ RP_MSG_ADMIN_PING, sizeof(struct rp_admin_ping_req), "ADMIN_PING" },
	{ RP_MSG_ADMIN_RELOAD, 0, "ADMIN_RELOAD" },
};

static _Alignas(8) char pkt[RP_PROTO_MSG_MAX];

static const struct rp_hdr *mkhdr(uint16_t type, size_t body)
{
	struct rp_hdr *h = (struct rp_hdr *)pkt;

	memset(pkt, 0, sizeof(*h) + body);
	h->len = (uint32_t)(sizeof(*h) + body);
	h->type = type;
	h->seq = 7;
	return h;
}

static int validate(uint16_t type, size_t body, int nfds, const char **why)
{
	const struct rp_hdr *h = mkhdr(type, body);

	*why = NULL;
	return ctl_validate(h, sizeof(*h) + body, nfds, why);
}

static void test_validate_type(uint16_t type, size_t size, const char *name)
{
	int fds = type == RP_MSG_REGION_REG;
	const char *why;
	struct rp_hdr *h;

	tap_is_int(ctl_body_size(type), size, name);
	tap_ok(validate(type, size, fds, &why) == 0, "%s: well-formed, %d fd", name, fds);
	tap_ok(validate(type, size + 1, fds, &why) == -EPROTO && why, "%s: one byte long", name);
	if (size)
		tap_ok(validate(type, size - 1, fds, &why) == -EPROTO && why, "%s: one byte short",
		       name);
	tap_ok(validate(type, size, !fds, &why) == -EPROTO && why,
	       fds ? "%s: refused without its fd" : "%s: refused with an fd", name);
	tap_ok(validate(type, size, 2, &why) == -EPROTO && why, "%s: refused with two fds", name);
	h = (struct rp_hdr *)mkhdr(type, size);
	h->flags = 1;
	tap_ok(ctl_validate(h, sizeof(*h) + size, fds, &why) == -EPROTO, "%s: flags refused", name);
	h->flags = 0;
	h->status = -1;
	tap_ok(ctl_validate(h, sizeof(*h) + size, fds, &why) == -EPROTO, "%s: status refused",
	       name);
	h->status = 0;
	h->len++;
	tap_ok(ctl_validate(h, sizeof(*h) + size, fds, &why) == -EPROTO,
	       "%s: header length differs from the packet's", name);
}

static void test_validate(void)
{
	static const uint16_t unknown[] = {
		0,	2,	0x00ff, 0x0100, 0x0103,
		0x0204, 0x0405, 0x0800, 0x0809, RP_MSG_REPLY | RP_MSG_HELLO,
		0xffff
	};
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		test_validate_type(types[i].type, types[i].size, types[i].name);
	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		tap_is_int(ctl_body_size(unknown[i]), -1, "no body size for an unknown type");
		tap_ok(validate(unknown[i], 0, 0, &why) == -EPROTO && why &&
			       !strcmp(why, "unknown message type"),
		       "type 0x%04x refused as unknown", unknown[i]);
	}
	mkhdr(RP_MSG_STATUS, 0);
	tap_ok(ctl_validate((struct rp_hdr *)pkt, sizeof(struct rp_hdr) - 1, 0, &why) == -EPROTO,
	       "a packet shorter than a header");
	tap_ok(ctl_validate((struct rp_hdr *)pkt, 0, 0, &why) == -EPROTO, "an empty packet");
	tap_ok(ctl_is_admin(RP_MSG_STATUS) && ctl_is_admin(RP_MSG_ADMIN_RELOAD) &&
		       !ctl_is_admin(RP_MSG_HELLO) && !ctl_is_admin(RP_MSG_DEST_OPEN),
	       "admin requests are the 0x08xx group");
}

/* ---- HELLO ---- */

static void test_hello_violations(void)
{
	struct th_session *ts = th_session_new(&t, 1000, 1000);
	struct rp_hello bad = { .magic = RP_PROTO_MAGIC ^ 1, .version_min = 1, .version_max = 1 };
	struct rp_ep_req ep = { .name = "early" };
	struct rp_region_reg reg = { .len = 4096 };
	int fd = th_memfd(ts, 4096, F_SEAL_SHRINK | F_SEAL_GROW, NULL);

	tap_is_int(th_request(ts, RP_MSG_EP_BIND, &ep, sizeof(ep), -1), -EPROTO,
		   "a request before HELLO is a protocol violation");
	tap_is_int(th_request(ts, RP_MSG_REGION_REG, &reg, sizeof(reg), fd), -EPROTO,
		   "a region before HELLO too");
	tap_ok(!fd_open(fd), "its fd is closed");
	tap_is_int(th_request(ts, RP_MSG_HELLO, &bad, sizeof(bad), -1), -EPROTO,
		   "HELLO with a bad magic");
	bad.magic = RP_PROTO_MAGIC;
	bad.flags = 1;
	tap_is_int(th_request(ts, RP_MSG_HELLO, &bad, sizeof(bad), -1), -EPROTO,
		   "HELLO with unknown flags");
	tap_is_int(ts->n_replies, 0, "no reply to any of them");
	tap_is_int(ts->s.version, 0, "the session did not start");
	th_session_close(ts);
}

static void test_hello_versions(void)
{
	struct th_session *ts = th_session_new(&t, 1000, 1000);
	const struct rp_hello_reply *rep;
	struct rp_hello req = { .magic = RP_PROTO_MAGIC,
				.version_min = RP_PROTO_VERSION_MAX + 1,
				.version_max = 9 };

	tap_is_int(th_request(ts, RP_MSG_HELLO, &req, sizeof(req), -1), -ECONNABORTED,
		   "a client that speaks only newer versions is refused");
	rep = th_reply_body(ts);
	tap_is_int(th_reply(ts)->status, -EPROTONOSUPPORT, "with -EPROTONOSUPPORT");
	tap_ok(th_reply(ts)->type == (RP_MSG_HELLO | RP_MSG_REPLY) && th_reply(ts)->seq == ts->seq,
	       "the reply echoes type and seq");
	tap_ok(rep->magic == RP_PROTO_MAGIC && rep->version_min == RP_PROTO_VERSION_MIN &&
		       rep->version_max == RP_PROTO_VERSION_MAX,
	       "and says which versions the daemon speaks");
	tap_is_int(ts->nfds, 0, "no fds with a refusal");
	th_session_close(ts);

	ts = th_session_new(&t, 1000, 1000);
	tap_is_int(th_hello_v(ts, 0, 0), -EPROTONOSUPPORT, "version 0 only: refused");
	th_session_close(ts);

	ts = th_session_new(&t, 1000, 1000);
	tap_is_int(th_hello_v(ts, 1, 7), 0, "1..7 negotiates");
	rep = th_reply_body(ts);
	tap_is_int(rep->version, RP_PROTO_VERSION_MAX, "the highest version both speak");
	tap_is_int(ts->s.version, RP_PROTO_VERSION_MAX, "the session runs it");
	tap_is_int(th_hello(ts), -EPROTO, "a second HELLO is a protocol violation");
	th_session_close(ts);

	/* A client from before access lists: it still connects, and speaks version 1. */
	ts = th_session_new(&t, 1000, 1000);
	tap_is_int(th_hello_v(ts, 1, 1), 0, "a version 1 client is admitted");
	tap_is_int(ts->s.version, 1, "its session runs version 1");
	th_session_close(ts);

	/* EP_BIND_ACL came with version 4: an older session cannot have meant it. */
	ts = th_session_new(&t, 1000, 1000);
	tap_is_int(th_hello_v(ts, 1, RP_PROTO_VERSION_EP_ACL - 1), 0, "a version 3 client");
	{
		struct rp_export_acl_req acl = { 0 };

		tap_is_int(th_ep_bind_acl(ts, "v3", &acl, NULL), -EPROTO,
			   "sending EP_BIND_ACL is a protocol error");
	}
	th_session_close(ts);
}

/* The non-blocking read end of a pipe. */
static bool is_pipe_read_end(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && fl >= 0 &&
	       (fl & O_ACCMODE) == O_RDONLY && (fl & O_NONBLOCK);
}

/* A non-blocking AF_UNIX datagram socket. */
static bool is_bell(int fd)
{
	int type = 0, fl = fcntl(fd, F_GETFL);
	socklen_t len = sizeof(type);
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
	       getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_DGRAM &&
	       fl >= 0 && (fl & O_NONBLOCK);
}

static void test_hello_fds(void)
{
	struct th_session *ts = th_session_new(&t, 1000, 1000);
	const struct rp_hello_reply *rep;
	struct stat st;
	int seals;

	tap_is_int(th_hello(ts), 0, "HELLO accepted");
	rep = th_reply_body(ts);
	tap_is_int(ts->nfds, RP_HELLO_FDS, "the reply carries three fds");
	tap_ok(fstat(ts->fds[0], &st) == 0 && S_ISREG(st.st_mode) &&
		       (uint64_t)st.st_size == rep->ring_size,
	       "the first is the ring memfd, ring_size bytes");
	seals = fcntl(ts->fds[0], F_GET_SEALS);
	tap_ok(seals >= 0 && (seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) ==
				     (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
	       "sealed against resizing and further seals");
	tap_ok(is_bell(ts->fds[1]) && is_pipe_read_end(ts->fds[2]),
	       "the other two are doorbells: a datagram socket, a pipe's read end; non-blocking");
	tap_ok(ts->fds[1] != ts->fds[2], "two distinct doorbells");
	tap_ok(ts->s.rings.memfd == -1 && ts->s.rings.sq_client == -1 &&
		       ts->s.rings.cq_client == -1,
	       "the daemon no longer holds the ring memfd nor the client's doorbell ends");
	{
		uint64_t one = 1, v = 0;
		int fl = fcntl(ts->fds[2], F_GETFL);

		/* What a hostile client did to an eventfd it shared with the daemon. */
		fcntl(ts->fds[2], F_SETFL, fl & ~O_NONBLOCK);
		tap_ok(write(ts->fds[2], &one, sizeof(one)) < 0 && errno == EBADF &&
			       (fcntl(ts->s.rings.cq_bell, F_GETFL) & O_NONBLOCK),
		       "the client cannot write into its completion doorbell, nor make the "
		       "daemon's end blocking");
		fcntl(ts->fds[2], F_SETFL, fl);
		tap_ok(write(ts->fds[1], &one, sizeof(one)) == sizeof(one) &&
			       read(ts->s.rings.sq_bell, &v, sizeof(v)) == sizeof(v) && v == 1,
		       "its submission doorbell reaches the daemon's end");
		close(ts->s.rings.sq_bell);
		ts->s.rings.sq_bell = -1;
		tap_ok(write(ts->fds[1], &one, sizeof(one)) < 0 && errno == ECONNREFUSED,
		       "with the daemon's end gone, a ring fails ECONNREFUSED (no SIGPIPE)");
	}
	tap_ok(rep->magic == RP_PROTO_MAGIC && rep->client_id == ts->s.id &&
		       !strcmp(rep->node_name, TH_NODE) && rep->transport == RP_WIRE_TRANSPORT_TCP,
	       "magic, client id, node name and transport");
	tap_ok(rep->sq_entries == RP_RING_SQ_ENTRIES && rep->cq_entries == RP_RING_CQ_ENTRIES,
	       "ring sizes");
	tap_ok(ts->ring.base && ts->ring.v.info->magic == RP_RING_MAGIC &&
		       ts->ring.v.info->size == rep->ring_size,
	       "the client's mapping of the memfd shows the daemon's ring");
	tap_ok(rp_ring_load(&ts->ring.v.sq->flags) & RP_RING_NEED_WAKEUP,
	       "the daemon starts asleep: the first submission rings");
	th_session_close(ts);
}

static void test_hello_admission(void)
{
	uid_t allowed[] = { 1000 };
	struct th_session *a[4], *ts;
	int i;

	t.cfg.allowed_uids = allowed;
	t.cfg.n_allowed_uids = 1;
	ts = th_session_new(&t, 1001, 1001);
	tap_is_int(th_hello(ts), -EACCES, "a user not in allowed_users is refused");
	tap_is_int(ts->nfds, 0, "without fds");
	th_session_close(ts);
	ts = th_session_new(&t, 0, 0);
	tap_is_int(th_hello(ts), 0, "root always may connect");
	th_session_close(ts);
	ts = th_session_new(&t, 1000, 1000);
	tap_is_int(th_hello(ts), 0, "a listed user may");
	th_session_close(ts);
	t.cfg.allowed_uids = NULL;
	t.cfg.n_allowed_uids = 0;

	t.cfg.max_connections = 2;
	for (i = 0; i < 3; i++) {
		a[i] = th_session_new(&t, 2000, 2000);
		th_hello(a[i]);
	}
	tap_ok(th_reply(a[0])->status == 0 && th_reply(a[1])->status == 0,
	       "max_connections sessions of one uid are admitted");
	tap_is_int(th_reply(a[2])->status, -RP_ELIMIT_CONN, "one more is refused");
	a[3] = th_session_new(&t, 2001, 2001);
	tap_is_int(th_hello(a[3]), 0, "another uid has its own count");
	th_session_close(a[2]);
	th_session_close(a[0]);
	a[0] = th_session_new(&t, 2000, 2000);
	tap_is_int(th_hello(a[0]), 0, "a closed session gives its connection back");
	for (i = 0; i < 4; i++)
		if (i != 2)
			th_session_close(a[i]);
	t.cfg.max_connections = 4;
	tap_ok(t.core->accts == NULL, "no per-uid account outlives its sessions");
}

static void test_hello_send_fails(void)
{
	struct th_session *ts = th_session_new(&t, 1000, 1000);
	struct rp_hello req = { .magic = RP_PROTO_MAGIC, .version_min = 1, .version_max = 1 };

	ts->send_err = -EPIPE;
	tap_is_int(th_request(ts, RP_MSG_HELLO, &req, sizeof(req), -1), -EPIPE,
		   "a HELLO reply that cannot be sent ends the session");
	th_session_close(ts);
}

/* ---- Requests ---- */

static void test_region_requests(struct th_session *ts)
{
	struct rp_region_reg reg = { .len = 4096, .flags = 2 };
	uint32_t id = 0;
	int fd;

	tap_is_int(th_region(ts, 8192, &id, NULL), 0, "REGION_REG");
	tap_is_int(id, 1, "the first region is id 1");
	tap_is_int(th_region_free(ts, id), 0, "REGION_FREE");
	tap_is_int(th_region_free(ts, id), -RP_EBADHANDLE, "REGION_FREE again");
	tap_is_int(th_region_free(ts, 0), -RP_EBADHANDLE, "REGION_FREE of id 0");
	tap_is_int(th_region_free(ts, 999), -RP_EBADHANDLE, "REGION_FREE of an unknown id");
	tap_is_int(th_region(ts, 8192, &id, NULL), 0, "ids are reused");
	tap_is_int(id, 1, "the freed id first");
	th_region_free(ts, id);
	fd = th_memfd(ts, 4096, F_SEAL_SHRINK | F_SEAL_GROW, NULL);
	tap_is_int(th_request(ts, RP_MSG_REGION_REG, &reg, sizeof(reg), fd), -EPROTO,
		   "REGION_REG with unknown flags is a protocol violation");
	tap_ok(!fd_open(fd), "its fd is closed");
	reg.flags = 0;
	reg.pad = 1;
	fd = th_memfd(ts, 4096, F_SEAL_SHRINK | F_SEAL_GROW, NULL);
	tap_is_int(th_request(ts, RP_MSG_REGION_REG, &reg, sizeof(reg), fd), -EPROTO,
		   "REGION_REG with padding set too");
	tap_ok(!fd_open(fd), "its fd is closed");
}

static void test_export_requests(struct th_session *ts, struct th_session *other)
{
	uint32_t r1 = 0, r2 = 0, o1 = 0;
	struct rp_export_req req = { .access = RP_ACCESS_REMOTE_READ };
	unsigned before;

	th_region(ts, 4096, &r1, NULL);
	th_region(ts, 4096, &r2, NULL);
	th_region(other, 4096, &o1, NULL);
	tap_is_int(th_export(ts, r1, RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE, "exp.1"), 0,
		   "EXPORT");
	tap_is_int(th_export(ts, r2, RP_ACCESS_REMOTE_READ, "exp.1"), -EEXIST,
		   "EXPORT of a taken name");
	tap_is_int(th_export(other, o1, RP_ACCESS_REMOTE_READ, "exp.1"), -EEXIST,
		   "names are node-wide");
	tap_is_int(th_export(ts, r1, RP_ACCESS_REMOTE_READ, "exp-2_B"), 0,
		   "a region may have several exports");
	tap_is_int(th_export(ts, 77, RP_ACCESS_REMOTE_READ, "exp.3"), -RP_EBADHANDLE,
		   "EXPORT of an unknown region");
	tap_is_int(th_export(ts, r1, 0, "exp.3"), -EINVAL, "EXPORT without access");
	tap_is_int(th_export(ts, r1, 4, "exp.3"), -EINVAL, "EXPORT with an unknown access bit");
	tap_is_int(th_export(ts, r1, 1, ""), -EINVAL, "EXPORT with an empty name");
	tap_is_int(th_export(ts, r1, 1, "a/b"), -EINVAL, "EXPORT with a slash in the name");
	tap_is_int(th_export(ts, r1, 1, "a b"), -EINVAL, "EXPORT with a blank in the name");
	memset(req.name, 'x', sizeof(req.name));
	req.region = r1;
	before = ts->n_replies;
	th_request(ts, RP_MSG_EXPORT, &req, sizeof(req), -1);
	tap_ok(ts->n_replies == before + 1 && th_reply(ts)->status == -EINVAL,
	       "EXPORT with an unterminated name");
	memset(req.name, 0, sizeof(req.name));
	strcpy(req.name, "ok");
	req.name[10] = 'x';
	th_request(ts, RP_MSG_EXPORT, &req, sizeof(req), -1);
	tap_is_int(th_reply(ts)->status, -EINVAL, "EXPORT with bytes hidden after the NUL");

	tap_is_int(th_unexport(other, o1, "exp.1"), -ENOENT, "UNEXPORT by another session");
	tap_is_int(th_unexport(ts, r2, "exp.1"), -ENOENT, "UNEXPORT naming another region");
	tap_is_int(th_unexport(ts, r1, "nope"), -ENOENT, "UNEXPORT of an unknown name");
	tap_is_int(th_unexport(ts, r1, "bad name"), -EINVAL, "UNEXPORT of an invalid name");
	memset(&req, 0, sizeof(req));
	strcpy(req.name, "exp.1");
	req.region = r1;
	req.access = RP_ACCESS_REMOTE_READ;
	th_request(ts, RP_MSG_UNEXPORT, &req, sizeof(req), -1);
	tap_is_int(th_reply(ts)->status, -EINVAL, "UNEXPORT with access set");
	tap_is_int(th_unexport(ts, r1, "exp.1"), 0, "UNEXPORT by its owner");
	tap_is_int(th_unexport(ts, r1, "exp.1"), -ENOENT, "UNEXPORT again");
	tap_ok(export_find(t.core, "exp-2_B") != NULL, "the region's other export stays");
	tap_is_int(th_region_free(ts, r1), 0, "REGION_FREE of an exported region");
	tap_ok(export_find(t.core, "exp-2_B") == NULL, "withdraws its exports");
	th_region_free(ts, r2);
	th_region_free(other, o1);
}

static void test_export_limit(struct th_session *ts)
{
	uint32_t r = 0;
	char name[16];
	unsigned i, ok = 0;

	t.cfg.max_regions = 3;
	th_region(ts, 4096, &r, NULL);
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "lim%u", i);
		ok += th_export(ts, r, RP_ACCESS_REMOTE_READ, name) == 0;
	}
	tap_is_int(ok, 3, "max_regions exports per uid");
	tap_is_int(th_export(ts, r, RP_ACCESS_REMOTE_READ, "lim3"), -RP_ELIMIT_EXPORTS,
		   "one more is refused");
	tap_ok(ts->s.acct->exports == 3 && ts->s.exports == 3 && t.core->n_exports == 3,
	       "the uid, the client and the node count them");
	th_unexport(ts, r, "lim0");
	tap_is_int(th_export(ts, r, RP_ACCESS_REMOTE_READ, "lim3"), 0,
		   "an UNEXPORT makes room again");
	th_region_free(ts, r);
	tap_ok(ts->s.acct->exports == 0 && ts->s.exports == 0 && t.core->n_exports == 0,
	       "freeing the region withdrew all, and the counts say so");

	/* Endpoints too, per uid across its sessions; a list or none, the same. */
	{
		struct th_session *two = th_session_new(&t, ts->s.cred.uid, ts->s.cred.gid);
		struct th_session *other = th_session_new(&t, 4243, 4243);
		struct rp_export_acl_req acl = { 0 };
		uint32_t id[3] = { 0 }, oid = 0;

		if (th_hello(two) || th_hello(other))
			abort();
		ok = (th_ep_bind(ts, "lep0", &id[0]) == 0) +
		     (th_ep_bind(two, "lep1", &id[1]) == 0) +
		     (th_ep_bind_acl(ts, "lep2", &acl, &id[2]) == 0);
		tap_is_int(ok, 3, "max_regions endpoints per uid, over two sessions");
		tap_is_int(th_ep_bind(two, "lep3", NULL), -RP_ELIMIT_ENDPOINTS,
			   "one more is refused");
		tap_is_int(th_ep_bind_acl(ts, "lep3", &acl, NULL), -RP_ELIMIT_ENDPOINTS,
			   "with a list too");
		tap_is_int(th_ep_bind(other, "lep3", &oid), 0, "another uid's are counted apart");
		th_ep_unbind(ts, id[0]);
		tap_is_int(th_ep_bind(ts, "lep4", NULL), 0, "an EP_UNBIND makes room again");
		th_session_close(two);
		tap_is_int(th_ep_bind(ts, "lep5", NULL), 0, "so does a session that ends");
		th_session_close(other);
	}
	t.cfg.max_regions = 16;
}

/* An export a peer may still reach: UNEXPORT is answered once the peer let go. */
static void test_unexport_draining(struct th_session *ts)
{
	uint32_t r = 0;
	unsigned before;

	th_region(ts, 4096, &r, NULL);
	th_export(ts, r, RP_ACCESS_REMOTE_WRITE, "drain");
	t.pin_gone = true;
	before = ts->n_replies;
	tap_is_int(th_request(ts, RP_MSG_UNEXPORT,
			      &(struct rp_export_req){ .region = r, .name = "drain" },
			      sizeof(struct rp_export_req), -1),
		   0, "UNEXPORT while the peer layer holds the export");
	tap_ok(ts->n_replies == before && t.n_gone == 1, "is not answered yet");
	tap_ok(export_find(t.core, "drain") == NULL, "the name is gone at once");
	th_gone_release(&t);
	tap_ok(ts->n_replies == before + 1 && th_reply(ts)->status == 0 &&
		       th_reply(ts)->seq == ts->seq,
	       "the answer comes when the peer let go");

	t.pin_gone = false;
	th_region_free(ts, r);
}

static void test_remote_requests(struct th_session *ts, struct th_session *other)
{
	const struct rp_remote_reply *rep;
	struct remote info;
	uint32_t r = 0, id = 0, id2 = 0;
	unsigned before;

	/* Another user's export: it must name ts's uid (test-access.c covers refusals). */
	th_region(other, 8192, &r, NULL);
	th_export_for(other, r, RP_ACCESS_REMOTE_READ, "shared", ts->s.cred.uid);
	tap_is_int(th_remote_open(ts, "", "shared", &id), 0, "REMOTE_OPEN of a local export");
	rep = th_reply_body(ts);
	tap_ok(id && rep->access == RP_ACCESS_REMOTE_READ && rep->len == 8192,
	       "the reply has the handle, the access and the length");
	tap_is_int(th_remote_open(ts, TH_NODE, "shared", &id2), 0,
		   "REMOTE_OPEN naming this node is local too");
	tap_ok(id2 != id, "another handle");
	tap_is_int(th_remote_open(ts, "", "nothing", NULL), -RP_ENOEXPORT,
		   "REMOTE_OPEN of an unknown export");
	tap_is_int(th_remote_open(ts, "", "bad/name", NULL), -EINVAL,
		   "REMOTE_OPEN of an invalid name");
	tap_is_int(th_remote_open(ts, "bad peer", "shared", NULL), -EINVAL,
		   "REMOTE_OPEN on an invalid peer name");
	tap_is_int(th_remote_open(ts, "nodeZ", "shared", NULL), -RP_EPEERUNKNOWN,
		   "REMOTE_OPEN on an unknown peer");
	tap_is_int(th_remote_close(ts, id), 0, "REMOTE_CLOSE");
	tap_is_int(th_remote_close(ts, id), -RP_EBADHANDLE, "REMOTE_CLOSE again");
	tap_is_int(th_remote_close(ts, 0), -RP_EBADHANDLE, "REMOTE_CLOSE of id 0");
	th_remote_close(ts, id2);

	/* On a peer: the peer layer answers later, through remote_opened(). */
	before = ts->n_replies;
	tap_is_int(th_remote_open(ts, TH_PEER, "far", NULL), 1,
		   "REMOTE_OPEN on a known peer is not answered at once");
	tap_ok(t.n_opens == 1 && !strcmp(t.opens[0].peer, TH_PEER) &&
		       !strcmp(t.opens[0].name, "far") && t.opens[0].s == &ts->s,
	       "the peer layer got peer, name and session");
	memset(&info, 0, sizeof(info));
	snprintf(info.peer, sizeof(info.peer), TH_PEER);
	info.inc = 5;
	info.id = 9;
	info.len = 1 << 20;
	info.access = RP_ACCESS_REMOTE_WRITE;
	th_open_answer(&t, 0, 0, &info);
	rep = th_reply_body(ts);
	tap_ok(ts->n_replies == before + 1 && th_reply(ts)->status == 0 && rep->id &&
		       rep->len == 1 << 20 && rep->access == RP_ACCESS_REMOTE_WRITE &&
		       th_reply(ts)->seq == ts->seq,
	       "its answer is the reply to that request");
	id = rep->id;
	tap_is_int(th_remote_open(ts, TH_PEER, "far2", NULL), 1, "another one");
	th_open_answer(&t, 0, -RP_ENOEXPORT, NULL);
	tap_is_int(th_reply(ts)->status, -RP_ENOEXPORT, "a failed lookup is its status");
	t.open_status = -RP_EPEERDOWN;
	tap_is_int(th_remote_open(ts, TH_PEER, "far", NULL), -RP_EPEERDOWN,
		   "a peer layer that refuses at once: replied at once");
	t.open_status = 0;
	tap_is_int(th_remote_close(ts, id), 0, "REMOTE_CLOSE of a remote handle");
	tap_ok(t.core->n_remotes == 0 && t.core->remote_keys.n == 0, "frees the remote");
	th_region_free(other, r);
}

static void test_endpoint_requests(struct th_session *ts, struct th_session *other)
{
	struct dest *d;
	uint32_t id = 0, id2 = 0, did = 0;

	tap_is_int(th_ep_bind(ts, "ep.1", &id), 0, "EP_BIND");
	tap_ok(id != 0, "an endpoint id");
	tap_is_int(th_ep_bind(other, "ep.1", NULL), -EEXIST, "EP_BIND of a bound name");
	tap_is_int(th_ep_bind(ts, "", NULL), -EINVAL, "EP_BIND of an empty name");
	tap_is_int(th_ep_bind(ts, "x\x01", NULL), -EINVAL, "EP_BIND of a control character");
	{
		struct rp_export_acl_req acl = { .n_uids = 1, .uids = { 4243 } };
		uint32_t aid = 0;

		tap_is_int(th_ep_bind_acl(ts, "ep.acl", &acl, &aid), 0, "EP_BIND_ACL");
		tap_ok(aid != 0 && aid != id, "its own endpoint id");
		tap_is_int(th_ep_bind_acl(other, "ep.acl", &acl, NULL), -EEXIST,
			   "EP_BIND_ACL of a bound name");
		tap_is_int(th_ep_unbind(ts, aid), 0, "EP_UNBIND of it");
		acl.x.region = 1;
		tap_is_int(th_ep_bind_acl(ts, "ep.acl", &acl, NULL), -EINVAL,
			   "EP_BIND_ACL with a region");
		acl.x.region = 0;
		acl.x.access = RP_ACCESS_REMOTE_READ;
		tap_is_int(th_ep_bind_acl(ts, "ep.acl", &acl, NULL), -EINVAL,
			   "EP_BIND_ACL with access bits");
		acl.x.access = 0;
		acl.flags = 0x80;
		tap_is_int(th_ep_bind_acl(ts, "ep.acl", &acl, NULL), -EINVAL,
			   "EP_BIND_ACL with unknown flags");
		acl.flags = 0;
		tap_is_int(th_ep_bind_acl(ts, "", &acl, NULL), -EINVAL,
			   "EP_BIND_ACL of an empty name");
		acl = (struct rp_export_acl_req){ .n_peers = 1, .peers = { "nowhere" } };
		tap_is_int(th_ep_bind_acl(ts, "ep.acl", &acl, NULL), -RP_EPEERUNKNOWN,
			   "EP_BIND_ACL naming a peer that is not configured");
		acl = (struct rp_export_acl_req){ .pad = { 1 } };
		tap_is_int(th_ep_bind_acl(ts, "ep.acl", &acl, NULL), -EPROTO,
			   "EP_BIND_ACL with padding set: a protocol error");
	}
	tap_is_int(th_ep_bind(ts, "ep.2", &id2), 0, "a second endpoint");
	tap_is_int(th_ep_unbind(ts, id), 0, "EP_UNBIND");
	tap_is_int(th_ep_unbind(ts, id), -RP_EBADHANDLE, "EP_UNBIND again");
	tap_is_int(th_ep_unbind(other, id2), -RP_EBADHANDLE, "EP_UNBIND of another's endpoint");
	tap_is_int(th_ep_bind(other, "ep.1", NULL), 0, "an unbound name is free again");

	tap_is_int(th_dest_open(ts, "", "ep.1", &did), 0, "DEST_OPEN of a local endpoint");
	d = idtab_get(&ts->s.dests, did);
	tap_ok(d && !d->remote && !strcmp(d->endpoint, "ep.1"), "resolved as local");
	tap_is_int(th_dest_open(ts, TH_NODE, "not-bound-yet", &did), 0,
		   "DEST_OPEN needs no bound endpoint yet");
	tap_is_int(th_dest_open(ts, "nodeZ", "ep.1", NULL), -RP_EPEERUNKNOWN,
		   "DEST_OPEN on an unknown peer");
	tap_is_int(th_dest_open(ts, TH_PEER, "ep.far", &did), 0, "DEST_OPEN on a known peer");
	d = idtab_get(&ts->s.dests, did);
	tap_ok(d && d->remote && !strcmp(d->peer, TH_PEER) && !strcmp(d->endpoint, "ep.far"),
	       "resolved once as remote, with peer and endpoint");
	tap_is_int(th_dest_open(ts, "", "", NULL), -EINVAL, "DEST_OPEN of an empty name");
	tap_is_int(th_dest_open(ts, "a:b", "ep", NULL), -EINVAL, "DEST_OPEN of a bad peer name");
}

/* What the glue turns into a disconnect. */
static void test_violations(void)
{
	struct th_session *ts = th_session_new(&t, 1000, 1000);
	struct rp_hdr h = { .len = sizeof(h), .type = RP_MSG_STATUS };
	struct rp_id body = { 0 };

	th_hello(ts);
	tap_is_int(session_dispatch(&ts->s, &h, &body, -1), -EPROTO,
		   "an admin request is never the session's to answer");
	h.type = 0x0999;
	tap_is_int(session_dispatch(&ts->s, &h, &body, -1), -EPROTO, "nor an unknown type");
	tap_is_int(th_hello(ts), -EPROTO, "HELLO twice");
	tap_is_int(th_request(ts, RP_MSG_REGION_FREE, &body, sizeof(body) - 1, -1), -EPROTO,
		   "a short body");
	tap_is_int(th_request(ts, RP_MSG_REGION_FREE, &body, sizeof(body), dup(2)), -EPROTO,
		   "an fd with a request that takes none");
	ts->send_err = -EAGAIN;
	tap_is_int(th_ep_bind(ts, "unsendable", NULL), -EAGAIN,
		   "a reply that cannot be sent ends the session");
	ts->send_err = 0;
	session_release(&ts->s);
	tap_is_int(session_reply(&ts->s, &h, 0, NULL, 0, NULL, 0), -ENOTCONN,
		   "nothing is sent to a released session");
	session_release(&ts->s);
	tap_ok(ts->s.dead, "session_release is idempotent");
	session_detach(&ts->s);
}

/* ---- id tables ---- */

static void test_idtab(void)
{
	static int obj[40];
	struct idtab tab = { 0 };
	uint32_t id, i, n;
	bool ok = true;

	for (i = 0; i < 20 && ok; i++)
		ok = idtab_add(&tab, &obj[i], 20, &id) == 0 && id == i + 1;
	tap_ok(ok, "ids are handed out from 1, in order");
	tap_is_int(idtab_add(&tab, &obj[20], 20, &id), -ENOSPC, "past its maximum: ENOSPC");
	tap_ok(tab.n == 20 && tab.used == 20, "20 slots, 20 used");
	tap_ok(idtab_get(&tab, 0) == NULL && idtab_get(&tab, 21) == NULL &&
		       idtab_get(&tab, UINT32_MAX) == NULL,
	       "ids 0 and past the table are nobody's");
	tap_ok(idtab_del(&tab, 5) == &obj[4] && idtab_del(&tab, 17) == &obj[16], "deleted 5, 17");
	tap_ok(idtab_get(&tab, 5) == NULL && idtab_del(&tab, 5) == NULL,
	       "a freed id reads as nobody's, and is not deleted twice");
	tap_is_int(tab.used, 18, "18 used");
	for (i = n = 0; i < tab.n; i++)
		n += idtab_at(&tab, i) != NULL;
	tap_is_int(n, 18, "a walk sees the 18");
	tap_ok(idtab_add(&tab, &obj[30], 20, &id) == 0 && id == 17, "the last freed id first");
	tap_ok(idtab_add(&tab, &obj[31], 20, &id) == 0 && id == 5, "then the one before it");
	tap_is_int(idtab_add(&tab, &obj[32], 20, &id), -ENOSPC, "then full again");
	tap_ok(idtab_get(&tab, 17) == &obj[30] && idtab_get(&tab, 5) == &obj[31] &&
		       idtab_get(&tab, 6) == &obj[5],
	       "every id maps to its own object");
	for (i = 1; i <= 20; i++)
		idtab_del(&tab, i);
	tap_is_int(tab.used, 0, "all deleted");
	for (i = 0, ok = true; i < 20 && ok; i++)
		ok = idtab_add(&tab, &obj[i], 20, &id) == 0 && id >= 1 && id <= 20 &&
		     idtab_get(&tab, id) == &obj[i];
	tap_ok(ok && tab.used == 20 && tab.n == 20, "the 20 ids are handed out again");
	idtab_free(&tab);
	tap_ok(tab.n == 0 && tab.used == 0 && tab.free == 0 && !idtab_get(&tab, 1), "freed");
	tap_ok(idtab_add(&tab, &obj[0], 1, &id) == 0 && id == 1 &&
		       idtab_add(&tab, &obj[1], 1, &id) == -ENOSPC,
	       "a table of one");
	idtab_free(&tab);

	/* Held ids: back once both rings passed their positions, oldest first. */
	for (i = 0; i < 4; i++)
		idtab_add(&tab, &obj[i], 4, &id);
	idtab_take(&tab, 2);
	idtab_hold(&tab, 2, 10, 20);
	idtab_take(&tab, 3);
	idtab_hold(&tab, 3, 11, 21);
	idtab_unhold(&tab, 10, 19, 8, false);
	tap_ok(tab.held_n == 2 && !tab.free, "held: the SQ has not passed the first (19 < 20)");
	idtab_unhold(&tab, 10, 25, 8, false);
	tap_ok(tab.held_n == 1 && tab.free == 2,
	       "both rings passed the first: back, not the second");
	idtab_add(&tab, &obj[4], 4, &id);
	tap_ok(id == 2 && !tab.free && tab.held_n == 1, "and used again");
	idtab_unhold(&tab, 0, 0, 4, false);
	tap_ok(tab.held_n == 0 && tab.free == 3,
	       "with no free id below the maximum, the oldest comes back regardless");
	idtab_add(&tab, &obj[5], 4, &id);
	idtab_take(&tab, id);
	idtab_hold(&tab, id, 0xfffffff0u, 5);
	idtab_unhold(&tab, 0xffffffe0u, 5, 8, false);
	tap_is_int(tab.held_n, 1, "a ring behind the position, across the wrap, keeps it");
	idtab_unhold(&tab, 0x10, 5, 8, false);
	tap_ok(tab.held_n == 0 && tab.free == id, "past it across the wrap gives it back");
	idtab_add(&tab, &obj[6], 4, &id);
	idtab_take(&tab, id);
	idtab_hold(&tab, id, 100, 100);
	idtab_unhold(&tab, 100 + 0x80000001u, 100 + 0x80000001u, 8, false);
	tap_ok(tab.held_n == 0,
	       "passed 2^31 operations ago (a signed difference says ahead): given back");
	idtab_free(&tab);
	tap_ok(!tab.held && !tab.held_n && !tab.v, "freed with what it held");
}

int main(void)
{
	struct th_session *a, *b;
	unsigned sessions;

	log_set_level(LOG_ERR);
	if (th_init(&t) < 0)
		return 99;
	test_validate();
	test_idtab();
	test_hello_violations();
	test_hello_versions();
	test_hello_fds();
	test_hello_admission();
	test_hello_send_fails();

	a = th_session_new(&t, 1000, 1000);
	b = th_session_new(&t, 1001, 1001);
	th_hello(a);
	th_hello(b);
	test_region_requests(a);
	test_export_requests(a, b);
	test_export_limit(a);
	test_unexport_draining(a);
	test_remote_requests(a, b);
	test_endpoint_requests(a, b);
	th_session_close(a);
	th_session_close(b);
	test_violations();

	sessions = t.core->next_id - 1;
	tap_is_int(t.n_freed, sessions, "the glue freed every session, once");
	tap_is_int(t.dead_sends, 0, "no reply was offered for a dead session");
	tap_ok(t.core->sessions == NULL && t.core->n_sessions == 0 && t.core->accts == NULL &&
		       t.core->exports == NULL && t.core->endpoint_names.n == 0 &&
		       t.core->export_names.n == 0 && t.core->n_exports == 0 &&
		       t.core->n_regions == 0 && t.core->bytes == 0,
	       "the core is empty again");
	th_fini(&t);
	tap_plan_done();
	return tap_exit();
}
