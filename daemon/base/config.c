/* SPDX-License-Identifier: MIT */
/*
 * Loading and validating the daemon's configuration.
 *
 * inih splits the file into sections and key = value pairs; everything else
 * is ours. inih does not tell its handler the line number and never calls it
 * for a section header, so the input goes through our own line reader: it
 * counts lines, parses section headers itself and stops the parse at the
 * first error. The handler then only ever sees keys of a section we accepted.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <ini.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "base/config.h"

#define NAME_LEN_MAX 63
#define HOST_LEN_MAX 253
#define CONFIG_BYTES_MAX (1024 * 1024)
#define NSS_BUF_MIN 1024
#define NSS_BUF_MAX (1024 * 1024)
#define MSG_MAX 512

/* The id lists are filled through plain unsigned arrays. */
_Static_assert(_Generic((uid_t)0, unsigned int : 1, default : 0), "uid_t is not unsigned int");
_Static_assert(_Generic((gid_t)0, unsigned int : 1, default : 0), "gid_t is not unsigned int");

enum section {
	SECT_NONE,
	SECT_DAEMON,
	SECT_VERBS,
	SECT_LIMITS,
	SECT_PEERS,
	SECT_PEER,
	SECT_NAMES,  /* [names "PREFIX"] */
	SECT_BROKEN, /* a header inih rejects as a syntax error */
};

struct parser;

struct key_def {
	const char *name;
	int (*set)(struct parser *p, const struct key_def *k, const char *value);
	uint32_t min, max; /* for set_u32 */
	size_t offset;	   /* of the uint32_t field in struct config, for set_u32 */
};

#define KEYS_MAX 16

struct parser {
	struct config *cfg;
	const char *name; /* FILE in messages */
	char *dir;	  /* where relative key_file paths start */
	const char *text;
	const char *pos; /* start of the next line */
	unsigned line;
	enum section sect;
	unsigned sect_line[SECT_PEER]; /* header lines of [daemon], [verbs], [limits], [peers] */
	unsigned seen[KEYS_MAX];       /* line where each key of this section was set */
	char *err;
	size_t errlen;
	int error; /* the first error, or 0 */
	unsigned error_line;
};

static void sanitize(char *s)
{
	/* Messages end up in logs: keep them on one printable line. */
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* Record an error unless an earlier one is already recorded; return it. */
__attribute__((format(printf, 4, 5))) static int fail(struct parser *p, unsigned line, int error,
						      const char *fmt, ...)
{
	char msg[MSG_MAX];
	va_list ap;

	if (p->error)
		return p->error;
	p->error = error;
	p->error_line = line;
	if (!p->err || !p->errlen)
		return error;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line)
		snprintf(p->err, p->errlen, "%s:%u: %s", p->name, line, msg);
	else
		snprintf(p->err, p->errlen, "%s: %s", p->name, msg);
	sanitize(p->err);
	return error;
}

static int fail_oom(struct parser *p)
{
	return fail(p, p->line, -ENOMEM, "out of memory");
}

/* Scan decimal digits; note overflow instead of stopping at it. */
static const char *scan_u64(const char *s, uint64_t *ret, bool *overflow)
{
	uint64_t v = 0;

	*overflow = false;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = *s - '0';

		if (v > (UINT64_MAX - d) / 10)
			*overflow = true;
		v = v * 10 + d;
	}
	*ret = v;
	return s;
}

