/* SPDX-License-Identifier: Apache-2.0 */
/* scan.c - find procctl regions by walking /proc/<pid>/fd (SPEC.md 2.4). */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "procctl.h"
#include "client.h"
#include "procctl_agent.h"

#ifndef STATX_MNT_ID
#define PROCCTL_STATX_MNT_ID 0x1000u /* Linux 5.8 */
#else
#define PROCCTL_STATX_MNT_ID STATX_MNT_ID
#endif

#define LINK_PREFIX "/memfd:" PROCCTL_NAME_PREFIX
#define LINK_SUFFIX " (deleted)"

int procctl_scan_parse_link(const char *link, size_t len, char consumer[32], uint32_t *version)
{
	const size_t pre = sizeof LINK_PREFIX - 1, suf = sizeof LINK_SUFFIX - 1;
	const char *name, *v = NULL;
	size_t n, i, clen;
	uint64_t ver = 0;

	/* "/memfd:procctl:<consumer>-v<N> (deleted)": memfds are never linked. */
	if (len < pre + suf || memcmp(link, LINK_PREFIX, pre) || memcmp(link + len - suf, LINK_SUFFIX, suf))
		return -EINVAL;
	name = link + pre;
	n = len - pre - suf;
	for (i = 0; i + 1 < n; i++) /* the last "-v" */
		if (name[i] == '-' && name[i + 1] == 'v')
			v = name + i;
	if (!v)
		return -EINVAL;
	clen = (size_t)(v - name);
	if (clen == 0 || clen > PROCCTL_CONSUMER_MAX)
		return -EINVAL;
	for (i = 0; i < clen; i++) {
		char ch = name[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-'))
			return -EINVAL;
	}
	/* N: decimal, >= 1, no leading zero, fits in 32 bits. */
	if (v + 2 == name + n || v[2] == '0')
		return -EINVAL;
	for (i = (size_t)(v + 2 - name); i < n; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -EINVAL;
		ver = ver * 10u + (uint64_t)(name[i] - '0');
		if (ver > UINT32_MAX)
			return -EINVAL;
	}
	memset(consumer, 0, 32);
	memcpy(consumer, name, clen);
	*version = (uint32_t)ver;
	return 0;
}

static int is_pid(const char *s, pid_t *pid)
{
	long v = 0;
	if (!*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 0x3fffffff)
			return 0;
		v = v * 10 + (*s - '0');
	}
	*pid = (pid_t)v;
	return v > 0;
}

/* The regions among the fds of one process; fddir is <root>/<pid>/fd.
 * *denied: its links could not be read (no ptrace access to it: the
 * directory of a process of one's own uid opens, its links do not). */
static int scan_fds(int fddir, pid_t pid, const char *consumer, procctl_scan_cb cb, void *arg, int *denied)
{
	DIR *d = fdopendir(fddir);
	struct dirent *de;
	int found = 0, r = 0;

	if (!d) {
		close(fddir);
		return 0;
	}
	while ((de = readdir(d))) {
		struct procctl_scan_entry e;
		char link[300];
		ssize_t n;
		pid_t fdnum;

		/* Only symlinks can be memfds; skip the rest without a syscall. */
		if ((de->d_type != DT_LNK && de->d_type != DT_UNKNOWN) || !is_pid(de->d_name, &fdnum))
			continue;
		n = readlinkat(dirfd(d), de->d_name, link, sizeof link);
		if (n < 0 && (errno == EACCES || errno == EPERM)) {
			*denied = 1; /* and so will every other link be */
			break;
		}
		if (n <= 0 || (size_t)n >= sizeof link)
			continue;
		memset(&e, 0, sizeof e);
		if (procctl_scan_parse_link(link, (size_t)n, e.consumer, &e.schema_version) < 0)
			continue;
		if (consumer && strcmp(consumer, e.consumer))
			continue;
		{
			/* The identity attach compares against; 0 when unknown (the
			 * fd closed meanwhile, or not on the memfd mount: a link name
			 * proves nothing). AT_STATX_DONT_SYNC: a FUSE or NFS file
			 * named like a memfd answers from cached attributes, never
			 * from a server that could keep us waiting. */
			struct statx sx;
			if (statx(dirfd(d), de->d_name, AT_STATX_DONT_SYNC, STATX_INO | PROCCTL_STATX_MNT_ID, &sx) == 0 &&
			    (!(sx.stx_mask & PROCCTL_STATX_MNT_ID) || (int64_t)sx.stx_mnt_id == procctl_memfd_mnt_id())) {
				e.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
				e.ino = (ino_t)sx.stx_ino;
			}
		}
		e.pid = pid;
		e.fd = (int)fdnum;
		found++;
		r = cb(&e, arg);
		if (r < 0)
			break;
	}
	closedir(d);
	return r < 0 ? r : found;
}

