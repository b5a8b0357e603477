/* SPDX-License-Identifier: Apache-2.0 */
/* Pod identity from /proc/<pid>/cgroup: every shape in
 * test/fixtures/cgroup, hostile nesting, conflicts, and the file reader on
 * a proc root of our own; a process's start time and image from its stat
 * line. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sys/podid.h"
#include "sys/procstat.h"
#include "th.h"

#ifndef FIXTURES
#error "FIXTURES must name test/fixtures"
#endif

#define U1 "0b6d7a2e-5c1f-4c1a-9f3e-2d7b8c9a1e4f"
#define U2 "1a2b3c4d-1111-2222-3333-444455556666"
#define C1 "3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e"
#define C2 "aaaabbbbccccddddeeeeffff0000111122223333444455556666777788889999"

static const struct {
	const char *file;
	const char *init; /* the host's init's cgroup file as the reader sees it (NULL: none) */
	int rc;
	const char *uid, *ctr, *runtime;
	enum procctl_qos qos;
	int version;
} cases[] = {
	{"v2-systemd-burstable-containerd", NULL, 0, U1, C1, "containerd", PROCCTL_QOS_BURSTABLE, 2},
	{"v2-systemd-guaranteed-crio", NULL, 0, U2, C2, "crio", PROCCTL_QOS_GUARANTEED, 2},
	{"v2-systemd-besteffort-docker", NULL, 0, U1, C1, "docker", PROCCTL_QOS_BESTEFFORT, 2},
	{"v2-cgroupfs-burstable", NULL, 0, U1, C1, "", PROCCTL_QOS_BURSTABLE, 2},
	{"v1-cgroupfs-guaranteed", NULL, 0, U1, C2, "", PROCCTL_QOS_GUARANTEED, 1},
	{"v1-systemd-burstable", NULL, 0, U1, C1, "containerd", PROCCTL_QOS_BURSTABLE, 1},
	{"v2-namespaced-besteffort", "init-v2-depth4", 0, U1, C1, "containerd", PROCCTL_QOS_BESTEFFORT, 2},
	{"v2-kind-nested", NULL, 0, U1, C1, "containerd", PROCCTL_QOS_BURSTABLE, 2},
	{"v2-crio-conmon", NULL, 0, U1, "", "", PROCCTL_QOS_BURSTABLE, 2},
	{"v2-pod-only", NULL, 0, U1, "", "", PROCCTL_QOS_BESTEFFORT, 2},
	{"v2-static-pod", NULL, 0, "6c3b0d8f2e1a4b5c9d7e8f0a1b2c3d4e", C1, "", PROCCTL_QOS_BURSTABLE, 2},
	{"v2-nested-spoof", NULL, 0, U1, C1, "", PROCCTL_QOS_BURSTABLE, 2}, /* the outermost pod wins */
	{"v2-odd-container", NULL, 0, U1, "", "", PROCCTL_QOS_BURSTABLE, 2},
	{"v2-host-session", NULL, -ENOENT, "", "", "", PROCCTL_QOS_NONE, 0},
	{"v2-root", NULL, -ENOENT, "", "", "", PROCCTL_QOS_NONE, 0},
	{"v2-docker-no-pod", NULL, -ENOENT, "", "", "", PROCCTL_QOS_NONE, 0}, /* outside a pod nothing is read */
	{"v1-two-pods", NULL, -EINVAL, "", "", "", PROCCTL_QOS_NONE, 0},
	{"malformed", NULL, -EINVAL, "", "", "", PROCCTL_QOS_NONE, 0},
	/* Pod-like names outside the kubelet's hierarchy (a delegated subtree
	 * anyone may write), or not where the kubelet puts them: no pod. */
	{"spoof-v2-delegated-systemd", NULL, -ENOENT, "", "", "", PROCCTL_QOS_NONE, 0},
	{"spoof-v2-delegated-cgroupfs", NULL, -ENOENT, "", "", "", PROCCTL_QOS_NONE, 0},
	{"spoof-v2-namespaced-delegated", "init-v2-depth4", -ENOENT, "", "", "", PROCCTL_QOS_NONE, 0},
	{"spoof-v2-namespaced-overclimb", "init-v2-depth4", -ENOENT, "", "", "", PROCCTL_QOS_NONE, 0},
	{"spoof-v2-namespaced-wrong-depth", "init-v2-depth4", -ENOENT, "", "", "", PROCCTL_QOS_NONE, 0},
	{"spoof-v2-qos-mismatch", NULL, -ENOENT, "", "", "", PROCCTL_QOS_NONE, 0},
	{"spoof-v2-kubepods-not-at-root", NULL, -ENOENT, "", "", "", PROCCTL_QOS_NONE, 0},
	{"spoof-v2-between-levels", NULL, -ENOENT, "", "", "", PROCCTL_QOS_NONE, 0},
	/* A namespaced path read without knowing the namespace: no pod. */
	{"v2-namespaced-besteffort", NULL, -ENOENT, "", "", "", PROCCTL_QOS_NONE, 0},
	/* An init at the root changes nothing for absolute paths. */
	{"v1-systemd-burstable", "init-v1-root", 0, U1, C1, "containerd", PROCCTL_QOS_BURSTABLE, 1},
};

