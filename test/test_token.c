/* SPDX-License-Identifier: Apache-2.0 */
/* The arbiter with real token holders, the agent in this process.
 *
 * rotation_with_real_holders: a registry owns three holders, the arbiter
 * rotates the resource among them, and the witness log (each holder's own
 * record of when it used the resource) shows no two holders at once, and
 * every holder getting turns. Also: a holder whose agent died in a write,
 * and the READY event that wakes an arbiter ticking on events only.
 */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procctl_arbiter.h"
#include "th.h"
#include "tokenworld.h"

struct interval_check {
	int starts[NHOLD];
	pid_t pids[NHOLD];
	int overlaps;
};

/* A start while someone else holds is an overlap; so is an X. */
static void check_witness(const char *path, struct interval_check *c)
{
	static struct wev evs[MAXEV];
	int holding[NHOLD] = {0};
	int n = read_witness(path, evs), i;
	for (i = 0; i < n; i++) {
		int k, who = -1, others = 0;
		for (k = 0; k < NHOLD; k++)
			if (c->pids[k] == evs[i].pid)
				who = k;
		assert_true(who >= 0);
		for (k = 0; k < NHOLD; k++)
			others += k != who && holding[k];
		if (evs[i].what == 'S') {
			c->overlaps += others > 0;
			holding[who] = 1;
			c->starts[who]++;
		} else if (evs[i].what == 'X') {
			c->overlaps++;
		} else {
			holding[who] = 0;
		}
	}
}

/* An agent in this process: a registry of our consumer (leases of
 * lease_ns, rescans every 100 ms) and an arbiter on it of token-client's
 * kind, holds of 50 ms: the registry, the arbiter in *a. */
static procctl_registry_t *agent_new(const char *lockdir, uint64_t lease_ns, struct procctl_arbiter_source *src,
				     procctl_arbiter_t **a)
{
	struct procctl_registry_opts o;
	struct procctl_arbiter_opts ao;
	procctl_registry_t *r;
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.consumer = consumer;
	o.lock_dir = lockdir;
	o.lease_ns = lease_ns;
	o.rescan_ns = 100 * MS;
	assert_non_null(r = procctl_registry_new(&o));
	assert_int_equal(procctl_arbiter_registry_source(src, r, consumer, 500 * MS), 0);
	memset(&ao, 0, sizeof ao);
	ao.sz = sizeof ao;
	ao.kind = 1; /* token-client's default kind */
	ao.hold_ns = 50 * MS;
	assert_non_null(*a = procctl_arbiter_new(&ao, src));
	return r;
}

static void rotation_with_real_holders(void **state)
{
	char lockdir[] = "/tmp/procctl-locks.XXXXXX", witness[] = "/tmp/procctl-witness.XXXXXX", cmd[128];
	struct procctl_arbiter_source src;
	struct procctl_arbiter_snapshot snap;
	struct interval_check c;
	procctl_registry_t *r;
	procctl_arbiter_t *a;
	uint64_t end;
	int i, st, fd;
	(void)state;

	assert_non_null(mkdtemp(lockdir));
	fd = mkstemp(witness);
	close(fd);
	memset(&c, 0, sizeof c);
	for (i = 0; i < NHOLD; i++)
		c.pids[i] = holder(witness);

	r = agent_new(lockdir, 2000 * MS, &src, &a);

	end = th_now_ns() + 1500 * MS;
	while (th_now_ns() < end) {
		struct pollfd p = {procctl_registry_fd(r), POLLIN, 0};
		poll(&p, 1, 2);
		assert_int_equal(procctl_registry_dispatch(r), 0);
		assert_int_equal(procctl_arbiter_tick(a), 0);
	}
	assert_int_equal(procctl_arbiter_snapshot(a, &snap, 1, sizeof snap), 1);
	for (i = 0; i < NHOLD; i++) {
		kill(c.pids[i], SIGTERM); /* it writes its last E on the way out */
		waitpid(c.pids[i], &st, 0);
	}
	check_witness(witness, &c);
	print_message("turns: %d %d %d; hand-offs %llu; held %llu ms, pending release %llu ms, blocked %llu ms\n",
		      c.starts[0], c.starts[1], c.starts[2], (unsigned long long)snap.handoffs,
		      (unsigned long long)(snap.hold_ns_total / MS), (unsigned long long)(snap.pending_ns / MS),
		      (unsigned long long)(snap.blocked_ns / MS));
	assert_int_equal(c.overlaps, 0);
	for (i = 0; i < NHOLD; i++)
		assert_true(c.starts[i] >= 2);
	assert_true(snap.handoffs >= 5);

	procctl_arbiter_free(a);
	procctl_registry_close(r, 0);
	procctl_arbiter_registry_source_free(&src);
	unlink(witness);
	snprintf(cmd, sizeof cmd, "rm -rf %s", lockdir);
	assert_int_equal(system(cmd), 0);
}

