/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for daemon/base/config.c: every error path with its exact message
 * and line, the defaults, the size parser, key files on disk and the access
 * checks. Key files live in a private mkdtemp() directory removed at exit.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "../../daemon/base/config.h"
#include "tap.h"

#define KEY32 "0123456789abcdef0123456789ABCDEF"

static char tmpdir[] = "/tmp/rp-test-config.XXXXXX";
static char conf_name[256];    /* the FILE in messages: tmpdir/test.conf */
static struct config sentinel; /* *ret must still point here after a failure */

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	return s;
}

static char *tmp_path(const char *name)
{
	return xasprintf("%s/%s", tmpdir, name);
}

static void write_file(const char *name, const void *data, size_t len, mode_t mode)
{
	char *path = tmp_path(name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len || fchmod(fd, mode) < 0)
		abort();
	close(fd);
	free(path);
}

static void make_fixtures(void)
{
	char big[300], *dir;

	if (!mkdtemp(tmpdir))
		abort();
	snprintf(conf_name, sizeof(conf_name), "%s/test.conf", tmpdir);
	write_file("good.key", KEY32 "\n", 33, 0600);
	write_file("min.key", "0123456789abcdef", 16, 0600);
	write_file("short.key", "abc\n", 4, 0600);
	memset(big, 'k', sizeof(big));
	write_file("max.key", big, 256, 0600);
	write_file("long.key", big, 257, 0600);
	write_file("ww.key", KEY32, 32, 0606);
	write_file("gw.key", KEY32, 32, 0620);
	write_file("wr.key", KEY32, 32, 0644);
	write_file("gr.key", KEY32, 32, 0640);
	write_file("ox.key", KEY32, 32, 0601);
	write_file("ro.key", KEY32, 32, 0400);
	write_file("unreadable.key", KEY32, 32, 0000);
	write_file("nul.conf", "[daemon]\n\nlog_level = d\0ebug\n", 29, 0644);
	dir = tmp_path("dir.key");
	if (mkdir(dir, 0700) < 0)
		abort();
	free(dir);
}

static void remove_fixtures(void)
{
	static const char *const files[] = { "good.key", "min.key", "short.key", "max.key",
					     "long.key", "ww.key",  "gw.key",	 "unreadable.key",
					     "nul.conf", "wr.key",  "gr.key",	 "ox.key",
					     "ro.key" };
	char *path;
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		path = tmp_path(files[i]);
		unlink(path);
		free(path);
	}
	path = tmp_path("dir.key");
	rmdir(path);
	free(path);
	rmdir(tmpdir);
}

/* Load @text and expect failure @want_ret with message "FILE:@want". */
static void check_error(const char *text, int want_ret, const char *want, const char *desc)
{
	struct config *cfg = &sentinel;
	char err[512], *full = xasprintf("%s:%s", conf_name, want);
	int r;

	r = config_load_string(conf_name, text, &cfg, err, sizeof(err));
	if (!tap_ok(r == want_ret && cfg == &sentinel && !strcmp(err, full), "error: %s", desc))
		printf("#   ret %d (want %d)\n#   got  '%s'\n#   want '%s'\n", r, want_ret, err,
		       full);
	if (cfg != &sentinel)
		config_free(cfg);
	free(full);
}

static void check_einval(const char *text, const char *want, const char *desc)
{
	check_error(text, -EINVAL, want, desc);
}

static struct config *load_ok(const char *text, const char *desc)
{
	struct config *cfg = NULL;
	char err[512] = "";
	int r;

	r = config_load_string(conf_name, text, &cfg, err, sizeof(err));
	if (!tap_ok(r == 0 && cfg, "loads: %s", desc))
		printf("#   ret %d: %s\n", r, err);
	return r == 0 ? cfg : NULL;
}

static void test_sizes(void)
{
	static const struct {
		const char *s;
		int ret;
		uint64_t want;
	} cases[] = {
		{ "0", 0, 0 },
		{ "1", 0, 1 },
		{ "4096", 0, 4096 },
		{ "64K", 0, 65536 },
		{ "64k", 0, 65536 },
		{ "64KiB", 0, 65536 },
		{ "16M", 0, 16 << 20 },
		{ "4G", 0, UINT64_C(4) << 30 },
		{ "1T", 0, UINT64_C(1) << 40 },
		{ "16777215T", 0, UINT64_C(16777215) << 40 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "17179869184G", -ERANGE, 0 },
		{ "16777216T", -ERANGE, 0 },
		{ "", -EINVAL, 0 },
		{ "K", -EINVAL, 0 },
		{ "12Q", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "1 ", -EINVAL, 0 },
		{ "4KB", -EINVAL, 0 },
		{ "4Ki", -EINVAL, 0 },
		{ "1.5G", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
		{ "99999999999999999999Q", -EINVAL, 0 },
	};
	uint64_t v;
	size_t i;
	int r;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = 12345;
		r = config_parse_size(cases[i].s, &v);
		if (!tap_ok(r == cases[i].ret && v == (r == 0 ? cases[i].want : 12345), "size '%s'",
			    cases[i].s))
			printf("#   ret %d value %" PRIu64 "\n", r, v);
	}
	tap_is_int(config_parse_size(NULL, &v), -EINVAL, "size NULL string");
}

