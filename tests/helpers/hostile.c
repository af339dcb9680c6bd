/* SPDX-License-Identifier: MIT */
/*
 * Hostile and unlucky local clients, for test-hostile.sh. Each mode prints
 * key=value lines and exits 0 when it ran to the end (the script judges).
 * The socket comes from RDMAPROXY_SOCKET.
 *
 *   hostile hugebus          punch the huge page out of an exported hugetlb
 *                            region, take every free huge page, then write
 *                            into the region through the daemon
 *   hostile hugesrc [PEER EXPORT]
 *                            the same with the punched region as the source
 *                            of 8 B writes (small enough to go inline), into
 *                            EXPORT on PEER or into a local export of its own
 *   hostile hugepeer ASOCK BSOCK PEER
 *                            clients of two peered daemons, each with a
 *                            hugetlb region whose page is punched out (pool
 *                            empty): A's client reads into, writes from and
 *                            sends from its hole, and writes into, reads from
 *                            and sends into B's; then one plain write
 *   hostile unexportwait NAME LEN PEER
 *                            export a zeroed LEN-byte region as NAME, writable
 *                            by PEER; print "ready"; at a line on stdin
 *                            unexport it and print "unexported landed=N"
 *                            (bytes that are no longer zero when it returned);
 *                            at the next line print "later=N"
 *   hostile bellblock        make its doorbell ends blocking, fill its
 *                            completion doorbell, ask to be woken, submit
 *                            ops that fail at once; print "attacked", hold
 *                            until stdin closes (the daemon must not block)
 *   hostile closebells       say HELLO, close the ring's fds (as rdmaproxyctl
 *                            does), keep the connection until stdin closes
 *   hostile stalldeath       fill both rings without reaping, print
 *                            "stalled"; at a line on stdin (the daemon is
 *                            dead by then) reap until the library says the
 *                            daemon is gone: it must survive that
 *   hostile hold N           open N connections, never say HELLO, print
 *                            "holding"; for each line on stdin print how many
 *                            the daemon keeps; hold until stdin closes
 *   hostile exports N        export one region under N names
 *   hostile notifyfull N     N notifying writes to an exporter that never
 *                            reaps: none may be reported failed yet landed
 *   hostile bigreg MB        register a sparse MB MiB memfd over a raw
 *                            connection (nothing pre-faulted: the daemon's
 *                            mapping allocates it) and, until its answer
 *                            comes, keep another client writing 4 KiB
 *                            locally; prints how many writes completed in
 *                            the meantime
 *   hostile bigexport MB [BSOCK THIS THAT]
 *                            register a sparse MB MiB memfd over a raw
 *                            connection, then export it (with a device the
 *                            daemon registers an MR of it) and, with BSOCK,
 *                            to peer THAT, and open it from a raw client of
 *                            THAT's daemon at BSOCK, which calls this node
 *                            THIS (its LOOKUP makes this daemon register an
 *                            MR of it for that peer: 4 opens at once, the
 *                            others answered like the one counted);
 *                            6 more EXPORTs of it sent at once (those beyond
 *                            4 registering are answered -EBUSY), withdrawn;
 *                            then withdraw it (answered once its MRs are
 *                            gone) and free it; until each is answered (the
 *                            free: until Shmem in /proc/meminfo shows its
 *                            pages freed), keep another client writing 4 KiB
 *                            locally; prints their statuses and how many
 *                            writes completed meanwhile
 *   hostile bigexport MB BSOCK THIS THAT quit
 *                            the same, but leave while the MRs are being
 *                            registered: the first time right after the
 *                            EXPORT, the second 10 ms after the open (which
 *                            is answered)
 *   hostile regflood N MB [free]
 *                            send N registrations of sparse MB MiB memfds
 *                            at once over a raw connection, print "sent",
 *                            then "answer ms=T status=S" as each answer
 *                            comes (T: CLOCK_MONOTONIC, in ms) and
 *                            "answers=N ok=K"; with free, then free them
 *                            all at once: "freeing", "freed ms=T status=S";
 *                            with HOSTILE_GO_FD=N, "go" goes to fd N as
 *                            soon as the requests are sent (and again the
 *                            frees)
 *   hostile regone [wait]    register one 4 KiB region through the library:
 *                            "answer ms=T status=S took_ms=D connect_ms=C"
 *                            (T as for regflood, D: how long it took, C: how
 *                            long connecting took); with wait, connect,
 *                            print "ready" and register at a line on stdin
 *   hostile regs             an unlucky client while the daemon runs out of
 *                            fds: prints "ready", then for each line on
 *                            stdin registers (and frees) a 64 KiB region and
 *                            writes and reads back 4 KiB through an export of
 *                            its own: "reg=STATUS error=TEXT xfer=ok|failed"
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rdmaproxy.h"
#include "rp-proto.h"
#include "rp-ring.h"

#define HUGE (2u << 20)
#define BIGEXPORT_OPENS 4
#define PIPELINED_EXPORTS 6

static struct rp_client *connect_or_die(void)
{
	struct rp_client *c;
	int r = rp_connect(NULL, &c);

	if (r < 0) {
		printf("connect=%s\n", rp_strerror(r));
		exit(1);
	}
	return c;
}

static int wait_one(struct rp_client *c, struct rp_completion *cp)
{
	int n = rp_wait(c, cp, 1, 10000);

	return n == 1 ? 0 : -1;
}

/*
 * Punch the huge page out of @h (the seals the daemon checks bound size, not
 * holes), then take every free huge page, so that touching the hole raises
 * SIGBUS. Returns the fd holding them (close it to give them back).
 */