/* Digits only: no sign, no blanks, no base prefix. */
static int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
	const char *end;
	bool overflow;
	uint64_t v;

	end = scan_u64(s, &v, &overflow);
	if (end == s || *end)
		return -EINVAL;
	if (overflow || v < min || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

static unsigned unit_shift(char c)
{
	switch (c) {
	case 'k':
	case 'K':
		return 10;
	case 'm':
	case 'M':
		return 20;
	case 'g':
	case 'G':
		return 30;
	case 't':
	case 'T':
		return 40;
	default:
		return 0;
	}
}

int config_parse_size(const char *s, uint64_t *ret)
{
	unsigned shift = 0;
	const char *end;
	bool overflow;
	uint64_t v;

	if (!s || !ret)
		return -EINVAL;
	end = scan_u64(s, &v, &overflow);
	if (end == s)
		return -EINVAL;
	if (*end) {
		shift = unit_shift(*end++);
		/* "KiB" is accepted; "KB" is not, as it might mean 1000. */
		if (!shift || (*end && strcasecmp(end, "ib") != 0))
			return -EINVAL;
	}
	if (overflow || v > (UINT64_MAX >> shift))
		return -ERANGE;
	*ret = v << shift;
	return 0;
}

static bool valid_name(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");

	return n > 0 && n <= NAME_LEN_MAX && !s[n];
}

static bool all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

static int set_string(struct parser *p, char **field, const char *value)
{
	char *s = strdup(value);

	if (!s)
		return fail_oom(p);
	free(*field);
	*field = s;
	return 0;
}

/* NSS lookups. The *_r variants want a buffer; grow it until the entry fits. */
static bool nss_not_found(int r)
{
	return r == 0 || r == ENOENT || r == ESRCH || r == EBADF || r == EPERM;
}

static int user_lookup(const char *name, uid_t uid, uid_t *ret_uid, gid_t *ret_gid, char **ret_name)
{
	struct passwd pw, *res = NULL;
	size_t size = NSS_BUF_MIN;
	char *buf = NULL, *nb;
	int r;

	for (;;) {
		nb = realloc(buf, size);
		if (!nb) {
			r = -ENOMEM;
			goto out_free;
		}
		buf = nb;
		r = name ? getpwnam_r(name, &pw, buf, size, &res)
			 : getpwuid_r(uid, &pw, buf, size, &res);
		if (r != ERANGE || size >= NSS_BUF_MAX)
			break;
		size *= 2;
	}
	if (!res) {
		r = nss_not_found(r) ? -ENOENT : -r;
		goto out_free;
	}
	r = 0;
	if (ret_name) {
		*ret_name = strdup(pw.pw_name);
		if (!*ret_name) {
			r = -ENOMEM;
			goto out_free;
		}
	}
	if (ret_uid)
		*ret_uid = pw.pw_uid;
	if (ret_gid)
		*ret_gid = pw.pw_gid;
out_free:
	free(buf);
	return r;
}

static int group_lookup(const char *name, gid_t *ret)
{
	struct group gr, *res = NULL;
	size_t size = NSS_BUF_MIN;
	char *buf = NULL, *nb;
	int r;

	for (;;) {
		nb = realloc(buf, size);
		if (!nb) {
			r = -ENOMEM;
			goto out_free;
		}
		buf = nb;
		r = getgrnam_r(name, &gr, buf, size, &res);
		if (r != ERANGE || size >= NSS_BUF_MAX)
			break;
		size *= 2;
	}
	if (res)
		*ret = gr.gr_gid;
	r = res ? 0 : nss_not_found(r) ? -ENOENT : -r;
out_free:
	free(buf);
	return r;
}

/* A user or group name, or a numeric id that need not exist. */
static int resolve_id(struct parser *p, const struct key_def *k, const char *s, bool group,
		      unsigned *ret)
{
	const char *what = group ? "group" : "user";
	uint64_t id;
	int r;

	if (all_digits(s)) {
		/* (uid_t)-1 means "no id" to the kernel and to us. */
		if (parse_uint(s, 0, UINT32_MAX - 1, &id) < 0)
			return fail(p, p->line, -EINVAL, "invalid %s id '%s' in %s", what, s,
				    k->name);
		*ret = id;
		return 0;
	}
	r = group ? group_lookup(s, ret) : user_lookup(s, 0, ret, NULL, NULL);
	if (r == -ENOENT)
		return fail(p, p->line, -EINVAL, "unknown %s '%s' in %s", what, s, k->name);
	if (r < 0)
		return fail(p, p->line, r, "cannot look up %s '%s': %s", what, s, strerror(-r));
	return 0;
}

/* "a, b c" -> ids; separators are commas and blanks in any mix. */
static int parse_id_list(struct parser *p, const struct key_def *k, const char *value, bool group,
			 unsigned **ret, size_t *ret_n)
{
	unsigned *ids = NULL, *grown;
	char *copy, *tok, *save;
	size_t n = 0;
	int r = 0;

	copy = strdup(value);
	if (!copy)
		return fail_oom(p);
	for (tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		grown = reallocarray(ids, n + 1, sizeof(*ids));
		if (!grown) {
			r = fail_oom(p);
			goto out_free;
		}
		ids = grown;
		r = resolve_id(p, k, tok, group, &ids[n]);
		if (r < 0)
			goto out_free;
		n++;
	}
	if (!n) {
		r = fail(p, p->line, -EINVAL, "%s names no %s", k->name, group ? "group" : "user");
		goto out_free;
	}
	free(*ret);
	*ret = ids;
	*ret_n = n;
	ids = NULL;
out_free:
	free(ids);
	free(copy);
	return r;
}

static bool valid_hostname(const char *s, size_t len)
{
	size_t i;

	if (!len || len > HOST_LEN_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr(".-_", s[i]))
			return false;
	return true;
}

/* An IPv6 literal with an optional %zone, as it appears inside brackets. */
static bool valid_ipv6(const char *s, size_t len)
{
	char buf[INET6_ADDRSTRLEN + 1 + NAME_LEN_MAX + 1];
	struct in6_addr a;
	char *zone;

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	zone = strchr(buf, '%');
	if (zone) {
		*zone++ = '\0';
		if (!valid_name(zone))
			return false;
	}
	return inet_pton(AF_INET6, buf, &a) == 1;
}

/* HOST[:PORT] or [IPV6][:PORT]; the port defaults to RP_DEFAULT_PEER_PORT. */
static int split_address(const char *s, char **ret_host, uint16_t *ret_port)
{
	uint64_t port = RP_DEFAULT_PEER_PORT;
	const char *host = s, *colon;
	size_t len;
	char *h;

	if (*s == '[') {
		const char *close = strchr(s, ']');

		if (!close)
			return -EINVAL;
		host = s + 1;
		len = close - host;
		colon = close[1] ? close + 1 : NULL;
		if ((colon && *colon != ':') || !valid_ipv6(host, len))
			return -EINVAL;
	} else {
		colon = strchr(s, ':');
		/* Two colons: an IPv6 address without brackets. */
		if (colon && strchr(colon + 1, ':'))
			return -EINVAL;
		len = colon ? (size_t)(colon - s) : strlen(s);
		if (!valid_hostname(s, len))
			return -EINVAL;
	}
	if (colon && parse_uint(colon + 1, 1, UINT16_MAX, &port) < 0)
		return -EINVAL;
	h = strndup(host, len);
	if (!h)
		return -ENOMEM;
	*ret_host = h;
	*ret_port = port;
	return 0;
}

static int set_address(struct parser *p, const struct key_def *k, const char *value, char **host,
		       uint16_t *port)
{
	char *h;
	int r;

	r = split_address(value, &h, port);
	if (r == -ENOMEM)
		return fail_oom(p);
	if (r < 0)
		return fail(p, p->line, -EINVAL,
			    "invalid address '%s' for %s: use HOST:PORT or [IPV6]:PORT with a port "
			    "from 1 to 65535",
			    value, k->name);
	free(*host);
	*host = h;
	return 0;
}

static int parse_transport(struct parser *p, const struct key_def *k, const char *value,
			   enum rp_transport_kind *ret)
{
	if (!strcmp(value, "auto"))
		*ret = RP_TRANSPORT_AUTO;
	else if (!strcmp(value, "verbs"))
		*ret = RP_TRANSPORT_VERBS;
	else if (!strcmp(value, "tcp"))
		*ret = RP_TRANSPORT_TCP;
	else
		return fail(p, p->line, -EINVAL, "invalid %s '%s': use auto, verbs or tcp", k->name,
			    value);
	return 0;
}

/* [daemon] */

static int set_node_name(struct parser *p, const struct key_def *k, const char *value)
{
	if (!valid_name(value))
		return fail(p, p->line, -EINVAL,
			    "invalid node_name '%s': use 1 to 63 characters from A-Z, a-z, 0-9, "
			    "'.', '_' and '-'",
			    value);
	return set_string(p, &p->cfg->node_name, value);
}

static int set_socket(struct parser *p, const struct key_def *k, const char *value)
{
	struct sockaddr_un sun;
	int r;

	if (value[0] != '/' || strlen(value) >= sizeof(sun.sun_path))
		return fail(p, p->line, -EINVAL,
			    "invalid socket path '%s': use an absolute path shorter than %zu bytes",
			    value, sizeof(sun.sun_path));
	r = set_string(p, &p->cfg->socket_path, value);
	if (r == 0)
		p->cfg->socket_path_set = true;
	return r;
}

static int set_socket_mode(struct parser *p, const struct key_def *k, const char *value)
{
	size_t len = strlen(value);
	unsigned long mode = 01000;

	if (len >= 1 && len <= 4 && strspn(value, "01234567") == len)
		mode = strtoul(value, NULL, 8);
	if (mode > 0777)
		return fail(p, p->line, -EINVAL,
			    "invalid socket_mode '%s': use an octal mode from 0000 to 0777", value);
	p->cfg->socket_mode = mode;
	p->cfg->socket_access_set = true;
	return 0;
}

static int set_socket_group(struct parser *p, const struct key_def *k, const char *value)
{
	p->cfg->socket_access_set = true;
	return resolve_id(p, k, value, true, &p->cfg->socket_group);
}

static int set_daemon_transport(struct parser *p, const struct key_def *k, const char *value)
{
	return parse_transport(p, k, value, &p->cfg->transport);
}

static int set_listen(struct parser *p, const struct key_def *k, const char *value)
{
	/* "none" keeps the default host so that listen_host is never NULL. */
	if (!strcmp(value, "none")) {
		p->cfg->listen_port = 0;
		return 0;
	}
	return set_address(p, k, value, &p->cfg->listen_host, &p->cfg->listen_port);
}

static int set_log_level(struct parser *p, const struct key_def *k, const char *value)
{
	static const struct {
		const char *name;
		int level;
	} levels[] = {
		{ "err", LOG_ERR },   { "warning", LOG_WARNING }, { "notice", LOG_NOTICE },
		{ "info", LOG_INFO }, { "debug", LOG_DEBUG },
	};
	size_t i;

	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		if (!strcmp(value, levels[i].name)) {
			p->cfg->log_level = levels[i].level;
			return 0;
		}
	}
	return fail(p, p->line, -EINVAL,
		    "invalid log_level '%s': use err, warning, notice, info or debug", value);
}

