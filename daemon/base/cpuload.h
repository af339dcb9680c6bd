/* SPDX-License-Identifier: MIT */
/*
 * Are the CPUs crowded? Spinning while waiting pays only if the party waited
 * for has a CPU of its own; once more tasks are runnable than this process may
 * use CPUs, a spinner that does not yield takes the CPU someone else needs
 * (RXE-FACTS: three spinners on two vCPUs). The kernel's count of runnable
 * tasks (the fourth field of /proc/loadavg, "running/total") is read at most
 * once per CPULOAD_PERIOD_NS, so asking costs no system call per operation.
 */
#ifndef RP_DAEMON_CPULOAD_H
#define RP_DAEMON_CPULOAD_H

#include <stdbool.h>
#include <stdint.h>

#define CPULOAD_PERIOD_NS 1000000u

struct cpuload {
	int fd;		  /* /proc/loadavg, or -1: then always crowded */
	unsigned cpus;	  /* CPUs this process may run on */
	unsigned running; /* runnable tasks at the last sample */
	uint64_t next_ns; /* when to sample again */
	bool crowded;
};

/* Opens @path ("/proc/loadavg" in the daemon). Never fails: without it, crowded. */
void cpuload_init(struct cpuload *cl, const char *path);
void cpuload_close(struct cpuload *cl);
/* Whether more tasks are runnable than there are CPUs; samples if @now_ns is due. */
bool cpuload_crowded(struct cpuload *cl, uint64_t now_ns);
/* The runnable count of a /proc/loadavg line ("0.12 0.30 0.41 3/517 9924"), or -1. */
int cpuload_parse_running(const char *line);

#endif
