/* SPDX-License-Identifier: MIT */
/*
 * rp_relax() on a crowded host (test-client-relax.sh): it sleeps on the
 * completion doorbell only while its caller polls for completions whose
 * waits have been lasting long, never while it spins on something else,
 * never for completions reaped long after they came, and never arms the
 * doorbell for a client whose completions come quickly. With "free"
 * (test-client-relax-free.sh: the daemon says the CPUs are free; no busy
 * loop, and this program runs on CPU 1), the stages "ready" (set up, for
 * the script's first look at the doorbells), "fast", "gone" (gone_write()),
 * "paced" and "slept" only, as below, and in "slept" no call before the
 * 32nd of the wait may give the CPU away.
 *
 *   test-client-relax [free]
 *
 * Talks to the daemon at $RDMAPROXY_SOCKET, which the script runs on CPU 0
 * while a busy loop runs on CPU 1, so that it tells its clients the CPUs
 * are crowded; this program runs on CPU 0 too (crowded mode). The script
 * reads rdmaproxy_client_doorbells_total between the stages; it drives them
 * with one line on stdin each, after this program printed the previous
 * stage's word. Before the first, with only a posted receive in flight,
 * rp_poll()/rp_relax() pairs must yield at once (recv_only()). The stages:
 *   "batched"  8 writes reaped 3 ms apart, long after each completed, then
 *              64 rp_poll()/rp_relax() pairs with the daemon stopped (by
 *              this program): the script checks that no doorbell was rung
 *              (they yielded, not slept)
 *   "fast"     200 writes done with rp_poll()/rp_relax(), completions
 *              microseconds apart: the script checks that the doorbell was
 *              not rung per completion
 *   "paced"    8 writes, each waited for with rp_poll()/rp_relax() while
 *              this program stops the daemon ($RP_TEST_DAEMON_PID) for
 *              3 ms; the script stops the daemon (SIGSTOP) and says go
 *   "flag"     one write submitted to the stopped daemon, then 64 rp_relax()
 *              calls 3 us apart with no rp_poll() between (a spin on a flag
 *              in a region), of which about half must yield; the script
 *              continues the daemon and says go
 *   "reaped"   that write reaped (plain polls); the script checks that no
 *              doorbell was rung for it, stops the daemon and says go
 *   "slept"    one more write, then 64 rp_poll()/rp_relax() pairs, which
 *              must sleep on the doorbell (milliseconds, where 64 yields to
 *              the stopped daemon's CPU take microseconds); the script
 *              continues the daemon and says go
 *   "counted"  that write reaped: the script checks that exactly one
 *              doorbell was rung for it and says go
 *   "learn-ready" a second client, and a child that will stop the
 *              daemon for ~0.6 ms at a time; the script reads the doorbell
 *              count and says go
 *   "learned"  64 writes waited for while the child stops the daemon:
 *              rp_relax() has learned that a wake-up costs far less than
 *              such a wait, and the script checks that the daemon rang
 *              the doorbell for most of them, unless the helper says the
 *              machine is too busy for that (learned_stage())
 * and last, on its own (resume_stage()): after a long yield, a spin on a
 * flag waits longer before it yields again while the engine is still on
 * another CPU, but not after a submission, nor on the engine's own CPU.
 * Then PASS/FAIL lines for what this side saw, exit 0 if all held.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rdmaproxy.h"

#define N_FAST 200
#define N_PACED 8
#define PACE_NS 3000000L
/* learned_stage(): waits shorter than a millisecond, ended by another process. */
#define N_LEARN 64
#define LEARN_PACE_NS 600000L
#define LEARN_PINGS 16
#define LEARN_WAKE_MAX_NS 25000L

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

static pid_t daemon_pid; /* stopped and continued by this program in two stages */

static void die(const char *what, int err)
{
	fprintf(stderr, "test-client-relax: %s: %s\n", what, rp_strerror(err));
	if (daemon_pid > 0)
		kill(daemon_pid, SIGCONT); /* never leave it stopped */
	exit(2);
}