static int punch_and_hog(struct rp_region *h)
{
	long hogged = 0;
	int hog;

	if (madvise(rp_region_ptr(h), HUGE, MADV_REMOVE) < 0)
		printf("madvise=%s\n", strerror(errno));
	hog = memfd_create("hog", MFD_CLOEXEC | MFD_HUGETLB);
	if (hog >= 0 && ftruncate(hog, 64L * HUGE) == 0)
		for (; hogged < 64; hogged++)
			if (fallocate(hog, 0, hogged * (long)HUGE, HUGE) < 0)
				break;
	printf("hogged=%ld\n", hogged);
	return hog;
}

/* One write of @len bytes from @src into @rm, its status printed as @what. */
static void write_report(struct rp_client *c, struct rp_region *src, struct rp_remote *rm,
			 size_t len, uint64_t cookie, const char *what)
{
	struct rp_completion cp;
	int r = rp_write(c, src, 0, rm, 0, len, cookie, 0);

	if (r == 0 && wait_one(c, &cp) == 0)
		printf("%s_status=%d\n%s_error=%s\n", what, cp.status, what,
		       rp_strerror(cp.status));
	else
		printf("%s_status=none\nsubmit=%s\n", what, rp_strerror(r));
	fflush(stdout);
}

static int hugebus(void)
{
	struct rp_client *c = connect_or_die();
	struct rp_region *h, *s;
	struct rp_remote *rm;
	int r, hog;

	r = rp_region_alloc(c, HUGE, RP_REGION_HUGE, &h);
	if (r < 0) {
		printf("huge=%s\n", rp_strerror(r));
		return 0;
	}
	if (rp_region_alloc(c, 4096, 0, &s) < 0 ||
	    rp_region_export(h, "hx", RP_ACCESS_REMOTE_WRITE) < 0 ||
	    rp_remote_open(c, NULL, "hx", &rm) < 0)
		return 1;
	hog = punch_and_hog(h);
	write_report(c, s, rm, 4096, 1, "write");
	close(hog);
	/* With the pool back, the same write works again. */
	write_report(c, s, rm, 4096, 2, "again");
	rp_disconnect(c);
	return 0;
}

/*
 * The punched region as a source. On verbs the daemon's MR still pins the
 * old page, so the device reads it; but a payload posted inline would be
 * copied by the provider from the daemon's own mapping of the hole, outside
 * its SIGBUS guard: regions on hugetlbfs are never posted inline.
 */
static int hugesrc(const char *peer, const char *name)
{
	struct rp_client *c = connect_or_die();
	struct rp_region *h, *d;
	struct rp_remote *rm;
	int r, hog;

	r = rp_region_alloc(c, HUGE, RP_REGION_HUGE, &h);
	if (r < 0) {
		printf("huge=%s\n", rp_strerror(r));
		return 0;
	}
	memset(rp_region_ptr(h), 'h', 4096);
	if (!name) {
		name = "hs";
		if (rp_region_alloc(c, 4096, 0, &d) < 0 ||
		    rp_region_export(d, name, RP_ACCESS_REMOTE_WRITE) < 0)
			return 1;
	}
	r = rp_remote_open(c, peer, name, &rm);
	if (r < 0) {
		printf("open=%s\n", rp_strerror(r));
		return 1;
	}
	write_report(c, h, rm, 8, 1, "before");
	hog = punch_and_hog(h);
	write_report(c, h, rm, 8, 2, "write");
	write_report(c, h, rm, 300, 3, "write300");
	close(hog);
	rp_disconnect(c);
	return 0;
}

static struct rp_client *connect_to(const char *path)
{
	struct rp_client *c;
	int r = rp_connect(path, &c);

	if (r < 0) {
		printf("connect=%s\n", rp_strerror(r));
		exit(1);
	}
	return c;
}

static void report(struct rp_client *c, int r, const char *what)
{
	struct rp_completion cp;

	if (r == 0 && wait_one(c, &cp) == 0)
		printf("%s=%d\n", what, cp.status);
	else
		printf("%s=none (%s)\n", what, rp_strerror(r));
	fflush(stdout);
}

