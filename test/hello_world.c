/* SPDX-License-Identifier: Apache-2.0 */
/* hello_world.c - the world of the hello probe's tests (hello_world.h). */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdclose.h"
#include "hello_world.h"
#include "th.h"

#if !defined(ECHO_CLIENT_PATH) || !defined(HELLOLIB_PATH)
#error "ECHO_CLIENT_PATH and HELLOLIB_PATH must name the helpers"
#endif

char lockdir[64], consumer[32];
pid_t children[16];
int nchildren;

static void on_event(const struct procctl_event *ev, void *arg)
{
	struct world *w = arg;
	if (ev->type == PROCCTL_EV_ATTACHED && w->nattached < 16)
		w->attached[w->nattached++] = ev->pid;
}

void on_pid(pid_t pid, void *arg)
{
	struct world *w = arg;
	if (pid)
		procctl_registry_notify(w->r, pid);
	else
		w->rescans++, procctl_registry_rescan(w->r);
}

static void on_exec(pid_t pid, void *arg)
{
	struct world *w = arg;
	w->execd[w->nexecd++ % 4096] = pid;
}

int setup(void **state)
{
	(void)state;
	snprintf(lockdir, sizeof lockdir, "/tmp/procctl-hello.XXXXXX");
	assert_non_null(mkdtemp(lockdir));
	snprintf(consumer, sizeof consumer, "hello%d", (int)getpid());
	nchildren = 0;
	return 0;
}

int teardown(void **state)
{
	char cmd[128];
	(void)state;
	while (nchildren) {
		pid_t p = children[--nchildren];
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", lockdir);
	return system(cmd) == 0 ? 0 : -1;
}

pid_t spawn(char *const argv[])
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	children[nchildren++] = pid;
	return pid;
}

pid_t echo_client(void)
{
	char *argv[] = {ECHO_CLIENT_PATH, "--consumer", consumer, NULL};
	return spawn(argv);
}

/* A copy of echo-client in lockdir: a file (inode) no other process maps. */
pid_t echo_client_copy(void)
{
	char path[128], cmd[320];
	char *argv[] = {path, "--consumer", consumer, NULL};
	snprintf(path, sizeof path, "%s/echo-client", lockdir);
	snprintf(cmd, sizeof cmd, "cp %s %s", ECHO_CLIENT_PATH, path);
	assert_int_equal(system(cmd), 0);
	return spawn(argv);
}

void world_open(struct world *w, uint64_t rescan_ns, const char *sysfs_root, uint64_t idle_ns, uint64_t batch_ns)
{
	struct procctl_registry_opts o;
	struct procctl_hello_opts ho;
	int i;
	memset(w, 0, sizeof *w);
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.consumer = consumer;
	o.lock_dir = lockdir;
	o.rescan_ns = rescan_ns;
	o.on_event = on_event;
	o.arg = w;
	assert_non_null(w->r = procctl_registry_new(&o));
	memset(&ho, 0, sizeof ho);
	ho.sz = sizeof ho;
	ho.on_pid = on_pid;
	ho.arg = w;
	ho.sysfs_root = sysfs_root;
	ho.idle_ns = idle_ns;
	ho.batch_ns = batch_ns;
	/* Muted for long, the rings hold the host's records until read: 4 MiB
	 * a CPU keeps seconds of a busy host's (a full one loses records). */
	ho.ring_pages = batch_ns > 1000 * MS ? 1024 : 0;
	ho.on_exec = on_exec;
	w->h = procctl_hello_new(&ho);
	for (i = 0; i < 6000 && procctl_close_pending(); i++)
		th_sleep_ms(10); /* an earlier test's probes closing: each test starts with none (slow on a busy host) */
	if (procctl_close_pending())
		fail_msg("%ld probes of an earlier test still closing after 60 s", procctl_close_pending());
	if (!w->h && !sysfs_root && (errno == EACCES || errno == EPERM || errno == ENOENT))
		TH_SKIP_OR_FAIL(procctl_hello_error(-errno));
}

/* Probes of unmapped files go soon. */
void world_start(struct world *w, uint64_t rescan_ns, const char *sysfs_root)
{
	world_open(w, rescan_ns, sysfs_root, 50 * MS, 0);
}

void world_stop(struct world *w)
{
	procctl_hello_free(w->h);
	procctl_registry_close(w->r, 0);
}

int was_attached(const struct world *w, pid_t pid)
{
	int i;
	for (i = 0; i < w->nattached; i++)
		if (w->attached[i] == pid)
			return 1;
	return 0;
}