static int set_allowed_users(struct parser *p, const struct key_def *k, const char *value)
{
	return parse_id_list(p, k, value, false, &p->cfg->allowed_uids, &p->cfg->n_allowed_uids);
}

static int set_allowed_groups(struct parser *p, const struct key_def *k, const char *value)
{
	return parse_id_list(p, k, value, true, &p->cfg->allowed_gids, &p->cfg->n_allowed_gids);
}

static int set_admin_group(struct parser *p, const struct key_def *k, const char *value)
{
	return resolve_id(p, k, value, true, &p->cfg->admin_gid);
}

static int set_nice(struct parser *p, const struct key_def *k, const char *value)
{
	uint64_t v;
	bool neg = value[0] == '-';

	if (!strcmp(value, "keep")) {
		p->cfg->nice = CONFIG_NICE_KEEP;
		return 0;
	}
	if (parse_uint(value + neg, 0, neg ? 20 : 19, &v) < 0)
		return fail(p, p->line, -EINVAL,
			    "invalid value '%s' for nice: use keep or an integer from -20 to 19",
			    value);
	p->cfg->nice = neg ? -(int)v : (int)v;
	return 0;
}

/* [verbs], [limits] and [peers] */

static int set_u32(struct parser *p, const struct key_def *k, const char *value)
{
	uint64_t v;

	if (parse_uint(value, k->min, k->max, &v) < 0)
		return fail(p, p->line, -EINVAL,
			    "invalid value '%s' for %s: use an integer from %" PRIu32
			    " to %" PRIu32,
			    value, k->name, k->min, k->max);
	*(uint32_t *)((char *)p->cfg + k->offset) = v;
	return 0;
}

static int set_device(struct parser *p, const struct key_def *k, const char *value)
{
	if (!valid_name(value))
		return fail(p, p->line, -EINVAL, "invalid device name '%s'", value);
	return set_string(p, &p->cfg->device, value);
}

static int set_port(struct parser *p, const struct key_def *k, const char *value)
{
	uint64_t v;

	if (parse_uint(value, 1, 255, &v) < 0)
		return fail(p, p->line, -EINVAL,
			    "invalid value '%s' for port: use an integer from 1 to 255", value);
	p->cfg->port_num = v;
	return 0;
}

static int set_gid_index(struct parser *p, const struct key_def *k, const char *value)
{
	uint64_t v;

	if (!strcmp(value, "auto")) {
		p->cfg->gid_index = -1;
		return 0;
	}
	if (parse_uint(value, 0, 255, &v) < 0)
		return fail(
			p, p->line, -EINVAL,
			"invalid value '%s' for gid_index: use auto or an integer from 0 to 255",
			value);
	p->cfg->gid_index = v;
	return 0;
}