static int hugepeer(const char *asock, const char *bsock, const char *peer)
{
	struct rp_client *a = connect_to(asock), *b = connect_to(bsock);
	struct rp_region *ha, *na, *hb, *nb;
	struct rp_remote *rh, *rn;
	struct rp_endpoint *eh, *en;
	const char *me = rp_node_name(a);
	struct rp_export_acl acl = { .peers = &me, .n_peers = 1 };
	unsigned rw = RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE;
	int r, hog;

	r = rp_region_alloc(b, HUGE, RP_REGION_HUGE, &hb);
	if (r == 0)
		r = rp_region_alloc(a, HUGE, RP_REGION_HUGE, &ha);
	if (r < 0) {
		printf("huge=%s\n", rp_strerror(r));
		return 0;
	}
	if (rp_region_alloc(a, 65536, 0, &na) < 0 || rp_region_alloc(b, 65536, 0, &nb) < 0 ||
	    rp_region_export_acl(hb, "hx", rw, &acl) < 0 ||
	    rp_region_export_acl(nb, "nx", rw, &acl) < 0 || rp_endpoint_bind(b, "he", &eh) < 0 ||
	    rp_endpoint_bind(b, "ne", &en) < 0 || rp_post_recv(eh, hb, 0, 65536, 1) < 0 ||
	    rp_post_recv(en, nb, 0, 65536, 2) < 0)
		return 1;
	r = rp_remote_open(a, peer, "hx", &rh);
	if (r == 0)
		r = rp_remote_open(a, peer, "nx", &rn);
	if (r < 0) {
		printf("open=%s\n", rp_strerror(r));
		return 1;
	}
	if (madvise(rp_region_ptr(hb), HUGE, MADV_REMOVE) < 0)
		printf("madvise=%s\n", strerror(errno));
	hog = punch_and_hog(ha);
	/* A's own region has the hole. */
	report(a, rp_read(a, ha, 0, rn, 0, 8, 1, 0), "read_into_hole_8");
	report(a, rp_read(a, ha, 0, rn, 0, 65536, 2, 0), "read_into_hole_64k");
	report(a, rp_write(a, ha, 0, rn, 0, 8, 3, 0), "write_from_hole_8");
	report(a, rp_write(a, ha, 0, rn, 0, 65536, 4, 0), "write_from_hole_64k");
	report(a, rp_send(a, peer, "ne", ha, 0, 8, 5), "send_from_hole");
	/* B's export and posted receive have it. */
	report(a, rp_write(a, na, 0, rh, 0, 8, 6, 0), "write_into_hole_8");
	report(a, rp_write(a, na, 0, rh, 0, 65536, 7, 0), "write_into_hole_64k");
	report(a, rp_read(a, na, 0, rh, 0, 8, 8, 0), "read_from_hole_8");
	report(a, rp_read(a, na, 0, rh, 0, 65536, 9, 0), "read_from_hole_64k");
	report(a, rp_send(a, peer, "he", na, 0, 8, 10), "send_into_hole");
	/* The link took none of that badly. */
	report(a, rp_write(a, na, 0, rn, 0, 65536, 11, 0), "plain_write");
	close(hog);
	rp_disconnect(a);
	rp_disconnect(b);
	return 0;
}

static size_t nonzero(const unsigned char *p, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++)
		n += p[i] != 0;
	return n;
}

static int unexportwait(const char *name, size_t len, const char *peer)
{
	struct rp_client *c = connect_or_die();
	struct rp_export_acl acl = { .peers = &peer, .n_peers = 1 };
	struct rp_region *r;
	char line[16];
	int st;

	if (rp_region_alloc(c, len, 0, &r) < 0 ||
	    rp_region_export_acl(r, name, RP_ACCESS_REMOTE_WRITE, &acl) < 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	st = rp_region_unexport(r, name);
	printf("unexported status=%d landed=%zu\n", st, nonzero(rp_region_ptr(r), len));
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	printf("later=%zu\n", nonzero(rp_region_ptr(r), len));
	rp_disconnect(c);
	return 0;
}

/* How many of @fds the daemon still keeps open (a refused one reads as hang-up). */
static int count_kept(const int *fds, int n)
{
	int i, kept = 0;

	for (i = 0; i < n; i++) {
		struct pollfd p = { .fd = fds[i], .events = POLLIN };

		kept += !(poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLIN)));
	}
	return kept;
}

static int hold(int n)
{
	const char *path = getenv("RDMAPROXY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int *fds = calloc((size_t)n, sizeof(int)), i;
	char b;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path ? path : "");
	for (i = 0; i < n; i++) {
		fds[i] = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			printf("connect_error=%s\n", strerror(errno));
			return 1;
		}
	}
	printf("holding\n");
	fflush(stdout);
	/* Each line on stdin asks how many the daemon keeps now; EOF ends it. */
	while (read(0, &b, 1) > 0)
		if (b == '\n') {
			printf("kept=%d\n", count_kept(fds, n));
			fflush(stdout);
		}
	return 0;
}

static int exports(int n)
{
	struct rp_client *c = connect_or_die();
	struct rp_region *r;
	char name[32];
	int i, ok = 0, err = 0;

	if (rp_region_alloc(c, 4096, 0, &r) < 0)
		return 1;
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		err = rp_region_export(r, name, RP_ACCESS_REMOTE_READ);
		if (err < 0)
			break;
		ok++;
	}
	printf("exported=%d\nlast_error=%d\nlast_error_text=%s\n", ok, err,
	       err ? rp_strerror(err) : "none");
	rp_disconnect(c);
	return 0;
}

