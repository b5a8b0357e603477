/* SPDX-License-Identifier: Apache-2.0 */
/* The registry with real processes: discovery, notify, rejections
 * counted, exit, forks, limits, regions that never seal, consumer locks,
 * heartbeats. Its doorbells are test_registry_bells.c's, two agents and
 * hand-offs test_registry_owner.c's; what they share is regworld.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "regworld.h"

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
	assert_int_equal(log.unsized, 0);
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
	 * which asking asks for (no scan for a consumer nobody asks about),
	 * and a READY event says when (an arbiter waiting needs no poll). */
	assert_int_equal(log.ready, 0);
	assert_int_equal(procctl_registry_ready(r, "echo"), 0);
	pump_until(r, &log.ready, 1);
	assert_int_equal(procctl_registry_ready(r, "echo"), 1);
	pump_for(r, 50);
	assert_int_equal(log.ready, 1); /* once a taking */
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
	procctl_registry_stats(r, &st, sizeof st);
	assert_int_equal(st.rejects[PROCCTL_REJECT_BAD_MAGIC], 1);
	assert_int_equal(log.attached, 3);

	/* exec: the same pid, a new image: Detached when told (the hello
	 * probe's exec records), else at the next rescan's sweep; an exec
	 * of a process with nothing here costs nothing. */
	th_procsim_start(&sim);
	th_agent_ok(&sim, "init test");
	procctl_registry_notify(r, sim.pid);
	pump_until(r, &log.attached, 4);
	procctl_registry_stats(r, &st, sizeof st);
	assert_int_equal(procctl_registry_exec(r, bad.pid), 0);
	assert_int_equal(procctl_registry_exec(r, 0), -EINVAL);
	pump_for(r, 50);
	procctl_registry_stats(r, &st2, sizeof st2);
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
	procctl_registry_stats(r, &st, sizeof st);
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

/* A process with three regions shares one pidfd among them: when it
 * exits, all three go at once (not at the next rescan, an hour here). */
static void siblings_exit(void **state)
{
	struct evlog log;
	struct th_agent a;
	procctl_registry_t *r;
	(void)state;

	memset(&log, 0, sizeof log);
	r = registry("test", lockdir, 0, 3600000 * MS, &log);
	th_procsim_start(&a);
	th_agent_ok(&a, "init test");
	th_agent_ok(&a, "init test");
	th_agent_ok(&a, "init test");
	procctl_registry_notify(r, a.pid);
	pump_until(r, &log.attached, 3);
	th_agent_kill(&a);
	pump_until(r, &log.detached, 3);
	assert_int_equal(log.last_reason, -ESRCH);

	procctl_registry_close(r, 0);
}

/* A start storm's notifies: each process is told twice (its fork's
 * recheck, then its hello), a thousand processes at once. A pid told
 * again while it waits is scanned once, and 2,001 distinct pids fit the
 * queue: no full scan of /proc, and nothing lost. Before, the queue kept
 * 1,024 with repeats, and the rest asked for a full scan that waited ten
 * of the last one's durations (the storm's 0.4 s outliers). */
static void notify_burst(void **state)
{
	struct procctl_registry_stats st0, st;
	struct evlog log;
	procctl_registry_t *r;
	pid_t c;
	int i;
	(void)state;

	memset(&log, 0, sizeof log);
	r = registry(NULL, lockdir, 0, 3600000 * MS, &log);
	pump_for(r, 100);
	procctl_registry_stats(r, &st0, sizeof st0);
	c = echo_client("/dev/null");
	wait_region(c);
	for (i = 0; i < 3000; i++)
		assert_int_equal(procctl_registry_notify(r, c), 0);
	for (i = 0; i < 2000; i++) /* above any pid_max in use here: no such processes */
		assert_int_equal(procctl_registry_notify(r, (pid_t)(4194304 + 1 + i)), 0);
	pump_until(r, &log.attached, 1);
	pump_for(r, 200);
	procctl_registry_stats(r, &st, sizeof st);
	assert_int_equal(log.last_pid, c);
	assert_int_equal(st.targeted_scans - st0.targeted_scans, 2001); /* c once, the 2,000 */
	assert_int_equal(st.scans, st0.scans);
	procctl_registry_close(r, 0);
	reap(c);
}

