/* SPDX-License-Identifier: Apache-2.0 */
/* scan.c - find procctl regions by walking /proc/<pid>/fd (SPEC.md 2.4). */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "procctl.h"
#include "client.h"
#include "procctl_agent.h"
#include "scan.h"

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

/* A /proc name that is a number (a pid, or an fd: 0 is one) into *n. */
static int is_num(const char *s, int *n)
{
	long v = 0;
	if (!*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 0x3fffffff)
			return 0;
		v = v * 10 + (*s - '0');
	}
	*n = (int)v;
	return 1;
}

static int is_pid(const char *s, pid_t *pid)
{
	int v;
	if (!is_num(s, &v) || v <= 0)
		return 0;
	*pid = (pid_t)v;
	return 1;
}

/* The fd links a step reads for each process it may look at: a process
 * with more fds than the step has left is taken up where it stopped. */
#define LINKS_PER_PID 16

/* The link name (fd fdnum) in the fd directory dirfd of process pid: 1
 * when it is a region of consumer's (NULL: any) and cb said so, 0 when
 * not one, or the callback's error. *denied: links may not be read (no
 * ptrace access to the process: its directory opens, its links do not). */
static int scan_link(int dirfd, const char *name, int fdnum, pid_t pid, const char *consumer, procctl_scan_cb cb,
		     void *arg, int *denied)
{
	struct procctl_scan_entry e;
	struct statx sx;
	char link[300];
	ssize_t n = readlinkat(dirfd, name, link, sizeof link);
	int r;

	if (n < 0 && (errno == EACCES || errno == EPERM))
		*denied = 1; /* and so will every other link be */
	if (n <= 0 || (size_t)n >= sizeof link)
		return 0;
	memset(&e, 0, sizeof e);
	if (procctl_scan_parse_link(link, (size_t)n, e.consumer, &e.schema_version) < 0 ||
	    (consumer && strcmp(consumer, e.consumer)))
		return 0;
	/* The identity attach compares against; 0 when unknown (the fd closed
	 * meanwhile, or not on the memfd mount: a link name proves nothing).
	 * AT_STATX_DONT_SYNC: a FUSE or NFS file named like a memfd answers
	 * from cached attributes, never from a server that could keep us
	 * waiting. */
	if (statx(dirfd, name, AT_STATX_DONT_SYNC, STATX_INO | PROCCTL_STATX_MNT_ID, &sx) == 0 &&
	    (!(sx.stx_mask & PROCCTL_STATX_MNT_ID) || (int64_t)sx.stx_mnt_id == procctl_memfd_mnt_id())) {
		e.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
		e.ino = (ino_t)sx.stx_ino;
	}
	e.pid = pid;
	e.fd = fdnum;
	r = cb(&e, arg);
	return r < 0 ? r : 1;
}

/* The regions among the fds of one process from where its fd directory
 * d stands, reading up to *links links (counted down): 1 when it stopped
 * with more to read, 0 at the end (or at the first link refused), or the
 * callback's error. *found counts the regions. */
static int scan_fds(DIR *d, pid_t pid, const char *consumer, procctl_scan_cb cb, void *arg, unsigned *links,
		    int *found, int *denied)
{
	struct dirent *de;

	while (*links && (de = readdir(d))) {
		int fdnum, r;
		/* Only symlinks can be memfds; skip the rest without a syscall. */
		if ((de->d_type != DT_LNK && de->d_type != DT_UNKNOWN) || !is_num(de->d_name, &fdnum))
			continue;
		--*links;
		r = scan_link(dirfd(d), de->d_name, fdnum, pid, consumer, cb, arg, denied);
		if (r < 0)
			return r;
		if (*denied)
			return 0;
		*found += r;
	}
	return *links ? 0 : 1;
}

/* <root>/<pid>/fd, opened at root (a directory fd) for scan_fds: NULL with
 * errno (ENOENT: gone). */