static int set_max_registered_bytes(struct parser *p, const struct key_def *k, const char *value)
{
	uint64_t v;
	int r;

	r = config_parse_size(value, &v);
	if (r == -EINVAL)
		return fail(p, p->line, -EINVAL,
			    "invalid size '%s' for %s: use a number with an optional K, M, G or T "
			    "suffix",
			    value, k->name);
	if (r < 0)
		return fail(p, p->line, -EINVAL, "invalid size '%s' for %s: too large", value,
			    k->name);
	if (v < 4096)
		return fail(p, p->line, -EINVAL, "invalid size '%s' for %s: use at least 4096",
			    value, k->name);
	p->cfg->max_registered_bytes = v;
	return 0;
}

/* [peer "NAME"] */

static struct peer_conf *current_peer(struct parser *p)
{
	return &p->cfg->peers[p->cfg->n_peers - 1];
}

static int set_peer_address(struct parser *p, const struct key_def *k, const char *value)
{
	struct peer_conf *peer = current_peer(p);

	return set_address(p, k, value, &peer->host, &peer->port);
}

static int set_peer_transport(struct parser *p, const struct key_def *k, const char *value)
{
	return parse_transport(p, k, value, &current_peer(p)->transport);
}

static int set_peer_exports(struct parser *p, const struct key_def *k, const char *value)
{
	struct peer_conf *peer = current_peer(p);

	if (!strcmp(value, "named"))
		peer->exports = PEER_EXPORTS_NAMED;
	else if (!strcmp(value, "all"))
		peer->exports = PEER_EXPORTS_ALL;
	else
		return fail(p, p->line, -EINVAL, "invalid exports '%s': use named or all", value);
	peer->exports_line = p->line;
	return 0;
}

static int set_peer_export_users(struct parser *p, const struct key_def *k, const char *value)
{
	struct peer_conf *peer = current_peer(p);

	peer->export_ids_line = p->line;
	return parse_id_list(p, k, value, false, &peer->export_uids, &peer->n_export_uids);
}

static int set_peer_export_groups(struct parser *p, const struct key_def *k, const char *value)
{
	struct peer_conf *peer = current_peer(p);

	peer->export_ids_line = p->line;
	return parse_id_list(p, k, value, true, &peer->export_gids, &peer->n_export_gids);
}

/* [names "PREFIX"] */

static struct name_conf *current_names(struct parser *p)
{
	return &p->cfg->names[p->cfg->n_names - 1];
}

static int set_names_users(struct parser *p, const struct key_def *k, const char *value)
{
	struct name_conf *n = current_names(p);

	return parse_id_list(p, k, value, false, &n->uids, &n->n_uids);
}

static int set_names_groups(struct parser *p, const struct key_def *k, const char *value)
{
	struct name_conf *n = current_names(p);

	return parse_id_list(p, k, value, true, &n->gids, &n->n_gids);
}

__attribute__((format(printf, 4, 5))) static int fail_key(struct parser *p, int error,
							  const char *path, const char *fmt, ...)
{
	char msg[MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return fail(p, p->line, error, "peer '%s': key file %s: %s", current_peer(p)->name, path,
		    msg);
}

/*
 * Open a key file without side effects: stat() first so that a path naming
 * a device or FIFO is refused before open() could block or trigger it.
 */
static int open_key_file(struct parser *p, const char *path)
{
	struct stat st;
	int fd;

	if (stat(path, &st) < 0)
		return fail_key(p, -errno, path, "%s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fail_key(p, -EINVAL, path, "not a regular file");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return fail_key(p, -errno, path, "%s", strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail_key(p, -EINVAL, path, "not a regular file");
	}
	/* A secret: neither readable nor writable by anyone but its owner (and root). */
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		close(fd);
		return fail_key(
			p, -EINVAL, path,
			"mode %04o lets group or others access the key (run chmod 600 on it)",
			(unsigned)(st.st_mode & 07777));
	}
	return fd;
}

static ssize_t read_all(int fd, uint8_t *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;

	while (len < size) {
		n = read(fd, buf + len, size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += n;
	}
	return len;
}

static int read_key(struct parser *p, const char *path)
{
	/* Room for the longest key, its newline and one byte to tell it is too long. */
	uint8_t buf[RP_PEER_KEY_MAX + 2];
	struct peer_conf *peer = current_peer(p);
	ssize_t len;
	int fd, r = 0;

	fd = open_key_file(p, path);
	if (fd < 0)
		return fd;
	len = read_all(fd, buf, sizeof(buf));
	close(fd);
	if (len < 0) {
		r = fail_key(p, len, path, "%s", strerror(-len));
		goto out_wipe;
	}
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len < RP_PEER_KEY_MIN || len > RP_PEER_KEY_MAX) {
		r = fail_key(p, -EINVAL, path, "%s: use %d to %d bytes",
			     len > RP_PEER_KEY_MAX ? "key too long" : "key too short",
			     RP_PEER_KEY_MIN, RP_PEER_KEY_MAX);
		goto out_wipe;
	}
	memcpy(peer->key, buf, len);
	peer->key_len = len;
out_wipe:
	explicit_bzero(buf, sizeof(buf));
	return r;
}

static int set_peer_key_file(struct parser *p, const struct key_def *k, const char *value)
{
	struct peer_conf *peer = current_peer(p);
	char *path;
	int r;

	if (value[0] == '/')
		path = strdup(value);
	else if (asprintf(&path, "%s/%s", p->dir, value) < 0)
		path = NULL;
	if (!path)
		return fail_oom(p);
	r = read_key(p, path);
	if (r < 0) {
		free(path);
		return r;
	}
	free(peer->key_file);
	peer->key_file = path;
	return 0;
}

#define U32_KEY(key, field, lo, hi)                                \
	{                                                          \
		.name = key, .set = set_u32, .min = lo, .max = hi, \
		.offset = offsetof(struct config, field)           \
	}