static size_t slurp(const char *name, char *buf, size_t cap)
{
	char path[512];
	size_t n;
	FILE *f;
	snprintf(path, sizeof path, "%s/cgroup/%s", FIXTURES, name);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

static void fixtures(void **state)
{
	static char buf[65536];
	size_t i;
	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		static char init[4096];
		struct procctl_podid id;
		size_t n = slurp(cases[i].file, buf, sizeof buf);
		size_t ni = cases[i].init ? slurp(cases[i].init, init, sizeof init) : 0;
		int rc = procctl_podid_parse(buf, n, cases[i].init ? init : NULL, ni, &id);
		print_message("%-34s %d %s %s %s %s v%d\n", cases[i].file, rc, id.pod_uid, id.container_id, id.runtime,
			      procctl_qos_name(id.qos), id.cgroup_version);
		assert_int_equal(rc, cases[i].rc);
		assert_string_equal(id.pod_uid, cases[i].uid);
		assert_string_equal(id.container_id, cases[i].ctr);
		assert_string_equal(id.runtime, cases[i].runtime);
		assert_int_equal(id.qos, cases[i].qos);
		assert_int_equal(id.cgroup_version, cases[i].version);
	}
}

/* Lines that are not "ID:controllers:/path", names longer than a file
 * name, and a file over 64 KiB are refused; a missing final newline is
 * fine. */
static void malformed(void **state)
{
	static char big[70000];
	struct procctl_podid id;
	const char *ok = "0::/kubepods/pod" U1 "/" C1;
	char longname[600];
	(void)state;
	assert_int_equal(procctl_podid_parse(ok, strlen(ok), NULL, 0, &id), 0);
	assert_string_equal(id.container_id, C1);
	assert_int_equal(procctl_podid_parse("0:/kubepods", 11, NULL, 0, &id), -EINVAL);
	assert_int_equal(procctl_podid_parse("0::kubepods/pod", 15, NULL, 0, &id), -EINVAL);
	assert_int_equal(procctl_podid_parse(":::/", 4, NULL, 0, &id), -EINVAL);
	assert_int_equal(procctl_podid_parse("0::", 3, NULL, 0, &id), -EINVAL);
	assert_int_equal(procctl_podid_parse("", 0, NULL, 0, &id), -ENOENT);
	snprintf(longname, sizeof longname, "0::/kubepods/pod%s/%0300d", U1, 7);
	assert_int_equal(procctl_podid_parse(longname, strlen(longname), NULL, 0, &id), -EINVAL);
	memset(big, '\n', sizeof big);
	assert_int_equal(procctl_podid_parse(big, sizeof big, NULL, 0, &id), -EINVAL);
	/* a UID one character off is not a UID */
	assert_int_equal(procctl_podid_parse("0::/kubepods/pod0b6d7a2e-5c1f-4c1a-9f3e-2d7b8c9a1e4", 51, NULL, 0, &id), -ENOENT);
	assert_int_equal(procctl_podid_parse("0::/kubepods/pod0b6d7a2e-5c1f-4c1a-9f3e_2d7b8c9a1e4g", 52, NULL, 0, &id), -ENOENT);
}

