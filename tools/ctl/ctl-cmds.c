/* SPDX-License-Identifier: MIT */
/* rdmaproxyctl status, ping and metrics. */
#include "ctl-cmd.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S(field, buf) ctl_str((field), sizeof(field), (buf), sizeof(buf))

/* ---- status ---- */

static const char *transport_name(uint32_t t)
{
	return t == RP_WIRE_TRANSPORT_VERBS ? "verbs"
	       : t == RP_WIRE_TRANSPORT_TCP ? "tcp"
					    : "unknown";
}

static void status_json(const struct rp_status_reply *st, unsigned up, unsigned total)
{
	char b[RP_NAME_MAX + 1], inc[24];
	struct ctl_json j;

	snprintf(inc, sizeof(inc), "%016" PRIx64, st->incarnation);
	json_begin(&j, stdout);
	json_obj(&j, NULL);
	json_str(&j, "version", S(st->version, b));
	json_str(&j, "node", S(st->node_name, b));
	json_u64(&j, "uptime_seconds", st->uptime_sec);
	json_str(&j, "incarnation", inc);
	json_str(&j, "transport", transport_name(st->transport));
	json_arr(&j, "devices");
	if (st->device[0]) {
		json_obj(&j, NULL);
		json_str(&j, "name", S(st->device, b));
		json_arr(&j, "ports");
		json_obj(&j, NULL);
		json_u64(&j, "port", st->port);
		json_str(&j, "state", S(st->port_state, b));
		json_u64(&j, "active_mtu", st->active_mtu);
		json_str(&j, "gid", st->gid[0] ? S(st->gid, b) : NULL);
		json_close(&j, '}');
		json_close(&j, ']');
		json_close(&j, '}');
	}
	json_close(&j, ']');
	json_obj(&j, "totals");
	json_u64(&j, "clients", st->clients);
	json_u64(&j, "regions", st->regions);
	json_u64(&j, "registered_bytes", st->registered_bytes);
	json_u64(&j, "peers", total);
	json_u64(&j, "peers_up", up);
	json_close(&j, '}');
	json_close(&j, '}');
	json_end(&j);
}

static void status_human(const struct rp_status_reply *st, unsigned up, unsigned total)
{
	char b[RP_NAME_MAX + 1], v[sizeof(st->version) + 1], d[32], sz[32];

	printf("rdmaproxyd %s on node %s, up %s\n", S(st->version, v), S(st->node_name, b),
	       ctl_duration(st->uptime_sec, d, sizeof(d)));
	printf("%-12s %s\n", "transport", transport_name(st->transport));
	if (st->device[0]) {
		printf("%-12s %s port %" PRIu32 ": %s, MTU %" PRIu32, "device", S(st->device, b),
		       st->port, S(st->port_state, d), st->active_mtu);
		printf(", GID %s\n", st->gid[0] ? S(st->gid, b) : "-");
	} else {
		printf("%-12s %s\n", "device", "none (tcp transport)");
	}
	printf("%-12s %" PRIu32 "\n", "clients", st->clients);
	printf("%-12s %" PRIu32 ", %s registered\n", "regions", st->regions,
	       ctl_bytes(st->registered_bytes, sz, sizeof(sz)));
	printf("%-12s %u/%u up\n", "peers", up, total);
	printf("%-12s %016" PRIx64 "\n", "incarnation", st->incarnation);
}

int ctl_cmd_status(struct ctl *x)
{
	struct rp_status_reply st;
	unsigned up, total;
	int r;

	r = conn_request(&x->conn, RP_MSG_STATUS, NULL, 0, -1, &st, sizeof(st));
	if (r < 0)
		return ctl_fail(x, r, NULL);
	/* The peers list is the authority on peer states. */
	if (ctl_peer_counts(x, &up, &total) < 0) {
		up = st.peers_up;
		total = st.peers_total;
	}
	if (x->json)
		status_json(&st, up, total);
	else
		status_human(&st, up, total);
	return CTL_EXIT_OK;
}

/* ---- ping ---- */

struct ping_stats {
	long sent, received;
	double min, max, sum, sum2; /* ms */
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms)
{
	struct timespec ts = { .tv_sec = (time_t)(ms / 1e3) };

	ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1e3) * 1e6);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* One round trip. 0 and @ms / @rep, or the daemon's refusal (why in @why). */
static int ping_once(struct ctl *x, const char *peer, uint32_t seq, double *ms,
		     struct rp_admin_ping_reply *rep, char *why, size_t whylen)
{
	struct rp_admin_ping_req req = { .seq = seq };
	double t0 = now_ms();
	size_t n = 0;
	int r;

