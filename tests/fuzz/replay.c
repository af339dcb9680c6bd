/* SPDX-License-Identifier: MIT */
/*
 * Replays fuzz corpora without libFuzzer, so that they run in "make check"
 * with any compiler: each file named on the command line, or found directly
 * inside a directory named there, goes once through LLVMFuzzerTestOneInput().
 * Output is TAP, one "ok" per input; a crash shows up as a missing plan.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int tests;
static int failures;

static int read_input(const char *path, uint8_t **ret, size_t *ret_size)
{
	uint8_t *buf = NULL, *nb;
	size_t len = 0, n;
	FILE *f;
	int r = 0;

	f = fopen(path, "rbe");
	if (!f)
		return -errno;
	do {
		nb = realloc(buf, len + 4096);
		if (!nb) {
			r = -ENOMEM;
			goto out_close;
		}
		buf = nb;
		n = fread(buf + len, 1, 4096, f);
		len += n;
	} while (n == 4096);
	if (ferror(f))
		r = -EIO;
out_close:
	fclose(f);
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf;
	*ret_size = len;
	return 0;
}

static void replay_file(const char *path)
{
	uint8_t *data = NULL;
	size_t size = 0;
	int r;

	tests++;
	r = read_input(path, &data, &size);
	if (r < 0) {
		failures++;
		printf("not ok %d - %s: %s\n", tests, path, strerror(-r));
		return;
	}
	/* Announce the input first: if it crashes, the log says which one. */
	printf("# %s (%zu bytes)\n", path, size);
	fflush(stdout);
	LLVMFuzzerTestOneInput(data, size);
	free(data);
	printf("ok %d - %s\n", tests, path);
	fflush(stdout);
}

static int not_hidden(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static void replay_dir(const char *dir)
{
	struct dirent **names;
	char *path;
	int i, n;

	n = scandir(dir, &names, not_hidden, alphasort);
	if (n < 0) {
		failures++;
		printf("not ok %d - %s: %s\n", ++tests, dir, strerror(errno));
		return;
	}
	for (i = 0; i < n; i++) {
		if (asprintf(&path, "%s/%s", dir, names[i]->d_name) >= 0) {
			replay_file(path);
			free(path);
		}
		free(names[i]);
	}
	free(names);
}

int main(int argc, char **argv)
{
	struct stat st;
	int i;

	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			replay_dir(argv[i]);
		else
			replay_file(argv[i]);
	}
	if (!tests)
		printf("1..0 # SKIP no corpus files\n");
	else
		printf("1..%d\n", tests);
	return failures ? 1 : 0;
}
