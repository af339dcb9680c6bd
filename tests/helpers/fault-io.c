/* SPDX-License-Identifier: MIT */
/*
 * Clients for the fault tests on real Soft-RoCE (tests/vm/guest-faults.sh):
 * transfers through two peered daemons while the link between them loses,
 * delays or drops packets, or one daemon is killed. Talks to the daemon at
 * $RDMAPROXY_SOCKET.
 *
 *   sink NAME SLOTS SLOTSIZE NRECV
 *       Export a SLOTS * SLOTSIZE region as NAME (read + write, to the
 *       clients of every peer) and bind
 *       endpoint NAME with NRECV receives of SLOTSIZE bytes, each posted again
 *       as soon as it completes. Prints "ready", then one line per event:
 *         N IMM                 a notification (RP_NOTIFY write) with IMM
 *         R PHASE:ID good|bad   a message; "good" when its checksum matches
 *       A line "flush TAG" on stdin: reap until nothing came for 300 ms, then
 *       print "flushed TAG". Ends when stdin closes (0) or the daemon goes
 *       away ("daemon gone", 3).
 *
 *   drive PEER NAME PHASE SECONDS DEPTH SLOTSIZE LOG [SETTLE]
 *       For SECONDS, keep DEPTH slots busy against PEER's sink NAME, each
 *       one op at a time: a write of fresh data into the slot's own part of
 *       the export (every other one with RP_NOTIFY, imm = PHASE << 24 | id),
 *       read back and compared when it was OK; every third op of a slot is a
 *       send of a checksummed message instead. Sizes vary from 1 byte to
 *       SLOTSIZE. After a failure the slot pauses 100 ms; -RP_ESTALE on the
 *       handle in use makes it open the export again (the peer restarted;
 *       ops still in flight on the old handle may fail with -RP_ESTALE too,
 *       and do not count as a second restart). With SETTLE, it goes
 *       on after SECONDS until the last SETTLE ops in a row were OK on a
 *       usable handle (at most 90 s more): the link is back. With
 *       $FIO_UNTIL naming a file, SECONDS lasts until that file exists (at
 *       most 300 s more): the script says when the event it drives through
 *       is over, however slowly a loaded machine got there. Then waits until
 *       every op is reported (at most 120 s). The export is opened first,
 *       waiting up to 30 s while the peer is not connected. LOG gets one line per
 *       notifying write ("W IMM STATUS") and per send ("S PHASE:ID STATUS").
 *       Prints per kind:
 *         result phase=P kind=K submitted=N ok= peerdown= outcome= stale=
 *                unexported= noendpoint= norecv= other=
 *       and "check phase=P mismatch= duplicate= unreported= reopened=
 *       settled=0|1 failures=FIRST..LAST s".
 *       Exit 0 when every op was reported exactly once, every OK read
 *       matched what the OK write before it wrote, no status fell outside
 *       the classes above and (with SETTLE) it settled; 1 otherwise.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdmaproxy.h>

#define MSG_MAGIC 0x314f4946u /* "FIO1" */
#define DRAIN_S 120.0
#define SETTLE_MAX_S 90.0
#define UNTIL_MAX_S 300.0
#define OPEN_WAIT_S 30.0
#define PAUSE_S 0.1
#define REOPEN_S 0.2

struct msg_hdr {
	uint32_t magic;
	uint32_t phase;
	uint64_t id;
	uint64_t len; /* the whole message, header included */
	uint64_t sum; /* FNV-1a of the payload after the header */
};

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

