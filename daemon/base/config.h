/* SPDX-License-Identifier: MIT */
/*
 * The daemon's configuration: parsed from one ini file (inih), validated in
 * full before anything uses it, immutable afterwards. A reload parses a new
 * struct config and swaps it in only if it is valid.
 */
#ifndef RP_DAEMON_CONFIG_H
#define RP_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RP_DEFAULT_CONFIG SYSCONFDIR "/rdmaproxy/rdmaproxy.conf"
#define RP_DEFAULT_SOCKET "/run/rdmaproxy/rdmaproxy.sock"
#define RP_DEFAULT_PEER_PORT 7471
#define RP_PEER_KEY_MIN 16
#define RP_PEER_KEY_MAX 256

enum rp_transport_kind {
	RP_TRANSPORT_AUTO = 0,
	RP_TRANSPORT_VERBS,
	RP_TRANSPORT_TCP,
};

/* Which exports of this node a peer's clients may open besides those naming it. */
enum peer_exports {
	PEER_EXPORTS_NAMED = 0, /* none (the default): only exports that name it or every peer */
	PEER_EXPORTS_ALL,	/* every export */
};

struct peer_conf {
	char *name; /* from [peer "NAME"] */
	char *host; /* address = HOST:PORT (HOST may be [v6]) */
	uint16_t port;
	enum rp_transport_kind transport; /* AUTO means "as [daemon] transport" */
	char *key_file;
	uint8_t key[RP_PEER_KEY_MAX]; /* the file's bytes, trailing newline trimmed */
	size_t key_len;
	/* Access (read from the running config, never from a copy of this struct). */
	enum peer_exports exports;
	uid_t *export_uids; /* also exports owned by these users... */
	size_t n_export_uids;
	gid_t *export_gids; /* ...or by users in these groups */
	size_t n_export_gids;
	unsigned line;				/* line of the section header, for messages */
	unsigned exports_line, export_ids_line; /* where they were set (0: not), for messages */
};

/*
 * [names "PREFIX"]: export and endpoint names starting with PREFIX may be
 * published (exported, bound) only by clients of these users or groups,
 * and of root. The longest matching prefix decides.
 */
struct name_conf {
	char *prefix;
	uid_t *uids;
	size_t n_uids;
	gid_t *gids;
	size_t n_gids;
	unsigned line; /* of the section header, for messages */
};

/* nice = keep: leave the daemon's priority as it was started (systemd's Nice=). */
#define CONFIG_NICE_KEEP 100

struct config {
	char *path;

	/* [daemon] */
	char *node_name;	/* default: gethostname() */
	char *socket_path;	/* default RP_DEFAULT_SOCKET */
	bool socket_path_set;	/* true when the file named a socket explicitly */
	mode_t socket_mode;	/* default 0666 */
	gid_t socket_group;	/* (gid_t)-1: leave as created */
	bool socket_access_set; /* the file named socket_mode or socket_group */
	enum rp_transport_kind transport;
	char *listen_host;    /* default "0.0.0.0" */
	uint16_t listen_port; /* default RP_DEFAULT_PEER_PORT; 0 disables the listener */
	int log_level;	      /* syslog priority, default LOG_INFO */
	uid_t *allowed_uids;  /* empty lists together mean "every local user" */
	size_t n_allowed_uids;
	gid_t *allowed_gids;
	size_t n_allowed_gids;
	gid_t admin_gid; /* (gid_t)-1: only root is admin */
	int nice;	 /* of the engine's thread; default -10; CONFIG_NICE_KEEP: as started */

	/* [verbs] */
	char *device;	      /* NULL: first device with an active port */
	unsigned port_num;    /* 0: first active port */
	int gid_index;	      /* -1: chosen by rdma_cm from the address */
	uint32_t cq_depth;    /* default 8192 */
	uint32_t sq_depth;    /* default 512 */
	uint32_t rq_depth;    /* default 512 */
	uint32_t ack_timeout; /* local ACK timeout exponent: 4.096 us * 2^n; default 16 */
	uint32_t retry_count; /* transport retries before a QP fails; default 7 */
	uint32_t local_qps;   /* loopback QPs for local transfers; default 4 */
	uint32_t inline_size; /* payload bytes a WR may carry inline; default 512, 0: none */

	/* [limits], all per uid */
	uint64_t max_registered_bytes; /* default 4 GiB */
	uint32_t max_regions;	       /* default 1024 */
	uint32_t max_inflight;	       /* default 4096 */
	uint32_t max_connections;      /* default 64 */

	/* [peers]: connections to the peer port that have not authenticated yet */
	uint32_t max_unauthenticated;		  /* in all; default 64 */
	uint32_t max_unauthenticated_per_address; /* from one address; default 8 */
	uint32_t max_failed_handshakes; /* then the address is refused; default 10, 0: never */
	uint32_t refusal_seconds;	/* for this long; default 60 */

	struct peer_conf *peers;
	size_t n_peers;

	struct name_conf *names; /* [names "PREFIX"] */
	size_t n_names;
};

/*
 * Parse and validate @path. On success *ret is a new config and 0 is
 * returned. On failure a negative errno is returned, *ret is untouched, and
 * @err holds one line "FILE:LINE: message" (or "FILE: message" when no line
 * applies, e.g. the file cannot be opened).
 */
int config_load(const char *path, struct config **ret, char *err, size_t errlen);

/* Same, from a string (unit tests and fuzzing); @name stands for FILE. */
int config_load_string(const char *name, const char *text, struct config **ret, char *err,
		       size_t errlen);

struct config *config_free(struct config *cfg);

/* "4096", "64K", "16M", "4G", "1T" (binary units) -> bytes; -EINVAL / -ERANGE. */
int config_parse_size(const char *s, uint64_t *ret);

/* Find a peer by name, or NULL. */
const struct peer_conf *config_peer(const struct config *cfg, const char *name);

const char *config_transport_name(enum rp_transport_kind t);

/* The [names] reservation @name falls under (its longest prefix), or NULL. */
const struct name_conf *config_name_rule(const struct config *cfg, const char *name);

/* Whether @uid (with primary @gid and supplementary groups) may connect / administer. */
bool config_user_allowed(const struct config *cfg, uid_t uid, gid_t gid);
bool config_user_is_admin(const struct config *cfg, uid_t uid, gid_t gid);

#endif
