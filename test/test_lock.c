/* SPDX-License-Identifier: Apache-2.0 */
/* The lock directory as SPEC.md 8.1 states it: trusted or refused (its
 * owner and mode, and its parents'), the domain file (8 bytes written, 4
 * or more read, fewer refused), a consumer's lock file (missing, empty or
 * short: epoch 0; the next holder writes 8 bytes), every file 0600 and
 * never opened through a symlink, epochs that never go backwards, a held
 * lock refused without blocking. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lock.h"
#include "th.h"

static char dir[64];
static int dfd = -1;

static int setup(void **state)
{
	char why[256];
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/procctl-lock.%d", (int)getpid());
	umask(022); /* the modes below are before what a umask takes */
	dfd = procctl_trusted_dir(dir, why, sizeof why);
	return dfd >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[96];
	(void)state;
	close(dfd);
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

static struct stat stat_of(const char *name)
{
	char path[128];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	assert_int_equal(lstat(path, &st), 0);
	return st;
}

/* procctl_trusted_dir on path: the fd's result, and why. */
static int trusted(const char *path, char *why, size_t whylen)
{
	int fd = procctl_trusted_dir(path, why, whylen);
	if (fd >= 0)
		close(fd);
	return fd >= 0 ? 0 : fd;
}

/* Out of descriptors at its first open (/): refused with the reason,
 * not with whatever why held before. */
static void trusted_dir_without_fds(void **state)
{
	char why[512];
	struct rlimit rl, none;
	int next = dup(0);
	(void)state;
	assert_true(next >= 0);
	close(next);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	none = rl;
	none.rlim_cur = (rlim_t)next; /* no descriptor past those open now */
	memset(why, 0xb8, sizeof why);
	why[sizeof why - 1] = 0;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &none), 0);
	assert_int_equal(trusted(dir, why, sizeof why), -EMFILE);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_string_equal(why, "/: Too many open files");
}

static void trusted_dirs(void **state)
{
	char sub[128], link[128], why[512];
	struct stat st;
	(void)state;
	/* Made with its parents, 0755; through a symlink to a trusted one. */
	snprintf(sub, sizeof sub, "%s/a/b", dir);
	assert_int_equal(trusted(sub, why, sizeof why), 0);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0755);
	snprintf(link, sizeof link, "%s/l", dir);
	assert_int_equal(symlink(sub, link), 0);
	assert_int_equal(trusted(link, why, sizeof why), 0);
	/* Writable by others, or by its group: refused, naming it. */
	assert_int_equal(chmod(sub, 0777), 0);
	assert_int_equal(trusted(sub, why, sizeof why), -EPERM);
	assert_non_null(strstr(why, "/a/b is writable by others (mode 0777)"));
	assert_int_equal(chmod(sub, 0775), 0);
	assert_int_equal(trusted(link, why, sizeof why), -EPERM);
	assert_non_null(strstr(why, "writable by its group"));
	/* Sticky and writable by all is fine above it (/tmp), not as it. */
	assert_int_equal(chmod(sub, 01777), 0);
	assert_int_equal(trusted(sub, why, sizeof why), -EPERM);
	snprintf(sub, sizeof sub, "%s/a/b/c", dir);
	assert_int_equal(trusted(sub, why, sizeof why), 0);
	/* Someone else's, or under someone else's: refused. */
	snprintf(sub, sizeof sub, "%s/a", dir);
	assert_int_equal(chown(sub, 65534, 65534), 0);
	snprintf(sub, sizeof sub, "%s/a/b/c", dir);
	assert_int_equal(trusted(sub, why, sizeof why), -EPERM);
	assert_non_null(strstr(why, "/a is owned by uid 65534"));
	snprintf(sub, sizeof sub, "%s/a/b/c", dir);
	assert_int_equal(chown(sub, 65534, 65534), 0);
	snprintf(sub, sizeof sub, "%s/a", dir);
	assert_int_equal(chown(sub, 0, 0), 0);
	snprintf(sub, sizeof sub, "%s/a/b/c", dir);
	assert_int_equal(trusted(sub, why, sizeof why), -EPERM);
	assert_non_null(strstr(why, "/a/b/c is owned by uid 65534, not 0"));
	/* Not a directory; not absolute. */
	put("f", "x", 1);
	snprintf(sub, sizeof sub, "%s/f", dir);
	assert_true(trusted(sub, why, sizeof why) < 0);
	assert_int_equal(trusted("relative/dir", why, sizeof why), -EINVAL);
}