static void fill(void *p, size_t n, uint64_t seed)
{
	unsigned char *b = p;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (unsigned char)x;
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t parse_size(const char *s)
{
	char *end;
	size_t v = strtoull(s, &end, 10);

	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	return v;
}

static struct rp_client *conn(void)
{
	struct rp_client *c;
	int e = rp_connect(NULL, &c);

	if (e < 0) {
		fprintf(stderr, "connect: %s\n", rp_strerror(e));
		exit(2);
	}
	return c;
}

/* ---- sink ---- */

struct sink {
	struct rp_client *c;
	struct rp_region *r, *m;
	struct rp_endpoint *ep;
	size_t slot;
};

/* 0, or -1 when the daemon went away. */
static int sink_reap(struct sink *s, int timeout_ms)
{
	struct rp_completion comp[64];
	int n = rp_wait(s->c, comp, 64, timeout_ms), i, e;

	if (n < 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (comp[i].op == RP_OP_NOTIFY) {
			printf("N %u\n", comp[i].imm);
		} else if (comp[i].op == RP_OP_RECV && comp[i].status == 0) {
			const char *b =
				(const char *)rp_region_ptr(s->m) + comp[i].cookie * s->slot;
			struct msg_hdr h;
			bool good = false;

			memset(&h, 0, sizeof(h));
			if (comp[i].len >= sizeof(h)) {
				memcpy(&h, b, sizeof(h));
				good = h.magic == MSG_MAGIC && h.len == comp[i].len &&
				       h.sum == fnv1a(b + sizeof(h), comp[i].len - sizeof(h));
			}
			printf("R %u:%" PRIu64 " %s\n", h.phase, h.id, good ? "good" : "bad");
			e = rp_post_recv(s->ep, s->m, comp[i].cookie * s->slot, s->slot,
					 comp[i].cookie);
			if (e < 0)
				printf("repost failed: %s\n", rp_strerror(e));
		} else {
			printf("event op=%u status=%d (%s)\n", comp[i].op, comp[i].status,
			       rp_strerror(comp[i].status));
		}
	}
	fflush(stdout);
	return n;
}

static int do_sink(const char *name, size_t slots, size_t slot, int nrecv)
{
	/* The drivers are clients of the peer daemon: let every peer open it. */
	const struct rp_export_acl acl = { .flags = RP_EXPORT_ANY_PEER };
	struct sink s = { .c = conn(), .slot = slot };
	char line[256];
	size_t have = 0;
	int e, i;

	if ((e = rp_region_alloc(s.c, slots * slot, 0, &s.r)) < 0 ||
	    (e = rp_region_alloc(s.c, (size_t)nrecv * slot, 0, &s.m)) < 0 ||
	    (e = rp_region_export_acl(s.r, name, RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE,
				      &acl)) < 0 ||
	    (e = rp_endpoint_bind(s.c, name, &s.ep)) < 0) {
		fprintf(stderr, "sink: %s\n", rp_strerror(e));
		return 2;
	}
	for (i = 0; i < nrecv; i++)
		if ((e = rp_post_recv(s.ep, s.m, (size_t)i * slot, slot, (uint64_t)i)) < 0) {
			fprintf(stderr, "post_recv: %s\n", rp_strerror(e));
			return 2;
		}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct pollfd p = { .fd = 0, .events = POLLIN };
		char *nl;
		ssize_t r;

		if (sink_reap(&s, 100) < 0)
			break;
		if (poll(&p, 1, 0) <= 0)
			continue;
		r = read(0, line + have, sizeof(line) - 1 - have);
		if (r <= 0) {
			rp_disconnect(s.c);
			return 0;
		}
		have += (size_t)r;
		line[have] = 0;
		while ((nl = strchr(line, '\n'))) {
			*nl = 0;
			if (!strncmp(line, "flush ", 6)) {
				/* Everything the daemon reported by now is in the ring. */
				int n;

				while ((n = sink_reap(&s, 300)) > 0)
					;
				if (n < 0)
					goto gone;
				printf("flushed %s\n", line + 6);
				fflush(stdout);
			}
			have -= (size_t)(nl + 1 - line);
			memmove(line, nl + 1, have + 1);
		}
		if (have == sizeof(line) - 1)
			have = 0;
	}
gone:
	printf("daemon gone\n");
	fflush(stdout);
	rp_disconnect(s.c);
	return 3;
}

/* ---- drive ---- */

enum kind { K_WRITE, K_READ, K_SEND, K_N };
static const char *const kind_name[K_N] = { "write", "read", "send" };

enum cls {
	C_OK,
	C_PEERDOWN,
	C_OUTCOME,
	C_STALE,
	C_UNEXPORTED,
	C_NOENDPOINT,
	C_NORECV,
	C_OTHER,
	C_N
};
static const char *const cls_name[C_N] = { "ok",	 "peerdown",   "outcome", "stale",
					   "unexported", "noendpoint", "norecv",  "other" };

static enum cls classify(int st)
{
	switch (st) {
	case 0:
		return C_OK;
	case -RP_EPEERDOWN:
		return C_PEERDOWN;
	case -RP_EOUTCOME:
		return C_OUTCOME;
	case -RP_ESTALE:
		return C_STALE;
	case -RP_EUNEXPORTED:
		return C_UNEXPORTED;
	case -RP_ENOENDPOINT:
		return C_NOENDPOINT;
	case -RP_ENORECV:
		return C_NORECV;
	default:
		return C_OTHER;
	}
}

enum { OP_FREE, OP_INFLIGHT, OP_DONE };

struct slot {
	enum kind busy; /* valid while inflight */
	bool inflight;
	bool notify;
	uint64_t id; /* of the op in flight (or the write a read checks) */
	uint32_t len;
	uint32_t seq; /* ops started on this slot */
	uint32_t gen; /* the remote handle a write or read used (drive.gen) */
	double wake;
};

