/* SPDX-License-Identifier: Apache-2.0 */
/* Fast discovery: the procctl:hello probe with real processes started after the agent (a
 * program with procctl.h in it, and one that dlopens it in a shared
 * library), with rescans an hour apart: they are attached only if the
 * probe worked. Also: a process from before the agent is found by the
 * first scan; probes of files nobody maps any more are dropped; without
 * the uprobe PMU hello says so and the registry still finds processes at
 * its rescans. A client whose program is in another mount namespace is
 * found through its mapping. */
#define _GNU_SOURCE 1 /* unshare */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "th.h"
#include "fdclose.h"
#include "procctl_agent.h"

#if !defined(ECHO_CLIENT_PATH) || !defined(HELLOLIB_CLIENT_PATH) || !defined(HELLOLIB_PATH)
#error "ECHO_CLIENT_PATH, HELLOLIB_CLIENT_PATH and HELLOLIB_PATH must name the helpers"
#endif

#define MS 1000000ull
#define HOUR (3600ull * 1000 * MS)

/* ---- the probe ------------------------------------------------------------ */

static char lockdir[64], consumer[32];
static pid_t children[16];
static int nchildren;

struct world {
	procctl_registry_t *r;
	procctl_hello_t *h;
	pid_t attached[16];
	pid_t execd[4096]; /* the last execs on the host (on_exec hears them all): a ring */
	int nattached, nexecd, rescans;
};

static void on_event(const struct procctl_event *ev, void *arg)
{
	struct world *w = arg;
	if (ev->type == PROCCTL_EV_ATTACHED && w->nattached < 16)
		w->attached[w->nattached++] = ev->pid;
}

static void on_pid(pid_t pid, void *arg)
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

static int setup(void **state)
{
	(void)state;
	snprintf(lockdir, sizeof lockdir, "/tmp/procctl-hello.XXXXXX");
	assert_non_null(mkdtemp(lockdir));
	snprintf(consumer, sizeof consumer, "hello%d", (int)getpid());
	nchildren = 0;
	return 0;
}

static int teardown(void **state)
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

static pid_t spawn(char *const argv[])
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

static pid_t echo_client(void)
{
	char *argv[] = {ECHO_CLIENT_PATH, "--consumer", consumer, NULL};
	return spawn(argv);
}

/* A copy of echo-client in lockdir: a file (inode) no other process maps. */
static pid_t echo_client_copy(void)
{
	char path[128], cmd[320];
	char *argv[] = {path, "--consumer", consumer, NULL};
	snprintf(path, sizeof path, "%s/echo-client", lockdir);
	snprintf(cmd, sizeof cmd, "cp %s %s", ECHO_CLIENT_PATH, path);
	assert_int_equal(system(cmd), 0);
	return spawn(argv);
}

static void world_open(struct world *w, uint64_t rescan_ns, const char *sysfs_root, uint64_t idle_ns, uint64_t batch_ns)
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
static void world_start(struct world *w, uint64_t rescan_ns, const char *sysfs_root)
{
	world_open(w, rescan_ns, sysfs_root, 50 * MS, 0);
}

static void world_stop(struct world *w)
{
	procctl_hello_free(w->h);
	procctl_registry_close(w->r, 0);
}

static int was_attached(const struct world *w, pid_t pid)
{
	int i;
	for (i = 0; i < w->nattached; i++)
		if (w->attached[i] == pid)
			return 1;
	return 0;
}

/* Dispatch both until cond(w, arg) or 10 s; its last value. */
static int pump(struct world *w, int (*cond)(struct world *, long), long arg)
{
	uint64_t end = th_now_ns() + 10000 * MS;
	while (!cond(w, arg) && th_now_ns() < end) {
		struct pollfd p[2] = {{procctl_registry_fd(w->r), POLLIN, 0}, {w->h ? procctl_hello_fd(w->h) : -1, POLLIN, 0}};
		poll(p, 2, 10);
		assert_int_equal(procctl_registry_dispatch(w->r), 0);
		if (w->h)
			assert_int_equal(procctl_hello_dispatch(w->h), 0);
	}
	return cond(w, arg);
}

static int attached_cond(struct world *w, long pid)
{
	return was_attached(w, (pid_t)pid);
}

static int ready_cond(struct world *w, long unused)
{
	(void)unused;
	return procctl_registry_first_scan_done(w->r);
}

static int files_cond(struct world *w, long want)
{
	struct procctl_hello_stats st;
	procctl_hello_stats(w->h, &st, sizeof st);
	return st.files == (uint64_t)want;
}