/* A process holding a copy of pid's fd that it fetched, as an agent that
 * keeps the fds it fetches would. */
static pid_t fd_keeper(pid_t pid, int fd)
{
	int ready[2];
	char c;
	pid_t k;
	assert_int_equal(pipe(ready), 0);
	k = fork();
	if (k == 0) {
		int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (pfd < 0 || syscall(SYS_pidfd_getfd, pfd, fd, 0) < 0 || write(ready[1], "k", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	child(k);
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return k;
}

/* A forked child holds its parent's region fd, and so does an agent that
 * keeps the fds it fetched: the parent stays attached, and the others'
 * links to its region are skipped by identity, unfetched and not refused
 * (SPEC.md 2.4), however often they are scanned; a child that reinits
 * appears as a region of its own. */
static void forked_clients(void **state)
{
	struct evlog log;
	struct procctl_registry_stats st0, st;
	struct procctl_client_info info;
	struct th_agent sim;
	procctl_registry_t *r;
	procctl_client_t *cs[3];
	pid_t plain, keeper, reinit;
	int i, same, other, fd;
	(void)state;

	th_procsim_start(&sim);
	fd = atoi(th_agent_ok(&sim, "init test"));
	memset(&log, 0, sizeof log);
	r = registry("test", lockdir, 0, 3600000 * MS, &log);
	pump_until(r, &log.attached, 1);
	procctl_registry_stats(r, &st0, sizeof st0);
	plain = child((pid_t)atoi(th_agent_ok(&sim, "fork")));
	keeper = fd_keeper(sim.pid, fd);
	for (i = 0; i < 3; i++) {
		procctl_registry_notify(r, plain);
		procctl_registry_notify(r, keeper);
		pump_for(r, 50);
	}
	procctl_registry_stats(r, &st, sizeof st);
	assert_int_equal(st.rejects[PROCCTL_REJECT_NOT_CREATOR], 0);
	assert_int_equal(st.attach_attempts, st0.attach_attempts);
	assert_int_equal(st.held_elsewhere - st0.held_elsewhere, 6);
	assert_int_equal(log.attached, 1);
	assert_non_null(procctl_registry_find(r, sim.pid));
	assert_null(procctl_registry_find(r, plain));
	assert_null(procctl_registry_find(r, keeper));

	reinit = child((pid_t)atoi(th_agent_ok(&sim, "forkreinit")));
	procctl_registry_notify(r, reinit);
	pump_until(r, &log.attached, 2);
	assert_int_equal(log.last_pid, reinit);
	procctl_registry_stats(r, &st, sizeof st);
	assert_int_equal(st.clients, 2);
	assert_int_equal(st.owned, 2);

	/* A second region of sim shares its pidfd (and mem fd); the child's
	 * region, another process, does not. */
	th_agent_ok(&sim, "init test");
	procctl_registry_notify(r, sim.pid);
	pump_until(r, &log.attached, 3);
	assert_int_equal(procctl_registry_clients(r, cs, 3), 3);
	for (i = 0, same = 0, other = 0; i < 3; i++) {
		procctl_client_info(cs[i], &info, sizeof info);
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
	procctl_registry_stats(r, &st, sizeof st);
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
	procctl_registry_stats(r, &st, sizeof st);
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
	procctl_registry_stats(r, &st, sizeof st);
	assert_int_equal(st.attach_attempts, 1);
	assert_int_equal(unsealed_warnings, 1);
	assert_int_equal(procctl_registry_rescan(r), 0); /* rescans skip it now */
	pump_for(r, 300);
	procctl_registry_stats(r, &st, sizeof st);
	assert_true(st.scans >= 2);
	assert_int_equal(st.attach_attempts, 1);
	assert_int_equal(unsealed_warnings, 1);
	procctl_registry_notify(r, half.pid);
	pump_for(r, 100);
	procctl_registry_stats(r, &st, sizeof st);
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
	procctl_registry_stats(r, &st, sizeof st);
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
	procctl_registry_stats(r, &st, sizeof st);
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

/* A process may open a million fds: its targeted scan reads 256 fd links
 * a dispatch (NOTIFY_LINKS) and takes the rest up at the next, so no
 * dispatch holds the loop for its whole table. Its region, after 4,096
 * other fds, is attached at the 16th dispatch after its notify or later
 * (before: at the first). */
static void large_fd_table_in_steps(void **state)
{
	struct evlog log;
	procctl_registry_t *r;
	pid_t c;
	int n = 0;
	(void)state;

	memset(&log, 0, sizeof log);
	r = registry(NULL, lockdir, 0, 3600000 * MS, &log);
	while (!procctl_registry_first_scan_done(r))
		pump_for(r, 10);
	c = child(fork());
	if (c == 0) {
		struct rlimit rl = {8192, 8192};
		int fd, k;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || (fd = fcntl(open("/dev/null", O_WRONLY), F_DUPFD_CLOEXEC, 5000)) < 0)
			_exit(126);
		for (k = 1; k < 4099; k++) /* kept by exec: dup2 clears FD_CLOEXEC */
			if (dup2(fd, k) < 0)
				_exit(126);
		execl(ECHO_CLIENT_PATH, "echo-client", (char *)NULL); /* its memfd: the lowest fd free, 4099 */
		_exit(127);
	}
	wait_region(c);
	assert_int_equal(procctl_registry_notify(r, c), 0);
	for (; n < 1000 && !log.attached; n++) {
		struct pollfd p = {procctl_registry_fd(r), POLLIN, 0};
		poll(&p, 1, 100);
		assert_int_equal(procctl_registry_dispatch(r), 0);
	}
	assert_int_equal(log.attached, 1);
	assert_int_equal(log.last_pid, c);
	if (n < 4096 / 256)
		fail_msg("attached at dispatch %d: its 4,099 fds read in fewer than 16", n);
	procctl_registry_close(r, 0);
}

/* A dispatch that begins a full scan (a rescan asked for) leaves the
 * pids on the notify queue to the next dispatch, and wakes it: with a
 * /proc its scan reads in one step (three processes here), nothing else
 * would wake the loop for them. */
static char proc_root[64]; /* queue_woken_after_full_scan's, removed even when it fails */

static int proc_teardown(void **state)
{
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf %s", proc_root);
	if (proc_root[0] && system(cmd) != 0)
		return -1;
	return teardown(state);
}

static void queue_woken_after_full_scan(void **state)
{
	struct procctl_registry_opts o;
	struct procctl_registry_stats before, after;
	struct pollfd p;
	struct evlog log;
	procctl_registry_t *r;
	char *root = proc_root, path[128];
	int i;
	(void)state;

	snprintf(proc_root, sizeof proc_root, "/tmp/procctl-proc.XXXXXX");
	assert_non_null(mkdtemp(proc_root));
	for (i = 1; i <= 3; i++) {
		snprintf(path, sizeof path, "%s/%d", root, 100 * i);
		assert_int_equal(mkdir(path, 0755), 0);
		strcat(path, "/fd");
		assert_int_equal(mkdir(path, 0755), 0);
	}
	memset(&log, 0, sizeof log);
	opts(&o, NULL, lockdir, 0, 3600000 * MS, &log);
	o.proc_root = root;
	assert_non_null(r = procctl_registry_new(&o));
	while (!procctl_registry_first_scan_done(r))
		pump_for(r, 10);
	procctl_registry_stats(r, &before, sizeof before);
	assert_int_equal(procctl_registry_notify(r, 100), 0);
	assert_int_equal(procctl_registry_notify(r, 200), 0);
	assert_int_equal(procctl_registry_rescan(r), 0);
	assert_int_equal(procctl_registry_dispatch(r), 0); /* the full scan, whole */
	procctl_registry_stats(r, &after, sizeof after);
	assert_int_equal(after.scans, before.scans + 1);
	p = (struct pollfd){procctl_registry_fd(r), POLLIN, 0};
	if (poll(&p, 1, 2000) != 1)
		fail_msg("the queue's two pids left, and no wake for them in 2 s");
	assert_int_equal(procctl_registry_dispatch(r), 0);
	procctl_registry_stats(r, &after, sizeof after);
	assert_int_equal(after.targeted_scans, before.targeted_scans + 2);
	procctl_registry_close(r, 0);
}

/* The library's threads block every signal: a program that blocks
 * SIGUSR1 after making its registry and takes it with sigtimedwait gets
 * it there, where before the heartbeat thread, made with SIGUSR1 let
 * through, took it and its default action ended the process. Judged on
 * the threads that live as long as the registry (the heartbeat, the
 * doorbell watchers): /proc shows a thread on its way out with a mask of
 * 0 (seen in a third of the looks at a detached thread that returns at
 * once, whatever mask it was made with). */
/* The library's long-lived threads found in /proc (named: named once
 * they run), each checked to block SIGTERM and SIGUSR1: their number. */
static int own_threads_checked(void)
{
	char path[300], line[256];
	struct dirent *de;
	DIR *d;
	int n = 0;
	assert_non_null(d = opendir("/proc/self/task"));
	while ((de = readdir(d))) {
		unsigned long long blocked = 0;
		int found = 0, ours = 0;
		FILE *f;
		snprintf(path, sizeof path, "/proc/self/task/%s/status", de->d_name);
		if (de->d_name[0] == '.' || !(f = fopen(path, "r")))
			continue;
		while (!found && fgets(line, sizeof line, f)) {
			ours |= !strcmp(line, "Name:\tprocctl-beat\n") || !strcmp(line, "Name:\tprocctl-bells\n");
			found = sscanf(line, "SigBlk: %llx", &blocked) == 1;
		}
		fclose(f);
		if (ours && found && (!(blocked & (1ull << (SIGTERM - 1))) || !(blocked & (1ull << (SIGUSR1 - 1)))))
			fail_msg("thread %s blocks only %llx", de->d_name, blocked);
		n += ours && found;
	}
	closedir(d);
	return n;
}

static void own_threads_block_signals(void **state)
{
	struct procctl_registry_opts o;
	struct evlog log;
	procctl_registry_t *r;
	sigset_t usr1, old;
	struct timespec ts = {5, 0};
	int i;
	(void)state;

	memset(&log, 0, sizeof log);
	opts(&o, NULL, lockdir, 0, 3600000 * MS, &log);
	o.flags |= PROCCTL_REGISTRY_DOORBELLS;
	assert_non_null(r = procctl_registry_new(&o));
	for (i = 0; own_threads_checked() == 0; i++) { /* the heartbeat names itself as it starts */
		if (i == 500)
			fail_msg("no procctl-beat thread in 5 s");
		usleep(10000);
	}
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, &old);
	assert_int_equal(kill(getpid(), SIGUSR1), 0);
	assert_int_equal(sigtimedwait(&usr1, NULL, &ts), SIGUSR1);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	procctl_registry_close(r, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(discovery, setup, teardown),
		cmocka_unit_test_setup_teardown(first_scan_by_its_own_kicks, setup, teardown),
		cmocka_unit_test_setup_teardown(notify_burst, setup, teardown),
		cmocka_unit_test_setup_teardown(large_fd_table_in_steps, setup, teardown),
		cmocka_unit_test_setup_teardown(queue_woken_after_full_scan, setup, proc_teardown),
		cmocka_unit_test_setup_teardown(siblings_exit, setup, teardown),
		cmocka_unit_test_setup_teardown(forked_clients, setup, teardown),
		cmocka_unit_test_setup_teardown(limits_and_unsealed, setup, teardown),
		cmocka_unit_test_setup_teardown(unsealed_gives_up, setup, teardown),
		cmocka_unit_test_setup_teardown(late_wrong_seals, setup, teardown),
		cmocka_unit_test_setup_teardown(consumer_locks_come_and_go, setup, teardown),
		cmocka_unit_test_setup_teardown(heartbeat_follows_clamp, setup, teardown),
		cmocka_unit_test_setup_teardown(lock_file_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(own_threads_block_signals, setup, teardown),
	};
	signal(SIGPIPE, SIG_IGN);
	srand(42);
	return TH_RUN(tests);
}
