/* SPDX-License-Identifier: MIT */
/*
 * Stands in for systemd's notification socket: binds an AF_UNIX datagram
 * socket at argv[1] and prints every datagram it receives, one per line
 * (newlines inside a datagram become spaces), until SIGTERM.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[4096];
	int fd;

	if (argc != 2 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: notify-listen PATH\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("notify-listen");
		return 1;
	}
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
		ssize_t i;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("recv");
			return 1;
		}
		for (i = 0; i < n; i++)
			if (buf[i] == '\n')
				buf[i] = ' ';
		buf[n] = '\0';
		printf("%s\n", buf);
		fflush(stdout);
	}
}