static void found_without_rescan(void **state)
{
	struct procctl_hello_stats st0, st;
	struct world w;
	char path[128];
	char *argv_copy[] = {path, "--consumer", consumer, NULL};
	pid_t pid, pid2;
	(void)state;
	snprintf(path, sizeof path, "%s/echo-client", lockdir);

	world_start(&w, HOUR, NULL);
	assert_true(pump(&w, ready_cond, 0));
	procctl_hello_stats(w.h, &st0, sizeof st0);
	/* The first process of a new file may say hello before its uprobe is
	 * in (the probe goes in when the agent reads the exec's mapping): the
	 * recheck after the mapping finds it then. */
	pid = echo_client_copy();
	if (!pump(&w, attached_cond, pid))
		fail_msg("a client started after the agent was not attached (rescans are an hour apart)");
	procctl_hello_stats(w.h, &st, sizeof st);
	assert_true(st.files_probed > st0.files_probed); /* echo-client's file got a probe */
	/* A second process of that file maps it with the uprobe in: its hello
	 * is heard. */
	pid2 = spawn(argv_copy);
	if (!pump(&w, attached_cond, pid2))
		fail_msg("a second client of a probed file was not attached (rescans are an hour apart)");
	procctl_hello_stats(w.h, &st, sizeof st);
	print_message("hits %llu, files read %llu, probed %llu, notifies %llu\n",
		      (unsigned long long)(st.hits - st0.hits), (unsigned long long)(st.files_read - st0.files_read),
		      (unsigned long long)(st.files_probed - st0.files_probed),
		      (unsigned long long)(st.notifies - st0.notifies));
	assert_true(st.hits > st0.hits); /* its hello was heard */
	/* They exit: nobody maps echo-client any more, its probe goes (idle_ns). */
	kill(pid, SIGKILL);
	kill(pid2, SIGKILL);
	waitpid(pid, NULL, 0);
	waitpid(pid2, NULL, 0);
	nchildren -= 2;
	if (!pump(&w, files_cond, (long)st0.files))
		fail_msg("the probe of a file no process maps stayed");
	procctl_hello_stats(w.h, &st, sizeof st);
	assert_true(st.files_dropped > st0.files_dropped);
	world_stop(&w);
}

static int rewritten_cond(struct world *w, long before)
{
	struct procctl_hello_stats st;
	procctl_hello_stats(w->h, &st, sizeof st);
	return st.files_rewritten > (uint64_t)before;
}

/* A probe keeps a copy of the instruction it replaced: a program written
 * in place (same inode) loses its probe at once, not after idle_ns. */
static void rewritten_file_loses_its_probe(void **state)
{
	struct procctl_hello_stats st0, st;
	struct world w;
	char path[128];
	pid_t pid;
	int fd;
	(void)state;

	world_open(&w, HOUR, NULL, HOUR, 0);
	assert_true(pump(&w, ready_cond, 0));
	procctl_hello_stats(w.h, &st0, sizeof st0);
	pid = echo_client_copy();
	assert_true(pump(&w, attached_cond, pid));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	nchildren--;
	procctl_hello_stats(w.h, &st, sizeof st);
	assert_int_equal(st.files, st0.files + 1); /* unmapped, but kept for idle_ns */
	snprintf(path, sizeof path, "%s/echo-client", lockdir);
	assert_true((fd = open(path, O_WRONLY)) >= 0);
	assert_int_equal(pwrite(fd, "\x7f", 1, 0), 1); /* the same byte, written in place */
	close(fd);
	if (!pump(&w, rewritten_cond, (long)st0.files_rewritten))
		fail_msg("a probed file written in place kept its probe");
	procctl_hello_stats(w.h, &st, sizeof st);
	assert_int_equal(st.files, st0.files);
	world_stop(&w);
}

static void found_through_a_shared_library(void **state)
{
	char *argv[] = {HELLOLIB_CLIENT_PATH, HELLOLIB_PATH, consumer, NULL};
	struct procctl_hello_stats st0, st;
	struct world w;
	pid_t pid;
	uint64_t off[4];
	int fd;
	(void)state;

	/* The program has no probe of its own: only the library does. */
	assert_true((fd = open(HELLOLIB_CLIENT_PATH, O_RDONLY)) >= 0);
	assert_int_equal(procctl_elf_hello_sites(fd, off, 4), 0);
	close(fd);
	assert_true((fd = open(HELLOLIB_PATH, O_RDONLY)) >= 0);
	assert_true(procctl_elf_hello_sites(fd, off, 4) >= 1);
	close(fd);

	world_start(&w, HOUR, NULL);
	assert_true(pump(&w, ready_cond, 0));
	procctl_hello_stats(w.h, &st0, sizeof st0);
	pid = spawn(argv);
	if (!pump(&w, attached_cond, pid))
		fail_msg("a client with procctl.h in a dlopened library was not attached");
	procctl_hello_stats(w.h, &st, sizeof st);
	assert_true(st.files_probed > st0.files_probed);
	world_stop(&w);
}

