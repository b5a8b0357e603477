/* SPDX-License-Identifier: Apache-2.0 */
/* doorbell.c - threads in futex_waitv on many regions' ack doorbells,
 * PROCCTL_BELLS_MAX each (watcher k the k-th slice of the set), started as
 * the set grows and kept until stop.
 *
 * The doorbell word is never written (SPEC.md 6.5), so each is waited on
 * with the value 0. A watcher's own private word is last in its vector:
 * touching it makes the watcher collect its slice again (a word added,
 * removed or moved there; stop), and the kernel queues a vector's words
 * in order, so while the own word is queued every word of the slice is
 * (procctl_doorbells_waiting). A wait has no timeout: an idle watcher
 * sleeps. */
#define _GNU_SOURCE 1
#include "doorbell.h"
#include "thread.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

static long waitv(struct futex_waitv *w, unsigned n, const struct timespec *abs)
{
	return syscall(SYS_futex_waitv, w, n, 0u, abs, CLOCK_MONOTONIC);
}

static void own_word(struct futex_waitv *w, const uint32_t *word, uint32_t val)
{
	memset(w, 0, sizeof *w);
	w->uaddr = (uintptr_t)word;
	w->val = val;
	w->flags = FUTEX_32 | FUTEX_PRIVATE_FLAG;
}

size_t procctl_doorbells_limit(const struct procctl_doorbells *d)
{
	return (size_t)__atomic_load_n(&d->nw, __ATOMIC_ACQUIRE) * PROCCTL_BELLS_MAX;
}

/* Under *mu, after a wait that failed with no touch: some word of the
 * slice is not 0. Name it; 0 if none is (written and cleared again). */
static int find_nonzero(struct procctl_watcher *me, struct procctl_bell *bells)
{
	struct procctl_doorbells *d = me->d;
	size_t n = d->collect(d->arg, bells, me->first, PROCCTL_BELLS_MAX), i;
	int found = 0;
	for (i = 0; i < n; i++)
		if (__atomic_load_n(bells[i].word, __ATOMIC_RELAXED) != 0) {
			d->nonzero(d->arg, bells[i].id);
			found = 1;
		}
	return found;
}

static void *watch(void *arg)
{
	struct procctl_watcher *me = arg;
	struct procctl_doorbells *d = me->d;
	struct procctl_bell bells[PROCCTL_BELLS_MAX];
	struct futex_waitv w[PROCCTL_BELLS_MAX + 1];

	pthread_setname_np(pthread_self(), "procctl-bells");
	for (;;) {
		uint32_t gen;
		size_t n, i;
		long r;
		int err, spun = 0;

		pthread_mutex_lock(d->mu);
		if (__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
			pthread_mutex_unlock(d->mu);
			break;
		}
		d->woke(d->arg, me->first); /* its first wait too: what rang before it is not heard */
		gen = __atomic_load_n(&me->changed, __ATOMIC_ACQUIRE);
		n = d->collect(d->arg, bells, me->first, PROCCTL_BELLS_MAX);
		pthread_mutex_unlock(d->mu);

		for (i = 0; i < n; i++) {
			memset(&w[i], 0, sizeof w[i]);
			w[i].uaddr = (uintptr_t)bells[i].word;
			w[i].flags = FUTEX_32; /* shared: the process wakes it */
		}
		own_word(&w[n], &me->changed, gen);
		r = waitv(w, (unsigned)n + 1u, NULL);
		err = r < 0 ? errno : 0;
		pthread_mutex_lock(d->mu);
		if (r >= 0 && (size_t)r < n)
			d->rang(d->arg, bells[r].id);
		else if (err == EAGAIN && __atomic_load_n(&me->changed, __ATOMIC_ACQUIRE) == gen)
			spun = !find_nonzero(me, bells);
		pthread_mutex_unlock(d->mu);
		if (spun) { /* written and cleared again: do not spin on it */
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
		}
		/* n: touched; EFAULT: a word was unmapped after collect (its
		 * region detached); EINTR: again. All of them collect again. */
	}
	return NULL;
}

