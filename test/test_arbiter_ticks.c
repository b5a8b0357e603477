/* SPDX-License-Identifier: Apache-2.0 */
/* The arbiter ticked only when something changes (a process rang, one
 * came or went) or when procctl_arbiter_next_tick says, as procctl-node
 * ticks it: the same rotation, hand-offs and confirmations as ticks every
 * millisecond give, with a handful of ticks, and none while a lone holder
 * holds. The fake world is arbworld's. */
#include <stdint.h>
#include <string.h>

#include "arbworld.h"
#include "th.h"

/* The processes answer: 1 when one rang that had not (a DOORBELL event;
 * one not read yet rings no event of its own). */
static int answer(struct world *w)
{
	int before[8], i, news = 0;
	for (i = 0; i < w->n; i++)
		before[i] = w->p[i].rang;
	aw_all_cooperate(w);
	for (i = 0; i < w->n; i++)
		news |= w->p[i].rang && !before[i];
	return news;
}

/* Advance the clock by step for ns; tick only on a ring or when due:
 * the ticks made. */
static int run_sleepy(struct world *w, procctl_arbiter_t *a, uint64_t ns, uint64_t step)
{
	uint64_t end = w->now + ns;
	int ticks = 0, news = 0;
	while (w->now < end) {
		w->now += step;
		news |= answer(w);
		if (news || w->now >= procctl_arbiter_next_tick(a)) {
			assert_int_equal(procctl_arbiter_tick(a), 0);
			ticks++;
			news = answer(w); /* rings after the tick's reads: events for the next */
		}
		aw_holder(w, 0);
		aw_holder(w, 1);
	}
	return ticks;
}

static procctl_arbiter_t *sleepy_world(struct world *w, int wanters)
{
	int i;
	memset(w, 0, sizeof *w);
	w->ready = 1;
	w->doorbells = 1; /* reads follow rings, as the registry's source's do */
	for (i = 0; i < wanters; i++)
		aw_proc(w, 10 * (i + 1))->wants[0] = 1;
	return aw_arbiter(w, 0, NULL);
}

/* Three wanters take turns in pid order, each its whole turn, with a few
 * ticks a turn (the grant, its take-up, the turn's end, the release). */
static void rotation_with_few_ticks(void **state)
{
	struct world w;
	procctl_arbiter_t *a = sleepy_world(&w, 3);
	pid_t seen[6];
	int k, ticks = 0;
	(void)state;
	assert_int_equal(procctl_arbiter_next_tick(a), 0); /* before the first: now */
	for (k = 0; k < 6; k++) {
		ticks += run_sleepy(&w, a, HOLD / 2, MS);
		seen[k] = aw_holder(&w, 0);
		assert_int_equal(aw_snap(a, 0).waiters, 2);
		ticks += run_sleepy(&w, a, HOLD / 2 + 10 * MS, MS);
	}
	assert_int_equal(seen[0], 10);
	assert_int_equal(seen[1], 20);
	assert_int_equal(seen[2], 30);
	assert_int_equal(seen[3], 10);
	assert_true(aw_snap(a, 0).handoffs >= 5);
	assert_true(aw_snap(a, 0).blocked_ns < HOLD);
	print_message("%d ticks for 6 turns (%d ms)\n", ticks, (int)(6 * (HOLD + 10 * MS) / MS));
	assert_true(ticks <= 6 * 8); /* a tick a millisecond would be 660 */
	procctl_arbiter_free(a);
}

/* A lone holder needs no tick; one more wanter (it rings) gets the
 * resource after the holder's turn, counted from the take-up. */
static void lone_holder_sleeps(void **state)
{
	struct world w;
	procctl_arbiter_t *a = sleepy_world(&w, 1);
	uint64_t granted;
	(void)state;
	run_sleepy(&w, a, 10 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 10);
	assert_int_equal(procctl_arbiter_next_tick(a), UINT64_MAX);
	assert_int_equal(run_sleepy(&w, a, 10 * HOLD, MS), 0);
	assert_int_equal(aw_holder(&w, 0), 10);
	aw_proc(&w, 20)->wants[0] = 1;
	granted = w.now;
	run_sleepy(&w, a, MS, MS); /* it rang: a tick, a waiter, the turn's end due */
	assert_int_equal(aw_snap(a, 0).waiters, 1);
	assert_true(procctl_arbiter_next_tick(a) <= granted + HOLD);
	run_sleepy(&w, a, HOLD + 10 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 20);
	procctl_arbiter_free(a);
}

/* A release nobody heard (the holder's rings are lost) is read at the
 * next refresh while the revocation is pending. */
static void pending_refreshed(void **state)
{
	struct world w;
	procctl_arbiter_t *a = sleepy_world(&w, 2);
	(void)state;
	run_sleepy(&w, a, 10 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 10);
	w.p[0].mute = 1;
	run_sleepy(&w, a, HOLD, MS); /* its turn ends: revoked; it releases, unheard */
	assert_true(aw_snap(a, 0).pending_since_ns > 0);
	assert_true(procctl_arbiter_next_tick(a) <= w.now + 20 * MS);
	run_sleepy(&w, a, 25 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 20);
	procctl_arbiter_free(a);
}

/* Not ready: asked again every 100 ms, nothing written. */
static void not_ready_asks_again(void **state)
{
	struct world w;
	procctl_arbiter_t *a = sleepy_world(&w, 1);
	(void)state;
	w.ready = 0;
	w.now = 5 * MS;
	assert_int_equal(procctl_arbiter_tick(a), 0);
	assert_int_equal(procctl_arbiter_next_tick(a), 105 * MS);
	assert_int_equal(run_sleepy(&w, a, 300 * MS, MS), 3);
	assert_int_equal(w.writes, 0);
	w.ready = 1;
	run_sleepy(&w, a, 100 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 10);
	procctl_arbiter_free(a);
}

/* Not ready, with PROCCTL_ARB_READY_EVENTS: no tick of its own until the
 * caller ticks it (the registry's READY event), and then it grants. */
static void not_ready_sleeps_with_ready_events(void **state)
{
	struct world w;
	procctl_arbiter_t *a;
	(void)state;
	memset(&w, 0, sizeof w);
	w.doorbells = 1;
	aw_proc(&w, 10)->wants[0] = 1;
	a = aw_arbiter(&w, PROCCTL_ARB_READY_EVENTS, NULL);
	w.now = 5 * MS;
	assert_int_equal(procctl_arbiter_tick(a), 0);
	assert_int_equal(procctl_arbiter_next_tick(a), UINT64_MAX);
	/* one tick, for its process's first report (a ring); none of its own */
	assert_int_equal(run_sleepy(&w, a, 300 * MS, MS), 1);
	assert_int_equal(procctl_arbiter_next_tick(a), UINT64_MAX);
	assert_int_equal(w.writes, 0);
	w.ready = 1;
	assert_int_equal(procctl_arbiter_tick(a), 0); /* READY came */
	run_sleepy(&w, a, 100 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 10);
	procctl_arbiter_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rotation_with_few_ticks),
		cmocka_unit_test(lone_holder_sleeps),
		cmocka_unit_test(pending_refreshed),
		cmocka_unit_test(not_ready_asks_again),
		cmocka_unit_test(not_ready_sleeps_with_ready_events),
	};
	return TH_RUN(tests);
}
