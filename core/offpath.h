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
	void (*abandon)(struct procctl_job *); /* optional: its caller gave up, or said it is late */
	void (*release)(struct procctl_job *); /* optional, before free */
	void (*done)(struct procctl_job *);    /* procctl_job_start's: on the worker, after fn */
	struct procctl_job *next;
	int refs, running, finished, abandoned, result;
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

/* Run j on a worker without waiting: j->done(j) is called there when fn
 * returns (however long that takes), then the caller reads j->result and
 * frees j with procctl_job_free (not before done). 0, or -EAGAIN when
 * every thread is stuck. */
int procctl_job_start(struct procctl_job *j);
/* The caller's deadline for a started j passed: its worker, if fn is
 * running, counts as stuck (a new one serves others) and abandon runs;
 * done still comes when fn returns. 1 if it was running, 0 if it had
 * finished or not started (it is then left as it is). */
int procctl_job_late(struct procctl_job *j);

#endif