/* Under no lock: only the owner's thread starts watchers (start and grow
 * are its calls). */
static int grow(struct procctl_doorbells *d, size_t n)
{
	unsigned k = __atomic_load_n(&d->nw, __ATOMIC_ACQUIRE);
	int err = 0;
	while (!err && k < PROCCTL_WATCHERS_MAX && (k == 0 || (size_t)k * PROCCTL_BELLS_MAX < n)) {
		d->w[k].d = d;
		d->w[k].first = (size_t)k * PROCCTL_BELLS_MAX;
		d->w[k].changed = 0;
		err = -procctl__thread_start(&d->w[k].thread, NULL, watch, &d->w[k]);
		if (!err)
			__atomic_store_n(&d->nw, ++k, __ATOMIC_RELEASE);
	}
	return -err;
}

int procctl_doorbells_start(struct procctl_doorbells *d)
{
	struct futex_waitv probe;
	struct timespec now;
	uint32_t word = 0;
	int err;

	d->stop = 0;
	d->started = 0;
	d->nw = 0;
	d->touched = 0;
	/* A wait that cannot start (the value differs) tells whether the
	 * kernel has futex_waitv: EAGAIN it has, ENOSYS it has not. */
	own_word(&probe, &word, 1u);
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (waitv(&probe, 1u, &now) == 0 || errno != EAGAIN)
		return errno == ENOSYS ? -ENOSYS : -EINVAL;
	err = grow(d, 0);
	if (err)
		return err;
	d->started = 1;
	return 0;
}

/* The own word's waiters, counted by requeueing them onto the word itself:
 * FUTEX_CMP_REQUEUE to the same word moves and wakes none. -EAGAIN, a
 * flush between the load and the call, is not waiting: it returns. */
int procctl_doorbells_waiting(struct procctl_doorbells *d, unsigned k)
{
	struct procctl_watcher *w;
	uint32_t gen;
	if (k >= __atomic_load_n(&d->nw, __ATOMIC_ACQUIRE))
		return 0;
	w = &d->w[k];
	gen = __atomic_load_n(&w->changed, __ATOMIC_ACQUIRE);
	return syscall(SYS_futex, &w->changed, FUTEX_CMP_REQUEUE_PRIVATE, 0, (void *)(uintptr_t)INT_MAX, &w->changed,
		       gen) > 0;
}

static void wake_watcher(struct procctl_watcher *w)
{
	__atomic_add_fetch(&w->changed, 1u, __ATOMIC_RELEASE);
	syscall(SYS_futex, &w->changed, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

_Static_assert(PROCCTL_WATCHERS_MAX <= 64, "a watcher's touch is a bit of touched");

void procctl_doorbells_touch(struct procctl_doorbells *d, size_t i)
{
	size_t k = i / PROCCTL_BELLS_MAX;
	if (k < __atomic_load_n(&d->nw, __ATOMIC_ACQUIRE))
		__atomic_fetch_or(&d->touched, 1ull << k, __ATOMIC_RELEASE);
}

void procctl_doorbells_flush(struct procctl_doorbells *d)
{
	uint64_t m = __atomic_exchange_n(&d->touched, 0, __ATOMIC_ACQ_REL);
	for (; m; m &= m - 1)
		wake_watcher(&d->w[__builtin_ctzll(m)]);
}

void procctl_doorbells_grow(struct procctl_doorbells *d, size_t n)
{
	if (d->started)
		grow(d, n); /* short of threads: the words past them are not watched (limit says so) */
}

void procctl_doorbells_stop(struct procctl_doorbells *d)
{
	unsigned i;
	if (!d->started)
		return;
	__atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < d->nw; i++)
		wake_watcher(&d->w[i]);
	for (i = 0; i < d->nw; i++)
		pthread_join(d->w[i].thread, NULL);
	d->nw = 0;
	d->touched = 0;
	d->started = 0;
}
