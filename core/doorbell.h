/* SPDX-License-Identifier: Apache-2.0 */
/* doorbell.h - wake a loop when the ack doorbell (SPEC.md 6.5) of any of
 * many regions rings: one thread waits on all of them with futex_waitv.
 * Internal to libprocctl-agent. */
#ifndef PROCCTL_DOORBELL_H
#define PROCCTL_DOORBELL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define PROCCTL_BELLS_MAX 127 /* FUTEX_WAITV_MAX, less the watcher's own word */

struct procctl_bell {
	const uint32_t *word; /* mapped while its owner keeps it in the set */
	uint64_t id;          /* the owner's name for it */
};

struct procctl_doorbells {
	/* Set by the owner; the callbacks run on the watcher thread with *mu
	 * held, and every word collect returns stays mapped while *mu is. */
	pthread_mutex_t *mu;
	size_t (*collect)(void *arg, struct procctl_bell *out, size_t max); /* the words to watch now */
	void (*rang)(void *arg, uint64_t id);                               /* id's doorbell rang */
	void (*nonzero)(void *arg, uint64_t id); /* id's word was written (by its process): not to be watched again */
	void *arg;
	/* private */
	pthread_t thread;
	uint32_t changed; /* the watcher's own futex word: the set changed, or stop */
	int stop, started;
};

/* 0, or -errno (-ENOSYS: the kernel has no futex_waitv, before 5.16). */
int procctl_doorbells_start(struct procctl_doorbells *d);
/* The set changed: collect again. Any thread; not under *mu required. */
void procctl_doorbells_changed(struct procctl_doorbells *d);
/* Join the watcher; call without *mu held. */
void procctl_doorbells_stop(struct procctl_doorbells *d);

#endif
