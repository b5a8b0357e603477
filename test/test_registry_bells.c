/* SPDX-License-Identifier: Apache-2.0 */
/* The registry's doorbells (PROCCTL_REGISTRY_DOORBELLS) with real
 * processes: a report reaches the loop at once as an event; a process that
 * rings too often is muted, one that writes its doorbell word is never
 * heard again, and the others still are; regions that ring at once are
 * all heard, and one that moves in the watchers' set still is; in the
 * io_uring and in watcher threads. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "regworld.h"

/* With PROCCTL_REGISTRY_DOORBELLS a report reaches the loop at once as an
 * event; a process that rings too often is muted, one that writes its
 * doorbell word is never heard again, and the others still are. */
/* The doorbell tests run twice: in the io_uring, and in watcher threads. */
static unsigned bell_threads = PROCCTL_REGISTRY_BELL_THREADS;

static unsigned bell_mode(void **state)
{
	return *state ? *(const unsigned *)*state : 0;
}

static uint64_t rings_heard(procctl_registry_t *r)
{
	struct procctl_registry_stats st;
	procctl_registry_stats(r, &st, sizeof st);
	return st.doorbells;
}

/* Dispatch until pid's doorbell event is among those since the n-th (a
 * watcher's sweep adds others'), for at most 10 s. */
static void pump_until_rang(procctl_registry_t *r, const struct evlog *log, int n, pid_t pid)
{
	int i, k, seen = 0;
	for (i = 0; i < 1000 && !seen; i++) {
		pump_for(r, 10);
		for (k = n; k < log->doorbells && k < n + 8; k++)
			seen |= log->rang[k & 7] == pid;
	}
	assert_true(seen);
}

static void *ring_burst(void *arg)
{
	th_agent_ok(arg, "ring 200000");
	return NULL;
}

static void doorbells(void **state)
{
	struct procctl_registry_opts o;
	struct procctl_registry_stats st;
	struct th_agent a, b;
	struct evlog log;
	procctl_registry_t *r;
	procctl_client_t *ca;
	pthread_t ringer;
	uint64_t heard;
	int64_t gen;
	int i, n;

	th_procsim_start(&a);
	th_agent_ok(&a, "init test");
	th_procsim_start(&b);
	th_agent_ok(&b, "init test");
	memset(&log, 0, sizeof log);
	opts(&o, "test", lockdir, 0, 3600000 * MS, &log);
	o.flags = 0x80;
	assert_null(procctl_registry_new(&o));
	assert_int_equal(errno, EINVAL);
	o.flags = PROCCTL_REGISTRY_DOORBELLS | bell_mode(state);
	r = procctl_registry_new(&o);
	assert_non_null(r);
	pump_until(r, &log.attached, 2);
	pump_for(r, 50);

	/* a acks a config: procctl_ack rings */
	ca = procctl_registry_find(r, a.pid);
	assert_non_null(ca);
	gen = procctl_client_write(ca, "x", 1);
	assert_true(gen > 0);
	th_agent_ok(&a, "poll");
	n = log.doorbells;
	th_agent_ok(&a, "ack %lld", (long long)gen);
	pump_until_rang(r, &log, n, a.pid);
	/* so does a status (SPEC.md 6.5): a heard process needs no polling.
	 * Set again until its ring is heard: a watcher thread back from the
	 * ack may not wait yet (its sweep finds the write then; the ring has
	 * no such gap). */
	heard = rings_heard(r);
	n = log.doorbells;
	for (i = 0; i < 50 && rings_heard(r) == heard; i++) {
		th_agent_ok(&a, "state up%d", i);
		pump_for(r, 100);
	}
	assert_true(rings_heard(r) > heard);
	pump_until_rang(r, &log, n, a.pid);
	assert_int_equal(procctl_registry_doorbell_heard(r, ca), 1);

	/* b rings 200,000 times while the loop runs (a loop busy elsewhere
	 * hears a burst as one ring: the wait is armed again after it), and
	 * again, 10 bursts at most, until it is muted (a loaded host's
	 * watcher heard 120 rings of one burst). */
	for (i = 0; i < 10; i++) {
		assert_int_equal(pthread_create(&ringer, NULL, ring_burst, &b), 0);
		pump_for(r, 300);
		pthread_join(ringer, NULL);
		procctl_registry_stats(r, &st, sizeof st);
		if (st.doorbells_muted >= 1)
			break;
	}
	print_message("doorbells heard %llu, muted %llu\n", (unsigned long long)st.doorbells, (unsigned long long)st.doorbells_muted);
	assert_int_equal(procctl_registry_doorbell_heard(r, procctl_registry_find(r, b.pid)), 0); /* muted */
	assert_true(st.doorbells_muted >= 1);
	assert_true(st.doorbells <= 2 * 1000 + 10); /* heard at most a window's worth, twice */

	th_agent_ok(&b, "bellword");
	th_agent_ok(&b, "ring 1");
	for (i = 0; i < 100 && (procctl_registry_stats(r, &st, sizeof st), st.doorbells_bad < 1); i++)
		pump_for(r, 10);
	assert_int_equal(st.doorbells_bad, 1);
	assert_int_equal(procctl_registry_doorbell_heard(r, procctl_registry_find(r, b.pid)), 0);

	n = log.doorbells;
	th_agent_ok(&a, "ring 1");
	pump_until_rang(r, &log, n, a.pid);
	procctl_registry_close(r, 0);
	th_agent_kill(&a);
	th_agent_kill(&b);
}