static int notifyfull(int n)
{
	struct rp_client *a = connect_or_die(), *b = connect_or_die();
	struct rp_region *ra, *rb;
	struct rp_remote *rm;
	struct rp_completion cp;
	int i, ok = 0, full = 0, landed_anyway = 0, other = 0;
	uint64_t *dst;

	if (rp_region_alloc(a, 4096, 0, &ra) < 0 || rp_region_alloc(b, (size_t)n * 8, 0, &rb) < 0 ||
	    rp_region_export(rb, "nf", RP_ACCESS_REMOTE_WRITE) < 0 ||
	    rp_remote_open(a, NULL, "nf", &rm) < 0)
		return 1;
	dst = rp_region_ptr(rb);
	/* b never reaps: its completion ring fills with notifications. */
	for (i = 0; i < n; i++) {
		uint64_t v = (uint64_t)i + 1;

		memcpy((char *)rp_region_ptr(ra), &v, sizeof(v));
		if (rp_write(a, ra, 0, rm, (size_t)i * 8, 8, (uint64_t)i, RP_NOTIFY) < 0 ||
		    wait_one(a, &cp) < 0)
			return 1;
		if (cp.status == 0)
			ok++;
		else if (cp.status == -RP_ENOTIFYSPACE) {
			full++;
			landed_anyway += dst[i] != 0;
		} else
			other++;
	}
	printf("ok=%d\nnotify_full=%d\nfailed_but_landed=%d\nother=%d\n", ok, full, landed_anyway,
	       other);
	rp_disconnect(a);
	rp_disconnect(b);
	return 0;
}

static int raw_send(int fd, uint16_t type, const void *body, size_t len, int pass)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	struct rp_hdr *h = (struct rp_hdr *)buf;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(*h) + len };
	union {
		struct cmsghdr a;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	memset(h, 0, sizeof(*h));
	h->len = (uint32_t)(sizeof(*h) + len);
	h->type = type;
	h->seq = type;
	memcpy(buf + sizeof(*h), body, len);
	if (pass >= 0) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.b;
		mh.msg_controllen = sizeof(ctl.b);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass, sizeof(int));
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/*
 * A raw connection of protocol @version to the daemon at @path, its HELLO
 * answered: the reply's fds (ring memfd, doorbells) in @keep, or closed.
 */
static int raw_hello_fds(const char *path, uint16_t version, int keep[RP_HELLO_FDS])
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct rp_hello h = { .magic = RP_PROTO_MAGIC, .version_min = 1, .version_max = version };
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	union {
		struct cmsghdr a;
		char b[CMSG_SPACE(sizeof(int) * 3)];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.b,
			     .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *cm;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path ? path : "");
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    raw_send(fd, RP_MSG_HELLO, &h, sizeof(h), -1) < 0 || recvmsg(fd, &mh, 0) <= 0 ||
	    ((struct rp_hdr *)buf)->status)
		return -1;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		int *fds = (int *)CMSG_DATA(cm), i;

		for (i = 0; i < (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int)); i++) {
			if (keep && i < RP_HELLO_FDS)
				keep[i] = fds[i];
			else
				close(fds[i]);
		}
	}
	return fd;
}

/* A raw connection past HELLO (the ring fds of the reply are closed). */
static int raw_hello_at(const char *path, uint16_t version)
{
	return raw_hello_fds(path, version, NULL);
}

static int raw_hello(void)
{
	return raw_hello_at(getenv("RDMAPROXY_SOCKET"), 1);
}

/*
 * What a client can do to the doorbells the daemon shares with it. With
 * eventfds (one open file description for both sides) it cleared the
 * description's O_NONBLOCK and filled the counter, and the daemon's next
 * write(2) of its completion doorbell blocked the daemon's loop for good.
 * Here: make both of its ends blocking, write 0xfffffffffffffffe into the
 * completion doorbell, ask to be woken and submit ops that fail at once
 * (a region that does not exist), ringing the submission doorbell; print
 * what each step got and "attacked", then hold until stdin closes.
 */
