/* SPDX-License-Identifier: Apache-2.0 */
/* timer.h - the loop's timers: deadlines in a binary min-heap, in the
 * manner of valkey's ae time events and libuv's timer heap. A timer is
 * embedded in what it times (a wait, a process, the loop) and costs no
 * allocation of its own; the heap holds pointers and grows on demand.
 *
 * The loop sleeps until timers_next(), then timers_run() fires what is
 * due, each once per run, earliest first: a periodic timer re-arms itself
 * from its function. Times are CLOCK_MONOTONIC nanoseconds. One thread. */
#ifndef PROCCTL_NODE_TIMER_H
#define PROCCTL_NODE_TIMER_H

#include <stddef.h>
#include <stdint.h>

struct timer;
typedef void timer_fn(struct timer *t, int64_t now);

struct timer {
	int64_t due;
	timer_fn *fn;
	const char *name; /* fn's, for the slow-turn line */
	size_t slot;  /* in the heap; TIMER_IDLE when not armed */
	uint64_t seq; /* when it was armed, in arms */
};

#define TIMER_IDLE ((size_t)-1)
#define TIMER_INIT(f) ((struct timer){.fn = (f), .name = #f, .slot = TIMER_IDLE})

struct timers {
	struct timer **heap;
	size_t n, cap;
	uint64_t seq; /* arms so far */
	const char *slowest; /* the last run's slowest function (NULL: none fired) */
	int64_t slowest_ns;  /* and its time */
};

/* Arm t for due, or move it there if it is armed. 0, or -ENOMEM (t is
 * left as it was). */
int timer_arm(struct timers *ts, struct timer *t, int64_t due);
/* Arm t for due unless it is armed for earlier. 0 or -ENOMEM. */
int timer_arm_by(struct timers *ts, struct timer *t, int64_t due);
/* Disarm t (nothing when it is not armed). */
void timer_disarm(struct timers *ts, struct timer *t);
static inline int timer_armed(const struct timer *t)
{
	return t->slot != TIMER_IDLE;
}
/* The earliest due time, or INT64_MAX when nothing is armed. */
int64_t timers_next(const struct timers *ts);
/* Fire the timers due by now, earliest first, each disarmed before its
 * function runs. A function may arm, disarm or free any timer, itself
 * included; what is armed during the run waits for the next run (and so
 * may what is due after it: timers_next() is then due at once). The
 * count fired; ts->slowest and slowest_ns say which took longest. */
size_t timers_run(struct timers *ts, int64_t now);
/* Free the heap (the timers stay where they are, disarmed). */
void timers_free(struct timers *ts);

#endif
