/* SPDX-License-Identifier: Apache-2.0 */
/* fdclose.c - closing slow file descriptors off the caller's thread
 * (fdclose.h). */
#define _GNU_SOURCE 1
#include "fdclose.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

struct closing {
	int *fds;
	size_t n;
};

void procctl_close_all(const int *fds, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static void *closer(void *arg)
{
	struct closing *c = arg;
	pthread_setname_np(pthread_self(), "procctl-close");
	procctl_close_all(c->fds, c->n);
	free(c->fds);
	free(c);
	return NULL;
}

void procctl_close_detached(int *fds, size_t n)
{
	struct closing *c = malloc(sizeof *c);
	pthread_attr_t attr;
	pthread_t t;
	int ok = 0;
	if (c && !pthread_attr_init(&attr)) {
		c->fds = fds;
		c->n = n;
		ok = !pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) && !pthread_create(&t, &attr, closer, c);
		pthread_attr_destroy(&attr);
	}
	if (!ok) {
		free(c);
		procctl_close_all(fds, n);
		free(fds);
	}
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
		     !pthread_create(&t, &attr, suspect_closer, (void *)(intptr_t)fd);
		pthread_attr_destroy(&attr);
	}
	if (!ok) {
		__atomic_sub_fetch(&suspect_closing, 1u, __ATOMIC_RELAXED);
		return -EBUSY;
	}
	return 0;
}
