/* SPDX-License-Identifier: Apache-2.0 */
/* bench.h - what every benchmark program shares: the clock, the median,
 * the JSON line each figure is reported as (with its floor and the ratio
 * to it), and the cross-process futex ping-pong several floors are made
 * of, the floor of waking many processes that answer, and that of many
 * processes' deaths told. Include after defining _GNU_SOURCE
 * (sched_setaffinity). */
#ifndef PROCCTL_BENCH_H
#define PROCCTL_BENCH_H

#include <linux/futex.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline int64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A uprobe perf event (its PMU's type from sysfs) on path at file offset
 * off, for pid and cpu as perf_event_open takes them, sampling the tid
 * of each hit: its fd, or -1 with errno. */
static inline int bench_uprobe(int type, const char *path, uint64_t off, pid_t pid, int cpu, int disabled)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = (uint32_t)type;
	a.config1 = (uint64_t)(uintptr_t)path;
	a.config2 = off;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_TID;
	a.disabled = (uint64_t)!!disabled;
	return (int)syscall(SYS_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts v. */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
	return v[n / 2];
}

static inline void bench_report(const char *name, const char *unit, double value, double floor)
{
	printf("{\"name\": \"%s\", \"value\": %.3f, \"unit\": \"%s\", \"floor\": %.3f, \"ratio\": %.3f}\n", name, value,
	       unit, floor, value / floor);
	fflush(stdout);
}

/* A ping-pong between two processes over a shared word pair (in a
 * MAP_SHARED mapping made before the fork). */
struct bench_pingpong {
	uint32_t there, back;
};

static inline long bench_futex(uint32_t *w, int op, uint32_t v)
{
	return syscall(SYS_futex, w, op, v, NULL, NULL, 0);
}

/* The other side, in the forked child: answer each ping with a pong. */
static inline void bench_ponger(struct bench_pingpong *pp)
{
	uint32_t seen = 0;
	for (;;) {
		while (__atomic_load_n(&pp->there, __ATOMIC_ACQUIRE) == seen)
			bench_futex(&pp->there, FUTEX_WAIT, seen);
		seen = __atomic_load_n(&pp->there, __ATOMIC_ACQUIRE);
		__atomic_add_fetch(&pp->back, 1, __ATOMIC_ACQ_REL);
		bench_futex(&pp->back, FUTEX_WAKE, 1);
	}
}

static inline void bench_round_trip(struct bench_pingpong *pp)
{
	uint32_t back = __atomic_load_n(&pp->back, __ATOMIC_ACQUIRE);
	__atomic_add_fetch(&pp->there, 1, __ATOMIC_ACQ_REL);
	bench_futex(&pp->there, FUTEX_WAKE, 1);
	while (__atomic_load_n(&pp->back, __ATOMIC_ACQUIRE) == back)
		bench_futex(&pp->back, FUTEX_WAIT, back);
}

/* The median in ns of `trips` round trips in a row, over `rounds` rounds
 * (at most 1001) each after a sleep of idle_us (as long as the other side
 * is idle between two turns of the figure this floor is for). apart: the two processes
 * on different CPUs, as a waker that goes on running and the process it
 * woke are; else where the scheduler puts them, which is mostly one CPU
 * taking turns (a lower floor on VMs, where waking another CPU is slow). */
static inline double bench_pingpong_floor(struct bench_pingpong *pp, pid_t pong, int apart, int trips, int rounds, int idle_us)
{
	static double f[1001];
	cpu_set_t all, one;
	int i, k;
	if (rounds > 1001)
		rounds = 1001;
	sched_getaffinity(0, sizeof all, &all);
	if (apart) {
		CPU_ZERO(&one);
		CPU_SET(0, &one);
		sched_setaffinity(0, sizeof one, &one);
		CPU_ZERO(&one);
		CPU_SET(1, &one);
		if (sched_setaffinity(pong, sizeof one, &one) < 0)
			fprintf(stderr, "bench: no second CPU: a floor \"apart\" is one CPU's\n");
	} else {
		sched_setaffinity(pong, sizeof all, &all);
	}
	for (i = 0; i < rounds; i++) {
		int64_t t0;
		if (idle_us)
			usleep((useconds_t)idle_us);
		t0 = bench_now_ns();
		for (k = 0; k < trips; k++)
			bench_round_trip(pp);
		f[i] = (double)(bench_now_ns() - t0);
	}
	sched_setaffinity(0, sizeof all, &all);
	return bench_median(f, rounds);
}

/* One of bench_wake_floor's processes: asleep on its word until it holds
 * a new round number, then answers; UINT32_MAX ends it. */
static inline void bench_answerer(uint32_t *mine, uint32_t *asleep, uint32_t *answered, int answers)
{
	uint32_t seen = 0, v;
	__atomic_add_fetch(asleep, 1, __ATOMIC_RELEASE);
	for (;;) {
		while ((v = __atomic_load_n(mine, __ATOMIC_ACQUIRE)) == seen)
			bench_futex(mine, FUTEX_WAIT, seen);
		if (v == UINT32_MAX)
			_exit(0);
		seen = v;
		__atomic_add_fetch(answered, (uint32_t)answers, __ATOMIC_RELEASE);
		bench_futex(answered, FUTEX_WAKE, 1);
	}
}

