/* SPDX-License-Identifier: Apache-2.0 */
/* procctl-node's timers (server/node/timer.h): earliest first, moved and
 * disarmed anywhere in the heap, periodic timers that re-arm from their
 * function, functions that free other timers, and the heap against a
 * plain array under a long random sequence. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"
#include "node/timer.h"

#define container_of(p, type, member) ((type *)(void *)((char *)(p)-offsetof(type, member)))

struct rec {
	struct timer t;
	int id;
	int64_t fired_at;
	struct timers *ts;
	struct rec *victim;    /* disarmed by this one's function */
	int64_t period;        /* re-armed by its function */
};

static int order[64], norder;

static void note(struct timer *t, int64_t now)
{
	struct rec *r = container_of(t, struct rec, t);
	r->fired_at = now;
	order[norder++] = r->id;
	if (r->victim)
		timer_disarm(r->ts, &r->victim->t);
	if (r->period)
		assert_int_equal(timer_arm(r->ts, t, now + r->period), 0);
}

static void earliest_first(void **state)
{
	struct timers ts = {0};
	struct rec r[5];
	int64_t due[5] = {50, 10, 40, 10, 30};
	int i;
	(void)state;
	norder = 0;
	assert_int_equal(timers_next(&ts), INT64_MAX);
	for (i = 0; i < 5; i++) {
		memset(&r[i], 0, sizeof r[i]);
		r[i].t = TIMER_INIT(note);
		r[i].id = i;
		r[i].ts = &ts;
		assert_false(timer_armed(&r[i].t));
		assert_int_equal(timer_arm(&ts, &r[i].t, due[i]), 0);
		assert_true(timer_armed(&r[i].t));
	}
	assert_int_equal(timers_next(&ts), 10);
	assert_int_equal(timers_run(&ts, 9), 0);
	assert_int_equal(timers_run(&ts, 35), 3);
	assert_int_equal(norder, 3);
	assert_true(order[0] == 1 || order[0] == 3); /* the two at 10, in either order */
	assert_true(order[1] == 1 || order[1] == 3);
	assert_int_equal(order[2], 4);
	assert_false(timer_armed(&r[1].t));
	assert_int_equal(timers_next(&ts), 40);
	/* Moved later, moved earlier, disarmed. */
	assert_int_equal(timer_arm(&ts, &r[2].t, 100), 0);
	assert_int_equal(timers_next(&ts), 50);
	assert_int_equal(timer_arm_by(&ts, &r[2].t, 200), 0); /* armed for earlier: stays */
	assert_int_equal(timer_arm_by(&ts, &r[2].t, 20), 0);
	assert_int_equal(timers_next(&ts), 20);
	timer_disarm(&ts, &r[2].t);
	timer_disarm(&ts, &r[2].t); /* twice is nothing */
	assert_int_equal(timers_next(&ts), 50);
	assert_int_equal(timers_run(&ts, 1000), 1);
	assert_int_equal(order[3], 0);
	assert_int_equal(timers_next(&ts), INT64_MAX);
	timers_free(&ts);
}

static void periodic_and_victims(void **state)
{
	struct timers ts = {0};
	struct rec tick, a, b;
	(void)state;
	norder = 0;
	memset(&tick, 0, sizeof tick);
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	tick.t = a.t = b.t = TIMER_INIT(note);
	tick.ts = a.ts = b.ts = &ts;
	tick.id = 0, a.id = 1, b.id = 2;
	tick.period = -5;   /* re-arms in the past: must wait for the next run, not loop */
	a.victim = &b;      /* due together: a disarms b before b fires */
	assert_int_equal(timer_arm(&ts, &tick.t, 0), 0);
	assert_int_equal(timer_arm(&ts, &a.t, 1), 0);
	assert_int_equal(timer_arm(&ts, &b.t, 2), 0);
	assert_int_equal(timers_run(&ts, 10), 2);
	assert_int_equal(order[0], 0);
	assert_int_equal(order[1], 1);
	assert_false(timer_armed(&b.t));
	assert_true(timer_armed(&tick.t));
	assert_int_equal(timers_next(&ts), 5);
	assert_int_equal(timers_run(&ts, 10), 1); /* once per run */
	assert_int_equal(timers_run(&ts, 10), 1);
	timers_free(&ts);
	assert_false(timer_armed(&tick.t));
}

static void noop(struct timer *t, int64_t now)
{
	(void)t;
	(void)now;
}

/* Random arms, moves and disarms against a plain array. */
static void against_array(void **state)
{
	enum { N = 300 };
	static struct timer t[N];
	struct timers ts = {0};
	unsigned seed = 12345;
	int i, step;
	(void)state;
	for (i = 0; i < N; i++)
		t[i] = TIMER_INIT(noop);
	for (step = 0; step < 200000; step++) {
		int64_t min = INT64_MAX, now;
		i = (int)(rand_r(&seed) % N);
		switch (rand_r(&seed) % 4) {
		case 0:
		case 1:
			assert_int_equal(timer_arm(&ts, &t[i], (int64_t)(rand_r(&seed) % 100000)), 0);
			break;
		case 2:
			timer_disarm(&ts, &t[i]);
			break;
		default:
			now = (int64_t)(rand_r(&seed) % 100000);
			timers_run(&ts, now);
			for (i = 0; i < N; i++)
				if (timer_armed(&t[i]))
					assert_true(t[i].due > now);
		}
		for (i = 0; i < N; i++)
			if (timer_armed(&t[i])) {
				assert_ptr_equal(ts.heap[t[i].slot], &t[i]);
				if (t[i].due < min)
					min = t[i].due;
			}
		assert_int_equal(timers_next(&ts), min);
		for (i = 1; i < (int)ts.n; i++)
			assert_true(ts.heap[(i - 1) / 2]->due <= ts.heap[i]->due);
	}
	timers_free(&ts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(earliest_first),
		cmocka_unit_test(periodic_and_victims),
		cmocka_unit_test(against_array),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
