/* SPDX-License-Identifier: Apache-2.0 */
/* The procctl:hello probe's limits, with real processes and real uprobes:
 * while closes of probes are pending, root's files are probed after the
 * close in flight and other owners' are not; one owner (root aside) gets
 * 32 probed files, all of them together 64 and a quarter of the probe
 * fds; a user who churns probes (rewrites its libraries and maps them
 * again) is put off probes and never holds up root's. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "th.h"
#include "fdclose.h"
#include "hello_world.h"
#include "procctl_agent.h"

#ifndef ECHO_CLIENT_PATH
#error "ECHO_CLIENT_PATH must name the echo client"
#endif
#ifndef HELLOLIB_CLIENT_PATH
#error "HELLOLIB_CLIENT_PATH must name hellolib-client"
#endif

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
	int go;
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
	pump(&w, attached_cond, pid);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(others_probes_wait_for_closes_roots_do_not, setup, teardown),
		cmocka_unit_test_setup_teardown(one_owner_gets_32_files, setup, teardown),
		cmocka_unit_test_setup_teardown(others_together_get_64_files, setup, teardown),
		cmocka_unit_test_setup_teardown(others_together_get_a_quarter_of_the_fds, setup, teardown),
		cmocka_unit_test_setup_teardown(churning_owner_does_not_starve_root, setup, teardown),
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