static long since_ns(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

/* Keep the CPU for @us microseconds. */
static void busy_us(long us)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (since_ns(&t0) < us * 1000L)
		;
}

static void stage(const char *word)
{
	char line[16];

	printf("%s\n", word);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin)) {
		fprintf(stderr, "test-client-relax: no go after %s\n", word);
		exit(2);
	}
}

static void submit(struct rp_client *c, struct rp_region *r, struct rp_remote *self,
		   uint64_t cookie)
{
	int st = rp_write(c, r, 0, self, 4096, 64, cookie, 0);

	if (st < 0)
		die("rp_write", st);
}

/* Poll, relaxing in between if @relax, until the completion of @cookie (5 s at most). */
static int reap_one(struct rp_client *c, uint64_t cookie, bool relax)
{
	struct timespec t0;
	struct rp_completion comp;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = rp_poll(c, &comp, 1);
		if (n < 0)
			return n;
		if (n == 1)
			return comp.cookie == cookie && comp.status == 0 ? 0 : -EPROTO;
		if (relax)
			rp_relax(c);
		else
			nanosleep(&(struct timespec){ 0, 100000L }, NULL);
		if (since_ns(&t0) > 5000000000L)
			return -ETIMEDOUT;
	}
}

/*
 * Stop the daemon, submit @cookie and poll for it with rp_relax() after each
 * empty poll, @calls times or for @ns, whichever ends first; then continue
 * the daemon. Returns what the last poll returned (0: nothing came, as it
 * should not from a stopped daemon).
 */
static int stopped_wait(struct rp_client *c, struct rp_region *r, struct rp_remote *self,
			uint64_t cookie, unsigned calls, long ns)
{
	struct rp_completion comp;
	struct timespec t0;
	unsigned i = 0;
	int n;

	if (kill(daemon_pid, SIGSTOP) < 0)
		die("SIGSTOP", -errno);
	submit(c, r, self, cookie);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		n = rp_poll(c, &comp, 1);
		if (n == 0)
			rp_relax(c);
	} while (n == 0 && ++i < calls && since_ns(&t0) < ns);
	if (kill(daemon_pid, SIGCONT) < 0)
		die("SIGCONT", -errno);
	return n;
}

/*
 * 200 writes polled to completion with rp_relax() between polls; says how
 * many were slow: over 1 ms, and from 50 us to 1 ms (the shortest usual
 * wait rp_relax() may sleep through once it knows a wake-up costs little,
 * RELAX_SLEEP_WAIT_MIN_NS; such a wait is slept through once at most).
 */
static void fast_writes(struct rp_client *c, struct rp_region *r, struct rp_remote *self)
{
	struct timespec t0;
	unsigned i, slow = 0, slow50 = 0;
	long ns;
	int st;

	for (i = 0, st = 0; i < N_FAST && st == 0; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		submit(c, r, self, i + 1);
		st = reap_one(c, i + 1, true);
		ns = since_ns(&t0);
		slow += ns > 1000000L;
		slow50 += ns > 50000L && ns <= 1000000L;
	}
	check(st == 0, "%u writes polled to completion with rp_relax() between polls", N_FAST);
	/* On a machine too busy for quick completions, rp_relax() rightly sleeps: the script is
	 * told. */
	printf("slow %u\nslow50 %u\n", slow, slow50);
	fflush(stdout);
}

/* Each write waited for with rp_poll()/rp_relax() while the daemon is stopped for 3 ms. */
static void paced_writes(struct rp_client *c, struct rp_region *r, struct rp_remote *self)
{
	unsigned i;
	int st, n;

	for (i = 0, st = 0; i < N_PACED && st == 0; i++) {
		n = stopped_wait(c, r, self, 1000 + i, UINT_MAX, PACE_NS);
		st = n != 0 ? -EPROTO : reap_one(c, 1000 + i, true);
	}
	check(st == 0, "%u writes waited for %ld ms each with rp_relax() between polls", N_PACED,
	      PACE_NS / 1000000);
}

