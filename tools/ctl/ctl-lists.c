/* SPDX-License-Identifier: MIT */
/* rdmaproxyctl clients, regions and peers: fetch every page, print a table or JSON. */
#include "ctl-cmd.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S(field, buf) ctl_str((field), sizeof(field), (buf), sizeof(buf))

static int fetch(struct ctl *x, uint16_t type, size_t recsize, void **v, size_t *n)
{
	char why[RP_ADMIN_TEXT_MAX] = "";
	int r = ctl_list(&x->conn, type, recsize, v, n, why, sizeof(why));

	return r < 0 ? ctl_fail(x, r, why) : 0;
}

static void client_json(struct ctl_json *j, const struct rp_admin_client *c)
{
	char comm[sizeof(c->comm) + 1];

	json_obj(j, NULL);
	json_u64(j, "id", c->id);
	json_i64(j, "pid", c->pid);
	json_u64(j, "uid", c->uid);
	json_u64(j, "gid", c->gid);
	json_str(j, "command", S(c->comm, comm));
	json_u64(j, "regions", c->regions);
	json_u64(j, "registered_bytes", c->registered_bytes);
	json_u64(j, "exports", c->exports);
	json_u64(j, "endpoints", c->endpoints);
	json_u64(j, "operations", c->ops);
	json_u64(j, "errors", c->errors);
	json_u64(j, "bytes_moved", c->bytes);
	json_u64(j, "inflight", c->inflight);
	json_close(j, '}');
}

static void client_row(struct ctl_table *t, const struct rp_admin_client *c)
{
	char id[16], pid[16], uid[16], comm[sizeof(c->comm) + 1], reg[16], bytes[24], exp[16];
	char ops[16], err[16], moved[24], inf[16];
	const char *cells[] = { id, pid, uid, comm, reg, bytes, exp, ops, err, moved, inf };

	snprintf(id, sizeof(id), "%" PRIu32, c->id);
	snprintf(pid, sizeof(pid), "%" PRId32, c->pid);
	snprintf(uid, sizeof(uid), "%" PRIu32, c->uid);
	S(c->comm, comm);
	snprintf(reg, sizeof(reg), "%" PRIu32, c->regions);
	ctl_bytes(c->registered_bytes, bytes, sizeof(bytes));
	snprintf(exp, sizeof(exp), "%" PRIu32, c->exports);
	ctl_count(c->ops, ops, sizeof(ops));
	ctl_count(c->errors, err, sizeof(err));
	ctl_bytes(c->bytes, moved, sizeof(moved));
	snprintf(inf, sizeof(inf), "%" PRIu32, c->inflight);
	ctl_table_row(t, cells);
}

int ctl_cmd_clients(struct ctl *x)
{
	static const char *const spec[] = { ">ID",	">PID",	       ">UID",	   "~COMMAND",
					    ">REGIONS", ">REGISTERED", ">EXPORTS", ">OPS",
					    ">ERRORS",	">MOVED",      ">INFLIGHT" };
	struct rp_admin_client *v;
	struct ctl_table t;
	struct ctl_json j;
	size_t n, i;
	int r;

	r = fetch(x, RP_MSG_ADMIN_CLIENTS, sizeof(*v), (void **)&v, &n);
	if (r)
		return r;
	if (x->json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_arr(&j, "clients");
		for (i = 0; i < n; i++)
			client_json(&j, &v[i]);
		json_close(&j, ']');
		json_close(&j, '}');
		json_end(&j);
	} else {
		ctl_table_init(&t, 11, spec);
		for (i = 0; i < n; i++)
			client_row(&t, &v[i]);
		ctl_table_print(&t, stdout);
	}
	free(v);
	return CTL_EXIT_OK;
}

static const char *access_str(uint32_t a)
{
	switch (a & (RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE)) {
	case RP_ACCESS_REMOTE_READ:
		return "read";
	case RP_ACCESS_REMOTE_WRITE:
		return "write";
	case RP_ACCESS_REMOTE_READ | RP_ACCESS_REMOTE_WRITE:
		return "read,write";
	default:
		return "";
	}
}

