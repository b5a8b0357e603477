/* SPDX-License-Identifier: Apache-2.0 */
/* notifysock.c - notifysock PATH|@NAME: what systemd's end of
 * sd_notify(3) sees. Binds a datagram socket there (a path, or "@NAME"
 * in the abstract namespace), prints "ready", then one line a datagram:
 * "pid=SENDER STATE", the state's newlines as ' ' and bytes outside
 * printable ASCII as \xNN. Runs until killed. Exit 1 with a message. */
#define _GNU_SOURCE 1
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1;
	size_t len = argc == 2 ? strlen(argv[1]) : 0;

	if (fd < 0 || len < 2 || len >= sizeof a.sun_path) {
		fprintf(stderr, "usage: notifysock PATH|@NAME\n");
		return 1;
	}
	memcpy(a.sun_path, argv[1], len);
	if (a.sun_path[0] == '@')
		a.sun_path[0] = 0;
	if (bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) < 0) {
		perror("notifysock: bind");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		char buf[4096], ctl[CMSG_SPACE(sizeof(struct ucred))];
		struct iovec iov = {buf, sizeof buf};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
		struct cmsghdr *c;
		struct ucred cr = {0, 0, 0};
		ssize_t n = recvmsg(fd, &m, 0), i;
		if (n < 0) {
			perror("notifysock: recvmsg");
			return 1;
		}
		for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
				memcpy(&cr, CMSG_DATA(c), sizeof cr);
		printf("pid=%d ", (int)cr.pid);
		for (i = 0; i < n; i++) {
			unsigned char ch = (unsigned char)buf[i];
			if (ch == '\n')
				putchar(' ');
			else if (ch < 0x20 || ch > 0x7e || ch == '\\')
				printf("\\x%02x", ch);
			else
				putchar(ch);
		}
		putchar('\n');
		fflush(stdout);
	}
}