/* The floor with the hand-offs the design requires: procs processes
 * asleep in FUTEX_WAIT, each woken (as a region's write wakes its
 * process), each answering (its acks) with one FUTEX_WAKE of this one
 * for its `answers`, and after(arg), when not NULL, once the wakes are out
 * (the reads that follow them): the ms from the first wake to the last
 * answer and after's return (median of 3 rounds), or -1 (out of memory,
 * no fork). The processes run on the same cores, as real consumers do,
 * and stay between rounds (none exits while one is timed). */
static inline double bench_wake_floor(long procs, int answers, void (*after)(void *), void *arg)
{
	/* [0]: answered, [16]: asleep; then one word a process, 64 bytes apart */
	size_t len = (size_t)(procs + 2) * 64;
	uint32_t *w = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t *kids = calloc((size_t)procs, sizeof *kids);
	uint32_t want = (uint32_t)(procs * answers), got, run;
	double runs[3] = {-1, -1, -1};
	long i, n;
	if (w == MAP_FAILED || !kids) {
		if (w != MAP_FAILED)
			munmap(w, len);
		free(kids);
		return -1;
	}
	memset(w, 0, len);
	for (n = 0; n < procs && (kids[n] = fork()) > 0; n++)
		;
	if (n < procs && kids[n] == 0)
		bench_answerer(&w[(n + 2) * 16], &w[16], &w[0], answers);
	while (n == procs && __atomic_load_n(&w[16], __ATOMIC_ACQUIRE) < procs)
		usleep(1000);
	for (run = 1; run <= 3 && n == procs; run++) {
		int64_t t0;
		usleep(100000); /* all asleep */
		__atomic_store_n(&w[0], 0, __ATOMIC_RELEASE);
		t0 = bench_now_ns();
		for (i = 0; i < procs; i++) {
			__atomic_store_n(&w[(i + 2) * 16], run, __ATOMIC_RELEASE);
			bench_futex(&w[(i + 2) * 16], FUTEX_WAKE, 1);
		}
		if (after)
			after(arg);
		while ((got = __atomic_load_n(&w[0], __ATOMIC_ACQUIRE)) < want)
			bench_futex(&w[0], FUTEX_WAIT, got);
		runs[run - 1] = (double)(bench_now_ns() - t0) / 1e6;
	}
	for (i = 0; i < n; i++) {
		__atomic_store_n(&w[(i + 2) * 16], UINT32_MAX, __ATOMIC_RELEASE);
		bench_futex(&w[(i + 2) * 16], FUTEX_WAKE, 1);
	}
	for (i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
	munmap(w, len);
	free(kids);
	return n == procs ? bench_median(runs, 3) : -1;
}

/* One round of bench_exit_floor: ms, or -1. */
static inline double bench_exit_round(long procs, pid_t *kids, int *fds, int ep)
{
	struct epoll_event ev[64];
	double ms = -1;
	long n, told = 0;
	pid_t me = getpid();
	int64_t t0;
	for (n = 0; n < procs && (kids[n] = fork()) >= 0; n++) {
		if (kids[n] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL); /* out of the terminal's group: a bench killed takes them */
			if (getppid() != me)
				_exit(0);
			setpgid(0, kids[0] ? kids[0] : 0);
			for (;;)
				pause();
		}
		setpgid(kids[n], kids[0]); /* either side may be first */
		fds[n] = (int)syscall(SYS_pidfd_open, kids[n], 0);
		ev[0].events = EPOLLIN | EPOLLONESHOT;
		ev[0].data.u64 = 0;
		if (fds[n] < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fds[n], ev) < 0) {
			kill(kids[n++], SIGKILL);
			break;
		}
	}
	t0 = bench_now_ns();
	if (n)
		kill(-kids[0], SIGKILL);
	while (n == procs && told < procs) {
		int k = epoll_wait(ep, ev, 64, 10000);
		if (k <= 0)
			break;
		told += k;
	}
	if (n == procs && told == procs)
		ms = (double)(bench_now_ns() - t0) / 1e6;
	while (n-- > 0) {
		waitpid(kids[n], NULL, 0);
		if (fds[n] >= 0)
			close(fds[n]);
	}
	return ms;
}

/* The floor of many processes' deaths told: procs bare processes asleep,
 * in one process group, their pidfds in one epoll, all SIGKILLed at once
 * (one kill of the group): the ms from the kill until epoll has said
 * every pidfd readable (median of 3 rounds, new processes each), or -1
 * (no fork, no pidfd). Bare: a real process maps more, and its exit
 * unmaps more. */
static inline double bench_exit_floor(long procs)
{
	pid_t *kids = calloc((size_t)procs, sizeof *kids);
	int *fds = calloc((size_t)procs, sizeof *fds);
	int ep = epoll_create1(EPOLL_CLOEXEC), i;
	double runs[3] = {-1, -1, -1};
	for (i = 0; i < 3 && kids && fds && ep >= 0; i++) {
		memset(kids, 0, (size_t)procs * sizeof *kids);
		if ((runs[i] = bench_exit_round(procs, kids, fds, ep)) < 0)
			break;
	}
	if (ep >= 0)
		close(ep);
	free(kids);
	free(fds);
	return i == 3 ? bench_median(runs, 3) : -1;
}

#endif
