/* SPDX-License-Identifier: MIT */
#include "listener.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "base/config.h"

#define LISTEN_BACKLOG 128

/* Create every missing directory of @path's parent, like mkdir -p. */
static int mkdir_parents(const char *path, mode_t mode)
{
	char buf[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *p;

	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, path);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

static int fill_addr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

/*
 * A socket file left by a dead daemon refuses connections and may be
 * replaced; one that a live daemon answers on must not be stolen.
 */
static int check_stale(const char *path)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, r = 0;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	fill_addr(path, &sa);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		r = -EADDRINUSE;
	else if (errno == ECONNREFUSED || errno == ENOENT)
		r = unlink(path) < 0 && errno != ENOENT ? -errno : 0;
	else
		r = -errno;
	close(fd);
	return r;
}

static int bind_path(const char *path, const struct config *cfg)
{
	struct sockaddr_un sa;
	int fd, r;

	r = fill_addr(path, &sa);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto out_close;
	if (chmod(path, cfg->socket_mode) < 0)
		goto out_unlink;
	if (cfg->socket_group != (gid_t)-1 && chown(path, (uid_t)-1, cfg->socket_group) < 0)
		goto out_unlink;
	if (listen(fd, LISTEN_BACKLOG) < 0)
		goto out_unlink;
	return fd;

out_unlink:
	r = -errno;
	unlink(path);
	close(fd);
	return r;
out_close:
	r = -errno;
	close(fd);
	return r;
}

static int open_path(const char *path, const struct config *cfg, struct listener *l, char *why,
		     size_t whylen)
{
	int r;

	r = mkdir_parents(path, 0755);
	if (r < 0) {
		snprintf(why, whylen, "cannot create the directory of %s: %s", path, strerror(-r));
		return r;
	}
	r = check_stale(path);
	if (r == -EADDRINUSE) {
		snprintf(why, whylen, "another rdmaproxyd is answering on %s", path);
		return r;
	}
	if (r < 0) {
		snprintf(why, whylen, "%s exists and cannot be replaced: %s", path,
			 r == -EEXIST ? "not a socket" : strerror(-r));
		return r;
	}
	r = bind_path(path, cfg);
	if (r < 0) {
		snprintf(why, whylen, "cannot listen on %s: %s", path, strerror(-r));
		return r;
	}
	l->fd = r;
	snprintf(l->path, sizeof(l->path), "%s", path);
	return 0;
}

static int from_systemd(struct listener *l, char *why, size_t whylen)
{
	int n = sd_listen_fds(1), i;

	for (i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		struct sockaddr_un sa;
		socklen_t salen = sizeof(sa);

		if (sd_is_socket_unix(fd, SOCK_SEQPACKET, 1, NULL, 0) <= 0)
			continue;
		l->fd = fd;
		l->activated = true;
		if (getsockname(fd, (struct sockaddr *)&sa, &salen) == 0 &&
		    salen > sizeof(sa_family_t))
			snprintf(l->path, sizeof(l->path), "%s", sa.sun_path);
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		return 1;
	}
	if (n > 0) {
		snprintf(why, whylen,
			 "systemd passed %d socket(s) but none is a listening SOCK_SEQPACKET Unix "
			 "socket",
			 n);
		return -EINVAL;
	}
	return 0;
}

static bool fallback_allowed(const struct config *cfg, int r)
{
	return !cfg->socket_path_set && geteuid() != 0 &&
	       (r == -EACCES || r == -EPERM || r == -EROFS) && getenv("XDG_RUNTIME_DIR");
}

int listener_open(const struct config *cfg, struct listener *l, char *why, size_t whylen)
{
	char alt[sizeof(l->path)];
	int r;

	memset(l, 0, sizeof(*l));
	l->fd = -1;
	r = from_systemd(l, why, whylen);
	if (r != 0)
		return r < 0 ? r : 0;
	r = open_path(cfg->socket_path, cfg, l, why, whylen);
	if (r >= 0 || !fallback_allowed(cfg, r))
		return r;
	if (snprintf(alt, sizeof(alt), "%s/rdmaproxy/rdmaproxy.sock", getenv("XDG_RUNTIME_DIR")) >=
	    (int)sizeof(alt)) {
		snprintf(why, whylen, "XDG_RUNTIME_DIR is too long for a socket path");
		return -ENAMETOOLONG;
	}
	r = open_path(alt, cfg, l, why, whylen);
	if (r == 0)
		l->fell_back = true;
	return r;
}

bool listener_access_differs(const struct config *cfg, const struct listener *l, char *why,
			     size_t whylen)
{
	struct stat st;

	if (!l->activated || !cfg->socket_access_set || !l->path[0] || stat(l->path, &st) < 0)
		return false;
	if ((st.st_mode & 07777) == cfg->socket_mode &&
	    (cfg->socket_group == (gid_t)-1 || st.st_gid == cfg->socket_group))
		return false;
	snprintf(why, whylen,
		 "socket_mode and socket_group do not apply to the socket systemd passed: %s has "
		 "mode %04o and group %u; set SocketMode= and SocketGroup= in its socket unit "
		 "(e.g. a drop-in for rdmaproxy.socket)",
		 l->path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_gid);
	return true;
}

void listener_close(struct listener *l)
{
	if (l->fd < 0)
		return;
	close(l->fd);
	if (!l->activated && l->path[0])
		unlink(l->path);
	l->fd = -1;
}
