/* SPDX-License-Identifier: MIT */
/*
 * Client regions: every check an fd passes before the daemon maps it (kind
 * of file, file system, access mode, seals, size, alignment), the per-uid
 * quotas, the registration jobs the glue runs off the loop, and the
 * reference counting that keeps a freed region mapped while an operation
 * still uses it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "../../daemon/base/log.h"
#include "core-harness.h"
#include "tap.h"

#define PAGE 4096
#define SEALS (F_SEAL_SHRINK | F_SEAL_GROW)

static struct th t;

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* REGION_REG of @fd claiming @len: the reply's status; @fd must be closed either way. */
static int reg_fd(struct th_session *ts, int fd, uint64_t len, uint32_t *ret_id)
{
	struct rp_region_reg req = { .len = len };
	unsigned before = ts->n_replies;
	int r = th_request(ts, RP_MSG_REGION_REG, &req, sizeof(req), fd);

	if (fd_open(fd))
		return -EBADFD; /* consumed means closed, whatever the outcome */
	if (r < 0 || ts->n_replies != before + 1)
		return r < 0 ? r : -ENODATA;
	if (ret_id)
		*ret_id = ((const struct rp_id *)th_reply_body(ts))->id;
	return th_reply(ts)->status;
}

static int reopen(int fd, int flags)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open(path, flags | O_CLOEXEC);
}

static void test_fd_kinds(struct th_session *ts)
{
	int fd, fds[2], sv[2];
	uint32_t id = 0;

	fd = th_memfd(ts, 2 * PAGE, SEALS, NULL);
	tap_is_int(reg_fd(ts, fd, 2 * PAGE, &id), 0, "a sealed memfd of the right size");
	th_region_free(ts, id);
	fd = th_memfd(ts, 2 * PAGE, SEALS | F_SEAL_SEAL, NULL);
	tap_is_int(reg_fd(ts, fd, 2 * PAGE, &id), 0, "F_SEAL_SEAL too is fine");
	th_region_free(ts, id);
	fd = th_memfd(ts, 2 * PAGE, 0, NULL);
	tap_is_int(reg_fd(ts, fd, 2 * PAGE, NULL), -RP_EREGION_SEALS, "a memfd without seals");
	fd = th_memfd(ts, 2 * PAGE, F_SEAL_SHRINK, NULL);
	tap_is_int(reg_fd(ts, fd, 2 * PAGE, NULL), -RP_EREGION_SEALS,
		   "sealed against shrinking only");
	fd = th_memfd(ts, 2 * PAGE, F_SEAL_GROW, NULL);
	tap_is_int(reg_fd(ts, fd, 2 * PAGE, NULL), -RP_EREGION_SEALS,
		   "sealed against growing only");
	fd = th_memfd(ts, 2 * PAGE, SEALS | F_SEAL_WRITE, NULL);
	tap_is_int(reg_fd(ts, fd, 2 * PAGE, NULL), -RP_EREGION_SEALS,
		   "sealed against writes: the daemon could not write it");
	fd = th_memfd(ts, 2 * PAGE, SEALS | F_SEAL_FUTURE_WRITE, NULL);
	tap_is_int(reg_fd(ts, fd, 2 * PAGE, NULL), -RP_EREGION_SEALS,
		   "F_SEAL_FUTURE_WRITE likewise");

	fd = th_memfd(ts, 2 * PAGE, SEALS, NULL);
	tap_is_int(reg_fd(ts, fd, PAGE, NULL), -RP_EREGION_SIZE, "claimed length below the size");
	fd = th_memfd(ts, 2 * PAGE, SEALS, NULL);
	tap_is_int(reg_fd(ts, fd, 3 * PAGE, NULL), -RP_EREGION_SIZE, "claimed length above it");
	fd = th_memfd(ts, 2 * PAGE, SEALS, NULL);
	tap_is_int(reg_fd(ts, fd, 0, NULL), -EINVAL, "length 0");
	fd = th_memfd(ts, 2 * PAGE, SEALS, NULL);
	tap_is_int(reg_fd(ts, fd, PAGE + 1, NULL), -EINVAL, "a length that is not page-aligned");
	fd = th_memfd(ts, PAGE + 1, SEALS, NULL);
	tap_is_int(reg_fd(ts, fd, PAGE + 1, NULL), -EINVAL, "even if it is the file's size");
	fd = th_memfd(ts, 2 * PAGE, SEALS, NULL);
	tap_is_int(reg_fd(ts, fd, UINT64_MAX - PAGE + 1, NULL), -RP_EREGION_SIZE,
		   "a huge claimed length");

	fd = th_memfd(ts, PAGE, SEALS, NULL);
	tap_is_int(reg_fd(ts, reopen(fd, O_RDONLY), PAGE, NULL), -RP_EREGION_MODE,
		   "a sealed memfd opened O_RDONLY");
	tap_is_int(reg_fd(ts, reopen(fd, O_WRONLY), PAGE, NULL), -RP_EREGION_MODE, "or O_WRONLY");
	tap_is_int(reg_fd(ts, reopen(fd, O_PATH), PAGE, NULL), -RP_EREGION_MODE, "or O_PATH");
	tap_is_int(reg_fd(ts, reopen(fd, O_RDWR), PAGE, &id), 0,
		   "reopened read-write it is the same memfd");
	th_region_free(ts, id);
	close(fd);

	if (pipe2(fds, O_CLOEXEC) < 0)
		abort();
	close(fds[1]);
	tap_is_int(reg_fd(ts, fds[0], PAGE, NULL), -RP_EREGION_TYPE, "a pipe");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	close(sv[1]);
	tap_is_int(reg_fd(ts, sv[0], PAGE, NULL), -RP_EREGION_TYPE, "a socket");
	if (pipe2(fds, O_CLOEXEC) < 0)
		abort();
	close(fds[0]);
	tap_is_int(reg_fd(ts, reopen(fds[1], O_RDWR), PAGE, NULL), -RP_EREGION_TYPE,
		   "a pipe opened read-write");
	close(fds[1]);
	tap_is_int(reg_fd(ts, open("/dev/null", O_RDWR | O_CLOEXEC), PAGE, NULL), -RP_EREGION_TYPE,
		   "a character device");
	tap_is_int(reg_fd(ts, open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), PAGE, NULL),
		   -RP_EREGION_TYPE, "a directory");
}

