/* SPDX-License-Identifier: Apache-2.0 */
/* The registry with real processes and real agents: discovery, notify,
 * rejections counted, exit; two agents (one owns the node lock, one
 * passive): SIGKILL of a writing owner, hand-off without flap, uninstall,
 * SIGSTOP of the owner; heartbeats that a stalled remote read never
 * delays. Owners other than the test run in forked children. */
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

#include "client.h"
#include "flood.h"
#include "th.h"

#if !defined(ECHO_CLIENT_PATH) || !defined(OWNERSIM_PATH)
#error "ECHO_CLIENT_PATH and OWNERSIM_PATH must name the helpers"
#endif

#define MS 1000000ull

struct evlog {
	int attached, detached, ownership, lost, last_reason, held, doorbells;
	pid_t last_pid;
	pid_t rang[8]; /* the first doorbells' pids */
};

static void on_event(const struct procctl_event *ev, void *arg)
{
	struct evlog *l = arg;
	l->last_pid = ev->pid;
	if (ev->type == PROCCTL_EV_ATTACHED)
		l->attached++;
	else if (ev->type == PROCCTL_EV_DETACHED)
		l->detached++, l->last_reason = ev->reason;
	else if (ev->type == PROCCTL_EV_DOORBELL)
		l->rang[l->doorbells++ & 7] = ev->pid;
	else
		l->ownership++, l->held = ev->held, l->lost += !ev->held;
}

static void opts(struct procctl_registry_opts *o, const char *consumer, const char *lockdir, uint64_t lease_ns,
		 uint64_t rescan_ns, struct evlog *log)
{
	memset(o, 0, sizeof *o);
	o->sz = sizeof *o;
	o->consumer = consumer;
	o->lock_dir = lockdir;
	o->lease_ns = lease_ns;
	o->rescan_ns = rescan_ns;
	o->on_event = on_event;
	o->arg = log;
}

static procctl_registry_t *registry(const char *consumer, const char *lockdir, uint64_t lease_ns,
				    uint64_t rescan_ns, struct evlog *log)
{
	struct procctl_registry_opts o;
	procctl_registry_t *r;
	opts(&o, consumer, lockdir, lease_ns, rescan_ns, log);
	r = procctl_registry_new(&o);
	assert_non_null(r);
	return r;
}

/* Dispatch until *counter >= want, for at most 10 s. */
static void pump_until(procctl_registry_t *r, const int *counter, int want)
{
	int i;
	for (i = 0; i < 1000 && *counter < want; i++) {
		struct pollfd p = {procctl_registry_fd(r), POLLIN, 0};
		poll(&p, 1, 10);
		assert_int_equal(procctl_registry_dispatch(r), 0);
	}
	if (*counter < want)
		fail_msg("waited 10 s for %d events, got %d", want, *counter);
}

/* Times r's fd woke a poll in ms, each dispatched: an idle loop's none. */
static int wakeups_in(procctl_registry_t *r, unsigned ms)
{
	uint64_t end = th_now_ns() + ms * MS, now;
	int n = 0;
	while ((now = th_now_ns()) < end) {
		struct pollfd p = {procctl_registry_fd(r), POLLIN, 0};
		if (poll(&p, 1, (int)((end - now) / MS) + 1) > 0) {
			n++;
			assert_int_equal(procctl_registry_dispatch(r), 0);
		}
	}
	return n;
}

static void pump_for(procctl_registry_t *r, unsigned ms)
{
	uint64_t end = th_now_ns() + ms * MS;
	while (th_now_ns() < end) {
		struct pollfd p = {procctl_registry_fd(r), POLLIN, 0};
		poll(&p, 1, 10);
		assert_int_equal(procctl_registry_dispatch(r), 0);
	}
}

static char lockdir[64];

/* Every child a test forks, killed by teardown even when the test fails. */
static pid_t children[32];
static int nchildren;

static pid_t child(pid_t pid)
{
	assert_true(pid >= 0);
	if (pid > 0 && nchildren < 32)
		children[nchildren++] = pid;
	return pid;
}

