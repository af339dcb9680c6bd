/* SPDX-License-Identifier: MIT */
/* Admission of unauthenticated peer connections (daemon/peer/peer_gate.c). */
#include <stdio.h>
#include <string.h>

#include "../../daemon/peer/peer_gate.h"
#include "tap.h"

static const struct pgate_limits lim = {
	.max_total = 64,
	.max_per_address = 8,
	.max_failures = 10,
	.refusal_ms = 60000,
};

static void test_host(void)
{
	char h[PGATE_HOST_MAX];

	pgate_host("10.1.2.3:7471", h, sizeof(h));
	tap_is_str(h, "10.1.2.3", "host of HOST:PORT");
	pgate_host("[fe80::1%eth0]:40000", h, sizeof(h));
	tap_is_str(h, "fe80::1%eth0", "host of [V6]:PORT");
	pgate_host("nowhere", h, sizeof(h));
	tap_is_str(h, "nowhere", "no port: the whole string");
}

static void test_caps(struct peer_gate *g)
{
	tap_is_int(pgate_admit(g, &lim, "10.0.0.1", 0, 0, 1000), PGATE_ADMIT, "first admitted");
	tap_is_int(pgate_admit(g, &lim, "10.0.0.1", 63, 7, 1000), PGATE_ADMIT,
		   "just under both caps");
	tap_is_int(pgate_admit(g, &lim, "10.0.0.1", 64, 0, 1000), PGATE_TOTAL,
		   "max_unauthenticated open: refused");
	tap_is_int(pgate_admit(g, &lim, "10.0.0.1", 10, 8, 1000), PGATE_ADDRESS,
		   "max_unauthenticated_per_address from there: refused");
}

static void test_failures(struct peer_gate *g)
{
	uint64_t t = 10000;
	bool refused = false;
	int i;

	tap_is_int(pgate_delay(g, &lim, "10.0.0.2", t), 0, "no failure yet: no delay");
	for (i = 1; i <= PGATE_FREE_FAILURES; i++)
		pgate_failed(g, &lim, "10.0.0.2", t++);
	tap_is_int(pgate_delay(g, &lim, "10.0.0.2", t), PGATE_DELAY_MS,
		   "the failure after the free ones is delayed");
	pgate_failed(g, &lim, "10.0.0.2", t++);
	tap_is_int(pgate_delay(g, &lim, "10.0.0.2", t), 2 * PGATE_DELAY_MS, "then twice as long");
	tap_is_int(pgate_delay(g, &lim, "10.0.0.3", t), 0, "another address is not delayed");
	for (i = PGATE_FREE_FAILURES + 2; i < 10; i++)
		tap_ok(!pgate_failed(g, &lim, "10.0.0.2", t++), "failure %d: not refused yet", i);
	refused = pgate_failed(g, &lim, "10.0.0.2", t);
	tap_ok(refused, "failure 10 starts a refusal");
	tap_is_int(pgate_admit(g, &lim, "10.0.0.2", 0, 0, t + 1), PGATE_FAILURES,
		   "refused, even with nothing open");
	tap_is_int(pgate_refused(g, &lim, t + 1), 1, "one address refused");
	tap_is_int(pgate_admit(g, &lim, "10.0.0.3", 0, 0, t + 1), PGATE_ADMIT,
		   "other addresses are not");
	tap_is_int(pgate_admit(g, &lim, "10.0.0.2", 0, 0, t + 60001), PGATE_ADMIT,
		   "admitted again after refusal_seconds");
	tap_is_int(pgate_refused(g, &lim, t + 60001), 0, "no address refused any more");
	tap_is_int(pgate_delay(g, &lim, "10.0.0.2", t + 60001), 0,
		   "its failures were forgotten with the refusal");

	struct pgate_limits shorter = lim;

	for (i = 0; i < 10; i++)
		pgate_failed(g, &lim, "10.0.0.7", t);
	shorter.refusal_ms = 1000;
	tap_is_int(pgate_admit(g, &lim, "10.0.0.7", 0, 0, t + 1000), PGATE_FAILURES,
		   "refused for refusal_seconds...");
	tap_is_int(pgate_admit(g, &shorter, "10.0.0.7", 0, 0, t + 1000), PGATE_ADMIT,
		   "... as they are now: a reload shortens a refusal under way");

	pgate_failed(g, &lim, "10.0.0.4", 0);
	pgate_failed(g, &lim, "10.0.0.4", 1);
	tap_is_int(pgate_delay(g, &lim, "10.0.0.4", 60002), 0,
		   "failures further apart than refusal_seconds are forgotten");
}

static void test_trust(struct peer_gate *g)
{
	uint64_t t = 200000;
	bool refused = false;
	int i;

	pgate_trust(g, &lim, "10.0.0.5", t);
	for (i = 0; i < 50; i++)
		refused |= pgate_failed(g, &lim, "10.0.0.5", t + (uint64_t)i);
	tap_ok(!refused, "a trusted address is never refused");
	tap_is_int(pgate_delay(g, &lim, "10.0.0.5", t + 50), 0, "... nor delayed");
	tap_is_int(pgate_admit(g, &lim, "10.0.0.5", 0, 8, t + 50), PGATE_ADDRESS,
		   "... but capped like any other");

	struct pgate_limits never = lim;

	never.max_failures = 0;
	for (i = 0; i < 50; i++)
		refused |= pgate_failed(g, &never, "10.0.0.6", t + (uint64_t)i);
	tap_ok(!refused, "max_failed_handshakes = 0: never refused");
}

static void test_table_full(struct peer_gate *g)
{
	char h[PGATE_HOST_MAX];
	uint64_t t = 400000;
	int i;

	for (i = 0; i < 10; i++)
		pgate_failed(g, &lim, "10.9.9.9", t);
	tap_is_int(pgate_admit(g, &lim, "10.9.9.9", 0, 0, t), PGATE_FAILURES, "refused");
	pgate_trust(g, &lim, "10.8.8.8", t);
	for (i = 0; i < 3 * PGATE_SLOTS; i++) {
		snprintf(h, sizeof(h), "192.168.%d.%d", i / 256, i % 256);
		pgate_failed(g, &lim, h, t + 1 + (uint64_t)i);
	}
	tap_is_int(pgate_admit(g, &lim, "10.9.9.9", 0, 0, t + 2000), PGATE_FAILURES,
		   "a flood of new addresses does not push a refusal out first");
	for (i = 0; i < 60; i++)
		pgate_failed(g, &lim, "10.8.8.8", t + 5000);
	tap_is_int(pgate_admit(g, &lim, "10.8.8.8", 0, 0, t + 5000), PGATE_ADMIT,
		   "... nor a trusted address");
}

int main(void)
{
	struct peer_gate *g;

	if (pgate_new(&g) < 0)
		return 1;
	test_host();
	test_caps(g);
	test_failures(g);
	test_trust(g);
	test_table_full(g);
	pgate_free(g);
	tap_plan_done();
	return tap_failed ? 1 : 0;
}