static bool on_disk(const char *dir)
{
	struct statfs sf;

	return statfs(dir, &sf) == 0 && sf.f_type != TMPFS_MAGIC &&
	       sf.f_type != (typeof(sf.f_type))HUGETLBFS_MAGIC && access(dir, W_OK) == 0;
}

/* A file of the right size and mode on a disk file system: it would pin a disk file. */
static void test_disk_file(struct th_session *ts)
{
	static const char *const dirs[] = { "/var/tmp", "/tmp", "." };
	char path[256];
	size_t i;
	int fd;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (on_disk(dirs[i]))
			break;
	if (i == sizeof(dirs) / sizeof(dirs[0])) {
		tap_ok(1, "a file on disk is refused # SKIP no disk-backed directory found");
		return;
	}
	snprintf(path, sizeof(path), "%s/rp-test-region.XXXXXX", dirs[i]);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0 || ftruncate(fd, PAGE) < 0)
		abort();
	unlink(path);
	tap_is_int(reg_fd(ts, fd, PAGE, NULL), -RP_EREGION_FS, "a file on disk is refused");
}

/* A tmpfs file that is not a memfd cannot carry seals. */
static void test_shm_file(struct th_session *ts)
{
	char path[] = "/dev/shm/rp-test-region.XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);

	if (fd < 0) {
		tap_ok(1, "a /dev/shm file is refused # SKIP no /dev/shm");
		return;
	}
	unlink(path);
	if (ftruncate(fd, PAGE) < 0)
		abort();
	tap_is_int(reg_fd(ts, fd, PAGE, NULL), -RP_EREGION_SEALS,
		   "a /dev/shm file is refused: it cannot be sealed");
}

