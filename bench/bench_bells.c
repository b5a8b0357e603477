/* SPDX-License-Identifier: Apache-2.0 */
/* bench_bells - a registry's ack doorbells (PROCCTL_REGISTRY_DOORBELLS)
 * with many regions, in both of its ways of waiting: the io_uring (where
 * the kernel has futex waits in it) and the watcher threads (where it has
 * not, or a seccomp policy refuses io_uring: the chart's pod on containerd
 * 2 and Docker 25). For N of 1,000 and 8,000 (or the arguments, up to the
 * watchers' 8,128), N regions in N/4 farm processes (test/farm.c, 4
 * regions each, acking what they find), one registry at a time:
 *   bells_publish_ring_N, _threads_N  ms from the first of N 4 KiB writes
 *                     (one a region, on the loop's thread, in the reverse
 *                     of attach order: a farm process sleeps on its first
 *                     region, and finds the others written) until every
 *                     region's DOORBELL event came (its process acked),
 *                     median of 5 rounds, against N/4 processes woken
 *                     and answering with a FUTEX_WAKE each (the hand-offs
 *                     the design requires; bench_wake_floor); the rounds
 *                     2.2 s apart (threads hear a ring a wake, the rest
 *                     come by their slices' sweeps: 20 ms after a quiet
 *                     slice's wake, then at most once a second, so a
 *                     round sooner after the last waits for that);
 *   bells_attach_threads_vs_ring_N  ms from registry_new until all N are
 *                     attached (ATTACHED) in threads mode, against the
 *                     same with the ring in the same run: what the
 *                     watchers' collecting costs an attach storm;
 *   bells_exit_ring_N, _threads_N  ms from one SIGKILL of every farm
 *                     process (their group) until every region's DETACHED
 *                     event came (each doorbell wait ended before its
 *                     mapping goes), against N/4 bare processes killed
 *                     the same way and their pidfds told readable in one
 *                     epoll (bench_exit_floor).
 * Each registry has a farm of its own (the exit storm ends it).
 * Where the kernel has no io_uring futex waits, the ring figures are the
 * threads' (said on stderr). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "procctl_agent.h"

#define PER_PROCESS 4
#define PAYLOAD 4096
#define ROUNDS 5
#define DEADLINE_NS 60000000000ll
#define QUIET_NS 2200000000ll /* between rounds: a publish is an event, not a stream (past its slices' last sweeps) */

static pid_t farm_pid;
static int farm_in = -1; /* the farm's stdin: it ends when this closes */

static _Noreturn void die(const char *what)
{
	fprintf(stderr, "bench_bells: %s\n", what);
	if (farm_pid > 0)
		kill(farm_pid, SIGTERM);
	exit(1);
}

