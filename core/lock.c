/* SPDX-License-Identifier: Apache-2.0 */
/* lock.c - node locks (SPEC.md 8.1): write authority per consumer is an
 * exclusive flock on <dir>/<consumer>.lock; <dir>/domain names the lock
 * domain; each lock file keeps the epoch of its last holder and
 * <dir>/epochs the domain's high-water mark. Every file is opened relative to the trusted
 * directory's fd (procctl_trusted_dir), never through a symlink. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lock.h"

#define FILE_MODE 0600 /* a lock file others can open, others can flock */

static int read_u32(int fd, off_t off, uint32_t *v)
{
	unsigned char b[4];
	ssize_t n = pread(fd, b, sizeof b, off);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof b)
		return -ENODATA;
	*v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return 0;
}

static int write_u32(int fd, off_t off, uint32_t v)
{
	unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
			      (unsigned char)(v >> 24)};
	return pwrite(fd, b, sizeof b, off) == (ssize_t)sizeof b ? 0 : -errno;
}

/* name in dirfd, made FILE_MODE when missing; one made by someone else
 * with a wider mode is narrowed (the directory is ours: so is the file,
 * or the open refuses it). An fd, or -errno. */
static int open_file(int dirfd, const char *name, int flags)
{
	struct stat st;
	int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC, FILE_MODE), r = 0;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	else if (st.st_uid != geteuid())
		r = -EPERM;
	else if ((st.st_mode & 0777) != FILE_MODE && fchmod(fd, FILE_MODE) < 0)
		r = -errno;
	if (r) {
		close(fd);
		return r;
	}
	return fd;
}

/* Create the domain file atomically: a temporary file of a random name,
 * linked into place; whoever links first wins, the others read theirs. */
static int domain_create(int dirfd)
{
	char tmp[32];
	uint32_t v = 0, salt;
	int fd, err;
	while (v == 0 || v > PROCCTL_DOMAIN_MAX)
		if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
			return -errno;
	if (getrandom(&salt, sizeof salt, 0) != (ssize_t)sizeof salt)
		return -errno;
	/* A unique name: agents in separate containers are often all pid 1. */
	snprintf(tmp, sizeof tmp, ".domain.%08x", salt);
	fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, FILE_MODE);
	if (fd < 0)
		return -errno;
	err = write_u32(fd, 0, v);
	if (!err)
		err = write_u32(fd, 4, 0);
	close(fd);
	if (!err && linkat(dirfd, tmp, dirfd, "domain", 0) < 0 && errno != EEXIST)
		err = -errno;
	unlinkat(dirfd, tmp, 0);
	return err;
}

int procctl_lock_domain(int dirfd, uint32_t *domain)
{
	uint32_t v = 0;
	int fd, err;

	fd = open_file(dirfd, "domain", O_RDONLY);
	if (fd == -ENOENT) {
		if ((err = domain_create(dirfd)) < 0)
			return err;
		fd = open_file(dirfd, "domain", O_RDONLY);
	}
	if (fd < 0)
		return fd;
	err = read_u32(fd, 0, &v);
	close(fd);
	if (err)
		return err;
	if (v == 0 || v > PROCCTL_DOMAIN_MAX)
		return -EINVAL;
	*domain = v;
	return 0;
}

int procctl_lock_open(int dirfd, const char *consumer)
{
	char name[PROCCTL_CONSUMER_MAX + 8];
	if (procctl_name_valid(consumer, PROCCTL_CONSUMER_MAX) < 0)
		return -EINVAL;
	snprintf(name, sizeof name, "%s.lock", consumer);
	return open_file(dirfd, name, O_RDWR | O_CREAT);
}

int procctl_lock_current(int fd, int dirfd, const char *consumer)
{
	char name[PROCCTL_CONSUMER_MAX + 8];
	struct stat a, b;
	snprintf(name, sizeof name, "%s.lock", consumer);
	if (fstat(fd, &a) < 0 || fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The next epoch of the domain: above both the lock file's last (last)
 * and every epoch the domain handed out (the high-water mark in
 * <dir>/epochs, which it then records), 0 skipped. Under that file's
 * flock, held only for this; -EAGAIN while someone else holds it. */
static int next_epoch(int dirfd, uint32_t last, uint32_t *epoch)
{
	uint32_t high = 0;
	int fd = open_file(dirfd, "epochs", O_RDWR | O_CREAT), err;
	if (fd < 0)
		return fd;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		err = errno == EWOULDBLOCK ? -EAGAIN : -errno;
		close(fd);
		return err;
	}
	err = read_u32(fd, 0, &high);
	if (err == -ENODATA) /* new, or short: no mark yet */
		high = 0, err = 0;
	if (!err) {
		*epoch = (high > last ? high : last) + 1;
		if (!*epoch)
			*epoch = 1;
		err = write_u32(fd, 0, *epoch);
	}
	if (!err)
		err = write_u32(fd, 4, 0);
	close(fd); /* and the flock */
	return err;
}

int procctl_lock_take(int fd, int dirfd, const char *consumer, uint32_t *epoch)
{
	uint32_t last = 0;
	int err;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	/* A lock on a file no longer at the path excludes nobody. */
	if (!procctl_lock_current(fd, dirfd, consumer)) {
		flock(fd, LOCK_UN);
		return -ESTALE;
	}
	err = read_u32(fd, 0, &last);
	if (err == -ENODATA)
		last = 0, err = 0;
	/* Recorded in both files before any write section. */
	if (!err)
		err = next_epoch(dirfd, last, epoch);
	if (!err)
		err = write_u32(fd, 0, *epoch);
	if (!err)
		err = write_u32(fd, 4, 0);
	if (!err)
		return 0;
	flock(fd, LOCK_UN);
	return err;
}

void procctl_lock_drop(int fd)
{
	flock(fd, LOCK_UN);
}

void procctl_lock_remove(int fd, int dirfd, const char *consumer)
{
	char name[PROCCTL_CONSUMER_MAX + 8];
	snprintf(name, sizeof name, "%s.lock", consumer);
	if (procctl_lock_current(fd, dirfd, consumer))
		unlinkat(dirfd, name, 0);
}
