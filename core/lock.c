/* SPDX-License-Identifier: Apache-2.0 */
/* lock.c - node locks (SPEC.md 8.1): write authority per consumer is an
 * exclusive flock on <dir>/<consumer>.lock; <dir>/domain names the lock
 * domain; each lock file keeps the epoch of its last holder. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lock.h"

static int mkdir_p(const char *dir)
{
	char path[PATH_MAX];
	size_t i, n = strlen(dir);
	if (n == 0 || n >= sizeof path)
		return -EINVAL;
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

static int read_u32(int fd, uint32_t *v)
{
	unsigned char b[4];
	ssize_t n = pread(fd, b, sizeof b, 0);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof b)
		return -ENODATA;
	*v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return 0;
}

static int write_u32(int fd, uint32_t v)
{
	unsigned char b[8] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
			      (unsigned char)(v >> 24), 0, 0, 0, 0};
	return pwrite(fd, b, sizeof b, 0) == (ssize_t)sizeof b ? 0 : -errno;
}

int procctl_lock_domain(const char *dir, uint32_t *domain)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int fd, err;
	uint32_t v = 0;

	err = mkdir_p(dir);
	if (err)
		return err;
	snprintf(path, sizeof path, "%s/domain", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* Create it atomically: write a temporary file, link it into
		 * place; whoever links first wins and the others read theirs. */
		while (v == 0 || v > PROCCTL_DOMAIN_MAX)
			if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
				return -errno;
		/* A unique name: agents in separate containers are often all
		 * pid 1, so a pid would not do. */
		snprintf(tmp, sizeof tmp, "%s/.domain.XXXXXX", dir);
		fd = mkostemp(tmp, O_CLOEXEC);
		if (fd < 0)
			return -errno;
		fchmod(fd, 0644);
		err = write_u32(fd, v);
		close(fd);
		if (!err && link(tmp, path) < 0 && errno != EEXIST)
			err = -errno;
		unlink(tmp);
		if (err)
			return err;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	err = read_u32(fd, &v);
	close(fd);
	if (err)
		return err;
	if (v == 0 || v > PROCCTL_DOMAIN_MAX)
		return -EINVAL;
	*domain = v;
	return 0;
}

int procctl_lock_open(const char *dir, const char *consumer)
{
	char path[PATH_MAX];
	int fd, err = mkdir_p(dir);
	if (err)
		return err;
	if (procctl_name_valid(consumer, PROCCTL_CONSUMER_MAX) < 0)
		return -EINVAL;
	snprintf(path, sizeof path, "%s/%s.lock", dir, consumer);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	return fd < 0 ? -errno : fd;
}

int procctl_lock_current(int fd, const char *dir, const char *consumer)
{
	char path[PATH_MAX];
	struct stat a, b;
	snprintf(path, sizeof path, "%s/%s.lock", dir, consumer);
	if (fstat(fd, &a) < 0 || stat(path, &b) < 0)
		return 0;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int procctl_lock_take(int fd, const char *dir, const char *consumer, uint32_t *epoch)
{
	uint32_t last = 0;
	int err;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	/* A lock on a file no longer at the path excludes nobody. */
	if (!procctl_lock_current(fd, dir, consumer)) {
		flock(fd, LOCK_UN);
		return -ESTALE;
	}
	err = read_u32(fd, &last);
	if (err && err != -ENODATA)
		goto fail;
	/* The next epoch, 0 skipped; recorded before any write section. */
	*epoch = last + 1 ? last + 1 : 1;
	err = write_u32(fd, *epoch);
	if (!err)
		return 0;
fail:
	flock(fd, LOCK_UN);
	return err;
}

void procctl_lock_drop(int fd)
{
	flock(fd, LOCK_UN);
}

void procctl_lock_remove(int fd, const char *dir, const char *consumer)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s.lock", dir, consumer);
	if (procctl_lock_current(fd, dir, consumer))
		unlink(path);
}