/* A client whose program exists only in its own mount namespace (a tmpfs
 * mounted there): the agent cannot open its path, only the mapping. */
static void found_in_another_mount_namespace(void **state)
{
	char dir[96], exe[128];
	struct world w;
	pid_t pid;
	(void)state;

	snprintf(dir, sizeof dir, "%s/ns", lockdir);
	snprintf(exe, sizeof exe, "%s/echo-client", dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	world_start(&w, HOUR, NULL);
	assert_true(pump(&w, ready_cond, 0));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char cmd[320];
		int null = open("/dev/null", O_WRONLY);
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", dir, "tmpfs", 0, "mode=0755") < 0)
			_exit(3);
		snprintf(cmd, sizeof cmd, "cp %s %s", ECHO_CLIENT_PATH, exe);
		if (system(cmd) != 0)
			_exit(4);
		dup2(null, 1);
		execl(exe, "echo-client", "--consumer", consumer, (char *)NULL);
		_exit(127);
	}
	children[nchildren++] = pid;
	if (!pump(&w, attached_cond, pid)) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 3)
			TH_SKIP_OR_FAIL("no mount namespace here (unshare(CLONE_NEWNS) needs CAP_SYS_ADMIN)");
		fail_msg("a client whose program is only in its mount namespace was not attached");
	}
	assert_int_equal(access(exe, F_OK), -1); /* not in ours */
	world_stop(&w);
}

static void found_by_the_first_scan(void **state)
{
	struct world w;
	pid_t pid;
	(void)state;

	pid = echo_client();
	th_sleep_ms(200); /* it has said hello before any agent ran */
	world_start(&w, HOUR, NULL);
	if (!pump(&w, attached_cond, pid))
		fail_msg("a process from before the agent was not found by the first scan");
	world_stop(&w);
}

static int execd(const struct world *w, pid_t pid)
{
	int i;
	for (i = 0; i < w->nexecd && i < 4096; i++)
		if (w->execd[i] == pid)
			return 1;
	return 0;
}

/* A process that execs /bin/true, waited for: its records are in the rings. */
static pid_t exec_true(void)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	return pid;
}

/* Dispatch only when the hello's fd is readable, until pid's exec is
 * heard or 10 s. */
static int exec_heard_by_wakes(struct world *w, pid_t pid)
{
	uint64_t end = th_now_ns() + 10000 * MS;
	while (!execd(w, pid) && th_now_ns() < end) {
		struct pollfd p = {procctl_hello_fd(w->h), POLLIN, 0};
		if (poll(&p, 1, 100) == 1)
			assert_int_equal(procctl_hello_dispatch(w->h), 0);
	}
	return execd(w, pid);
}

/* The host's execs, mappings, forks and exits wake the loop once a batch at
 * most; a hello is heard at once all the same. */
static void host_records_batched_hellos_not(void **state)
{
	struct procctl_hello_stats st0, st;
	struct world w;
	uint64_t end;
	pid_t e1, e2, a, b;
	(void)state;

	world_open(&w, HOUR, NULL, HOUR, HOUR); /* a batch of an hour: only a hello can wake it */
	assert_true(pump(&w, ready_cond, 0));
	e1 = echo_client_copy(); /* its file gets its probe */
	if (!pump(&w, attached_cond, e1))
		fail_msg("a client started after the agent was not attached");
	end = th_now_ns() + 200 * MS; /* the rechecks after e1's mapping (20 ms) run: no timer is due then */
	while (th_now_ns() < end) {
		struct pollfd p = {procctl_hello_fd(w.h), POLLIN, 0};
		if (poll(&p, 1, 20) == 1)
			assert_int_equal(procctl_hello_dispatch(w.h), 0);
	}
	a = exec_true();
	assert_int_equal(procctl_hello_dispatch(w.h), 0); /* reads a's records, muted after */
	assert_true(execd(&w, a));
	b = exec_true();
	procctl_hello_stats(w.h, &st0, sizeof st0);
	end = th_now_ns() + 300 * MS;
	while (th_now_ns() < end) {
		struct pollfd p = {procctl_hello_fd(w.h), POLLIN, 0};
		if (poll(&p, 1, 50) != 1)
			continue;
		assert_int_equal(procctl_hello_dispatch(w.h), 0);
		procctl_hello_stats(w.h, &st, sizeof st);
		if (st.hits == st0.hits)
			fail_msg("an exec woke the hello within its batch");
		st0 = st; /* some other process said hello to a probed file */
	}
	/* A second client of the probed file says hello: heard at once, with
	 * b's exec read in the same drain. */
	{
		char path[128];
		char *argv[] = {path, "--consumer", consumer, NULL};
		uint64_t end2 = th_now_ns() + 10000 * MS;
		snprintf(path, sizeof path, "%s/echo-client", lockdir);
		e2 = spawn(argv);
		while (!was_attached(&w, e2) && th_now_ns() < end2) {
			struct pollfd p[2] = {{procctl_registry_fd(w.r), POLLIN, 0}, {procctl_hello_fd(w.h), POLLIN, 0}};
			poll(p, 2, 100);
			assert_int_equal(procctl_registry_dispatch(w.r), 0);
			if (p[1].revents)
				assert_int_equal(procctl_hello_dispatch(w.h), 0);
		}
	}
	if (!was_attached(&w, e2))
		fail_msg("a hello was not heard while the host's records were batched");
	procctl_hello_stats(w.h, &st, sizeof st);
	assert_true(st.hits > st0.hits);
	assert_true(execd(&w, b));
	world_stop(&w);

	/* A batch of 20 ms: every exec is heard in the end (the timer reads
	 * what waited, unmutes, and the next one wakes it again). */
	world_open(&w, HOUR, NULL, HOUR, 0);
	assert_true(pump(&w, ready_cond, 0));
	for (int i = 0; i < 3; i++) {
		pid_t c = exec_true();
		if (!exec_heard_by_wakes(&w, c))
			fail_msg("exec %d of a batch was never heard", i);
	}
	world_stop(&w);
}