/* RP_OPEN_* of a record; a daemon before access control let everybody open everything. */
static uint32_t open_bits(const struct ctl *x, const struct rp_admin_region *r)
{
	if (x->conn.hello.version < RP_PROTO_VERSION_ACL)
		return RP_OPEN_ANY_USER | RP_OPEN_PEERS | RP_OPEN_ALL_PEERS;
	return r->open_to;
}

/* Who may open an export besides its owner and root: "owner" when nobody. */
static const char *open_str(uint32_t o, char *buf, size_t len)
{
	const char *user = o & RP_OPEN_ANY_USER ? "anyone" : o & RP_OPEN_USERS ? "users" : NULL;
	const char *peer = o & RP_OPEN_ALL_PEERS ? "all-peers" : o & RP_OPEN_PEERS ? "peers" : NULL;

	snprintf(buf, len, "%s%s%s", user ? user : "", user && peer ? "," : "", peer ? peer : "");
	return *buf ? buf : "owner";
}

static void open_json(struct ctl_json *j, uint32_t o)
{
	json_arr(j, "open_to");
	if (o & RP_OPEN_USERS)
		json_str(j, NULL, "users");
	if (o & RP_OPEN_ANY_USER)
		json_str(j, NULL, "anyone");
	if (o & RP_OPEN_PEERS)
		json_str(j, NULL, "peers");
	if (o & RP_OPEN_ALL_PEERS)
		json_str(j, NULL, "all-peers");
	json_close(j, ']');
}

static bool same_region(const struct rp_admin_region *a, const struct rp_admin_region *b)
{
	return a->client == b->client && a->id == b->id;
}

/* One JSON object per region, its export records folded into "exports". */
static size_t region_json(const struct ctl *x, struct ctl_json *j, const struct rp_admin_region *v,
			  size_t n)
{
	char comm[sizeof(v->comm) + 1], name[RP_NAME_MAX + 1];
	size_t k;

	json_obj(j, NULL);
	json_u64(j, "client", v->client);
	json_i64(j, "pid", v->pid);
	json_u64(j, "uid", v->uid);
	json_str(j, "command", S(v->comm, comm));
	json_u64(j, "region", v->id);
	json_u64(j, "bytes", v->len);
	json_u64(j, "busy", v->busy);
	json_arr(j, "exports");
	for (k = 0; k < n && same_region(&v[0], &v[k]); k++) {
		if (!v[k].n_exports)
			continue;
		json_obj(j, NULL);
		json_str(j, "name", S(v[k].export_name, name));
		json_bool(j, "remote_read", v[k].access & RP_ACCESS_REMOTE_READ);
		json_bool(j, "remote_write", v[k].access & RP_ACCESS_REMOTE_WRITE);
		open_json(j, open_bits(x, &v[k]));
		json_close(j, '}');
	}
	json_close(j, ']');
	json_close(j, '}');
	return k ? k : 1;
}

static void region_row(const struct ctl *x, struct ctl_table *t, const struct rp_admin_region *r,
		       bool repeat)
{
	char cl[16], pid[16], comm[sizeof(r->comm) + 1], id[16], size[24], busy[16];
	char name[RP_NAME_MAX + 1], open[32];
	const char *cells[] = { cl, pid, comm, id, size, busy, name, access_str(r->access), "" };
	int c;

	if (r->n_exports)
		cells[8] = open_str(open_bits(x, r), open, sizeof(open));

	snprintf(cl, sizeof(cl), "%" PRIu32, r->client);
	snprintf(pid, sizeof(pid), "%" PRId32, r->pid);
	S(r->comm, comm);
	snprintf(id, sizeof(id), "%" PRIu32, r->id);
	ctl_bytes(r->len, size, sizeof(size));
	snprintf(busy, sizeof(busy), "%" PRIu32, r->busy);
	if (r->n_exports)
		S(r->export_name, name);
	else
		snprintf(name, sizeof(name), "-");
	/* Further exports of the same region: only the export columns. */
	for (c = 0; repeat && c < 6; c++)
		cells[c] = "";
	ctl_table_row(t, cells);
}