/*
 * With the daemon stopped (by the script): one write, then 64 rp_poll()/
 * rp_relax() pairs, of which the first to give the CPU away must be call
 * @first or later. Then the script continues the daemon and says go.
 */
static void slept_write(struct rp_client *c, struct rp_region *r, struct rp_remote *self,
			unsigned first)
{
	struct rp_completion comp;
	struct timespec t0;
	unsigned i, slept = 0, at = 0;
	double ms;
	int st, n;

	submit(c, r, self, 3000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 1; i <= 64; i++) {
		n = rp_poll(c, &comp, 1);
		if (n != 0) {
			check(false, "a poll while the daemon is stopped found %d", n);
			break;
		}
		if (rp_relax(c) == 1 && !slept++)
			at = i;
	}
	ms = (double)since_ns(&t0) / 1e6;
	/* Each sleep lasts the usual wait (~3 ms); 64 yields to an idle CPU take microseconds. */
	check(slept > 0 && ms >= 2.0, "rp_relax() slept: %u of 64 calls gave the CPU away, %.1f ms",
	      slept, ms);
	check(at >= first, "the first of them was call %u (not before call %u)", at, first);
	stage("slept");
	st = reap_one(c, 3000, false);
	check(st == 0, "the write it slept for completed once the daemon ran: %s", rp_strerror(st));
	n = rp_poll(c, &comp, 1);
	check(n == 0, "and nothing else came (%d)", n);
}

/*
 * Crowded, the daemon idle, and only a posted receive in flight: what the
 * caller waits for is another process's send, so each rp_poll()/rp_relax()
 * pair yields (but the first, which may see the daemon's work on the receive
 * itself), not only once the engine has been still for 1 us (back-to-back
 * calls: that gives one yield per microsecond of them). Then the receive is
 * cancelled and reaped, so that nothing is left in flight for what follows.
 */
static void recv_only(struct rp_client *c, struct rp_region *r)
{
	struct rp_endpoint *ep;
	struct rp_completion comp;
	unsigned i, yielded = 0;
	int st, n = 0;

	if ((st = rp_endpoint_bind(c, "relax-recv", &ep)) < 0 ||
	    (st = rp_post_recv(ep, r, 8192, 64, 900)) < 0)
		die("receive set-up", st);
	for (i = 0; i < 64 && n == 0; i++) {
		n = rp_poll(c, &comp, 1);
		if (n == 0)
			yielded += rp_relax(c) == 1;
	}
	check(n == 0 && yielded >= 56,
	      "only a receive in flight: rp_relax() yields at once, %u of 64 calls right after "
	      "an empty poll",
	      yielded);
	/*
	 * Not after a poll: ends that wait, so that reaping the cancelled
	 * receive (an unbind later) does not count as a long wait that would
	 * make the next stage's rp_relax() sleep.
	 */
	rp_relax(c);
	if ((st = rp_endpoint_unbind(ep)) < 0)
		die("rp_endpoint_unbind", st);
	for (i = 0; i < 5000 && (n = rp_poll(c, &comp, 1)) == 0; i++)
		nanosleep(&(struct timespec){ 0, 1000000L }, NULL);
	check(n == 1 && comp.cookie == 900 && comp.status == -ECANCELED,
	      "and it completed with -ECANCELED once unbound (%d, %d)", n,
	      n == 1 ? comp.status : 0);
}

/* Run on @cpu only. */
static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		die("sched_setaffinity", -errno);
}

enum resume_case { SUBMIT_FIRST, SUBMIT_AFTER, NO_SUBMIT };

/*
 * With the daemon stopped: rp_relax() calls with no poll between (a spin on
 * a flag) until one yields and that yield takes LONG_YIELD_NS or more
 * (another task ran on this CPU), then on until the next yield (2 s at most
 * each). A write (@cookie) is submitted before that (SUBMIT_FIRST), just
 * after the long yield (SUBMIT_AFTER) or not at all. Returns how long after
 * the long yield the call that yields next began, in microseconds (-1: none
 * in 2 s).
 */