/* CAP_SYS_ADMIN in the effective set on (1) or off (0); 0 or -errno. */
static int sys_admin(int on)
{
	struct __user_cap_header_struct hd = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &hd, d) < 0)
		return -errno;
	if (on)
		d[CAP_SYS_ADMIN / 32].effective |= 1u << (CAP_SYS_ADMIN % 32);
	else
		d[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
	return syscall(SYS_capset, &hd, d) < 0 ? -errno : 0;
}

/* Without CAP_SYS_ADMIN (CAP_PERFMON still there) a kernel since 6.16
 * refuses uprobes: the file is watched by its mappings, and a client is
 * found by the rechecks after it maps the file, with rescans an hour
 * apart. Where the kernel still lets CAP_PERFMON place them, its hello
 * is heard as usual. */
static void uprobes_refused_mappings_still_find(void **state)
{
	struct procctl_hello_stats st0, st;
	struct world w;
	pid_t pid;
	(void)state;
	if (sys_admin(0) < 0)
		TH_SKIP_OR_FAIL("cannot drop CAP_SYS_ADMIN (not root)");
	world_start(&w, HOUR, NULL);
	assert_true(pump(&w, ready_cond, 0));
	procctl_hello_stats(w.h, &st0, sizeof st0);
	pid = echo_client_copy();
	if (!pump(&w, attached_cond, pid)) {
		sys_admin(1);
		fail_msg("a client was not found with uprobes refused (rescans are an hour apart)");
	}
	procctl_hello_stats(w.h, &st, sizeof st);
	print_message("uprobes %s: hits %llu, notifies %llu\n", st.uprobes_denied ? "refused" : "placed",
		      (unsigned long long)st.hits, (unsigned long long)st.notifies);
	if (st.uprobes_denied)
		assert_int_equal(st.uprobes, 0);
	else
		assert_true(st.files_probed >= 1);
	/* It exits: its file, watched without uprobes or with them, is dropped
	 * (idle_ns), and no uprobe is counted that is not there. */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	nchildren--;
	if (!pump(&w, files_cond, (long)st0.files))
		fail_msg("the file of a client that exited stayed watched");
	procctl_hello_stats(w.h, &st, sizeof st);
	assert_int_equal(st.uprobes, 0);
	world_stop(&w);
	assert_int_equal(sys_admin(1), 0);
}

static void without_the_probe_rescans_still_find(void **state)
{
	char empty[] = "/tmp/procctl-nosys.XXXXXX";
	struct world w;
	pid_t pid;
	(void)state;

	assert_non_null(mkdtemp(empty));
	world_start(&w, 100 * MS, empty); /* no uprobe PMU under this "sysfs" */
	assert_null(w.h);
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(procctl_hello_error(-errno), "uprobe"));
	assert_true(pump(&w, ready_cond, 0));
	pid = echo_client();
	if (!pump(&w, attached_cond, pid))
		fail_msg("the registry did not find a client at its rescans");
	world_stop(&w);
	rmdir(empty);
}

