/* SPDX-License-Identifier: Apache-2.0 */
/* nodelock.c - the daemon's own lock (nodelock.h). */
#define _GNU_SOURCE 1
#include "nodelock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "procctl_agent.h"

#define NAME "NODE.lock" /* upper case: no consumer's lock file has this name */
#define RETRY_MS 1000

int nodelock_current(const struct nodelock *l)
{
	struct stat a, b;
	if (fstat(l->fd, &a) < 0 || fstatat(l->dirfd, NAME, &b, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Whether the lock on l->fd is ours now: 0 taken, 1 not yet, -errno. */
static int try_lock(struct nodelock *l)
{
	if (flock(l->fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	return errno == EWOULDBLOCK ? 1 : -errno;
}

/* Wait for the lock on l->fd: 0 held; 1 stopping; -errno. The holder
 * lets it go by closing the file (a stop, or its death): inotify says
 * so, and the lock is tried again; and every RETRY_MS, for a holder that
 * unlocks without closing (flock -u). The wait is a ppoll with the
 * signals of sigmask let through, so that a stop is never lost between a
 * look at *stopping and the sleep, as it can be before a blocking flock. */
static int wait_lock(struct nodelock *l, volatile sig_atomic_t *stopping, const sigset_t *sigmask)
{
	char self[64], buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct pollfd pfd;
	int r, in;
	if ((r = try_lock(l)) <= 0)
		return r;
	node_log(PROCCTL_LOG_INFO, "standby", "lock=%s reason=\"another procctl-node holds it\"", l->path);
	if ((in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
		return -errno;
	snprintf(self, sizeof self, "/proc/self/fd/%d", l->fd); /* the file opened, not the path's file now */
	if (inotify_add_watch(in, self, IN_CLOSE_WRITE | IN_CLOSE_NOWRITE | IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
		r = -errno;
		close(in);
		return r;
	}
	pfd = (struct pollfd){in, POLLIN, 0};
	while (!*stopping && (r = try_lock(l)) == 1) {
		struct timespec ts = {RETRY_MS / 1000, RETRY_MS % 1000 * 1000000L};
		if (ppoll(&pfd, 1, &ts, sigmask) < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		while (read(in, buf, sizeof buf) > 0) {
			/* drained: the lock is tried again */
		}
	}
	close(in);
	if (*stopping && r >= 0)
		return 1;
	if (r == 0)
		node_log(PROCCTL_LOG_INFO, "taking_over", "lock=%s", l->path);
	return r;
}

int nodelock_take(struct nodelock *l, const char *dir, volatile sig_atomic_t *stopping, const sigset_t *sigmask,
		  char *err, size_t errlen)
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
		r = wait_lock(l, stopping, sigmask);
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
