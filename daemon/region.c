/* SPDX-License-Identifier: MIT */
/*
 * Client regions: the memfd a client hands over is checked completely
 * before the daemon maps it, because a mapping of the wrong kind of file can
 * fault (a file that shrinks under us raises SIGBUS) or pin a disk file.
 * Operations hold references, so a region outlives its client while they
 * run.
 */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "verbs_local.h"

#define REQUIRED_SEALS (F_SEAL_SHRINK | F_SEAL_GROW)
/* Sealed against writes, the daemon could not map it writable. */
#define FORBIDDEN_SEALS (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)

bool region_range_ok(const struct region *r, uint64_t off, uint64_t len)
{
	return off <= r->len && len <= r->len - off;
}

/* Is @fd a sealed, read-write shmem or hugetlbfs file of exactly @len bytes? */
static int check_fd(int fd, uint64_t len, bool *huge)
{
	struct stat st;
	struct statfs sf;
	int fl, seals;
	long page = sysconf(_SC_PAGESIZE);

	if (len == 0 || len % (uint64_t)page)
		return -EINVAL;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_PATH))
		return -RP_EREGION_MODE;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return -RP_EREGION_TYPE;
	if (fstatfs(fd, &sf) < 0 ||
	    (sf.f_type != TMPFS_MAGIC && sf.f_type != (typeof(sf.f_type))HUGETLBFS_MAGIC))
		return -RP_EREGION_FS;
	if ((fl & O_ACCMODE) != O_RDWR)
		return -RP_EREGION_MODE;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & REQUIRED_SEALS) != REQUIRED_SEALS || (seals & FORBIDDEN_SEALS))
		return -RP_EREGION_SEALS;
	if ((uint64_t)st.st_size != len)
		return -RP_EREGION_SIZE;
	*huge = sf.f_type == (typeof(sf.f_type))HUGETLBFS_MAGIC;
	if (*huge && len % (uint64_t)st.st_blksize)
		return -EINVAL;
	return 0;
}

static int check_quota(struct core *c, struct uid_acct *a, uint64_t len)
{
	const struct config *cfg = c->cfg;

	if (a->regions >= cfg->max_regions)
		return -RP_ELIMIT_REGIONS;
	if (len > cfg->max_registered_bytes || a->bytes > cfg->max_registered_bytes - len)
		return -RP_ELIMIT_BYTES;
	return 0;
}

int region_new(struct session *s, int fd, uint64_t len, struct region **ret)
{
	struct core *c = s->core;
	struct region *r = NULL;
	bool huge = false;
	void *addr;
	int err;

	err = check_fd(fd, len, &huge);
	if (!err)
		err = check_quota(c, s->acct, len);
	if (err)
		goto out_close;
	if (len > SIZE_MAX) {
		err = -EINVAL;
		goto out_close;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		err = -ENOMEM;
		goto out_close;
	}
	/* Populate now: page-table setup belongs on the control path, not in the first op. */
	addr = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (addr == MAP_FAILED) {
		err = -errno;
		free(r);
		goto out_close;
	}
	/* Local access only: remote access is granted per export, with its own MR. */
	if (c->vlocal) {
		err = vmr_reg(c->vlocal, addr, len, VMR_LOCAL_WRITE, &r->xport);
		if (err < 0) {
			munmap(addr, (size_t)len);
			free(r);
			goto out_close;
		}
	}
	r->refs = 1;
	r->core = c;
	r->s = s;
	r->addr = addr;
	r->len = len;
	r->acct = s->acct;
	r->acct->refs++;
	r->acct->regions++;
	r->acct->bytes += len;
	c->n_regions++;
	c->bytes += len;
	*ret = r;
out_close:
	/* The mapping keeps the memory: the fd is never kept (fd count unchanged). */
	close(fd);
	return err;
}

struct region *region_ref(struct region *r)
{
	r->refs++;
	return r;
}

void region_unref(struct region *r)
{
	struct core *c;

	if (!r || --r->refs)
		return;
	c = r->core;
	vmr_dereg(r->xport);
	munmap(r->addr, (size_t)r->len);
	r->acct->regions--;
	r->acct->bytes -= r->len;
	c->n_regions--;
	c->bytes -= r->len;
	acct_put(c, r->acct);
	free(r);
}
