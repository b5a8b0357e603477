/* SPDX-License-Identifier: Apache-2.0 */
/* regworld.c - what the registry tests share (regworld.h): registries
 * whose events are counted, pumps, the children a test forks (killed by
 * teardown even when it fails), echo clients and ownersim owners. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "regworld.h"

#if !defined(ECHO_CLIENT_PATH) || !defined(OWNERSIM_PATH)
#error "ECHO_CLIENT_PATH and OWNERSIM_PATH must name the helpers"
#endif


static void on_event(const struct procctl_event *ev, void *arg)
{
	struct evlog *l = arg;
	l->unsized += ev->sz != sizeof *ev;
	l->last_pid = ev->pid;
	if (ev->type == PROCCTL_EV_ATTACHED)
		l->attached++;
	else if (ev->type == PROCCTL_EV_DETACHED)
		l->detached++, l->last_reason = ev->reason;
	else if (ev->type == PROCCTL_EV_DOORBELL)
		l->rang[l->doorbells++ & 7] = ev->pid;
	else if (ev->type == PROCCTL_EV_READY)
		l->ready++;
	else
		l->ownership++, l->held = ev->held, l->lost += !ev->held;
}

void opts(struct procctl_registry_opts *o, const char *consumer, const char *lockdir, uint64_t lease_ns,
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

procctl_registry_t *registry(const char *consumer, const char *lockdir, uint64_t lease_ns,
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
void pump_until(procctl_registry_t *r, const int *counter, int want)
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
int wakeups_in(procctl_registry_t *r, unsigned ms)
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

void pump_for(procctl_registry_t *r, unsigned ms)
{
	uint64_t end = th_now_ns() + ms * MS;
	while (th_now_ns() < end) {
		struct pollfd p = {procctl_registry_fd(r), POLLIN, 0};
		poll(&p, 1, 10);
		assert_int_equal(procctl_registry_dispatch(r), 0);
	}
}

char lockdir[64];

/* Every child a test forks, killed by teardown even when the test fails. */
static pid_t children[32];
static int nchildren;

pid_t child(pid_t pid)
{
	assert_true(pid >= 0);
	if (pid > 0 && nchildren < 32)
		children[nchildren++] = pid;
	return pid;
}

void reap(pid_t pid)
{
	int st;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

int setup(void **state)
{
	(void)state;
	snprintf(lockdir, sizeof lockdir, "/tmp/procctl-locks.XXXXXX");
	assert_non_null(mkdtemp(lockdir));
	nchildren = 0;
	return 0;
}

int teardown(void **state)
{
	char cmd[128];
	(void)state;
	while (nchildren)
		reap(children[--nchildren]);
	snprintf(cmd, sizeof cmd, "rm -rf %s", lockdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* An echo client writing its log to path; its pid. */
pid_t echo_client(const char *path)
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

int log_has(const char *path, const char *what)
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
void wait_log(const char *path, const char *what, int n)
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
void wait_region(pid_t pid)
{
	int i;
	for (i = 0; i < 1000 && procctl_scan_pid(NULL, pid, NULL, any, NULL) < 1; i++)
		th_sleep_ms(10);
	assert_true(procctl_scan_pid(NULL, pid, NULL, any, NULL) >= 1);
}

/* An owner in its own process (ownersim): consumer, its lease, its mode. */
pid_t owner(const char *consumer, unsigned lease_ms, const char *mode)
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