static const struct key_def daemon_keys[] = {
	{ .name = "node_name", .set = set_node_name },
	{ .name = "socket", .set = set_socket },
	{ .name = "socket_mode", .set = set_socket_mode },
	{ .name = "socket_group", .set = set_socket_group },
	{ .name = "transport", .set = set_daemon_transport },
	{ .name = "listen", .set = set_listen },
	{ .name = "log_level", .set = set_log_level },
	{ .name = "allowed_users", .set = set_allowed_users },
	{ .name = "allowed_groups", .set = set_allowed_groups },
	{ .name = "admin_group", .set = set_admin_group },
	{ .name = "nice", .set = set_nice },
	{ 0 },
};

static const struct key_def verbs_keys[] = {
	{ .name = "device", .set = set_device },
	{ .name = "port", .set = set_port },
	{ .name = "gid_index", .set = set_gid_index },
	U32_KEY("cq_depth", cq_depth, 16, 1048576),
	U32_KEY("send_queue_depth", sq_depth, 1, 32768),
	U32_KEY("recv_queue_depth", rq_depth, 1, 32768),
	U32_KEY("ack_timeout", ack_timeout, 1, 31),
	U32_KEY("retry_count", retry_count, 0, 7),
	U32_KEY("local_queue_pairs", local_qps, 1, 64),
	U32_KEY("inline_size", inline_size, 0, 4096),
	{ 0 },
};

static const struct key_def limits_keys[] = {
	{ .name = "max_registered_bytes", .set = set_max_registered_bytes },
	U32_KEY("max_regions", max_regions, 1, UINT32_MAX),
	U32_KEY("max_inflight", max_inflight, 1, 1048576),
	U32_KEY("max_connections", max_connections, 1, UINT32_MAX),
	{ 0 },
};

static const struct key_def peers_keys[] = {
	U32_KEY("max_unauthenticated", max_unauthenticated, 1, 1048576),
	U32_KEY("max_unauthenticated_per_address", max_unauthenticated_per_address, 1, 1048576),
	U32_KEY("max_failed_handshakes", max_failed_handshakes, 0, 1048576),
	U32_KEY("refusal_seconds", refusal_seconds, 1, 86400),
	{ 0 },
};

static const struct key_def peer_keys[] = {
	{ .name = "address", .set = set_peer_address },
	{ .name = "transport", .set = set_peer_transport },
	{ .name = "key_file", .set = set_peer_key_file },
	{ .name = "exports", .set = set_peer_exports },
	{ .name = "export_users", .set = set_peer_export_users },
	{ .name = "export_groups", .set = set_peer_export_groups },
	{ 0 },
};

static const struct key_def names_keys[] = {
	{ .name = "users", .set = set_names_users },
	{ .name = "groups", .set = set_names_groups },
	{ 0 },
};

#define KEY_COUNT(t) (sizeof(t) / sizeof((t)[0]) - 1)
_Static_assert(KEY_COUNT(daemon_keys) <= KEYS_MAX && KEY_COUNT(verbs_keys) <= KEYS_MAX &&
		       KEY_COUNT(limits_keys) <= KEYS_MAX && KEY_COUNT(peers_keys) <= KEYS_MAX &&
		       KEY_COUNT(peer_keys) <= KEYS_MAX && KEY_COUNT(names_keys) <= KEYS_MAX,
	       "raise KEYS_MAX");

static const struct key_def *section_keys(enum section s)
{
	switch (s) {
	case SECT_DAEMON:
		return daemon_keys;
	case SECT_VERBS:
		return verbs_keys;
	case SECT_LIMITS:
		return limits_keys;
	case SECT_PEERS:
		return peers_keys;
	case SECT_PEER:
		return peer_keys;
	case SECT_NAMES:
		return names_keys;
	default:
		return NULL;
	}
}

static const char *const section_names[] = {
	[SECT_DAEMON] = "daemon",
	[SECT_VERBS] = "verbs",
	[SECT_LIMITS] = "limits",
	[SECT_PEERS] = "peers",
};

/* The current section as written in the file, for messages. */
static const char *section_label(struct parser *p, char *buf, size_t size)
{
	if (p->sect == SECT_PEER)
		snprintf(buf, size, "[peer \"%s\"]", current_peer(p)->name);
	else if (p->sect == SECT_NAMES)
		snprintf(buf, size, "[names \"%s\"]", current_names(p)->prefix);
	else
		snprintf(buf, size, "[%s]", section_names[p->sect]);
	return buf;
}

static int handle_key(void *user, const char *section, const char *name, const char *value)
{
	struct parser *p = user;
	const struct key_def *keys = section_keys(p->sect);
	char label[NAME_LEN_MAX + 16];
	size_t i;

	/* Always "success" for inih: its own error line is kept for syntax errors only. */
	if (p->error || p->sect == SECT_BROKEN)
		return 1;
	if (!keys) {
		fail(p, p->line, -EINVAL, "key '%s' outside of any section", name);
		return 1;
	}
	for (i = 0; keys[i].name && strcmp(keys[i].name, name); i++)
		;
	if (!keys[i].name) {
		fail(p, p->line, -EINVAL, "unknown key '%s' in section %s", name,
		     section_label(p, label, sizeof(label)));
		return 1;
	}
	if (p->seen[i]) {
		fail(p, p->line, -EINVAL, "duplicate key '%s' in section %s (first set at line %u)",
		     name, section_label(p, label, sizeof(label)), p->seen[i]);
		return 1;
	}
	p->seen[i] = p->line;
	if (!*value)
		fail(p, p->line, -EINVAL, "empty value for %s", name);
	else
		keys[i].set(p, &keys[i], value);
	return 1;
}