static void test_quota(struct th_session *a, struct th_session *a2, struct th_session *b)
{
	uint32_t id[4] = { 0 }, x = 0;
	unsigned i, ok = 0;

	t.cfg.max_regions = 3;
	for (i = 0; i < 2; i++)
		ok += th_region(a, PAGE, &id[i], NULL) == 0;
	ok += th_region(a2, PAGE, &id[2], NULL) == 0;
	tap_is_int(ok, 3, "max_regions regions of one uid, over two sessions");
	tap_is_int(th_region(a, PAGE, NULL, NULL), -RP_ELIMIT_REGIONS, "one more is refused");
	tap_is_int(th_region(a2, PAGE, NULL, NULL), -RP_ELIMIT_REGIONS, "in either session");
	tap_is_int(th_region(b, PAGE, &x, NULL), 0, "another uid has its own count");
	tap_ok(a->s.acct == a2->s.acct && a->s.acct->regions == 3 && a->s.acct->bytes == 3 * PAGE,
	       "the uid's account: 3 regions, 3 pages");
	th_region_free(a, id[0]);
	tap_is_int(th_region(a2, PAGE, &id[3], NULL), 0, "a freed region makes room");
	th_region_free(a, id[1]);
	th_region_free(a2, id[2]);
	th_region_free(a2, id[3]);
	th_region_free(b, x);
	t.cfg.max_regions = 16;

	t.cfg.max_registered_bytes = 8 * PAGE;
	tap_is_int(th_region(a, 16 * PAGE, NULL, NULL), -RP_ELIMIT_BYTES,
		   "a region above max_registered_bytes");
	tap_is_int(th_region(a, 5 * PAGE, &id[0], NULL), 0, "5 of 8 pages");
	tap_is_int(th_region(a2, 3 * PAGE, &id[1], NULL), 0, "8 of 8 pages");
	tap_is_int(th_region(a, PAGE, NULL, NULL), -RP_ELIMIT_BYTES, "not one page more");
	th_region_free(a, id[0]);
	tap_is_int(th_region(a, 5 * PAGE, &id[0], NULL), 0, "freed bytes count again");
	th_region_free(a, id[0]);
	th_region_free(a2, id[1]);
	t.cfg.max_registered_bytes = 1u << 20;
	tap_ok(a->s.acct->regions == 0 && a->s.acct->bytes == 0 && t.core->n_regions == 0 &&
		       t.core->bytes == 0,
	       "the accounts are back to zero");
}

static void test_range(void)
{
	struct region r = { .len = 2 * PAGE };

	tap_ok(region_range_ok(&r, 0, 2 * PAGE), "the whole region");
	tap_ok(region_range_ok(&r, 2 * PAGE, 0), "an empty range at its end");
	tap_ok(!region_range_ok(&r, 2 * PAGE + 1, 0), "an empty range past its end");
	tap_ok(!region_range_ok(&r, PAGE, PAGE + 1), "one byte too long");
	tap_ok(!region_range_ok(&r, UINT64_MAX, 2), "an offset that wraps");
	tap_ok(!region_range_ok(&r, 1, UINT64_MAX), "a length that wraps");
}

/* A region freed by its client stays mapped while something holds it. */
static void test_refs(struct th_session *ts)
{
	uint32_t id = 0;
	struct region *r;
	char *client;

	th_region(ts, 2 * PAGE, &id, (void **)&client);
	r = idtab_get(&ts->s.regions, id);
	tap_ok(r && r->refs == 1 && r->s == &ts->s && r->len == 2 * PAGE && r->id == id,
	       "a new region: one reference (its session's)");
	memset(client, 0x5a, 2 * PAGE);
	tap_ok(((unsigned char *)r->addr)[PAGE] == 0x5a, "the daemon's mapping shares the memory");
	region_ref(r);
	tap_is_int(th_region_free(ts, id), 0, "REGION_FREE while an operation holds it");
	tap_ok(r->s == NULL && r->refs == 1, "it left its session");
	tap_ok(idtab_get(&ts->s.regions, id) == NULL, "its id is gone");
	tap_ok(t.core->n_regions == 1 && ts->s.acct->regions == 1,
	       "still mapped and counted against the user");
	tap_ok(((unsigned char *)r->addr)[2 * PAGE - 1] == 0x5a, "and still readable");
	region_unref(r);
	tap_ok(t.core->n_regions == 0 && ts->s.acct->regions == 0 && ts->s.acct->bytes == 0,
	       "unmapped when the last reference goes");
}