/* A registry in the test's doorbell mode, and a with 1 region, then b
 * with 300: attached, past one watcher's 127. */
static procctl_registry_t *one_and_300(void **state, struct evlog *log, struct th_agent *a, struct th_agent *b)
{
	struct procctl_registry_opts o;
	procctl_registry_t *r;
	int i;
	memset(log, 0, sizeof *log);
	opts(&o, "test", lockdir, 0, 3600000 * MS, log);
	o.flags = PROCCTL_REGISTRY_DOORBELLS | bell_mode(state);
	o.max_per_process = 300;
	r = procctl_registry_new(&o);
	assert_non_null(r);
	th_procsim_start(a);
	th_agent_ok(a, "init test");
	procctl_registry_notify(r, a->pid);
	pump_until(r, &log->attached, 1);
	th_procsim_start(b);
	for (i = 0; i < 300; i++)
		th_agent_ok(b, "init test");
	procctl_registry_notify(r, b->pid);
	pump_until(r, &log->attached, 301);
	return r;
}

/* Past one watcher's 127 doorbells: the oldest region of 301 is heard,
 * and two that ring together both get their event (both rings heard). */
static void doorbells_many(void **state)
{
	struct th_agent a, b;
	struct evlog log;
	procctl_registry_t *r = one_and_300(state, &log, &a, &b);
	uint64_t heard;
	int i, n;

	pump_for(r, 200); /* the watchers collect the set */
	heard = rings_heard(r);
	n = log.doorbells;
	th_agent_ok(&a, "ring 1");
	th_agent_ok(&b, "ring 1");
	for (i = 0; i < 100 && rings_heard(r) < heard + 2; i++)
		pump_for(r, 10);
	assert_int_equal(rings_heard(r), heard + 2);
	pump_for(r, 50);
	assert_true(log.doorbells >= n + 2);
	if (!bell_mode(state)) { /* the ring hears each wait: no sweep */
		assert_int_equal(log.doorbells, n + 2);
		assert_true((log.rang[n & 7] == a.pid && log.rang[(n + 1) & 7] == b.pid) ||
			    (log.rang[n & 7] == b.pid && log.rang[(n + 1) & 7] == a.pid));
	}
	procctl_registry_close(r, 0);
	th_agent_kill(&a);
	th_agent_kill(&b);
}

/* 300 regions going at once end their waits (the ring: each word woken
 * as it detaches), and that is no ring: nothing heard, no DOORBELL event;
 * the region left is heard as before. */
static void doorbells_gone(void **state)
{
	struct th_agent a, b;
	struct evlog log;
	procctl_registry_t *r = one_and_300(state, &log, &a, &b);
	uint64_t heard;
	int i, n;

	pump_for(r, 200);
	heard = rings_heard(r);
	n = log.doorbells;
	th_agent_kill(&b);
	pump_until(r, &log.detached, 300);
	pump_for(r, 100);
	assert_int_equal(rings_heard(r), heard);
	if (!bell_mode(state)) /* threads sweep the slices that changed */
		assert_int_equal(log.doorbells, n);
	th_agent_ok(&a, "ring 1");
	for (i = 0; i < 100 && rings_heard(r) == heard; i++)
		pump_for(r, 10);
	assert_int_equal(rings_heard(r), heard + 1);
	pump_until_rang(r, &log, n, a.pid);
	procctl_registry_close(r, 0);
	th_agent_kill(&a);
}

/* A region that leaves a watcher's slice gives its place to the set's
 * last one: that one's next ring is heard by the watcher it moved to
 * (a ring heard, not a sweep's event). */
