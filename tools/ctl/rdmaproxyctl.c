/* SPDX-License-Identifier: MIT */
/*
 * rdmaproxyctl: query and administer rdmaproxyd over its control socket.
 * Every decision (who may do what) is the daemon's; this program asks,
 * prints the answer as a table or as JSON, and exits 0 (done), 1 (the
 * daemon refused or failed) or 2 (the daemon cannot be reached).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl-cmd.h"

static const char usage_text[] =
	"Usage: rdmaproxyctl [-s PATH] [--json] COMMAND [ARGS]\n"
	"\n"
	"Commands:\n"
	"  status              daemon, transport, device, totals\n"
	"  peers               configured peers: state, round trip, traffic, errors\n"
	"  clients             connected clients: pid, uid, command, regions, operations\n"
	"  regions             registered regions: owner, size, exports and access\n"
	"  endpoints           bound message endpoints: owner, receives posted, senders\n"
	"  ping PEER           round trips through the peer channel (-c COUNT, -i SECONDS)\n"
	"  reload              re-read the configuration (root or admin_group)\n"
	"  metrics             Prometheus text exposition of the daemon's metrics\n"
	"\n"
	"Options:\n"
	"  -s, --socket PATH   daemon socket (default: $RDMAPROXY_SOCKET, else\n"
	"                      /run/rdmaproxy/rdmaproxy.sock)\n"
	"  -j, --json          one JSON document instead of text (see rdmaproxyctl(8))\n"
	"  -c, --count N       ping: round trips (default 5)\n"
	"  -i, --interval S    ping: seconds between round trips (default 0.2)\n"
	"  -h, --help          this text\n"
	"  -V, --version       the version\n"
	"\n"
	"Exit status: 0 ok, 1 the daemon refused or failed the request, 2 the daemon\n"
	"cannot be reached, 64 bad usage.\n";

/* Why a connection could not be made, and what probably fixes it. */
static const char *unreachable_hint(int err)
{
	switch (-err) {
	case ENOENT:
		return "no socket there: is rdmaproxyd running (systemctl status rdmaproxy)? "
		       "If it listens elsewhere, set RDMAPROXY_SOCKET or pass -s PATH";
	case ECONNREFUSED:
		return "nothing is listening: the daemon is not running (stale socket); start it "
		       "with systemctl start rdmaproxy";
	case EACCES:
	case EPERM:
		return "permission denied: check the socket's mode and group (socket_mode and "
		       "socket_group in rdmaproxy.conf) and that your user is in that group";
	case ENOTSOCK:
		return "that path is not a socket: check -s PATH / RDMAPROXY_SOCKET";
	case ENAMETOOLONG:
		return "the socket path is too long for a Unix socket";
	default:
		return "is rdmaproxyd running, and is this its socket (RDMAPROXY_SOCKET, -s PATH)?";
	}
}

int ctl_fail(struct ctl *x, int err, const char *why)
{
	if (err == -RP_EDAEMON) {
		fprintf(stderr,
			"rdmaproxyctl: the daemon at %s closed the connection; did it stop "
			"or restart? (journalctl -u rdmaproxy)\n",
			x->path);
		return CTL_EXIT_UNREACHABLE;
	}
	fprintf(stderr, "rdmaproxyctl: %s\n", why && *why ? why : rp_strerror(err));
	return CTL_EXIT_FAILED;
}

static int connect_daemon(struct ctl *x, const char *path)
{
	int r = conn_socket_path(path, x->path, sizeof(x->path));

	if (r == 0)
		r = conn_open(&x->conn, x->path, NULL);
	if (r == 0)
		return 0;
	switch (-r) {
	case RP_EDENIED:
		fprintf(stderr,
			"rdmaproxyctl: the daemon at %s refused uid %d: it is not in "
			"allowed_users or allowed_groups of rdmaproxy.conf\n",
			x->path, (int)getuid());
		return CTL_EXIT_FAILED;
	case RP_ELIMIT_CONN:
	case EPROTONOSUPPORT:
	case EPROTO:
		fprintf(stderr, "rdmaproxyctl: the daemon at %s refused the connection: %s\n",
			x->path, rp_strerror(r));
		return CTL_EXIT_FAILED;
	case RP_EDAEMON:
		return ctl_fail(x, r, NULL);
	default:
		fprintf(stderr, "rdmaproxyctl: cannot reach rdmaproxyd at %s: %s\n  %s\n", x->path,
			rp_strerror(r), unreachable_hint(r));
		return CTL_EXIT_UNREACHABLE;
	}
}

/* A setting named by one RP_RESTART_* bit; a newer daemon may send bits this tool predates. */
static const char *restart_name(unsigned bit, char *buf, size_t len)
{
	const char *name = rp_restart_setting(bit);

	if (name)
		return name;
	snprintf(buf, len, "unknown setting 0x%04x (see the message)", bit);
	return buf;
}

