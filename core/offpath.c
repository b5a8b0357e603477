/* SPDX-License-Identifier: Apache-2.0 */
/* offpath.c - run a job that may block forever (a remote read of a page
 * behind userfaultfd or FUSE, SPEC.md 7.2) on a worker thread, and wait
 * for it only until a deadline. A job that misses its deadline is
 * abandoned: its worker stays blocked, the job frees itself when (if) it
 * finishes, and the caller has long moved on.
 *
 * Workers that are stuck in abandoned jobs do not count against the pool:
 * up to MAX_READY workers serve new jobs beside at most MAX_STUCK stuck
 * ones (callers keep it to one per process: a stuck process costs one
 * small-stacked thread, and the rest of the node is served); past that,
 * with every worker stuck, a new job fails at once with -EAGAIN. Idle
 * workers beyond MAX_READY, freed from stuck jobs, exit. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "offpath.h"
#include "thread.h"

#define MAX_READY 16                 /* workers not stuck in an abandoned job */
#define MAX_STUCK 4096               /* workers stuck (the default max_regions) */
#define WORKER_STACK (256u << 10)    /* a job reads into its own heap buffer */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_cond_t work, done; /* CLOCK_MONOTONIC */
static struct procctl_job *queue_head, *queue_tail;
static int workers, idle, stuck, queued, starting; /* all under mu */

static void init_conds(void)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&work, &a);
	pthread_cond_init(&done, &a);
	pthread_condattr_destroy(&a);
}

/* Under mu. */
static void job_put(struct procctl_job *j)
{
	if (--j->refs == 0) {
		if (j->release)
			j->release(j);
		free(j);
	}
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "procctl-offpath");
	pthread_mutex_lock(&mu);
	starting--;
	for (;;) {
		struct procctl_job *j;
		while (!queue_head) {
			if (idle >= MAX_READY) { /* one freed from a stuck job */
				workers--;
				pthread_mutex_unlock(&mu);
				return NULL;
			}
			idle++;
			pthread_cond_wait(&work, &mu);
			idle--;
		}
		j = queue_head;
		queue_head = j->next;
		if (!queue_head)
			queue_tail = NULL;
		queued--;
		j->running = 1;
		pthread_mutex_unlock(&mu);
		j->result = j->fn(j);
		pthread_mutex_lock(&mu);
		j->finished = 1; /* late no longer: procctl_job_late says 0 */
		if (j->abandoned)
			stuck--; /* its worker is free again */
		pthread_cond_broadcast(&done);
		if (j->done) { /* started without a waiter: say so, then let go */
			pthread_mutex_unlock(&mu);
			j->done(j);
			pthread_mutex_lock(&mu);
		}
		job_put(j);
	}
	return NULL;
}

struct procctl_job *procctl_job_new(size_t size, int (*fn)(struct procctl_job *))
{
	struct procctl_job *j = calloc(1, size);
	if (j) {
		j->fn = fn;
		j->refs = 1;
	}
	return j;
}

/* Under mu: a worker for every queued job (and `more` about to be), as
 * far as the pool allows; after a job gets stuck too, for the jobs that
 * waited behind it. */
static void grow(int more)
{
	while (queued + more > idle + starting && workers - stuck < MAX_READY && workers < MAX_READY + MAX_STUCK) {
		pthread_t t;
		pthread_attr_t a;
		int err;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&a, WORKER_STACK);
		err = procctl__thread_start(&t, &a, worker, NULL);
		pthread_attr_destroy(&a);
		if (err)
			break;
		workers++;
		starting++;
	}
}

/* Under mu: queue j for a worker, starting one if the pool allows. */
static int enqueue(struct procctl_job *j)
{
	grow(1);
	if (!idle && workers - stuck <= 0)
		return -EAGAIN; /* every thread is stuck: nothing can run it */
	j->refs++; /* the worker's */
	j->next = NULL;
	if (queue_tail)
		queue_tail->next = j;
	else
		queue_head = j;
	queue_tail = j;
	queued++;
	pthread_cond_signal(&work);
	return 0;
}

int procctl_job_run(struct procctl_job *j, int64_t deadline_ns)
{
	struct timespec ts;
	int r;

	pthread_once(&once, init_conds);
	if (deadline_ns < 0)
		deadline_ns = 0;
	ts.tv_sec = (time_t)(deadline_ns / 1000000000);
	ts.tv_nsec = (long)(deadline_ns % 1000000000);
	pthread_mutex_lock(&mu);
	if ((r = enqueue(j)) < 0) {
		pthread_mutex_unlock(&mu);
		return r;
	}
	/* Any error from timedwait (past deadline, EINVAL) ends the wait. */
	while (!j->finished && pthread_cond_timedwait(&done, &mu, &ts) == 0)
		;
	if (j->finished) {
		r = j->result;
	} else {
		/* Abandon it; if no worker took it yet, take it back first. */
		struct procctl_job **pp = &queue_head, *prev = NULL;
		int taken = 0;
		for (; *pp; prev = *pp, pp = &(*pp)->next)
			if (*pp == j) {
				*pp = j->next;
				if (queue_tail == j)
					queue_tail = prev;
				queued--;
				j->refs--;
				taken = 1;
				break;
			}
		if (!taken) { /* a worker is inside it */
			j->abandoned = 1;
			stuck++;
			if (j->abandon)
				j->abandon(j);
			grow(0);
		}
		job_put(j);
		r = -ETIMEDOUT;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

void procctl_job_free(struct procctl_job *j)
{
	pthread_mutex_lock(&mu);
	job_put(j);
	pthread_mutex_unlock(&mu);
}

int procctl_job_start(struct procctl_job *j)
{
	int r;
	pthread_once(&once, init_conds);
	pthread_mutex_lock(&mu);
	r = enqueue(j);
	pthread_mutex_unlock(&mu);
	return r;
}

int procctl_job_late(struct procctl_job *j)
{
	int late;
	pthread_mutex_lock(&mu);
	late = j->running && !j->finished && !j->abandoned;
	if (late) {
		j->abandoned = 1;
		stuck++; /* until it finishes */
		if (j->abandon)
			j->abandon(j);
		grow(0);
	}
	pthread_mutex_unlock(&mu);
	return late;
}