static void test_defaults(void)
{
	struct config *cfg = load_ok("", "empty config");
	char host[256] = "";

	if (!cfg)
		return;
	gethostname(host, sizeof(host) - 1);
	tap_is_str(cfg->path, conf_name, "default: path");
	tap_is_str(cfg->node_name, host, "default: node_name is the host name");
	tap_is_str(cfg->socket_path, RP_DEFAULT_SOCKET, "default: socket");
	tap_is_int(cfg->socket_path_set, false, "default: socket_path_set");
	tap_is_int(cfg->socket_mode, 0666, "default: socket_mode");
	tap_is_int(cfg->socket_group, (gid_t)-1, "default: socket_group");
	tap_is_int(cfg->transport, RP_TRANSPORT_AUTO, "default: transport");
	tap_is_str(cfg->listen_host, "0.0.0.0", "default: listen host");
	tap_is_int(cfg->listen_port, 7471, "default: listen port");
	tap_is_int(cfg->log_level, LOG_INFO, "default: log_level");
	tap_is_int(cfg->n_allowed_uids + cfg->n_allowed_gids, 0, "default: no allow lists");
	tap_is_int(cfg->admin_gid, (gid_t)-1, "default: admin_group");
	tap_is_int(cfg->nice, -10, "default: nice");
	tap_ok(cfg->device == NULL, "default: device");
	tap_is_int(cfg->port_num, 0, "default: port");
	tap_is_int(cfg->gid_index, -1, "default: gid_index");
	tap_is_int(cfg->cq_depth, 8192, "default: cq_depth");
	tap_is_int(cfg->sq_depth, 512, "default: send_queue_depth");
	tap_is_int(cfg->rq_depth, 512, "default: recv_queue_depth");
	tap_ok(cfg->ack_timeout == 16 && cfg->retry_count == 7,
	       "default: ack_timeout, retry_count");
	tap_is_int(cfg->local_qps, 4, "default: local_queue_pairs");
	tap_is_int(cfg->inline_size, 512, "default: inline_size");
	tap_is_int(cfg->max_registered_bytes, UINT64_C(4) << 30, "default: max_registered_bytes");
	tap_is_int(cfg->max_regions, 1024, "default: max_regions");
	tap_is_int(cfg->max_inflight, 4096, "default: max_inflight");
	tap_is_int(cfg->max_connections, 64, "default: max_connections");
	tap_is_int(cfg->n_peers, 0, "default: no peers");
	config_free(cfg);
}

static void test_every_key(void)
{
	struct config *cfg;
	const struct peer_conf *a, *b;

	cfg = load_ok("; comment\n"
		      "# another comment\n"
		      "[daemon]\n"
		      "node_name = node-1.example\n"
		      "socket = /tmp/rp.sock\n"
		      "socket_mode = 0660\n"
		      "socket_group = root\n"
		      "transport = tcp ; trailing comment\n"
		      "listen = [::1]:9000\n"
		      "log_level = debug\n"
		      "allowed_users = root, 1234 5678\n"
		      "allowed_groups = 4242,root\n"
		      "admin_group = 77\n"
		      "nice = -20\n"
		      "[verbs]\n"
		      "device = rxe0\n"
		      "port = 2\n"
		      "gid_index = 3\n"
		      "cq_depth = 16\n"
		      "send_queue_depth = 32768\n"
		      "recv_queue_depth = 1\n"
		      "ack_timeout = 31\n"
		      "retry_count = 0\n"
		      "local_queue_pairs = 64\n"
		      "inline_size = 4096\n"
		      "[limits]\n"
		      "max_registered_bytes = 64KiB\n"
		      "max_regions = 4294967295\n"
		      "max_inflight = 1048576\n"
		      "max_connections = 1\n"
		      "[peer \"a\"]\n"
		      "address = 10.0.0.2\n"
		      "key_file = good.key\n"
		      "[peer \"b_2\"]\n"
		      "address = host.example:1\n"
		      "transport = verbs\n"
		      "key_file = min.key\n",
		      "every key");
	if (!cfg)
		return;
	tap_is_str(cfg->node_name, "node-1.example", "node_name");
	tap_ok(cfg->socket_path_set && !strcmp(cfg->socket_path, "/tmp/rp.sock"), "socket");
	tap_is_int(cfg->socket_mode, 0660, "socket_mode");
	tap_is_int(cfg->socket_group, 0, "socket_group by name");
	tap_is_int(cfg->transport, RP_TRANSPORT_TCP, "transport with inline comment");
	tap_ok(!strcmp(cfg->listen_host, "::1") && cfg->listen_port == 9000, "listen [v6]:port");
	tap_is_int(cfg->log_level, LOG_DEBUG, "log_level");
	tap_ok(cfg->n_allowed_uids == 3 && cfg->allowed_uids[0] == 0 &&
		       cfg->allowed_uids[1] == 1234 && cfg->allowed_uids[2] == 5678,
	       "allowed_users mixed separators");
	tap_ok(cfg->n_allowed_gids == 2 && cfg->allowed_gids[0] == 4242 &&
		       cfg->allowed_gids[1] == 0,
	       "allowed_groups");
	tap_is_int(cfg->admin_gid, 77, "admin_group numeric");
	tap_is_int(cfg->nice, -20, "nice");
	tap_is_str(cfg->device, "rxe0", "device");
	tap_ok(cfg->port_num == 2 && cfg->gid_index == 3, "port and gid_index");
	tap_ok(cfg->cq_depth == 16 && cfg->sq_depth == 32768 && cfg->rq_depth == 1,
	       "queue depths at their bounds");
	tap_ok(cfg->ack_timeout == 31 && cfg->retry_count == 0,
	       "ack_timeout and retry_count at their bounds");
	tap_is_int(cfg->local_qps, 64, "local_queue_pairs at its bound");
	tap_is_int(cfg->inline_size, 4096, "inline_size at its upper bound");
	tap_is_int(cfg->max_registered_bytes, 65536, "max_registered_bytes");
	tap_ok(cfg->max_regions == UINT32_MAX && cfg->max_inflight == 1048576 &&
		       cfg->max_connections == 1,
	       "limits at their bounds");
	a = config_peer(cfg, "a");
	b = config_peer(cfg, "b_2");
	tap_ok(cfg->n_peers == 2 && a && b && !config_peer(cfg, "c"), "config_peer");
	if (!a || !b)
		return;
	tap_ok(!strcmp(a->host, "10.0.0.2") && a->port == RP_DEFAULT_PEER_PORT &&
		       a->transport == RP_TRANSPORT_AUTO && a->line == 31,
	       "peer a: default port and transport, header line");
	tap_ok(a->key_len == 32 && !memcmp(a->key, KEY32, 32), "peer a: key, newline trimmed");
	tap_ok(!strncmp(a->key_file, tmpdir, strlen(tmpdir)) && strstr(a->key_file, "/good.key"),
	       "peer a: key_file relative to the config directory");
	tap_ok(!strcmp(b->host, "host.example") && b->port == 1 &&
		       b->transport == RP_TRANSPORT_VERBS && b->key_len == 16,
	       "peer b_2");
	config_free(cfg);
}

