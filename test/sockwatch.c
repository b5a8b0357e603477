/* SPDX-License-Identifier: Apache-2.0 */
/* sockwatch.c - sockwatch DIR NAME: wait (inotify) for DIR/NAME to be
 * created and print its mode the moment it appears ("mode=0660"), so a
 * test sees a socket's mode before its creator could chmod it. Prints
 * "ready" once watching. Exit 0, or 1 with a message. */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int ifd = inotify_init1(IN_CLOEXEC), dfd;
	struct stat st;
	if (argc != 3 || ifd < 0 || inotify_add_watch(ifd, argv[1], IN_CREATE) < 0 ||
	    (dfd = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "usage: sockwatch DIR NAME (DIR must exist)\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		ssize_t n = read(ifd, buf, sizeof buf), i;
		if (n <= 0)
			return 1;
		for (i = 0; i < n;) {
			const struct inotify_event *e = (const void *)(buf + i);
			if (e->len && !strcmp(e->name, argv[2]) && fstatat(dfd, argv[2], &st, AT_SYMLINK_NOFOLLOW) == 0) {
				printf("mode=0%o\n", (unsigned)(st.st_mode & 07777));
				return 0;
			}
			i += (ssize_t)(sizeof *e + e->len);
		}
	}
}
