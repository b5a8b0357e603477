/* SPDX-License-Identifier: Apache-2.0 */
/* The lock directory's files as SPEC.md 8.1 states them: the domain file
 * (8 bytes written, 4 or more read, fewer refused), a consumer's lock file
 * (missing, empty or short: epoch 0; the next holder writes 8 bytes), the
 * directory made with mode 0755 and the files 0644, a held lock refused
 * without blocking. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lock.h"
#include "th.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/procctl-lock.%d", (int)getpid());
	umask(022); /* the modes below are before what a umask takes */
	return 0;
}

static int teardown(void **state)
{
	char cmd[96];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *name, const void *b, size_t n)
{
	char path[128];
	int fd;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, n), (ssize_t)n);
	close(fd);
}

static off_t size_of(const char *name)
{
	char path[128];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

static void domain_file(void **state)
{
	static const unsigned char four[4] = {0x34, 0x12, 0, 0}, eight[8] = {0x78, 0x56, 0x04, 0, 0, 0, 0, 0},
				   three[3] = {1, 2, 3};
	struct stat st;
	uint32_t d = 0, again = 0;
	char sub[96];
	(void)state;
	/* Made by the first agent: the directory 0755 (parents too), the file
	 * 8 bytes, 0644. */
	snprintf(sub, sizeof sub, "%s/a/b", dir);
	assert_int_equal(procctl_lock_domain(sub, &d), 0);
	assert_true(d >= 1 && d <= 0xffffff);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0755);
	snprintf(sub, sizeof sub, "%s/a/b/domain", dir);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_size, 8);
	assert_int_equal(st.st_mode & 0777, 0644);
	snprintf(sub, sizeof sub, "%s/a/b", dir);
	assert_int_equal(procctl_lock_domain(sub, &again), 0);
	assert_int_equal(again, d);
	/* Written by another implementation: 4 bytes, or 8. */
	put("domain", four, sizeof four);
	assert_int_equal(procctl_lock_domain(dir, &d), 0);
	assert_int_equal(d, 0x1234);
	put("domain", eight, sizeof eight);
	assert_int_equal(procctl_lock_domain(dir, &d), 0);
	assert_int_equal(d, 0x45678);
	/* Fewer than 4 bytes, or an id out of range: refused. */
	put("domain", three, sizeof three);
	assert_true(procctl_lock_domain(dir, &d) < 0);
	put("domain", "\0\0\0\0", 4);
	assert_int_equal(procctl_lock_domain(dir, &d), -EINVAL);
	put("domain", "\xff\xff\xff\x01", 4);
	assert_int_equal(procctl_lock_domain(dir, &d), -EINVAL);
}

static void lock_file(void **state)
{
	static const unsigned char epoch41[8] = {41, 0, 0, 0, 0, 0, 0, 0};
	uint32_t e = 0;
	int fd, status;
	pid_t pid;
	(void)state;
	/* Missing: made 0644, epoch 1, 8 bytes written. */
	assert_true((fd = procctl_lock_open(dir, "token")) >= 0);
	assert_int_equal(procctl_lock_take(fd, dir, "token", &e), 0);
	assert_int_equal(e, 1);
	assert_int_equal(size_of("token.lock"), 8);
	/* Held: another open file description is refused at once. */
	pid = fork();
	if (pid == 0) {
		uint32_t e2;
		int fd2 = procctl_lock_open(dir, "token");
		_exit(fd2 >= 0 && procctl_lock_take(fd2, dir, "token", &e2) == -EAGAIN ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	procctl_lock_drop(fd);
	close(fd);
	/* Empty, or short: epoch 0, so the holder writes 1. */
	put("token.lock", "", 0);
	assert_true((fd = procctl_lock_open(dir, "token")) >= 0);
	assert_int_equal(procctl_lock_take(fd, dir, "token", &e), 0);
	assert_int_equal(e, 1);
	close(fd);
	put("token.lock", "\x07\x00", 2);
	assert_true((fd = procctl_lock_open(dir, "token")) >= 0);
	assert_int_equal(procctl_lock_take(fd, dir, "token", &e), 0);
	assert_int_equal(e, 1);
	close(fd);
	/* 8 bytes of another holder: its epoch + 1. */
	put("token.lock", epoch41, sizeof epoch41);
	assert_true((fd = procctl_lock_open(dir, "token")) >= 0);
	assert_int_equal(procctl_lock_take(fd, dir, "token", &e), 0);
	assert_int_equal(e, 42);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(domain_file, setup, teardown),
		cmocka_unit_test_setup_teardown(lock_file, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