	snprintf(req.peer, sizeof(req.peer), "%s", peer);
	why[0] = '\0';
	r = ctl_request(&x->conn, RP_MSG_ADMIN_PING, &req, sizeof(req), rep, sizeof(*rep), &n, NULL,
			why, whylen);
	*ms = now_ms() - t0;
	if (r == 0 && (n != sizeof(*rep) || rep->seq != seq))
		r = -EPROTO;
	return r;
}

static void ping_account(struct ping_stats *ps, double ms)
{
	if (!ps->received || ms < ps->min)
		ps->min = ms;
	if (!ps->received || ms > ps->max)
		ps->max = ms;
	ps->received++;
	ps->sum += ms;
	ps->sum2 += ms * ms;
}

static void ping_reply_json(struct ctl_json *j, uint32_t seq, int r, double ms,
			    const struct rp_admin_ping_reply *rep, const char *why)
{
	json_obj(j, NULL);
	json_u64(j, "seq", seq);
	if (r == 0) {
		json_num(j, "time_ms", ms);
		if (rep->rtt_us)
			json_num(j, "peer_rtt_ms", (double)rep->rtt_us / 1000);
		else
			json_null(j, "peer_rtt_ms");
		json_null(j, "error");
	} else {
		json_null(j, "time_ms");
		json_null(j, "peer_rtt_ms");
		json_str(j, "error", why);
	}
	json_close(j, '}');
}

static void ping_reply_human(const char *peer, uint32_t seq, int r, double ms,
			     const struct rp_admin_ping_reply *rep, const char *why)
{
	if (r < 0)
		printf("from %s: seq=%" PRIu32 " %s\n", peer, seq, why);
	else if (rep->rtt_us)
		printf("reply from %s: seq=%" PRIu32 " time=%.3f ms (peer channel %.3f ms)\n", peer,
		       seq, ms, (double)rep->rtt_us / 1000);
	else
		printf("reply from %s: seq=%" PRIu32 " time=%.3f ms (this node)\n", peer, seq, ms);
	fflush(stdout);
}

static void ping_summary_json(struct ctl_json *j, const struct ping_stats *ps, double total,
			      double mdev)
{
	json_u64(j, "sent", (uint64_t)ps->sent);
	json_u64(j, "received", (uint64_t)ps->received);
	json_num(j, "loss_percent", 100.0 * (double)(ps->sent - ps->received) / (double)ps->sent);
	json_num(j, "time_ms", total);
	if (ps->received) {
		json_obj(j, "rtt_ms");
		json_num(j, "min", ps->min);
		json_num(j, "avg", ps->sum / (double)ps->received);
		json_num(j, "max", ps->max);
		json_num(j, "mdev", mdev);
		json_close(j, '}');
	} else {
		json_null(j, "rtt_ms");
	}
}

static void ping_summary(struct ctl *x, struct ctl_json *j, const char *peer,
			 const struct ping_stats *ps, double total)
{
	double avg = ps->received ? ps->sum / (double)ps->received : 0;
	double var = ps->received ? ps->sum2 / (double)ps->received - avg * avg : 0;
	double mdev = sqrt(var > 0 ? var : 0);

	if (x->json) {
		json_close(j, ']');
		ping_summary_json(j, ps, total, mdev);
		json_close(j, '}');
		json_end(j);
		return;
	}
	printf("--- %s ping statistics ---\n", peer);
	printf("%ld sent, %ld received, %.0f%% loss, time %.0f ms\n", ps->sent, ps->received,
	       100.0 * (double)(ps->sent - ps->received) / (double)ps->sent, total);
	if (ps->received)
		printf("rtt min/avg/max/mdev = %.3f/%.3f/%.3f/%.3f ms\n", ps->min, avg, ps->max,
		       mdev);
}

/* Errors that no later round trip can cure: stop at once. */
static bool ping_fatal(int r)
{
	return r == -RP_EPEERUNKNOWN || r == -EINVAL || r == -EPERM || r == -RP_EDAEMON ||
	       r == -EPROTO;
}

