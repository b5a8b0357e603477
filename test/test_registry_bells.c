/* SPDX-License-Identifier: Apache-2.0 */
/* The registry's doorbells (PROCCTL_REGISTRY_DOORBELLS) with real
 * processes: a report reaches the loop at once as an event; a process that
 * rings too often is muted, one that writes its doorbell word is never
 * heard again, and the others still are; in the io_uring and in watcher
 * threads. */
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
	pump_until(r, &log.doorbells, n + 1);
	assert_int_equal(log.last_pid, a.pid);
	/* so does a status (SPEC.md 6.5): a heard process needs no polling.
	 * Set again until heard: a watcher thread back from the ack may not
	 * wait yet (a wake is a hint; the ring has no such gap). */
	n = log.doorbells;
	for (i = 0; i < 50 && log.doorbells == n; i++) {
		th_agent_ok(&a, "state up%d", i);
		pump_for(r, 100);
	}
	assert_true(log.doorbells > n);
	assert_int_equal(log.last_pid, a.pid);
	assert_int_equal(procctl_registry_doorbell_heard(r, ca), 1);

	/* b rings 200,000 times while the loop runs (a loop busy elsewhere
	 * hears a burst as one ring: the wait is armed again after it). */
	assert_int_equal(pthread_create(&ringer, NULL, ring_burst, &b), 0);
	pump_for(r, 300);
	pthread_join(ringer, NULL);
	procctl_registry_stats(r, &st);
	print_message("doorbells heard %llu, muted %llu\n", (unsigned long long)st.doorbells, (unsigned long long)st.doorbells_muted);
	assert_int_equal(procctl_registry_doorbell_heard(r, procctl_registry_find(r, b.pid)), 0); /* muted */
	assert_true(st.doorbells_muted >= 1);
	assert_true(st.doorbells <= 2 * 1000 + 10); /* heard at most a window's worth, twice */

	th_agent_ok(&b, "bellword");
	th_agent_ok(&b, "ring 1");
	for (i = 0; i < 100 && (procctl_registry_stats(r, &st), st.doorbells_bad < 1); i++)
		pump_for(r, 10);
	assert_int_equal(st.doorbells_bad, 1);
	assert_int_equal(procctl_registry_doorbell_heard(r, procctl_registry_find(r, b.pid)), 0);

	n = log.doorbells;
	th_agent_ok(&a, "ring 1");
	pump_until(r, &log.doorbells, n + 1);
	assert_int_equal(log.last_pid, a.pid);
	procctl_registry_close(r, 0);
	th_agent_kill(&a);
	th_agent_kill(&b);
}

/* Past one watcher's 127 doorbells: the oldest region of 301 is heard,
 * and two that ring together both get their event. */
static void doorbells_many(void **state)
{
	struct procctl_registry_opts o;
	struct th_agent a, b;
	struct evlog log;
	procctl_registry_t *r;
	int i;

	memset(&log, 0, sizeof log);
	opts(&o, "test", lockdir, 0, 3600000 * MS, &log);
	o.flags = PROCCTL_REGISTRY_DOORBELLS | bell_mode(state);
	o.max_per_process = 300;
	r = procctl_registry_new(&o);
	assert_non_null(r);
	pump_for(r, 50);
	th_procsim_start(&a);
	th_agent_ok(&a, "init test");
	procctl_registry_notify(r, a.pid);
	pump_until(r, &log.attached, 1);
	th_procsim_start(&b);
	for (i = 0; i < 300; i++)
		th_agent_ok(&b, "init test");
	procctl_registry_notify(r, b.pid);
	pump_until(r, &log.attached, 301);
	pump_for(r, 200); /* the watchers collect the set */
	th_agent_ok(&a, "ring 1");
	th_agent_ok(&b, "ring 1");
	pump_until(r, &log.doorbells, 2);
	pump_for(r, 50);
	assert_int_equal(log.doorbells, 2);
	assert_true((log.rang[0] == a.pid && log.rang[1] == b.pid) || (log.rang[0] == b.pid && log.rang[1] == a.pid));
	procctl_registry_close(r, 0);
	th_agent_kill(&a);
	th_agent_kill(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(doorbells, setup, teardown),
		cmocka_unit_test_prestate_setup_teardown(doorbells, setup, teardown, &bell_threads),
		cmocka_unit_test_setup_teardown(doorbells_many, setup, teardown),
		cmocka_unit_test_prestate_setup_teardown(doorbells_many, setup, teardown, &bell_threads),
	};
	signal(SIGPIPE, SIG_IGN);
	srand(42);
	return TH_RUN(tests);
}
