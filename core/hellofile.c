/* SPDX-License-Identifier: Apache-2.0 */
/* hellofile.c - the hello probe's way into a mapped file (hellofile.h). */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "hellofile.h"

/* fd (O_PATH) is the regular file k, on a filesystem that cannot stall
 * the agent: reopened for reading. -1 otherwise (fd closed either way). */
static int reopen_checked(int fd, const struct hello_key *k)
{
	char p[64];
	struct stat st;
	struct statfs sf;
	int r = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == k->ino && major(st.st_dev) == k->maj &&
	    minor(st.st_dev) == k->min && fstatfs(fd, &sf) == 0 && sf.f_type != FUSE_SUPER_MAGIC) {
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		r = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	}
	close(fd);
	return r;
}

int hello_open_mapped(const char *proc, pid_t pid, uint64_t start, uint64_t end, const struct hello_key *k,
		       const char *path)
{
	char p[320];
	struct open_how how;
	int fd, root;
	snprintf(p, sizeof p, "%s/%d/map_files/%" PRIx64 "-%" PRIx64, proc, (int)pid, start, end);
	if ((fd = open(p, O_PATH | O_CLOEXEC)) >= 0 && (fd = reopen_checked(fd, k)) >= 0)
		return fd;
	if (!path || path[0] != '/')
		return -1;
	snprintf(p, sizeof p, "%s/%d/root", proc, (int)pid);
	if ((root = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	memset(&how, 0, sizeof how);
	how.flags = O_PATH | O_CLOEXEC;
	how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	fd = (int)syscall(SYS_openat2, root, path, &how, sizeof how);
	close(root);
	return fd < 0 ? -1 : reopen_checked(fd, k);
}
