/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the client control protocol, the daemon's most
 * exposed parser: one client's packets (format in fuzz-core.h), each with
 * no fd, a sealed memfd, an unsealed one or /dev/null, go through
 * ctl_validate() and session_dispatch() of one session on a fresh core, the
 * way the glue hands them over; a negative return ends the session as the
 * glue would. Between packets the fake peer layer answers lookups and lets
 * go of withdrawn exports, and region registrations the glue keeps waiting
 * are mapped and answered. At the end the session is released and detached:
 * it must be freed exactly once and leave nothing behind.
 *
 * Besides "no crash, no leak": every reply echoes a request type with the
 * reply bit, no reply is offered for a dead session, and the core is empty
 * afterwards.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../daemon/base/log.h"
#include "../unit/core-harness.h"
#include "fuzz-core.h"

#define FUZZ_MAX_INPUT 65536

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool trace; /* FUZZ_CORE_TRACE set: say what happens, to write seeds */

/* An invariant: a violation is a crash libFuzzer reports, with the condition. */
#define check(cond)                                                                \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                   \
		}                                                                  \
	} while (0)

static void setup(struct th *t, uint8_t b, uid_t *uid)
{
	static uid_t allowed[] = { 1000, 1001, 1002 };

	t->cfg.allowed_uids = allowed;
	t->cfg.n_allowed_uids = 3;
	t->cfg.max_regions = 1 + (b >> 2 & 7);
	t->cfg.max_registered_bytes = b & FC_SETUP_SMALL_BYTES ? FC_MEMFD_MAX : 1u << 20;
	*uid = 1000 + (b & 3); /* 1003 is not allowed */
}

/* The fd a record asks for, or -1. */
static int make_fd(struct th_session *ts, uint8_t ctl, const uint8_t *pkt, size_t n)
{
	const struct rp_region_reg *reg;
	uint64_t len = 4096;

	switch (ctl & FC_FD_MASK) {
	case FC_FD_MEMFD:
		/* The length a REGION_REG claims, when it is small enough to be cheap. */
		if (n == sizeof(struct rp_hdr) + sizeof(*reg)) {
			reg = (const void *)(pkt + sizeof(struct rp_hdr));
			memcpy(&len, &reg->len, sizeof(len));
			if (!len || len > FC_MEMFD_MAX)
				len = 4096;
		}
		return th_memfd(ts, (size_t)len, F_SEAL_SHRINK | F_SEAL_GROW, NULL);
	case FC_FD_DEVNULL:
		return open("/dev/null", O_RDWR | O_CLOEXEC);
	case FC_FD_UNSEALED:
		return th_memfd(ts, 4096, 0, NULL);
	default:
		return -1;
	}
}

static void event(struct th *t, struct th_session *ts, uint8_t ev)
{
	struct remote info;

	switch (ev) {
	case FC_EV_OPEN_OK:
	case FC_EV_OPEN_FAIL:
		if (!t->n_opens)
			return;
		memset(&info, 0, sizeof(info));
		memcpy(info.peer, t->opens[0].peer, sizeof(info.peer));
		info.inc = 1;
		info.id = t->n_opens;
		info.len = 1 << 20;
		info.access = RP_ACCESS_REMOTE_READ;
		th_open_answer(t, 0, ev == FC_EV_OPEN_OK ? 0 : -RP_ENOEXPORT, &info);
		break;
	case FC_EV_GONE_RELEASE:
		th_gone_release(t);
		break;
	case FC_EV_PIN_GONE:
		t->pin_gone = !t->pin_gone;
		break;
	case FC_EV_OPEN_REFUSE:
		t->open_status = t->open_status ? 0 : -RP_EPEERDOWN;
		break;
	case FC_EV_SEND_FAIL:
		ts->send_err = ts->send_err ? 0 : -EAGAIN;
		break;
	case FC_EV_DEFER_JOBS:
		th_defer_jobs(t, !t->defer_jobs);
		break;
	case FC_EV_RUN_JOB:
		th_jobs_run(t, 1);
		break;
	}
}

/* One packet record: false when the session ended. */
static bool packet(struct th_session *ts, uint8_t ctl, const uint8_t *p, size_t n)
{
	_Alignas(8) uint8_t pkt[FC_MAX_PACKET];
	const struct rp_hdr *h = (const struct rp_hdr *)pkt;
	unsigned before = ts->n_replies;
	int fd, r;

	memcpy(pkt, p, n);
	if ((ctl & FC_FIXLEN) && n >= sizeof(*h))
		((struct rp_hdr *)pkt)->len = (uint32_t)n;
	fd = make_fd(ts, ctl, pkt, n);
	r = th_packet(ts, pkt, n, fd);
	if (trace)
		fprintf(stderr, "packet type 0x%04x fd %d: %d, reply status %d\n",
			n >= sizeof(*h) ? h->type : 0, fd >= 0, r,
			ts->n_replies != before ? th_reply(ts)->status : 1);
	if (ts->n_replies != before) {
		const struct rp_hdr *rep = th_reply(ts);

		check(ts->n_replies == before + 1 && rep->seq == h->seq);
		check((rep->type & RP_MSG_REPLY) && rep->status <= 0 && rep->len == ts->reply_len &&
		      ctl_body_size(rep->type & ~RP_MSG_REPLY) >= 0);
	}
	return r >= 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool quiet;
	struct th t;
	struct th_session *ts;
	size_t off = 1, n;
	uid_t uid;

	if (!quiet) {
		log_set_level(LOG_CRIT);
		trace = getenv("FUZZ_CORE_TRACE") != NULL;
		quiet = true;
	}
	if (size < 1 || size > FUZZ_MAX_INPUT)
		return 0;
	if (th_init(&t) < 0)
		abort();
	t.lean = true;
	setup(&t, data[0], &uid);
	ts = th_session_new(&t, uid, uid);
	while (off < size) {
		uint8_t ctl = data[off++];

		if (ctl >= FC_EV_OPEN_OK) {
			event(&t, ts, ctl);
			continue;
		}
		if (size - off < 2)
			break;
		n = data[off] | (size_t)data[off + 1] << 8;
		off += 2;
		if (n > size - off || n > FC_MAX_PACKET)
			break;
		if (!packet(ts, ctl, data + off, n))
			break; /* the glue closes the connection */
		off += n;
	}
	/* The glue's close, then the peer layer finishes what it held. */
	session_release(&ts->s);
	session_detach(&ts->s);
	th_jobs_run(&t, TH_MAX_JOBS);
	while (t.n_opens)
		th_open_answer(&t, 0, -RP_EPEERDOWN, NULL);
	th_gone_release(&t);
	check(t.n_freed == 1 && t.dead_sends == 0);
	check(!t.core->sessions && !t.core->accts && !t.core->exports &&
	      !t.core->endpoint_names.n && !t.core->export_names.n && !t.core->n_exports &&
	      !t.core->n_remotes && !t.core->remote_keys.n && !t.core->n_regions &&
	      !t.core->bytes && !t.core->by_peer_id.n);
	th_fini(&t);
	return 0;
}
