/* SPDX-License-Identifier: MIT */
#include "base/memguard.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

/* The daemon is single-threaded: one guarded copy at a time. */
static sigjmp_buf *volatile guard;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *g = guard;

	if (g) {
		guard = NULL;
		siglongjmp(*g, 1);
	}
	/* Not a guarded copy: a real bug; die as SIGBUS would have. */
	signal(SIGBUS, SIG_DFL);
	raise(SIGBUS);
}

int memguard_init(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	/* NODEFER: the handler leaves by longjmp, which must not leave SIGBUS blocked. */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, NULL) < 0 ? -errno : 0;
}

int guarded_memmove(void *dst, const void *src, size_t len)
{
	sigjmp_buf jb;

	/* No mask save: that would be a system call per copy (see SA_NODEFER). */
	if (sigsetjmp(jb, 0))
		return -EFAULT;
	guard = &jb;
	memmove(dst, src, len);
	guard = NULL;
	return 0;
}