#define LONG_YIELD_NS 200000L
static long gap_after_long_yield(struct rp_client *c, enum resume_case how, struct rp_region *r,
				 struct rp_remote *self, uint64_t cookie)
{
	struct timespec t0, t;
	long gap;

	if (how == SUBMIT_FIRST)
		submit(c, r, self, cookie);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (rp_relax(c) == 1 && since_ns(&t) >= LONG_YIELD_NS)
			break;
		if (since_ns(&t0) > 2000000000L)
			return -1;
	}
	if (how == SUBMIT_AFTER)
		submit(c, r, self, cookie);
	/* Until the call that yields begins: the yield itself may take a time slice. */
	clock_gettime(CLOCK_MONOTONIC, &t);
	for (;;) {
		gap = since_ns(&t);
		if (rp_relax(c) == 1)
			return gap / 1000L;
		if (gap > 2000000000L)
			return -1;
	}
}

/* Continue the daemon and reap @n writes, cookies @first on. */
static void cont_and_reap(struct rp_client *c, uint64_t first, unsigned n)
{
	unsigned i;
	int st = 0;

	if (kill(daemon_pid, SIGCONT) < 0)
		die("SIGCONT", -errno);
	for (i = 0; i < n && st == 0; i++)
		st = reap_one(c, first + i, false);
	check(st == 0, "the %u writes submitted meanwhile completed: %s", n, rp_strerror(st));
}

/*
 * rp_relax() in a spin on a flag, after a yield that took long (another task
 * ran here), nothing submitted since and the engine still on another CPU
 * (the daemon stopped, as in the middle of a long device call), with its
 * ring not armed: it waits up to as long as that yield took, at most 100
 * us, before it yields again, not 1 us. After a submission, on the
 * engine's own CPU, or with the ring armed (an idle engine), 1 us again.
 * This program runs on CPU 1 (with the script's busy loop, which a yield
 * hands the CPU to), the daemon on CPU 0.
 */
static void resume_stage(struct rp_client *c, struct rp_region *r, struct rp_remote *self)
{
	long g, slow = LONG_MAX, slowest = 0, fast;
	unsigned i;
	pid_t kid;
	int st;

	pin(1);
	/* The engine has run since it was continued: it has said which CPU it is on. */
	submit(c, r, self, 4000);
	st = reap_one(c, 4000, false);
	if (st < 0)
		die("resume stage: write", st);
	if (kill(daemon_pid, SIGSTOP) < 0)
		die("SIGSTOP", -errno);
	/* A submission takes the ring's wake-up flag (it rings): not armed now. */
	for (i = 0; i < 4; i++) {
		g = gap_after_long_yield(c, SUBMIT_FIRST, r, self, 4001 + i);
		g = g < 0 ? LONG_MAX : g; /* no yield in 2 s */
		slow = g < slow ? g : slow;
		slowest = g > slowest ? g : slowest;
	}
	check(slow >= 50 && slowest < 20000,
	      "after a long yield, nothing submitted since, the engine still on another CPU: the "
	      "next yield came >= 50 us later, but not much more than 100 us (%ld to %ld us)",
	      slow, slowest);
	for (i = 0, fast = 0; i < 8; i++) {
		g = gap_after_long_yield(c, SUBMIT_AFTER, r, self, 4005 + i);
		fast += g >= 0 && g < 30;
	}
	check(fast > 0, "after a submission: within 30 us (%ld of 8 times)", fast);
	/* On the engine's CPU, with another task there to make a yield long. */
	kid = fork();
	if (kid < 0)
		die("fork", -errno);
	if (kid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pin(0);
		for (;;)
			;
	}
	pin(0);
	for (i = 0, fast = 0; i < 8; i++) {
		g = gap_after_long_yield(c, SUBMIT_FIRST, r, self, 4013 + i);
		fast += g >= 0 && g < 30;
	}
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	pin(1);
	check(fast > 0, "on the engine's own CPU: within 30 us (%ld of 8 times)", fast);
	cont_and_reap(c, 4001, 20);
	/* Idle long enough for the engine to arm this ring and sleep. */
	nanosleep(&(struct timespec){ 0, 100000000L }, NULL);
	if (kill(daemon_pid, SIGSTOP) < 0)
		die("SIGSTOP", -errno);
	for (i = 0, fast = 0; i < 8; i++) {
		g = gap_after_long_yield(c, NO_SUBMIT, r, self, 0);
		fast += g >= 0 && g < 30;
	}
	if (kill(daemon_pid, SIGCONT) < 0)
		die("SIGCONT", -errno);
	check(fast > 0, "with the ring armed (the engine idle): within 30 us (%ld of 8 times)",
	      fast);
}