static void test_syntax(void)
{
	struct config *cfg;

	check_einval("[bogus]\n", "1: unknown section [bogus]", "unknown section");
	check_einval("\n[Daemon]\n", "2: unknown section [Daemon]", "sections are lowercase");
	check_einval("[daemon]\nfoo = 1\n", "2: unknown key 'foo' in section [daemon]",
		     "unknown key");
	check_einval("[daemon]\nlog_level = info\n\nlog_level = debug\n",
		     "4: duplicate key 'log_level' in section [daemon] (first set at line 2)",
		     "duplicate key");
	check_einval("[verbs]\n[limits]\n[verbs]\n",
		     "3: duplicate section [verbs] (first at line 1)", "duplicate section");
	check_einval("log_level = info\n", "1: key 'log_level' outside of any section",
		     "key before any section");
	check_einval("[daemon]\nlog_level\n", "2: syntax error: expected KEY = VALUE",
		     "line without =");
	check_einval("[daemon]\n[limits\n", "2: missing ']' in section header", "missing ]");
	check_einval("[daemon]\ngarbage\nfoo = 1\n", "2: syntax error: expected KEY = VALUE",
		     "syntax error before a key error wins");
	check_einval("[daemon]\nfoo = 1\ngarbage\n", "2: unknown key 'foo' in section [daemon]",
		     "key error before a syntax error wins");
	check_einval("[daemon] extra\n", "1: unexpected text after section header",
		     "text after section header");
	check_einval("[daemon]\nlog_level =\n", "2: empty value for log_level", "empty value");
	check_einval("[daemon]\nnice = -21\n",
		     "2: invalid value '-21' for nice: use keep or an integer from -20 to 19",
		     "nice below -20");
	check_einval("[daemon]\nnice = 20\n",
		     "2: invalid value '20' for nice: use keep or an integer from -20 to 19",
		     "nice above 19");
	check_einval("[daemon]\nnice = +5\n",
		     "2: invalid value '+5' for nice: use keep or an integer from -20 to 19",
		     "nice with a plus sign");
	check_einval("[daemon]\nnice = --5\n",
		     "2: invalid value '--5' for nice: use keep or an integer from -20 to 19",
		     "nice with two signs");
	check_einval("[daemon]\r\nfoo = 1\r\n", "2: unknown key 'foo' in section [daemon]",
		     "CRLF line numbers");
	{
		char line[300];

		memset(line, 'x', sizeof(line));
		memcpy(line, "[daemon]\n#", 10);
		line[sizeof(line) - 1] = '\0';
		check_einval(line, "2: line too long (more than 198 characters)", "long line");
	}
	cfg = load_ok("\xef\xbb\xbf[daemon]\n"
		      "  log_level = debug\n"
		      "\tnode_name = n1  ; indented, not a continuation\n"
		      "[limits]  ; comment after a header\n"
		      "max_regions=7\n",
		      "BOM, indented keys, comments");
	if (cfg) {
		tap_ok(cfg->log_level == LOG_DEBUG && !strcmp(cfg->node_name, "n1") &&
			       cfg->max_regions == 7,
		       "indented keys are plain keys");
		config_free(cfg);
	}
}

/* sun_path holds 108 bytes including the NUL: 108 characters do not fit. */
static void check_socket_too_long(void)
{
	char path[109], *text, *want;

	memset(path, 'x', sizeof(path) - 1);
	path[0] = '/';
	path[108] = '\0';
	text = xasprintf("[daemon]\nsocket = %s\n", path);
	want = xasprintf("2: invalid socket path '%s': use an absolute path shorter than 108 bytes",
			 path);
	check_einval(text, want, "socket path of 108 bytes");
	free(text);
	free(want);
	path[107] = '\0';
	text = xasprintf("[daemon]\nsocket = %s\n", path);
	config_free(load_ok(text, "socket path of 107 bytes"));
	free(text);
}