int ctl_cmd_regions(struct ctl *x)
{
	static const char *const spec[] = { ">CLIENT", ">PID",	  "~COMMAND", ">REGION", ">SIZE",
					    ">BUSY",   "~EXPORT", "ACCESS",   "OPEN-TO" };
	struct rp_admin_region *v;
	struct ctl_table t;
	struct ctl_json j;
	size_t n, i;
	int r;

	r = fetch(x, RP_MSG_ADMIN_REGIONS, sizeof(*v), (void **)&v, &n);
	if (r)
		return r;
	if (x->json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_arr(&j, "regions");
		for (i = 0; i < n;)
			i += region_json(x, &j, &v[i], n - i);
		json_close(&j, ']');
		json_close(&j, '}');
		json_end(&j);
	} else {
		ctl_table_init(&t, 9, spec);
		for (i = 0; i < n; i++)
			region_row(x, &t, &v[i], i && same_region(&v[i - 1], &v[i]));
		ctl_table_print(&t, stdout);
	}
	free(v);
	return CTL_EXIT_OK;
}

int ctl_cmd_endpoints(struct ctl *x)
{
	static const char *const spec[] = { ">CLIENT",	 ">PID",    ">UID",   "~COMMAND",
					    "~ENDPOINT", ">POSTED", "SENDERS" };
	char cl[16], pid[16], uid[16], comm[17], name[RP_NAME_MAX + 1], posted[16], open[32];
	struct rp_admin_endpoint *v;
	struct ctl_table t;
	struct ctl_json j;
	size_t n, i;
	int r;

	if (x->conn.hello.version < RP_PROTO_VERSION_EP_ACL) {
		fprintf(stderr, "rdmaproxyctl: this daemon is too old to list endpoints\n");
		return CTL_EXIT_FAILED;
	}
	r = fetch(x, RP_MSG_ADMIN_ENDPOINTS, sizeof(*v), (void **)&v, &n);
	if (r)
		return r;
	if (x->json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_arr(&j, "endpoints");
		for (i = 0; i < n; i++) {
			json_obj(&j, NULL);
			json_u64(&j, "client", v[i].client);
			json_i64(&j, "pid", v[i].pid);
			json_u64(&j, "uid", v[i].uid);
			json_str(&j, "command", S(v[i].comm, comm));
			json_u64(&j, "endpoint", v[i].id);
			json_str(&j, "name", S(v[i].name, name));
			json_u64(&j, "posted", v[i].posted);
			open_json(&j, v[i].open_to);
			json_close(&j, '}');
		}
		json_close(&j, ']');
		json_close(&j, '}');
		json_end(&j);
	} else {
		ctl_table_init(&t, 7, spec);
		for (i = 0; i < n; i++) {
			const char *row[] = { cl,
					      pid,
					      uid,
					      comm,
					      name,
					      posted,
					      open_str(v[i].open_to, open, sizeof(open)) };

			snprintf(cl, sizeof(cl), "%" PRIu32, v[i].client);
			snprintf(pid, sizeof(pid), "%" PRId32, v[i].pid);
			snprintf(uid, sizeof(uid), "%" PRIu32, v[i].uid);
			S(v[i].comm, comm);
			S(v[i].name, name);
			snprintf(posted, sizeof(posted), "%" PRIu32, v[i].posted);
			ctl_table_row(&t, row);
		}
		ctl_table_print(&t, stdout);
	}
	free(v);
	return CTL_EXIT_OK;
}

static void peer_json(struct ctl_json *j, const struct rp_admin_peer *p)
{
	char b[RP_ADMIN_TEXT_MAX];

	json_obj(j, NULL);
	json_str(j, "name", S(p->name, b));
	json_str(j, "address", S(p->address, b));
	json_str(j, "transport", S(p->transport, b));
	json_str(j, "state", S(p->state, b));
	if (p->since_ms > 0)
		json_num(j, "since", (double)p->since_ms / 1000);
	else
		json_null(j, "since");
	json_str(j, "direction", p->direction[0] ? S(p->direction, b) : NULL);
	if (p->rtt_us >= 0)
		json_num(j, "rtt_ms", (double)p->rtt_us / 1000);
	else
		json_null(j, "rtt_ms");
	json_u64(j, "bytes_out", p->tx_bytes);
	json_u64(j, "bytes_in", p->rx_bytes);
	json_u64(j, "operations_out", p->tx_ops);
	json_u64(j, "operations_in", p->rx_ops);
	json_u64(j, "errors", p->errors);
	json_u64(j, "reconnects", p->reconnects);
	json_str(j, "last_error", p->last_error[0] ? S(p->last_error, b) : NULL);
	json_close(j, '}');
}

