/* SPDX-License-Identifier: Apache-2.0 */
/* Scan: the /proc fd link parser, a fixture /proc tree, and the live one. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <unistd.h>

#include "client.h"
#include "th.h"

#ifndef FIXTURES
#error "FIXTURES must name test/fixtures"
#endif

static int parse(const char *link, char consumer[32], uint32_t *v)
{
	return procctl_scan_parse_link(link, strlen(link), consumer, v);
}

static void link_names(void **state)
{
	char c[32];
	uint32_t v;
	(void)state;
	assert_int_equal(parse("/memfd:procctl:echo-v1 (deleted)", c, &v), 0);
	assert_string_equal(c, "echo");
	assert_int_equal(v, 1);
	assert_int_equal(parse("/memfd:procctl:a.b_c-d-v4294967295 (deleted)", c, &v), 0);
	assert_string_equal(c, "a.b_c-d");
	assert_int_equal(v, 4294967295u);
	/* split at the last -v */
	assert_int_equal(parse("/memfd:procctl:a-v1-v2 (deleted)", c, &v), 0);
	assert_string_equal(c, "a-v1");
	assert_int_equal(v, 2);
	assert_int_equal(parse("/memfd:procctl:abcdefghijklmnopqrstuvwxyz01234-v9 (deleted)", c, &v), 0);
	{
		const char *bad[] = {
			"/memfd:procctl:echo-v1",                              /* not deleted: not a memfd */
			"/memfd:procctl:echo-v1 (deleted) ",
			"/memfd:other:echo-v1 (deleted)",
			"memfd:procctl:echo-v1 (deleted)",
			"/memfd:procctl:Echo-v1 (deleted)",                    /* upper case */
			"/memfd:procctl:ec ho-v1 (deleted)",
			"/memfd:procctl:-v1 (deleted)",                        /* empty consumer */
			"/memfd:procctl:echo (deleted)",                       /* no version */
			"/memfd:procctl:echo-v (deleted)",
			"/memfd:procctl:echo-v0 (deleted)",
			"/memfd:procctl:echo-v01 (deleted)",                   /* leading zero */
			"/memfd:procctl:echo-v1x (deleted)",
			"/memfd:procctl:echo-v4294967296 (deleted)",           /* 33 bits */
			"/memfd:procctl:abcdefghijklmnopqrstuvwxyz012345-v1 (deleted)", /* 32 bytes */
			" (deleted)",
			"",
		};
		size_t i;
		for (i = 0; i < sizeof bad / sizeof *bad; i++)
			if (parse(bad[i], c, &v) != -EINVAL)
				fail_msg("accepted: '%s'", bad[i]);
	}
	/* Not NUL terminated: only len bytes count. */
	assert_int_equal(procctl_scan_parse_link("/memfd:procctl:echo-v1 (deleted)XYZ", 32, c, &v), 0);
}

struct seen {
	int n;
	struct procctl_scan_entry e[16];
};

static int collect(const struct procctl_scan_entry *e, void *arg)
{
	struct seen *s = arg;
	if (s->n < 16)
		s->e[s->n++] = *e;
	return 0;
}

static int stop_at_first(const struct procctl_scan_entry *e, void *arg)
{
	(void)e;
	(void)arg;
	return -ECANCELED;
}

static const struct procctl_scan_entry *find(const struct seen *s, pid_t pid, int fd)
{
	int i;
	for (i = 0; i < s->n; i++)
		if (s->e[i].pid == pid && s->e[i].fd == fd)
			return &s->e[i];
	return NULL;
}

