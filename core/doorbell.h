/* SPDX-License-Identifier: Apache-2.0 */
/* doorbell.h - wake a loop when the ack doorbell (SPEC.md 6.5) of any of
 * many regions rings: watcher threads wait on them with futex_waitv, up
 * to PROCCTL_BELLS_MAX each (the kernel's limit), as many threads as the
 * set needs. Internal to libprocctl-agent. */
#ifndef PROCCTL_DOORBELL_H
#define PROCCTL_DOORBELL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define PROCCTL_BELLS_MAX 127  /* per watcher: FUTEX_WAITV_MAX, less its own word */
#define PROCCTL_WATCHERS_MAX 64 /* 8,128 doorbells; the regions past them are polled */

struct procctl_bell {
	const uint32_t *word; /* mapped while its owner keeps it in the set */
	uint64_t id;          /* the owner's name for it */
};

struct procctl_doorbells {
	/* Set by the owner; the callbacks run on the watcher thread with *mu
	 * held, and every word collect returns stays mapped while *mu is. */
	pthread_mutex_t *mu;
	/* The words to watch now: the first-th to the (first + max)-th of
	 * them; the set's first limit are watched, the rest are not. *again:
	 * when (CLOCK_MONOTONIC ns) the set changes without a bump (a muted
	 * word's time is up), 0 never. */
	size_t (*collect)(void *arg, struct procctl_bell *out, size_t first, size_t max, size_t limit,
			  uint64_t *again);
	void (*rang)(void *arg, uint64_t id);                               /* id's doorbell rang */
	void (*nonzero)(void *arg, uint64_t id); /* id's word was written (by its process): not to be watched again */
	void *arg;
	/* private */
	struct procctl_watcher {
		struct procctl_doorbells *d;
		size_t first; /* its slice of the set */
		pthread_t thread;
	} w[PROCCTL_WATCHERS_MAX];
	unsigned nw;      /* watchers running (atomic) */
	uint32_t changed; /* every watcher's futex word: the set changed, or stop */
	int stop, started;
};

/* 0, or -errno (-ENOSYS: the kernel has no futex_waitv, before 5.16). */
int procctl_doorbells_start(struct procctl_doorbells *d);
/* The set changed, and has n words now (more watchers start if it needs
 * them): collect again. The owner's thread (the one that started it), not
 * under *mu. */
void procctl_doorbells_changed(struct procctl_doorbells *d, size_t n);
/* The set changed without a change in size (a word muted or written):
 * every watcher collects again. Any thread, *mu held or not. */
void procctl_doorbells_bump(struct procctl_doorbells *d);
/* Join the watchers; call without *mu held. */
void procctl_doorbells_stop(struct procctl_doorbells *d);

#endif
