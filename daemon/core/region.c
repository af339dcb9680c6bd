/* SPDX-License-Identifier: MIT */
/*
 * Client regions: the memfd a client hands over is checked completely
 * before the daemon maps it, because a mapping of the wrong kind of file can
 * fault (a file that shrinks under us raises SIGBUS) or pin a disk file.
 * Mapping, pre-faulting and registering take milliseconds for a large
 * region, so they are a job the glue runs off the loop thread
 * (region_job_work(): no core state is touched there); the checks before
 * and the bookkeeping after run on the loop. Operations hold references,
 * so a region outlives its client while they run.
 */
#include "core/core.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "rdma/verbs_local.h"

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

static void charge(struct core *c, struct uid_acct *a, uint64_t len, bool add)
{
	if (add) {
		a->regions++;
		a->bytes += len;
		c->n_regions++;
		c->bytes += len;
	} else {
		a->regions--;
		a->bytes -= len;
		c->n_regions--;
		c->bytes -= len;
	}
}

int region_job_new(struct session *s, const struct rp_hdr *h, int fd, uint64_t len,
		   struct region_job **ret)
{
	struct core *c = s->core;
	struct region_job *j = NULL;
	bool huge = false;
	int err;

	err = check_fd(fd, len, &huge);
	if (!err)
		err = check_quota(c, s->acct, len);
	if (!err && len > SIZE_MAX)
		err = -EINVAL;
	if (!err) {
		j = calloc(1, sizeof(*j));
		err = j ? 0 : -ENOMEM;
	}
	if (err) {
		close(fd);
		return err;
	}
	/* Charged now: registrations still being mapped count against the limits. */
	charge(c, s->acct, len, true);
	j->acct = s->acct;
	j->acct->refs++;
	session_hold(s);
	j->s = s;
	j->h = *h;
	j->fd = fd;
	j->len = len;
	j->huge = huge;
	j->vlocal = c->vlocal;
	j->job.core = c;
	j->job.work = region_job_work;
	j->job.done = session_region_done;
	*ret = j;
	return 0;
}

/*
 * Populating a mapping holds the daemon's mmap lock (shared) all along, and
 * every mmap(), munmap() and heap growth in the daemon waits for it: one
 * MAP_POPULATE of a large region (a 1 GiB one: hundreds of milliseconds)
 * held up other users' registrations and unmappings, and a new client's
 * HELLO (its rings are mapped on the loop thread), for as long as it ran.
 * Populated a piece at a time, the lock is free between pieces. A piece
 * is also how long the populating thread keeps its CPU (below): 4 MiB took
 * 3.5-4.4 ms on the host, 1 MiB about a quarter of that.
 */
#define POPULATE_PIECE (1u << 20)
/* Unmapped in pieces of hugetlbfs's usual page (a 1 GiB page's region: at once). */
#define UNMAP_PIECE (2u << 20)

/*
 * Prefault @len bytes at @addr writable (as MAP_POPULATE would), a piece at
 * a time. 0, or -errno when the mapping was lost.
 *
 * Between two pieces (here and in unmap()) the pool thread hands its CPU to
 * whatever else is runnable there. The scheduler lets a thread that was
 * given the CPU keep it for a whole time slice (3-4 ms on the host, whatever
 * its nice value), and the engine gives its CPU away when it is idle while
 * more tasks are runnable than there are CPUs: the next submission then
 * waited for the rest of the populating thread's slice, although the other
 * CPU had gone idle (host, a client writing 8 B synchronously while another
 * user registered 2 GiB: 18-33 of its operations took over 3 ms). A yield
 * with nothing else to run returns at once.
 */
static int populate(void *addr, size_t len, int fd, bool huge)
{
	size_t piece = POPULATE_PIECE, off, n;
	struct stat st;

	/* hugetlbfs: whole huge pages (the region's length is a multiple of them). */
	if (huge && fstat(fd, &st) == 0 && (size_t)st.st_blksize > piece)
		piece = (size_t)st.st_blksize;
	for (off = 0; off < len; off += n) {
		n = len - off < piece ? len - off : piece;
		/* Like MAP_POPULATE, a page that cannot be had now is not an error here. */
		if (madvise((char *)addr + off, n, MADV_POPULATE_WRITE) < 0 && errno == EINVAL) {
			/* Before Linux 5.14: all at once, as before (in place of the mapping). */
			if (mmap(addr, len, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0) == MAP_FAILED)
				return -errno;
			return 0;
		}
		if (off + n < len)
			sched_yield();
	}
	return 0;
}

/*
 * Unmap @len bytes at @addr a piece at a time: munmap() holds the mmap lock
 * (exclusive) while it frees the pages, a second or so for 512 MiB in the
 * test guest (see populate()).
 */
static void unmap(void *addr, size_t len)
{
	size_t off, n;

	for (off = 0; off < len; off += n) {
		n = len - off < UNMAP_PIECE ? len - off : UNMAP_PIECE;
		/* hugetlbfs pages larger than a piece: the rest at once. */
		if (munmap((char *)addr + off, n) < 0) {
			munmap((char *)addr + off, len - off);
			return;
		}
		if (off + n < len)
			sched_yield();
	}
}