/* The hierarchies a file names, as the log says them. */
static void hierarchies(void **state)
{
	const char *hybrid = "12:memory:/\n11:cpu,cpuacct:/x\n1:name=systemd:/init.scope\n0::/init.scope\n";
	char buf[128];
	(void)state;
	assert_int_equal(procctl_podid_hierarchies(hybrid, strlen(hybrid), buf, sizeof buf), 4);
	assert_string_equal(buf, "v1:memory v1:cpu,cpuacct v1:name=systemd v2");
	assert_int_equal(procctl_podid_hierarchies("0::/", 4, buf, sizeof buf), 1);
	assert_string_equal(buf, "v2");
	assert_int_equal(procctl_podid_hierarchies("", 0, buf, sizeof buf), 0);
	assert_string_equal(buf, "");
	assert_int_equal(procctl_podid_hierarchies(hybrid, strlen(hybrid), buf, 12), 4); /* cut short, terminated */
	assert_string_equal(buf, "v1:memory v");
}

/* A start time from a stat line whose comm holds ") " and digits. */
static void start_time(void **state)
{
	static char buf[4096];
	size_t n = slurp("stat-hostile-comm", buf, sizeof buf);
	uint64_t st = 0;
	(void)state;
	assert_int_equal(procstat_parse_start(buf, n, &st), 0);
	assert_int_equal(st, 98765);
	assert_int_equal(procstat_parse_start("1 (x) S 1 2", 11, &st), -EINVAL);
	assert_int_equal(procstat_parse_start("no paren", 8, &st), -EINVAL);
	assert_int_equal(procstat_start(NULL, getpid(), &st), 0);
	assert_true(st > 0);
	assert_int_equal(procstat_start("/nonexistent", 1, &st), -ESRCH);
}

/* The image of a process: the same while it runs, another after an exec,
 * none from a line that stops short or shows no addresses. */
static void image_of_a_process(void **state)
{
	static const char zeros[] = "7 (sleep) S 1 7 7 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 1 1 1 0 0 0 0 0 0 0 "
				    "0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
	uint64_t a = 0, b = 0, start = 0;
	pid_t pid;
	int p[2], i;
	char c;
	(void)state;
	assert_int_equal(procstat_parse_image(zeros, sizeof zeros - 1, &a), 0);
	assert_int_equal(a, 0); /* no addresses (no ptrace access): nothing to bind to */
	assert_int_equal(procstat_parse_image("1 (x) S 1 2", 11, &a), -EINVAL);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[1]);
		if (read(p[0], &c, 1) == 1)
			execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	assert_int_equal(procstat_ident(NULL, pid, &start, &a), 0);
	assert_true(a != 0);
	assert_int_equal(procstat_ident(NULL, pid, &start, &b), 0);
	assert_true(a == b);
	assert_int_equal(write(p[1], "x", 1), 1);
	close(p[1]);
	/* until the exec (5 s): then another image (while the exec replaces
	 * the old one, the addresses read 0: not an image yet) */
	for (i = 0; i < 5000 && (a == b || b == 0); i++) {
		usleep(1000);
		assert_int_equal(procstat_ident(NULL, pid, &start, &b), 0);
	}
	assert_true(a != b && b != 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* procctl_podid_read on a proc root of our own. */
static void reader(void **state)
{
	char root[] = "/tmp/procctl-proc.XXXXXX", path[256], cmd[300];
	const char *line = "0::/kubepods/besteffort/pod" U1 "/" C2 "\n";
	static char big[70000];
	struct procctl_podid id;
	int fd;
	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof path, "%s/4242", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof path, "%s/4242/cgroup", root);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(write(fd, line, strlen(line)) == (ssize_t)strlen(line));
	close(fd);
	assert_int_equal(procctl_podid_read(root, 4242, &id), 0);
	assert_string_equal(id.pod_uid, U1);
	assert_string_equal(id.container_id, C2);
	assert_int_equal(id.qos, PROCCTL_QOS_BESTEFFORT);
	assert_int_equal(procctl_podid_read(root, 4243, &id), -ESRCH);
	fd = open(path, O_WRONLY | O_TRUNC);
	memset(big, 'x', sizeof big);
	assert_true(write(fd, big, sizeof big) == (ssize_t)sizeof big);
	close(fd);
	assert_int_equal(procctl_podid_read(root, 4242, &id), -EIO);
	/* the real thing answers too: this test is a host process or a pod's */
	fd = procctl_podid_read(NULL, getpid(), &id);
	assert_true(fd == 0 || fd == -ENOENT);
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fixtures),
		cmocka_unit_test(malformed),
		cmocka_unit_test(hierarchies),
		cmocka_unit_test(start_time),
		cmocka_unit_test(image_of_a_process),
		cmocka_unit_test(reader),
	};
	return TH_RUN(tests);
}
