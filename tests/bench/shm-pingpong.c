/* SPDX-License-Identifier: MIT */
/*
 * shm-pingpong: the floor for a hop between two processes on one host. Two
 * processes (fork) share one anonymous mapping; the parent stores a sequence
 * number in one cache line, the child spins until it sees it and stores it
 * into another, the parent spins until it sees that. No system call on the
 * path: this is what a daemon hop through shared memory costs at best.
 *
 *   shm-pingpong [-n ITERS] [-w WARMUP] [-y YIELD_EVERY] [--json]
 *
 * Reports the round trip (one sample per iteration, timed with
 * CLOCK_MONOTONIC around it, like rdmaproxy-perf's samples) and one way
 * (half of it). Waiting is a pause loop that yields the CPU every
 * YIELD_EVERY pauses (default 256; 0 = never): on an idle machine the partner
 * answers long before that, on a busy one a pure spin can wait a whole
 * scheduler quantum for a partner that is not running.
 */
#include "bench-util.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct shared {
	_Alignas(64) uint64_t ping;
	_Alignas(64) uint64_t pong;
};

static void wait_for(uint64_t *word, uint64_t v, unsigned long yield_every)
{
	unsigned long spins = 0;

	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) != v)
		bench_spin(&spins, yield_every);
}

static void child(struct shared *sh, uint64_t total, unsigned long yield_every)
{
	uint64_t i;

	for (i = 1; i <= total; i++) {
		wait_for(&sh->ping, i, yield_every);
		__atomic_store_n(&sh->pong, i, __ATOMIC_RELEASE);
	}
	_exit(0);
}

static int usage(void)
{
	fputs("usage: shm-pingpong [-n ITERS] [-w WARMUP] [-y YIELD_EVERY] [--json]\n", stderr);
	return 2;
}

int main(int argc, char **argv)
{
	unsigned long iters = 100000, warmup = 10000, yield_every = 256;
	struct bench_stats rtt, oneway;
	struct shared *sh;
	bool json = false;
	double *s, t0;
	uint64_t i;
	pid_t pid;
	int st, a;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--json"))
			json = true;
		else if (a + 1 == argc)
			return usage();
		else if (!strcmp(argv[a], "-n") &&
			 bench_parse_ulong(argv[a + 1], 1, 100000000, &iters))
			a++;
		else if (!strcmp(argv[a], "-w") &&
			 bench_parse_ulong(argv[a + 1], 0, 100000000, &warmup))
			a++;
		else if (!strcmp(argv[a], "-y") &&
			 bench_parse_ulong(argv[a + 1], 0, 1ul << 30, &yield_every))
			a++;
		else
			return usage();
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	s = malloc(iters * sizeof(*s));
	if (sh == MAP_FAILED || !s) {
		perror("shm-pingpong");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0)
		child(sh, iters + warmup, yield_every);
	for (i = 1; i <= iters + warmup; i++) {
		t0 = bench_now_us();
		__atomic_store_n(&sh->ping, i, __ATOMIC_RELEASE);
		wait_for(&sh->pong, i, yield_every);
		if (i > warmup)
			s[i - warmup - 1] = bench_now_us() - t0;
	}
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fputs("shm-pingpong: the child failed\n", stderr);
		return 1;
	}
	bench_stats(s, iters, &rtt);
	for (i = 0; i < iters; i++)
		s[i] /= 2;
	bench_stats(s, iters, &oneway);
	if (json) {
		printf("{\"tool\":\"shm-pingpong\",\"iterations\":%lu,\"warmup\":%lu,"
		       "\"yield_every\":%lu,",
		       iters, warmup, yield_every);
		bench_print_stats("rtt_us", &rtt, true);
		putchar(',');
		bench_print_stats("one_way_us", &oneway, true);
		puts("}");
	} else {
		printf("# shm-pingpong: %lu round trips between two processes over shared "
		       "memory\n",
		       iters);
		bench_print_stats("round trip", &rtt, false);
		bench_print_stats("one way", &oneway, false);
	}
	free(s);
	return 0;
}