static int begin_simple_section(struct parser *p, enum section s)
{
	if (p->sect_line[s])
		return fail(p, p->line, -EINVAL, "duplicate section [%s] (first at line %u)",
			    section_names[s], p->sect_line[s]);
	p->sect_line[s] = p->line;
	p->sect = s;
	return 0;
}

static int add_peer(struct parser *p, const char *name)
{
	struct config *cfg = p->cfg;
	struct peer_conf *peers;
	char *copy;

	copy = strdup(name);
	peers = copy ? reallocarray(cfg->peers, cfg->n_peers + 1, sizeof(*peers)) : NULL;
	if (!peers) {
		free(copy);
		return fail_oom(p);
	}
	cfg->peers = peers;
	peers[cfg->n_peers] = (struct peer_conf){
		.name = copy,
		.port = RP_DEFAULT_PEER_PORT,
		.transport = RP_TRANSPORT_AUTO,
		.line = p->line,
	};
	cfg->n_peers++;
	p->sect = SECT_PEER;
	return 0;
}

/* @args is what follows "peer" or "names": blanks, then "NAME" in double quotes. */
static char *quoted_arg(char *args)
{
	char *close;

	while (isspace((unsigned char)*args))
		args++;
	close = *args == '"' ? strchr(args + 1, '"') : NULL;
	if (!close || close[1])
		return NULL;
	*close = '\0';
	return args + 1;
}

static int begin_names_section(struct parser *p, char *args)
{
	struct config *cfg = p->cfg;
	struct name_conf *names;
	char *prefix = quoted_arg(args), *copy;
	size_t i;

	if (!prefix)
		return fail(p, p->line, -EINVAL, "invalid names section: use [names \"PREFIX\"]");
	if (!valid_name(prefix))
		return fail(p, p->line, -EINVAL,
			    "invalid names prefix '%s': use 1 to 63 characters from A-Z, a-z, 0-9, "
			    "'.', '_' and '-'",
			    prefix);
	for (i = 0; i < cfg->n_names; i++)
		if (!strcmp(cfg->names[i].prefix, prefix))
			return fail(p, p->line, -EINVAL,
				    "duplicate names prefix '%s' (first at line %u)", prefix,
				    cfg->names[i].line);
	copy = strdup(prefix);
	names = copy ? reallocarray(cfg->names, cfg->n_names + 1, sizeof(*names)) : NULL;
	if (!names) {
		free(copy);
		return fail_oom(p);
	}
	cfg->names = names;
	names[cfg->n_names++] = (struct name_conf){ .prefix = copy, .line = p->line };
	p->sect = SECT_NAMES;
	return 0;
}

static int begin_peer_section(struct parser *p, char *args)
{
	const struct peer_conf *dup;
	char *name = quoted_arg(args);

	if (!name)
		return fail(p, p->line, -EINVAL, "invalid peer section: use [peer \"NAME\"]");
	if (!valid_name(name))
		return fail(p, p->line, -EINVAL,
			    "invalid peer name '%s': use 1 to 63 characters from A-Z, a-z, 0-9, "
			    "'.', '_' and '-'",
			    name);
	dup = config_peer(p->cfg, name);
	if (dup)
		return fail(p, p->line, -EINVAL, "duplicate peer '%s' (first defined at line %u)",
			    name, dup->line);
	return add_peer(p, name);
}

static int dispatch_section(struct parser *p, char *hdr)
{
	enum section s;

	for (s = SECT_DAEMON; s < SECT_PEER; s++)
		if (!strcmp(hdr, section_names[s]))
			return begin_simple_section(p, s);
	if (!strncmp(hdr, "peer", 4) && (!hdr[4] || isspace((unsigned char)hdr[4])))
		return begin_peer_section(p, hdr + 4);
	if (!strncmp(hdr, "names", 5) && (!hdr[5] || isspace((unsigned char)hdr[5])))
		return begin_names_section(p, hdr + 5);
	return fail(p, p->line, -EINVAL, "unknown section [%s]", hdr);
}

/* A line starting with '['; @len excludes the newline. */
static int begin_section(struct parser *p, const char *s, size_t len)
{
	const char *close = memchr(s, ']', len), *rest;
	char *hdr, *end;
	int r;

	memset(p->seen, 0, sizeof(p->seen));
	/* Without ']' inih reports a syntax error on this line; let it. */
	p->sect = SECT_BROKEN;
	if (!close)
		return 0;
	for (rest = close + 1; rest < s + len && isspace((unsigned char)*rest); rest++)
		;
	if (rest < s + len && *rest != ';')
		return fail(p, p->line, -EINVAL, "unexpected text after section header");
	hdr = strndup(s + 1, close - s - 1);
	if (!hdr)
		return fail_oom(p);
	for (end = hdr + strlen(hdr); end > hdr && isspace((unsigned char)end[-1]); end--)
		;
	*end = '\0';
	for (end = hdr; isspace((unsigned char)*end); end++)
		;
	r = dispatch_section(p, end);
	free(hdr);
	return r;
}

/*
 * The ini_reader. Leading blanks are dropped so that inih never sees an
 * indented line as the continuation of the previous value: an indented key
 * is just a key. Each call returns one whole line, newline included, which
 * is what inih needs to count it as one line.
 */
static char *read_line(char *buf, int num, void *stream)
{
	struct parser *p = stream;
	const char *start = p->pos, *end;
	size_t len;

	if (p->error || !*start)
		return NULL;
	end = strchrnul(start, '\n');
	p->pos = *end ? end + 1 : end;
	p->line++;
	if (p->line == 1 && !strncmp(start, "\xef\xbb\xbf", 3))
		start += 3;
	while (start < end && isspace((unsigned char)*start))
		start++;
	len = end - start;
	if (num < 2 || len > (size_t)num - 2) {
		fail(p, p->line, -EINVAL, "line too long (more than %d characters)", num - 2);
		return NULL;
	}
	memcpy(buf, start, len);
	buf[len] = '\n';
	buf[len + 1] = '\0';
	if (*buf == '[' && begin_section(p, buf, len) < 0)
		return NULL;
	return buf;
}