/* The farm: n regions, PER_PROCESS a process; returns once they exist. */
static void farm_start(long n, const char *consumer)
{
	char procs[24], line[64];
	int out[2], in[2];
	FILE *f;
	snprintf(procs, sizeof procs, "%ld", n / PER_PROCESS);
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(in, O_CLOEXEC) < 0 || (farm_pid = fork()) < 0)
		die("fork");
	if (farm_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		setpgid(0, 0); /* its processes in its group: one kill ends them all */
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(FARM_PATH, "farm", "--procs", procs, "--regions", "4", "--consumer", consumer, "--ack",
		      (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	close(in[0]);
	farm_in = in[1];
	if (!(f = fdopen(out[0], "r")) || !fgets(line, sizeof line, f) || strncmp(line, "ready ", 6))
		die("the farm did not start");
	fclose(f);
}

/* Every farm process SIGKILLed at once. */
static void farm_kill(void)
{
	kill(-farm_pid, SIGKILL);
	waitpid(farm_pid, NULL, 0);
	close(farm_in);
	farm_pid = 0;
}

/* What the events tell: the clients by the index their data holds (1-based). */
struct seen {
	procctl_client_t **c;
	unsigned *rang; /* the round its doorbell last rang in */
	long n, attached, heard, detached;
	unsigned round;
};

static void on_event(const struct procctl_event *ev, void *arg)
{
	struct seen *s = arg;
	uintptr_t i;
	if (ev->type == PROCCTL_EV_ATTACHED && s->attached < s->n) {
		s->c[s->attached++] = ev->client;
		procctl_client_set_data(ev->client, (void *)(uintptr_t)s->attached);
	} else if (ev->type == PROCCTL_EV_DOORBELL && (i = (uintptr_t)procctl_client_data(ev->client)) &&
		   s->rang[i - 1] != s->round) {
		s->rang[i - 1] = s->round;
		s->heard++;
	} else if (ev->type == PROCCTL_EV_DETACHED) {
		s->detached++;
	}
}

/* Dispatch until *count reaches want: 0, or -1 past end. */
static int dispatch_until(procctl_registry_t *r, const long *count, long want, int64_t end)
{
	while (*count < want) {
		struct pollfd p = {procctl_registry_fd(r), POLLIN, 0};
		if (bench_now_ns() > end)
			return -1;
		poll(&p, 1, 100);
		if (procctl_registry_dispatch(r) < 0)
			return -1;
	}
	return 0;
}

struct figures {
	double attach_ms, publish_ms, exit_ms;
};

/* The median of ROUNDS publishes to every region, in ms. */
static double publish(procctl_registry_t *r, struct seen *s)
{
	static unsigned char payload[PAYLOAD];
	double rounds[ROUNDS];
	const long never = 0;
	unsigned round;
	int64_t t0;
	long i;
	for (round = 1; round <= ROUNDS; round++) {
		s->round = 0; /* the last round's sweeps, over by then, count for none */
		dispatch_until(r, &never, 1, bench_now_ns() + QUIET_NS);
		memset(payload, (int)round, sizeof payload);
		s->round = round;
		s->heard = 0;
		t0 = bench_now_ns();
		for (i = s->n - 1; i >= 0; i--) /* a process's first region last: it sleeps on that one */
			if (procctl_client_write(s->c[i], payload, sizeof payload) < 0)
				die("procctl_client_write");
		if (dispatch_until(r, &s->heard, s->n, t0 + DEADLINE_NS) < 0) {
			fprintf(stderr, "bench_bells: %ld of %ld doorbells heard\n", s->heard, s->n);
			die("a publish was not heard from every region");
		}
		rounds[round - 1] = (double)(bench_now_ns() - t0) / 1e6;
	}
	return bench_median(rounds, ROUNDS);
}

/* Every farm process killed at once: ms until every region detached. */
static double exit_storm(procctl_registry_t *r, struct seen *s)
{
	int64_t t0 = bench_now_ns();
	farm_kill();
	if (dispatch_until(r, &s->detached, s->n, t0 + DEADLINE_NS) < 0) {
		fprintf(stderr, "bench_bells: %ld of %ld detached\n", s->detached, s->n);
		die("not every region detached");
	}
	return (double)(bench_now_ns() - t0) / 1e6;
}

/* One registry on a farm of n regions of its own. */
static void run(long n, const char *consumer, const char *lock_dir, unsigned flags, struct figures *f)
{
	struct procctl_registry_opts o;
	struct procctl_registry_stats st;
	struct seen s;
	procctl_registry_t *r;
	int64_t t0;

	memset(&s, 0, sizeof s);
	s.n = n;
	s.c = calloc((size_t)n, sizeof *s.c);
	s.rang = calloc((size_t)n, sizeof *s.rang);
	if (!s.c || !s.rang)
		die("out of memory");
	farm_start(n, consumer);
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.consumer = consumer;
	o.lock_dir = lock_dir;
	o.rescan_ns = 3600000000000ull;
	o.on_event = on_event;
	o.arg = &s;
	o.flags = PROCCTL_REGISTRY_DOORBELLS | flags;
	t0 = bench_now_ns();
	if (!(r = procctl_registry_new(&o)))
		die("procctl_registry_new");
	if (dispatch_until(r, &s.attached, n, bench_now_ns() + DEADLINE_NS) < 0)
		{ fprintf(stderr, "bench_bells: %ld of %ld attached\n", s.attached, n); die("not every region attached"); }
	f->attach_ms = (double)(bench_now_ns() - t0) / 1e6;
	f->publish_ms = publish(r, &s);
	procctl_registry_stats(r, &st, sizeof st);
	fprintf(stderr, "bench_bells: %ld regions%s: %llu rings heard, %llu muted\n", n,
		(flags & PROCCTL_REGISTRY_BELL_THREADS) ? " (threads)" : "", (unsigned long long)st.doorbells,
		(unsigned long long)st.doorbells_muted);
	f->exit_ms = exit_storm(r, &s);
	procctl_registry_close(r, 0);
	free(s.c);
	free(s.rang);
}

static void report(const char *what, const char *how, long n, double ms, double floor_ms)
{
	char name[64];
	snprintf(name, sizeof name, "bells_%s_%s_%ld", what, how, n);
	bench_report(name, "ms", ms, floor_ms);
}

static void bench_n(long n)
{
	char consumer[32], lock_dir[] = "/tmp/bench_bells.XXXXXX", rm[64];
	struct figures ring, threads;
	double wake_ms, exit_ms;
	snprintf(consumer, sizeof consumer, "bbells%d-%ld", (int)getpid(), n);
	if (!mkdtemp(lock_dir))
		die("mkdtemp");
	if ((wake_ms = bench_wake_floor(n / PER_PROCESS, PER_PROCESS, NULL, NULL)) < 0 ||
	    (exit_ms = bench_exit_floor(n / PER_PROCESS)) < 0)
		die("the floors' processes");
	run(n, consumer, lock_dir, 0, &ring);
	run(n, consumer, lock_dir, PROCCTL_REGISTRY_BELL_THREADS, &threads);
	report("publish", "ring", n, ring.publish_ms, wake_ms);
	report("publish", "threads", n, threads.publish_ms, wake_ms);
	report("attach", "threads_vs_ring", n, threads.attach_ms, ring.attach_ms);
	report("exit", "ring", n, ring.exit_ms, exit_ms);
	report("exit", "threads", n, threads.exit_ms, exit_ms);
	snprintf(rm, sizeof rm, "rm -rf %s", lock_dir);
	if (system(rm) != 0)
		die("rm");
}

/* Warnings and errors to stderr (BENCH_LOG=debug: everything). */
static void log_line(enum procctl_log_level level, const char *event, const char *fields, void *arg)
{
	if (level <= PROCCTL_LOG_WARN || arg)
		fprintf(stderr, "bench_bells: %s %s\n", event, fields);
}

int main(int argc, char **argv)
{
	static const long def[] = {1000, 8000};
	struct rlimit rl;
	int i;
	/* Two fds a process, and the farm's pipes. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	procctl_set_log(log_line, getenv("BENCH_LOG") ? (void *)1 : NULL);
	if (argc == 1)
		for (i = 0; i < 2; i++)
			bench_n(def[i]);
	for (i = 1; i < argc; i++) {
		char *end;
		long n = strtol(argv[i], &end, 10);
		if (*end || n < PER_PROCESS || n > 8128 || n % PER_PROCESS) {
			fprintf(stderr, "usage: bench_bells [N ...] (4 .. 8128, a multiple of 4)\n");
			return 2;
		}
		bench_n(n);
	}
	return 0;
}
