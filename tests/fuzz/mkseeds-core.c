/* SPDX-License-Identifier: MIT */
/*
 * Writes the seed corpora of the client core's fuzz targets (fuzz-ctl.c,
 * fuzz-sqe.c) from readable descriptions, in the formats of fuzz-core.h:
 *
 *   mkseeds-core tests/fuzz/corpus
 *
 * creates corpus/ctl/NAME and corpus/sqe/NAME. Each seed is one meaningful
 * conversation; the fuzzer takes it from there. The corpora are checked in
 * and replayed by "make check"; run this again when a format changes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz-core.h"
#include "rp-proto.h"
#include "rp-ring.h"

struct buf {
	uint8_t b[16384];
	size_t n;
};

static const char *outdir;
static struct buf sb;
static uint32_t seq;

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > sizeof(b->b))
		abort();
	if (n)
		memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put8(struct buf *b, uint8_t v)
{
	put(b, &v, 1);
}

static void save(const char *kind, const char *name)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, kind);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		abort();
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, kind, name);
	f = fopen(path, "wbe");
	if (!f || fwrite(sb.b, 1, sb.n, f) != sb.n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
	sb.n = 0;
	seq = 0;
}

/* ---- fuzz-ctl ---- */

static void pkt(uint8_t ctl, uint16_t type, const void *body, size_t len)
{
	struct rp_hdr h = { .len = (uint32_t)(sizeof(h) + len), .type = type, .seq = ++seq };
	uint16_t n = (uint16_t)h.len;

	put8(&sb, ctl);
	put(&sb, &n, 2);
	put(&sb, &h, sizeof(h));
	put(&sb, body, len);
}

static void hello_v(uint16_t min, uint16_t max)
{
	struct rp_hello req = { .magic = RP_PROTO_MAGIC, .version_min = min, .version_max = max };

	pkt(0, RP_MSG_HELLO, &req, sizeof(req));
}

static void hello(void)
{
	hello_v(RP_PROTO_VERSION_MIN, RP_PROTO_VERSION_MAX);
}

static void region(uint8_t fd, uint64_t len)
{
	struct rp_region_reg req = { .len = len };

	pkt(fd, RP_MSG_REGION_REG, &req, sizeof(req));
}

static void id_req(uint16_t type, uint32_t id)
{
	struct rp_id req = { .id = id };

	pkt(0, type, &req, sizeof(req));
}

static void export_req(uint16_t type, uint32_t region, uint32_t access, const char *name)
{
	struct rp_export_req req = { .region = region, .access = access };

	strcpy(req.name, name);
	pkt(0, type, &req, sizeof(req));
}

static void name_req(uint16_t type, const char *peer, const char *name)
{
	struct rp_name_req req;

	memset(&req, 0, sizeof(req));
	strcpy(req.peer, peer);
	strcpy(req.name, name);
	pkt(0, type, &req, sizeof(req));
}

static void ep_bind(const char *name)
{
	struct rp_ep_req req;

	memset(&req, 0, sizeof(req));
	strcpy(req.name, name);
	pkt(0, RP_MSG_EP_BIND, &req, sizeof(req));
}