static void without_permission_it_says_so(void **state)
{
	pid_t pid;
	int st;
	(void)state;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct procctl_hello_opts ho;
		procctl_hello_t *h;
		memset(&ho, 0, sizeof ho);
		ho.sz = sizeof ho;
		ho.on_pid = on_pid;
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(3);
		h = procctl_hello_new(&ho);
		_exit(h ? 1 : errno == EACCES || errno == EPERM ? 0 : 2);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
		TH_SKIP_OR_FAIL("cannot drop to uid 65534 (not root)");
	if (WIFEXITED(st) && WEXITSTATUS(st) == 1)
		TH_SKIP_OR_FAIL("perf_event_paranoid lets anyone watch every CPU here");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---- closes and owners ----------------------------------------------------- */

/* Copies [from, from + n) of libhellolib.so in lockdir (files of their
 * own), owned by uid. */
static void lib_copies(int from, int n, uid_t uid)
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
static pid_t lib_mapper(int from, int n)
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
static pid_t spawn_later(char *const argv[], int *go)
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

static void end_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	nchildren--;
}

static int probed_cond(struct world *w, long want)
{
	struct procctl_hello_stats st;
	procctl_hello_stats(w->h, &st, sizeof st);
	return st.files_probed >= (uint64_t)want;
}

static int time_cond(struct world *w, long until_ns)
{
	(void)w;
	return th_now_ns() >= (uint64_t)until_ns;
}

static int closed_cond(struct world *w, long unused)
{
	(void)w, (void)unused;
	return procctl_close_pending() == 0;
}

/* Dispatch until every probe this process closed is closed: 60 s at most
 * (each close waits for grace periods, longer on a busy host). */
static int closes_done(struct world *w)
{
	int i;
	for (i = 0; i < 6 && !pump(w, closed_cond, 0); i++)
		;
	return closed_cond(w, 0);
}

/* A world (once earlier probes are closed; *st0 its stats then), and a
 * child that maps n copies of libhellolib.so owned by uid: it, once want
 * of them are probed. */
static pid_t libs_mapped(struct world *w, struct procctl_hello_stats *st0, int n, uid_t uid, int want)
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

/* Closing uprobes holds the kernel's event_mutex for grace periods, and
 * placing one waits for it. While closes are pending, a file of root's is
 * probed all the same: the closer waits between two closes while its
 * probes go in (after the close in flight). Another owner's gets none
 * (the loop would wait; a user who makes probes come and go would stall
 * it): its process is still found, by the rechecks, and once the closes
 * are done the file is probed at its next mapping. */
static void others_probes_wait_for_closes_roots_do_not(void **state)
{
	struct procctl_hello_stats st0, st1, st;
	struct world w;
	char root_path[128], user_path[128], cmd[640];
	char *argv_root[] = {root_path, "--consumer", consumer, NULL};
	char *argv_user[] = {user_path, "--consumer", consumer, NULL};
	pid_t mapper, root_pid, user_pid;
	int go_root, go_user;
	long pending;
	uint64_t t0, t1;
	(void)state;
	snprintf(root_path, sizeof root_path, "%s/echo-client", lockdir);
	snprintf(user_path, sizeof user_path, "%s/echo-client-65534", lockdir);
	snprintf(cmd, sizeof cmd, "cp %s %s && cp %s %s && chown 65534:65534 %s", ECHO_CLIENT_PATH, root_path,
		 ECHO_CLIENT_PATH, user_path, user_path);
	assert_int_equal(system(cmd), 0);
	root_pid = spawn_later(argv_root, &go_root);
	user_pid = spawn_later(argv_user, &go_user);
	mapper = libs_mapped(&w, &st0, 12, 0, 12);
	end_child(mapper);
	if (!pump(&w, files_cond, (long)st0.files)) /* idle: their probes go to the closer */
		fail_msg("the probes of files nobody maps stayed");
	assert_true(procctl_close_pending() > 0);
	procctl_hello_stats(w.h, &st1, sizeof st1);

	t0 = th_now_ns();
	assert_int_equal(write(go_root, "x", 1), 1);
	close(go_root);
	if (!pump(&w, probed_cond, (long)st1.files_probed + 1))
		fail_msg("a file of root's was not probed while others' probes were closing");
	t1 = th_now_ns();
	pending = procctl_close_pending();
	if (!pump(&w, attached_cond, root_pid))
		fail_msg("a client seen while closes were pending was not attached (rescans are an hour apart)");
	procctl_hello_stats(w.h, &st, sizeof st);
	assert_true(pending > 0); /* probed before the closes were done */
	assert_true(st.placed_past_closes > st1.placed_past_closes);

	assert_int_equal(write(go_user, "x", 1), 1);
	close(go_user);
	if (!pump(&w, attached_cond, user_pid))
		fail_msg("a client of uid 65534's file seen while closes were pending was not attached");
	procctl_hello_stats(w.h, &st, sizeof st);
	assert_true(st.skipped_closing > st1.skipped_closing);
	assert_int_equal(st.files_probed, st1.files_probed + 1); /* root's alone */
	if (!closes_done(&w))
		fail_msg("the closes did not end");
	print_message("root's file probed %.1f ms after its exec, %ld probes still closing; uid 65534's skipped: %llu\n",
		      (double)(t1 - t0) / MS, pending, (unsigned long long)(st.skipped_closing - st1.skipped_closing));
	spawn(argv_user);
	if (!pump(&w, probed_cond, (long)st1.files_probed + 2))
		fail_msg("uid 65534's file was not probed once the closes were done");
	world_stop(&w);
}