static void report_syntax_error(struct parser *p, unsigned line)
{
	const char *s = p->text;
	unsigned i;

	for (i = 1; i < line && (s = strchr(s, '\n')); i++)
		s++;
	if (s && line == 1 && !strncmp(s, "\xef\xbb\xbf", 3))
		s += 3;
	while (s && isspace((unsigned char)*s) && *s != '\n')
		s++;
	p->error = 0;
	if (s && *s == '[')
		fail(p, line, -EINVAL, "missing ']' in section header");
	else
		fail(p, line, -EINVAL, "syntax error: expected KEY = VALUE");
}

static int default_node_name(struct parser *p)
{
	char host[HOST_NAME_MAX + 1];

	if (gethostname(host, sizeof(host)) < 0)
		return fail(p, 0, -errno, "cannot get the host name: %s", strerror(errno));
	host[sizeof(host) - 1] = '\0';
	if (!valid_name(host))
		return fail(
			p, 0, -EINVAL,
			"the host name '%s' is not a valid node name: set node_name in [daemon]",
			host);
	return set_string(p, &p->cfg->node_name, host);
}

/* Checks that need the whole file: required keys and names across sections. */
static int check_peers(struct parser *p)
{
	const struct config *cfg = p->cfg;
	const struct peer_conf *peer;
	size_t i;

	if (cfg->max_unauthenticated_per_address > cfg->max_unauthenticated)
		return fail(p, p->sect_line[SECT_PEERS], -EINVAL,
			    "max_unauthenticated_per_address (%" PRIu32
			    ") is larger than max_unauthenticated (%" PRIu32 ")",
			    cfg->max_unauthenticated_per_address, cfg->max_unauthenticated);

	for (i = 0; i < p->cfg->n_peers; i++) {
		peer = &p->cfg->peers[i];
		if (!peer->host)
			return fail(p, peer->line, -EINVAL, "peer '%s' has no address", peer->name);
		if (!peer->key_file)
			return fail(p, peer->line, -EINVAL, "peer '%s' has no key_file",
				    peer->name);
		if (!strcmp(peer->name, p->cfg->node_name))
			return fail(p, peer->line, -EINVAL,
				    "peer '%s' has the name of this node (node_name)", peer->name);
		if (peer->exports == PEER_EXPORTS_ALL && peer->export_ids_line)
			return fail(p, peer->export_ids_line, -EINVAL,
				    "peer '%s': export_users and export_groups say nothing more "
				    "when exports = all (line %u)",
				    peer->name, peer->exports_line);
	}
	return 0;
}

static struct config *config_new(const char *name)
{
	struct config *cfg = calloc(1, sizeof(*cfg));

	if (!cfg)
		return NULL;
	*cfg = (struct config){
		.path = strdup(name),
		.socket_path = strdup(RP_DEFAULT_SOCKET),
		.socket_mode = 0666,
		.socket_group = (gid_t)-1,
		.transport = RP_TRANSPORT_AUTO,
		.listen_host = strdup("0.0.0.0"),
		.listen_port = RP_DEFAULT_PEER_PORT,
		.log_level = LOG_INFO,
		.admin_gid = (gid_t)-1,
		.nice = -10,
		.gid_index = -1,
		.cq_depth = 8192,
		.sq_depth = 512,
		.rq_depth = 512,
		.ack_timeout = 16,
		.retry_count = 7,
		.local_qps = 4,
		.inline_size = 512,
		.max_registered_bytes = UINT64_C(4) << 30,
		.max_regions = 1024,
		.max_inflight = 4096,
		.max_connections = 64,
		.max_unauthenticated = 64,
		.max_unauthenticated_per_address = 8,
		.max_failed_handshakes = 10,
		.refusal_seconds = 60,
	};
	if (!cfg->path || !cfg->socket_path || !cfg->listen_host)
		return config_free(cfg);
	return cfg;
}

static char *dir_of(const char *path)
{
	char *copy = strdup(path), *dir;

	if (!copy)
		return NULL;
	dir = strdup(dirname(copy));
	free(copy);
	return dir;
}

static int parse_text(struct parser *p)
{
	int r;

	r = ini_parse_stream(read_line, p, handle_key, p);
	if (r == -2)
		return fail(p, 0, -ENOMEM, "out of memory");
	if (r > 0 && (!p->error || (p->error_line && (unsigned)r < p->error_line)))
		report_syntax_error(p, r);
	if (p->error)
		return p->error;
	if (!p->cfg->node_name && default_node_name(p) < 0)
		return p->error;
	return check_peers(p);
}

int config_load_string(const char *name, const char *text, struct config **ret, char *err,
		       size_t errlen)
{
	struct parser p = { .name = name ? name : "<string>",
			    .text = text,
			    .pos = text,
			    .err = err,
			    .errlen = errlen };
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (!text || !ret)
		return fail(&p, 0, -EINVAL, "invalid arguments");
	p.cfg = config_new(p.name);
	p.dir = dir_of(p.name);
	if (!p.cfg || !p.dir) {
		r = fail(&p, 0, -ENOMEM, "out of memory");
		goto out_free;
	}
	r = parse_text(&p);
	if (r == 0) {
		*ret = p.cfg;
		p.cfg = NULL;
	}
out_free:
	config_free(p.cfg);
	free(p.dir);
	return r;
}

