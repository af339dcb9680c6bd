/* SPDX-License-Identifier: MIT */
/* Connection, regions, exports, remote handles and endpoints. */
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int map_rings(struct rp_client *c, const int *fds)
{
	const struct rp_hello_reply *h = &c->conn.hello;
	struct stat st;
	void *p;

	if (fstat(fds[0], &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != h->ring_size || h->ring_size > SIZE_MAX ||
	    h->ring_size < rp_ring_bytes(h->sq_entries, h->cq_entries))
		return -EPROTO;
	p = mmap(NULL, (size_t)h->ring_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (p == MAP_FAILED)
		return -errno;
	c->ring_base = p;
	c->ring_size = (size_t)h->ring_size;
	if (rp_ring_view_init(&c->v, p, c->ring_size, h->sq_entries, h->cq_entries) < 0 ||
	    c->v.info->magic != RP_RING_MAGIC)
		return -EPROTO;
	c->sq_tail = rp_ring_load(&c->v.sq->producer);
	c->sq_cons = rp_ring_load(&c->v.sq->consumer);
	c->cq_head = rp_ring_load(&c->v.cq->consumer);
	c->seq = c->conn.hello.version >= RP_PROTO_VERSION_SEQ;
	return 0;
}

RP_EXPORT int rp_connect(const char *path, struct rp_client **ret)
{
	struct rp_client *c;
	int fds[RP_HELLO_FDS], r;

	if (!ret)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->sq_bell = c->cq_bell = c->ep_fd = -1;
	client_wait_init(c);
	r = conn_open(&c->conn, path, fds);
	if (r < 0) {
		free(c);
		return r;
	}
	r = map_rings(c, fds);
	close(fds[0]);
	c->sq_bell = fds[1];
	c->cq_bell = fds[2];
	if (r == 0)
		r = client_poll_set(c);
	if (r < 0) {
		rp_disconnect(c);
		return r;
	}
	*ret = c;
	return 0;
}

static void unmap_region(struct rp_region *r)
{
	munmap(r->ptr, r->len);
	free(r);
}

RP_EXPORT void rp_disconnect(struct rp_client *c)
{
	uint32_t i;

	if (!c)
		return;
	/* Closing the socket makes the daemon release everything at once. */
	conn_close(&c->conn);
	for (i = 0; i < c->n_regions; i++)
		if (c->regions[i])
			unmap_region(c->regions[i]);
	free(c->regions);
	while (c->remotes) {
		struct rp_remote *rm = c->remotes;

		c->remotes = rm->next;
		free(rm);
	}
	while (c->endpoints) {
		struct rp_endpoint *ep = c->endpoints;

		c->endpoints = ep->next;
		free(ep);
	}
	while (c->dests) {
		struct rp_dest *d = c->dests;

		c->dests = d->next;
		free(d);
	}
	if (c->ring_base)
		munmap(c->ring_base, c->ring_size);
	if (c->sq_bell >= 0)
		close(c->sq_bell);
	if (c->cq_bell >= 0)
		close(c->cq_bell);
	if (c->ep_fd >= 0)
		close(c->ep_fd);
	ops_release(c);
	free(c);
}

RP_EXPORT const char *rp_node_name(const struct rp_client *c)
{
	return c ? c->conn.hello.node_name : NULL;
}

/* Copy a name into a fixed wire field: 1..RP_NAME_LEN characters. */
static int put_name(char *dst, const char *name, bool empty_ok)
{
	size_t n = name ? strlen(name) : 0;

	memset(dst, 0, RP_NAME_MAX);
	if (n > RP_NAME_LEN || (!n && !empty_ok))
		return -EINVAL;
	if (n)
		memcpy(dst, name, n);
	return 0;
}

/* Region ids fit 16 bits (rp_cqe.region): a bigger one is the daemon's error. */
#define MAX_REGION_ID 65535u

static int region_slot(struct rp_client *c, struct rp_region *r)
{
	if (r->id > MAX_REGION_ID)
		return -EPROTO;
	if (r->id > c->n_regions) {
		uint32_t n = c->n_regions ? c->n_regions : 16;
		struct rp_region **v;

		while (n < r->id)
			n *= 2;
		v = realloc(c->regions, sizeof(*v) * n);
		if (!v)
			return -ENOMEM;
		memset(v + c->n_regions, 0, sizeof(*v) * (n - c->n_regions));
		c->regions = v;
		c->n_regions = n;
	}
	c->regions[r->id - 1] = r;
	return 0;
}

/* A memfd of @len bytes (rounded up to its page size), allocated and sealed. */
static int make_memfd(size_t *len, unsigned flags)
{
	unsigned mfd = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	struct stat st;
	size_t page;
	int fd, err;

	if (flags & RP_REGION_HUGE)
		mfd |= MFD_HUGETLB;
	fd = memfd_create("rdmaproxy-region", mfd);
	if (fd < 0)
		return (flags & RP_REGION_HUGE) && (errno == EINVAL || errno == ENOENT)
			       ? -RP_ENOHUGE
			       : -errno;
	if (fstat(fd, &st) < 0)
		goto out_errno;
	page = (flags & RP_REGION_HUGE) ? (size_t)st.st_blksize : (size_t)sysconf(_SC_PAGESIZE);
	if (*len > SIZE_MAX - page) {
		errno = ENOMEM;
		goto out_errno;
	}
	*len = (*len + page - 1) & ~(page - 1);
	/* Allocate now: a shortage is an error here, not a SIGBUS later. */
	if (ftruncate(fd, (off_t)*len) < 0 || fallocate(fd, 0, 0, (off_t)*len) < 0)
		goto out_errno;
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto out_errno;
	return fd;

out_errno:
	err = (flags & RP_REGION_HUGE) && (errno == ENOMEM || errno == ENOSPC) ? -RP_ENOHUGE
									       : -errno;
	close(fd);
	return err;
}

RP_EXPORT int rp_region_alloc(struct rp_client *c, size_t len, unsigned flags,
			      struct rp_region **ret)
{
	struct rp_region_reg req = { .flags = flags };
	struct rp_id rep = { 0 };
	struct rp_region *r;
	int fd, err;

	if (!c || !ret || !len || (flags & ~RP_REGION_HUGE))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	fd = make_memfd(&len, flags);
	if (fd < 0) {
		err = fd;
		goto out_free;
	}
	r->ptr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (r->ptr == MAP_FAILED) {
		err = (flags & RP_REGION_HUGE) && errno == ENOMEM ? -RP_ENOHUGE : -errno;
		goto out_close;
	}
	r->c = c;
	r->len = len;
	req.len = len;
	err = client_request(c, RP_MSG_REGION_REG, &req, sizeof(req), fd, &rep, sizeof(rep));
	if (err == 0)
		err = rep.id ? 0 : -EPROTO;
	if (err == 0) {
		r->id = rep.id;
		err = region_slot(c, r);
		if (err < 0) {
			/* Registered: give it back, or it counts against our limits until we leave.
			 */
			struct rp_id fr = { .id = rep.id };

			client_request(c, RP_MSG_REGION_FREE, &fr, sizeof(fr), -1, NULL, 0);
		}
	}
	if (err < 0)
		goto out_unmap;
	close(fd);
	*ret = r;
	return 0;

out_unmap:
	munmap(r->ptr, len);
out_close:
	close(fd);
out_free:
	free(r);
	return err;
}

RP_EXPORT int rp_region_free(struct rp_region *r)
{
	struct rp_client *c;
	struct rp_id req = { 0 };
	int err;

	if (!r)
		return -EINVAL;
	c = r->c;
	req.id = r->id;
	err = client_request(c, RP_MSG_REGION_FREE, &req, sizeof(req), -1, NULL, 0);
	c->regions[r->id - 1] = NULL;
	ops_forget_region(c, r->id);
	unmap_region(r);
	return err;
}

RP_EXPORT void *rp_region_ptr(const struct rp_region *r)
{
	return r ? r->ptr : NULL;
}

RP_EXPORT size_t rp_region_len(const struct rp_region *r)
{
	return r ? r->len : 0;
}

static int export_req(struct rp_region *r, uint16_t type, const char *name, unsigned access)
{
	struct rp_export_req req = { .access = access };

	if (!r || put_name(req.name, name, false) < 0)
		return -EINVAL;
	req.region = r->id;
	return client_request(r->c, type, &req, sizeof(req), -1, NULL, 0);
}

RP_EXPORT int rp_region_export(struct rp_region *r, const char *name, unsigned access)
{
	if (!access || (access & ~(RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE)))
		return -EINVAL;
	return export_req(r, RP_MSG_EXPORT, name, access);
}

/* @acl into the wire's fixed lists; -EINVAL or -EOPNOTSUPP for what cannot go. */
static int put_acl(struct rp_export_acl_req *req, const struct rp_export_acl *acl)
{
	size_t i;

	if ((acl->flags & ~(RP_EXPORT_ANY_USER | RP_EXPORT_ANY_PEER)) ||
	    acl->n_uids > RP_EXPORT_ACL_MAX || acl->n_gids > RP_EXPORT_ACL_MAX ||
	    acl->n_peers > RP_EXPORT_ACL_MAX || (acl->n_uids && !acl->uids) ||
	    (acl->n_gids && !acl->gids) || (acl->n_peers && !acl->peers))
		return -EINVAL;
	req->flags = acl->flags;
	req->n_uids = (uint16_t)acl->n_uids;
	req->n_gids = (uint16_t)acl->n_gids;
	req->n_peers = (uint16_t)acl->n_peers;
	for (i = 0; i < acl->n_uids; i++)
		req->uids[i] = (uint32_t)acl->uids[i];
	for (i = 0; i < acl->n_gids; i++)
		req->gids[i] = (uint32_t)acl->gids[i];
	for (i = 0; i < acl->n_peers; i++)
		if (put_name(req->peers[i], acl->peers[i], false) < 0)
			return -EINVAL;
	return 0;
}

static bool acl_empty(const struct rp_export_acl *acl)
{
	return !acl || (!acl->flags && !acl->n_uids && !acl->n_gids && !acl->n_peers);
}

RP_EXPORT int rp_region_export_acl(struct rp_region *r, const char *name, unsigned access,
				   const struct rp_export_acl *acl)
{
	struct rp_export_acl_req *req;
	int err;

	if (acl && acl->comp_mask)
		return -EOPNOTSUPP;
	/* Nobody named: a plain EXPORT, which every daemon understands. */
	if (acl_empty(acl))
		return rp_region_export(r, name, access);
	if (!r || !access || (access & ~(RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE)))
		return -EINVAL;
	req = calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	req->x.region = r->id;
	req->x.access = access;
	err = put_name(req->x.name, name, false);
	if (err == 0)
		err = put_acl(req, acl);
	/* An older daemon would let everybody in: say so rather than export. */
	if (err == 0 && r->c->conn.hello.version < RP_PROTO_VERSION_ACL)
		err = -EOPNOTSUPP;
	if (err == 0)
		err = client_request(r->c, RP_MSG_EXPORT_ACL, req, sizeof(*req), -1, NULL, 0);
	free(req);
	return err;
}

RP_EXPORT int rp_region_unexport(struct rp_region *r, const char *name)
{
	return export_req(r, RP_MSG_UNEXPORT, name, 0);
}

/* Local peer spellings all become "": the daemon then needs no name compare. */
static int put_peer(struct rp_client *c, char *dst, const char *peer)
{
	if (peer && !strcmp(peer, c->conn.hello.node_name))
		peer = NULL;
	return put_name(dst, peer, true);
}

RP_EXPORT int rp_remote_open(struct rp_client *c, const char *peer, const char *name,
			     struct rp_remote **ret)
{
	struct rp_name_req req;
	struct rp_remote_reply rep = { 0 };
	struct rp_remote *rm;
	int err;

	if (!c || !ret || put_peer(c, req.peer, peer) < 0 || put_name(req.name, name, false) < 0)
		return -EINVAL;
	rm = calloc(1, sizeof(*rm));
	if (!rm)
		return -ENOMEM;
	err = client_request(c, RP_MSG_REMOTE_OPEN, &req, sizeof(req), -1, &rep, sizeof(rep));
	if (err < 0) {
		free(rm);
		return err;
	}
	rm->c = c;
	rm->id = rep.id;
	rm->access = rep.access;
	rm->len = rep.len;
	rm->next = c->remotes;
	if (c->remotes)
		c->remotes->prev = rm;
	c->remotes = rm;
	*ret = rm;
	return 0;
}

RP_EXPORT size_t rp_remote_len(const struct rp_remote *rm)
{
	return rm ? (size_t)rm->len : 0;
}

RP_EXPORT unsigned rp_remote_access(const struct rp_remote *rm)
{
	return rm ? rm->access : 0;
}

RP_EXPORT int rp_remote_close(struct rp_remote *rm)
{
	struct rp_id req = { 0 };
	struct rp_client *c;
	int err;

	if (!rm)
		return -EINVAL;
	c = rm->c;
	req.id = rm->id;
	err = client_request(c, RP_MSG_REMOTE_CLOSE, &req, sizeof(req), -1, NULL, 0);
	if (rm->prev)
		rm->prev->next = rm->next;
	else
		c->remotes = rm->next;
	if (rm->next)
		rm->next->prev = rm->prev;
	free(rm);
	return err;
}

/* EP_BIND, or with @acl_req EP_BIND_ACL (its name already in place). */
static int ep_bind(struct rp_client *c, const char *name, const struct rp_export_acl_req *acl_req,
		   struct rp_endpoint **ret)
{
	struct rp_ep_req req;
	struct rp_id rep = { 0 };
	struct rp_endpoint *ep;
	int err;

	if (!acl_req && put_name(req.name, name, false) < 0)
		return -EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	if (acl_req)
		err = client_request(c, RP_MSG_EP_BIND_ACL, acl_req, sizeof(*acl_req), -1, &rep,
				     sizeof(rep));
	else
		err = client_request(c, RP_MSG_EP_BIND, &req, sizeof(req), -1, &rep, sizeof(rep));
	if (err < 0) {
		free(ep);
		return err;
	}
	ep->c = c;
	ep->id = rep.id;
	ep->next = c->endpoints;
	if (c->endpoints)
		c->endpoints->prev = ep;
	c->endpoints = ep;
	*ret = ep;
	return 0;
}

RP_EXPORT int rp_endpoint_bind(struct rp_client *c, const char *name, struct rp_endpoint **ret)
{
	if (!c || !ret)
		return -EINVAL;
	return ep_bind(c, name, NULL, ret);
}

RP_EXPORT int rp_endpoint_bind_acl(struct rp_client *c, const char *name,
				   const struct rp_export_acl *acl, struct rp_endpoint **ret)
{
	static const struct rp_export_acl nobody;
	struct rp_export_acl_req *req;
	int err;

	if (!c || !ret)
		return -EINVAL;
	if (acl && acl->comp_mask)
		return -EOPNOTSUPP;
	req = calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	err = put_name(req->x.name, name, false);
	if (err == 0)
		err = put_acl(req, acl ? acl : &nobody);
	/* An older daemon would let everybody send: say so rather than bind. */
	if (err == 0 && c->conn.hello.version < RP_PROTO_VERSION_EP_ACL)
		err = -EOPNOTSUPP;
	if (err == 0)
		err = ep_bind(c, name, req, ret);
	free(req);
	return err;
}

RP_EXPORT int rp_endpoint_unbind(struct rp_endpoint *ep)
{
	struct rp_id req = { 0 };
	struct rp_client *c;
	int err;

	if (!ep)
		return -EINVAL;
	c = ep->c;
	req.id = ep->id;
	err = client_request(c, RP_MSG_EP_UNBIND, &req, sizeof(req), -1, NULL, 0);
	if (ep->prev)
		ep->prev->next = ep->next;
	else
		c->endpoints = ep->next;
	if (ep->next)
		ep->next->prev = ep->prev;
	free(ep);
	return err;
}

/* Destinations are named once per (peer, endpoint) and then sent to by id. */
static int dest_id(struct rp_client *c, const char *peer, const char *name, uint32_t *ret)
{
	struct rp_name_req req;
	struct rp_id rep = { 0 };
	struct rp_dest *d;
	int err;

	if (put_peer(c, req.peer, peer) < 0 || put_name(req.name, name, false) < 0)
		return -EINVAL;
	for (d = c->dests; d; d = d->next)
		if (!strcmp(d->peer, req.peer) && !strcmp(d->name, req.name)) {
			*ret = d->id;
			return 0;
		}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	err = client_request(c, RP_MSG_DEST_OPEN, &req, sizeof(req), -1, &rep, sizeof(rep));
	if (err < 0) {
		free(d);
		return err;
	}
	d->id = rep.id;
	memcpy(d->peer, req.peer, sizeof(d->peer));
	memcpy(d->name, req.name, sizeof(d->name));
	d->next = c->dests;
	c->dests = d;
	*ret = d->id;
	return 0;
}

RP_EXPORT int rp_send(struct rp_client *c, const char *peer, const char *endpoint,
		      struct rp_region *r, size_t off, size_t len, uint64_t cookie)
{
	struct rp_sqe q = { .opcode = RP_SQE_SEND, .cookie = cookie, .offset = off, .len = len };
	int err = client_check_range(c, r, off, len);

	if (err == 0)
		err = dest_id(c, peer, endpoint, &q.target);
	if (err < 0)
		return err;
	q.region = r->id;
	return client_submit(c, &q);
}

RP_EXPORT int rp_post_recv(struct rp_endpoint *ep, struct rp_region *r, size_t off, size_t len,
			   uint64_t cookie)
{
	struct rp_sqe q = {
		.opcode = RP_SQE_POST_RECV, .cookie = cookie, .offset = off, .len = len
	};
	int err;

	if (!ep)
		return -EINVAL;
	err = client_check_range(ep->c, r, off, len);
	if (err < 0)
		return err;
	q.region = r->id;
	q.target = ep->id;
	return client_submit(ep->c, &q);
}