/* One owner's files (root's aside) get HELLO_FILES_PER_OWNER (32) probed
 * files: a user's copies of a library with the probe take no more. */
static void one_owner_gets_32_files(void **state)
{
	struct procctl_hello_stats st0, st;
	struct world w;
	pid_t mapper;
	(void)state;
	mapper = libs_mapped(&w, &st0, 34, 65534, 32);
	pump(&w, time_cond, (long)(th_now_ns() + 200 * MS)); /* 200 ms more for any 33rd */
	procctl_hello_stats(w.h, &st, sizeof st);
	assert_int_equal(st.files, st0.files + 32);
	assert_true(st.files_skipped >= st0.files_skipped + 2);
	end_child(mapper);
	assert_true(pump(&w, files_cond, (long)st0.files));
	assert_true(closes_done(&w));
	world_stop(&w);
}

/* Past the others' bound, root's copy of the library (copy root) is
 * probed; then every mapper ends, and every probe closes. */
static void root_probed_past_others(struct world *w, const struct procctl_hello_stats *st0, pid_t mapper, int root)
{
	struct procctl_hello_stats st;
	pid_t root_mapper;
	procctl_hello_stats(w->h, &st, sizeof st);
	root_mapper = lib_mapper(root, 1);
	if (!pump(w, probed_cond, (long)st.files_probed + 1))
		fail_msg("root's library was not probed past the others' bound");
	end_child(root_mapper);
	end_child(mapper);
	assert_true(pump(w, files_cond, (long)st0->files));
	assert_true(closes_done(w));
	world_stop(w);
}

/* The owners but root together get HELLO_OTHERS_FILES_MAX (64) probed
 * files (and a quarter of the probe fds): a user with subordinate uids (a
 * container runtime's 65,536) takes no more; root's files are probed
 * past that. */
static void others_together_get_64_files(void **state)
{
	struct procctl_hello_stats st0, st;
	struct world w;
	pid_t mapper;
	(void)state;
	lib_copies(0, 30, 65534); /* before the probe: 69 cps' execs would fill its rings */
	lib_copies(30, 30, 65533);
	lib_copies(60, 8, 65532);
	lib_copies(68, 1, 0);
	world_start(&w, HOUR, NULL);
	assert_true(pump(&w, ready_cond, 0));
	procctl_hello_stats(w.h, &st0, sizeof st0);
	mapper = lib_mapper(0, 68);
	if (!pump(&w, probed_cond, (long)st0.files_probed + 64))
		fail_msg("64 of 68 libraries of three users were not probed");
	pump(&w, time_cond, (long)(th_now_ns() + 200 * MS)); /* 200 ms more for any 65th */
	procctl_hello_stats(w.h, &st, sizeof st);
	assert_int_equal(st.files, st0.files + 64);
	assert_true(st.skipped_others >= st0.skipped_others + 4);
	assert_int_equal(st.skipped_owner, st0.skipped_owner);
	root_probed_past_others(&w, &st0, mapper, 68);
}

/* ... and a quarter of the probe fds (half of RLIMIT_NOFILE, here made
 * small: room for 16 files of one site each). */
