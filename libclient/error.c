/* SPDX-License-Identifier: MIT */
/* rp_strerror: one static explanation per code. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "rdmaproxy.h"

static const char *const rp_errors[RP_EMAX - RP_EBASE] = {
	[RP_EPEERUNKNOWN - RP_EBASE] = "unknown peer: neither this node nor a configured peer",
	[RP_EPEERDOWN - RP_EBASE] = "the peer is configured but not connected",
	[RP_EREMOTEACCESS - RP_EBASE] = "remote access denied: the export does not grant it",
	[RP_EOUTCOME - RP_EBASE] = "outcome unknown: the connection broke after the operation "
				   "was posted",
	[RP_ENOEXPORT - RP_EBASE] = "no export of that name",
	[RP_EUNEXPORTED - RP_EBASE] = "the export behind this remote handle was withdrawn",
	[RP_ENOENDPOINT - RP_EBASE] = "no endpoint of that name is bound",
	[RP_ENORECV - RP_EBASE] = "the endpoint has no receive buffer posted (or it was cancelled)",
	[RP_ERECVSMALL - RP_EBASE] = "the posted receive buffer is smaller than the message",
	[RP_ENOTIFYSPACE - RP_EBASE] = "the exporter's completion ring is full: write not done",
	[RP_EDAEMON - RP_EBASE] = "the daemon closed the connection",
	[RP_EDENIED - RP_EBASE] = "this user is not allowed by the daemon's configuration",
	[RP_ELIMIT_CONN - RP_EBASE] = "per-user limit on connections reached (max_connections)",
	[RP_ELIMIT_BYTES - RP_EBASE] = "per-user limit on registered bytes reached "
				       "(max_registered_bytes)",
	[RP_ELIMIT_REGIONS - RP_EBASE] = "per-user limit on regions reached (max_regions)",
	[RP_ELIMIT_INFLIGHT - RP_EBASE] = "per-user limit on operations in flight reached "
					  "(max_inflight)",
	[RP_ENOHUGE - RP_EBASE] = "no huge pages available for a huge-page region",
	[RP_EREGION_TYPE - RP_EBASE] = "region refused: not a regular file (pipe, socket or "
				       "device)",
	[RP_EREGION_FS - RP_EBASE] = "region refused: not shared memory (tmpfs/hugetlbfs), e.g. "
				     "a file on disk",
	[RP_EREGION_SEALS - RP_EBASE] = "region refused: memfd not sealed against shrinking and "
					"growing",
	[RP_EREGION_SIZE - RP_EBASE] = "region refused: file size differs from the claimed length",
	[RP_EREGION_MODE - RP_EBASE] = "region refused: O_PATH or not opened read-write",
	[RP_EBOUNDS - RP_EBASE] = "offset and length exceed the local region",
	[RP_EREMOTEBOUNDS - RP_EBASE] = "offset and length exceed the remote region",
	[RP_EBADHANDLE - RP_EBASE] = "unknown region, remote or endpoint handle",
	[RP_ESTALE - RP_EBASE] = "stale remote handle: the peer daemon restarted since it was "
				 "opened (open it again)",
	[RP_ELIMIT_EXPORTS - RP_EBASE] = "per-user limit on exports reached (max_regions in "
					 "rdmaproxy.conf bounds exports too)",
	[RP_EEXPORT_DENIED - RP_EBASE] = "export access denied: the export does not allow this "
					 "user (or, on a peer, this node) to open it",
	[RP_ELIMIT_ENDPOINTS - RP_EBASE] = "per-user limit on endpoints reached (max_regions in "
					   "rdmaproxy.conf bounds endpoints too)",
	[RP_EENDPOINT_DENIED - RP_EBASE] = "endpoint access denied: the endpoint does not allow "
					   "this user (or, on a peer, this node) to send to it",
};

RP_EXPORT const char *rp_strerror(int err)
{
	int e = err == INT_MIN ? 0 : err < 0 ? -err : err;

	if (err == INT_MIN)
		return "unknown error";
	if (e == 0)
		return "success";
	if (e >= RP_EBASE && e < RP_EMAX && rp_errors[e - RP_EBASE])
		return rp_errors[e - RP_EBASE];
	switch (e) {
	case EPROTONOSUPPORT:
		return "protocol version not supported by the daemon";
	case EPROTO:
		return "protocol error (malformed message)";
	case EAGAIN:
		return "submission ring full: reap completions and retry";
	case ECANCELED:
		return "cancelled: its endpoint was unbound, its region freed or the daemon "
		       "stopped";
	default:
		return strerror(e);
	}
}
