/* SPDX-License-Identifier: Apache-2.0 */
/* nodelock.c - the daemon's own lock (nodelock.h). */
#define _GNU_SOURCE 1
#include "nodelock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "procctl_agent.h"

#define NAME "NODE.lock" /* upper case: no consumer's lock file has this name */

int nodelock_current(const struct nodelock *l)
{
	struct stat a, b;
	if (fstat(l->fd, &a) < 0 || fstatat(l->dirfd, NAME, &b, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Wait for the lock on l->fd: 0 held; 1 stopping; -errno. */
static int wait_lock(struct nodelock *l, volatile sig_atomic_t *stopping)
{
	if (flock(l->fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno != EWOULDBLOCK)
		return -errno;
	node_log(PROCCTL_LOG_INFO, "standby", "lock=%s reason=\"another procctl-node holds it\"", l->path);
	while (flock(l->fd, LOCK_EX) < 0)
		if (errno != EINTR || *stopping)
			return *stopping ? 1 : -errno;
	node_log(PROCCTL_LOG_INFO, "taking_over", "lock=%s", l->path);
	return 0;
}

int nodelock_take(struct nodelock *l, const char *dir, volatile sig_atomic_t *stopping, char *err, size_t errlen)
{
	int r;
	l->fd = -1;
	snprintf(l->path, sizeof l->path, "%s/" NAME, dir);
	if ((l->dirfd = procctl_trusted_dir(dir, err, errlen)) < 0)
		return l->dirfd;
	/* A lock taken on a file deleted or replaced meanwhile excludes
	 * nobody: open the path again. */
	do {
		if (l->fd >= 0)
			close(l->fd);
		l->fd = openat(l->dirfd, NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0600);
		if (l->fd < 0) {
			r = -errno;
			break;
		}
		r = wait_lock(l, stopping);
	} while (!r && !nodelock_current(l));
	if (r < 0)
		snprintf(err, errlen, "%s: %s", l->path, strerror(-r));
	if (r) {
		nodelock_release(l);
		return r;
	}
	return 0;
}

void nodelock_release(struct nodelock *l)
{
	if (l->fd >= 0)
		close(l->fd); /* and the flock */
	if (l->dirfd >= 0)
		close(l->dirfd);
	l->fd = l->dirfd = -1;
}