static void reap(pid_t pid)
{
	int st;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(lockdir, sizeof lockdir, "/tmp/procctl-locks.XXXXXX");
	assert_non_null(mkdtemp(lockdir));
	nchildren = 0;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	while (nchildren)
		reap(children[--nchildren]);
	snprintf(cmd, sizeof cmd, "rm -rf %s", lockdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* An echo client writing its log to path; its pid. */
static pid_t echo_client(const char *path)
{
	pid_t pid = child(fork());
	if (pid == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		execl(ECHO_CLIENT_PATH, "echo-client", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int log_has(const char *path, const char *what)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

/* Until what occurs n times in path (10 s). */
static void wait_log(const char *path, const char *what, int n)
{
	int i;
	for (i = 0; i < 1000 && log_has(path, what) < n; i++)
		th_sleep_ms(10);
	if (log_has(path, what) < n)
		fail_msg("'%s' not %d times in %s after 10 s", what, n, path);
}

static int any(const struct procctl_scan_entry *e, void *arg)
{
	(void)e;
	(void)arg;
	return 0;
}

/* Until pid has created its region (10 s). */
static void wait_region(pid_t pid)
{
	int i;
	for (i = 0; i < 1000 && procctl_scan_pid(NULL, pid, NULL, any, NULL) < 1; i++)
		th_sleep_ms(10);
	assert_true(procctl_scan_pid(NULL, pid, NULL, any, NULL) >= 1);
}

/* Dispatched only when its fd is readable, as an event loop does, a
 * registry with rescans an hour apart finishes its first scan of a /proc
 * with more processes than one step of it looks at (16) and attaches a
 * client the scan reaches last. Its steps run on its own kicks: before,
 * the dispatch that kicked read the kick back and the scan stopped after
 * its first step until the rescan. */
static void first_scan_by_its_own_kicks(void **state)
{
	struct evlog log;
	procctl_registry_t *r;
	uint64_t end;
	pid_t c;
	int i, wakes = 0;
	(void)state;

	memset(&log, 0, sizeof log);
	for (i = 0; i < 30; i++)
		if (child(fork()) == 0) {
			for (;;)
				pause();
		}
	c = echo_client("/dev/null"); /* the highest pid: the scan's last */
	wait_region(c);
	r = registry(NULL, lockdir, 0, 3600000 * MS, &log);
	end = th_now_ns() + 10000 * MS;
	while (!(procctl_registry_first_scan_done(r) && log.attached) && th_now_ns() < end) {
		struct pollfd p = {procctl_registry_fd(r), POLLIN, 0};
		if (poll(&p, 1, 100) == 1)
			wakes++, assert_int_equal(procctl_registry_dispatch(r), 0);
	}
	if (!procctl_registry_first_scan_done(r))
		fail_msg("the first scan did not end in 10 s (%d dispatches on readiness)", wakes);
	assert_int_equal(log.attached, 1);
	assert_int_equal(log.last_pid, c);
	procctl_registry_close(r, 0);
}

static void discovery(void **state)
{
	struct evlog log;
	struct procctl_registry_stats st, st2;
	struct th_agent bad, sim, sim2;
	procctl_client_t *cs[8];
	procctl_registry_t *r;
	pid_t c1, c2, c3;
	(void)state;

	memset(&log, 0, sizeof log);
	c1 = echo_client("/dev/null");
	c2 = echo_client("/dev/null");
	wait_region(c1);
	wait_region(c2);
	/* An hour between rescans: anything found later came from notify. */
	r = registry(NULL, lockdir, 0, 3600000 * MS, &log);
	pump_until(r, &log.attached, 2);
	assert_int_equal(procctl_registry_first_scan_done(r), 1);
	assert_int_equal(procctl_registry_owner(r, "echo"), 1);
	pump_until(r, &log.ownership, 1);
	pump_for(r, 50);
	/* Its lock came during the first scan: ready after one begun later,
	 * which asking asks for (no scan for a consumer nobody asks about). */
	assert_int_equal(procctl_registry_ready(r, "echo"), 0);
	pump_for(r, 50);
	assert_int_equal(procctl_registry_ready(r, "echo"), 1);
	assert_int_equal(procctl_registry_clients(r, cs, 8), 2);
	assert_non_null(procctl_registry_find(r, c1));

	c3 = echo_client("/dev/null");
	wait_region(c3);
	assert_int_equal(procctl_registry_notify(r, c3), 0);
	pump_until(r, &log.attached, 3);
	assert_int_equal(log.last_pid, c3);

	/* A refused region is counted by reason and never attached. */
	th_procsim_start(&bad);
	th_agent_ok(&bad, "hostile badmagic");
	procctl_registry_notify(r, bad.pid);
	pump_for(r, 100);
	procctl_registry_stats(r, &st);
	assert_int_equal(st.rejects[PROCCTL_REJECT_BAD_MAGIC], 1);
	assert_int_equal(log.attached, 3);

	/* exec: the same pid, a new image: Detached when told (the hello
	 * probe's exec records), else at the next rescan's sweep; an exec
	 * of a process with nothing here costs nothing. */
	th_procsim_start(&sim);
	th_agent_ok(&sim, "init test");
	procctl_registry_notify(r, sim.pid);
	pump_until(r, &log.attached, 4);
	procctl_registry_stats(r, &st);
	assert_int_equal(procctl_registry_exec(r, bad.pid), 0);
	assert_int_equal(procctl_registry_exec(r, 0), -EINVAL);
	pump_for(r, 50);
	procctl_registry_stats(r, &st2);
	assert_int_equal(st2.targeted_scans, st.targeted_scans);
	th_agent_ok(&sim, "exec");
	pump_for(r, 300);
	assert_int_equal(log.detached, 0); /* nothing polls for it */
	assert_int_equal(procctl_registry_exec(r, sim.pid), 0);
	pump_until(r, &log.detached, 1);
	assert_int_equal(log.last_reason, -ESTALE);
	th_procsim_start(&sim2);
	th_agent_ok(&sim2, "init test");
	procctl_registry_notify(r, sim2.pid);
	pump_until(r, &log.attached, 5);
	th_agent_ok(&sim2, "exec");
	assert_int_equal(procctl_registry_rescan(r), 0);
	pump_until(r, &log.detached, 2);
	assert_int_equal(log.last_reason, -ESTALE);

	reap(c1);
	pump_until(r, &log.detached, 3);
	assert_int_equal(log.last_pid, c1);
	assert_int_equal(log.last_reason, -ESRCH);
	procctl_registry_stats(r, &st);
	assert_int_equal(st.clients, 2);
	assert_int_equal(st.owned, 2);
	assert_true(st.scans >= 1);
	procctl_registry_close(r, 0);
	reap(c2);
	reap(c3);
	th_agent_kill(&bad);
	th_agent_kill(&sim);
	th_agent_kill(&sim2);
}

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

/* A forked child holds its parent's region fd: the parent stays attached,
 * the child's inherited region is refused (not its creator) and counted;
 * a child that reinits appears as a region of its own. */
static void forked_clients(void **state)
{
	struct evlog log;
	struct procctl_registry_stats st;
	struct procctl_client_info info;
	struct th_agent sim;
	procctl_registry_t *r;
	procctl_client_t *cs[3];
	pid_t plain, reinit;
	int i, same, other;
	(void)state;

	th_procsim_start(&sim);
	th_agent_ok(&sim, "init test");
	memset(&log, 0, sizeof log);
	r = registry("test", lockdir, 0, 3600000 * MS, &log);
	pump_until(r, &log.attached, 1);
	plain = child((pid_t)atoi(th_agent_ok(&sim, "fork")));
	procctl_registry_notify(r, plain);
	pump_for(r, 100);
	procctl_registry_stats(r, &st);
	assert_int_equal(st.rejects[PROCCTL_REJECT_NOT_CREATOR], 1);
	assert_int_equal(log.attached, 1);
	assert_non_null(procctl_registry_find(r, sim.pid));
	assert_null(procctl_registry_find(r, plain));

	reinit = child((pid_t)atoi(th_agent_ok(&sim, "forkreinit")));
	procctl_registry_notify(r, reinit);
	pump_until(r, &log.attached, 2);
	assert_int_equal(log.last_pid, reinit);
	procctl_registry_stats(r, &st);
	assert_int_equal(st.clients, 2);
	assert_int_equal(st.owned, 2);

	/* A second region of sim shares its pidfd (and mem fd); the child's
	 * region, another process, does not. */
	th_agent_ok(&sim, "init test");
	procctl_registry_notify(r, sim.pid);
	pump_until(r, &log.attached, 3);
	assert_int_equal(procctl_registry_clients(r, cs, 3), 3);
	for (i = 0, same = 0, other = 0; i < 3; i++) {
		procctl_client_info(cs[i], &info);
		if (info.pid == sim.pid)
			same += procctl_client_pidfd(cs[i]) == procctl_client_pidfd(procctl_registry_find(r, sim.pid));
		else
			other += procctl_client_pidfd(cs[i]) != procctl_client_pidfd(procctl_registry_find(r, sim.pid));
	}
	assert_int_equal(same, 2);
	assert_int_equal(other, 1);
	procctl_registry_close(r, 0);
	th_agent_kill(&sim);
}

/* Names are untrusted: a process gets at most max_per_process regions
 * attached; an unsealed region (perhaps a process inside procctl_init) is
 * refused each time it is seen, never remembered. */
static void limits_and_unsealed(void **state)
{
	struct procctl_registry_opts o;
	struct procctl_registry_stats st;
	struct evlog log;
	struct th_agent sim, half;
	procctl_registry_t *r;
	(void)state;

	th_procsim_start(&sim);
	th_agent_ok(&sim, "init test");
	th_agent_ok(&sim, "init test");
	th_agent_ok(&sim, "init test"); /* three regions in one process */
	memset(&log, 0, sizeof log);
	opts(&o, "test", lockdir, 0, 3600000 * MS, &log);
	o.max_per_process = 2;
	r = procctl_registry_new(&o);
	assert_non_null(r);
	pump_until(r, &log.attached, 2);
	pump_for(r, 50);
	procctl_registry_stats(r, &st);
	assert_int_equal(log.attached, 2);
	assert_true(st.rejects[PROCCTL_REJECT_LIMIT] >= 1); /* counted at every scan */
	assert_int_equal(st.rejects[PROCCTL_REJECT_REGION_LIMIT], 0);
	assert_int_equal(st.over_cap, 1); /* the full scan's gauge */

	th_procsim_start(&half);
	th_agent_ok(&half, "hostile unsealed");
	procctl_registry_notify(r, half.pid);
	pump_for(r, 50);
	procctl_registry_notify(r, half.pid);
	pump_for(r, 50);
	procctl_registry_stats(r, &st);
	assert_int_equal(st.rejects[PROCCTL_REJECT_UNSEALED], 2);
	th_agent_kill(&half);

	/* Found between memfd_create and the seals, as inside procctl_init:
	 * attached once sealed, with no second notify. */
	th_procsim_start(&half);
	th_agent_ok(&half, "hostile late");
	procctl_registry_notify(r, half.pid);
	pump_for(r, 50);
	assert_int_equal(log.attached, 2);
	th_agent_ok(&half, "seal");
	pump_until(r, &log.attached, 3);
	assert_int_equal(log.last_pid, half.pid);
	procctl_registry_close(r, 0);
	th_agent_kill(&half);
	th_agent_kill(&sim);
}

/* A process that clamps leases to 200 ms stays live under a registry
 * whose lease is 10 s: heartbeats follow the clamped lease. */
static void heartbeat_follows_clamp(void **state)
{
	struct evlog log;
	struct th_agent sim;
	procctl_registry_t *r;
	int i;
	(void)state;

	th_procsim_start(&sim);
	th_agent_ok(&sim, "init test 200");
	memset(&log, 0, sizeof log);
	r = registry("test", lockdir, 10000 * MS, 0, &log);
	pump_until(r, &log.attached, 1);
	for (i = 0; i < 10; i++) { /* 1 s: five of its leases */
		pump_for(r, 100);
		assert_string_equal(th_agent_ok(&sim, "lease"), "0");
	}
	procctl_registry_close(r, 0);
	th_agent_kill(&sim);
}

/* A lock file deleted under its holder excludes nobody: the holder lets
 * go (OWNERSHIP held 0, regions released) and takes the new file. */
static void lock_file_replaced(void **state)
{
	char path[128];
	struct evlog log;
	struct th_agent sim;
	procctl_registry_t *r;
	(void)state;

	th_procsim_start(&sim);
	th_agent_ok(&sim, "init test");
	memset(&log, 0, sizeof log);
	r = registry("test", lockdir, 10000 * MS, 0, &log);
	pump_until(r, &log.ownership, 1);
	assert_int_equal(log.held, 1);
	snprintf(path, sizeof path, "%s/test.lock", lockdir);
	assert_int_equal(unlink(path), 0);
	pump_until(r, &log.lost, 1);
	pump_until(r, &log.ownership, 3); /* reopened, taken again */
	assert_int_equal(log.held, 1);
	assert_int_equal(procctl_registry_owner(r, "test"), 1);
	procctl_registry_close(r, 0);
	assert_int_equal(log.lost, 2); /* close gives it up */
	assert_int_equal(log.held, 0);
	th_agent_kill(&sim);
}

/* ---- an owner in its own process (ownersim) ---------------------------- */

static pid_t owner(const char *consumer, unsigned lease_ms, const char *mode)
{
	pid_t pid = child(fork());
	if (pid == 0) {
		char lease[16];
		snprintf(lease, sizeof lease, "%u", lease_ms);
		execl(OWNERSIM_PATH, "ownersim", consumer, lockdir, lease, mode, (char *)NULL);
		_exit(127);
	}
	return pid;
}

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
	procctl_registry_stats(b, &st);
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
 * its deadline, and the heartbeats go on (the process's lease stays live
 * over many leases). */
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
	r = registry("test", lockdir, 200 * MS, 0, &log);
	pump_until(r, &log.attached, 1);
	c = procctl_registry_find(r, sim.pid);
	assert_non_null(c);
	if (strncmp(th_agent_cmd(&sim, "stall"), "ok", 2)) {
		procctl_registry_close(r, 0);
		th_agent_kill(&sim);
		TH_SKIP_OR_FAIL("userfaultfd not available");
	}
	procctl_registry_stats(r, &st0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	assert_int_equal(procctl_client_read_state(c, &s, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + 1000000000),
			 -ETIMEDOUT);
	for (i = 0; i < 10; i++) { /* 10 x 100 ms = 5 leases */
		assert_string_equal(th_agent_ok(&sim, "lease"), "0");
		pump_for(r, 100);
	}
	procctl_registry_stats(r, &st1);
	assert_true(st1.heartbeats >= st0.heartbeats + 15);
	procctl_registry_close(r, 0);
	th_agent_kill(&sim);
}

/* The warnings a test sees (procctl_set_log). */
static int unsealed_warnings, wrong_seals_warnings;

static void count_warnings(enum procctl_log_level level, const char *event, const char *fields, void *arg)
{
	(void)arg;
	if (level != PROCCTL_LOG_WARN || strcmp(event, "attach_rejected"))
		return;
	unsealed_warnings += !!strstr(fields, "reason=unsealed");
	wrong_seals_warnings += !!strstr(fields, "reason=wrong_seals");
}

/* A region that never seals: probed for a second as one mid-init (one
 * attach attempt, not fifty), then refused with one warning and skipped
 * by rescans; a notify tries it once more. */
static void unsealed_gives_up(void **state)
{
	struct procctl_registry_stats st;
	struct evlog log;
	struct th_agent half;
	procctl_registry_t *r;
	(void)state;

	procctl_set_log(count_warnings, NULL);
	memset(&log, 0, sizeof log);
	r = registry("test", lockdir, 0, 3600000 * MS, &log); /* rescans only when asked */
	pump_for(r, 50);
	assert_int_equal(procctl_registry_first_scan_done(r), 1);
	th_procsim_start(&half);
	th_agent_ok(&half, "hostile unsealed");
	procctl_registry_notify(r, half.pid);
	pump_for(r, 1500);
	procctl_registry_stats(r, &st);
	assert_int_equal(st.attach_attempts, 1);
	assert_int_equal(unsealed_warnings, 1);
	assert_int_equal(procctl_registry_rescan(r), 0); /* rescans skip it now */
	pump_for(r, 300);
	procctl_registry_stats(r, &st);
	assert_true(st.scans >= 2);
	assert_int_equal(st.attach_attempts, 1);
	assert_int_equal(unsealed_warnings, 1);
	procctl_registry_notify(r, half.pid);
	pump_for(r, 100);
	procctl_registry_stats(r, &st);
	assert_int_equal(st.attach_attempts, 2);
	assert_int_equal(log.attached, 0);
	procctl_registry_close(r, 0);
	th_agent_kill(&half);
	procctl_set_log(NULL, NULL);
}

/* A region found mid-init that then seals wrongly: refused once, for its
 * seals, counted as such, and no longer probed as unsealed. */
static void late_wrong_seals(void **state)
{
	struct procctl_registry_stats st;
	struct evlog log;
	struct th_agent half;
	procctl_registry_t *r;
	(void)state;

	procctl_set_log(count_warnings, NULL);
	unsealed_warnings = wrong_seals_warnings = 0;
	memset(&log, 0, sizeof log);
	r = registry("test", lockdir, 0, 3600000 * MS, &log);
	pump_for(r, 50);
	th_procsim_start(&half);
	th_agent_ok(&half, "hostile late");
	procctl_registry_notify(r, half.pid);
	pump_for(r, 50);
	th_agent_ok(&half, "sealfuture");
	pump_for(r, 1500);
	procctl_registry_stats(r, &st);
	assert_int_equal(st.rejects[PROCCTL_REJECT_WRONG_SEALS], 1);
	assert_int_equal(wrong_seals_warnings, 1);
	assert_int_equal(unsealed_warnings, 0);
	assert_int_equal(st.attach_attempts, 1);
	assert_int_equal(log.attached, 0);
	procctl_registry_close(r, 0);
	th_agent_kill(&half);
	procctl_set_log(NULL, NULL);
}

/* Entries of dir whose names end in suffix. */
static int entries(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = strlen(suffix);
	int count = 0;
	assert_non_null(d);
	while ((de = readdir(d)))
		count += de->d_name[0] != '.' && strlen(de->d_name) >= n && !strcmp(de->d_name + strlen(de->d_name) - n, suffix);
	closedir(d);
	return count;
}

/* Watching every consumer, a consumer's lock lives while it has regions: a
 * made-up name costs a lock file and an fd while its process lives and
 * nothing after; past max_consumers a new name is refused (consumer_limit)
 * until a slot is free. */
static void consumer_locks_come_and_go(void **state)
{
	struct procctl_registry_opts o;
	struct procctl_registry_stats st;
	struct evlog log;
	struct th_agent p[4];
	procctl_registry_t *r;
	int fds, i;
	(void)state;

	memset(&log, 0, sizeof log);
	opts(&o, NULL, lockdir, 0, 3600000 * MS, &log);
	o.max_consumers = 3;
	r = procctl_registry_new(&o);
	assert_non_null(r);
	pump_for(r, 50);
	fds = entries("/proc/self/fd", "");
	for (i = 0; i < 4; i++) {
		th_procsim_start(&p[i]);
		th_agent_ok(&p[i], "init made%d", i);
	}
	for (i = 0; i < 4; i++)
		procctl_registry_notify(r, p[i].pid);
	pump_until(r, &log.attached, 3);
	pump_for(r, 100);
	procctl_registry_stats(r, &st);
	assert_int_equal(log.attached, 3);
	assert_true(st.rejects[PROCCTL_REJECT_CONSUMER_LIMIT] >= 1); /* counted at every scan, as limit is */
	assert_int_equal(entries(lockdir, ".lock"), 3);
	assert_int_equal(procctl_registry_owner(r, "made0"), 1);
	assert_int_equal(procctl_registry_owner(r, "made3"), 0);

	/* made0's process goes: its lock and file with it; made3 fits now. */
	th_agent_kill(&p[0]);
	pump_until(r, &log.detached, 1);
	assert_int_equal(procctl_registry_owner(r, "made0"), 0);
	assert_int_equal(log.lost, 1);
	assert_int_equal(entries(lockdir, ".lock"), 2);
	procctl_registry_notify(r, p[3].pid);
	pump_until(r, &log.attached, 4);
	assert_int_equal(procctl_registry_owner(r, "made3"), 1);

	for (i = 1; i < 4; i++)
		th_agent_kill(&p[i]);
	pump_until(r, &log.detached, 4);
	assert_int_equal(entries(lockdir, ".lock"), 0);
	assert_int_equal(entries("/proc/self/fd", ""), fds);
	procctl_registry_close(r, 0);
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
		cmocka_unit_test_setup_teardown(discovery, setup, teardown),
		cmocka_unit_test_setup_teardown(first_scan_by_its_own_kicks, setup, teardown),
		cmocka_unit_test_setup_teardown(forked_clients, setup, teardown),
		cmocka_unit_test_setup_teardown(limits_and_unsealed, setup, teardown),
		cmocka_unit_test_setup_teardown(unsealed_gives_up, setup, teardown),
		cmocka_unit_test_setup_teardown(late_wrong_seals, setup, teardown),
		cmocka_unit_test_setup_teardown(consumer_locks_come_and_go, setup, teardown),
		cmocka_unit_test_setup_teardown(doorbells, setup, teardown),
		cmocka_unit_test_prestate_setup_teardown(doorbells, setup, teardown, &bell_threads),
		cmocka_unit_test_setup_teardown(doorbells_many, setup, teardown),
		cmocka_unit_test_prestate_setup_teardown(doorbells_many, setup, teardown, &bell_threads),
		cmocka_unit_test_setup_teardown(heartbeat_follows_clamp, setup, teardown),
		cmocka_unit_test_setup_teardown(lock_file_replaced, setup, teardown),
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
