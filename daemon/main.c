/* SPDX-License-Identifier: MIT */
/* rdmaproxyd: the per-host RDMA transport proxy daemon. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "manager.h"
#include "base/memguard.h"

struct options {
	const char *config;
	bool foreground;
	bool check;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rdmaproxyd [OPTIONS]\n"
		"The RDMA transport proxy daemon.\n\n"
		"  -c, --config FILE   configuration file (default %s)\n"
		"  -f, --foreground    do not detach (implied under systemd)\n"
		"  -t, --check-config  parse and validate the configuration, then exit\n"
		"  -V, --version       print the version and exit\n"
		"  -h, --help          print this help and exit\n",
		RP_DEFAULT_CONFIG);
}

/* Returns -1 to continue, or an exit code. */
static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "check-config", no_argument, NULL, 't' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->config = RP_DEFAULT_CONFIG;
	while ((c = getopt_long(argc, argv, "c:ftVh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->config = optarg;
			break;
		case 'f':
			o->foreground = true;
			break;
		case 't':
			o->check = true;
			break;
		case 'V':
			printf("rdmaproxyd %s\n", PACKAGE_VERSION);
			return EXIT_SUCCESS;
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rdmaproxyd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	return -1;
}

static int check_config(const char *path)
{
	struct config *cfg = NULL;
	char err[512];

	if (config_load(path, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return EXIT_FAILURE;
	}
	printf("%s: OK (node %s, transport %s, %zu peer(s))\n", path, cfg->node_name,
	       config_transport_name(cfg->transport), cfg->n_peers);
	config_free(cfg);
	return EXIT_SUCCESS;
}

/*
 * The config path as the daemon keeps it: absolute, because a detached
 * daemon changes to / before it reads the file, and a reload re-reads it
 * later. NULL if out of memory or the working directory is unknown.
 */
static char *absolute_path(const char *path)
{
	char *cwd, *abs;

	if (path[0] == '/')
		return strdup(path);
	cwd = getcwd(NULL, 0);
	if (!cwd)
		return NULL;
	if (asprintf(&abs, "%s/%s", cwd, path) < 0)
		abs = NULL;
	free(cwd);
	return abs;
}

static bool under_systemd(void)
{
	return getenv("NOTIFY_SOCKET") || getenv("INVOCATION_ID") || getenv("LISTEN_FDS");
}

/*
 * Classic detach for hand starts: the parent exits only once the child is
 * ready (0) or has failed (its exit code), so "rdmaproxyd && client" works.
 * Returns in the child with the write end of the readiness pipe.
 */
static int detach(int *ready_fd)
{
	int p[2], status;
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &c, 1) == 1)
			_exit(EXIT_SUCCESS);
		if (waitpid(pid, &status, 0) == pid && WIFEXITED(status))
			_exit(WEXITSTATUS(status));
		_exit(EXIT_FAILURE);
	}
	close(p[0]);
	setsid();
	if (chdir("/") < 0)
		return -errno;
	*ready_fd = p[1];
	return 0;
}

static void quiet_stdio(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
}

static int run(int argc, char **argv)
{
	struct options o = { 0 };
	struct manager *m = NULL;
	char *config;
	int r, ready_fd = -1;

	r = parse_args(argc, argv, &o);
	if (r >= 0)
		return r;
	if (o.check)
		return check_config(o.config);
	/*
	 * EPIPE, not death: libuv writes to TCP sockets without MSG_NOSIGNAL (a
	 * peer that dies with writes pending), and a client's completion
	 * doorbell is a pipe it may have closed (rings.c).
	 */
	signal(SIGPIPE, SIG_IGN);
	log_init();
	config = absolute_path(o.config);
	if (!config) {
		log_err("cannot make %s an absolute path: %s", o.config, strerror(errno));
		return EXIT_FAILURE;
	}
	r = memguard_init();
	if (r < 0) {
		log_err("cannot install the SIGBUS handler: %s", strerror(-r));
		goto out_free;
	}
	if (!o.foreground && !under_systemd()) {
		r = detach(&ready_fd);
		if (r < 0) {
			log_err("cannot detach: %s", strerror(-r));
			goto out_free;
		}
	}
	r = manager_new(config, &m);
	if (r < 0)
		goto out_free;
	if (ready_fd >= 0) {
		log_use_syslog();
		quiet_stdio();
		if (write(ready_fd, "1", 1) < 0)
			log_warn("cannot signal readiness to the parent: %s", strerror(errno));
		close(ready_fd);
	}
	r = manager_run(m);
	manager_free(m);
	free(config);
	return r;

out_free:
	free(config);
	return EXIT_FAILURE;
}

int main(int argc, char **argv)
{
	return run(argc, argv);
}
