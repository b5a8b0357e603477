/* SPDX-License-Identifier: Apache-2.0 */
/* lock.h - node locks (SPEC.md 8.1). Internal to libprocctl-agent. Every
 * call takes the lock directory as an fd from procctl_trusted_dir. */
#ifndef PROCCTL_LOCK_H
#define PROCCTL_LOCK_H

#include <stdint.h>

#include "procctl.h"
#include "procctl_agent.h" /* PROCCTL_LOCK_DIR_DEFAULT */

/* The lock domain's id from <dir>/domain, creating the file (a random id,
 * linked into place atomically) when missing. */
int procctl_lock_domain(int dirfd, uint32_t *domain);

/* Open (creating, 0600) <dir>/<consumer>.lock: an fd, or -errno (-EPERM
 * someone else's file). */
int procctl_lock_open(int dirfd, const char *consumer);

/* Try to take the lock on fd, opened on <dir>/<consumer>.lock, without
 * waiting: 0 and the new epoch (above the file's last and the domain's
 * high-water mark in <dir>/epochs; written to both); -EAGAIN held by
 * someone else (or the epochs file, for a moment); -ESTALE the file at
 * the path is another (deleted or replaced): reopen. The lock is released
 * by procctl_lock_drop, close, or the process's death. */
int procctl_lock_take(int fd, int dirfd, const char *consumer, uint32_t *epoch);
/* 1 while fd is still the file at <dir>/<consumer>.lock. */
int procctl_lock_current(int fd, int dirfd, const char *consumer);
void procctl_lock_drop(int fd);
/* Remove <dir>/<consumer>.lock if it is still fd's file (call it holding
 * the lock, before dropping it: an agent waiting on the file then finds it
 * stale and opens a new one). */
void procctl_lock_remove(int fd, int dirfd, const char *consumer);

#endif
