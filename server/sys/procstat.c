/* SPDX-License-Identifier: Apache-2.0 */
/* procstat.c - a process's start time (procstat.h). */
#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Field want (>= 3) of a stat line, a decimal number: 0 and *out, or -EINVAL. */
static int stat_field(const char *text, size_t len, int want, uint64_t *out)
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
	for (field = 2; field < want; field++) { /* to the space before field want */
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

int procstat_parse_start(const char *text, size_t len, uint64_t *out)
{
	return stat_field(text, len, 22, out);
}

int procstat_parse_image(const char *text, size_t len, uint64_t *out)
{
	static const int fields[] = {26, 27, 28, 48, 49, 50, 51}; /* code, stack, arguments, environment */
	uint64_t h = 0xcbf29ce484222325ull, v, any = 0;
	size_t i;
	for (i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		if (stat_field(text, len, fields[i], &v) < 0)
			return -EINVAL;
		any |= v;
		h = (h ^ v) * 0x100000001b3ull;
	}
	*out = any ? (h ? h : 1) : 0;
	return 0;
}

int procstat_ident(const char *proc_root, pid_t pid, uint64_t *start, uint64_t *image)
{
	char buf[1024];
	ssize_t n = procstat_read(proc_root, pid, "stat", buf, sizeof buf);
	if (n < 0)
		return (int)n;
	if (procstat_parse_start(buf, (size_t)n, start) < 0)
		return -EINVAL;
	if (procstat_parse_image(buf, (size_t)n, image) < 0)
		*image = 0; /* an older kernel's line: no image to bind to */
	return 0;
}

ssize_t procstat_read(const char *proc_root, pid_t pid, const char *name, char *buf, size_t cap)
{
	char path[512];
	size_t len = 0;
	ssize_t n = 0;
	int fd;
	snprintf(path, sizeof path, "%s/%d/%s", proc_root ? proc_root : "/proc", (int)pid, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	while (len < cap && (n = read(fd, buf + len, cap - len)) > 0)
		len += (size_t)n;
	n = n < 0 ? (errno == ESRCH ? -ESRCH : -errno) : (ssize_t)len;
	close(fd);
	return n;
}

int procstat_start(const char *proc_root, pid_t pid, uint64_t *out)
{
	char buf[1024];
	ssize_t n = procstat_read(proc_root, pid, "stat", buf, sizeof buf);
	return n < 0 ? (int)n : procstat_parse_start(buf, (size_t)n, out);
}

/* The second number of the line that starts with key, in text. */
static int second_field(const char *text, size_t len, const char *key, uint32_t *out)
{
	const char *line = text, *end = text + len;
	size_t k = strlen(key);
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line)), *le = nl ? nl : end, *p;
		if ((size_t)(le - line) > k && !memcmp(line, key, k)) {
			uint64_t v = 0;
			int field;
			for (p = line + k, field = 0; field < 2; field++) {
				while (p < le && (*p == '\t' || *p == ' '))
					p++;
				if (p == le || *p < '0' || *p > '9')
					return -EINVAL;
				for (v = 0; p < le && *p >= '0' && *p <= '9'; p++)
					if ((v = v * 10 + (uint64_t)(*p - '0')) > UINT32_MAX)
						return -EINVAL;
			}
			*out = (uint32_t)v;
			return 0;
		}
		line = le + 1;
	}
	return -EINVAL;
}

int procstat_parse_ids(const char *text, size_t len, uid_t *uid, gid_t *gid)
{
	uint32_t u, g;
	if (second_field(text, len, "Uid:", &u) < 0 || second_field(text, len, "Gid:", &g) < 0)
		return -EINVAL;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}

int procstat_parse_cgroup2(const char *text, size_t len, char *out, size_t cap)
{
	const char *line = text, *end = text + len;
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line)), *le = nl ? nl : end;
		size_t n = (size_t)(le - line);
		if (n > 3 && !memcmp(line, "0::", 3)) {
			if (line[3] != '/' || n - 3 >= cap || memchr(line + 3, 0, n - 3))
				return -EINVAL;
			memcpy(out, line + 3, n - 3);
			out[n - 3] = 0;
			return 0;
		}
		line = le + 1;
	}
	return -ENOENT;
}

int procstat_who(const char *proc_root, pid_t pid, uid_t *uid, gid_t *gid, char *cgroup, size_t cap)
{
	enum { CAP = 65536 };
	char *buf = malloc(CAP);
	ssize_t n;
	int r;
	if (!buf)
		return -ENOMEM;
	n = procstat_read(proc_root, pid, "status", buf, CAP);
	r = n < 0 ? (int)n : procstat_parse_ids(buf, (size_t)n, uid, gid);
	cgroup[0] = 0;
	if (!r && (n = procstat_read(proc_root, pid, "cgroup", buf, CAP)) < 0)
		r = (int)n;
	else if (!r && (r = procstat_parse_cgroup2(buf, (size_t)n, cgroup, cap)) == -ENOENT)
		r = 0;
	free(buf);
	return r;
}
