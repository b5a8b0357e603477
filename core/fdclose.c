/* SPDX-License-Identifier: Apache-2.0 */
/* fdclose.c - closing slow file descriptors off the caller's thread
 * (fdclose.h). */
#define _GNU_SOURCE 1
#include "fdclose.h"
#include "thread.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* Detached closes: one queue, one thread at a time working it (a thread
 * each would only wait on the kernel's event_mutex in turn). */
struct closing {
	int *fds;
	size_t n;
	struct closing *next;
};

static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_go = PTHREAD_COND_INITIALIZER; /* q_paused went to 0 */
static struct closing *q_head, *q_tail; /* under q_mu */
static int q_running;                   /* under q_mu: a closer works the queue */
static int q_closing;                   /* under q_mu: ... and is in a close */
static unsigned q_paused;               /* under q_mu: procctl_close_pause calls not undone */
static long q_pending;                  /* atomic: fds queued or being closed */

void procctl_close_all(const int *fds, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Close c's fds, counting each down as it is closed; free c. The closer
 * thread (paced) starts none while a pause holds. */
static void close_batch(struct closing *c, int paced)
{
	size_t i;
	for (i = 0; i < c->n; i++)
		if (c->fds[i] >= 0) {
			if (paced) {
				pthread_mutex_lock(&q_mu);
				while (q_paused)
					pthread_cond_wait(&q_go, &q_mu);
				q_closing = 1;
				pthread_mutex_unlock(&q_mu);
			}
			close(c->fds[i]);
			__atomic_sub_fetch(&q_pending, 1, __ATOMIC_RELEASE);
			if (paced) {
				pthread_mutex_lock(&q_mu);
				q_closing = 0;
				pthread_mutex_unlock(&q_mu);
			}
		}
	free(c->fds);
	free(c);
}

static void *closer(void *arg)
{
	struct closing *c;
	(void)arg;
	pthread_setname_np(pthread_self(), "procctl-close");
	pthread_mutex_lock(&q_mu);
	while ((c = q_head)) {
		if (!(q_head = c->next))
			q_tail = NULL;
		pthread_mutex_unlock(&q_mu);
		close_batch(c, 1);
		pthread_mutex_lock(&q_mu);
	}
	q_running = 0;
	pthread_mutex_unlock(&q_mu);
	return NULL;
}

void procctl_close_detached(int *fds, size_t n)
{
	struct closing *c = malloc(sizeof *c), *mine = NULL;
	pthread_attr_t attr;
	pthread_t t;
	size_t i;
	long k = 0;
	if (!c) {
		procctl_close_all(fds, n);
		free(fds);
		return;
	}
	for (i = 0; i < n; i++)
		k += fds[i] >= 0;
	*c = (struct closing){fds, n, NULL};
	__atomic_add_fetch(&q_pending, k, __ATOMIC_RELAXED);
	pthread_mutex_lock(&q_mu);
	if (q_tail)
		q_tail->next = c;
	else
		q_head = c;
	q_tail = c;
	if (!q_running) {
		int ok = 0;
		if (!pthread_attr_init(&attr)) {
			ok = !pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) &&
			     !procctl__thread_start(&t, &attr, closer, NULL);
			pthread_attr_destroy(&attr);
		}
		if (ok)
			q_running = 1;
		else { /* no thread: the queue is closed here */
			mine = q_head;
			q_head = q_tail = NULL;
		}
	}
	pthread_mutex_unlock(&q_mu);
	while ((c = mine)) {
		mine = c->next;
		close_batch(c, 0);
	}
}

long procctl_close_pending(void)
{
	return __atomic_load_n(&q_pending, __ATOMIC_ACQUIRE);
}

int procctl_close_pause(void)
{
	int quiet;
	pthread_mutex_lock(&q_mu);
	q_paused++;
	quiet = !q_closing;
	pthread_mutex_unlock(&q_mu);
	return quiet;
}

int procctl_close_quiet(void)
{
	int quiet;
	pthread_mutex_lock(&q_mu);
	quiet = !q_closing;
	pthread_mutex_unlock(&q_mu);
	return quiet;
}

void procctl_close_resume(void)
{
	pthread_mutex_lock(&q_mu);
	if (q_paused && !--q_paused)
		pthread_cond_broadcast(&q_go);
	pthread_mutex_unlock(&q_mu);
}

static unsigned suspect_closing; /* procctl_close_suspect's closes not returned yet */

static void *suspect_closer(void *arg)
{
	int fd = (int)(intptr_t)arg;
	pthread_setname_np(pthread_self(), "procctl-close");
	close(fd);
	__atomic_sub_fetch(&suspect_closing, 1u, __ATOMIC_RELAXED);
	return NULL;
}

int procctl_close_suspect(int fd, unsigned max)
{
	pthread_attr_t attr;
	pthread_t t;
	int ok = 0;
	if (__atomic_add_fetch(&suspect_closing, 1u, __ATOMIC_RELAXED) <= max && !pthread_attr_init(&attr)) {
		ok = !pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) &&
		     !procctl__thread_start(&t, &attr, suspect_closer, (void *)(intptr_t)fd);
		pthread_attr_destroy(&attr);
	}
	if (!ok) {
		__atomic_sub_fetch(&suspect_closing, 1u, __ATOMIC_RELAXED);
		return -EBUSY;
	}
	return 0;
}
