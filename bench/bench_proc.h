/* SPDX-License-Identifier: Apache-2.0 */
/* bench_proc.h - what the benchmarks read of a process they started
 * (procctl-node): /proc/<pid>/status fields, CPU time, and its threads'
 * context switches. Include after defining _GNU_SOURCE. */
#ifndef PROCCTL_BENCH_PROC_H
#define PROCCTL_BENCH_PROC_H

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* argv as a child in a process group of its own (stopped or continued
 * whole with kill(-pid, ...)), its input, output and errors in, out and
 * err (-1: /dev/null), ended (SIGTERM) with this process: its pid, or -1. */
static inline pid_t bench_spawn(char *const argv[], int in, int out, int err)
{
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(in >= 0 ? in : null, 0);
		dup2(out >= 0 ? out : null, 1);
		dup2(err >= 0 ? err : null, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* procctl-node (at path) serving consumer, its socket (dir/node.sock),
 * locks and state in dir, no HTTP: its pid (bench_spawn's), or -1; its
 * gRPC target, "unix:dir/node.sock", in target. */
static inline pid_t bench_node_spawn(const char *path, const char *dir, const char *consumer, char *target,
				     size_t len)
{
	char locks[PATH_MAX], state[PATH_MAX];
	snprintf(target, len, "unix:%s/node.sock", dir);
	snprintf(locks, sizeof locks, "%s/locks", dir);
	snprintf(state, sizeof state, "%s/state", dir);
	{
		char *argv[] = {(char *)path, "--grpc-listen", target, "--lock-dir", locks, "--state-dir", state,
				"--consumers", (char *)consumer, "--http-listen", "", NULL};
		return bench_spawn(argv, -1, -1, -1);
	}
}

/* A farm (test/farm.c) of procs processes of regions regions of consumer
 * each, acking what they find; busy_us > 0: each a busy main loop
 * (--busy). It lives until in is closed and says "ready" on out. */
struct bench_farm {
	pid_t pid;
	int in, out;
};

/* Start it from the farm program at path: 0, or -1. */
static inline int bench_farm_start(struct bench_farm *f, const char *path, const char *consumer, long procs,
				   int regions, int busy_us)
{
	char p[24], r[16], b[16];
	int in[2], out[2];
	snprintf(p, sizeof p, "%ld", procs);
	snprintf(r, sizeof r, "%d", regions);
	snprintf(b, sizeof b, "%d", busy_us);
	if (pipe2(in, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	{
		char *argv[] = {(char *)path, "--procs", p, "--regions", r, "--consumer", (char *)consumer, "--ack",
				busy_us > 0 ? "--busy" : NULL, b, NULL};
		f->pid = bench_spawn(argv, in[0], out[1], -1);
	}
	close(in[0]);
	close(out[1]);
	f->in = in[1];
	f->out = out[0];
	return f->pid < 0 ? -1 : 0;
}

/* 0 once the farm says ready (every process made its regions), or -1. */
static inline int bench_farm_ready(struct bench_farm *f)
{
	char buf[64];
	ssize_t n = read(f->out, buf, sizeof buf - 1);
	return n > 0 && !strncmp(buf, "ready ", 6) ? 0 : -1;
}

/* End it (it ends its processes) and wait for it. */
static inline void bench_farm_stop(struct bench_farm *f)
{
	close(f->in);
	close(f->out);
	if (f->pid > 0) {
		kill(-f->pid, SIGCONT); /* a stopped farm hears its input's end */
		waitpid(f->pid, NULL, 0);
	}
	f->pid = 0;
}

/* The kB figure of key ("VmRSS", "RssAnon") in pid's status, or -1. */
static inline long bench_status_kib(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t k = strlen(key);
	long kib = -1;
	FILE *f;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, key, k) && line[k] == ':' && sscanf(line + k + 1, "%ld", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* CPU seconds (user and system) of pid, or of its thread tid (not 0). */
static inline double bench_cpu_s(pid_t pid, pid_t tid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;
	size_t n;
	if (tid)
		snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	else
		snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	if (!(p = strrchr(buf, ')')) || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* CPU seconds of pid to the nanosecond (its CPU-time clock: every thread,
 * those ended too), or -1. */
static inline double bench_cpu_clock_s(pid_t pid)
{
	struct timespec ts;
	clockid_t id;
	if (clock_getcpuclockid(pid, &id) || clock_gettime(id, &ts))
		return -1;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Context switches by thread name (threads of one name added up). */
struct bench_threads {
	int n;
	struct {
		char name[32];
		unsigned long long switches;
	} t[64];
};

static inline void bench_threads_add(struct bench_threads *bt, const char *name, unsigned long long v)
{
	int i;
	for (i = 0; i < bt->n && strcmp(bt->t[i].name, name); i++)
		;
	if (i == bt->n && bt->n < 64)
		snprintf(bt->t[bt->n++].name, sizeof bt->t[0].name, "%s", name);
	if (i < bt->n)
		bt->t[i].switches += v;
}

/* The wakeups of every thread of pid: its voluntary context switches
 * (each a sleep that ended; a preemption, nonvoluntary, is the CPU's
 * contention, not the thread's), and the thread named name's id in
 * *named (0: none); by name into *bt when it is not NULL. */
static inline unsigned long long bench_switches(pid_t pid, const char *name, pid_t *named, struct bench_threads *bt)
{
	unsigned long long all = 0, mine;
	char path[320], line[256];
	struct dirent *de;
	DIR *d;
	*named = 0;
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return 0;
	while ((de = readdir(d))) {
		char comm[32] = "";
		unsigned long v;
		FILE *f;
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%s/status", (int)pid, de->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		mine = 0;
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "voluntary_ctxt_switches: %lu", &v) == 1)
				mine += v;
			else
				sscanf(line, "Name: %31s", comm);
		fclose(f);
		all += mine;
		if (bt)
			bench_threads_add(bt, comm, mine);
		if (!strcmp(comm, name))
			*named = (pid_t)atoi(de->d_name);
	}
	closedir(d);
	return all;
}

#endif
