/* offpath.c - run a job that may block forever (a remote read of a page
 * behind userfaultfd or FUSE, SPEC.md 7.2) on a worker thread, and wait
 * for it only until a deadline. A job that misses its deadline is
 * abandoned: its worker stays blocked, the job frees itself when (if) it
 * finishes, and the caller has long moved on. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "offpath.h"

#define MAX_WORKERS 16

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static struct procctl_job *queue_head, *queue_tail;
static int workers, idle;

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
	pthread_mutex_lock(&mu);
	for (;;) {
		struct procctl_job *j;
		while (!queue_head) {
			idle++;
			pthread_cond_wait(&work, &mu);
			idle--;
		}
		j = queue_head;
		queue_head = j->next;
		if (!queue_head)
			queue_tail = NULL;
		pthread_mutex_unlock(&mu);
		j->result = j->fn(j);
		pthread_mutex_lock(&mu);
		j->finished = 1;
		pthread_cond_broadcast(&done);
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

static void deadline_ts(int64_t deadline_ns, struct timespec *ts)
{
	/* The condvar waits on CLOCK_REALTIME; convert from MONOTONIC. */
	struct timespec now_m, now_r;
	int64_t left;
	clock_gettime(CLOCK_MONOTONIC, &now_m);
	clock_gettime(CLOCK_REALTIME, &now_r);
	left = deadline_ns - ((int64_t)now_m.tv_sec * 1000000000 + now_m.tv_nsec);
	if (left < 0)
		left = 0;
	left += (int64_t)now_r.tv_sec * 1000000000 + now_r.tv_nsec;
	ts->tv_sec = (time_t)(left / 1000000000);
	ts->tv_nsec = (long)(left % 1000000000);
}

int procctl_job_run(struct procctl_job *j, int64_t deadline_ns)
{
	struct timespec ts;
	int r;

	deadline_ts(deadline_ns, &ts);
	pthread_mutex_lock(&mu);
	j->refs++; /* the worker's */
	j->next = NULL;
	if (queue_tail)
		queue_tail->next = j;
	else
		queue_head = j;
	queue_tail = j;
	if (!idle && workers < MAX_WORKERS) {
		pthread_t t;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &a, worker, NULL) == 0)
			workers++;
		pthread_attr_destroy(&a);
	}
	pthread_cond_signal(&work);
	while (!j->finished)
		if (pthread_cond_timedwait(&done, &mu, &ts) == ETIMEDOUT && !j->finished)
			break;
	if (j->finished) {
		r = j->result;
	} else {
		/* Abandon it; if no worker took it yet, take it back first. */
		struct procctl_job **pp = &queue_head, *prev = NULL;
		j->abandoned = 1;
		if (j->abandon)
			j->abandon(j);
		for (; *pp; prev = *pp, pp = &(*pp)->next)
			if (*pp == j) {
				*pp = j->next;
				if (queue_tail == j)
					queue_tail = prev;
				j->refs--;
				break;
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