static DIR *open_fds(int root, pid_t pid)
{
	char path[64];
	int fd;
	DIR *d;
	snprintf(path, sizeof path, "%d/fd", (int)pid);
	if ((fd = openat(root, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return NULL;
	if (!(d = fdopendir(fd)))
		close(fd);
	return d;
}

int procctl_scan_pid(const char *proc_root, pid_t pid, const char *consumer, procctl_scan_cb cb, void *arg)
{
	unsigned links = UINT_MAX;
	int root, r, found = 0, denied = 0;
	DIR *d;

	if (!cb || pid <= 0 || (consumer && procctl_name_valid(consumer, PROCCTL_CONSUMER_MAX) < 0))
		return -EINVAL;
	root = open(proc_root ? proc_root : "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	if (!(d = open_fds(root, pid))) {
		r = errno == ENOENT ? -ESRCH : -errno;
		close(root);
		return r;
	}
	close(root);
	r = scan_fds(d, pid, consumer, cb, arg, &links, &found, &denied);
	closedir(d);
	if (r < 0)
		return r;
	return found == 0 && denied ? -EACCES : found;
}

int scan_fd(const char *proc_root, pid_t pid, int fd, const char *consumer, procctl_scan_cb cb, void *arg)
{
	char path[320];
	int fds, r, denied = 0;

	snprintf(path, sizeof path, "%s/%d/fd", proc_root, (int)pid);
	if ((fds = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	snprintf(path, sizeof path, "%d", fd);
	r = scan_link(fds, path, fd, pid, consumer, cb, arg, &denied);
	close(fds);
	return r == 0 && denied ? -EACCES : r;
}

struct procctl_scan_iter {
	DIR *d;          /* <root>; NULL: one process's (scan_begin_pid) */
	DIR *fds;        /* the fd directory of pid under way: a step stopped in it */
	pid_t skip, pid; /* skip: passed over unread */
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

procctl_scan_iter_t *scan_begin_pid(const char *proc_root, pid_t pid)
{
	procctl_scan_iter_t *it = calloc(1, sizeof *it);
	int root = open(proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;
	if (it && root >= 0 && (it->fds = open_fds(root, pid))) {
		close(root);
		it->pid = pid;
		return it;
	}
	err = errno;
	if (root >= 0)
		close(root);
	free(it);
	errno = err;
	return NULL;
}

int scan_step_links(procctl_scan_iter_t *it, const char *consumer, unsigned max_pids, unsigned *links,
		    procctl_scan_cb cb, void *arg)
{
	unsigned seen = 0;
	for (;;) {
		struct dirent *de;
		pid_t pid;
		if (it->fds) {
			int r, found = 0, denied = 0;
			r = scan_fds(it->fds, it->pid, consumer, cb, arg, links, &found, &denied);
			it->denied += (unsigned)denied;
			if (r) /* more of this one at the next step, or the callback's error */
				return r;
			closedir(it->fds);
			it->fds = NULL;
		}
		if (!it->d)
			return 0; /* one process's: done */
		if (seen == max_pids)
			return 1;
		if (!(de = readdir(it->d)))
			return 0;
		if (!is_pid(de->d_name, &pid))
			continue;
		seen++;
		if (pid == it->skip)
			continue;
		it->pid = pid;
		if (!(it->fds = open_fds(dirfd(it->d), pid))) /* gone, or no ptrace access to it */
			it->denied += errno == EACCES || errno == EPERM;
	}
}

int procctl_scan_step(procctl_scan_iter_t *it, const char *consumer, unsigned max_pids, procctl_scan_cb cb, void *arg)
{
	unsigned links = max_pids > UINT_MAX / LINKS_PER_PID ? UINT_MAX : max_pids * LINKS_PER_PID;
	return scan_step_links(it, consumer, max_pids, &links, cb, arg);
}

void procctl_scan_end(procctl_scan_iter_t *it)
{
	if (it) {
		if (it->fds)
			closedir(it->fds);
		if (it->d)
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
