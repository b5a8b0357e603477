/* SPDX-License-Identifier: Apache-2.0 */
/* procstat.c - a process's start time (procstat.h). */
#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int procstat_parse_start(const char *text, size_t len, uint64_t *out)
{
	const char *p = NULL, *end = text + len;
	uint64_t v = 0;
	size_t i;
	int field;
	for (i = len; i > 0; i--) /* "pid (comm) S ppid ...": comm may hold anything */
		if (text[i - 1] == ')') {
			p = text + i;
			break;
		}
	if (!p)
		return -EINVAL;
	for (field = 2; field < 22; field++) { /* to the space before field 22 */
		if (!(p = memchr(p, ' ', (size_t)(end - p))))
			return -EINVAL;
		p++;
	}
	for (i = 0; p + i < end && p[i] >= '0' && p[i] <= '9'; i++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	if (!i || (p + i < end && p[i] != ' ' && p[i] != '\n'))
		return -EINVAL;
	*out = v;
	return 0;
}

int procstat_start(const char *proc_root, pid_t pid, uint64_t *out)
{
	char path[512], buf[1024];
	ssize_t n;
	int fd;
	snprintf(path, sizeof path, "%s/%d/stat", proc_root ? proc_root : "/proc", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof buf);
	close(fd);
	if (n < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	return procstat_parse_start(buf, (size_t)n, out);
}
