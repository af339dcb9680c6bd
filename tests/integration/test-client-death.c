/* SPDX-License-Identifier: MIT */
/*
 * The client side of a daemon's death (test-client-death.sh): every
 * operation the library accepted gets exactly one completion, none of them a
 * success unless the daemon reported it before it died, and submissions fail
 * at once afterwards.
 *
 *   test-client-death PEER NAME
 *
 * Talks to the daemon at $RDMAPROXY_SOCKET; PEER is a configured peer that
 * exports NAME (1 MiB or more). The script drives the stages with one line
 * on stdin each, after this program printed the previous stage's word:
 *   "ready"      set up; the script stops PEER's daemon, then says go
 *   "submitted"  3 local writes (done at once), 16 receives and 8 writes to
 *                the stopped PEER are in flight; the script waits until the
 *                daemon took them all, stops it, then says go
 *   "filled N"   N writes sit in the submission ring that the stopped daemon
 *                never takes; the script kills it, then says go
 * Then PASS/FAIL lines, exit 0 if all held.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "rdmaproxy.h"

#define N_LOCAL 3
#define N_RECV 16
#define N_PEER 8
#define COOKIE_LOCAL 300
#define COOKIE_RECV 100
#define COOKIE_PEER 200
#define COOKIE_QUEUED 42 /* the same cookie for every queued write: matching is not by cookie */
#define COOKIE_LATE 900

static int failures;

static void check(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", cond ? "PASS" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		failures++;
}

static void die(const char *what, int err)
{
	printf("FAIL %s: %s (%d)\n", what, rp_strerror(err), err);
	fflush(stdout);
	exit(1);
}

static void stage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void stage(const char *fmt, ...)
{
	char line[64];
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		die("waiting for the script", -EPIPE);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct tally {
	int local[N_LOCAL], recv[N_RECV], peer[N_PEER];
	int local_ok, recv_daemon, peer_outcome, queued, queued_daemon, late, late_daemon;
	int successes, other;
};

static void count(struct tally *t, const struct rp_completion *c)
{
	uint64_t k = c->cookie;

	if (c->op == RP_OP_WRITE && k >= COOKIE_LOCAL && k < COOKIE_LOCAL + N_LOCAL) {
		t->local[k - COOKIE_LOCAL]++;
		t->local_ok += c->status == 0;
		return;
	}
	if (c->status == 0)
		t->successes++;
	if (c->op == RP_OP_RECV && k >= COOKIE_RECV && k < COOKIE_RECV + N_RECV) {
		t->recv[k - COOKIE_RECV]++;
		t->recv_daemon += c->status == -RP_EDAEMON;
	} else if (c->op == RP_OP_WRITE && k >= COOKIE_PEER && k < COOKIE_PEER + N_PEER) {
		t->peer[k - COOKIE_PEER]++;
		t->peer_outcome += c->status == -RP_EOUTCOME;
	} else if (c->op == RP_OP_WRITE && k == COOKIE_QUEUED) {
		t->queued++;
		t->queued_daemon += c->status == -RP_EDAEMON;
	} else if (c->op == RP_OP_WRITE && k >= COOKIE_LATE) {
		t->late++;
		t->late_daemon += c->status == -RP_EDAEMON;
	} else {
		printf("# unexpected completion op %u cookie %llu status %d\n", c->op,
		       (unsigned long long)k, c->status);
		t->other++;
	}
}

static bool each_once(const int *v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (v[i] != 1)
			return false;
	return true;
}

/* An epoll set watching rp_fd(), as an application's loop would. */
static int watch_fd(struct rp_client *c)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, rp_fd(c), &ev) < 0)
		die("epoll on rp_fd()", -errno);
	return ep;
}

static int fd_ready(int ep, int timeout_ms)
{
	struct epoll_event out;

	return epoll_wait(ep, &out, 1, timeout_ms);
}