static void ctl_seeds(void)
{
	struct rp_admin_page_req page = { 0 };
	uint32_t rw = RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE;

	put8(&sb, 0);
	hello();
	save("ctl", "hello");

	put8(&sb, 3 << 2); /* max_regions 4 */
	hello();
	region(FC_FD_MEMFD, 8192);
	region(FC_FD_MEMFD, 4096);
	export_req(RP_MSG_EXPORT, 1, rw, "e1");
	export_req(RP_MSG_EXPORT, 2, RP_ACCESS_REMOTE_READ, "e2");
	name_req(RP_MSG_REMOTE_OPEN, "", "e1");
	name_req(RP_MSG_REMOTE_OPEN, "nodeA", "e2");
	name_req(RP_MSG_REMOTE_OPEN, "nodeB", "far");
	put8(&sb, FC_EV_OPEN_OK);
	name_req(RP_MSG_REMOTE_OPEN, "nodeB", "far2");
	put8(&sb, FC_EV_OPEN_FAIL);
	name_req(RP_MSG_REMOTE_OPEN, "nodeZ", "far");
	ep_bind("ep");
	name_req(RP_MSG_DEST_OPEN, "", "ep");
	name_req(RP_MSG_DEST_OPEN, "nodeB", "ep");
	name_req(RP_MSG_DEST_OPEN, "nodeZ", "ep");
	pkt(0, RP_MSG_STATUS, NULL, 0);
	pkt(0, RP_MSG_ADMIN_CLIENTS, &page, sizeof(page));
	id_req(RP_MSG_EP_UNBIND, 1);
	id_req(RP_MSG_REMOTE_CLOSE, 1);
	id_req(RP_MSG_REMOTE_CLOSE, 3);
	export_req(RP_MSG_UNEXPORT, 1, 0, "e1");
	id_req(RP_MSG_REGION_FREE, 1);
	id_req(RP_MSG_REGION_FREE, 9);
	save("ctl", "all-requests");

	put8(&sb, 0);
	hello();
	region(FC_FD_DEVNULL, 4096);
	region(FC_FD_UNSEALED, 4096);
	region(FC_FD_MEMFD, 1 << 20); /* the target makes a page: wrong size */
	region(FC_FD_MEMFD, 4097);
	region(FC_FD_NONE, 4096); /* no fd: a protocol violation */
	save("ctl", "region-fds");

	put8(&sb, 0);
	hello();
	ep_bind("x");
	{
		struct rp_ep_req req = { .name = "y" };

		pkt(FC_FD_DEVNULL, RP_MSG_EP_BIND, &req,
		    sizeof(req)); /* an fd where none belongs */
	}
	save("ctl", "fd-on-bind");

	put8(&sb, 0);
	hello();
	region(FC_FD_MEMFD, 4096);
	export_req(RP_MSG_EXPORT, 1, RP_ACCESS_REMOTE_WRITE, "drain");
	put8(&sb, FC_EV_PIN_GONE);
	export_req(RP_MSG_UNEXPORT, 1, 0, "drain");
	put8(&sb, FC_EV_GONE_RELEASE);
	export_req(RP_MSG_EXPORT, 1, RP_ACCESS_REMOTE_WRITE, "drain2");
	id_req(RP_MSG_REGION_FREE, 1);
	save("ctl", "unexport-draining");

	put8(&sb, 0);
	hello();
	region(FC_FD_MEMFD, 4096);
	export_req(RP_MSG_EXPORT, 1, RP_ACCESS_REMOTE_READ, "held");
	name_req(RP_MSG_REMOTE_OPEN, "", "held");
	id_req(RP_MSG_REGION_FREE, 1);
	id_req(RP_MSG_REMOTE_CLOSE, 1);
	name_req(RP_MSG_REMOTE_OPEN, "nodeB", "pending"); /* answered after the session died */
	save("ctl", "handle-outlives-region");

	put8(&sb, 3 << 2); /* max_regions 4 */
	hello();
	put8(&sb, FC_EV_DEFER_JOBS);
	region(FC_FD_MEMFD, 8192);
	region(FC_FD_MEMFD, 4096);
	region(FC_FD_UNSEALED, 4096); /* refused at once, before any job */
	put8(&sb, FC_EV_RUN_JOB);
	export_req(RP_MSG_EXPORT, 1, RP_ACCESS_REMOTE_READ, "mapped");
	export_req(RP_MSG_EXPORT, 2, RP_ACCESS_REMOTE_READ, "pending"); /* not yet a region */
	save("ctl", "region-jobs"); /* the second job ends after its client left */

	put8(&sb, 0);
	ep_bind("early");
	save("ctl", "before-hello");

	put8(&sb, 0);
	hello_v(RP_PROTO_VERSION_MAX + 1, RP_PROTO_VERSION_MAX + 2);
	save("ctl", "version-refused");

	put8(&sb, 0);
	hello();
	region(FC_FD_MEMFD, 4096);
	{
		struct rp_export_acl_req req;

		memset(&req, 0, sizeof(req));
		req.x.region = 1;
		req.x.access = RP_ACCESS_REMOTE_READ;
		strcpy(req.x.name, "acl");
		req.flags = RP_EXPORT_ANY_USER;
		req.n_uids = 2;
		req.uids[0] = 1001;
		req.uids[1] = 0;
		req.n_gids = 1;
		req.gids[0] = 1002;
		req.n_peers = 1;
		strcpy(req.peers[0], "nodeB");
		pkt(0, RP_MSG_EXPORT_ACL, &req, sizeof(req));
		name_req(RP_MSG_REMOTE_OPEN, "", "acl");
		strcpy(req.x.name, "acl2");
		strcpy(req.peers[0], "nodeZ"); /* not a configured peer */
		pkt(0, RP_MSG_EXPORT_ACL, &req, sizeof(req));
		strcpy(req.peers[0], "nodeB");
		req.uids[5] = 7; /* past n_uids: refused */
		pkt(0, RP_MSG_EXPORT_ACL, &req, sizeof(req));
		req.uids[5] = 0;
		req.pad[1] = 1; /* padding: a protocol violation */
		pkt(0, RP_MSG_EXPORT_ACL, &req, sizeof(req));
	}
	save("ctl", "export-acl");

	put8(&sb, 0);
	hello_v(1, 1);
	region(FC_FD_MEMFD, 4096);
	export_req(RP_MSG_EXPORT, 1, RP_ACCESS_REMOTE_READ, "v1");
	{
		struct rp_export_acl_req req;

		memset(&req, 0, sizeof(req));
		req.x.region = 1;
		req.x.access = RP_ACCESS_REMOTE_READ;
		strcpy(req.x.name, "v1acl"); /* not in version 1: a protocol violation */
		pkt(0, RP_MSG_EXPORT_ACL, &req, sizeof(req));
	}
	save("ctl", "export-acl-v1");

	put8(&sb, 0);
	hello();
	{
		struct rp_export_acl_req req;

		memset(&req, 0, sizeof(req));
		strcpy(req.x.name, "epacl");
		req.n_uids = 1;
		req.uids[0] = 1001;
		req.n_gids = 1;
		req.gids[0] = 1002;
		req.n_peers = 1;
		strcpy(req.peers[0], "nodeB");
		pkt(0, RP_MSG_EP_BIND_ACL, &req, sizeof(req));
		strcpy(req.x.name, "epacl2");
		strcpy(req.peers[0], "nodeZ"); /* not a configured peer */
		pkt(0, RP_MSG_EP_BIND_ACL, &req, sizeof(req));
		strcpy(req.peers[0], "nodeB");
		req.x.region = 1; /* endpoints have no region: refused */
		pkt(0, RP_MSG_EP_BIND_ACL, &req, sizeof(req));
		req.x.region = 0;
		req.pad[2] = 1; /* padding: a protocol violation */
		pkt(0, RP_MSG_EP_BIND_ACL, &req, sizeof(req));
	}
	save("ctl", "ep-acl");

	put8(&sb, 0);
	hello_v(1, RP_PROTO_VERSION_EP_ACL - 1);
	{
		struct rp_export_acl_req req;

		memset(&req, 0, sizeof(req));
		strcpy(req.x.name, "v3acl"); /* not before version 4: a protocol violation */
		pkt(0, RP_MSG_EP_BIND_ACL, &req, sizeof(req));
	}
	save("ctl", "ep-acl-v3");

	put8(&sb, 3); /* uid 1003: not an allowed user */
	hello();
	save("ctl", "user-refused");

	put8(&sb, FC_SETUP_SMALL_BYTES); /* one region, FC_MEMFD_MAX bytes */
	hello();
	region(FC_FD_MEMFD, FC_MEMFD_MAX);
	region(FC_FD_MEMFD, 4096);
	export_req(RP_MSG_EXPORT, 1, RP_ACCESS_REMOTE_READ, "l1");
	export_req(RP_MSG_EXPORT, 1, RP_ACCESS_REMOTE_READ, "l2");
	save("ctl", "limits");

	put8(&sb, 0);
	hello();
	put8(&sb, FC_EV_OPEN_REFUSE);
	name_req(RP_MSG_REMOTE_OPEN, "nodeB", "far");
	put8(&sb, FC_EV_SEND_FAIL);
	ep_bind("unsent");
	save("ctl", "refusals");

	put8(&sb, 0);
	hello();
	{
		struct rp_hdr h = { .len = 99, .type = RP_MSG_EP_BIND, .seq = 5 };
		char name[64] = "fixed";
		uint16_t n = sizeof(h) + sizeof(name);

		put8(&sb, FC_FIXLEN);
		put(&sb, &n, 2);
		put(&sb, &h, sizeof(h));
		put(&sb, name, sizeof(name));
		put8(&sb, 0); /* the same without FIXLEN: a malformed header */
		put(&sb, &n, 2);
		put(&sb, &h, sizeof(h));
		put(&sb, name, sizeof(name));
	}
	save("ctl", "header-length");
}

