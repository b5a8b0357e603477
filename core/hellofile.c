/* SPDX-License-Identifier: Apache-2.0 */
/* hellofile.c - the hello probe's way into mapped files (hellofile.h). */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
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

void hello_sweep(const char *proc, hello_mapping_fn fn, void *arg)
{
	DIR *d = opendir(proc);
	struct dirent *de;
	if (!d)
		return;
	while ((de = readdir(d))) {
		char p[320], line[4608];
		FILE *f;
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (pid <= 0 || *end)
			continue;
		snprintf(p, sizeof p, "%s/%ld/maps", proc, pid);
		if (!(f = fopen(p, "re")))
			continue;
		while (fgets(line, sizeof line, f)) {
			uint64_t start, stop, off, ino;
			unsigned maj, min;
			char perms[8];
			int at = 0;
			struct hello_key k;
			if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &start, &stop, perms, &off,
				   &maj, &min, &ino, &at) < 7 ||
			    strlen(perms) < 3 || perms[2] != 'x')
				continue;
			line[strcspn(line, "\n")] = 0;
			k = (struct hello_key){maj, min, ino};
			fn(arg, (pid_t)pid, start, stop, &k, at ? line + at : NULL);
		}
		fclose(f);
	}
	closedir(d);
}
