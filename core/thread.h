/* SPDX-License-Identifier: Apache-2.0 */
/* thread.h - the library's own threads. A program's signals are its
 * own: a handler run on one of our threads would break our call there
 * (EINTR), and a signal the program blocks everywhere to take it with
 * sigwait or a signalfd would, landing on one of ours, take its default
 * action (SIGTERM: the end of the process). Internal to
 * libprocctl-agent. */
#ifndef PROCCTL_THREAD_H
#define PROCCTL_THREAD_H

#include <pthread.h>

/* pthread_create(t, attr, fn, arg), the new thread blocking every
 * signal. 0 or -errno. */
int procctl__thread_start(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

#endif
