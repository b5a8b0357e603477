/* SPDX-License-Identifier: Apache-2.0 */
/* sdnotify.c - sd_notify(3)'s protocol: a datagram to $NOTIFY_SOCKET. */
#define _GNU_SOURCE 1
#include "sdnotify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int sdnotify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t len;
	ssize_t sent;
	int fd, r;

	if (!path || !*path)
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len < 2 || len >= sizeof a.sun_path)
		return -EINVAL;
	memcpy(a.sun_path, path, len);
	if (a.sun_path[0] == '@')
		a.sun_path[0] = 0; /* abstract: the name is the bytes after the NUL, unterminated */
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL | MSG_DONTWAIT, (struct sockaddr *)&a,
		      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/')));
	r = sent < 0 ? -errno : 1;
	close(fd);
	return r;
}

int64_t sdnotify_watchdog_ns(void)
{
	const char *us = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	unsigned long long v;
	char *end;

	if (pid && *pid) {
		errno = 0;
		v = strtoull(pid, &end, 10);
		if (*end || errno || v != (unsigned long long)getpid())
			return 0; /* meant for another process (ours forked, or theirs) */
	}
	if (!us || !*us || *us == '-' || *us == '+')
		return 0;
	errno = 0;
	v = strtoull(us, &end, 10);
	if (*end || errno || !v || v > (unsigned long long)INT64_MAX / 1000)
		return 0;
	return (int64_t)v * 1000;
}