static int bellblock(void)
{
	int fds[RP_HELLO_FDS] = { -1, -1, -1 }, raw, i, spins;
	uint64_t max = 0xfffffffffffffffeull;
	struct rp_ring_view v;
	struct stat st;
	void *base;
	char line[16];

	raw = raw_hello_fds(getenv("RDMAPROXY_SOCKET"), 1, fds);
	if (raw < 0 || fds[2] < 0 || fstat(fds[0], &st) < 0)
		return 2;
	base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (base == MAP_FAILED || rp_ring_view_init(&v, base, (size_t)st.st_size,
						    RP_RING_SQ_ENTRIES, RP_RING_CQ_ENTRIES) < 0)
		return 2;
	printf("blocking=%d\n",
	       fcntl(fds[1], F_SETFL, 0) == 0 && fcntl(fds[2], F_SETFL, 0) == 0 ? 1 : -errno);
	printf("cq_fill=%d\n", write(fds[2], &max, sizeof(max)) == sizeof(max) ? 1 : -errno);
	fflush(stdout);
	for (i = 0; i < 64; i++) {
		uint32_t tail = rp_ring_load(&v.sq->producer);
		struct rp_sqe *e = &v.sqes[tail & (v.sq_entries - 1)];
		uint64_t one = 1;

		memset(e, 0, sizeof(*e));
		e->opcode = RP_SQE_WRITE;
		e->region = 999;
		e->cookie = (uint64_t)i + 1;
		e->len = 8;
		rp_ring_arm(v.cq, RP_RING_NEED_WAKEUP);
		rp_ring_store(&v.sq->producer, tail + 1);
		if (rp_ring_take_wakeup(v.sq, RP_RING_NEED_WAKEUP) &&
		    write(fds[1], &one, sizeof(one)) < 0) {
			/* A full pipe: the daemon has a wake-up pending. */
		}
		/* Let the daemon take it and ring: a full ring would stall it instead. */
		for (spins = 0; rp_ring_load(&v.sq->consumer) != tail + 1 && spins < 2000; spins++)
			usleep(1000);
		if (spins == 2000) {
			printf("stuck=%d\n", i); /* the daemon took no more: blocked? */
			break;
		}
		rp_ring_store(&v.cq->consumer, rp_ring_load(&v.cq->producer));
	}
	printf("attacked\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	close(raw);
	return 0;
}

/* A client with a 4 KiB region and a handle to its own export of another. */
static struct rp_client *writer(const char *name, struct rp_region **src, struct rp_remote **rm)
{
	struct rp_client *c = connect_or_die();
	struct rp_region *dst;

	if (rp_region_alloc(c, 4096, 0, src) < 0 || rp_region_alloc(c, 4096, 0, &dst) < 0 ||
	    rp_region_export(dst, name, RP_ACCESS_REMOTE_WRITE) < 0 ||
	    rp_remote_open(c, NULL, name, rm) < 0)
		exit(1);
	return c;
}

/*
 * What rdmaproxyctl does: say HELLO, close the ring's fds at once and keep
 * the connection. Print "closed", hold until stdin closes.
 */
static int closebells(void)
{
	int fds[RP_HELLO_FDS] = { -1, -1, -1 }, raw, i;
	char line[16];

	raw = raw_hello_fds(getenv("RDMAPROXY_SOCKET"), RP_PROTO_VERSION_MAX, fds);
	if (raw < 0)
		return 2;
	for (i = 0; i < RP_HELLO_FDS; i++)
		close(fds[i]);
	printf("closed\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	close(raw);
	return 0;
}

/*
 * A client whose daemon dies while it has stopped taking this client's
 * submissions for want of completion space (the client does not reap): fill
 * both rings with writes, print "stalled" (the script kills the daemon),
 * then reap until the library says the daemon is gone. Reaping tells a
 * stalled daemon through the submission doorbell; with nobody left at the
 * other end that must not kill this process (SIGPIPE). Prints what came.
 */
static int stalldeath(void)
{
	struct rp_completion cp[64];
	struct rp_region *src;
	struct rp_remote *rm;
	struct rp_client *c = writer("stalldeath", &src, &rm);
	long submitted = 0, ok = 0, failed = 0;
	int n, again = 0, r;
	char line[16];

	while (again < 1000) {
		r = rp_write(c, src, 0, rm, 0, 8, (uint64_t)submitted, 0);
		if (r == -EAGAIN) {
			again++;
			usleep(1000);
			continue;
		}
		if (r < 0)
			return 2;
		submitted++;
		again = 0;
	}
	printf("stalled submitted=%ld\n", submitted);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	while ((n = rp_wait(c, cp, 64, 10000)) > 0)
		for (r = 0; r < n; r++) {
			ok += cp[r].status == 0;
			failed += cp[r].status != 0;
		}
	printf("after ok=%ld failed=%ld last=%d\n", ok, failed, n);
	rp_disconnect(c);
	return 0;
}

/* One 4 KiB write of @src to @rm: *@done counts those that succeeded. 0, or -1 (failed). */
static int write_one(struct rp_client *c, struct rp_region *src, struct rp_remote *rm, long *done)
{
	struct rp_completion cp;

	if (rp_write(c, src, 0, rm, 0, 4096, (uint64_t)*done, 0) < 0 || wait_one(c, &cp) < 0)
		return -1;
	*done += cp.status == 0;
	return 0;
}

/*
 * Until raw connection @raw has an answer, keep @c writing 4 KiB (the daemon
 * must keep moving): how many writes completed. *@status: the answer's,
 * *@body its body (up to @len bytes).
 */
static long write_until_answer(int raw, struct rp_client *c, struct rp_region *src,
			       struct rp_remote *rm, int *status, void *body, size_t len)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	struct pollfd p = { .fd = raw, .events = POLLIN };
	long during = 0;
	ssize_t n;

	while (poll(&p, 1, 0) == 0 && write_one(c, src, rm, &during) == 0)
		;
	n = recv(raw, buf, sizeof(buf), 0);
	*status = n >= (ssize_t)sizeof(struct rp_hdr) ? ((struct rp_hdr *)buf)->status : -EPIPE;
	if (body && n >= (ssize_t)(sizeof(struct rp_hdr) + len))
		memcpy(body, buf + sizeof(struct rp_hdr), len);
	return during;
}

/* Send a raw REGION_REG of a sparse memfd of @len bytes (nothing allocated yet). 0 or -1. */
static int send_sparse(int raw, uint64_t len)
{
	struct rp_region_reg req = { .len = len };
	int mfd = memfd_create("sparse", MFD_CLOEXEC | MFD_ALLOW_SEALING), r = -1;

	if (mfd >= 0 && ftruncate(mfd, (off_t)len) == 0 &&
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0 &&
	    raw_send(raw, RP_MSG_REGION_REG, &req, sizeof(req), mfd) == 0)
		r = 0;
	if (mfd >= 0)
		close(mfd);
	return r;
}

/* A raw REGION_REG of a sparse @len bytes: its status, and the region's id in *@id. */
static int sparse_region(int raw, uint64_t len, struct rp_client *c, struct rp_region *src,
			 struct rp_remote *rm, long *during, uint32_t *id)
{
	struct rp_id rep = { 0 };
	int status;

	if (send_sparse(raw, len) < 0)
		exit(1);
	*during = write_until_answer(raw, c, src, rm, &status, &rep, sizeof(rep));
	*id = rep.id;
	return status;
}

static int bigreg(long mb)
{
	struct rp_region *src;
	struct rp_remote *rm;
	struct rp_client *c = writer("bigreg-dst", &src, &rm);
	int raw = raw_hello(), status;
	long during;
	uint32_t id;

	if (raw < 0)
		return 1;
	/* Until the registration is answered, the other client must keep moving. */
	status = sparse_region(raw, (uint64_t)mb << 20, c, src, rm, &during, &id);
	printf("reg_status=%d\nwrites_during=%ld\n", status, during);
	close(raw);
	rp_disconnect(c);
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * More EXPORTs of @x's region than a connection may have registering at
 * once, sent together (a client of the library has one request out at a
 * time): the ones beyond are answered -EBUSY. Then they are withdrawn.
 */
static int pipelined_exports(int raw, const struct rp_export_acl_req *x)
{
	struct rp_export_acl_req y = *x;
	struct rp_export_req u = { .region = x->x.region };
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	int i, st, ok = 0, busy = 0, other = 0;

	for (i = 0; i < PIPELINED_EXPORTS; i++) {
		snprintf(y.x.name, sizeof(y.x.name), "bigexport.%d", i);
		if (raw_send(raw, RP_MSG_EXPORT_ACL, &y, sizeof(y), -1) < 0)
			return -1;
	}
	for (i = 0; i < PIPELINED_EXPORTS; i++) {
		if (recv(raw, buf, sizeof(buf), 0) < (ssize_t)sizeof(struct rp_hdr))
			return -1;
		st = ((struct rp_hdr *)buf)->status;
		ok += st == 0;
		busy += st == -EBUSY;
		other += st && st != -EBUSY;
	}
	printf("pipelined_exports=%d ok=%d busy=%d other=%d\n", PIPELINED_EXPORTS, ok, busy, other);
	for (i = 0; i < PIPELINED_EXPORTS; i++) {
		snprintf(u.name, sizeof(u.name), "bigexport.%d", i);
		if (raw_send(raw, RP_MSG_UNEXPORT, &u, sizeof(u), -1) < 0 ||
		    recv(raw, buf, sizeof(buf), 0) < (ssize_t)sizeof(struct rp_hdr))
			return -1;
	}
	return 0;
}

/* A raw connection with a sparse region of @mb MiB exported as "bigexport" (to @that). */
/* Shmem in /proc/meminfo, in KiB (0: unknown). */
static long shmem_kb(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long kb = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Shmem: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static int bigexport(long mb, const char *bsock, const char *this, const char *that, bool quit)
{
	struct rp_region *src;
	struct rp_remote *rm;
	struct rp_client *c = writer("bigexport-dst", &src, &rm);
	struct rp_export_acl_req x = { .x.access = RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE };
	struct rp_name_req o = { 0 };
	int raw = raw_hello_at(getenv("RDMAPROXY_SOCKET"), RP_PROTO_VERSION_ACL), braw, status;
	long during, shmem;
	bool freed;
	double t;

	if (raw < 0)
		return 1;
	status = sparse_region(raw, (uint64_t)mb << 20, c, src, rm, &during, &x.x.region);
	printf("reg_status=%d\n", status);
	snprintf(x.x.name, sizeof(x.x.name), "bigexport");
	if (that) {
		x.n_peers = 1;
		snprintf(x.peers[0], sizeof(x.peers[0]), "%s", that);
	}
	t = now_ms();
	if (raw_send(raw, RP_MSG_EXPORT_ACL, &x, sizeof(x), -1) < 0)
		return 1;
	if (quit) {
		/* Gone while the export's MR is being registered; then again, exported. */
		close(raw);
		raw = raw_hello_at(getenv("RDMAPROXY_SOCKET"), RP_PROTO_VERSION_ACL);
		if (raw < 0)
			return 1;
		status = sparse_region(raw, (uint64_t)mb << 20, c, src, rm, &during, &x.x.region);
		printf("reg2_status=%d\n", status);
		if (raw_send(raw, RP_MSG_EXPORT_ACL, &x, sizeof(x), -1) < 0)
			return 1;
	}
	during = write_until_answer(raw, c, src, rm, &status, NULL, 0);
	printf("export_status=%d\nwrites_during_export=%ld\nexport_ms=%.1f\n", status, during,
	       now_ms() - t);
	if (!quit && pipelined_exports(raw, &x) < 0)
		return 1;
	if (bsock) {
		int more[BIGEXPORT_OPENS - 1], i, ok = 0;

		snprintf(o.peer, sizeof(o.peer), "%s", this);
		snprintf(o.name, sizeof(o.name), "bigexport");
		t = now_ms();
		/* Several LOOKUPs at once: they wait for the same registration. */
		for (i = 0; i < BIGEXPORT_OPENS - 1; i++) {
			more[i] = raw_hello_at(bsock, 1);
			if (more[i] < 0 ||
			    raw_send(more[i], RP_MSG_REMOTE_OPEN, &o, sizeof(o), -1) < 0)
				return 1;
		}
		braw = raw_hello_at(bsock, 1);
		if (braw < 0 || raw_send(braw, RP_MSG_REMOTE_OPEN, &o, sizeof(o), -1) < 0)
			return 1;
		if (quit) {
			/* The export goes while this node registers the peer's MR of it. */
			usleep(10000);
			close(raw);
			raw = -1;
		}
		during = write_until_answer(braw, c, src, rm, &status, NULL, 0);
		printf("open_status=%d\nwrites_during_open=%ld\nopen_ms=%.1f\n", status, during,
		       now_ms() - t);
		close(braw);
		for (i = 0; i < BIGEXPORT_OPENS - 1; i++) {
			int st;

			write_until_answer(more[i], c, src, rm, &st, NULL, 0);
			ok += st == status;
			close(more[i]);
		}
		printf("opens_alike=%d of %d\n", ok + 1, BIGEXPORT_OPENS);
	}
	if (raw >= 0 && !quit) {
		/* Withdrawing it deregisters both MRs (once B confirms); freeing it, its own. */
		struct rp_export_req u = { .region = x.x.region };
		struct rp_id f = { .id = x.x.region };

		memcpy(u.name, x.x.name, sizeof(u.name));
		t = now_ms();
		if (raw_send(raw, RP_MSG_UNEXPORT, &u, sizeof(u), -1) < 0)
			return 1;
		during = write_until_answer(raw, c, src, rm, &status, NULL, 0);
		printf("unexport_status=%d\nwrites_during_unexport=%ld\nunexport_ms=%.1f\n", status,
		       during, now_ms() - t);
		/*
		 * Its pages are freed when the daemon unmaps them (this client's
		 * fd is closed): count the writes until /proc/meminfo shows that.
		 */
		shmem = shmem_kb();
		t = now_ms();
		if (raw_send(raw, RP_MSG_REGION_FREE, &f, sizeof(f), -1) < 0)
			return 1;
		during = write_until_answer(raw, c, src, rm, &status, NULL, 0);
		while (!(freed = shmem - shmem_kb() >= mb * 1024 / 2) && now_ms() - t < 60000 &&
		       write_one(c, src, rm, &during) == 0)
			;
		printf("free_status=%d\nwrites_until_freed=%ld\nfreed_ms=%.1f\n", status,
		       freed ? during : -1, now_ms() - t);
	}
	if (raw >= 0)
		close(raw);
	rp_disconnect(c);
	return 0;
}

static int regs(void)
{
	struct rp_client *c = connect_or_die();
	struct rp_region *src, *dst, *r;
	struct rp_remote *rm;
	struct rp_completion cp;
	char line[64], name[32];
	unsigned n = 0;
	int st;

	snprintf(name, sizeof(name), "regs-%d", (int)getpid());
	if (rp_region_alloc(c, 4096, 0, &src) < 0 || rp_region_alloc(c, 4096, 0, &dst) < 0 ||
	    rp_region_export(dst, name, RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE) < 0 ||
	    rp_remote_open(c, NULL, name, &rm) < 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		int ok;

		st = rp_region_alloc(c, 65536, 0, &r);
		if (st == 0)
			rp_region_free(r);
		memset(rp_region_ptr(src), 'a' + (int)(n % 26), 4096);
		ok = rp_write(c, src, 0, rm, 0, 4096, ++n, 0) == 0 && wait_one(c, &cp) == 0 &&
		     cp.status == 0 && !memcmp(rp_region_ptr(dst), rp_region_ptr(src), 4096);
		printf("reg=%d error=%s xfer=%s\n", st, st ? rp_strerror(st) : "none",
		       ok ? "ok" : "failed");
		fflush(stdout);
	}
	rp_disconnect(c);
	return 0;
}

/* A line to fd $HOSTILE_GO_FD, if set: another process waits on it (no shell in between). */
static void go_signal(void)
{
	const char *v = getenv("HOSTILE_GO_FD");

	if (v && write(atoi(v), "go\n", 3) != 3)
		perror("go");
}

/* N registrations of sparse MB MiB memfds sent at once, their answers timed. */
static int regflood(int n, long mb, bool then_free)
{
	_Alignas(8) char buf[RP_PROTO_MSG_MAX];
	int raw = raw_hello(), i, ok = 0;
	uint32_t *ids = calloc((size_t)n, sizeof(*ids));

	if (raw < 0)
		return 1;
	for (i = 0; i < n; i++)
		if (send_sparse(raw, (uint64_t)mb << 20) < 0)
			return 1;
	printf("sent\n");
	fflush(stdout);
	go_signal();
	for (i = 0; i < n; i++) {
		if (recv(raw, buf, sizeof(buf), 0) < (ssize_t)sizeof(struct rp_hdr))
			return 1;
		ok += ((struct rp_hdr *)buf)->status == 0;
		if (ids)
			ids[i] = ((struct rp_id *)(buf + sizeof(struct rp_hdr)))->id;
		printf("answer ms=%.3f status=%d\n", now_ms(), ((struct rp_hdr *)buf)->status);
		fflush(stdout);
	}
	printf("answers=%d ok=%d\n", n, ok);
	fflush(stdout);
	if (then_free && ids) {
		for (i = 0; i < n; i++)
			if (raw_send(raw, RP_MSG_REGION_FREE, &(struct rp_id){ .id = ids[i] },
				     sizeof(struct rp_id), -1) < 0)
				return 1;
		printf("freeing\n");
		fflush(stdout);
		go_signal();
		for (i = 0; i < n; i++) {
			if (recv(raw, buf, sizeof(buf), 0) < (ssize_t)sizeof(struct rp_hdr))
				return 1;
			printf("freed ms=%.3f status=%d\n", now_ms(),
			       ((struct rp_hdr *)buf)->status);
			fflush(stdout);
		}
	}
	free(ids);
	close(raw);
	return 0;
}

/* One small registration through the library, its answer timed. */
static int regone(bool wait)
{
	double t0 = now_ms();
	struct rp_client *c = connect_or_die();
	struct rp_region *r;
	char line[16];
	double t;
	int st;

	if (wait) {
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	t = now_ms();
	st = rp_region_alloc(c, 4096, 0, &r);

	printf("answer ms=%.3f status=%d took_ms=%.3f connect_ms=%.3f\n", now_ms(), st,
	       now_ms() - t, t - t0);
	rp_disconnect(c);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "hugebus"))
		return hugebus();
	if (argc == 2 && !strcmp(argv[1], "hugesrc"))
		return hugesrc(NULL, NULL);
	if (argc == 4 && !strcmp(argv[1], "hugesrc"))
		return hugesrc(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "hugepeer"))
		return hugepeer(argv[2], argv[3], argv[4]);
	if (argc == 5 && !strcmp(argv[1], "unexportwait"))
		return unexportwait(argv[2], (size_t)atol(argv[3]), argv[4]);
	if (argc == 3 && !strcmp(argv[1], "bigreg"))
		return bigreg(atol(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "bigexport"))
		return bigexport(atol(argv[2]), NULL, NULL, NULL, false);
	if ((argc == 6 || (argc == 7 && !strcmp(argv[6], "quit"))) && !strcmp(argv[1], "bigexport"))
		return bigexport(atol(argv[2]), argv[3], argv[4], argv[5], argc == 7);
	if (argc == 3 && !strcmp(argv[1], "hold"))
		return hold(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "exports"))
		return exports(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "notifyfull"))
		return notifyfull(atoi(argv[2]));
	if (argc == 2 && !strcmp(argv[1], "bellblock"))
		return bellblock();
	if (argc == 2 && !strcmp(argv[1], "closebells"))
		return closebells();
	if (argc == 2 && !strcmp(argv[1], "stalldeath"))
		return stalldeath();
	if (argc == 2 && !strcmp(argv[1], "regs"))
		return regs();
	if ((argc == 4 || (argc == 5 && !strcmp(argv[4], "free"))) && !strcmp(argv[1], "regflood"))
		return regflood(atoi(argv[2]), atol(argv[3]), argc == 5);
	if ((argc == 2 || (argc == 3 && !strcmp(argv[2], "wait"))) && !strcmp(argv[1], "regone"))
		return regone(argc == 3);
	fprintf(stderr, "usage: hostile hugebus|hugesrc [PEER EXPORT]|hugepeer ASOCK BSOCK "
			"PEER|hold N|exports N|notifyfull "
			"N|bigreg MB|bigexport MB [BSOCK THIS THAT [quit]]|regs|regflood N MB "
			"[free]|regone [wait]\n");
	return 2;
}
