/* SPDX-License-Identifier: MIT */
/*
 * The clients' listening socket: taken from systemd when socket-activated,
 * otherwise bound by the daemon itself. No event loop here.
 */
#ifndef RP_DAEMON_LISTENER_H
#define RP_DAEMON_LISTENER_H

#include <stdbool.h>
#include <stddef.h>

struct config;

struct listener {
	int fd;
	bool activated; /* came from sd_listen_fds: never unlink it */
	bool fell_back; /* the default path was unusable; using $XDG_RUNTIME_DIR */
	char path[108]; /* the bound path (or the activated socket's path) */
};

/*
 * Open the listening socket described by @cfg into @l. On failure returns a
 * negative errno and writes a human explanation to @why.
 */
int listener_open(const struct config *cfg, struct listener *l, char *why, size_t whylen);

/*
 * A socket from systemd keeps the mode and group its socket unit gave it.
 * When @cfg names socket_mode or socket_group and the socket differs, say
 * so in @why and return true.
 */
bool listener_access_differs(const struct config *cfg, const struct listener *l, char *why,
			     size_t whylen);

/* Close the socket; unlink the path only if this daemon bound it. */
void listener_close(struct listener *l);

#endif