static void test_nice(void)
{
	struct config *cfg;

	cfg = load_ok("[daemon]\nnice = keep\n", "nice = keep");
	tap_ok(cfg && cfg->nice == CONFIG_NICE_KEEP, "nice = keep leaves the priority alone");
	config_free(cfg);
	cfg = load_ok("[daemon]\nnice = 19\n", "nice = 19");
	tap_ok(cfg && cfg->nice == 19, "nice = 19");
	config_free(cfg);
	cfg = load_ok("[daemon]\nnice = -0\n", "nice = -0");
	tap_ok(cfg && cfg->nice == 0, "nice = -0 is 0");
	config_free(cfg);
}

static void test_daemon_values(void)
{
	check_einval("[daemon]\nnode_name = a b\n",
		     "2: invalid node_name 'a b': use 1 to 63 characters from A-Z, a-z, 0-9, '.', "
		     "'_' and '-'",
		     "node_name with a blank");
	check_einval("[daemon]\nnode_name = "
		     "0123456789012345678901234567890123456789012345678901234567890123\n",
		     "2: invalid node_name "
		     "'0123456789012345678901234567890123456789012345678901234567890123': use 1 to "
		     "63 characters from A-Z, a-z, 0-9, '.', '_' and '-'",
		     "node_name of 64 characters");
	check_einval("[daemon]\nsocket = run/x.sock\n",
		     "2: invalid socket path 'run/x.sock': use an absolute path shorter than 108 "
		     "bytes",
		     "relative socket");
	check_socket_too_long();
	check_einval("[daemon]\nsocket_mode = 0888\n",
		     "2: invalid socket_mode '0888': use an octal mode from 0000 to 0777",
		     "socket_mode not octal");
	check_einval("[daemon]\nsocket_mode = 1777\n",
		     "2: invalid socket_mode '1777': use an octal mode from 0000 to 0777",
		     "socket_mode above 0777");
	check_einval("[daemon]\nsocket_mode = +660\n",
		     "2: invalid socket_mode '+660': use an octal mode from 0000 to 0777",
		     "socket_mode with a sign");
	check_einval("[daemon]\nsocket_group = rp-no-such-group\n",
		     "2: unknown group 'rp-no-such-group' in socket_group", "unknown socket_group");
	check_einval("[daemon]\nsocket_group = 4294967295\n",
		     "2: invalid group id '4294967295' in socket_group", "socket_group of -1");
	check_einval("[daemon]\ntransport = rdma\n",
		     "2: invalid transport 'rdma': use auto, verbs or tcp", "bad transport");
	check_einval("[daemon]\nlisten = 1.2.3.4:0\n",
		     "2: invalid address '1.2.3.4:0' for listen: use HOST:PORT or [IPV6]:PORT with "
		     "a port from 1 to 65535",
		     "listen port 0");
	check_einval("[daemon]\nlisten = h:65536\n",
		     "2: invalid address 'h:65536' for listen: use HOST:PORT or [IPV6]:PORT with "
		     "a port from 1 to 65535",
		     "listen port too big");
	check_einval("[daemon]\nlisten = ::1:7471\n",
		     "2: invalid address '::1:7471' for listen: use HOST:PORT or [IPV6]:PORT with "
		     "a port from 1 to 65535",
		     "listen IPv6 without brackets");
	check_einval("[daemon]\nlisten = [zz::1]:1\n",
		     "2: invalid address '[zz::1]:1' for listen: use HOST:PORT or [IPV6]:PORT with "
		     "a port from 1 to 65535",
		     "listen bad IPv6");
	check_einval("[daemon]\nlisten = :7471\n",
		     "2: invalid address ':7471' for listen: use HOST:PORT or [IPV6]:PORT with a "
		     "port from 1 to 65535",
		     "listen without host");
	check_einval("[daemon]\nlog_level = warn\n",
		     "2: invalid log_level 'warn': use err, warning, notice, info or debug",
		     "bad log_level");
	check_einval("[daemon]\nallowed_users = root rp-no-such-user\n",
		     "2: unknown user 'rp-no-such-user' in allowed_users", "unknown user");
	check_einval("[daemon]\nallowed_users = ,\n", "2: allowed_users names no user",
		     "allowed_users only separators");
	check_einval("[daemon]\nallowed_groups = rp-no-such-group\n",
		     "2: unknown group 'rp-no-such-group' in allowed_groups", "unknown group");
	check_einval("[daemon]\nadmin_group = rp-no-such-group\n",
		     "2: unknown group 'rp-no-such-group' in admin_group", "unknown admin_group");
}

static void test_listen_forms(void)
{
	struct config *cfg;

	cfg = load_ok("[daemon]\nlisten = none\n", "listen = none");
	if (cfg)
		tap_ok(cfg->listen_port == 0 && cfg->listen_host, "listen none: port 0");
	config_free(cfg);
	cfg = load_ok("[daemon]\nlisten = [fe80::1%eth0]\n", "listen IPv6 with zone, no port");
	if (cfg)
		tap_ok(!strcmp(cfg->listen_host, "fe80::1%eth0") && cfg->listen_port == 7471,
		       "listen IPv6 zone host and default port");
	config_free(cfg);
}