/* ---- fuzz-sqe ---- */

static void sqe(bool b, uint8_t count, uint8_t op, uint8_t region, uint8_t target, uint8_t flags,
		uint16_t off, uint16_t roff, uint16_t len, uint8_t imm)
{
	struct fs_sqe c = {
		.opcode = (uint8_t)(op - RP_SQE_WRITE),
		.region = region,
		.target = target,
		.flags = flags,
		.offset = { (uint8_t)off, (uint8_t)(off >> 8) },
		.remote_offset = { (uint8_t)roff, (uint8_t)(roff >> 8) },
		.len = { (uint8_t)len, (uint8_t)(len >> 8) },
		.imm = imm,
	};

	put8(&sb, FS_SQE | (b ? FS_B : 0));
	put8(&sb, count);
	put(&sb, &c, sizeof(c));
}

static void cmd(bool b, uint8_t c)
{
	put8(&sb, c | (b ? FS_B : 0));
}

static void cmd1(bool b, uint8_t c, uint8_t x)
{
	cmd(b, c);
	put8(&sb, x);
}

static void cmd2(bool b, uint8_t c, uint8_t x, uint8_t y)
{
	cmd1(b, c, x);
	put8(&sb, y);
}

#define A false
#define B true

static void sqe_seeds(void)
{
	struct rp_sqe raw = { .opcode = 9, .len = 1, .region = 1, .target = 1 };
	uint32_t v = 0x12345;
	int i;

	sqe(A, 0, RP_SQE_WRITE, FS_REGION_BIG, FS_H_RW, 0, 0, 0, 4096, 0);
	sqe(A, 0, RP_SQE_READ, FS_REGION_BIG, FS_H_RO, 0, 4096, 100, 200, 0);
	sqe(A, 0, RP_SQE_WRITE, FS_REGION_SMALL, FS_H_SELF, 0, 0, 8192, 64, 0);
	cmd(A, FS_RUN);
	cmd1(A, FS_REAP, 7);
	save("sqe", "write-read");

	sqe(A, 3, RP_SQE_WRITE, FS_REGION_BIG, FS_H_RW, RP_NOTIFY, 0, 512, 64, 42);
	cmd(A, FS_RUN | FS_RUN_PASS | FS_RUN_ARM);
	cmd1(A, FS_REAP, 3);
	cmd1(B, FS_REAP, 3);
	save("sqe", "notify");

	sqe(A, 0, RP_SQE_WRITE, FS_REGION_BIG, FS_H_RW, RP_NOTIFY, 0, 0, 16, 1);
	sqe(A, 0, RP_SQE_WRITE, FS_REGION_BIG, FS_H_SELF, RP_NOTIFY, 0, 64, 16, 2);
	cmd(A, FS_RUN | FS_RUN_PASS);
	cmd1(A, FS_REAP, 3);
	cmd1(B, FS_REAP, 3);
	cmd(A, FS_RUN | FS_RUN_ARM);
	sqe(A, 0, RP_SQE_READ, FS_REGION_BIG, FS_H_RO, 0, 0, 0, 16, 0);
	cmd(A, FS_RUN | FS_RUN_ARM);
	cmd1(A, FS_REAP, 3);
	save("sqe", "pass-and-arm");

	sqe(B, 1, RP_SQE_POST_RECV, FS_REGION_BIG, FS_EP, 0, 0, 0, 256, 0);
	cmd(B, FS_RUN);
	sqe(A, 0, RP_SQE_SEND, FS_REGION_BIG, FS_D_B, 0, 100, 0, 100, 0);
	sqe(A, 0, RP_SQE_SEND, FS_REGION_BIG, FS_D_B, 0, 0, 0, 300, 0);
	sqe(A, 0, RP_SQE_SEND, FS_REGION_BIG, FS_D_NOBODY, 0, 0, 0, 1, 0);
	sqe(A, 0, RP_SQE_SEND, FS_REGION_BIG, FS_D_SELF, 0, 0, 0, 1, 0);
	cmd(A, FS_RUN);
	cmd1(A, FS_REAP, 15);
	cmd1(B, FS_REAP, 15);
	save("sqe", "send-recv");

	sqe(A, 2, RP_SQE_WRITE, FS_REGION_BIG, FS_H_FAR, 0, 0, 0, 1024, 0);
	sqe(A, 0, RP_SQE_READ, FS_REGION_BIG, FS_H_FAR, 0, 0, 0, 1024, 0);
	sqe(A, 0, RP_SQE_SEND, FS_REGION_BIG, FS_D_FAR, 0, 0, 0, 10, 0);
	cmd(A, FS_RUN);
	cmd2(A, FS_PEER, 0, 0);
	cmd2(A, FS_PEER, 2, 3);
	cmd1(A, FS_REAP, 7);
	cmd1(A, FS_CTL, FS_CTL_REVOKE);
	cmd1(A, FS_CTL, FS_CTL_PEER_REFUSE);
	sqe(A, 0, RP_SQE_WRITE, FS_REGION_BIG, FS_H_FAR, 0, 0, 0, 1, 0);
	cmd(A, FS_RUN);
	cmd1(A, FS_REAP, 7);
	save("sqe", "remote");

	for (i = 0; i < 5; i++) {
		sqe(A, 255, RP_SQE_WRITE, FS_REGION_BIG, FS_H_RW, 0, 0, 0, 8, 0);
		cmd(A, FS_RUN);
	}
	for (i = 0; i < 5; i++)
		cmd1(A, FS_REAP, 255);
	cmd(A, FS_RUN);
	cmd1(A, FS_REAP, 255);
	save("sqe", "stall");

	sqe(A, 0, RP_SQE_WRITE, 0, FS_H_RW, 0, 0, 0, 1, 0);
	sqe(A, 0, RP_SQE_WRITE, FS_REGION_BIG, 77, 0, 0, 0, 1, 0);
	sqe(A, 0, RP_SQE_WRITE, FS_REGION_BIG, FS_H_RO, 0, 0, 0, 1, 0);
	sqe(A, 0, RP_SQE_WRITE, FS_REGION_SMALL, FS_H_RW, 0, 4000, 0, 200, 0);
	sqe(A, 0, RP_SQE_READ, FS_REGION_BIG, FS_H_RW, RP_NOTIFY, 0, 0, 1, 0);
	sqe(A, 0, RP_SQE_READ, FS_REGION_BIG, FS_H_RW, 0, 0, 16000, 1000, 0);
	sqe(A, 0, RP_SQE_POST_RECV, FS_REGION_BIG, FS_EP, 0, 0, 1, 1, 0);
	sqe(A, 0, RP_SQE_POST_RECV, FS_REGION_BIG, 9, 0, 0, 0, 1, 0);
	sqe(A, 0, RP_SQE_SEND, FS_REGION_BIG, 9, 0, 0, 0, 1, 0);
	cmd(A, FS_RUN);
	cmd1(A, FS_REAP, 15);
	save("sqe", "errors");

	sqe(A, 0, RP_SQE_WRITE, FS_REGION_BIG, FS_H_RW, 0, 0, 0, 1, 0);
	cmd1(A, FS_INDEX, FS_IX_SQ_PRODUCER);
	put(&sb, &v, 4);
	cmd(A, FS_RUN);
	sqe(B, 0, RP_SQE_POST_RECV, FS_REGION_BIG, FS_EP, 0, 0, 0, 1, 0);
	cmd1(B, FS_INDEX, FS_IX_CQ_CONSUMER);
	put(&sb, &v, 4);
	cmd(B, FS_RUN);
	save("sqe", "corrupt-index");

	sqe(A, 0, RP_SQE_WRITE, FS_REGION_BIG, FS_H_RW, 0, 0, 0, 1, 0);
	cmd(A, FS_RAW);
	raw.opcode = RP_SQE_READ;
	put(&sb, &raw, FS_RAW_LEN);
	cmd(A, FS_RAW);
	raw.opcode = 9;
	put(&sb, &raw, FS_RAW_LEN);
	cmd(A, FS_RUN);
	save("sqe", "raw-opcode");

	cmd(B, FS_RAW | FS_RAW_PAD);
	raw.opcode = RP_SQE_POST_RECV;
	raw.pad[3] = 1;
	put(&sb, &raw, sizeof(raw));
	cmd(B, FS_RUN);
	save("sqe", "raw-padding");

	sqe(A, 1, RP_SQE_WRITE, FS_REGION_BIG, FS_H_FAR, 0, 0, 0, 64, 0);
	sqe(A, 0, RP_SQE_POST_RECV, FS_REGION_SMALL, FS_EP, 0, 0, 0, 64, 0);
	cmd(A, FS_RUN);
	cmd1(A, FS_CTL, FS_CTL_RELEASE);
	cmd2(A, FS_PEER, 0, 0);
	save("sqe", "release-held");

	sqe(B, 1, RP_SQE_POST_RECV, FS_REGION_BIG, FS_EP, 0, 64, 0, 128, 0);
	cmd(B, FS_RUN);
	cmd2(B, FS_RX | 0x08, 50, 1);
	cmd2(B, FS_RX | 0x08, 50, 0);
	cmd2(B, FS_RX | 0x08, 200, 0);
	cmd2(B, FS_RX, 16, 0);
	cmd2(B, FS_RX, 16, 1);
	cmd1(B, FS_REAP, 7);
	save("sqe", "peer-rx");

	cmd1(B, FS_CTL, FS_CTL_INFLIGHT);
	sqe(B, 2, RP_SQE_POST_RECV, FS_REGION_BIG, FS_EP, 0, 0, 0, 16, 0);
	cmd(B, FS_RUN);
	cmd1(B, FS_REAP, 7);
	cmd1(B, FS_CTL, FS_CTL_UNBIND);
	cmd1(B, FS_REAP, 7);
	save("sqe", "inflight");

	sqe(A, 0, RP_SQE_POST_RECV, FS_REGION_SMALL, FS_EP, 0, 0, 0, 64, 0);
	cmd(A, FS_RUN);
	cmd1(A, FS_CTL, FS_CTL_FREE_REGION);
	sqe(A, 0, RP_SQE_SEND, FS_REGION_BIG, FS_D_SELF, 0, 0, 0, 64, 0);
	cmd1(A, FS_CTL, FS_CTL_UNEXPORT);
	cmd1(A, FS_CTL, FS_CTL_CLOSE_HANDLE);
	sqe(A, 0, RP_SQE_WRITE, FS_REGION_BIG, FS_H_RO, 0, 0, 0, 1, 0);
	sqe(A, 0, RP_SQE_WRITE, FS_REGION_BIG, FS_H_RW, 0, 0, 0, 1, 0);
	cmd(A, FS_RUN);
	cmd1(A, FS_REAP, 15);
	save("sqe", "control-changes");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS-DIR\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	ctl_seeds();
	sqe_seeds();
	return 0;
}