#define MAX_HANDLES 16 /* remote handles: the first and one per peer restart */

struct drive {
	struct rp_client *c;
	struct rp_region *src, *back;
	struct rp_remote *rm; /* == handles[gen] */
	struct rp_remote *handles[MAX_HANDLES];
	uint32_t gen;
	const char *peer, *name;
	uint32_t phase;
	size_t slot;
	size_t depth;
	struct slot *sl;
	uint8_t *ops; /* by id: OP_* */
	uint64_t nops, cap;
	uint64_t count[K_N][C_N], submitted[K_N];
	uint64_t mismatch, dup, reopened, inflight, streak;
	bool need_reopen;
	double reopen_at, t0, first_fail, last_fail;
	FILE *log;
};

static uint32_t op_len(uint64_t id, size_t slot)
{
	static const uint32_t lens[] = { 1, 64, 4096, 4097, 65536, 0 };
	uint32_t l = lens[(id * 2654435761u >> 8) % 6];

	return l && l < slot ? l : (uint32_t)slot;
}

/* A new op id, recorded as in flight. */
static uint64_t new_id(struct drive *d)
{
	if (d->nops == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 4096;
		d->ops = realloc(d->ops, d->cap);
		if (!d->ops) {
			fprintf(stderr, "no memory\n");
			exit(2);
		}
	}
	d->ops[d->nops] = OP_INFLIGHT;
	return d->nops++;
}

static void fail_submit(struct drive *d, struct slot *s, int e)
{
	/* Refused before the daemon saw it (ring full, daemon gone): not an op. */
	d->ops[s->id] = OP_DONE;
	s->inflight = false;
	s->wake = now_s() + PAUSE_S;
	if (e != -EAGAIN) {
		fprintf(stderr, "submit: %s\n", rp_strerror(e));
		exit(3);
	}
}

static void start_read(struct drive *d, struct slot *s, size_t k)
{
	int e;

	s->id = new_id(d);
	s->busy = K_READ;
	s->inflight = true;
	s->gen = d->gen;
	memset((char *)rp_region_ptr(d->back) + k * d->slot, 0, s->len);
	e = rp_read(d->c, d->back, k * d->slot, d->rm, k * d->slot, s->len, s->id, 0);
	if (e < 0)
		return fail_submit(d, s, e);
	d->submitted[K_READ]++;
	d->inflight++;
}

static void start_op(struct drive *d, struct slot *s, size_t k)
{
	char *p = (char *)rp_region_ptr(d->src) + k * d->slot;
	bool send = s->seq++ % 3 == 2;
	int e;

	if (!send && d->need_reopen)
		return; /* no usable handle yet */
	s->id = new_id(d);
	s->len = op_len(s->id, d->slot);
	s->inflight = true;
	if (send) {
		struct msg_hdr h = { .magic = MSG_MAGIC, .phase = d->phase, .id = s->id };

		if (s->len < sizeof(h))
			s->len = (uint32_t)sizeof(h) + (uint32_t)(s->id % 64);
		h.len = s->len;
		fill(p + sizeof(h), s->len - sizeof(h), (uint64_t)d->phase << 40 | s->id);
		h.sum = fnv1a(p + sizeof(h), s->len - sizeof(h));
		memcpy(p, &h, sizeof(h));
		s->busy = K_SEND;
		e = rp_send(d->c, d->peer, d->name, d->src, k * d->slot, s->len, s->id);
		if (e < 0)
			return fail_submit(d, s, e);
		d->submitted[K_SEND]++;
	} else {
		fill(p, s->len, (uint64_t)d->phase << 40 | s->id);
		s->busy = K_WRITE;
		s->gen = d->gen;
		s->notify = s->id & 1;
		e = rp_write_imm(d->c, d->src, k * d->slot, d->rm, k * d->slot, s->len, s->id,
				 s->notify ? RP_NOTIFY : 0,
				 d->phase << 24 | (uint32_t)(s->id & 0xffffff));
		if (e < 0)
			return fail_submit(d, s, e);
		d->submitted[K_WRITE]++;
	}
	d->inflight++;
}