int procctl_scan_pid(const char *proc_root, pid_t pid, const char *consumer, procctl_scan_cb cb, void *arg)
{
	char path[64];
	int root, fddir, n, denied = 0;

	if (!cb || pid <= 0 || (consumer && procctl_name_valid(consumer, PROCCTL_CONSUMER_MAX) < 0))
		return -EINVAL;
	root = open(proc_root ? proc_root : "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	snprintf(path, sizeof path, "%d/fd", (int)pid);
	fddir = openat(root, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fddir < 0) {
		int err = errno == ENOENT ? -ESRCH : -errno;
		close(root);
		return err;
	}
	n = scan_fds(fddir, pid, consumer, cb, arg, &denied);
	close(root);
	return n == 0 && denied ? -EACCES : n;
}

struct procctl_scan_iter {
	DIR *d;
	pid_t skip;
	unsigned denied;
};

procctl_scan_iter_t *procctl_scan_begin(const char *proc_root, pid_t skip)
{
	procctl_scan_iter_t *it = calloc(1, sizeof *it);
	if (!it)
		return NULL;
	it->skip = skip;
	if (!(it->d = opendir(proc_root ? proc_root : "/proc"))) {
		int err = errno;
		free(it);
		errno = err;
		return NULL;
	}
	return it;
}

int procctl_scan_step(procctl_scan_iter_t *it, const char *consumer, unsigned max_pids, procctl_scan_cb cb, void *arg)
{
	struct dirent *de;
	unsigned seen = 0;
	while (seen < max_pids && (de = readdir(it->d))) {
		char path[64];
		pid_t pid;
		int fddir, r, denied = 0;

		if (!is_pid(de->d_name, &pid))
			continue;
		seen++;
		if (pid == it->skip)
			continue;
		snprintf(path, sizeof path, "%d/fd", (int)pid);
		fddir = openat(dirfd(it->d), path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fddir < 0) { /* gone, or no ptrace access to it */
			it->denied += errno == EACCES || errno == EPERM;
			continue;
		}
		r = scan_fds(fddir, pid, consumer, cb, arg, &denied);
		it->denied += (unsigned)denied;
		if (r < 0)
			return r;
	}
	return seen == max_pids;
}

void procctl_scan_end(procctl_scan_iter_t *it)
{
	if (it) {
		closedir(it->d);
		free(it);
	}
}

unsigned procctl_scan_denied(const procctl_scan_iter_t *it)
{
	return it->denied;
}

/* Counts what it finds for procctl_scan. */
struct counted {
	procctl_scan_cb cb;
	void *arg;
	int n;
};

static int count_one(const struct procctl_scan_entry *e, void *arg)
{
	struct counted *c = arg;
	c->n++;
	return c->cb(e, c->arg);
}

int procctl_scan(const char *proc_root, const char *consumer, procctl_scan_cb cb, void *arg)
{
	struct counted c = {cb, arg, 0};
	procctl_scan_iter_t *it;
	int r;
	if (!cb || (consumer && procctl_name_valid(consumer, PROCCTL_CONSUMER_MAX) < 0))
		return -EINVAL; /* a name no region can have */
	if (!(it = procctl_scan_begin(proc_root, 0)))
		return -errno;
	while ((r = procctl_scan_step(it, consumer, 256, count_one, &c)) > 0)
		;
	procctl_scan_end(it);
	return r < 0 ? r : c.n;
}