int ctl_cmd_ping(struct ctl *x)
{
	char why[RP_ADMIN_TEXT_MAX];
	struct ping_stats ps = { 0 };
	struct rp_admin_ping_reply rep;
	struct ctl_json j;
	const char *peer = x->args[0];
	double t0 = now_ms(), ms;
	int r = 0;

	if (x->json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_str(&j, "peer", peer);
		json_arr(&j, "replies");
	} else {
		printf("PING %s through the peer channel, %ld round trips\n", peer, x->count);
	}
	for (ps.sent = 0; ps.sent < x->count;) {
		if (ps.sent)
			sleep_ms(x->interval * 1e3);
		r = ping_once(x, peer, (uint32_t)++ps.sent, &ms, &rep, why, sizeof(why));
		if (r == 0)
			ping_account(&ps, ms);
		if (x->json)
			ping_reply_json(&j, (uint32_t)ps.sent, r, ms, &rep, why);
		else if (r == 0 || !ping_fatal(r))
			ping_reply_human(peer, (uint32_t)ps.sent, r, ms, &rep, why);
		if (r < 0 && ping_fatal(r))
			break;
	}
	if (r < 0 && ping_fatal(r) && !x->json)
		return ctl_fail(x, r, why);
	ping_summary(x, &j, peer, &ps, now_ms() - t0);
	if (r < 0 && ping_fatal(r))
		return ctl_fail(x, r, why);
	return ps.received ? CTL_EXIT_OK : CTL_EXIT_FAILED;
}

/* ---- metrics ---- */

/* Parse `name{k="v",...} value` in place; labels are unescaped into @lab. */
struct sample {
	char *name, *value;
	char *keys[16], *vals[16];
	int n;
};

static char *parse_label_value(char *p, char **ret)
{
	char *o = p;

	*ret = p;
	for (; *p && *p != '"'; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			*o++ = *p == 'n' ? '\n' : *p;
		} else {
			*o++ = *p;
		}
	}
	if (*p != '"')
		return NULL;
	*o = '\0';
	return p + 1;
}

static int parse_sample(char *line, struct sample *s)
{
	char *p = line + strcspn(line, "{ ");

	s->name = line;
	s->n = 0;
	if (*p == '{') {
		*p++ = '\0';
		while (*p && *p != '}') {
			if (s->n == 16)
				return -1;
			s->keys[s->n] = p;
			p += strcspn(p, "=");
			if (p[0] != '=' || p[1] != '"')
				return -1;
			*p = '\0';
			p = parse_label_value(p + 2, &s->vals[s->n++]);
			if (!p)
				return -1;
			p += *p == ',';
		}
		if (*p != '}')
			return -1;
		*p++ = '\0';
	}
	if (*p != ' ')
		return -1;
	*p++ = '\0';
	s->value = p;
	p[strcspn(p, " ")] = '\0'; /* drop a timestamp */
	return 0;
}

struct family {
	bool open;
	char name[128];
};

static void family_open(struct ctl_json *j, struct family *f, const char *name, const char *type,
			const char *help)
{
	if (f->open) {
		json_close(j, ']');
		json_close(j, '}');
	}
	f->open = true;
	snprintf(f->name, sizeof(f->name), "%s", name);
	json_obj(j, NULL);
	json_str(j, "name", name);
	json_str(j, "type", type);
	json_str(j, "help", help);
	json_arr(j, "samples");
}

static void metrics_line(struct ctl_json *j, struct family *f, char *line, const char **help)
{
	struct sample s;
	int i;

	if (!strncmp(line, "# HELP ", 7)) {
		*help = line + 7 + strcspn(line + 7, " ");
		*help += **help == ' ';
		return;
	}
	if (!strncmp(line, "# TYPE ", 7)) {
		char *name = line + 7, *type = name + strcspn(name, " ");

		if (*type)
			*type++ = '\0';
		family_open(j, f, name, type, *help);
		*help = "";
		return;
	}
	if (line[0] == '#' || !line[0] || parse_sample(line, &s) < 0)
		return;
	if (!f->open || strcmp(f->name, s.name))
		family_open(j, f, s.name, "untyped", "");
	json_obj(j, NULL);
	json_obj(j, "labels");
	for (i = 0; i < s.n; i++)
		json_str(j, s.keys[i], s.vals[i]);
	json_close(j, '}');
	json_number_text(j, "value", s.value);
	json_close(j, '}');
}

static void metrics_json(char *text)
{
	struct family f = { 0 };
	const char *help = "";
	struct ctl_json j;
	char *line, *save = NULL;

	json_begin(&j, stdout);
	json_obj(&j, NULL);
	json_arr(&j, "metrics");
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		metrics_line(&j, &f, line, &help);
	if (f.open) {
		json_close(&j, ']');
		json_close(&j, '}');
	}
	json_close(&j, ']');
	json_close(&j, '}');
	json_end(&j);
}

int ctl_cmd_metrics(struct ctl *x)
{
	char why[RP_ADMIN_TEXT_MAX] = "", *text;
	size_t n;
	int r;

	r = ctl_metrics(&x->conn, &text, &n, why, sizeof(why));
	if (r < 0)
		return ctl_fail(x, r, why);
	if (x->json)
		metrics_json(text);
	else
		fwrite(text, 1, n, stdout);
	free(text);
	return CTL_EXIT_OK;
}