/* Dispatch both until cond(w, arg) or 30 s (a bound for a host loaded
 * with sanitizers and tests side by side: each wait ends at its event);
 * its last value. */
int pump(struct world *w, int (*cond)(struct world *, long), long arg)
{
	uint64_t end = th_now_ns() + 30000 * MS;
	while (!cond(w, arg) && th_now_ns() < end) {
		struct pollfd p[2] = {{procctl_registry_fd(w->r), POLLIN, 0}, {w->h ? procctl_hello_fd(w->h) : -1, POLLIN, 0}};
		poll(p, 2, 10);
		assert_int_equal(procctl_registry_dispatch(w->r), 0);
		if (w->h)
			assert_int_equal(procctl_hello_dispatch(w->h), 0);
	}
	return cond(w, arg);
}

int attached_cond(struct world *w, long pid)
{
	return was_attached(w, (pid_t)pid);
}

int ready_cond(struct world *w, long unused)
{
	(void)unused;
	return procctl_registry_first_scan_done(w->r);
}

int files_cond(struct world *w, long want)
{
	struct procctl_hello_stats st;
	procctl_hello_stats(w->h, &st, sizeof st);
	return st.files == (uint64_t)want;
}

int rewritten_cond(struct world *w, long before)
{
	struct procctl_hello_stats st;
	procctl_hello_stats(w->h, &st, sizeof st);
	return st.files_rewritten > (uint64_t)before;
}

/* Copies [from, from + n) of libhellolib.so in lockdir (files of their
 * own), owned by uid. */
void lib_copies(int from, int n, uid_t uid)
{
	char path[128], cmd[320];
	int i;
	for (i = from; i < from + n; i++) {
		snprintf(path, sizeof path, "%s/lib%d.so", lockdir, i);
		snprintf(cmd, sizeof cmd, "cp %s %s", HELLOLIB_PATH, path);
		assert_int_equal(system(cmd), 0);
		assert_int_equal(chown(path, uid, uid), 0);
	}
}

/* A child that maps copies [from, from + n) (dlopen) and waits. */
pid_t lib_mapper(int from, int n)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char path[128];
		int i;
		for (i = from; i < from + n; i++) {
			snprintf(path, sizeof path, "%s/lib%d.so", lockdir, i);
			if (!dlopen(path, RTLD_NOW | RTLD_LOCAL))
				_exit(1);
		}
		pause();
		_exit(0);
	}
	children[nchildren++] = pid;
	return pid;
}

/* argv[0] started once *go is written to: forked now, before the caller
 * has probes to close (a child forked later holds their fds, and the
 * last close, in its exec, waits for the closes before it). */
pid_t spawn_later(char *const argv[], int *go)
{
	int p[2];
	pid_t pid;
	char c;
	assert_int_equal(pipe(p), 0);
	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		close(p[1]);
		dup2(null, 1);
		if (read(p[0], &c, 1) == 1)
			execv(argv[0], argv);
		_exit(127);
	}
	close(p[0]);
	*go = p[1];
	children[nchildren++] = pid;
	return pid;
}

void end_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	nchildren--;
}

int probed_cond(struct world *w, long want)
{
	struct procctl_hello_stats st;
	procctl_hello_stats(w->h, &st, sizeof st);
	return st.files_probed >= (uint64_t)want;
}

int time_cond(struct world *w, long until_ns)
{
	(void)w;
	return th_now_ns() >= (uint64_t)until_ns;
}

int closed_cond(struct world *w, long unused)
{
	(void)w, (void)unused;
	return procctl_close_pending() == 0;
}

/* Dispatch until every probe this process closed is closed: 60 s at most
 * (each close waits for grace periods, longer on a busy host). */
int closes_done(struct world *w)
{
	int i;
	for (i = 0; i < 2 && !pump(w, closed_cond, 0); i++)
		;
	return closed_cond(w, 0);
}

/* A world (once earlier probes are closed; *st0 its stats then), and a
 * child that maps n copies of libhellolib.so owned by uid: it, once want
 * of them are probed. */
pid_t libs_mapped(struct world *w, struct procctl_hello_stats *st0, int n, uid_t uid, int want)
{
	pid_t mapper;
	lib_copies(0, n, uid); /* before the probe: n cps' execs could fill its rings, and lose the mapper's */
	world_start(w, HOUR, NULL);
	assert_true(pump(w, ready_cond, 0));
	procctl_hello_stats(w->h, st0, sizeof *st0);
	mapper = lib_mapper(0, n);
	if (!pump(w, probed_cond, (long)st0->files_probed + want))
		fail_msg("%d of %d libraries with the probe were not probed", want, n);
	return mapper;
}
