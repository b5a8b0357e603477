/* SPDX-License-Identifier: Apache-2.0 */
/* Fast discovery: the procctl:hello probe with real processes started after the agent (a
 * program with procctl.h in it, and one that dlopens it in a shared
 * library), with rescans an hour apart: they are attached only if the
 * probe worked. Also: a process from before the agent is found by the
 * first scan; probes of files nobody maps any more are dropped; without
 * the uprobe PMU hello says so and the registry still finds processes at
 * its rescans. A client whose program is in another mount namespace is
 * found through its mapping. One dispatch a wake reads everything. The
 * limits on probes and how closes are waited for: test_hello_limits.c. */
#define _GNU_SOURCE 1 /* unshare */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "th.h"
#include "hello_world.h"
#include "procctl_agent.h"

#if !defined(HELLOLIB_CLIENT_PATH) || !defined(HELLOLIB_PATH)
#error "HELLOLIB_CLIENT_PATH and HELLOLIB_PATH must name the helpers"
#endif

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

/* Wait (10 s at most) until pid has made its region of consumer. */
static void region_made(pid_t pid)
{
	struct procctl_scan_entry e;
	int i;
	for (i = 0; i < 2000 && !th_region_made(pid, -1, consumer, &e); i++)
		th_sleep_ms(5);
	if (i == 2000)
		fail_msg("pid %d made no region of %s in 10 s", (int)pid, consumer);
}

static void found_by_the_first_scan(void **state)
{
	struct procctl_registry_stats st;
	struct world w;
	pid_t pid;
	(void)state;

	pid = echo_client();
	region_made(pid); /* its hello went before any agent ran */
	world_start(&w, HOUR, NULL);
	if (!pump(&w, attached_cond, pid))
		fail_msg("a process from before the agent was not found by the first scan");
	/* Found by that scan: no notify (the probe's) was asked for. */
	procctl_registry_stats(w.r, &st, sizeof st);
	assert_int_equal(st.scans, 1);
	assert_int_equal(st.targeted_scans, 0);
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

/* Wait (10 s at most) until pid maps file: the exec is done, and the
 * perf records of its mappings are written. */
static void mapped(pid_t pid, const char *file)
{
	char path[64], line[512];
	size_t t = strlen(file);
	int i, hit = 0;
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	for (i = 0; i < 2000 && !hit; i++) {
		FILE *f = fopen(path, "r");
		while (f && !hit && fgets(line, sizeof line, f)) {
			size_t n = strcspn(line, "\n");
			hit = n >= t && !strncmp(line + n - t, file, t);
		}
		if (f)
			fclose(f);
		if (!hit)
			th_sleep_ms(5);
	}
	if (!hit)
		fail_msg("pid %d did not map %s in 10 s", (int)pid, file);
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
	{
		char copy[128];
		snprintf(copy, sizeof copy, "%s/echo-client", lockdir); /* echo_client_copy's */
		mapped(pid, copy); /* its mappings made: their records are in the rings */
	}
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
		cmocka_unit_test_setup_teardown(one_dispatch_per_wake_reads_everything, setup, teardown),
	};
	return TH_RUN(tests);
}

