/* SPDX-License-Identifier: MIT */
#include "base/ctl_wire.h"

#include <errno.h>

long ctl_body_size(uint16_t type)
{
	switch (type) {
	case RP_MSG_HELLO:
		return sizeof(struct rp_hello);
	case RP_MSG_REGION_REG:
		return sizeof(struct rp_region_reg);
	case RP_MSG_REGION_FREE:
	case RP_MSG_REMOTE_CLOSE:
	case RP_MSG_EP_UNBIND:
		return sizeof(struct rp_id);
	case RP_MSG_EXPORT:
	case RP_MSG_UNEXPORT:
		return sizeof(struct rp_export_req);
	case RP_MSG_EXPORT_ACL:
	case RP_MSG_EP_BIND_ACL:
		return sizeof(struct rp_export_acl_req);
	case RP_MSG_REMOTE_OPEN:
	case RP_MSG_DEST_OPEN:
		return sizeof(struct rp_name_req);
	case RP_MSG_EP_BIND:
		return sizeof(struct rp_ep_req);
	case RP_MSG_STATUS:
	case RP_MSG_ADMIN_RELOAD:
		return 0;
	case RP_MSG_ADMIN_CLIENTS:
	case RP_MSG_ADMIN_REGIONS:
	case RP_MSG_ADMIN_ENDPOINTS:
	case RP_MSG_ADMIN_PEERS:
	case RP_MSG_ADMIN_METRICS:
		return sizeof(struct rp_admin_page_req);
	case RP_MSG_ADMIN_PING:
		return sizeof(struct rp_admin_ping_req);
	default:
		return -1;
	}
}

int ctl_validate(const struct rp_hdr *h, size_t n, int nfds, const char **why)
{
	long want;

	if (n < sizeof(*h) || h->len != n) {
		*why = "malformed message header";
		return -EPROTO;
	}
	want = ctl_body_size(h->type);
	if (want < 0 || h->flags || h->status || n - sizeof(*h) != (size_t)want) {
		*why = want < 0 ? "unknown message type" : "malformed message";
		return -EPROTO;
	}
	if (nfds != (h->type == RP_MSG_REGION_REG ? 1 : 0)) {
		*why = nfds ? "file descriptor(s) sent with a message that takes none, or more "
			      "than one"
			    : "region registration without its file descriptor";
		return -EPROTO;
	}
	return 0;
}
