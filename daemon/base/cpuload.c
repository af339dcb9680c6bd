/* SPDX-License-Identifier: MIT */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "base/cpuload.h"

#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cpuload_parse_running(const char *line)
{
	const char *p = line;
	char *end;
	unsigned long v;
	int field;

	for (field = 0; field < 3; field++) { /* skip the three load averages */
		p += strspn(p, " ");
		if (!*p || *p == ' ')
			return -1;
		p += strcspn(p, " ");
	}
	p += strspn(p, " ");
	if (*p < '0' || *p > '9')
		return -1;
	v = strtoul(p, &end, 10);
	if (*end != '/' || v > 1000000)
		return -1;
	return (int)v;
}

void cpuload_init(struct cpuload *cl, const char *path)
{
	cpu_set_t set;
	int n = 0;

	memset(cl, 0, sizeof(*cl));
	cl->crowded = true;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	if (n <= 0)
		n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	cl->cpus = n > 0 ? (unsigned)n : 1;
	cl->fd = open(path, O_RDONLY | O_CLOEXEC);
}

void cpuload_close(struct cpuload *cl)
{
	if (cl->fd >= 0)
		close(cl->fd);
	cl->fd = -1;
	cl->crowded = true;
}

bool cpuload_crowded(struct cpuload *cl, uint64_t now_ns)
{
	char buf[128];
	ssize_t n;
	int running;

	if (cl->fd < 0 || now_ns < cl->next_ns)
		return cl->crowded;
	cl->next_ns = now_ns + CPULOAD_PERIOD_NS;
	n = pread(cl->fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return cl->crowded = true;
	buf[n] = '\0';
	running = cpuload_parse_running(buf);
	if (running < 0)
		return cl->crowded = true;
	cl->running = (unsigned)running;
	/* The count includes the caller itself, which is running now. */
	cl->crowded = cl->running > cl->cpus;
	return cl->crowded;
}