static void peer_row(struct ctl_table *t, const struct rp_admin_peer *p)
{
	char name[RP_NAME_MAX + 1], addr[sizeof(p->address) + 1], tp[17], st[17], since[24];
	char rtt[24], out[24], in[24], ops[40], err[16], a[16], b[16];
	const char *cells[] = { name, addr, tp, st, since, rtt, out, in, ops, err };
	struct timespec ts;
	int64_t now_ms;

	S(p->name, name);
	S(p->address, addr);
	S(p->transport, tp);
	S(p->state, st);
	clock_gettime(CLOCK_REALTIME, &ts);
	now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (p->since_ms > 0)
		ctl_duration(now_ms > p->since_ms ? (uint64_t)(now_ms - p->since_ms) / 1000 : 0,
			     since, sizeof(since));
	else
		snprintf(since, sizeof(since), "-");
	if (p->rtt_us >= 0)
		snprintf(rtt, sizeof(rtt), "%.3f ms", (double)p->rtt_us / 1000);
	else
		snprintf(rtt, sizeof(rtt), "-");
	ctl_bytes(p->tx_bytes, out, sizeof(out));
	ctl_bytes(p->rx_bytes, in, sizeof(in));
	snprintf(ops, sizeof(ops), "%s/%s", ctl_count(p->tx_ops, a, sizeof(a)),
		 ctl_count(p->rx_ops, b, sizeof(b)));
	ctl_count(p->errors, err, sizeof(err));
	ctl_table_row(t, cells);
}

/* Failure reasons go under the table: they are sentences, not columns. */
static void peer_reasons(const struct rp_admin_peer *v, size_t n)
{
	char name[RP_NAME_MAX + 1], why[sizeof(v->last_error) + 1];
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].last_error[0])
			printf("%s: last failure: %s\n", S(v[i].name, name),
			       S(v[i].last_error, why));
}

int ctl_cmd_peers(struct ctl *x)
{
	static const char *const spec[] = { "~PEER",	   "~ADDRESS", "TRANSPORT", "STATE",
					    ">FOR",	   ">RTT",     ">SENT",	    ">RECEIVED",
					    ">OPS OUT/IN", ">ERRORS" };
	struct rp_admin_peer *v;
	struct ctl_table t;
	struct ctl_json j;
	size_t n, i;
	int r;

	r = fetch(x, RP_MSG_ADMIN_PEERS, sizeof(*v), (void **)&v, &n);
	if (r)
		return r;
	if (x->json) {
		json_begin(&j, stdout);
		json_obj(&j, NULL);
		json_arr(&j, "peers");
		for (i = 0; i < n; i++)
			peer_json(&j, &v[i]);
		json_close(&j, ']');
		json_close(&j, '}');
		json_end(&j);
	} else if (n == 0) {
		printf("no peers configured\n");
	} else {
		ctl_table_init(&t, 10, spec);
		for (i = 0; i < n; i++)
			peer_row(&t, &v[i]);
		ctl_table_print(&t, stdout);
		peer_reasons(v, n);
	}
	free(v);
	return CTL_EXIT_OK;
}

int ctl_peer_counts(struct ctl *x, unsigned *up, unsigned *total)
{
	char why[RP_ADMIN_TEXT_MAX] = "";
	struct rp_admin_peer *v;
	size_t n, i;
	int r;

	r = ctl_list(&x->conn, RP_MSG_ADMIN_PEERS, sizeof(*v), (void **)&v, &n, why, sizeof(why));
	if (r < 0)
		return r;
	*up = 0;
	*total = (unsigned)n;
	for (i = 0; i < n; i++)
		*up += !strncmp(v[i].state, "up", sizeof(v[i].state));
	free(v);
	return 0;
}
