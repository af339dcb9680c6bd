/* SPDX-License-Identifier: MIT */
/* daemon/base/cpuload.c: the runnable count of /proc/loadavg and when the CPUs are crowded. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../daemon/base/cpuload.h"
#include "tap.h"

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

static void test_parse(void)
{
	tap_is_int(cpuload_parse_running("0.12 0.30 0.41 3/517 9924\n"), 3, "parse: 3 running");
	tap_is_int(cpuload_parse_running("0.00 0.00 0.00 1/1 1"), 1, "parse: 1 running");
	tap_is_int(cpuload_parse_running("12.50  8.01 3.99 17/2048 77\n"), 17,
		   "parse: double spaces, 17 running");
	tap_is_int(cpuload_parse_running(""), -1, "parse: empty");
	tap_is_int(cpuload_parse_running("0.1 0.2"), -1, "parse: two fields");
	tap_is_int(cpuload_parse_running("0.1 0.2 0.3"), -1, "parse: three fields");
	tap_is_int(cpuload_parse_running("0.1 0.2 0.3 x/5 1"), -1, "parse: not a number");
	tap_is_int(cpuload_parse_running("0.1 0.2 0.3 5 1"), -1, "parse: no total");
	tap_is_int(cpuload_parse_running("0.1 0.2 0.3 -5/9 1"), -1, "parse: negative");
	tap_is_int(cpuload_parse_running("0.1 0.2 0.3 99999999999999999999/9 1"), -1,
		   "parse: out of range");
}

static void test_sampling(void)
{
	char path[] = "/tmp/rp-cpuload.XXXXXX";
	struct cpuload cl;
	int fd = mkstemp(path);

	if (fd < 0) {
		perror("mkstemp");
		exit(1);
	}
	close(fd);
	put(path, "0.00 0.00 0.00 2/100 5\n");
	cpuload_init(&cl, path);
	tap_ok(cl.cpus >= 1, "init: %u CPUs this process may use", cl.cpus);
	cl.cpus = 2;
	tap_ok(!cpuload_crowded(&cl, 1000), "2 runnable on 2 CPUs: not crowded");
	put(path, "0.00 0.00 0.00 3/100 5\n");
	tap_ok(!cpuload_crowded(&cl, 1000 + CPULOAD_PERIOD_NS - 1),
	       "within the period: the last sample holds (no read)");
	tap_ok(cpuload_crowded(&cl, 1000 + CPULOAD_PERIOD_NS), "3 runnable on 2 CPUs: crowded");
	tap_is_int(cl.running, 3, "the runnable count is kept");
	put(path, "0.00 0.00 0.00 1/100 5\n");
	tap_ok(!cpuload_crowded(&cl, 1000 + 2 * CPULOAD_PERIOD_NS), "back to 1: not crowded");
	put(path, "garbage\n");
	tap_ok(cpuload_crowded(&cl, 1000 + 3 * CPULOAD_PERIOD_NS),
	       "an unreadable line counts as crowded (keep yielding)");
	cpuload_close(&cl);
	tap_ok(cpuload_crowded(&cl, 1000 + 4 * CPULOAD_PERIOD_NS), "closed: crowded");
	unlink(path);
	cpuload_init(&cl, path);
	tap_ok(cl.fd < 0 && cpuload_crowded(&cl, 0), "no such file: always crowded");
	cpuload_close(&cl);
}

static void test_proc(void)
{
	struct cpuload cl;

	cpuload_init(&cl, "/proc/loadavg");
	cpuload_crowded(&cl, CPULOAD_PERIOD_NS);
	tap_ok(cl.fd >= 0 && cl.running >= 1,
	       "/proc/loadavg: %u runnable (this test among them) on %u CPUs", cl.running, cl.cpus);
	cpuload_close(&cl);
}

int main(void)
{
	test_parse();
	test_sampling();
	test_proc();
	tap_plan_done();
	return tap_failed ? 1 : 0;
}