static void test_verbs_limits_values(void)
{
	struct config *cfg = load_ok("[verbs]\ninline_size = 0\n", "inline_size = 0");

	if (cfg)
		tap_is_int(cfg->inline_size, 0, "inline_size 0: nothing inline");
	config_free(cfg);
	check_einval("[verbs]\ndevice = mlx5/0\n", "2: invalid device name 'mlx5/0'", "bad device");
	check_einval("[verbs]\nport = 0\n",
		     "2: invalid value '0' for port: use an integer from 1 to 255", "port 0");
	check_einval("[verbs]\nport = 256\n",
		     "2: invalid value '256' for port: use an integer from 1 to 255", "port 256");
	check_einval("[verbs]\ngid_index = -1\n",
		     "2: invalid value '-1' for gid_index: use auto or an integer from 0 to 255",
		     "gid_index -1");
	check_einval("[verbs]\ngid_index = 256\n",
		     "2: invalid value '256' for gid_index: use auto or an integer from 0 to 255",
		     "gid_index 256");
	check_einval("[verbs]\ncq_depth = 15\n",
		     "2: invalid value '15' for cq_depth: use an integer from 16 to 1048576",
		     "cq_depth below range");
	check_einval("[verbs]\ncq_depth = 1e3\n",
		     "2: invalid value '1e3' for cq_depth: use an integer from 16 to 1048576",
		     "cq_depth trailing garbage");
	check_einval(
		"[verbs]\nsend_queue_depth = 32769\n",
		"2: invalid value '32769' for send_queue_depth: use an integer from 1 to 32768",
		"send_queue_depth above range");
	check_einval("[verbs]\nrecv_queue_depth = 0\n",
		     "2: invalid value '0' for recv_queue_depth: use an integer from 1 to 32768",
		     "recv_queue_depth 0");
	check_einval("[verbs]\nack_timeout = 0\n",
		     "2: invalid value '0' for ack_timeout: use an integer from 1 to 31",
		     "ack_timeout 0 (would wait forever)");
	check_einval("[verbs]\nretry_count = 8\n",
		     "2: invalid value '8' for retry_count: use an integer from 0 to 7",
		     "retry_count above range");
	check_einval("[verbs]\nlocal_queue_pairs = 0\n",
		     "2: invalid value '0' for local_queue_pairs: use an integer from 1 to 64",
		     "local_queue_pairs below range");
	check_einval("[verbs]\nlocal_queue_pairs = 65\n",
		     "2: invalid value '65' for local_queue_pairs: use an integer from 1 to 64",
		     "local_queue_pairs above range");
	check_einval("[verbs]\ninline_size = 4097\n",
		     "2: invalid value '4097' for inline_size: use an integer from 0 to 4096",
		     "inline_size above range");
	check_einval("[verbs]\ninline_size = -1\n",
		     "2: invalid value '-1' for inline_size: use an integer from 0 to 4096",
		     "inline_size negative");
	check_einval("[limits]\nmax_registered_bytes = 12Q\n",
		     "2: invalid size '12Q' for max_registered_bytes: use a number with an "
		     "optional K, M, G or T suffix",
		     "size with a bad suffix");
	check_einval("[limits]\nmax_registered_bytes = 1K\n",
		     "2: invalid size '1K' for max_registered_bytes: use at least 4096",
		     "size too small");
	check_einval("[limits]\nmax_registered_bytes = 17179869184G\n",
		     "2: invalid size '17179869184G' for max_registered_bytes: too large",
		     "size overflow");
	check_einval("[limits]\nmax_regions = 0\n",
		     "2: invalid value '0' for max_regions: use an integer from 1 to 4294967295",
		     "max_regions 0");
	check_einval("[limits]\nmax_inflight = 1048577\n",
		     "2: invalid value '1048577' for max_inflight: use an integer from 1 to "
		     "1048576",
		     "max_inflight above range");
	check_einval("[limits]\nmax_connections = 4294967296\n",
		     "2: invalid value '4294967296' for max_connections: use an integer from 1 to "
		     "4294967295",
		     "max_connections overflow");
	check_einval("[limits]\nmax_connections = -1\n",
		     "2: invalid value '-1' for max_connections: use an integer from 1 to "
		     "4294967295",
		     "max_connections negative");
}

/* [peers]: the admission of unauthenticated peer connections. */
static void test_peer_admission(void)
{
	struct config *cfg = load_ok("", "[peers] defaults");

	if (cfg) {
		tap_ok(cfg->max_unauthenticated == 64 &&
			       cfg->max_unauthenticated_per_address == 8 &&
			       cfg->max_failed_handshakes == 10 && cfg->refusal_seconds == 60,
		       "default: [peers] 64, 8, 10, 60");
		config_free(cfg);
	}
	cfg = load_ok("[peers]\n"
		      "max_unauthenticated = 1048576\n"
		      "max_unauthenticated_per_address = 1\n"
		      "max_failed_handshakes = 0\n"
		      "refusal_seconds = 86400\n",
		      "[peers] every key at a bound");
	if (cfg) {
		tap_ok(cfg->max_unauthenticated == 1048576 &&
			       cfg->max_unauthenticated_per_address == 1 &&
			       cfg->max_failed_handshakes == 0 && cfg->refusal_seconds == 86400,
		       "[peers] values");
		config_free(cfg);
	}
	check_einval("[peers]\nmax_unauthenticated = 0\n",
		     "2: invalid value '0' for max_unauthenticated: use an integer from 1 to "
		     "1048576",
		     "max_unauthenticated 0");
	check_einval("[peers]\nmax_unauthenticated_per_address = 1048577\n",
		     "2: invalid value '1048577' for max_unauthenticated_per_address: use an "
		     "integer from 1 to 1048576",
		     "max_unauthenticated_per_address above range");
	check_einval("[peers]\nmax_failed_handshakes = -1\n",
		     "2: invalid value '-1' for max_failed_handshakes: use an integer from 0 to "
		     "1048576",
		     "max_failed_handshakes negative");
	check_einval("[peers]\nrefusal_seconds = 0\n",
		     "2: invalid value '0' for refusal_seconds: use an integer from 1 to 86400",
		     "refusal_seconds 0");
	check_einval("[peers]\nrefusal_seconds = 86401\n",
		     "2: invalid value '86401' for refusal_seconds: use an integer from 1 to 86400",
		     "refusal_seconds above range");
	check_einval(
		"\n[peers]\nmax_unauthenticated = 4\n",
		"2: max_unauthenticated_per_address (8) is larger than max_unauthenticated (4)",
		"per-address cap above the total");
	check_einval("[peers]\nbogus = 1\n", "2: unknown key 'bogus' in section [peers]",
		     "unknown key in [peers]");
	check_einval("[peers]\n[peers]\n", "2: duplicate section [peers] (first at line 1)",
		     "[peers] twice");
	check_einval("[peers]\nkey_file = x\n", "2: unknown key 'key_file' in section [peers]",
		     "[peers] is not a [peer] section");
}

