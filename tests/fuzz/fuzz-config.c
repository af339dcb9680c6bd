/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the configuration parser. Besides "no crash, no
 * leak", it checks the error contract: a failure leaves *ret alone and
 * explains itself in one "FILE:..." line; a success yields a config whose
 * invariants hold.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/base/config.h"

#define FUZZ_NAME "fuzz.conf"
#define FUZZ_MAX_INPUT 65536

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_failure(int r, const struct config *cfg, const char *err)
{
	if (r >= 0 || r < -4095 || cfg)
		abort();
	if (strncmp(err, FUZZ_NAME ":", strlen(FUZZ_NAME ":")) != 0 || strchr(err, '\n'))
		abort();
}

static void check_success(const struct config *cfg)
{
	size_t i;

	if (!cfg->node_name || !cfg->socket_path || !cfg->listen_host || cfg->socket_mode > 0777)
		abort();
	if (cfg->cq_depth < 16 || !cfg->sq_depth || !cfg->rq_depth ||
	    cfg->max_registered_bytes < 4096)
		abort();
	for (i = 0; i < cfg->n_peers; i++) {
		const struct peer_conf *peer = &cfg->peers[i];

		if (!peer->host || !peer->port || config_peer(cfg, peer->name) != peer ||
		    peer->key_len < RP_PEER_KEY_MIN || peer->key_len > RP_PEER_KEY_MAX)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *cfg = NULL;
	char err[256];
	uint64_t v;
	char *text;
	int r;

	/* Real configs are small; bigger inputs only slow the search down. */
	if (size > FUZZ_MAX_INPUT)
		return 0;
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	r = config_load_string(FUZZ_NAME, text, &cfg, err, sizeof(err));
	if (r == 0)
		check_success(cfg);
	else
		check_failure(r, cfg, err);
	config_free(cfg);

	r = config_parse_size(text, &v);
	if (r != 0 && r != -EINVAL && r != -ERANGE)
		abort();
	free(text);
	return 0;
}
