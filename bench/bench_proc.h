/* SPDX-License-Identifier: Apache-2.0 */
/* bench_proc.h - what the benchmarks read of a process they started
 * (procctl-node): /proc/<pid>/status fields, CPU time, and its threads'
 * context switches. Include after defining _GNU_SOURCE. */
#ifndef PROCCTL_BENCH_PROC_H
#define PROCCTL_BENCH_PROC_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

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