static void fixture_tree(void **state)
{
	const char *root = FIXTURES "/proc";
	struct seen s;
	const struct procctl_scan_entry *e;
	pid_t ns[8];
	(void)state;

	memset(&s, 0, sizeof s);
	assert_int_equal(procctl_scan(root, NULL, collect, &s), 4);
	e = find(&s, 100, 3);
	assert_non_null(e);
	assert_string_equal(e->consumer, "echo");
	assert_int_equal(e->schema_version, 1);
	assert_int_equal(e->ino, 0); /* the fixture links lead nowhere */
	e = find(&s, 100, 5);
	assert_non_null(e);
	assert_string_equal(e->consumer, "token");
	assert_int_equal(e->schema_version, 2);
	assert_non_null(find(&s, 400, 9));
	assert_non_null(find(&s, 500, 1));
	assert_null(find(&s, 200, 0));
	assert_null(find(&s, 200, 1));
	assert_null(find(&s, 200, 2));

	memset(&s, 0, sizeof s);
	assert_int_equal(procctl_scan(root, "echo", collect, &s), 2);
	memset(&s, 0, sizeof s);
	assert_int_equal(procctl_scan_pid(root, 100, "token", collect, &s), 1);
	assert_int_equal(procctl_scan_pid(root, 300, NULL, collect, &s), -ESRCH);
	assert_int_equal(procctl_scan_pid(root, 999, NULL, collect, &s), -ESRCH);
	assert_int_equal(procctl_scan(root, NULL, stop_at_first, NULL), -ECANCELED);
	assert_int_equal(procctl_scan(FIXTURES "/nowhere", NULL, collect, &s), -ENOENT);
	/* A name no region can have is a mistake, not "none found". */
	assert_int_equal(procctl_scan(root, "ECHO", collect, &s), -EINVAL);
	assert_int_equal(procctl_scan(root, "", collect, &s), -EINVAL);
	assert_int_equal(procctl_scan(root, NULL, NULL, NULL), -EINVAL);
	assert_int_equal(procctl_scan_pid(root, 1, "a b", collect, &s), -EINVAL);
	assert_int_equal(procctl_scan_pid(root, 0, NULL, collect, &s), -EINVAL);

	/* In steps of one process: the same regions, a step per process. */
	{
		procctl_scan_iter_t *it = procctl_scan_begin(root, 0);
		int r, steps = 0;
		assert_non_null(it);
		memset(&s, 0, sizeof s);
		while ((r = procctl_scan_step(it, NULL, 1, collect, &s)) > 0)
			steps++;
		procctl_scan_end(it);
		assert_int_equal(r, 0);
		assert_int_equal(s.n, 4);
		assert_non_null(find(&s, 100, 5));
		assert_non_null(find(&s, 500, 1));
		assert_int_equal(steps, 5); /* the pids of the tree: 100, 200, 300, 400, 500 */
		assert_null(procctl_scan_begin(FIXTURES "/nowhere", 0));
		assert_int_equal(errno, ENOENT);
		/* A process skipped is not read: pid 100 has two of the four. */
		it = procctl_scan_begin(root, 100);
		memset(&s, 0, sizeof s);
		while (procctl_scan_step(it, NULL, 2, collect, &s) > 0)
			;
		procctl_scan_end(it);
		assert_int_equal(s.n, 2);
		assert_null(find(&s, 100, 3));
	}

	/* NSpid: outermost first */
	assert_int_equal(procctl_read_nspid(root, 100, ns, 8), 3);
	assert_int_equal(ns[0], 100);
	assert_int_equal(ns[2], 1);
	assert_int_equal(procctl_read_nspid(root, 100, ns, 2), -EINVAL);
	assert_int_equal(procctl_read_nspid(root, 200, ns, 8), -ENOENT);
	assert_int_equal(procctl_read_nspid(root, 400, ns, 8), 1);
	assert_int_equal(procctl_read_nspid(root, 500, ns, 8), -EINVAL);
	assert_int_equal(procctl_read_nspid(root, 999, ns, 8), -ESRCH);
}

/* This process's own regions, in the real /proc. */
static void live(void **state)
{
	static unsigned char st1[PROCCTL_STATE_STORAGE(0, 8)], st2[PROCCTL_STATE_STORAGE(0, 8)];
	procctl_config_t cfg;
	procctl_t a, b;
	struct seen s;
	const struct procctl_scan_entry *e;
	struct stat fs;
	(void)state;

	memset(&cfg, 0, sizeof cfg);
	cfg.consumer = "scantest";
	cfg.schema_version = 7;
	cfg.payload_capacity = 16;
	cfg.state_capacity = 8;
	cfg.state_storage = st1;
	assert_int_equal(procctl_init(&a, &cfg), 0);
	cfg.consumer = "scantest.b";
	cfg.state_storage = st2;
	assert_int_equal(procctl_init(&b, &cfg), 0);
	memset(&s, 0, sizeof s);
	assert_int_equal(procctl_scan(NULL, "scantest", collect, &s), 1);
	e = find(&s, getpid(), procctl_fd(&a));
	assert_non_null(e);
	assert_int_equal(e->schema_version, 7);
	assert_int_equal(fstat(procctl_fd(&a), &fs), 0);
	assert_true(e->dev == fs.st_dev && e->ino == fs.st_ino);
	memset(&s, 0, sizeof s);
	assert_true(procctl_scan_pid(NULL, getpid(), NULL, collect, &s) >= 2);
	assert_non_null(find(&s, getpid(), procctl_fd(&b)));
	procctl_close(&a);
	procctl_close(&b);
}

static int none(const struct procctl_scan_entry *e, void *arg)
{
	(void)e;
	(void)arg;
	return 0;
}

/* Processes whose fd links this one may not read: none, unless one has
 * more than root's capabilities or is not dumpable (a sandbox's init). */