static void on_comp(struct drive *d, const struct rp_completion *cp)
{
	uint64_t id = cp->cookie;
	struct slot *s = NULL;
	size_t k;
	enum cls cl = classify(cp->status);
	double now = now_s();

	if (id >= d->nops || d->ops[id] != OP_INFLIGHT) {
		d->dup++;
		fprintf(stderr,
			"completion for op %" PRIu64 " that is not in flight (op %u status %d)\n",
			id, cp->op, cp->status);
		return;
	}
	for (k = 0; k < d->depth && (d->sl[k].id != id || !d->sl[k].inflight); k++)
		;
	if (k == d->depth) { /* cannot be: an op in flight is some slot's */
		d->dup++;
		fprintf(stderr, "op %" PRIu64 " is in flight on no slot\n", id);
		return;
	}
	s = &d->sl[k];
	d->ops[id] = OP_DONE;
	d->inflight--;
	s->inflight = false;
	d->count[s->busy][cl]++;
	if (cl == C_OK) {
		d->streak++;
	} else {
		d->streak = 0;
		if (!d->first_fail)
			d->first_fail = now - d->t0;
		d->last_fail = now - d->t0;
	}
	if (cl == C_OTHER)
		fprintf(stderr, "%s op %" PRIu64 ": status %d (%s)\n", kind_name[s->busy], id,
			cp->status, rp_strerror(cp->status));
	/* Only a failure on the current handle means another restart. */
	if (cl == C_STALE && s->busy != K_SEND && s->gen == d->gen && !d->need_reopen) {
		d->need_reopen = true;
		d->reopen_at = now;
	}
	switch (s->busy) {
	case K_WRITE:
		if (s->notify)
			fprintf(d->log, "W %u %d\n", d->phase << 24 | (uint32_t)(id & 0xffffff),
				cp->status);
		if (cl == C_OK) {
			start_read(d, s, k);
			return;
		}
		break;
	case K_READ:
		if (cl == C_OK) {
			const char *a = (const char *)rp_region_ptr(d->src) + k * d->slot;
			const char *b = (const char *)rp_region_ptr(d->back) + k * d->slot;

			if (memcmp(a, b, s->len)) {
				size_t i = 0;

				while (a[i] == b[i])
					i++;
				d->mismatch++;
				fprintf(stderr,
					"read op %" PRIu64
					" (slot %zu, %u bytes): differs from the "
					"write at byte %zu\n",
					id, k, s->len, i);
			}
		}
		break;
	case K_SEND:
		fprintf(d->log, "S %u:%" PRIu64 " %d\n", d->phase, id, cp->status);
		break;
	default:
		break;
	}
	s->wake = cl == C_OK ? 0 : now + PAUSE_S;
}

/* The client, its two regions and the first remote handle. 0 or -1 (said why). */
static int drive_setup(struct drive *d, const char *logpath)
{
	size_t k;
	double t;
	int e;

	d->c = conn();
	d->log = fopen(logpath, "w");
	d->sl = calloc(d->depth, sizeof(*d->sl));
	if (!d->log || !d->sl) {
		fprintf(stderr, "drive: cannot open %s\n", logpath);
		return -1;
	}
	/* Slots start at different points of the write, write, send cycle. */
	for (k = 0; k < d->depth; k++)
		d->sl[k].seq = (uint32_t)k;
	if ((e = rp_region_alloc(d->c, d->depth * d->slot, 0, &d->src)) < 0 ||
	    (e = rp_region_alloc(d->c, d->depth * d->slot, 0, &d->back)) < 0) {
		fprintf(stderr, "drive: %s\n", rp_strerror(e));
		return -1;
	}
	/* A phase may begin while a link that just came up is being replaced. */
	t = now_s();
	while ((e = rp_remote_open(d->c, d->peer, d->name, &d->rm)) == -RP_EPEERDOWN &&
	       now_s() < t + OPEN_WAIT_S)
		usleep(100000);
	if (e < 0) {
		fprintf(stderr, "drive: %s\n", rp_strerror(e));
		return -1;
	}
	if (now_s() > t + 0.5)
		fprintf(stderr, "drive: the link was down for %.1f s at the start\n", now_s() - t);
	d->handles[0] = d->rm;
	if (rp_remote_len(d->rm) < d->depth * d->slot) {
		fprintf(stderr, "drive: the export is too small\n");
		return -1;
	}
	(void)new_id(d); /* id 0 is never used */
	d->ops[0] = OP_DONE;
	return 0;
}

/* After an -RP_ESTALE on the handle in use: open the export again. */
static void drive_reopen(struct drive *d, double now)
{
	struct rp_remote *rm;

	if (now < d->reopen_at || d->gen + 1 >= MAX_HANDLES)
		return;
	/* The old handle stays open: ops in flight may still use it. */
	if (rp_remote_open(d->c, d->peer, d->name, &rm) == 0) {
		d->handles[++d->gen] = d->rm = rm;
		d->need_reopen = false;
		d->reopened++;
	} else {
		d->reopen_at = now_s() + REOPEN_S;
	}
}

