/* SPDX-License-Identifier: MIT */
/*
 * rdmaproxyctl internals: admin requests over the control connection
 * (ctl-proto.c), output helpers for aligned tables and JSON (ctl-out.c), and
 * the commands (rdmaproxyctl.c).
 */
#ifndef RP_CTL_H
#define RP_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../../libclient/conn.h"

/* Exit codes (documented in rdmaproxyctl(8)). */
#define CTL_EXIT_OK 0
#define CTL_EXIT_FAILED 1      /* the daemon refused or failed the request */
#define CTL_EXIT_UNREACHABLE 2 /* no daemon on the socket, or it went away */
#define CTL_EXIT_RESTART 3     /* reloaded, but changed settings need a restart */
#define CTL_EXIT_USAGE 64      /* bad command line (EX_USAGE) */

/* ---- ctl-proto.c ---- */

/*
 * Send an admin request and receive its reply of up to @cap bytes into
 * @reply (length in *ret_len, the reply's rp_hdr.flags in *ret_flags unless
 * it is NULL). Returns the reply's status; on a negative status, @why gets
 * the daemon's reason (or rp_strerror()). -RP_EDAEMON if the daemon hung up,
 * -EPROTO on a malformed reply.
 */
int ctl_request(struct rp_conn *c, uint16_t type, const void *body, size_t len, void *reply,
		size_t cap, size_t *ret_len, uint16_t *ret_flags, char *why, size_t whylen);

/* Every page of list @type: @recsize-byte records, malloc'ed, into *ret / *ret_n. */
int ctl_list(struct rp_conn *c, uint16_t type, size_t recsize, void **ret, size_t *ret_n, char *why,
	     size_t whylen);

/* The whole metrics text, malloc'ed and NUL-terminated. */
int ctl_metrics(struct rp_conn *c, char **ret, size_t *ret_len, char *why, size_t whylen);

/* ---- ctl-out.c ---- */

/* "512 B", "4.0 KiB", "1.5 GiB". */
const char *ctl_bytes(uint64_t n, char *buf, size_t len);
/* "950", "12.3k", "4.1M". */
const char *ctl_count(uint64_t n, char *buf, size_t len);
/* "45s", "12m03s", "3h12m", "5d03h". */
const char *ctl_duration(uint64_t sec, char *buf, size_t len);
/* The printable part of a fixed-size, possibly unterminated wire string. */
const char *ctl_str(const char *field, size_t size, char *buf, size_t len);

/* A table printed with aligned columns that fit CTL_WIDTH. */
#define CTL_WIDTH 100
#define CTL_MAX_COLS 12

struct ctl_table {
	int ncols;
	const char *head[CTL_MAX_COLS];
	bool right[CTL_MAX_COLS];  /* right-aligned (numbers) */
	bool shrink[CTL_MAX_COLS]; /* may be cut (marked with ~) to fit */
	char ***rows;		   /* rows[i][col], malloc'ed */
	size_t nrows, cap;
	bool oom;
};

/* @spec: one "NAME" per column; a leading '>' right-aligns, a leading '~' may shrink. */
void ctl_table_init(struct ctl_table *t, int ncols, const char *const *spec);
/* Add a row of ncols cells (copied); a NULL cell prints empty. */
void ctl_table_row(struct ctl_table *t, const char *const *cells);
/* Print and free. */
int ctl_table_print(struct ctl_table *t, FILE *f);

/* JSON writer: commas and nesting handled, strings escaped. */
struct ctl_json {
	FILE *f;
	int depth;
	bool first[32];
	bool after_key;
};

void json_begin(struct ctl_json *j, FILE *f);
void json_end(struct ctl_json *j);		    /* final newline */
void json_obj(struct ctl_json *j, const char *key); /* key NULL inside arrays / at top */
void json_arr(struct ctl_json *j, const char *key);
void json_close(struct ctl_json *j, char bracket);		   /* '}' or ']' */
void json_str(struct ctl_json *j, const char *key, const char *v); /* v NULL: null */
void json_u64(struct ctl_json *j, const char *key, uint64_t v);
void json_i64(struct ctl_json *j, const char *key, int64_t v);
void json_num(struct ctl_json *j, const char *key, double v); /* non-finite: null */
void json_bool(struct ctl_json *j, const char *key, bool v);
void json_null(struct ctl_json *j, const char *key);
/* @v printed as is if it is a valid JSON number, else null. */
void json_number_text(struct ctl_json *j, const char *key, const char *v);

#endif
