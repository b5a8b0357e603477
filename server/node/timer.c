/* SPDX-License-Identifier: Apache-2.0 */
/* timer.c - the loop's timers (timer.h): a binary min-heap of pointers,
 * each timer knowing its slot so that moving or disarming it is
 * O(log n). */
#include "timer.h"

#include <errno.h>
#include <stdlib.h>

#include "procctl_agent.h" /* procctl_now_ns */

static void place(struct timers *ts, size_t i, struct timer *t)
{
	ts->heap[i] = t;
	t->slot = i;
}

static void up(struct timers *ts, size_t i)
{
	struct timer *t = ts->heap[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (ts->heap[parent]->due <= t->due)
			break;
		place(ts, i, ts->heap[parent]);
		i = parent;
	}
	place(ts, i, t);
}

static void down(struct timers *ts, size_t i)
{
	struct timer *t = ts->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= ts->n)
			break;
		if (c + 1 < ts->n && ts->heap[c + 1]->due < ts->heap[c]->due)
			c++;
		if (t->due <= ts->heap[c]->due)
			break;
		place(ts, i, ts->heap[c]);
		i = c;
	}
	place(ts, i, t);
}

int timer_arm(struct timers *ts, struct timer *t, int64_t due)
{
	if (timer_armed(t)) {
		int64_t was = t->due;
		t->due = due;
		t->seq = ts->seq++;
		if (due < was)
			up(ts, t->slot);
		else
			down(ts, t->slot);
		return 0;
	}
	if (ts->n == ts->cap) {
		size_t cap = ts->cap ? ts->cap * 2 : 64;
		struct timer **h = realloc(ts->heap, cap * sizeof *h);
		if (!h)
			return -ENOMEM;
		ts->heap = h;
		ts->cap = cap;
	}
	t->due = due;
	t->seq = ts->seq++;
	place(ts, ts->n++, t);
	up(ts, t->slot);
	return 0;
}

int timer_arm_by(struct timers *ts, struct timer *t, int64_t due)
{
	if (timer_armed(t) && t->due <= due)
		return 0;
	return timer_arm(ts, t, due);
}

void timer_disarm(struct timers *ts, struct timer *t)
{
	size_t i = t->slot;
	struct timer *last;
	if (!timer_armed(t))
		return;
	t->slot = TIMER_IDLE;
	last = ts->heap[--ts->n];
	if (last == t)
		return;
	place(ts, i, last);
	if (i > 0 && ts->heap[(i - 1) / 2]->due > last->due)
		up(ts, i);
	else
		down(ts, i);
}

int64_t timers_next(const struct timers *ts)
{
	return ts->n ? ts->heap[0]->due : INT64_MAX;
}

size_t timers_run(struct timers *ts, int64_t now)
{
	uint64_t before = ts->seq;
	size_t fired = 0;
	int64_t mark;
	ts->slowest = NULL;
	ts->slowest_ns = 0;
	if (!ts->n || ts->heap[0]->due > now)
		return 0; /* most turns: nothing due, no clock read */
	mark = procctl_now_ns();
	while (ts->n && ts->heap[0]->due <= now && ts->heap[0]->seq < before) {
		struct timer *t = ts->heap[0];
		const char *name = t->name; /* t may be freed by its function */
		int64_t end;
		timer_disarm(ts, t);
		t->fn(t, now);
		fired++;
		if ((end = procctl_now_ns()) - mark >= ts->slowest_ns) {
			ts->slowest = name;
			ts->slowest_ns = end - mark;
		}
		mark = end;
	}
	return fired;
}

void timers_free(struct timers *ts)
{
	size_t i;
	for (i = 0; i < ts->n; i++)
		ts->heap[i]->slot = TIMER_IDLE;
	free(ts->heap);
	ts->heap = NULL;
	ts->n = ts->cap = 0;
}