static void test_peers(void)
{
	char name63[64], *text;

	check_einval("[peer \"a b\"]\n",
		     "1: invalid peer name 'a b': use 1 to 63 characters from A-Z, a-z, 0-9, '.', "
		     "'_' and '-'",
		     "peer name with a blank");
	check_einval("[peer \"\"]\n",
		     "1: invalid peer name '': use 1 to 63 characters from A-Z, a-z, 0-9, '.', "
		     "'_' and '-'",
		     "empty peer name");
	check_einval("[peer a]\n", "1: invalid peer section: use [peer \"NAME\"]",
		     "unquoted peer name");
	check_einval("[peer]\n", "1: invalid peer section: use [peer \"NAME\"]",
		     "peer without name");
	check_einval("[peer \"a\"]\naddress = h\nkey_file = good.key\n[peer \"a\"]\n",
		     "4: duplicate peer 'a' (first defined at line 1)", "duplicate peer");
	check_einval("[peer \"a\"]\nkey_file = good.key\n", "1: peer 'a' has no address",
		     "peer without address");
	check_einval("\n[peer \"a\"]\naddress = h\n", "2: peer 'a' has no key_file",
		     "peer without key_file");
	check_einval("[peer \"me\"]\naddress = h\nkey_file = good.key\n[daemon]\nnode_name = me\n",
		     "1: peer 'me' has the name of this node (node_name)", "peer named like node");
	check_einval("[peer \"a\"]\nport = 1\n", "2: unknown key 'port' in section [peer \"a\"]",
		     "unknown peer key");
	check_einval("[peer \"a\"]\naddress = [::1\n",
		     "2: invalid address '[::1' for address: use HOST:PORT or [IPV6]:PORT with a "
		     "port from 1 to 65535",
		     "peer address without ]");
	check_einval("[peer \"a\"]\ntransport = ib\n",
		     "2: invalid transport 'ib': use auto, verbs or tcp", "peer transport");

	memset(name63, 'p', 63);
	name63[63] = '\0';
	text = xasprintf("[peer \"%s\"]\naddress = h\nkey_file = good.key\n", name63);
	{
		struct config *cfg = load_ok(text, "peer name of 63 characters");

		tap_ok(cfg && config_peer(cfg, name63), "63-character peer name kept whole");
		config_free(cfg);
	}
	free(text);
}

/* [peer] exports, export_users, export_groups: who of a peer may open which exports. */
static void test_peer_exports(void)
{
	const struct peer_conf *a, *b, *c;
	struct config *cfg;

	cfg = load_ok("[peer \"a\"]\naddress = h\nkey_file = good.key\n"
		      "[peer \"b\"]\naddress = h\nkey_file = good.key\nexports = all\n"
		      "[peer \"c\"]\naddress = h\nkey_file = good.key\nexports = named\n"
		      "export_users = root, 4000\nexport_groups = 4100 4101\n",
		      "peer exports keys");
	a = cfg ? config_peer(cfg, "a") : NULL;
	b = cfg ? config_peer(cfg, "b") : NULL;
	c = cfg ? config_peer(cfg, "c") : NULL;
	tap_ok(a && a->exports == PEER_EXPORTS_NAMED && !a->n_export_uids && !a->n_export_gids,
	       "default: exports = named, no owners");
	tap_ok(b && b->exports == PEER_EXPORTS_ALL, "exports = all");
	tap_ok(c && c->exports == PEER_EXPORTS_NAMED && c->n_export_uids == 2 &&
		       c->export_uids[0] == 0 && c->export_uids[1] == 4000 &&
		       c->n_export_gids == 2 && c->export_gids[0] == 4100 &&
		       c->export_gids[1] == 4101,
	       "export_users by name and id, export_groups");
	config_free(cfg);
	check_einval("[peer \"a\"]\nexports = some\n",
		     "2: invalid exports 'some': use named or all", "peer exports value");
	check_einval("[peer \"a\"]\naddress = h\nkey_file = good.key\nexports = all\n"
		     "export_users = 4000\n",
		     "5: peer 'a': export_users and export_groups say nothing more when exports = "
		     "all (line 4)",
		     "exports = all with export_users");
	check_einval("[peer \"a\"]\naddress = h\nkey_file = good.key\nexport_groups = 4100\n"
		     "exports = all\n",
		     "4: peer 'a': export_users and export_groups say nothing more when exports = "
		     "all (line 5)",
		     "export_groups with exports = all after it");
	check_einval("[peer \"a\"]\nexport_users = no-such-user-rp\n",
		     "2: unknown user 'no-such-user-rp' in export_users", "unknown export user");
	check_einval("[peer \"a\"]\nexport_groups = ,\n", "2: export_groups names no group",
		     "export_groups of separators only");
}