void region_job_work(struct core_job *cj)
{
	struct region_job *j = (struct region_job *)cj;
	void *addr;
	int err = 0;

	/*
	 * Populate now: page-table setup belongs to registration, not to the
	 * first op. The mapping keeps the memory: the fd is never kept.
	 */
	addr = mmap(NULL, (size_t)j->len, PROT_READ | PROT_WRITE, MAP_SHARED, j->fd, 0);
	if (addr == MAP_FAILED)
		err = -errno;
	else if ((err = populate(addr, (size_t)j->len, j->fd, j->huge)) < 0)
		munmap(addr, (size_t)j->len); /* what is left of it */
	close(j->fd);
	j->fd = -1;
	if (err) {
		j->status = err;
		return;
	}
	/*
	 * Local access only: remote access is granted per export, with its own
	 * MR. The daemon reads this MR's memory itself when it posts data
	 * inline: not a hugetlbfs region's, whose pages may fault.
	 */
	if (j->vlocal)
		err = vmr_reg(j->vlocal, addr, j->len,
			      VMR_LOCAL_WRITE | (j->huge ? VMR_MAY_FAULT : 0), &j->mr);
	if (err < 0) {
		unmap(addr, (size_t)j->len);
		j->status = err;
		return;
	}
	j->addr = addr;
}

int region_job_done(struct region_job *j, struct region **ret)
{
	struct core *c = j->s->core;
	struct region *r = NULL;
	int err = j->status;

	if (!err && j->s->dead)
		err = -ECONNRESET; /* its client left meanwhile */
	if (!err || j->addr)
		r = calloc(1, sizeof(*r));
	if (!err && !r)
		err = -ENOMEM;
	if (err && !r) {
		/* Nothing mapped, or no memory: undone here. */
		vmr_dereg(j->mr);
		if (j->addr)
			munmap(j->addr, (size_t)j->len);
		charge(c, j->acct, j->len, false);
		acct_put(c, j->acct);
		return err;
	}
	r->refs = 1;
	r->core = c;
	r->addr = j->addr;
	r->len = j->len;
	r->xport = j->mr;
	r->huge = j->huge;
	r->acct = j->acct; /* the job's reference is the region's now */
	if (err) {
		/* Mapped for nobody: unmapped off the loop, charged until then. */
		region_unref(r);
		return err;
	}
	r->s = j->s;
	*ret = r;
	return 0;
}

struct region *region_ref(struct region *r)
{
	r->refs++;
	return r;
}

struct drop_job {
	struct core_job job; /* first */
	void (*then)(void *arg);
	void *arg;
	void *addr;
	size_t len;
	unsigned n;
	struct vmr *mrs[];
};

static void drop_work(struct core_job *cj)
{
	struct drop_job *j = (struct drop_job *)cj;
	unsigned i;

	for (i = 0; i < j->n; i++)
		vmr_dereg(j->mrs[i]);
	if (j->addr)
		unmap(j->addr, j->len);
}

static void drop_done(struct core_job *cj)
{
	struct drop_job *j = (struct drop_job *)cj;

	if (j->then)
		j->then(j->arg);
	free(j);
}

void core_drop_then(struct core *c, struct uid_acct *acct, struct vmr *const *mrs, unsigned n,
		    void *addr, size_t len, void (*then)(void *arg), void *arg)
{
	struct drop_job *j = NULL;
	unsigned i, some = 0;

	for (i = 0; i < n; i++)
		some += mrs[i] != NULL;
	if (some || addr)
		j = calloc(1, sizeof(*j) + some * sizeof(j->mrs[0]));
	if (!j) {
		/* Nothing to drop, or no memory for the job: here, then. */
		for (i = 0; i < n; i++)
			vmr_dereg(mrs[i]);
		if (addr)
			munmap(addr, len);
		if (then)
			then(arg);
		return;
	}
	j->job.core = c;
	j->job.work = drop_work;
	j->job.done = drop_done;
	for (i = 0; i < n; i++)
		if (mrs[i])
			j->mrs[j->n++] = mrs[i];
	j->addr = addr;
	j->len = len;
	j->then = then;
	j->arg = arg;
	core_job_run(&j->job, acct);
}

/* Its pages are unpinned and unmapped: the limits are the user's again. */
static void region_gone(void *arg)
{
	struct region *r = arg;
	struct core *c = r->core;
	struct session *s = r->waiter;

	charge(c, r->acct, r->len, false);
	acct_put(c, r->acct);
	if (s) {
		session_reply(s, &r->waiter_h, 0, NULL, 0, NULL, 0);
		session_put(s);
	}
	free(r);
}

void region_unref(struct region *r)
{
	if (!r || --r->refs)
		return;
	/* Nothing refers to it: its pages are unpinned and unmapped off the loop thread. */
	core_drop_then(r->core, r->acct, &r->xport, 1, r->addr, (size_t)r->len, region_gone, r);
}

int region_free(struct region *r, struct session *s, const struct rp_hdr *h)
{
	if (r->refs > 1) {
		region_unref(r); /* operations still hold it: it goes after them */
		return 0;
	}
	session_hold(s);
	r->waiter = s;
	r->waiter_h = *h;
	region_unref(r);
	return REGION_LATER;
}
