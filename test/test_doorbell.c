/* SPDX-License-Identifier: Apache-2.0 */
/* The doorbell watchers (core/doorbell.h) against what a futex wake is:
 * not sticky, so a ring before a wait is queued is lost. Every wait, the
 * first one too, is told (woke) before it is queued, and
 * procctl_doorbells_waiting says 1 only once it is: a watcher held on its
 * way to the wait (here in collect) is not waiting, a ring then is not
 * heard, and once it waits, a ring is. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "doorbell.h"
#include "th.h"

struct world {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint32_t words[2];
	size_t n;      /* words in the set */
	int hold;      /* collect waits while set */
	int held;      /* collect is waiting */
	int woke, rang, collects;
	uint64_t last_rang;
};

static size_t collect(void *arg, struct procctl_bell *out, size_t first, size_t max)
{
	struct world *w = arg;
	size_t i;
	w->collects++;
	while (w->hold) {
		w->held = 1;
		pthread_cond_broadcast(&w->cv);
		pthread_cond_wait(&w->cv, &w->mu);
	}
	w->held = 0;
	for (i = 0; first + i < w->n && i < max; i++) {
		out[i].word = &w->words[first + i];
		out[i].id = first + i + 1;
	}
	return i;
}

static void woke(void *arg, size_t first)
{
	struct world *w = arg;
	assert_int_equal(first, 0);
	w->woke++;
}

static void rang(void *arg, uint64_t id)
{
	struct world *w = arg;
	w->rang++;
	w->last_rang = id;
}

static void nonzero(void *arg, uint64_t id)
{
	(void)arg;
	fail_msg("word %llu was never written", (unsigned long long)id);
}

static void ring(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Poll (10 s at most) until the watcher waits. */
static void until_waiting(struct procctl_doorbells *d)
{
	int i;
	for (i = 0; i < 10000 && !procctl_doorbells_waiting(d, 0); i++)
		th_sleep_ms(1);
	assert_int_equal(procctl_doorbells_waiting(d, 0), 1);
}

/* Under w->mu: until the counter reaches want (10 s at most). */
static void until_at_least(struct world *w, const int *counter, int want)
{
	int i;
	for (i = 0; i < 10000 && *counter < want; i++) {
		pthread_mutex_unlock(&w->mu);
		th_sleep_ms(1);
		pthread_mutex_lock(&w->mu);
	}
	assert_true(*counter >= want);
}

static void start(struct world *w, struct procctl_doorbells *d)
{
	memset(w, 0, sizeof *w);
	memset(d, 0, sizeof *d);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	d->mu = &w->mu;
	d->collect = collect;
	d->woke = woke;
	d->rang = rang;
	d->nonzero = nonzero;
	d->arg = w;
}

/* The first wait: a word in the set before the watcher ever waited rings
 * while the watcher is held before its wait. The watcher told that wait
 * (woke) before it, is not waiting, and does not hear the ring; once it
 * waits, the next ring is heard. */
static void first_wait_is_told(void **state)
{
	struct procctl_doorbells d;
	struct world w;
	(void)state;
	start(&w, &d);
	w.n = 1;
	w.hold = 1;
	pthread_mutex_lock(&w.mu);
	assert_int_equal(procctl_doorbells_start(&d), 0);
	while (!w.held)
		pthread_cond_wait(&w.cv, &w.mu);
	assert_int_equal(w.woke, 1); /* told before its first collect */
	assert_int_equal(procctl_doorbells_waiting(&d, 0), 0);
	ring(&w.words[0]); /* lost: nobody waits */
	w.hold = 0;
	pthread_cond_broadcast(&w.cv);
	pthread_mutex_unlock(&w.mu);

	until_waiting(&d);
	pthread_mutex_lock(&w.mu);
	assert_int_equal(w.rang, 0);
	pthread_mutex_unlock(&w.mu);
	ring(&w.words[0]);
	pthread_mutex_lock(&w.mu);
	until_at_least(&w, &w.rang, 1);
	assert_int_equal(w.last_rang, 1);
	until_at_least(&w, &w.woke, 2); /* the wait after that ring is told too */
	pthread_mutex_unlock(&w.mu);
	until_waiting(&d);
	procctl_doorbells_stop(&d);
	assert_int_equal(procctl_doorbells_waiting(&d, 0), 0);
}

/* A touch: the watcher is not waiting from the flush until it has
 * collected again (held here), then waits on the new word, whose ring is
 * heard; a watcher that does not exist is never waiting. */
static void touched_watcher_waits_again(void **state)
{
	struct procctl_doorbells d;
	struct world w;
	int woke;
	(void)state;
	start(&w, &d);
	assert_int_equal(procctl_doorbells_start(&d), 0);
	until_waiting(&d);
	assert_int_equal(procctl_doorbells_waiting(&d, 1), 0);
	assert_int_equal(procctl_doorbells_waiting(&d, PROCCTL_WATCHERS_MAX), 0);

	pthread_mutex_lock(&w.mu);
	woke = w.woke;
	w.n = 2;
	w.hold = 1;
	procctl_doorbells_touch(&d, 1);
	procctl_doorbells_flush(&d);
	assert_int_equal(procctl_doorbells_waiting(&d, 0), 0); /* the flush changed its word */
	while (!w.held)
		pthread_cond_wait(&w.cv, &w.mu);
	assert_int_equal(w.woke, woke + 1);
	assert_int_equal(procctl_doorbells_waiting(&d, 0), 0);
	w.hold = 0;
	pthread_cond_broadcast(&w.cv);
	pthread_mutex_unlock(&w.mu);

	until_waiting(&d);
	ring(&w.words[1]);
	pthread_mutex_lock(&w.mu);
	until_at_least(&w, &w.rang, 1);
	assert_int_equal(w.last_rang, 2);
	pthread_mutex_unlock(&w.mu);
	procctl_doorbells_stop(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(first_wait_is_told),
		cmocka_unit_test(touched_watcher_waits_again),
	};
	return TH_RUN(tests);
}