/*
 * Issue for @secs (then, with @settle, until @settle OK in a row), then
 * reap until every op was reported. Returns the ops never reported, or -1
 * when the daemon went away; *settled says whether it settled.
 */
static int64_t drive_loop(struct drive *d, double secs, uint64_t settle, bool *settled)
{
	struct rp_completion comp[64];
	double end, now, stop = 0;
	bool issuing;
	size_t k;
	int i, n;

	const char *until = getenv("FIO_UNTIL");

	d->t0 = now_s();
	end = d->t0 + secs;
	for (;;) {
		now = now_s();
		if (until && now >= end && now < d->t0 + secs + UNTIL_MAX_S) {
			if (access(until, F_OK) == 0)
				until = NULL; /* the event is over: SECONDS ends now */
			else
				end = now + 0.05;
		}
		*settled = !settle || (d->streak >= settle && !d->need_reopen);
		issuing = !stop && (now < end || (!*settled && now < end + SETTLE_MAX_S));
		if (!issuing && !stop)
			stop = now;
		if (d->need_reopen && issuing)
			drive_reopen(d, now);
		for (k = 0; k < d->depth && issuing; k++)
			if (!d->sl[k].inflight && now >= d->sl[k].wake)
				start_op(d, &d->sl[k], k);
		if (stop && !d->inflight)
			return 0;
		if (stop && now >= stop + DRAIN_S) {
			fprintf(stderr,
				"drive: %" PRIu64 " ops not reported %.0f s after the end\n",
				d->inflight, DRAIN_S);
			return (int64_t)d->inflight;
		}
		n = rp_wait(d->c, comp, 64, 50);
		if (n < 0) {
			fprintf(stderr, "drive: %s\n", rp_strerror(n));
			return -1;
		}
		for (i = 0; i < n; i++)
			on_comp(d, &comp[i]);
	}
}

/* The "result" and "check" lines; the number of ops with an unexpected status. */
static uint64_t drive_report(const struct drive *d, int64_t unreported, bool settled)
{
	uint64_t other = 0;
	int k, i;

	for (k = 0; k < K_N; k++) {
		printf("result phase=%u kind=%s submitted=%" PRIu64, d->phase, kind_name[k],
		       d->submitted[k]);
		for (i = 0; i < C_N; i++)
			printf(" %s=%" PRIu64, cls_name[i], d->count[k][i]);
		printf("\n");
		other += d->count[k][C_OTHER];
	}
	printf("check phase=%u mismatch=%" PRIu64 " duplicate=%" PRIu64 " unreported=%" PRId64
	       " reopened=%" PRIu64 " settled=%d failures=%.1f..%.1f s\n",
	       d->phase, d->mismatch, d->dup, unreported, d->reopened, settled, d->first_fail,
	       d->last_fail);
	return other;
}

static int do_drive(const char *peer, const char *name, uint32_t phase, double secs, int depth,
		    size_t slot, const char *logpath, uint64_t settle)
{
	struct drive d = {
		.peer = peer, .name = name, .phase = phase, .slot = slot, .depth = (size_t)depth
	};
	bool settled = false;
	int64_t unreported = -1;
	uint64_t other = 0;
	uint32_t g;

	if (depth < 1 || slot < 4096) {
		fprintf(stderr, "drive: DEPTH must be at least 1, SLOTSIZE at least 4K\n");
		return 2;
	}
	if (drive_setup(&d, logpath) == 0) {
		unreported = drive_loop(&d, secs, settle, &settled);
		other = drive_report(&d, unreported, settled);
	}
	if (d.log)
		fclose(d.log);
	/* With ops still in flight the library keeps their records: leave them. */
	if (unreported <= 0) {
		for (g = 0; g <= d.gen && d.handles[g]; g++)
			rp_remote_close(d.handles[g]);
		rp_disconnect(d.c);
	}
	free(d.ops);
	free(d.sl);
	if (unreported < 0 && !d.t0)
		return 2; /* set-up failed */
	return d.mismatch || d.dup || unreported || other || !settled ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "sink") && argc == 6)
		return do_sink(argv[2], parse_size(argv[3]), parse_size(argv[4]), atoi(argv[5]));
	if (!strcmp(mode, "drive") && (argc == 9 || argc == 10))
		return do_drive(argv[2], argv[3], (uint32_t)atoi(argv[4]), atof(argv[5]),
				atoi(argv[6]), parse_size(argv[7]), argv[8],
				argc == 10 ? strtoull(argv[9], NULL, 10) : 0);
	fprintf(stderr, "usage: see the comment at the top of fault-io.c\n");
	return 2;
}