static void others_together_get_a_quarter_of_the_fds(void **state)
{
	struct procctl_hello_stats st0, st;
	struct world w;
	struct rlimit rl, small;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF), quarter, per_file;
	pid_t mapper;
	(void)state;
	lib_copies(0, 20, 65534);
	lib_copies(20, 20, 65533);
	lib_copies(40, 1, 0);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	small = rl;
	small.rlim_cur = (rlim_t)(2 * 4 * 16 * ncpu);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &small), 0);
	world_start(&w, HOUR, NULL); /* the probe's fds: half of that */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_true(pump(&w, ready_cond, 0));
	procctl_hello_stats(w.h, &st0, sizeof st0);
	mapper = lib_mapper(0, 40);
	if (!pump(&w, probed_cond, (long)st0.files_probed + 8))
		fail_msg("the users' libraries were not probed");
	pump(&w, time_cond, (long)(th_now_ns() + 300 * MS)); /* 300 ms more for the rest */
	procctl_hello_stats(w.h, &st, sizeof st);
	per_file = (long)(st.uprobes / (st.files - st0.files));
	quarter = (long)small.rlim_cur / 2 / 4;
	print_message("%llu of 40 files probed: %llu uprobes of %ld\n", (unsigned long long)(st.files - st0.files),
		      (unsigned long long)st.uprobes, quarter);
	assert_true((long)st.uprobes <= quarter && (long)st.uprobes + per_file > quarter);
	assert_true(st.skipped_others > st0.skipped_others);
	root_probed_past_others(&w, &st0, mapper, 40);
}

/* A child of uid 65534 that maps copies [from, from + n) (its own) and,
 * every 20 ms, writes a byte of each in place (the byte it holds) and maps
 * them again: a user who makes probes come and go, each rewrite a close
 * of a file's probes. */
static pid_t churner(int from, int n)
{
	pid_t pid;
	assert_true(n <= 16);
	assert_int_equal(chmod(lockdir, 0711), 0);
	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		void *map[16] = {0};
		size_t len[16];
		int fd[16], i;
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(3);
		for (i = 0; i < n; i++) {
			char path[128];
			struct stat sb;
			snprintf(path, sizeof path, "%s/lib%d.so", lockdir, from + i);
			if ((fd[i] = open(path, O_RDWR)) < 0 || fstat(fd[i], &sb) < 0)
				_exit(1);
			len[i] = (size_t)sb.st_size;
		}
		for (;;) {
			for (i = 0; i < n; i++) {
				void *p;
				if (pwrite(fd[i], "\x7f", 1, 0) != 1)
					_exit(1);
				if ((p = mmap(NULL, len[i], PROT_READ | PROT_EXEC, MAP_PRIVATE, fd[i], 0)) == MAP_FAILED)
					_exit(1);
				if (map[i])
					munmap(map[i], len[i]);
				map[i] = p;
			}
			usleep(20000);
		}
	}
	children[nchildren++] = pid;
	return pid;
}

static int pending_cond(struct world *w, long unused)
{
	(void)w, (void)unused;
	return procctl_close_pending() > 0;
}

/* A user who rewrites its probed libraries and maps them again every
 * 20 ms keeps closes pending, each holding the kernel's event_mutex for
 * grace periods. A library of root's mapped then still gets its probes
 * (the closer waits between two closes while they are placed), and the
 * user's files get none for a minute after a rewrite of one. The program
 * loading root's library calls procctl_init 10.5 s later, past the last
 * recheck, with rescans an hour apart: only its hello finds it. */
static void churning_owner_does_not_starve_root(void **state)
{
	char path[128], delay[] = "10500";
	char *argv[] = {HELLOLIB_CLIENT_PATH, path, consumer, delay, NULL};
	struct procctl_hello_stats st0, st;
	struct world w;
	pid_t pid;
	int go, i;
	(void)state;
	snprintf(path, sizeof path, "%s/lib8.so", lockdir);
	lib_copies(0, 8, 65534);
	lib_copies(8, 1, 0);
	pid = spawn_later(argv, &go);
	world_open(&w, HOUR, NULL, HOUR, 0);
	assert_true(pump(&w, ready_cond, 0));
	procctl_hello_stats(w.h, &st0, sizeof st0);
	churner(0, 8);
	if (!pump(&w, rewritten_cond, (long)st0.files_rewritten) || !pump(&w, pending_cond, 0))
		fail_msg("the churning user's files were not probed, rewritten and closing");
	assert_int_equal(write(go, "x", 1), 1);
	close(go);
	for (i = 0; i < 3 && !pump(&w, attached_cond, pid); i++)
		;
	procctl_hello_stats(w.h, &st, sizeof st);
	print_message("rewritten %llu, probed %llu (%llu past closes), skipped %llu (%llu for churn), hits %llu\n",
		      (unsigned long long)(st.files_rewritten - st0.files_rewritten),
		      (unsigned long long)(st.files_probed - st0.files_probed),
		      (unsigned long long)(st.placed_past_closes - st0.placed_past_closes),
		      (unsigned long long)(st.files_skipped - st0.files_skipped),
		      (unsigned long long)(st.skipped_churn - st0.skipped_churn),
		      (unsigned long long)(st.hits - st0.hits));
	if (!was_attached(&w, pid))
		fail_msg("a late initializer of root's library was not found while another user churned probes");
	assert_true(st.hits > st0.hits);
	assert_true(st.files_rewritten - st0.files_rewritten <= 8); /* the user's files: probed once each */
	assert_true(st.owners_cooled > st0.owners_cooled && st.owners_cooling == 1);
	assert_true(st.skipped_churn > st0.skipped_churn);
	end_child(children[nchildren - 1]); /* the churner */
	assert_true(closes_done(&w));
	world_stop(&w);
}