/*
 * A receive posted into a region the client then frees: cancelled at once,
 * naming no region (its id may be a new region's by the time it is read),
 * and a message does not go into it.
 */
static void test_refs_op(struct th_session *ts)
{
	struct rp_sqe q = { .cookie = 11, .len = 64, .opcode = RP_SQE_POST_RECV };
	struct rp_cqe c[4];
	uint32_t id = 0, ep = 0, src = 0, dest = 0;
	char *buf;
	int n;

	th_region(ts, PAGE, &id, NULL);
	th_region(ts, PAGE, &src, (void **)&buf);
	th_ep_bind(ts, "refs", &ep);
	th_dest_open(ts, "", "refs", &dest);
	q.region = id;
	q.target = ep;
	th_submit(ts, &q);
	th_run(ts);
	tap_is_int(th_region_free(ts, id), 0, "REGION_FREE under a posted receive");
	n = th_reap(ts, c, 4);
	tap_ok(n == 1 && c[0].cookie == 11 && c[0].op == RP_OP_RECV && c[0].status == -ECANCELED &&
		       c[0].region == 0 && c[0].len == 0,
	       "the receive is cancelled at once, naming no region");
	tap_ok(t.core->n_regions == 1, "nothing keeps the region mapped");
	memcpy(buf, "hello, freed region", 20);
	q = (struct rp_sqe){
		.cookie = 12, .len = 20, .region = src, .target = dest, .opcode = RP_SQE_SEND
	};
	th_submit(ts, &q);
	th_run(ts);
	n = th_reap(ts, c, 4);
	tap_ok(n == 1 && c[0].cookie == 12 && c[0].status == -RP_ENORECV,
	       "a message finds no receive posted");
	th_region_free(ts, src);
	th_ep_unbind(ts, ep);
}

/* Registrations are mapped off the loop: charged from the request on, answered when done. */
static void test_jobs(struct th_session *ts)
{
	struct rp_region_reg req = { .len = 2 * PAGE };
	struct th_session *gone;
	unsigned before = ts->n_replies, freed;
	uint32_t seq, id;
	int fd;

	th_defer_jobs(&t, true);
	fd = th_memfd(ts, 2 * PAGE, SEALS, NULL);
	tap_is_int(th_request(ts, RP_MSG_REGION_REG, &req, sizeof(req), fd), 0,
		   "REGION_REG goes to the glue as a job");
	seq = ts->seq;
	tap_ok(ts->n_replies == before && t.n_jobs == 1, "and is not answered yet");
	tap_ok(ts->s.acct->regions == 1 && ts->s.acct->bytes == 2 * PAGE && t.core->n_regions == 1,
	       "it is charged from the request on");
	t.cfg.max_regions = 1;
	tap_is_int(th_region(ts, PAGE, NULL, NULL), -RP_ELIMIT_REGIONS,
		   "a registration under way counts against the limits");
	t.cfg.max_regions = 16;
	tap_is_int(th_jobs_run(&t, 1), 1, "the job runs");
	tap_ok(ts->n_replies == before + 2 && th_reply(ts)->status == 0 && th_reply(ts)->seq == seq,
	       "then its REGION_REG is answered");
	id = ((const struct rp_id *)th_reply_body(ts))->id;
	tap_ok(idtab_get(&ts->s.regions, id) && !fd_open(fd), "with a region; the fd is closed");
	/* Unmapping it (and deregistering its MR) is a job too. */
	before = ts->n_replies;
	th_request(ts, RP_MSG_REGION_FREE, &(struct rp_id){ .id = id }, sizeof(struct rp_id), -1);
	tap_ok(ts->n_replies == before && t.n_jobs == 1 && t.core->n_regions == 1 &&
		       ts->s.acct->bytes == 2 * PAGE,
	       "REGION_FREE: not answered, and still charged, while it is unmapped");
	tap_is_int(th_jobs_run(&t, 1), 1, "its job runs");
	tap_ok(ts->n_replies == before + 1 && th_reply(ts)->status == 0 && t.core->n_regions == 0 &&
		       ts->s.acct->bytes == 0,
	       "then it is answered, and its bytes are the user's again");

	gone = th_session_new(&t, 1000, 1000);
	th_hello(gone);
	fd = th_memfd(gone, 2 * PAGE, SEALS, NULL);
	th_request(gone, RP_MSG_REGION_REG, &req, sizeof(req), fd);
	freed = t.n_freed;
	th_session_close(gone);
	tap_is_int(t.n_freed, freed,
		   "a client gone while its region is mapped: its session is kept");
	tap_is_int(t.core->n_regions, 1, "and the bytes stay charged");
	th_jobs_run(&t, 1);
	tap_ok(t.n_freed == freed + 1 && t.dead_sends == 0,
	       "when the job is done nothing is sent and the session is freed");
	tap_ok(t.n_jobs == 1 && t.core->n_regions == 1,
	       "its mapping is undone by another job, and charged until then");
	th_jobs_run(&t, 1);
	tap_ok(t.core->n_regions == 0 && t.core->bytes == 0,
	       "then nothing stays mapped or charged");
	th_defer_jobs(&t, false);
}

