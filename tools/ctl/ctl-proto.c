/* SPDX-License-Identifier: MIT */
/*
 * Admin requests with replies of variable length: refusals carry a reason
 * (struct rp_admin_text), lists come in pages that are fetched until the
 * daemon says there are no more.
 */
#include "ctl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "rdmaproxy.h"

/* The reply to the last request: its status, with the body in @reply. */
static int recv_packet(struct rp_conn *c, uint16_t type, void *reply, size_t cap, size_t *ret_len,
		       uint16_t *ret_flags, char *why, size_t whylen)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	const struct rp_hdr *h = (const struct rp_hdr *)buf;
	struct msghdr mh = { 0 };
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	size_t body;
	ssize_t n;

	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	do
		n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return -RP_EDAEMON;
	if (n < 0)
		return -errno;
	if ((size_t)n < sizeof(*h) || h->len != (size_t)n || h->type != (type | RP_MSG_REPLY) ||
	    h->seq != c->seq || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || h->status > 0)
		return -EPROTO;
	body = (size_t)n - sizeof(*h);
	if (h->status < 0) {
		const struct rp_admin_text *t = (const void *)(buf + sizeof(*h));

		if (body == sizeof(*t) && memchr(t->text, 0, sizeof(t->text)) && t->text[0])
			snprintf(why, whylen, "%s", t->text);
		else
			snprintf(why, whylen, "%s", rp_strerror(h->status));
		return h->status;
	}
	if (body > cap)
		return -EPROTO;
	memcpy(reply, buf + sizeof(*h), body);
	*ret_len = body;
	if (ret_flags)
		*ret_flags = h->flags;
	return 0;
}

int ctl_request(struct rp_conn *c, uint16_t type, const void *body, size_t len, void *reply,
		size_t cap, size_t *ret_len, uint16_t *ret_flags, char *why, size_t whylen)
{
	int r = conn_send(c, type, body, len, -1);

	if (r == 0)
		r = recv_packet(c, type, reply, cap, ret_len, ret_flags, why, whylen);
	if (r < 0 && r != -RP_EDAEMON && !why[0])
		snprintf(why, whylen, "%s", rp_strerror(r));
	return r;
}

/* One page: its header checked against the bytes that came. */
static int get_page(struct rp_conn *c, uint16_t type, uint64_t cursor, char *buf, size_t cap,
		    struct rp_admin_page *pg, size_t unit, char *why, size_t whylen)
{
	struct rp_admin_page_req req = { .cursor = cursor };
	size_t n = 0;
	int r;

	why[0] = '\0';
	r = ctl_request(c, type, &req, sizeof(req), buf, cap, &n, NULL, why, whylen);
	if (r < 0)
		return r;
	if (n < sizeof(*pg))
		return -EPROTO;
	memcpy(pg, buf, sizeof(*pg));
	if (n != sizeof(*pg) + (size_t)pg->count * unit || (pg->next && pg->next <= cursor))
		return -EPROTO; /* a cursor that does not advance would loop forever */
	return 0;
}

int ctl_list(struct rp_conn *c, uint16_t type, size_t recsize, void **ret, size_t *ret_n, char *why,
	     size_t whylen)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	struct rp_admin_page pg = { 0 };
	uint64_t cursor = 0;
	char *v = NULL, *nv;
	size_t n = 0;
	int r;

	do {
		r = get_page(c, type, cursor, buf, sizeof(buf), &pg, recsize, why, whylen);
		if (r < 0)
			goto out_free;
		nv = realloc(v, (n + pg.count) * recsize + 1);
		if (!nv) {
			r = -ENOMEM;
			goto out_free;
		}
		v = nv;
		memcpy(v + n * recsize, buf + sizeof(pg), (size_t)pg.count * recsize);
		n += pg.count;
		cursor = pg.next;
	} while (cursor);
	*ret = v;
	*ret_n = n;
	return 0;

out_free:
	free(v);
	return r;
}

int ctl_metrics(struct rp_conn *c, char **ret, size_t *ret_len, char *why, size_t whylen)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	struct rp_admin_page pg = { 0 };
	uint64_t cursor = 0;
	char *text = NULL, *nt;
	size_t n = 0;
	int r;

	do {
		r = get_page(c, RP_MSG_ADMIN_METRICS, cursor, buf, sizeof(buf), &pg, 1, why,
			     whylen);
		if (r < 0)
			goto out_free;
		if (cursor != n) {
			r = -EPROTO;
			goto out_free;
		}
		nt = realloc(text, n + pg.count + 1);
		if (!nt) {
			r = -ENOMEM;
			goto out_free;
		}
		text = nt;
		memcpy(text + n, buf + sizeof(pg), pg.count);
		n += pg.count;
		text[n] = '\0';
		cursor = pg.next;
	} while (cursor);
	if (!text || strlen(text) != n) {
		r = -EPROTO; /* no text, or a NUL inside it */
		goto out_free;
	}
	*ret = text;
	*ret_len = n;
	return 0;

out_free:
	free(text);
	return r;
}
