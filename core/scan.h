/* SPDX-License-Identifier: Apache-2.0 */
/* scan.h - the scan's bounded forms for a loop (registry.c): one process's
 * fd table in steps, a step bounded in fd links as well as processes, and
 * one fd alone. procctl_agent.h has the public walks these extend.
 * Internal to libprocctl-agent. */
#ifndef PROCCTL_SCAN_H
#define PROCCTL_SCAN_H

/* This file's globals carry the library's prefix in their symbols. */
#define scan_begin_pid procctl__scan_begin_pid
#define scan_step_links procctl__scan_step_links
#define scan_fd procctl__scan_fd

#include <sys/types.h>

#include "procctl_agent.h"

/* An iterator over the fd table of pid alone, for scan_step_links and
 * procctl_scan_end: NULL with errno (ENOENT: no such process). */
procctl_scan_iter_t *scan_begin_pid(const char *proc_root, pid_t pid);

/* procctl_scan_step reading at most *links fd links, counted down: a
 * process with more is taken up where the step stopped at the next one. */
int scan_step_links(procctl_scan_iter_t *it, const char *consumer, unsigned max_pids, unsigned *links,
		    procctl_scan_cb cb, void *arg);

/* Fd fd of pid alone, as procctl_scan_pid would see it: 1 when it is a
 * region of consumer's (NULL: any) and cb was called, 0 when not, the
 * callback's error, -ESRCH (no fd directory) or -EACCES. */
int scan_fd(const char *proc_root, pid_t pid, int fd, const char *consumer, procctl_scan_cb cb, void *arg);

#endif