static void test_names(void)
{
	const struct name_conf *db, *dbo, *sys;
	struct config *cfg;

	cfg = load_ok("[names \"db.\"]\nusers = root, 4000\ngroups = 4100 4101\n"
		      "[names \"db.open.\"]\nusers = 4001\n[names \"sys\"]\n"
		      "[daemon]\nlog_level = debug\n",
		      "names sections");
	db = cfg ? config_name_rule(cfg, "db.x") : NULL;
	dbo = cfg ? config_name_rule(cfg, "db.open.x") : NULL;
	sys = cfg ? config_name_rule(cfg, "sys") : NULL;
	tap_ok(cfg && cfg->n_names == 3 && db && !strcmp(db->prefix, "db.") && db->line == 1 &&
		       db->n_uids == 2 && db->uids[0] == 0 && db->uids[1] == 4000 &&
		       db->n_gids == 2 && db->gids[0] == 4100 && db->gids[1] == 4101,
	       "[names \"db.\"]: users by name and id, groups");
	tap_ok(dbo && !strcmp(dbo->prefix, "db.open.") && dbo->n_uids == 1 && !dbo->n_gids,
	       "the longest prefix decides");
	tap_ok(sys && !sys->n_uids && !sys->n_gids, "a section with neither key: only root");
	tap_ok(cfg && !config_name_rule(cfg, "db") && !config_name_rule(cfg, "x.db.y") &&
		       !config_name_rule(NULL, "db.x"),
	       "names a prefix does not start are under no rule");
	config_free(cfg);
	cfg = load_ok("[names \"a.b.\"]\nusers = 1\n[names \"a.\"]\nusers = 2\n",
		      "a longer prefix before a shorter one");
	tap_ok(cfg && config_name_rule(cfg, "a.b.x") == &cfg->names[0] &&
		       config_name_rule(cfg, "a.c") == &cfg->names[1],
	       "the longest prefix decides, wherever it is in the file");
	config_free(cfg);
	check_einval("[names]\n", "1: invalid names section: use [names \"PREFIX\"]",
		     "names without a prefix");
	check_einval("[names \"a b\"]\n",
		     "1: invalid names prefix 'a b': use 1 to 63 characters from A-Z, a-z, 0-9, "
		     "'.', '_' and '-'",
		     "names prefix with a blank");
	check_einval("[names \"db.\"]\n[names \"db.\"]\n",
		     "2: duplicate names prefix 'db.' (first at line 1)", "duplicate prefix");
	check_einval("[names \"db.\"]\nowner = 4000\n",
		     "2: unknown key 'owner' in section [names \"db.\"]", "unknown key");
	check_einval("[names \"db.\"]\nusers = 1\nusers = 2\n",
		     "3: duplicate key 'users' in section [names \"db.\"] (first set at line 2)",
		     "duplicate key");
	check_einval("[names \"db.\"]\ngroups = no-such-group-rp\n",
		     "2: unknown group 'no-such-group-rp' in groups", "unknown group");
}

static void check_key_file(const char *file, int want_ret, const char *why, const char *desc)
{
	char *text, *want, *path = tmp_path(file);

	text = xasprintf("[peer \"b\"]\naddress = h\n\nkey_file = %s\n", file);
	want = xasprintf("4: peer 'b': key file %s: %s", path, why);
	check_error(text, want_ret, want, desc);
	free(text);
	free(want);
	free(path);
}

static void test_key_files(void)
{
	struct config *cfg;
	char *text;

	check_key_file("missing.key", -ENOENT, "No such file or directory", "missing key file");
	check_key_file("short.key", -EINVAL, "key too short: use 16 to 256 bytes", "short key");
	check_key_file("long.key", -EINVAL, "key too long: use 16 to 256 bytes", "long key");
	check_key_file("ww.key", -EINVAL,
		       "mode 0606 lets group or others access the key (run chmod 600 on it)",
		       "world-writable key");
	check_key_file("gw.key", -EINVAL,
		       "mode 0620 lets group or others access the key (run chmod 600 on it)",
		       "group-writable key");
	check_key_file("wr.key", -EINVAL,
		       "mode 0644 lets group or others access the key (run chmod 600 on it)",
		       "world-readable key");
	check_key_file("gr.key", -EINVAL,
		       "mode 0640 lets group or others access the key (run chmod 600 on it)",
		       "group-readable key");
	check_key_file("ox.key", -EINVAL,
		       "mode 0601 lets group or others access the key (run chmod 600 on it)",
		       "a key with any bit for others");
	check_key_file("dir.key", -EINVAL, "not a regular file", "directory as key");
	if (geteuid() != 0)
		check_key_file("unreadable.key", -EACCES, "Permission denied", "unreadable key");
	else
		tap_ok(1, "unreadable key # SKIP root reads any file");

	text = xasprintf("[peer \"b\"]\naddress = h\nkey_file = ro.key\n");
	cfg = load_ok(text, "a key of mode 0400 is accepted");
	config_free(cfg);
	free(text);

	text = xasprintf("[peer \"b\"]\naddress = h\nkey_file = %s/max.key\n", tmpdir);
	cfg = load_ok(text, "absolute key_file, 256-byte key");
	tap_ok(cfg && cfg->peers[0].key_len == 256 && cfg->peers[0].key[255] == 'k',
	       "256-byte key without newline");
	config_free(cfg);
	free(text);
}