static void domain_file(void **state)
{
	static const unsigned char four[4] = {0x34, 0x12, 0, 0}, eight[8] = {0x78, 0x56, 0x04, 0, 0, 0, 0, 0},
				   three[3] = {1, 2, 3};
	uint32_t d = 0, again = 0;
	(void)state;
	/* Made by the first agent: 8 bytes, 0600. */
	assert_int_equal(procctl_lock_domain(dfd, &d), 0);
	assert_true(d >= 1 && d <= 0xffffff);
	assert_int_equal(stat_of("domain").st_size, 8);
	assert_int_equal(stat_of("domain").st_mode & 0777, 0600);
	assert_int_equal(procctl_lock_domain(dfd, &again), 0);
	assert_int_equal(again, d);
	/* Written by another implementation: 4 bytes, or 8 (0644: narrowed). */
	put("domain", four, sizeof four);
	assert_int_equal(procctl_lock_domain(dfd, &d), 0);
	assert_int_equal(d, 0x1234);
	assert_int_equal(stat_of("domain").st_mode & 0777, 0600);
	put("domain", eight, sizeof eight);
	assert_int_equal(procctl_lock_domain(dfd, &d), 0);
	assert_int_equal(d, 0x45678);
	/* Fewer than 4 bytes, or an id out of range: refused. */
	put("domain", three, sizeof three);
	assert_true(procctl_lock_domain(dfd, &d) < 0);
	put("domain", "\0\0\0\0", 4);
	assert_int_equal(procctl_lock_domain(dfd, &d), -EINVAL);
	put("domain", "\xff\xff\xff\x01", 4);
	assert_int_equal(procctl_lock_domain(dfd, &d), -EINVAL);
	/* Never through a symlink, never someone else's file. */
	unlinkat(dfd, "domain", 0);
	assert_int_equal(symlinkat("/etc/hostname", dfd, "domain"), 0);
	assert_int_equal(procctl_lock_domain(dfd, &d), -ELOOP);
	unlinkat(dfd, "domain", 0);
	put("domain", eight, sizeof eight);
	assert_int_equal(fchownat(dfd, "domain", 65534, 65534, 0), 0);
	assert_int_equal(procctl_lock_domain(dfd, &d), -EPERM);
}

/* Take token's lock: its epoch (and the fd closed). */
static uint32_t take(void)
{
	uint32_t e = 0;
	int fd = procctl_lock_open(dfd, "token");
	assert_true(fd >= 0);
	assert_int_equal(procctl_lock_take(fd, dfd, "token", &e), 0);
	close(fd);
	return e;
}

static void lock_file(void **state)
{
	static const unsigned char epoch41[8] = {41, 0, 0, 0, 0, 0, 0, 0};
	uint32_t e = 0;
	int fd, status;
	pid_t pid;
	(void)state;
	/* Missing: made 0600, epoch 1, 8 bytes written. */
	assert_true((fd = procctl_lock_open(dfd, "token")) >= 0);
	assert_int_equal(procctl_lock_take(fd, dfd, "token", &e), 0);
	assert_int_equal(e, 1);
	assert_int_equal(stat_of("token.lock").st_size, 8);
	assert_int_equal(stat_of("token.lock").st_mode & 0777, 0600);
	/* Held: another open file description is refused at once. */
	pid = fork();
	if (pid == 0) {
		uint32_t e2;
		int fd2 = procctl_lock_open(dfd, "token");
		_exit(fd2 >= 0 && procctl_lock_take(fd2, dfd, "token", &e2) == -EAGAIN ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	procctl_lock_drop(fd);
	close(fd);
	/* Empty, or short: epoch 0 there, so the holder writes the domain's
	 * next: it never goes back. */
	put("token.lock", "", 0);
	assert_int_equal(take(), 2);
	assert_int_equal(stat_of("token.lock").st_mode & 0777, 0600); /* narrowed */
	put("token.lock", "\x07\x00", 2);
	assert_int_equal(take(), 3);
	/* 8 bytes of another holder: its epoch + 1, above the mark. */
	put("token.lock", epoch41, sizeof epoch41);
	assert_int_equal(take(), 42);
	/* Deleted (a watching agent removes it when the consumer's last
	 * region goes): the next holder still counts on. */
	assert_int_equal(unlinkat(dfd, "token.lock", 0), 0);
	assert_int_equal(take(), 43);
	/* The mark's file held (only for a moment, by another agent): try
	 * again later. */
	{
		int ep = openat(dfd, "epochs", O_RDWR | O_CLOEXEC);
		assert_true(ep >= 0);
		assert_int_equal(flock(ep, LOCK_EX), 0);
		assert_true((fd = procctl_lock_open(dfd, "token")) >= 0);
		assert_int_equal(procctl_lock_take(fd, dfd, "token", &e), -EAGAIN);
		close(ep);
		assert_int_equal(procctl_lock_take(fd, dfd, "token", &e), 0);
		assert_int_equal(e, 44);
		close(fd);
	}
}

/* What an attacker who could write the directory once left behind is
 * never followed: a symlink to a victim, someone else's file. */
static void planted_files(void **state)
{
	char victim[96];
	struct stat st;
	int fd;
	(void)state;
	snprintf(victim, sizeof victim, "%s.victim", dir);
	fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_int_equal(write(fd, "root only secret", 16), 16);
	close(fd);
	assert_int_equal(symlinkat(victim, dfd, "token.lock"), 0);
	assert_int_equal(procctl_lock_open(dfd, "token"), -ELOOP);
	assert_int_equal(symlinkat(victim, dfd, "epochs"), 0);
	unlinkat(dfd, "token.lock", 0);
	assert_true((fd = procctl_lock_open(dfd, "token")) >= 0);
	assert_int_equal(procctl_lock_take(fd, dfd, "token", &(uint32_t){0}), -ELOOP);
	close(fd);
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 16); /* untouched */
	unlink(victim);
	unlinkat(dfd, "epochs", 0);
	/* Someone else's lock file: refused (they could flock it). */
	unlinkat(dfd, "token.lock", 0);
	put("token.lock", "", 0);
	assert_int_equal(fchownat(dfd, "token.lock", 65534, 65534, 0), 0);
	assert_int_equal(procctl_lock_open(dfd, "token"), -EPERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(trusted_dirs, setup, teardown),
		cmocka_unit_test_setup_teardown(trusted_dir_without_fds, setup, teardown),
		cmocka_unit_test_setup_teardown(domain_file, setup, teardown),
		cmocka_unit_test_setup_teardown(lock_file, setup, teardown),
		cmocka_unit_test_setup_teardown(planted_files, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