/*
 * One user's registrations do not hold up another's: at most 3 of one user's
 * jobs go to the pool at once, and the users take turns (core_job_run()).
 */
static void test_jobs_fair(struct th_session *a, struct th_session *b)
{
	struct rp_region_reg req = { .len = PAGE };
	uint32_t a_seq[5], last_a = 0;
	unsigned i, n = 0, ra, rb, bad = 0;
	char order[8] = "";

	th_defer_jobs(&t, true);
	for (i = 0; i < 5; i++) {
		th_request(a, RP_MSG_REGION_REG, &req, sizeof(req), th_memfd(a, PAGE, SEALS, NULL));
		a_seq[i] = a->seq;
	}
	tap_is_int(t.n_jobs, 3, "5 registrations of one user: 3 go to the thread pool at once");
	for (i = 0; i < 2; i++)
		th_request(b, RP_MSG_REGION_REG, &req, sizeof(req), th_memfd(b, PAGE, SEALS, NULL));
	tap_is_int(t.n_jobs, 4, "another user's starts at once, the next waits for room");
	while (n < 7) {
		ra = a->n_replies;
		rb = b->n_replies;
		if (th_jobs_run(&t, 1) != 1)
			break;
		if (a->n_replies == ra + 1 && b->n_replies == rb) {
			order[n++] = 'A';
			if (th_reply(a)->status || th_reply(a)->seq <= last_a)
				bad++;
			last_a = th_reply(a)->seq;
		} else if (b->n_replies == rb + 1 && a->n_replies == ra) {
			order[n++] = 'B';
			bad += th_reply(b)->status != 0;
		} else {
			break;
		}
	}
	tap_is_str(order, "AAABBAA",
		   "the users take turns: both of the other user's are done before the rest");
	tap_ok(n == 7 && !bad && last_a == a_seq[4],
	       "every registration succeeds, each user's in the order asked");
	th_defer_jobs(&t, false);
	tap_is_int(t.core->n_regions, 7, "7 regions");
}

int main(void)
{
	struct th_session *a, *a2, *b;

	log_set_level(LOG_ERR);
	if (th_init(&t) < 0)
		return 99;
	a = th_session_new(&t, 1000, 1000);
	a2 = th_session_new(&t, 1000, 1000);
	b = th_session_new(&t, 1001, 1001);
	th_hello(a);
	th_hello(a2);
	th_hello(b);
	test_fd_kinds(a);
	test_disk_file(a);
	test_shm_file(a);
	test_quota(a, a2, b);
	test_range();
	test_refs(a);
	test_refs_op(a);
	test_jobs(a);
	tap_is_int(t.core->n_regions, 0, "no region left");
	test_jobs_fair(a, b);
	th_session_close(a);
	th_session_close(a2);
	th_session_close(b);
	tap_is_int(t.n_freed, 4, "every session freed once");
	tap_ok(t.core->accts == NULL, "no account left");
	th_fini(&t);
	tap_plan_done();
	return tap_exit();
}
