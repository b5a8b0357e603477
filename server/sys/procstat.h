/* SPDX-License-Identifier: Apache-2.0 */
/* procstat.h - a process's start time from /proc/<pid>/stat: with its
 * pid, what names that process and no later one with the same pid; and
 * the image it runs, which each exec changes. The
 * text holds the process's own name (comm), which it chooses: parsed
 * from the last ')'. */
#ifndef PROCCTL_PROCSTAT_H
#define PROCCTL_PROCSTAT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* <proc_root>/<pid>/<name> (proc_root NULL: /proc) into buf, at most cap
 * bytes: how many, or -ESRCH (gone), -errno. */
ssize_t procstat_read(const char *proc_root, pid_t pid, const char *name, char *buf, size_t cap);
/* Field 22 (starttime, clock ticks after boot) of a stat line: 0 and
 * *out, or -EINVAL. (0 is a process of the boot's first tick: nothing
 * binds to it, since 0 means unbound.) */
int procstat_parse_start(const char *text, size_t len, uint64_t *out);
/* The same from <proc_root>/<pid>/stat (proc_root NULL: /proc): -ESRCH
 * gone, -EINVAL, -errno. */
int procstat_start(const char *proc_root, pid_t pid, uint64_t *out);
/* The image a stat line's process runs, as a nonzero 64-bit value folded
 * from where its exec placed code, stack, arguments and environment
 * (fields 26-28, 48-51; randomised anew by each exec): 0 and *out, or
 * -EINVAL. *out is 0 when they all read 0 (a reader without ptrace
 * access to the process, a kernel thread): no image to bind to. */
int procstat_parse_image(const char *text, size_t len, uint64_t *out);
/* Start time and image from one read of <proc_root>/<pid>/stat: 0, or
 * -ESRCH, -EINVAL, -errno. */
int procstat_ident(const char *proc_root, pid_t pid, uint64_t *start, uint64_t *image);

/* The effective uid and gid of a /proc/<pid>/status text (its "Uid:" and
 * "Gid:" lines: real, effective, saved, fs): 0, or -EINVAL. */
int procstat_parse_ids(const char *text, size_t len, uid_t *uid, gid_t *gid);
/* The cgroup v2 path of a /proc/<pid>/cgroup text (its "0::" line),
 * copied into out (cap bytes): 0, or -ENOENT (none: v1 only), -EINVAL. */
int procstat_parse_cgroup2(const char *text, size_t len, char *out, size_t cap);
/* Both from <proc_root>/<pid>/{status,cgroup}: 0, -ESRCH, -EINVAL, -errno;
 * cgroup is "" when there is no v2 line. */
int procstat_who(const char *proc_root, pid_t pid, uid_t *uid, gid_t *gid, char *cgroup, size_t cap);

#endif
