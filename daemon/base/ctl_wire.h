/* SPDX-License-Identifier: MIT */
/*
 * The client control protocol (rp-proto.h) as the daemon receives it: the
 * exact body size of every request type and the checks every packet passes
 * before anything acts on it. Pure functions of the bytes: the first parser
 * of untrusted input, fuzzed by tests/fuzz/fuzz-ctl.c.
 */
#ifndef RP_DAEMON_CTL_WIRE_H
#define RP_DAEMON_CTL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "rp-proto.h"

/* Exact request body size of @type, or -1 if no request has that type. */
long ctl_body_size(uint16_t type);
/* Administration requests (0x08xx), answered by admin.c. */
static inline int ctl_is_admin(uint16_t type)
{
	return (type & 0xff00) == 0x0800;
}
/*
 * A packet of @n bytes with @nfds attached fds: 0 if it is a well-formed
 * request, or -EPROTO with the reason in @why.
 */
int ctl_validate(const struct rp_hdr *h, size_t n, int nfds, const char **why);

#endif
