/* SPDX-License-Identifier: MIT */
/*
 * switch-cost: what handing the CPU from one party to another costs on this
 * machine, next to a bare system call. Run by hand (on the host, or in the
 * test guest: tests/bench/README.md); no timing is asserted anywhere:
 *
 *   tests/bench/switch-cost [-n ITERS] [--cpu N] [--json]
 *
 * Cases, each ITERS samples of which the first tenth is discarded:
 *   syscall      getppid(), a bare system call (per call)
 *   yield        sched_yield() with nothing else to run on the CPU (per call)
 *   procs-1cpu   two processes pinned to CPU N pass a token back and forth
 *                through shared memory, each yielding until it is its turn:
 *                one way (half a round trip) is one hand-off, a yield that
 *                switches to the other process; the switch alone is about
 *                this less `yield`
 *   threads-1cpu the same between two threads of one process
 *   procs-2cpu   two processes, one on CPU N and one on the lowest other CPU
 *                allowed, spinning with `pause` (no switch): the shared-memory
 *                floor, as shm-pingpong's one way (needs two CPUs)
 *
 * Why: when more processes are runnable than there are CPUs, a message that
 * passes from a client through the daemon to another client makes at least
 * one of them wait for a switch. Under emulation (the test guest: TCG, no
 * PCID) a switch between processes costs far more than one between threads:
 * the emulator's software TLB starts empty in the new address space. That is
 * the floor of the guest's send latency with two clients and the daemon.
 *
 * Exit status: 0, 1 on an error, 2 on a bad argument.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-util.h"

#define WAIT_US 5e6 /* a partner that has not answered by then is gone */

struct shared {
	_Atomic unsigned token; /* odd: the first party's turn is over; even: the second's */
	_Atomic bool failed;
};

static struct shared *sh;
static unsigned long iters = 20000;

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

/*
 * Wait until the token is @want: yield between looks, or (@yield false) pause
 * and yield only every 256 looks, as shm-pingpong does (a pure spin on a busy
 * machine can wait a whole quantum for a partner that is not running).
 * false: the other party is gone.
 */
static bool wait_token(unsigned want, bool yield)
{
	unsigned long spins = 0, looks = 0;
	double start = 0;

	while (atomic_load_explicit(&sh->token, memory_order_acquire) != want) {
		if (yield)
			sched_yield();
		else
			bench_spin(&spins, 256);
		if (++looks % 1024)
			continue;
		if (atomic_load_explicit(&sh->failed, memory_order_relaxed))
			return false;
		if (!start)
			start = bench_now_us();
		else if (bench_now_us() - start > WAIT_US)
			return false;
	}
	return true;
}

/* The second party: answer every odd token with the next even one. */
static bool answer(unsigned long n, bool yield)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		if (!wait_token((unsigned)(2 * i + 1), yield))
			return false;
		atomic_store_explicit(&sh->token, (unsigned)(2 * i + 2), memory_order_release);
	}
	return true;
}

/* The first party: @n round trips, one-way times (us) in @v. */
static bool ask(unsigned long n, bool yield, double *v)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		double t0 = bench_now_us();

		atomic_store_explicit(&sh->token, (unsigned)(2 * i + 1), memory_order_release);
		if (!wait_token((unsigned)(2 * i + 2), yield))
			return false;
		v[i] = (bench_now_us() - t0) / 2;
	}
	return true;
}

struct second {
	int cpu;
	bool yield, ok;
};

/* The second party, a thread or a child process. */
static void *second_party(void *arg)
{
	struct second *s = arg;
	int r = pin(s->cpu);

	if (r < 0)
		fprintf(stderr, "switch-cost: pinning the second party to CPU %d: %s\n", s->cpu,
			strerror(-r));
	s->ok = r == 0 && answer(iters, s->yield);
	if (!s->ok)
		atomic_store(&sh->failed, true);
	return NULL;
}

/* A hand-off case: 0, or -1 with a message printed. */
static int handoff(const char *name, bool procs, int cpu_a, int cpu_b, bool yield, double *v,
		   bool json, bool *first)
{
	struct second s = { .cpu = cpu_b, .yield = yield };
	struct bench_stats st;
	pthread_t th;
	pid_t pid = 0;
	bool ok;
	int r, status;

	atomic_store(&sh->token, 0);
	atomic_store(&sh->failed, false);
	if (procs) {
		pid = fork();
		if (pid < 0) {
			fprintf(stderr, "switch-cost: fork: %s\n", strerror(errno));
			return -1;
		}
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the first party */
			if (getppid() == 1)
				_exit(1);
			second_party(&s);
			_exit(s.ok ? 0 : 1);
		}
	} else if ((r = pthread_create(&th, NULL, second_party, &s)) != 0) {
		fprintf(stderr, "switch-cost: pthread_create: %s\n", strerror(r));
		return -1;
	}
	r = pin(cpu_a);
	ok = r == 0 && ask(iters, yield, v);
	if (!ok)
		atomic_store(&sh->failed, true);
	if (procs) {
		ok = waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		     WEXITSTATUS(status) == 0 && ok;
	} else {
		pthread_join(th, NULL);
		ok = ok && s.ok;
	}
	if (r < 0) {
		fprintf(stderr, "switch-cost: %s: pinning to CPU %d: %s\n", name, cpu_a,
			strerror(-r));
		return -1;
	}
	if (!ok) {
		fprintf(stderr, "switch-cost: %s: the other party did not answer\n", name);
		return -1;
	}
	bench_stats(v + iters / 10, iters - iters / 10, &st);
	if (json)
		printf("%s", *first ? "" : ",");
	*first = false;
	bench_print_stats(name, &st, json);
	return 0;
}

