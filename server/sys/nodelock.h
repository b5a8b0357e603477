/* SPDX-License-Identifier: Apache-2.0 */
/* nodelock.h - the daemon's own lock, <lock_dir>/NODE.lock (SPEC.md
 * 8.1): only its holder binds the sockets and writes the state directory.
 * Deleted or replaced while held, it excludes nobody: the holder stops
 * writing and stands by again. */
#ifndef PROCCTL_NODELOCK_H
#define PROCCTL_NODELOCK_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>

struct nodelock {
	int fd, dirfd;               /* the locked file; its (trusted) directory */
	char path[PATH_MAX];
};

/* Take NODE.lock in dir (which must be one the daemon can trust, else
 * -EPERM ... and err says why), waiting on standby while another daemon
 * holds it, with the calling thread's signal mask set to sigmask (NULL:
 * as it is) while it sleeps. 0 held; 1 *stopping became true while
 * waiting; -errno and err. */
int nodelock_take(struct nodelock *l, const char *dir, volatile sig_atomic_t *stopping, const sigset_t *sigmask,
		  char *err, size_t errlen);
/* 1 while l's file is still the one at its path. */
int nodelock_current(const struct nodelock *l);
/* Drop it and close its fds. */
void nodelock_release(struct nodelock *l);

#endif
