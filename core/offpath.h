/* SPDX-License-Identifier: Apache-2.0 */
/* offpath.h - jobs that may block forever, waited for until a deadline.
 * Internal to libprocctl-agent. */
#ifndef PROCCTL_OFFPATH_H
#define PROCCTL_OFFPATH_H

#include <stddef.h>
#include <stdint.h>

/* Embed this first in a job struct; allocate with procctl_job_new. */
struct procctl_job {
	int (*fn)(struct procctl_job *);       /* runs on a worker */
	void (*abandon)(struct procctl_job *); /* optional: its caller gave up */
	void (*release)(struct procctl_job *); /* optional, before free */
	struct procctl_job *next;
	int refs, finished, abandoned, result;
};

struct procctl_job *procctl_job_new(size_t size, int (*fn)(struct procctl_job *));

/* Run j on a worker and wait until it finishes or CLOCK_MONOTONIC reaches
 * deadline_ns. Finished: returns fn's result and the caller still owns j
 * (read its results, then procctl_job_free). -ETIMEDOUT: j is abandoned,
 * the caller must not touch it again; it is freed when its worker is done
 * with it, or at once if no worker had started it. The abandon and
 * release hooks run under the executor's lock, so they see each other's
 * effects in order. */
int procctl_job_run(struct procctl_job *j, int64_t deadline_ns);
void procctl_job_free(struct procctl_job *j);

#endif
