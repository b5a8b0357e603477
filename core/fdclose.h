/* SPDX-License-Identifier: Apache-2.0 */
/* fdclose.h - closing file descriptors whose close is slow, off the
 * caller's thread. A uprobe's perf event waits in close for RCU grace
 * periods (70-90 ms each on a 2-vCPU VM), and the kernel serializes those
 * closes (event_mutex): an event loop must not do them. Internal to
 * libprocctl-agent. */
#ifndef PROCCTL_FDCLOSE_H
#define PROCCTL_FDCLOSE_H

#include <stddef.h>

/* Close fds[0..n) (entries below 0 are skipped). */
void procctl_close_all(const int *fds, size_t n);

/* The same off this thread: fds (malloc'd) is queued for the one closer
 * thread, and freed when it is done. Where no thread can start, the queue
 * is closed here. */
void procctl_close_detached(int *fds, size_t n);

/* The fds procctl_close_detached took that are not closed yet. While
 * there are, a perf_event_open of a uprobe would wait for them (the
 * kernel's event_mutex). */
long procctl_close_pending(void);

/* The closer thread starts no close while a pause holds, so a uprobe can
 * be placed without waiting behind the queue: procctl_close_pause asks it
 * to stop before its next close and returns 1 when none is in flight (the
 * kernel's event_mutex is not the closer's until procctl_close_resume), 0
 * when one is (it stops after it: procctl_close_quiet says when). Each
 * pause is undone by one procctl_close_resume. Closes made where no
 * thread starts (procctl_close_detached's fallback) do not wait. */
int procctl_close_pause(void);
int procctl_close_quiet(void);
void procctl_close_resume(void);

/* Close fd, whose close may never return (a FUSE file's waits on its
 * server), on a thread of its own, with at most max such closes under
 * way: 0; -EBUSY when max are, or no thread starts (fd stays open, the
 * caller's: closing it on its own thread could wait for ever). */
int procctl_close_suspect(int fd, unsigned max);

#endif