static void reload_json(const char *text, uint16_t restart)
{
	struct ctl_json j;
	unsigned bit;
	char buf[64];

	json_begin(&j, stdout);
	json_obj(&j, NULL);
	json_bool(&j, "reloaded", true);
	json_str(&j, "message", text);
	json_arr(&j, "restart_needed");
	for (bit = 1; bit <= UINT16_MAX; bit <<= 1)
		if (restart & bit)
			json_str(&j, NULL, restart_name(bit, buf, sizeof(buf)));
	json_close(&j, ']');
	json_close(&j, '}');
	json_end(&j);
}

/* The warning on stderr that goes with CTL_EXIT_RESTART. */
static void reload_warn(uint16_t restart)
{
	const char *sep = "";
	unsigned bit;
	char buf[64];

	fprintf(stderr, "rdmaproxyctl: warning: reloaded, but these changed settings apply only "
			"when rdmaproxyd restarts: ");
	for (bit = 1; bit <= UINT16_MAX; bit <<= 1)
		if (restart & bit) {
			fprintf(stderr, "%s%s", sep, restart_name(bit, buf, sizeof(buf)));
			sep = ", ";
		}
	fprintf(stderr, "\n");
}

static int cmd_reload(struct ctl *x)
{
	char why[RP_ADMIN_TEXT_MAX] = "";
	struct rp_admin_text t = { 0 };
	uint16_t restart = 0;
	size_t n = 0;
	int r;

	r = ctl_request(&x->conn, RP_MSG_ADMIN_RELOAD, NULL, 0, &t, sizeof(t), &n, &restart, why,
			sizeof(why));
	if (r < 0)
		return ctl_fail(x, r, why);
	t.text[sizeof(t.text) - 1] = '\0';
	if (x->json)
		reload_json(t.text, restart);
	else
		printf("%s\n", t.text);
	if (!restart)
		return CTL_EXIT_OK;
	reload_warn(restart);
	return CTL_EXIT_RESTART;
}

static const struct {
	const char *name;
	int nargs;
	int (*run)(struct ctl *x);
} commands[] = {
	{ "status", 0, ctl_cmd_status },   { "peers", 0, ctl_cmd_peers },
	{ "clients", 0, ctl_cmd_clients }, { "regions", 0, ctl_cmd_regions },
	{ "ping", 1, ctl_cmd_ping },	   { "reload", 0, cmd_reload },
	{ "metrics", 0, ctl_cmd_metrics }, { "endpoints", 0, ctl_cmd_endpoints },
};

static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "rdmaproxyctl: %s%s\nTry 'rdmaproxyctl --help'.\n", what, arg);
	return CTL_EXIT_USAGE;
}

static int parse_number(const char *s, double min, double max, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= min && v <= max))
		return -1;
	*ret = v;
	return 0;
}

/* Options anywhere on the line; what is left is COMMAND [ARGS]. */
static int parse_args(int argc, char **argv, struct ctl *x, const char **path)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "count", required_argument, NULL, 'c' },
		{ "interval", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	double v;
	int o;

	while ((o = getopt_long(argc, argv, "s:jc:i:hV", opts, NULL)) != -1) {
		switch (o) {
		case 's':
			*path = optarg;
			break;
		case 'j':
			x->json = true;
			break;
		case 'c':
			if (parse_number(optarg, 1, 1000000, &v) < 0 || v != (long)v)
				return usage_error("bad --count (1..1000000): ", optarg);
			x->count = (long)v;
			break;
		case 'i':
			if (parse_number(optarg, 0, 3600, &v) < 0)
				return usage_error("bad --interval (0..3600 seconds): ", optarg);
			x->interval = v;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return -1;
		case 'V':
			printf("rdmaproxyctl %s\n", PACKAGE_VERSION);
			return -1;
		default:
			return CTL_EXIT_USAGE;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ctl x = { .count = 5, .interval = 0.2 };
	const char *path = NULL;
	size_t i;
	int r;

	r = parse_args(argc, argv, &x, &path);
	if (r)
		return r < 0 ? CTL_EXIT_OK : r;
	if (optind >= argc)
		return usage_error("no command given", "");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[optind], commands[i].name))
			break;
	if (i == sizeof(commands) / sizeof(commands[0]))
		return usage_error("unknown command: ", argv[optind]);
	if (argc - optind - 1 != commands[i].nargs)
		return usage_error(commands[i].nargs ? "this command takes one argument: "
						     : "this command takes no arguments: ",
				   commands[i].name);
	x.args = argv + optind + 1;
	x.nargs = commands[i].nargs;
	r = connect_daemon(&x, path);
	if (r)
		return r;
	r = commands[i].run(&x);
	conn_close(&x.conn);
	if (fflush(stdout) != 0 && r == CTL_EXIT_OK)
		r = CTL_EXIT_FAILED;
	return r;
}
