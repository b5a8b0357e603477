/* SPDX-License-Identifier: Apache-2.0 */
/* Two agents on one node (one owns the node lock, one passive), the owner
 * in a process of its own (ownersim): SIGKILL of a writing owner, hand-off
 * without flap, uninstall, SIGSTOP of the owner; heartbeats that a stalled
 * remote read never delays. */
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

/* SIGKILL an owner that is publishing as fast as it can, many times: the
 * passive agent takes over at once (the lock dies with the owner),
 * repairs a write section left open, and the process never reads a torn
 * config; the config it has is always a complete one. */
static void sigkill_writing_owner(void **state)
{
	struct evlog log;
	struct th_agent sim;
	procctl_registry_t *b;
	int round, rounds = 12, repaired = 0, mid_write = 0;
	(void)state;

	th_procsim_start(&sim);
	th_agent_ok(&sim, "init test");
	for (round = 0; round < rounds; round++) {
		pid_t a = owner("test", 10000, "flood");
		const char *r;
		int i;
		memset(&log, 0, sizeof log);
		for (i = 0; i < 1000; i++) { /* until the flood reaches the process */
			r = th_agent_cmd(&sim, "poll"); /* busy (16) or torn (11) while it floods */
			if (!strncmp(r, "ok ", 3) && r[3] != '0')
				break;
			if (strncmp(r, "ok", 2) && strncmp(r, "err 16", 6) && strncmp(r, "err 11", 6))
				fail_msg("poll during the flood: %s", r);
			th_sleep_ms(2);
		}
		b = registry("test", lockdir, 10000 * MS, 0, &log);
		pump_until(b, &log.attached, 1);
		assert_int_equal(procctl_registry_owner(b, "test"), 0); /* passive */
		th_sleep_ms(1 + (unsigned)(rand() % 10));
		reap(a);
		/* Did it die inside a write section? The passive agent's own
		 * mapping shows the seq word it left. */
		mid_write += __atomic_load_n(&procctl_registry_find(b, sim.pid)->r.ctrl->seq, __ATOMIC_ACQUIRE) & 1u;
		pump_until(b, &log.ownership, 1); /* takes the lock at once */
		assert_int_equal(log.held, 1);
		/* Whatever the process gets now is complete. */
		r = th_agent_ok(&sim, "poll");
		if (r[0] != '0') {
			const char *text = strchr(strchr(r, ' ') + 1, ' ') + 1;
			if (!flood_text_ok(text))
				fail_msg("torn config after takeover: %.80s", text);
			repaired++;
		}
		procctl_registry_close(b, 0);
	}
	print_message("%d owner kills, %d inside a write section; %d times the process had a newer config to read "
		      "after the takeover\n",
		      rounds, mid_write, repaired);
	th_agent_kill(&sim);
}

/* The same, deterministically inside a write section: the successor
 * repairs seq without a flip, and the last good config is what the
 * process reads. */
static void sigkill_owner_mid_write(void **state)
{
	struct evlog log;
	struct th_agent sim;
	procctl_registry_t *b;
	procctl_client_t *c;
	const char *r;
	char want[FLOOD_TEXT_MAX];
	pid_t a;
	int i;
	(void)state;

	th_procsim_start(&sim);
	th_agent_ok(&sim, "init test");
	a = owner("test", 10000, "midwrite");
	for (i = 0; i < 1000 && strcmp(th_agent_ok(&sim, "lease"), "0"); i++) /* A owns it */
		th_sleep_ms(10);
	memset(&log, 0, sizeof log);
	b = registry("test", lockdir, 10000 * MS, 0, &log);
	pump_until(b, &log.attached, 1);
	c = procctl_registry_find(b, sim.pid);
	for (i = 0; i < 1000 && !(__atomic_load_n(&c->r.ctrl->seq, __ATOMIC_ACQUIRE) & 1u); i++)
		th_sleep_ms(10);
	assert_true(__atomic_load_n(&c->r.ctrl->seq, __ATOMIC_ACQUIRE) & 1u); /* open section */
	assert_string_equal(th_agent_cmd(&sim, "poll"), "err 16 0");      /* busy, not torn */
	reap(a);
	pump_until(b, &log.ownership, 1);
	assert_int_equal(__atomic_load_n(&c->r.ctrl->seq, __ATOMIC_ACQUIRE) & 1u, 0); /* repaired */
	r = th_agent_ok(&sim, "poll");
	flood_text(4242, want);
	assert_non_null(strstr(r, want)); /* the last good config */
	assert_true(procctl_client_write(c, "after", 5) > 0);
	assert_non_null(strstr(th_agent_ok(&sim, "poll"), "after"));
	procctl_registry_close(b, 0);
	th_agent_kill(&sim);
}

/* close() hands off: the successor takes over and the client sees no
 * flap (its own log says what it applied); uninstall reverts it at once. */
