/* SPDX-License-Identifier: MIT */
/*
 * Receiving SCM_RIGHTS file descriptors, shared by the daemon and the
 * library (not installed). Every descriptor that arrived is either returned
 * or closed, however many came in however many control messages, so a
 * hostile sender cannot make the receiver leak them.
 */
#ifndef RP_FDPASS_H
#define RP_FDPASS_H

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Up to @max fds from @mh into @fds (the rest are closed); returns how many. */
static inline int rp_take_fds(struct msghdr *mh, int *fds, int max)
{
	struct cmsghdr *cm;
	int n = 0;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t k, i;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (n < max)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

#endif
