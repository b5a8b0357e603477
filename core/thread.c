/* SPDX-License-Identifier: Apache-2.0 */
/* thread.c - the library's own threads (thread.h). */
#include "thread.h"

#include <signal.h>

int procctl__thread_start(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits it */
	err = pthread_create(t, attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}