static void handoff_then_uninstall(void **state)
{
	char path[] = "/tmp/procctl-echo.XXXXXX";
	struct evlog log;
	procctl_registry_t *b;
	pid_t c, a;
	int fd = mkstemp(path), st;
	(void)state;

	close(fd);
	c = echo_client(path);
	wait_log(path, "event=started", 1);
	a = owner("echo", 1000, "run");
	wait_log(path, "event=lease state=live", 1);
	memset(&log, 0, sizeof log);
	b = registry("echo", lockdir, 1000 * MS, 0, &log);
	pump_until(b, &log.attached, 1);
	assert_int_equal(procctl_registry_owner(b, "echo"), 0);
	/* Standing by, it sleeps: a lock retry a second at most (the
	 * holder's close wakes it through inotify). */
	pump_for(b, 50);
	assert_true(wakeups_in(b, 500) <= 1);
	kill(a, SIGTERM);
	waitpid(a, &st, 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	pump_until(b, &log.ownership, 1);
	/* Two leases later, still no flap. */
	pump_for(b, 2000);
	assert_int_equal(log_has(path, "event=lease state=expired"), 0);
	assert_int_equal(log_has(path, "event=cleared"), 0);
	assert_int_equal(wakeups_in(b, 500), 0); /* owning, idle: no tick (the heartbeat has its thread) */

	procctl_registry_close(b, PROCCTL_CLOSE_UNINSTALL);
	wait_log(path, "event=cleared", 1);
	wait_log(path, "event=lease state=expired", 1);
	reap(c);
	unlink(path);
}

/* A stopped owner keeps the lock: the client keeps its config until the
 * lease runs out, then uses its defaults; the passive agent never writes. */
static void sigstopped_owner(void **state)
{
	char path[] = "/tmp/procctl-echo.XXXXXX";
	struct evlog log;
	struct procctl_registry_stats st;
	procctl_registry_t *b;
	pid_t c, a;
	int fd = mkstemp(path);
	(void)state;

	close(fd);
	c = echo_client(path);
	wait_log(path, "event=started", 1);
	a = owner("echo", 300, "run");
	wait_log(path, "event=lease state=live", 1);
	memset(&log, 0, sizeof log);
	b = registry("echo", lockdir, 300 * MS, 0, &log);
	pump_until(b, &log.attached, 1);
	kill(a, SIGSTOP);
	pump_for(b, 1500); /* five leases */
	wait_log(path, "event=lease state=expired", 1);
	procctl_registry_stats(b, &st, sizeof st);
	assert_int_equal(st.owned, 0);
	assert_int_equal(log.ownership, 0);
	assert_int_equal(procctl_registry_owner(b, "echo"), 0);
	kill(a, SIGCONT); /* heartbeats resume: live again */
	wait_log(path, "event=lease state=live", 2);
	procctl_registry_close(b, 0);
	reap(a);
	reap(c);
	unlink(path);
}

/* A state block behind a userfaultfd page nobody serves: the read misses
 * its deadline (1 s), and the heartbeats go on: the process's lease of
 * 500 ms stays live over four leases (a heartbeat held up by the read
 * would let it run out twice; 500 ms, not less, so that a loaded host's
 * scheduling is not what is measured). */
static void stalled_read_no_heartbeat_stall(void **state)
{
	static struct procctl_state s;
	struct evlog log;
	struct th_agent sim;
	struct procctl_registry_stats st0, st1;
	procctl_registry_t *r;
	procctl_client_t *c;
	struct timespec ts;
	int i;
	(void)state;

	th_procsim_start(&sim);
	th_agent_ok(&sim, "init test");
	memset(&log, 0, sizeof log);
	r = registry("test", lockdir, 500 * MS, 0, &log);
	pump_until(r, &log.attached, 1);
	c = procctl_registry_find(r, sim.pid);
	assert_non_null(c);
	if (strncmp(th_agent_cmd(&sim, "stall"), "ok", 2)) {
		procctl_registry_close(r, 0);
		th_agent_kill(&sim);
		TH_SKIP_OR_FAIL("userfaultfd not available");
	}
	procctl_registry_stats(r, &st0, sizeof st0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	assert_int_equal(procctl_client_read_state(c, &s, sizeof s, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + 1000000000),
			 -ETIMEDOUT);
	for (i = 0; i < 10; i++) { /* 10 x 100 ms, after the read's second */
		assert_string_equal(th_agent_ok(&sim, "lease"), "0");
		pump_for(r, 100);
	}
	procctl_registry_stats(r, &st1, sizeof st1);
	assert_true(st1.heartbeats >= st0.heartbeats + 10); /* 16 in 2 s, one every 125 ms */
	procctl_registry_close(r, 0);
	th_agent_kill(&sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(sigkill_writing_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(sigkill_owner_mid_write, setup, teardown),
		cmocka_unit_test_setup_teardown(handoff_then_uninstall, setup, teardown),
		cmocka_unit_test_setup_teardown(sigstopped_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(stalled_read_no_heartbeat_stall, setup, teardown),
	};
	signal(SIGPIPE, SIG_IGN);
	srand(42);
	return TH_RUN(tests);
}
