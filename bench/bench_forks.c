/* SPDX-License-Identifier: Apache-2.0 */
/* bench_forks - what other processes' churn costs an idle procctl-node
 * (issue 45): the daemon (its hello probe on) serving a consumer no
 * process has, while this process forks and execs /bin/true at RATE
 * a second (0, 5, 20, 100), BENCH_FORK_SECONDS (10) at each; the hello
 * probe hears every exec, mapping, fork and exit on the host. Figures:
 *   node_loop_wakeups_forks_RATE   the daemon's main thread's wakeups
 *       (voluntary context switches) a second, against what its leases
 *       need of the agent: 4 heartbeats a lease (10 s), 0.4 a second (on
 *       a thread of their own: an idle loop needs none);
 *   node_wakeups_forks_RATE        the same of all its threads;
 *   node_loop_wakeups_per_fork_RATE  the main thread's wakeups above the
 *       0-fork run, per fork, against 1 (a wake for every fork's records).
 * stderr: the wakeups by thread at each rate. In a mkdtemp directory
 * under /tmp (the daemon's socket, locks and state), removed at the end;
 * the daemon ended with SIGTERM.
 * Usage: bench_forks, as root (PROCCTL_NODE_PATH is built in). */
#define _GNU_SOURCE 1
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_proc.h"

#define LEASE_S 10.0

static const int rates[] = {0, 5, 20, 100};
#define NRATES (int)(sizeof rates / sizeof rates[0])

static char dir[64];
static pid_t node_pid;

static _Noreturn void die(const char *what);

static void cleanup(void)
{
	char cmd[128];
	if (node_pid > 0) {
		kill(node_pid, SIGTERM);
		waitpid(node_pid, NULL, 0);
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (dir[0] && system(cmd) != 0)
		fprintf(stderr, "bench_forks: could not remove %s\n", dir);
}

static _Noreturn void die(const char *what)
{
	fprintf(stderr, "bench_forks: %s\n", what);
	cleanup();
	exit(1);
}

/* Reap the children but the daemon: one when block, else those ended. */
static int reap(int block)
{
	int n = 0;
	pid_t pid;
	while ((pid = waitpid(-1, NULL, block ? 0 : WNOHANG)) > 0) {
		if (pid == node_pid)
			die("the daemon ended");
		n++;
		if (block)
			break;
	}
	return n;
}

/* /bin/true started rate times a second for seconds (0: a sleep), each
 * reaped as it ends. */
static void churn(int rate, int seconds)
{
	struct timespec at;
	int64_t end = bench_now_ns() + (int64_t)seconds * 1000000000;
	int running = 0;
	if (!rate) {
		sleep((unsigned)seconds);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &at);
	while (bench_now_ns() < end) {
		char *argv[] = {"/bin/true", NULL};
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			execv(argv[0], argv);
			_exit(127);
		}
		running += 1 - reap(0);
		at.tv_nsec += 1000000000 / rate;
		if (at.tv_nsec >= 1000000000) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL))
			;
	}
	while (running > 0)
		running -= reap(1);
}

/* The daemon's main thread's wakeups, and all its threads', a second
 * over seconds of churn at rate; by thread to stderr. */
static void measure(int rate, int seconds, double *loop, double *all)
{
	struct bench_threads t0, t1;
	unsigned long long a0, a1;
	pid_t tid;
	int i, k;
	memset(&t0, 0, sizeof t0);
	memset(&t1, 0, sizeof t1);
	a0 = bench_switches(node_pid, "", &tid, &t0);
	churn(rate, seconds);
	a1 = bench_switches(node_pid, "", &tid, &t1);
	*all = (double)(a1 - a0) / seconds;
	*loop = -1;
	fprintf(stderr, "bench_forks: %d forks/s, wakeups/s by thread:", rate);
	for (i = 0; i < t1.n; i++) {
		double d;
		for (k = 0; k < t0.n && strcmp(t0.t[k].name, t1.t[i].name); k++)
			;
		d = (double)(t1.t[i].switches - (k < t0.n ? t0.t[k].switches : 0)) / seconds;
		if (!strcmp(t1.t[i].name, "procctl-node"))
			*loop = d;
		fprintf(stderr, " %s %.2f", t1.t[i].name, d);
	}
	fprintf(stderr, "\n");
	if (*loop < 0)
		die("no thread named procctl-node");
}

int main(void)
{
	const char *s = getenv("BENCH_FORK_SECONDS");
	int seconds = s && atoi(s) > 0 ? atoi(s) : 10, i;
	double loop[NRATES], all[NRATES];
	char target[96], consumer[32];
	struct stat sb;

	snprintf(dir, sizeof dir, "/tmp/bench_forks.XXXXXX");
	if (!mkdtemp(dir)) {
		dir[0] = 0;
		die("mkdtemp");
	}
	snprintf(consumer, sizeof consumer, "bf%d", (int)getpid());
	if ((node_pid = bench_node_spawn(PROCCTL_NODE_PATH, dir, consumer, target, sizeof target)) < 0)
		die("fork");
	for (i = 0; i < 100 && stat(target + 5, &sb) < 0; i++) /* its socket, "unix:" after */
		usleep(100000);
	if (i == 100)
		die("the daemon did not listen within 10 s");
	sleep(3); /* its first scan and the probe's first batches */
	for (i = 0; i < NRATES; i++)
		measure(rates[i], seconds, &loop[i], &all[i]);
	cleanup();
	for (i = 0; i < NRATES; i++) {
		char name[64];
		snprintf(name, sizeof name, "node_loop_wakeups_forks_%d", rates[i]);
		bench_report(name, "1/s", loop[i], 4.0 / LEASE_S);
		snprintf(name, sizeof name, "node_wakeups_forks_%d", rates[i]);
		bench_report(name, "1/s", all[i], 4.0 / LEASE_S);
		if (rates[i]) {
			snprintf(name, sizeof name, "node_loop_wakeups_per_fork_%d", rates[i]);
			bench_report(name, "1/fork", (loop[i] - loop[0]) / rates[i], 1.0);
		}
	}
	return 0;
}
