/* SPDX-License-Identifier: Apache-2.0 */
/* safedir.c - directories an agent can trust with its files
 * (procctl_trusted_dir, SPEC.md 8.1): nobody else can put a symlink or
 * a file of theirs where the agent creates its own. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procctl_agent.h"

/* Make dir and its missing parents, mode 0755 (less the umask). */
static int mkdir_p(const char *dir)
{
	char path[PATH_MAX];
	size_t i, n = strlen(dir);
	if (n == 0 || n >= sizeof path)
		return -ENAMETOOLONG;
	memcpy(path, dir, n + 1);
	for (i = 1; i <= n; i++)
		if (path[i] == '/' || path[i] == 0) {
			char c = path[i];
			path[i] = 0;
			if (mkdir(path, 0755) < 0 && errno != EEXIST)
				return -errno;
			path[i] = c;
		}
	return 0;
}

/* One component, st of it, seen as path: 0 or -EPERM with why. The last
 * must be the caller's own and writable by nobody else; one above may be
 * root's too, and writable by others only when sticky (/tmp). */
static int judge(const struct stat *st, const char *path, int last, char *why, size_t whylen)
{
	uid_t me = geteuid();
	mode_t m = st->st_mode;
	if (!S_ISDIR(m)) {
		snprintf(why, whylen, "%s is not a directory", path);
		return -ENOTDIR;
	}
	if (last ? st->st_uid != me : st->st_uid != me && st->st_uid != 0) {
		snprintf(why, whylen, "%s is owned by uid %u, not %s%u", path, (unsigned)st->st_uid,
			 last || !me ? "" : "root or ", (unsigned)me);
		return -EPERM;
	}
	if ((m & (S_IWGRP | S_IWOTH)) && (last || !(m & S_ISVTX))) {
		snprintf(why, whylen, "%s is writable by %s (mode 0%o)", path, m & S_IWOTH ? "others" : "its group",
			 (unsigned)(m & 07777));
		return -EPERM;
	}
	return 0;
}

/* strict: dir itself must be the caller's and writable by nobody else;
 * else it is judged as the components above it are. */
static int trusted(const char *dir, int strict, char *why, size_t whylen)
{
	struct stat st;
	size_t start, end;
	char *real, saved;
	int fd, nfd, r;

	if (!dir || dir[0] != '/') {
		snprintf(why, whylen, "%s: not an absolute path", dir ? dir : "(null)");
		return -EINVAL;
	}
	if ((r = mkdir_p(dir)) < 0) {
		snprintf(why, whylen, "%s: making it: %s", dir, strerror(-r));
		return r;
	}
	if (!(real = realpath(dir, NULL))) {
		r = -errno;
		snprintf(why, whylen, "%s: %s", dir, strerror(errno));
		return r;
	}
	/* Down from /, never through a symlink: what realpath saw is what
	 * is opened, or the walk fails. */
	if ((fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(why, whylen, "/: %s", strerror(errno)); /* out of descriptors, say */
	} else
		r = judge(&st, "/", strict && !real[1], why, whylen);
	for (start = 1; !r && real[start]; start = end + (real[end] != 0)) {
		for (end = start; real[end] && real[end] != '/'; end++)
			;
		saved = real[end];
		real[end] = 0; /* real is the path so far, real + start its last name */
		nfd = openat(fd, real + start, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if ((fd = nfd) < 0 || fstat(fd, &st) < 0) {
			r = -errno;
			snprintf(why, whylen, "%s: %s (changed while checked)", real, strerror(errno));
		} else {
			r = judge(&st, real, strict && !saved, why, whylen);
		}
		real[end] = saved;
	}
	free(real);
	if (r) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}

int procctl_trusted_dir(const char *dir, char *why, size_t whylen)
{
	return trusted(dir, 1, why, whylen);
}

int procctl_trusted_parent(const char *dir, char *why, size_t whylen)
{
	return trusted(dir, 0, why, whylen);
}
