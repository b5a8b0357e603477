/* SPDX-License-Identifier: Apache-2.0 */
/* Leases (SPEC.md 8.4), decided by the process on its own clock: bounds
 * and clamping, a change mid-lease, expiry until the heartbeat moves,
 * when an event loop must look again, release and uninstall. Time is passed explicitly, so nothing here
 * depends on how fast the test runs. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "th.h"

#define MS 1000000ull

/* The process clamps leases into [100 ms, 2 s]. */
static int setup(void **state)
{
	struct th_proc *p = calloc(1, sizeof *p);
	th_proc_start(p, 100 * MS, 2000 * MS);
	*state = p;
	return 0;
}

static void expiry_and_heartbeat(void **state)
{
	struct th_proc *p = *state;
	uint64_t t0;

	/* Never attached = expired. */
	assert_int_equal(procctl_lease_expired(&p->ctx, th_now_ns()), 1);
	assert_int_equal(procctl_agent_attached(&p->ctx), 0);
	th_agent_gen(&p->a, "claim 1 1 %llu", 1000 * MS); /* claims and beats once */
	assert_int_equal(procctl_agent_attached(&p->ctx), 1);
	t0 = th_now_ns();
	/* The first lease seen applies at once: before it, the lease was the
	 * minimum, and a longer one applies at once (SPEC.md 8.4). */
	assert_int_equal(procctl_lease_expired(&p->ctx, t0), 0);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 999 * MS), 0);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 1000 * MS), 1);
	/* It stays expired, whatever the clock does, until the heartbeat moves. */
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 1001 * MS), 1);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 500 * MS), 1);
	th_agent_ok(&p->a, "hb");
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 1500 * MS), 0);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 2499 * MS), 0);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 2500 * MS), 1);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* A wait with no timeout ends when the live lease runs out: a holder
 * whose agent stopped beating sees it (SPEC.md 6.4). The alarm only ends
 * a wait that would otherwise never return (-EINTR). */
static void wait_sees_lease_run_out(void **state)
{
	struct th_proc *p = *state;
	struct sigaction sa;
	uint64_t gen;
	char buf[64];
	int r;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm; /* no SA_RESTART: the futex wait returns EINTR */
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	th_agent_gen(&p->a, "claim 1 1 %llu", 100 * MS); /* claims and beats once, then never again */
	assert_int_equal(procctl_lease_expired(&p->ctx, th_now_ns()), 0);
	(void)procctl_poll(&p->ctx, buf, sizeof buf, &gen); /* the claim read: nothing unread to return for */
	alarm(30);
	r = procctl_wait(&p->ctx, -1);
	alarm(0);
	assert_int_equal(r, -ETIMEDOUT);
	assert_int_equal(procctl_lease_expired(&p->ctx, th_now_ns()), 1);
}

struct beater {
	struct th_agent *a;
	int rounds;
};

/* The agent's heartbeat every 100 ms, rounds times, then never again. */
static void *beat(void *arg)
{
	struct beater *b = arg;
	int i;
	for (i = 0; i < b->rounds; i++) {
		nanosleep(&(struct timespec){0, 100000000}, NULL);
		th_agent_ok(b->a, "hb");
	}
	return NULL;
}

/* A holder that only waits (procctl_wait, no timeout) while its agent
 * beats sees no lapse: it looks at the heartbeat before a lease has passed
 * since the last it saw, so the lease epoch moves once, when the beats
 * stop and the lease runs out (SPEC.md 6.4, 8.4). */
static void waiting_sees_no_false_lapse(void **state)
{
	struct th_proc *p = *state;
	struct beater b = {&p->a, 40}; /* 4 s: two of its leases */
	struct sigaction sa;
	uint64_t gen, epoch;
	pthread_t t;
	char buf[64];
	int r;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	th_agent_gen(&p->a, "claim 1 1 %llu", 2000 * MS);
	(void)procctl_poll(&p->ctx, buf, sizeof buf, &gen);
	assert_int_equal(procctl_lease_expired(&p->ctx, th_now_ns()), 0);
	epoch = p->ctx.lease_epoch_;
	assert_int_equal(pthread_create(&t, NULL, beat, &b), 0);
	alarm(60);
	r = procctl_wait(&p->ctx, -1);
	alarm(0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(r, -ETIMEDOUT);
	assert_int_equal(p->ctx.lease_epoch_, epoch + 1);
}

/* The process looks from *t for 6 s (its clock: *t then is where it
 * ended), while the agent beats every 250 ms (a 1 s lease): at the times
 * procctl_lease_get gives (sleep_ns 0), or every sleep_ns; the lapses
 * counted. */
static uint64_t lapses_looking(struct th_proc *p, uint64_t *clock, uint64_t sleep_ns)
{
	procctl_lease_t l;
	uint64_t t0 = *clock, t = t0, beat = t0 + 250 * MS, lapses0;
	assert_int_equal(procctl_lease_get(&p->ctx, t, &l), 0);
	lapses0 = l.lapses;
	while (t < t0 + 6000 * MS) {
		assert_int_equal(procctl_lease_get(&p->ctx, t, &l), 0);
		if (!sleep_ns) {
			assert_true(l.left_ns > 0 && l.lease_ns == 1000 * MS);
			assert_true(l.look_ns > 0 && l.look_ns <= l.left_ns);
			assert_int_equal(l.look_ms, (int32_t)(l.look_ns / MS));
		}
		t += sleep_ns ? sleep_ns : l.look_ns;
		for (; beat <= t; beat += 250 * MS) /* the beats while it slept */
			th_agent_ok(&p->a, "hb");
	}
	assert_int_equal(procctl_lease_get(&p->ctx, t, &l), 0);
	*clock = t;
	return l.lapses - lapses0;
}

/* An event loop that sleeps as procctl_lease_get says (look_ns) counts
 * no lapse at a 1 s lease with every heartbeat on time; one that looks
 * every second, a lease apart, counts one at every look (SPEC.md 8.4). */
static void an_event_loop_told_when_to_look_sees_no_lapse(void **state)
{
	struct th_proc *p = *state;
	procctl_lease_t l;
	uint64_t t;
	th_agent_gen(&p->a, "claim 1 1 %llu", 1000 * MS); /* claims and beats once */
	t = th_now_ns();
	assert_int_equal(lapses_looking(p, &t, 0), 0);
	assert_true(lapses_looking(p, &t, 1000 * MS) >= 4);
	/* Expired: no deadline. */
	assert_int_equal(procctl_lease_get(&p->ctx, t + 60000 * MS, &l), 0);
	assert_int_equal(l.left_ns, 0);
	assert_true(l.look_ns == UINT64_MAX && l.look_ms == -1);
	assert_int_equal(procctl_lease_get(&p->ctx, 0, NULL), -EINVAL);
}

static void clamped_to_bounds(void **state)
{
	struct th_proc *p = *state;
	uint64_t t0;

	/* 1 us asked, 100 ms applied (the process's lower bound). */
	th_agent_gen(&p->a, "claim 1 1 1000");
	t0 = th_now_ns();
	assert_int_equal(procctl_lease_expired(&p->ctx, t0), 0);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 99 * MS), 0);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 100 * MS), 1);
	/* One hour asked, 2 s applied (the upper bound). A longer lease
	 * applies at once. */
	th_agent_ok(&p->a, "lease %llu", 3600000 * MS);
	th_agent_ok(&p->a, "hb");
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 200 * MS), 0);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 2199 * MS), 0);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 2200 * MS), 1);
}