/* Read all of @fd into a NUL-terminated buffer of at most CONFIG_BYTES_MAX bytes. */
static int read_fd(int fd, char **ret, size_t *ret_len)
{
	size_t len = 0, size = 0;
	char *buf = NULL, *nb;
	ssize_t n;
	int r;

	for (;;) {
		if (size - len < 2) {
			size = size ? size * 2 : 4096;
			nb = realloc(buf, size);
			if (!nb) {
				r = -ENOMEM;
				goto out_free;
			}
			buf = nb;
		}
		n = read(fd, buf + len, size - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
		if (len > CONFIG_BYTES_MAX) {
			r = -EFBIG;
			goto out_free;
		}
	}
	if (n < 0) {
		r = -errno;
		goto out_free;
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
out_free:
	free(buf);
	return r;
}

/* The whole file as one string; a NUL byte in it is an error. */
static int read_file(struct parser *p, char **ret)
{
	char *buf = NULL;
	size_t len = 0, i;
	int fd, r;

	fd = open(p->name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return fail(p, 0, -errno, "%s", strerror(errno));
	r = read_fd(fd, &buf, &len);
	close(fd);
	if (r == -EFBIG)
		return fail(p, 0, r, "larger than %d bytes", CONFIG_BYTES_MAX);
	if (r < 0)
		return fail(p, 0, r, "%s", strerror(-r));
	if (strlen(buf) != len) {
		/* Report it here: the string parser would silently stop at it. */
		p->line = 1;
		for (i = 0; buf[i]; i++)
			p->line += buf[i] == '\n';
		free(buf);
		return fail(p, p->line, -EINVAL, "NUL byte in line");
	}
	*ret = buf;
	return 0;
}

int config_load(const char *path, struct config **ret, char *err, size_t errlen)
{
	struct parser p = { .name = path ? path : "<null>", .err = err, .errlen = errlen };
	char *text = NULL;
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (!path || !ret)
		return fail(&p, 0, -EINVAL, "invalid arguments");
	r = read_file(&p, &text);
	if (r < 0)
		return r;
	r = config_load_string(path, text, ret, err, errlen);
	free(text);
	return r;
}

struct config *config_free(struct config *cfg)
{
	size_t i;

	if (!cfg)
		return NULL;
	for (i = 0; i < cfg->n_peers; i++) {
		free(cfg->peers[i].name);
		free(cfg->peers[i].host);
		free(cfg->peers[i].key_file);
		free(cfg->peers[i].export_uids);
		free(cfg->peers[i].export_gids);
		explicit_bzero(cfg->peers[i].key, sizeof(cfg->peers[i].key));
	}
	free(cfg->peers);
	for (i = 0; i < cfg->n_names; i++) {
		free(cfg->names[i].prefix);
		free(cfg->names[i].uids);
		free(cfg->names[i].gids);
	}
	free(cfg->names);
	free(cfg->path);
	free(cfg->node_name);
	free(cfg->socket_path);
	free(cfg->listen_host);
	free(cfg->allowed_uids);
	free(cfg->allowed_gids);
	free(cfg->device);
	free(cfg);
	return NULL;
}

const struct peer_conf *config_peer(const struct config *cfg, const char *name)
{
	size_t i;

	if (!cfg || !name)
		return NULL;
	for (i = 0; i < cfg->n_peers; i++)
		if (!strcmp(cfg->peers[i].name, name))
			return &cfg->peers[i];
	return NULL;
}

const struct name_conf *config_name_rule(const struct config *cfg, const char *name)
{
	const struct name_conf *best = NULL;
	size_t i, len;

	for (i = 0; cfg && i < cfg->n_names; i++) {
		len = strlen(cfg->names[i].prefix);
		if (!strncmp(name, cfg->names[i].prefix, len) &&
		    (!best || len > strlen(best->prefix)))
			best = &cfg->names[i];
	}
	return best;
}

const char *config_transport_name(enum rp_transport_kind t)
{
	switch (t) {
	case RP_TRANSPORT_AUTO:
		return "auto";
	case RP_TRANSPORT_VERBS:
		return "verbs";
	case RP_TRANSPORT_TCP:
		return "tcp";
	}
	return "unknown";
}

static bool gid_in(gid_t gid, const gid_t *set, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (set[i] == gid)
			return true;
	return false;
}

/* Whether @gid or a supplementary group of user @uid is in @set. */
static bool user_in_groups(uid_t uid, gid_t gid, const gid_t *set, size_t n)
{
	gid_t *groups = NULL, *grown, pw_gid;
	int ngroups = 32, prev, r;
	char *name = NULL;
	bool found = false;

	if (gid_in(gid, set, n))
		return true;
	if (user_lookup(NULL, uid, NULL, &pw_gid, &name) < 0)
		return false;
	/* getgrouplist() fails when the array is too small and says how big it must be. */
	do {
		grown = reallocarray(groups, ngroups, sizeof(*groups));
		if (!grown)
			goto out_free;
		groups = grown;
		prev = ngroups;
		r = getgrouplist(name, pw_gid, groups, &ngroups);
	} while (r < 0 && ngroups > prev);
	if (r < 0)
		goto out_free;
	while (!found && ngroups-- > 0)
		found = gid_in(groups[ngroups], set, n);
out_free:
	free(groups);
	free(name);
	return found;
}

bool config_user_allowed(const struct config *cfg, uid_t uid, gid_t gid)
{
	size_t i;

	if (!cfg)
		return false;
	if (uid == 0 || (!cfg->n_allowed_uids && !cfg->n_allowed_gids))
		return true;
	for (i = 0; i < cfg->n_allowed_uids; i++)
		if (cfg->allowed_uids[i] == uid)
			return true;
	return cfg->n_allowed_gids &&
	       user_in_groups(uid, gid, cfg->allowed_gids, cfg->n_allowed_gids);
}

bool config_user_is_admin(const struct config *cfg, uid_t uid, gid_t gid)
{
	if (!cfg)
		return false;
	if (uid == 0)
		return true;
	return cfg->admin_gid != (gid_t)-1 && user_in_groups(uid, gid, &cfg->admin_gid, 1);
}
