/* SPDX-License-Identifier: MIT */
#include "base/stats.h"

#include <errno.h>
#include <stddef.h>

#include "rdmaproxy.h"

struct stats_totals stats_totals;

enum stats_err_kind stats_err_kind(int status)
{
	switch (-status) {
	case EINVAL:
	case RP_EBOUNDS:
	case RP_EBADHANDLE:
		return STATS_ERR_LOCAL;
	case RP_EREMOTEACCESS:
	case RP_EREMOTEBOUNDS:
	case RP_EUNEXPORTED:
	case RP_ENOEXPORT:
	case RP_ENOENDPOINT:
	case RP_ENORECV:
	case RP_ERECVSMALL:
	case RP_ENOTIFYSPACE:
	case RP_EEXPORT_DENIED:
		return STATS_ERR_REMOTE;
	case RP_EPEERUNKNOWN:
	case RP_EPEERDOWN:
	case RP_EOUTCOME:
	case RP_ESTALE:
		return STATS_ERR_PEER;
	case RP_ELIMIT_CONN:
	case RP_ELIMIT_BYTES:
	case RP_ELIMIT_REGIONS:
	case RP_ELIMIT_INFLIGHT:
		return STATS_ERR_LIMIT;
	case ECANCELED:
		return STATS_ERR_CANCELLED;
	default:
		return STATS_ERR_OTHER;
	}
}

const char *stats_err_kind_name(enum stats_err_kind k)
{
	static const char *const names[STATS_ERR_KINDS] = {
		"local", "remote", "peer", "limit", "cancelled", "other",
	};

	return k < STATS_ERR_KINDS ? names[k] : "other";
}

const char *stats_refusal_name(enum stats_refusal r)
{
	static const char *const names[STATS_REFUSALS] = {
		"total_limit",
		"address_limit",
		"failed_handshakes",
		"fd_reserve",
	};

	return r < STATS_REFUSALS ? names[r] : "other";
}

const char *stats_from_name(enum stats_from f)
{
	return f == STATS_FROM_LOCAL ? "local" : f == STATS_FROM_PEER ? "peer" : "other";
}

const char *stats_op_name(unsigned op)
{
	static const char *const names[STATS_OPS] = { NULL,   "write", "read",
						      "send", "recv",  "notify" };

	return op < STATS_OPS ? names[op] : NULL;
}

void stats_count_op(struct stats_session *s, unsigned op, int status, uint64_t len)
{
	unsigned i = op < STATS_OPS ? op : 0;

	stats_totals.ops[i]++;
	if (status < 0)
		stats_totals.errors[stats_err_kind(status)]++;
	else
		stats_totals.bytes[i] += len;
	if (!s)
		return;
	s->ops++;
	if (status < 0)
		s->errors++;
	else
		s->bytes += len;
}

void stats_count_cq(int n)
{
	stats_totals.cq_events++;
	if (n > 0)
		stats_totals.cq_completions += (uint64_t)n;
}