/* A shorter lease applies only after one old lease; until then the old,
 * longer one holds, so a heartbeat sent on the old cadence still counts. */
static void change_mid_lease(void **state)
{
	struct th_proc *p = *state;
	uint64_t t0;

	th_agent_gen(&p->a, "claim 1 1 %llu", 2000 * MS);
	t0 = th_now_ns();
	assert_int_equal(procctl_lease_expired(&p->ctx, t0), 0);
	th_agent_ok(&p->a, "lease %llu", 100 * MS);
	/* Seen at t0 + 10 ms: 2 s still applies until t0 + 10 ms + 2 s. */
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 10 * MS), 0);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 1500 * MS), 0);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 2009 * MS), 1);
	/* Now 100 ms. */
	th_agent_ok(&p->a, "hb");
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 3000 * MS), 0);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 3099 * MS), 0);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 3100 * MS), 1);
}

/* A release (hand-off) keeps the lease running; uninstall ends it at once,
 * clears the config and every grant. */
static void release_and_uninstall(void **state)
{
	struct th_proc *p = *state;
	procctl_resource_t res;
	procctl_grant_t g;
	char buf[64];
	uint64_t t0;

	memset(&res, 0, sizeof res);
	res.kind = TH_GPU;
	th_agent_gen(&p->a, "claim 1 1 %llu", 1000 * MS);
	th_agent_gen(&p->a, "publish cfg");
	th_agent_gen(&p->a, "grant 1 00 42");
	t0 = th_now_ns();
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, NULL), 3);
	assert_int_equal(procctl_grant_get(&p->ctx, res.kind, res.id, &g), 1);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0), 0);

	th_agent_ok(&p->a, "release");
	assert_int_equal(procctl_agent_attached(&p->ctx), 0);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 500 * MS), 0);
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, NULL), 0); /* no flap */

	/* A successor claims (next epoch) and beats: all continues. */
	th_agent_gen(&p->a, "claim 1 2 %llu", 1000 * MS);
	assert_int_equal(procctl_agent_attached(&p->ctx), 1);
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 600 * MS), 0);
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, NULL), 0);
	assert_int_equal(procctl_grant_get(&p->ctx, res.kind, res.id, &g), 1);

	th_agent_gen(&p->a, "uninstall");
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 601 * MS), 1);
	assert_int_equal(procctl_agent_attached(&p->ctx), 0);
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, NULL), -ENODATA);
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, NULL), 0);
	assert_int_equal(procctl_grant_get(&p->ctx, res.kind, res.id, &g), 0);
	assert_int_equal(g.grant_id, 0);
	assert_int_equal(procctl_grant_usable(&p->ctx, &g, 0), 0);
	/* A heartbeat under an uninstalled owner does not revive it. */
	th_agent_ok(&p->a, "hb");
	assert_int_equal(procctl_lease_expired(&p->ctx, t0 + 602 * MS), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(expiry_and_heartbeat, setup, th_teardown),
		cmocka_unit_test_setup_teardown(wait_sees_lease_run_out, setup, th_teardown),
		cmocka_unit_test_setup_teardown(waiting_sees_no_false_lapse, setup, th_teardown),
		cmocka_unit_test_setup_teardown(an_event_loop_told_when_to_look_sees_no_lapse, setup, th_teardown),
		cmocka_unit_test_setup_teardown(clamped_to_bounds, setup, th_teardown),
		cmocka_unit_test_setup_teardown(change_mid_lease, setup, th_teardown),
		cmocka_unit_test_setup_teardown(release_and_uninstall, setup, th_teardown),
	};
	return TH_RUN(tests);
}