/* The pacer child (learned_stage()): one byte in, one reply out, until EOF. */
static void pacer_loop(int in, int out)
{
	struct timespec t;
	char b;

	while (read(in, &b, 1) == 1) {
		if (b == 'p') {
			/* A ping: sleep, then wake the helper, saying when. */
			nanosleep(&(struct timespec){ 0, 200000L }, NULL);
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (write(out, &t, sizeof(t)) != sizeof(t))
				break;
			continue;
		}
		if (kill(daemon_pid, SIGSTOP) < 0 || write(out, &b, 1) != 1)
			break;
		nanosleep(&(struct timespec){ 0, LEARN_PACE_NS }, NULL);
		if (kill(daemon_pid, SIGCONT) < 0)
			break;
	}
	kill(daemon_pid, SIGCONT);
	_exit(0);
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* Median of LEARN_PINGS wake-ups of this process by the pacer's pipe, in ns (-1: broken). */
static long pipe_wake_ns(int to, int from)
{
	long lat[LEARN_PINGS];
	struct timespec t;
	unsigned i;
	char b = 'p';

	for (i = 0; i < LEARN_PINGS; i++) {
		if (write(to, &b, 1) != 1 || read(from, &t, sizeof(t)) != sizeof(t))
			return -1;
		lat[i] = since_ns(&t);
	}
	qsort(lat, LEARN_PINGS, sizeof(lat[0]), cmp_long);
	return lat[LEARN_PINGS / 2];
}

/*
 * Crowded, waits of ~0.6 ms, each ended by another process (a child that
 * stops the daemon, and continues it LEARN_PACE_NS later), by a new client
 * (which learns what a wake-up costs here and now): rp_relax() learns what
 * a sleep on the doorbell costs (the daemon says when it rang: rp-ring.h
 * rung_ns), far less than such a wait, so it sleeps through most of them;
 * before, it slept only through waits of a millisecond or more. That
 * holds only where a wake-up costs far less than the wait (under 100 us):
 * the helper first measures how long this process takes to run after the
 * child writes to a pipe (the median of LEARN_PINGS, before and after the
 * waits), and says "learn-busy" when either is over LEARN_WAKE_MAX_NS (a
 * machine too busy for the check: the script skips it). The script reads
 * the doorbell count at "learn-ready" and at "learned".
 */
static void learned_stage(void)
{
	int to_pacer[2], from_pacer[2], st, n;
	struct rp_client *c;
	struct rp_region *r;
	struct rp_remote *self;
	long before, after;
	unsigned i, slow = 0;
	struct timespec t0;
	pid_t pacer;
	char b = 's';

	if ((st = rp_connect(NULL, &c)) < 0 || (st = rp_region_alloc(c, 1 << 16, 0, &r)) < 0 ||
	    (st = rp_remote_open(c, NULL, "relax-self", &self)) < 0)
		die("second client", st);
	if (pipe(to_pacer) < 0 || pipe(from_pacer) < 0)
		die("pipe", -errno);
	fflush(stdout);
	pacer = fork();
	if (pacer < 0)
		die("fork", -errno);
	if (pacer == 0) {
		close(to_pacer[1]);
		close(from_pacer[0]);
		pacer_loop(to_pacer[0], from_pacer[1]);
	}
	close(to_pacer[0]);
	close(from_pacer[1]);
	stage("learn-ready");
	before = pipe_wake_ns(to_pacer[1], from_pacer[0]);
	for (i = 0, st = before < 0 ? -EPIPE : 0; i < N_LEARN && st == 0; i++) {
		if (write(to_pacer[1], &b, 1) != 1 || read(from_pacer[0], &b, 1) != 1) {
			st = -EPIPE;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		submit(c, r, self, 4000 + i);
		st = reap_one(c, 4000 + i, true);
		slow += since_ns(&t0) > 2000000L;
	}
	after = st == 0 ? pipe_wake_ns(to_pacer[1], from_pacer[0]) : -1;
	close(to_pacer[1]);
	close(from_pacer[0]);
	n = waitpid(pacer, NULL, 0) == pacer;
	check(st == 0 && n && after >= 0,
	      "%u writes waited for ~%ld us each with rp_relax() between polls: %s", N_LEARN,
	      LEARN_PACE_NS / 1000, rp_strerror(st));
	printf("learn-slow %u\n", slow);
	if (before > LEARN_WAKE_MAX_NS || after > LEARN_WAKE_MAX_NS)
		printf("learn-busy a wake-up took %ld us before the waits, %ld us after\n",
		       before / 1000, after / 1000);
	rp_disconnect(c);
	stage("learned");
}

/*
 * The daemon stopped (by this program) while it last said the CPUs are free,
 * on a new client whose one wait so far was short (no usual wait yet): one
 * write, then rp_poll()/rp_relax() pairs for GONE_NS. Spinning on would keep
 * this CPU while the engine makes no pass (descheduled, say); once it has
 * made none for a millisecond (RELAX_GONE_NS), rp_relax() sleeps on the
 * doorbell, so this thread's CPU time stays well under the time it waits.
 * Before that it must not give the CPU away.
 */
#define GONE_NS 20000000L
static void gone_write(void)
{
	struct rp_client *c;
	struct rp_region *r;
	struct rp_remote *self;
	struct rp_completion comp;
	struct timespec t0, c0, c1;
	long first = 0, ns, cpu;
	unsigned gave = 0;
	int n = 0, st;

	if ((st = rp_connect(NULL, &c)) < 0 || (st = rp_region_alloc(c, 4096, 0, &r)) < 0 ||
	    (st = rp_remote_open(c, NULL, "relax-self", &self)) < 0)
		die("a second client", st);
	/* One quick write first: the engine tells this client how it is doing. */
	submit(c, r, self, 3999);
	if ((st = reap_one(c, 3999, false)) < 0)
		die("a quick write", st);
	if (kill(daemon_pid, SIGSTOP) < 0)
		die("SIGSTOP", -errno);
	submit(c, r, self, 4000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	while ((ns = since_ns(&t0)) < GONE_NS && (n = rp_poll(c, &comp, 1)) == 0) {
		/* Read the clock after the call: @ns is from before this poll. */
		if (rp_relax(c) == 1 && !gave++)
			first = since_ns(&t0);
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	if (kill(daemon_pid, SIGCONT) < 0)
		die("SIGCONT", -errno);
	cpu = (c1.tv_sec - c0.tv_sec) * 1000000000L + (c1.tv_nsec - c0.tv_nsec);
	check(n == 0, "a poll while the daemon is stopped found %d", n);
	check(gave > 0 && first >= 1000000L,
	      "rp_relax() gave the CPU away once the engine had made no pass for 1 ms: %u times, "
	      "first after %.2f ms",
	      gave, (double)first / 1e6);
	check(cpu < ns / 2, "and slept: %.1f ms of CPU in %.1f ms", (double)cpu / 1e6,
	      (double)ns / 1e6);
	st = reap_one(c, 4000, false);
	check(st == 0, "the write completed once the daemon ran: %s", rp_strerror(st));
	rp_disconnect(c);
}

/*
 * The CPUs free (the script makes the daemon read one runnable task): quick
 * completions still arm no doorbell per completion, a wait on an engine that
 * makes no pass sleeps after a millisecond, and a client whose waits last
 * milliseconds sleeps, but only once a wait has lasted 32 calls.
 */
static void free_stages(struct rp_client *c, struct rp_region *r, struct rp_remote *self)
{
	stage("ready");
	fast_writes(c, r, self);
	stage("fast");
	gone_write();
	stage("gone");
	paced_writes(c, r, self);
	stage("paced");
	slept_write(c, r, self, 32);
}

int main(int argc, char **argv)
{
	struct rp_client *c;
	struct rp_region *r;
	struct rp_remote *self;
	unsigned i, yielded = 0;
	bool free_cpus;
	int st, n;
	const char *dp = getenv("RP_TEST_DAEMON_PID");

	daemon_pid = dp ? (pid_t)atoi(dp) : 0;
	if (daemon_pid <= 0)
		die("RP_TEST_DAEMON_PID", -EINVAL);

	/*
	 * Crowded: on the daemon's CPU (a yield hands it the CPU at once, a
	 * sleep shows). Free: on the other one, as a spinner with a CPU to
	 * spare would be.
	 */
	free_cpus = argc > 1 && !strcmp(argv[1], "free");
	pin(free_cpus ? 1 : 0);
	if ((st = rp_connect(NULL, &c)) < 0 || (st = rp_region_alloc(c, 1 << 16, 0, &r)) < 0 ||
	    (st = rp_region_export(r, "relax-self", RP_ACCESS_REMOTE_WRITE)) < 0 ||
	    (st = rp_remote_open(c, NULL, "relax-self", &self)) < 0)
		die("set-up", st);
	if (free_cpus) {
		free_stages(c, r, self);
		rp_disconnect(c);
		return failures ? 1 : 0;
	}
	recv_only(c, r);

	/*
	 * First, with no wait measured yet: completions reaped 3 ms apart but
	 * long after they came (as a ping-pong reaps its own writes in
	 * batches), each followed by an rp_relax() of a spin on something
	 * else, are no wait, so the pairs below (the daemon stopped) only
	 * yield; the script checks that no doorbell was armed. Plain polls
	 * here: a wait for a slow daemon on a loaded machine must not count.
	 */
	for (i = 0, st = 0; i < N_PACED && st == 0; i++) {
		submit(c, r, self, 500 + i);
		nanosleep(&(struct timespec){ 0, PACE_NS }, NULL);
		st = reap_one(c, 500 + i, false);
		rp_relax(c); /* and a spin on something else, as the ping-pong's */
	}
	/* Half a millisecond at most: after one, rp_relax() would sleep (engine_gone()). */
	n = stopped_wait(c, r, self, 600, 64, 500000L);
	rp_relax(c); /* not after a poll: ends that wait, which must not count for the next stage */
	check(st == 0 && n == 0, "%u writes reaped %ld ms apart, then 64 polls of a stopped daemon",
	      N_PACED, PACE_NS / 1000000);
	st = reap_one(c, 600, false);
	check(st == 0, "and that write completed: %s", rp_strerror(st));
	stage("batched");
	fast_writes(c, r, self);
	stage("fast");
	paced_writes(c, r, self);
	stage("paced");

	/* The daemon is stopped: this write stays in flight. */
	submit(c, r, self, 2000);
	for (i = 0; i < 64; i++) {
		busy_us(3);
		yielded += rp_relax(c) == 1;
	}
	/*
	 * Calls 3 us apart, as a slow `pause` makes them under emulation: the
	 * engine (stopped) has been still for more than 1 us at every other
	 * call, so about half of them yield; counting calls (32 before a
	 * yield) would keep this CPU for ~100 us at a time.
	 */
	check(yielded >= 16,
	      "rp_relax() in a spin yields once the engine has been still 1 us: %u of 64 calls 3 "
	      "us apart",
	      yielded);
	stage("flag");
	st = reap_one(c, 2000, false);
	check(st == 0, "the write submitted while the daemon was stopped completed: %s",
	      rp_strerror(st));
	stage("reaped");

	slept_write(c, r, self, 1);
	stage("counted");
	learned_stage();
	resume_stage(c, r, self);
	rp_disconnect(c);
	return failures ? 1 : 0;
}