/* The control block's seq of pid's region of our consumer, made odd: a
 * write begun that never ends, as an agent that died in one leaves it. */
static void stick_seq_odd(pid_t pid)
{
	char dir[64], path[600], link[256], want[64];
	struct procctl_hdr h;
	struct dirent *e;
	uint32_t *seq = NULL;
	void *m;
	DIR *d;
	int fd = -1;
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	snprintf(want, sizeof want, "/memfd:procctl:%s-v1 (deleted)", consumer);
	assert_non_null(d = opendir(dir));
	while (fd < 0 && (e = readdir(d))) {
		ssize_t n;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if ((n = readlink(path, link, sizeof link - 1)) > 0 && (link[n] = 0, !strcmp(link, want)))
			fd = open(path, O_RDWR);
	}
	closedir(d);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
	m = mmap(NULL, h.ctrl_off + 64, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	seq = (uint32_t *)((char *)m + h.ctrl_off);
	__atomic_fetch_or(seq, 1u, __ATOMIC_SEQ_CST);
	munmap(m, h.ctrl_off + 64);
	close(fd);
}

/* A holder whose agent died in a write: its grant reads say busy from
 * then on, and the hold still ends when the lease does (SPEC.md 9.3). */
static void holder_lets_go_when_its_agent_died_in_a_write(void **state)
{
	char lockdir[] = "/tmp/procctl-locks.XXXXXX", witness[] = "/tmp/procctl-witness.XXXXXX", cmd[128];
	struct procctl_arbiter_source src;
	procctl_registry_t *r;
	procctl_arbiter_t *a;
	uint64_t end;
	pid_t p;
	int fd, st;
	(void)state;

	assert_non_null(mkdtemp(lockdir));
	fd = mkstemp(witness);
	close(fd);
	p = holder(witness);
	r = agent_new(lockdir, 500 * MS, &src, &a);
	end = th_now_ns() + 5000 * MS;
	while (count_events(witness, 'S') == 0 && th_now_ns() < end) {
		struct pollfd pf = {procctl_registry_fd(r), POLLIN, 0};
		poll(&pf, 1, 2);
		assert_int_equal(procctl_registry_dispatch(r), 0);
		assert_int_equal(procctl_arbiter_tick(a), 0);
	}
	assert_int_equal(count_events(witness, 'S'), 1); /* it holds */
	procctl_arbiter_free(a);
	procctl_arbiter_registry_source_free(&src);
	/* The agent goes (its heartbeats stop), and its last write never ends. */
	procctl_registry_close(r, 0);
	stick_seq_odd(p);
	end = th_now_ns() + 5000 * MS;
	while (count_events(witness, 'E') == 0 && th_now_ns() < end)
		th_sleep_ms(20);
	assert_int_equal(count_events(witness, 'E'), 1);
	kill(p, SIGTERM);
	waitpid(p, &st, 0);
	unlink(witness);
	snprintf(cmd, sizeof cmd, "rm -rf %s", lockdir);
	assert_int_equal(system(cmd), 0);
}

/* Every event sets it: the loop below ticks on events and when due only. */
static int news;

static void note_event(const struct procctl_event *ev, void *arg)
{
	(void)ev;
	(void)arg;
	news = 1;
}

/* A loop that ticks the arbiter only on an event or when next_tick says
 * (as procctl-node does), with PROCCTL_ARB_READY_EVENTS, and a process
 * that asked before the agent came and is quiet since: its ask rang no
 * event here, and the registry attaches it before it is ready (younger
 * processes come after it in the first scan). The READY event is what
 * wakes the arbiter to grant. */
static void ready_event_wakes_the_arbiter(void **state)
{
	char lockdir[] = "/tmp/procctl-locks.XXXXXX", cmd[128];
	struct procctl_registry_opts o;
	struct procctl_arbiter_source src;
	struct procctl_arbiter_opts ao;
	struct procctl_arbiter_snapshot snap;
	struct th_agent sim;
	procctl_registry_t *r;
	procctl_arbiter_t *a;
	uint64_t end;
	int i, ticks = 0;
	(void)state;

	assert_non_null(mkdtemp(lockdir));
	th_procsim_start(&sim);
	th_agent_ok(&sim, "init %s", consumer);
	th_agent_ok(&sim, "report 1 0 %u %u", PROCCTL_RES_IDLE, PROCCTL_RES_F_WANT);
	for (i = 0; i < 48; i++) { /* later pids: the scan goes on for steps after the attach */
		pid_t c = fork();
		assert_true(c >= 0);
		if (c == 0)
			for (;;)
				pause();
		track(c);
	}
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.consumer = consumer;
	o.lock_dir = lockdir;
	o.rescan_ns = 3600000 * MS;
	o.flags = PROCCTL_REGISTRY_DOORBELLS;
	o.on_event = note_event;
	assert_non_null(r = procctl_registry_new(&o));
	assert_int_equal(procctl_arbiter_registry_source(&src, r, consumer, 500 * MS), 0);
	memset(&ao, 0, sizeof ao);
	ao.sz = sizeof ao;
	ao.kind = 1;
	ao.hold_ns = 50 * MS;
	ao.flags = PROCCTL_ARB_READY_EVENTS;
	assert_non_null(a = procctl_arbiter_new(&ao, &src));
	news = 1;
	end = th_now_ns() + 3000 * MS;
	while (th_now_ns() < end && (procctl_arbiter_snapshot(a, &snap, 1, sizeof snap), snap.holder_pid != sim.pid)) {
		uint64_t due = procctl_arbiter_next_tick(a), now = th_now_ns();
		struct pollfd p = {procctl_registry_fd(r), POLLIN, 0};
		poll(&p, 1, due == UINT64_MAX ? 100 : due <= now ? 0 : (int)((due - now) / MS + 1));
		assert_int_equal(procctl_registry_dispatch(r), 0);
		if (news || th_now_ns() >= procctl_arbiter_next_tick(a)) {
			news = 0;
			ticks++;
			assert_int_equal(procctl_arbiter_tick(a), 0);
		}
	}
	if (snap.holder_pid != sim.pid)
		fail_msg("no grant in 3 s (%d ticks; next_tick %llu)", ticks,
			 (unsigned long long)procctl_arbiter_next_tick(a));

	procctl_arbiter_free(a);
	procctl_registry_close(r, 0);
	procctl_arbiter_registry_source_free(&src);
	th_agent_kill(&sim);
	snprintf(cmd, sizeof cmd, "rm -rf %s", lockdir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(rotation_with_real_holders, teardown),
		cmocka_unit_test_teardown(ready_event_wakes_the_arbiter, teardown),
		cmocka_unit_test_teardown(holder_lets_go_when_its_agent_died_in_a_write, teardown),
	};
	tokenworld_init();
	return TH_RUN(tests);
}