static unsigned refused_here(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	unsigned n = 0;
	assert_non_null(d);
	while ((de = readdir(d))) {
		char path[300], link[300];
		struct dirent *fe;
		DIR *f;
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/fd", de->d_name);
		if (!(f = opendir(path))) {
			n += errno == EACCES || errno == EPERM;
			continue;
		}
		while ((fe = readdir(f)) && fe->d_name[0] == '.')
			;
		if (fe && readlinkat(dirfd(f), fe->d_name, link, sizeof link) < 0)
			n += errno == EACCES || errno == EPERM;
		closedir(f);
	}
	closedir(d);
	return n;
}

/* Without ptrace access to them (as nobody, or as root without its
 * capabilities: this test's root processes) a scan cannot look into fd
 * tables, and says how many. */
static void denied_counted(void **state)
{
	procctl_scan_iter_t *it;
	unsigned refused;
	pid_t pid;
	int st;
	(void)state;
	if (geteuid() != 0)
		TH_SKIP_OR_FAIL("not root: no process here to be refused");
	refused = refused_here();
	assert_non_null(it = procctl_scan_begin(NULL, 0));
	while (procctl_scan_step(it, NULL, 64, none, NULL) > 0)
		;
	assert_int_equal(procctl_scan_denied(it), refused); /* root looks into every one but those */
	procctl_scan_end(it);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgid(65534) < 0 || setuid(65534) < 0 || !(it = procctl_scan_begin(NULL, 0)))
			_exit(2);
		while (procctl_scan_step(it, NULL, 64, none, NULL) > 0)
			;
		_exit(procctl_scan_denied(it) >= 1 ? 0 : 1); /* its parent, at least */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* Root without its capabilities: the fd directories of root processes
	 * open, their links do not. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct __user_cap_header_struct hd = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct d[2];
		memset(d, 0, sizeof d);
		if (syscall(SYS_capset, &hd, d) < 0 || !(it = procctl_scan_begin(NULL, 0)))
			_exit(2);
		while (procctl_scan_step(it, NULL, 64, none, NULL) > 0)
			;
		if (procctl_scan_denied(it) < 1)
			_exit(1);
		_exit(procctl_scan_pid(NULL, getppid(), NULL, none, NULL) == -EACCES ? 0 : 3);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* A process may open a million fds: a step reads 16 fd links for each
 * process it may look at, and takes a larger table up where it stopped
 * at the next step. A tree of two processes: 100 with 100 fds, its region
 * at fd 99, and 200 with one region (fd 0). */
static char tree[64]; /* large_table_in_steps's, removed even when it fails */

static int tree_remove(void **state)
{
	char cmd[96];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf %s", tree);
	return tree[0] && system(cmd) != 0 ? -1 : 0;
}

static void large_table_in_steps(void **state)
{
	char *root = tree, path[128];
	procctl_scan_iter_t *it;
	struct seen s;
	int i, r, steps = 0;
	(void)state;

	snprintf(tree, sizeof tree, "/tmp/procctl-scan.XXXXXX");
	assert_non_null(mkdtemp(tree));
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof path, "%s/%d", root, 100 * (i + 1));
		assert_int_equal(mkdir(path, 0755), 0);
		strcat(path, "/fd");
		assert_int_equal(mkdir(path, 0755), 0);
	}
	for (i = 0; i < 100; i++) {
		snprintf(path, sizeof path, "%s/100/fd/%d", root, i);
		assert_int_equal(symlink(i == 99 ? "/memfd:procctl:big-v1 (deleted)" : "socket:[1]", path), 0);
	}
	snprintf(path, sizeof path, "%s/200/fd/0", root);
	assert_int_equal(symlink("/memfd:procctl:small-v1 (deleted)", path), 0);

	assert_non_null(it = procctl_scan_begin(root, 0));
	memset(&s, 0, sizeof s);
	while ((r = procctl_scan_step(it, NULL, 1, collect, &s)) > 0)
		steps++;
	assert_int_equal(r, 0);
	assert_int_equal(s.n, 2);
	assert_non_null(find(&s, 100, 99));
	assert_non_null(find(&s, 200, 0));
	/* 101 links, 16 a step: 7 steps at least (before: one a process) */
	assert_true(steps >= 101 / 16);
	/* Ended in the middle of a table: nothing left open (ASan, fds). */
	procctl_scan_step(it, NULL, 1, collect, &s);
	procctl_scan_end(it);
	assert_non_null(it = procctl_scan_begin(root, 0));
	assert_int_equal(procctl_scan_step(it, NULL, 1, collect, &s), 1);
	procctl_scan_end(it);
	/* One process whole: every link at once. */
	memset(&s, 0, sizeof s);
	assert_int_equal(procctl_scan_pid(root, 100, NULL, collect, &s), 1);
	assert_non_null(find(&s, 100, 99));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(link_names),
		cmocka_unit_test(fixture_tree),
		cmocka_unit_test_teardown(large_table_in_steps, tree_remove),
		cmocka_unit_test(live),
		cmocka_unit_test(denied_counted),
	};
	return TH_RUN(tests);
}