static void doorbells_moved(void **state)
{
	struct th_agent a, b, c;
	struct evlog log;
	procctl_registry_t *r = one_and_300(state, &log, &a, &b);
	uint64_t heard;
	int i;

	th_procsim_start(&c);
	th_agent_ok(&c, "init test");
	procctl_registry_notify(r, c.pid);
	pump_until(r, &log.attached, 302);
	th_agent_kill(&a); /* the first region goes: the last (c's) takes its place */
	pump_until(r, &log.detached, 1);
	pump_for(r, 200);
	heard = rings_heard(r);
	th_agent_ok(&c, "ring 1");
	for (i = 0; i < 100 && rings_heard(r) == heard; i++)
		pump_for(r, 10);
	assert_int_equal(rings_heard(r), heard + 1);
	assert_int_equal(procctl_registry_doorbell_heard(r, procctl_registry_find(r, c.pid)), 1);
	procctl_registry_close(r, 0);
	th_agent_kill(&b);
	th_agent_kill(&c);
}

/* Regions that ring at once are all heard: the farm's processes ack their
 * 8 regions in a row, one watcher's slice, whose waitv names one ring a
 * return (the others are found by the slice's sweep). */
#define FARM_PROCS 4
#define FARM_PER 8

struct farmlog {
	int attached, heard;
	unsigned round, rang[FARM_PROCS * FARM_PER];
};

static void on_farm(const struct procctl_event *ev, void *arg)
{
	struct farmlog *l = arg;
	uintptr_t i;
	if (ev->type == PROCCTL_EV_ATTACHED && l->attached < FARM_PROCS * FARM_PER)
		procctl_client_set_data(ev->client, (void *)(uintptr_t)++l->attached);
	else if (ev->type == PROCCTL_EV_DOORBELL && (i = (uintptr_t)procctl_client_data(ev->client)) &&
		 l->rang[i - 1] != l->round)
		l->rang[i - 1] = l->round, l->heard++;
}

static void doorbells_together(void **state)
{
	struct procctl_registry_opts o;
	procctl_client_t *cs[FARM_PROCS * FARM_PER];
	struct farmlog log;
	char consumer[32];
	procctl_registry_t *r;
	pid_t farm;
	size_t i, n;
	int in;

	memset(&log, 0, sizeof log);
	snprintf(consumer, sizeof consumer, "bellfarm%d", (int)getpid());
	farm = child(th_farm_start(FARM_PATH, FARM_PROCS, FARM_PER, consumer, &in));
	opts(&o, consumer, lockdir, 0, 3600000 * MS, NULL);
	o.on_event = on_farm;
	o.arg = &log;
	o.flags = PROCCTL_REGISTRY_DOORBELLS | bell_mode(state);
	r = procctl_registry_new(&o);
	assert_non_null(r);
	pump_until(r, &log.attached, FARM_PROCS * FARM_PER);
	n = procctl_registry_clients_of(r, consumer, cs, FARM_PROCS * FARM_PER);
	assert_int_equal(n, FARM_PROCS * FARM_PER);
	for (log.round = 1; log.round <= 3; log.round++) {
		log.heard = 0;
		for (i = 0; i < n; i++)
			assert_true(procctl_client_write(cs[i], &log.round, sizeof log.round) > 0);
		pump_until(r, &log.heard, (int)n);
	}
	print_message("%zu regions, 3 publishes: %llu rings heard\n", n, (unsigned long long)rings_heard(r));
	procctl_registry_close(r, 0);
	close(in);
	reap(farm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(doorbells, setup, teardown),
		cmocka_unit_test_prestate_setup_teardown(doorbells, setup, teardown, &bell_threads),
		cmocka_unit_test_setup_teardown(doorbells_many, setup, teardown),
		cmocka_unit_test_prestate_setup_teardown(doorbells_many, setup, teardown, &bell_threads),
		cmocka_unit_test_setup_teardown(doorbells_gone, setup, teardown),
		cmocka_unit_test_prestate_setup_teardown(doorbells_gone, setup, teardown, &bell_threads),
		cmocka_unit_test_setup_teardown(doorbells_moved, setup, teardown),
		cmocka_unit_test_prestate_setup_teardown(doorbells_moved, setup, teardown, &bell_threads),
		cmocka_unit_test_setup_teardown(doorbells_together, setup, teardown),
		cmocka_unit_test_prestate_setup_teardown(doorbells_together, setup, teardown, &bell_threads),
	};
	signal(SIGPIPE, SIG_IGN);
	srand(42);
	return TH_RUN(tests);
}