static void test_load_file(void)
{
	struct config *cfg = &sentinel;
	char err[512], *path, *want;
	const char *srcdir = getenv("top_srcdir");
	int r;

	path = tmp_path("absent.conf");
	want = xasprintf("%s: No such file or directory", path);
	r = config_load(path, &cfg, err, sizeof(err));
	tap_ok(r == -ENOENT && cfg == &sentinel && !strcmp(err, want), "missing file: %s", err);
	free(want);
	free(path);

	want = xasprintf("%s: Is a directory", tmpdir);
	r = config_load(tmpdir, &cfg, err, sizeof(err));
	tap_ok(r == -EISDIR && !strcmp(err, want), "directory as config: %s", err);
	free(want);

	path = tmp_path("nul.conf");
	want = xasprintf("%s:3: NUL byte in line", path);
	r = config_load(path, &cfg, err, sizeof(err));
	tap_ok(r == -EINVAL && !strcmp(err, want), "NUL byte: %s", err);
	free(want);
	free(path);

	path = xasprintf("%s/conf/rdmaproxy.conf", srcdir ? srcdir : ".");
	cfg = NULL;
	r = config_load(path, &cfg, err, sizeof(err));
	if (!tap_ok(r == 0 && cfg, "shipped %s loads", path))
		printf("#   %s\n", err);
	tap_ok(cfg && cfg->n_peers == 0 && cfg->max_registered_bytes == UINT64_C(4) << 30 &&
		       cfg->cq_depth == 8192 && !cfg->socket_path_set,
	       "shipped config keeps the defaults");
	config_free(cfg);
	free(path);
}

static void test_small_err_buffer(void)
{
	struct config *cfg = &sentinel;
	char err[8];
	int r;

	memset(err, 'z', sizeof(err));
	r = config_load_string("x.conf", "[nope]\n", &cfg, err, 6);
	tap_ok(r == -EINVAL && !strcmp(err, "x.con") && err[6] == 'z',
	       "message truncated to errlen");
	tap_is_int(config_load_string("x.conf", "[nope]\n", &cfg, NULL, 0), -EINVAL,
		   "NULL err buffer");
	tap_ok(config_free(NULL) == NULL, "config_free(NULL)");
	tap_is_str(config_transport_name(RP_TRANSPORT_VERBS), "verbs", "transport name");
}

static bool find_member(uid_t *ret_uid, gid_t *ret_gid, gid_t *ret_sup)
{
	struct passwd *pw;
	struct group *gr;
	bool found = false;

	setgrent();
	while (!found && (gr = getgrent())) {
		if (!gr->gr_mem[0] || !(pw = getpwnam(gr->gr_mem[0])) || pw->pw_gid == gr->gr_gid)
			continue;
		*ret_uid = pw->pw_uid;
		*ret_gid = pw->pw_gid;
		*ret_sup = gr->gr_gid;
		found = true;
	}
	endgrent();
	return found;
}

static void test_access(void)
{
	struct config *cfg, *open_cfg;
	uid_t uid;
	gid_t gid, sup;
	char *text;

	open_cfg = load_ok("", "no allow lists");
	tap_ok(open_cfg && config_user_allowed(open_cfg, 4321, 4321), "no lists: everyone");
	tap_ok(open_cfg && !config_user_is_admin(open_cfg, 4321, 4321) &&
		       config_user_is_admin(open_cfg, 0, 0),
	       "no admin_group: only root is admin");
	config_free(open_cfg);

	cfg = load_ok("[daemon]\nallowed_users = 4000\nallowed_groups = 4100\nadmin_group = 4200\n",
		      "allow lists");
	if (!cfg)
		return;
	tap_ok(config_user_allowed(cfg, 4000, 9999), "listed uid allowed");
	tap_ok(config_user_allowed(cfg, 4001, 4100), "listed primary gid allowed");
	tap_ok(!config_user_allowed(cfg, 4001, 4101), "unlisted user refused");
	tap_ok(config_user_allowed(cfg, 0, 0), "root always allowed");
	tap_ok(config_user_is_admin(cfg, 4001, 4200), "admin by primary gid");
	tap_ok(!config_user_is_admin(cfg, 4000, 4100), "allowed user is not admin");
	config_free(cfg);

	if (!find_member(&uid, &gid, &sup)) {
		tap_ok(1, "supplementary group # SKIP no user with a supplementary group");
		tap_ok(1, "supplementary admin group # SKIP no user with a supplementary group");
		return;
	}
	text = xasprintf("[daemon]\nallowed_groups = %u\nadmin_group = %u\n", sup, sup);
	cfg = load_ok(text, "supplementary group lists");
	tap_ok(cfg && config_user_allowed(cfg, uid, gid), "allowed by supplementary group");
	tap_ok(cfg && config_user_is_admin(cfg, uid, gid), "admin by supplementary group");
	config_free(cfg);
	free(text);
}

int main(void)
{
	make_fixtures();
	test_sizes();
	test_defaults();
	test_every_key();
	test_syntax();
	test_daemon_values();
	test_nice();
	test_listen_forms();
	test_peer_admission();
	test_verbs_limits_values();
	test_peers();
	test_peer_exports();
	test_names();
	test_key_files();
	test_load_file();
	test_small_err_buffer();
	test_access();
	remove_fixtures();
	tap_plan_done();
	return tap_exit();
}
