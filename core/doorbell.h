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

/* The set is the owner's array of words: watcher k waits on its k-th
 * slice of PROCCTL_BELLS_MAX, and only it is woken when that slice
 * changes (procctl_doorbells_touch). A futex_waitv return names one word
 * that rang; a ring of another word of the slice between the watcher's
 * wake and its next wait (or before its first) is not heard, so every
 * wait is told (woke) before it is queued: the owner treats the slice as
 * rung once the watcher waits, which procctl_doorbells_waiting tells (a
 * time does not: a watcher preempted on its way may take any time). */
struct procctl_doorbells {
	/* Set by the owner; the callbacks run on the watcher thread with *mu
	 * held, and every word collect returns stays mapped while *mu is.
	 * Once *mu is dropped a word may go before the owner's flush: the
	 * watcher's wait faults (EFAULT: it collects again), or waits on
	 * whatever is mapped there until the flush wakes it. */
	pthread_mutex_t *mu;
	/* The first-th to the (first + max)-th words of the set (fewer at its end). */
	size_t (*collect)(void *arg, struct procctl_bell *out, size_t first, size_t max);
	void (*woke)(void *arg, size_t first);   /* the watcher of the slice at first is to wait (its first, or
	                                          * again): a ring before that wait is queued is not heard */
	void (*rang)(void *arg, uint64_t id);    /* id's doorbell rang */
	void (*nonzero)(void *arg, uint64_t id); /* id's word was written (by its process): not to be watched again */
	void *arg;
	/* private */
	struct procctl_watcher {
		struct procctl_doorbells *d;
		size_t first;     /* its slice of the set */
		uint32_t changed; /* its futex word: its slice changed, or stop */
		pthread_t thread;
	} w[PROCCTL_WATCHERS_MAX];
	uint64_t touched; /* watchers whose slice changed since the last flush, a bit each (atomic) */
	unsigned nw;      /* watchers running (atomic) */
	int stop, started;
};

/* 0, or -errno (-ENOSYS: the kernel has no futex_waitv, before 5.16). */
int procctl_doorbells_start(struct procctl_doorbells *d);
/* Watchers for a set of n words, as far as PROCCTL_WATCHERS_MAX allows;
 * each new one collects its slice. The owner's thread (the one that
 * started it), not under *mu. */
void procctl_doorbells_grow(struct procctl_doorbells *d, size_t n);
/* The words the watchers running now cover: the set's first ones. */
size_t procctl_doorbells_limit(const struct procctl_doorbells *d);
/* The word at index i of the set changed (added, removed, moved): its
 * watcher, if one runs, collects its slice again at the next flush. Any
 * thread, *mu held or not. */
void procctl_doorbells_touch(struct procctl_doorbells *d, size_t i);
/* Wake the watchers touched since the last flush: after a batch of
 * changes (an exit storm's detaches), each collects once, not once a
 * change (bench_bells, 8,000 regions gone at once: 285-295 ms, was
 * 440-490). Any thread. */
void procctl_doorbells_flush(struct procctl_doorbells *d);
/* 1 if watcher k is in its wait now, every word of its slice queued in
 * the kernel, so a ring of any of them is heard from now on (a word
 * touched since is not among them until the flush; the watcher's return
 * then is told); else 0 (not yet waiting, woken by a ring or a flush and
 * not waiting again yet, or no such watcher). Any thread. */
int procctl_doorbells_waiting(struct procctl_doorbells *d, unsigned k);
/* Join the watchers; call without *mu held. */
void procctl_doorbells_stop(struct procctl_doorbells *d);

#endif
