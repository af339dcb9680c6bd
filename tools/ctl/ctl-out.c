/* SPDX-License-Identifier: MIT */
/* rdmaproxyctl output: human units, aligned tables, and a small JSON writer. */
#include "ctl.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *ctl_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)n / 1024;
	unsigned i = 0;

	if (n < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", n);
		return buf;
	}
	while (v >= 1024 && i + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, "%.1f %s", v, units[i]);
	return buf;
}

const char *ctl_count(uint64_t n, char *buf, size_t len)
{
	if (n < 10000)
		snprintf(buf, len, "%" PRIu64, n);
	else if (n < 10000000)
		snprintf(buf, len, "%.1fk", (double)n / 1e3);
	else if (n < 10000000000ull)
		snprintf(buf, len, "%.1fM", (double)n / 1e6);
	else
		snprintf(buf, len, "%.1fG", (double)n / 1e9);
	return buf;
}

const char *ctl_duration(uint64_t s, char *buf, size_t len)
{
	if (s < 60)
		snprintf(buf, len, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s % 3600 / 60);
	else
		snprintf(buf, len, "%" PRIu64 "d%02" PRIu64 "h", s / 86400, s % 86400 / 3600);
	return buf;
}

const char *ctl_str(const char *field, size_t size, char *buf, size_t len)
{
	size_t n = strnlen(field, size), i;

	if (n >= len)
		n = len - 1;
	/* A daemon should send printable names; never pass control bytes to a terminal. */
	for (i = 0; i < n; i++)
		buf[i] = (unsigned char)field[i] < 0x20 || field[i] == 0x7f ? '?' : field[i];
	buf[n] = '\0';
	return buf;
}

/* ---- tables ---- */

void ctl_table_init(struct ctl_table *t, int ncols, const char *const *spec)
{
	int i;

	memset(t, 0, sizeof(*t));
	t->ncols = ncols < CTL_MAX_COLS ? ncols : CTL_MAX_COLS;
	for (i = 0; i < t->ncols; i++) {
		const char *s = spec[i];

		for (; *s == '>' || *s == '~'; s++) {
			t->right[i] |= *s == '>';
			t->shrink[i] |= *s == '~';
		}
		t->head[i] = s;
	}
}

void ctl_table_row(struct ctl_table *t, const char *const *cells)
{
	char **row;
	int i;

	if (t->oom)
		return;
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		char ***nr = realloc(t->rows, cap * sizeof(*nr));

		if (!nr) {
			t->oom = true;
			return;
		}
		t->rows = nr;
		t->cap = cap;
	}
	row = calloc((size_t)t->ncols, sizeof(*row));
	if (!row) {
		t->oom = true;
		return;
	}
	for (i = 0; i < t->ncols; i++) {
		row[i] = strdup(cells[i] ? cells[i] : "");
		t->oom |= !row[i];
	}
	t->rows[t->nrows++] = row;
}

/* Column widths from the content, then shrink the shrinkable ones to fit. */
static void widths(const struct ctl_table *t, size_t *w)
{
	size_t total = 0, i;
	int c;

	for (c = 0; c < t->ncols; c++) {
		w[c] = strlen(t->head[c]);
		for (i = 0; i < t->nrows; i++)
			if (strlen(t->rows[i][c]) > w[c])
				w[c] = strlen(t->rows[i][c]);
		total += w[c] + (c ? 2 : 0);
	}
	while (total > CTL_WIDTH) {
		int widest = -1;

		for (c = 0; c < t->ncols; c++)
			if (t->shrink[c] && w[c] > 6 && (widest < 0 || w[c] > w[widest]))
				widest = c;
		if (widest < 0)
			break;
		w[widest]--;
		total--;
	}
}

static void cell(FILE *f, const char *s, size_t w, bool right, bool last)
{
	size_t n = strlen(s);

	if (n > w) {
		fprintf(f, "%.*s~", (int)(w - 1), s);
		return;
	}
	if (right)
		fprintf(f, "%*s", (int)w, s);
	else if (last)
		fputs(s, f);
	else
		fprintf(f, "%-*s", (int)w, s);
}