/* A system call case over @iters calls, in batches of 16 (the clock costs as much). */
static void calls(const char *name, bool yield, double *v, bool json, bool *first)
{
	struct bench_stats st;
	unsigned long i;
	int k;

	for (i = 0; i < iters; i++) {
		double t0 = bench_now_us();

		for (k = 0; k < 16; k++) {
			if (yield)
				sched_yield();
			else
				syscall(SYS_getppid);
		}
		v[i] = (bench_now_us() - t0) / 16;
	}
	bench_stats(v + iters / 10, iters - iters / 10, &st);
	if (json)
		printf("%s", *first ? "" : ",");
	*first = false;
	bench_print_stats(name, &st, json);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: switch-cost [-n ITERS] [--cpu N] [--json]\n"
		   "  -n, --iters N  round trips per case (20000; the first tenth is discarded)\n"
		   "  --cpu N        the CPU of the one-CPU cases (default: the last one allowed)\n"
		   "  --json         one JSON object instead of the table\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "iters", required_argument, NULL, 'n' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long cpu_arg = 0;
	bool json = false, first = true, have_cpu = false;
	int c, i, r, other_cpu = -1, cpu = -1, rc = 0;
	cpu_set_t set;
	double *v;

	while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!bench_parse_ulong(optarg, 10, 10000000, &iters)) {
				fprintf(stderr, "switch-cost: -n wants 10 to 10000000, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'c':
			if (!bench_parse_ulong(optarg, 0, CPU_SETSIZE - 1, &cpu_arg)) {
				fprintf(stderr, "switch-cost: --cpu wants a CPU number, not '%s'\n",
					optarg);
				return 2;
			}
			have_cpu = true;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "switch-cost: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (sched_getaffinity(0, sizeof(set), &set) < 0) {
		fprintf(stderr, "switch-cost: sched_getaffinity: %s\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			cpu = i;
	if (have_cpu && !CPU_ISSET((int)cpu_arg, &set)) {
		fprintf(stderr, "switch-cost: CPU %lu is not one this process may run on\n",
			cpu_arg);
		return 2;
	}
	if (have_cpu)
		cpu = (int)cpu_arg;
	for (i = 0, other_cpu = -1; i < CPU_SETSIZE && other_cpu < 0; i++)
		if (CPU_ISSET(i, &set) && i != cpu)
			other_cpu = i; /* the other CPU of the two-CPU case */
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	/* Shared and touched now: no copy-on-write fault after fork() lands in a sample. */
	v = mmap(NULL, iters * sizeof(*v), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		 0);
	if (sh == MAP_FAILED || v == MAP_FAILED) {
		fprintf(stderr, "switch-cost: out of memory\n");
		return 1;
	}
	memset(v, 0, iters * sizeof(*v));
	/* The system calls run on that CPU too: no migration in the middle. */
	r = pin(cpu);
	if (r < 0) {
		fprintf(stderr, "switch-cost: pinning to CPU %d: %s\n", cpu, strerror(-r));
		return 1;
	}
	if (json)
		printf("{\"tool\":\"switch-cost\",\"iters\":%lu,\"cpu\":%d,\"other_cpu\":%d,"
		       "\"results_us\":{",
		       iters, cpu, other_cpu);
	else
		printf("switch-cost: %lu samples per case; one-CPU cases on CPU %d", iters, cpu);
	if (!json && other_cpu >= 0)
		printf(", procs-2cpu on CPUs %d and %d", other_cpu, cpu);
	if (!json)
		printf("\n");
	calls("syscall", false, v, json, &first);
	calls("yield", true, v, json, &first);
	if (handoff("procs-1cpu", true, cpu, cpu, true, v, json, &first) < 0 ||
	    handoff("threads-1cpu", false, cpu, cpu, true, v, json, &first) < 0)
		rc = 1;
	if (!rc && other_cpu >= 0 &&
	    handoff("procs-2cpu", true, other_cpu, cpu, false, v, json, &first) < 0)
		rc = 1;
	else if (!rc && other_cpu < 0)
		printf(json ? ",\"procs-2cpu\":null" : "procs-2cpu   skipped: one CPU allowed\n");
	if (json)
		printf("}}\n");
	return rc;
}