int main(int argc, char **argv)
{
	struct rp_completion comps[64];
	struct rp_client *c;
	struct rp_region *r;
	struct rp_remote *self, *far;
	struct rp_endpoint *ep;
	struct tally t = { 0 };
	int i, n, st, efd, queued = 0, late = 0, reports = 0;
	double deadline;

	if (argc != 3) {
		fprintf(stderr, "usage: test-client-death PEER NAME\n");
		return 2;
	}
	if ((st = rp_connect(NULL, &c)) < 0 || (st = rp_region_alloc(c, 1 << 20, 0, &r)) < 0 ||
	    (st = rp_region_export(r, "death-self", RP_ACCESS_REMOTE_WRITE)) < 0 ||
	    (st = rp_remote_open(c, NULL, "death-self", &self)) < 0 ||
	    (st = rp_remote_open(c, argv[1], argv[2], &far)) < 0 ||
	    (st = rp_endpoint_bind(c, "death-ep", &ep)) < 0)
		die("setup", st);
	stage("ready");

	/* Done at once, and not reaped: their completions wait in the ring. */
	for (i = 0; i < N_LOCAL; i++)
		if ((st = rp_write(c, r, 0, self, 4096, 4096, COOKIE_LOCAL + i, 0)) < 0)
			die("local write", st);
	for (i = 0; i < N_RECV; i++)
		if ((st = rp_post_recv(ep, r, 8192 + 4096 * (size_t)i, 4096, COOKIE_RECV + i)) < 0)
			die("rp_post_recv", st);
	for (i = 0; i < N_PEER; i++)
		if ((st = rp_write(c, r, 0, far, 0, 65536, COOKIE_PEER + i, 0)) < 0)
			die("write to the stopped peer", st);
	stage("submitted");

	while ((st = rp_write(c, r, 0, self, 0, 4096, COOKIE_QUEUED, 0)) == 0)
		queued++;
	check(st == -EAGAIN && queued > 0,
	      "a stopped daemon's submission ring fills up (%d, then %s)", queued, rp_strerror(st));
	/* Nothing was reaped, so nothing armed the doorbell: only the hang-up can wake this. */
	efd = watch_fd(c);
	n = fd_ready(efd, 0);
	check(n == 0, "rp_fd() is not readable while the daemon lives and nothing is armed (%d)",
	      n);
	stage("filled %d", queued);

	n = fd_ready(efd, 10000);
	check(n == 1, "rp_fd() becomes readable when the daemon dies (epoll_wait: %d)", n);
	close(efd);
	/*
	 * Submissions look at the socket at most every 10 ms: one made before
	 * that is accepted (and reported below); later ones fail at once.
	 */
	deadline = now_s() + 5;
	while ((st = rp_write(c, r, 0, self, 0, 4096, COOKIE_LATE + late, 0)) != -RP_EDAEMON &&
	       now_s() < deadline) {
		late += st == 0;
		usleep(2000);
	}
	check(st == -RP_EDAEMON && late <= 10,
	      "a submission after the death fails at once with RP_EDAEMON (%s; %d accepted "
	      "before the library noticed)",
	      rp_strerror(st), late);

	for (;;) {
		n = rp_wait(c, comps, 5, 10000);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++)
			count(&t, &comps[i]);
		reports += n;
	}
	check(n == -RP_EDAEMON, "after the last completion rp_wait() says RP_EDAEMON (%d)", n);
	n = rp_poll(c, comps, 64);
	check(n == -RP_EDAEMON, "and so does rp_poll(), again (%d)", n);

	check(each_once(t.local, N_LOCAL) && t.local_ok == N_LOCAL,
	      "the writes completed before the death are reported once each, as done");
	check(each_once(t.recv, N_RECV) && t.recv_daemon == N_RECV,
	      "each posted receive gets one completion, RP_EDAEMON (%d of %d)", t.recv_daemon,
	      N_RECV);
	check(each_once(t.peer, N_PEER) && t.peer_outcome == N_PEER,
	      "each write the daemon had sent to the peer gets one completion, RP_EOUTCOME (%d of "
	      "%d)",
	      t.peer_outcome, N_PEER);
	check(t.queued == queued && t.queued_daemon == queued,
	      "each write left in the ring gets one completion, RP_EDAEMON, even with one cookie "
	      "for all (%d of %d)",
	      t.queued_daemon, queued);
	check(t.late == late && t.late_daemon == late,
	      "each write accepted after the death gets one, RP_EDAEMON (%d of %d)", t.late_daemon,
	      late);
	check(t.successes == 0 && t.other == 0,
	      "nothing else is reported, and nothing in flight is reported done (%d, %d)",
	      t.successes, t.other);
	check(reports == N_LOCAL + N_RECV + N_PEER + queued + late,
	      "exactly one completion per accepted operation (%d for %d)", reports,
	      N_LOCAL + N_RECV + N_PEER + queued + late);

	st = rp_post_recv(ep, r, 0, 4096, 1);
	check(st == -RP_EDAEMON, "rp_post_recv() fails at once (%s)", rp_strerror(st));
	st = rp_read(c, r, 0, self, 0, 4096, 1, 0);
	check(st == -RP_EDAEMON, "rp_read() fails at once (%s)", rp_strerror(st));
	st = rp_send(c, NULL, "death-ep", r, 0, 64, 1);
	check(st == -RP_EDAEMON, "rp_send() fails at once (%s)", rp_strerror(st));
	rp_disconnect(c);
	return failures ? 1 : 0;
}