static void free_rows(struct ctl_table *t)
{
	size_t i;
	int c;

	for (i = 0; i < t->nrows; i++) {
		for (c = 0; c < t->ncols; c++)
			free(t->rows[i][c]);
		free(t->rows[i]);
	}
	free(t->rows);
	t->rows = NULL;
	t->nrows = t->cap = 0;
}

int ctl_table_print(struct ctl_table *t, FILE *f)
{
	size_t w[CTL_MAX_COLS], i;
	int c;

	if (t->oom) {
		free_rows(t);
		return -1;
	}
	widths(t, w);
	for (c = 0; c < t->ncols; c++) {
		fputs(c ? "  " : "", f);
		cell(f, t->head[c], w[c], t->right[c], c == t->ncols - 1);
	}
	fputc('\n', f);
	for (i = 0; i < t->nrows; i++) {
		for (c = 0; c < t->ncols; c++) {
			fputs(c ? "  " : "", f);
			cell(f, t->rows[i][c], w[c], t->right[c], c == t->ncols - 1);
		}
		fputc('\n', f);
	}
	free_rows(t);
	return 0;
}

/* ---- JSON ---- */

static void json_escaped(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch == '\t')
			fputs("\\t", f);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\u%04x", ch);
		else if (ch >= 0x80)
			fputs("\\ufffd", f); /* names are ASCII; never emit invalid UTF-8 */
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* Separator and key before a value. */
static void json_pre(struct ctl_json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
	if (key) {
		json_escaped(j->f, key);
		fputc(':', j->f);
	}
}

void json_begin(struct ctl_json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->first[0] = true;
}

void json_end(struct ctl_json *j)
{
	fputc('\n', j->f);
}

static void json_open(struct ctl_json *j, const char *key, char bracket)
{
	json_pre(j, key);
	fputc(bracket, j->f);
	if (j->depth + 1 < (int)(sizeof(j->first) / sizeof(j->first[0])))
		j->depth++;
	j->first[j->depth] = true;
}

void json_obj(struct ctl_json *j, const char *key)
{
	json_open(j, key, '{');
}

void json_arr(struct ctl_json *j, const char *key)
{
	json_open(j, key, '[');
}

void json_close(struct ctl_json *j, char bracket)
{
	fputc(bracket, j->f);
	if (j->depth)
		j->depth--;
}

void json_str(struct ctl_json *j, const char *key, const char *v)
{
	json_pre(j, key);
	if (v)
		json_escaped(j->f, v);
	else
		fputs("null", j->f);
}

void json_u64(struct ctl_json *j, const char *key, uint64_t v)
{
	json_pre(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

void json_i64(struct ctl_json *j, const char *key, int64_t v)
{
	json_pre(j, key);
	fprintf(j->f, "%" PRId64, v);
}

void json_num(struct ctl_json *j, const char *key, double v)
{
	json_pre(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.15g", v);
	else
		fputs("null", j->f);
}

void json_bool(struct ctl_json *j, const char *key, bool v)
{
	json_pre(j, key);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct ctl_json *j, const char *key)
{
	json_pre(j, key);
	fputs("null", j->f);
}

static const char *digits(const char *s)
{
	while (*s >= '0' && *s <= '9')
		s++;
	return s;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool json_number_ok(const char *s)
{
	const char *e;

	s += *s == '-';
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		s = digits(s);
	else
		return false;
	if (*s == '.') {
		e = digits(s + 1);
		if (e == s + 1)
			return false;
		s = e;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		s += *s == '+' || *s == '-';
		e = digits(s);
		if (e == s)
			return false;
		s = e;
	}
	return *s == '\0';
}

void json_number_text(struct ctl_json *j, const char *key, const char *v)
{
	json_pre(j, key);
	fputs(json_number_ok(v) ? v : "null", j->f);
}
