/* SPDX-License-Identifier: Apache-2.0 */
/* hellothread.c - the procctl:hello probe off the loop (hellothread.h).
 * The thread polls the probe's fd and a stop eventfd, dispatches, and
 * copies the stats under a mutex after each dispatch: the loop reads that
 * copy (/metrics), never the probe. */
#define _GNU_SOURCE 1
#include "hellothread.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sys/log.h"

struct hellothread {
	procctl_hello_t *h;
	pthread_t th;
	int stopfd;  /* eventfd: end the thread */
	int wake;    /* the loop's eventfd: the thread ended on an error */
	int joined;
	int err;     /* atomic: dispatch's error, once it failed */
	pthread_mutex_t mu;
	struct procctl_hello_stats st; /* under mu */
};

static void snapshot(struct hellothread *t)
{
	struct procctl_hello_stats st;
	procctl_hello_stats(t->h, &st, sizeof st);
	pthread_mutex_lock(&t->mu);
	t->st = st;
	pthread_mutex_unlock(&t->mu);
}

static void *run(void *arg)
{
	struct hellothread *t = arg;
	uint64_t one = 1;
	int err;
	pthread_setname_np(pthread_self(), "procctl-hello");
	for (;;) {
		struct pollfd pfd[2] = {{procctl_hello_fd(t->h), POLLIN, 0}, {t->stopfd, POLLIN, 0}};
		if (poll(pfd, 2, -1) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		if (pfd[1].revents)
			return NULL;
		/* One dispatch for every wake that reported its fd, or none
		 * (procctl_hello_fd: its readiness is used up by the poll). */
		if (pfd[0].revents && (err = procctl_hello_dispatch(t->h)) < 0)
			break;
		snapshot(t);
	}
	__atomic_store_n(&t->err, err, __ATOMIC_RELEASE);
	if (write(t->wake, &one, sizeof one) < 0) {
		/* the counter is full: the loop is awake anyway */
	}
	return NULL;
}

struct hellothread *hellothread_start(procctl_hello_t *h, int wake)
{
	struct hellothread *t = calloc(1, sizeof *t);
	int err;
	if (!t || (t->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		err = errno;
		free(t);
		procctl_hello_free(h);
		errno = err;
		return NULL;
	}
	t->h = h;
	t->wake = wake;
	pthread_mutex_init(&t->mu, NULL);
	snapshot(t);
	if ((err = pthread_create(&t->th, NULL, run, t))) {
		t->joined = 1;
		hellothread_free(t);
		errno = err;
		return NULL;
	}
	return t;
}

void hellothread_stats(struct hellothread *t, struct procctl_hello_stats *out)
{
	pthread_mutex_lock(&t->mu);
	*out = t->st;
	pthread_mutex_unlock(&t->mu);
}

int hellothread_error(struct hellothread *t)
{
	return __atomic_load_n(&t->err, __ATOMIC_ACQUIRE);
}

void hellothread_stop(struct hellothread *t)
{
	uint64_t one = 1;
	if (t->joined)
		return;
	if (write(t->stopfd, &one, sizeof one) < 0) {
		/* EAGAIN: a stop is already pending */
	}
	pthread_join(t->th, NULL);
	t->joined = 1;
	snapshot(t);
}

void hellothread_free(struct hellothread *t)
{
	if (!t)
		return;
	hellothread_stop(t);
	if (t->st.uprobes)
		node_log(PROCCTL_LOG_INFO, "closing_uprobes", "count=%llu", (unsigned long long)t->st.uprobes);
	procctl_hello_free(t->h);
	close(t->stopfd);
	pthread_mutex_destroy(&t->mu);
	free(t);
}