/* procctl_hello_fd's readiness is used up by the first poll that reports
 * it (a perf ring's, cleared by perf_poll): the rule is a dispatch for
 * every wake that reported it, and a dispatch reads every ring whatever
 * readiness said. Here a loop polls the fd, asks again (as one asking an
 * epoll set which fd woke it), and dispatches once: the exec's mapping is
 * read and its file probed in that one dispatch. */
static void one_dispatch_per_wake_reads_everything(void **state)
{
	struct procctl_hello_stats st0, st;
	struct world w;
	struct epoll_event ev;
	int ep, again;
	pid_t pid;
	(void)state;
	world_start(&w, HOUR, NULL);
	assert_true(pump(&w, ready_cond, 0));
	pump(&w, time_cond, (long)(th_now_ns() + 100 * MS));
	procctl_hello_stats(w.h, &st0, sizeof st0);
	assert_true((ep = epoll_create1(EPOLL_CLOEXEC)) >= 0);
	ev = (struct epoll_event){.events = EPOLLIN};
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, procctl_hello_fd(w.h), &ev), 0);
	pid = echo_client_copy();
	th_sleep_ms(50); /* the exec's mappings are in the rings by now */
	{
		struct pollfd p = {procctl_hello_fd(w.h), POLLIN, 0};
		assert_int_equal(poll(&p, 1, 10000), 1);
	}
	again = epoll_wait(ep, &ev, 1, 0);
	close(ep);
	assert_int_equal(procctl_hello_dispatch(w.h), 0);
	procctl_hello_stats(w.h, &st, sizeof st);
	print_message("a second poll said %d ready (the timer may be); one dispatch read %llu mappings\n", again,
		      (unsigned long long)(st.mmaps - st0.mmaps));
	assert_true(st.files_probed > st0.files_probed); /* echo-client's copy, read in that dispatch */
	if (!pump(&w, attached_cond, pid))
		fail_msg("the client was not attached");
	world_stop(&w);
}

static void bad_options(void **state)
{
	struct procctl_hello_opts ho;
	(void)state;
	memset(&ho, 0, sizeof ho);
	ho.sz = sizeof ho;
	assert_null(procctl_hello_new(&ho)); /* no on_pid */
	assert_int_equal(errno, EINVAL);
	ho.on_pid = on_pid;
	ho.ring_pages = 3;
	assert_null(procctl_hello_new(&ho));
	assert_int_equal(errno, EINVAL);
	assert_null(procctl_hello_new(NULL));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_options),
		cmocka_unit_test_setup_teardown(found_without_rescan, setup, teardown),
		cmocka_unit_test_setup_teardown(rewritten_file_loses_its_probe, setup, teardown),
		cmocka_unit_test_setup_teardown(found_through_a_shared_library, setup, teardown),
		cmocka_unit_test_setup_teardown(found_in_another_mount_namespace, setup, teardown),
		cmocka_unit_test_setup_teardown(found_by_the_first_scan, setup, teardown),
		cmocka_unit_test_setup_teardown(host_records_batched_hellos_not, setup, teardown),
		cmocka_unit_test_setup_teardown(uprobes_refused_mappings_still_find, setup, teardown),
		cmocka_unit_test_setup_teardown(without_the_probe_rescans_still_find, setup, teardown),
		cmocka_unit_test_setup_teardown(without_permission_it_says_so, setup, teardown),
		cmocka_unit_test_setup_teardown(others_probes_wait_for_closes_roots_do_not, setup, teardown),
		cmocka_unit_test_setup_teardown(one_owner_gets_32_files, setup, teardown),
		cmocka_unit_test_setup_teardown(others_together_get_64_files, setup, teardown),
		cmocka_unit_test_setup_teardown(others_together_get_a_quarter_of_the_fds, setup, teardown),
		cmocka_unit_test_setup_teardown(churning_owner_does_not_starve_root, setup, teardown),
		cmocka_unit_test_setup_teardown(one_dispatch_per_wake_reads_everything, setup, teardown),
	};
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 && rl.rlim_cur < rl.rlim_max) {
		/* The probe's fds are half of it: room for the owners' bounds, not
		 * the fds, to be what the tests reach, whatever the CPUs. */
		rl.rlim_cur = rl.rlim_max < 65536 ? rl.rlim_max : 65536;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return TH_RUN(tests);
}
