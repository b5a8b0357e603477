/* SPDX-License-Identifier: Apache-2.0 */
/* bench_scale - procctl-node with many regions (issue 19): for N of 1,000
 * and 10,000 (or the arguments), a daemon and N regions in N/4 farm
 * processes (test/farm.c, 4 regions each), found by the hello probe;
 * once every one is attached (ListProcesses), nothing happens for
 * BENCH_IDLE_SECONDS (60), and:
 *   node_idle_cpu_N       the daemon's CPU milliseconds per second,
 *                         against its heartbeat thread's (what the leases
 *                         need), one clock tick over the window at least;
 *   node_idle_wakeups_N   its threads' context switches per second,
 *                         against what the heartbeats alone need: 4 per
 *                         lease (10 s) in one batch, 0.4;
 *   node_idle_wakeups_procctl_N  the same of its own threads (procctl-*),
 *                         the gRPC C core's timer threads left out (the
 *                         figure by thread goes to stderr);
 *   node_rss_anon_N       its anonymous memory (RssAnon, KiB), against the
 *                         same before any region;
 *   node_rss_shmem_N      the region pages it maps (RssShmem, KiB),
 *                         reported apart, against one page per region;
 * and first, a start storm: 1,000 processes of one region each, forked at
 * once by a program the daemon has not seen (its hello probe is placed
 * as they start), found through the probe:
 *   node_start_storm_p50, _p99, _max  ms from the program's start until
 *                         half, 99% and all of them are listed, against
 *                         the time it took to start them all (its
 *                         "ready").
 * Raises its fd limit where allowed (the daemon holds two fds a process).
 * Usage: bench_scale [N...] (PROCCTL_NODE_PATH and FARM_PATH built in). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "bench.h"
#include "bench_proc.h"
#include "pb_grpc.h"
#include "procctl/v1/node.pb-c.h"

#define PER_PROCESS 4
#define STORM 1000
#define LEASE_S 10.0 /* the daemon's default lease */

static char dir[64];
static pid_t daemon_pid, farm_pid;

static void cleanup(void)
{
	char cmd[128];
	if (farm_pid > 0)
		kill(farm_pid, SIGTERM); /* it ends its processes */
	if (daemon_pid > 0)
		kill(daemon_pid, SIGKILL);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (dir[0] && system(cmd) != 0)
		fprintf(stderr, "bench_scale: could not remove %s\n", dir);
}

static _Noreturn void die(const char *what)
{
	fprintf(stderr, "bench_scale: %s\n", what);
	cleanup();
	exit(1);
}

/* argv as a child, its input in and output out (-1: /dev/null; its
 * errors there always), killed with this process. */
static pid_t spawn(char *const argv[], int in, int out)
{
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(in >= 0 ? in : null, 0);
		dup2(out >= 0 ? out : null, 1);
		dup2(null, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* The regions of consumer the daemon lists, or -1. */
static long listed(grpc_channel *ch, grpc_completion_queue *cq, const char *consumer)
{
	Procctl__V1__ListProcessesRequest rq = PROCCTL__V1__LIST_PROCESSES_REQUEST__INIT;
	Procctl__V1__Selector sel = PROCCTL__V1__SELECTOR__INIT;
	Procctl__V1__ListProcessesResponse *r = NULL;
	gpr_timespec dl = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_seconds(30, GPR_TIMESPAN));
	long n;
	sel.consumer = (char *)consumer;
	rq.filter = &sel;
	pb_unary(ch, cq, "/procctl.v1.NodeService/ListProcesses", dl, &rq.base,
		 &procctl__v1__list_processes_response__descriptor, (ProtobufCMessage **)&r, NULL);
	n = r ? (long)r->n_processes : -1;
	if (r)
		protobuf_c_message_free_unpacked(&r->base, NULL);
	return n;
}

/* A daemon for consumer "scale<pid>_<tag>", its channel, and a farm. */
struct world {
	char cons[32];
	grpc_channel *ch;
	grpc_completion_queue *cq;
	int farm_in, farm_out; /* the farm lives until farm_in is closed; it says "ready" on farm_out */
};

static void world_start(struct world *w, const char *tag, long max_regions)
{
	char sock[128], listen[160], locks[96], state[96], max[24];
	grpc_channel_credentials *cr;
	int i;
	snprintf(sock, sizeof sock, "%s/node_%s.sock", dir, tag);
	snprintf(listen, sizeof listen, "unix:%s", sock);
	snprintf(locks, sizeof locks, "%s/locks_%s", dir, tag);
	snprintf(state, sizeof state, "%s/state_%s", dir, tag);
	snprintf(w->cons, sizeof w->cons, "scale%d_%s", (int)getpid(), tag);
	snprintf(max, sizeof max, "%ld", max_regions);
	{
		char *argv[] = {PROCCTL_NODE_PATH, "--grpc-listen", listen, "--lock-dir", locks, "--state-dir", state,
				"--consumers", w->cons, "--max-regions", max, "--http-listen", "", NULL};
		daemon_pid = spawn(argv, -1, -1);
	}
	cr = grpc_insecure_credentials_create();
	w->ch = grpc_channel_create(listen, cr, NULL);
	grpc_channel_credentials_release(cr);
	w->cq = grpc_completion_queue_create_for_pluck(NULL);
	for (i = 0; i < 1000 && listed(w->ch, w->cq, w->cons) < 0; i++)
		usleep(10000);
	if (i == 1000)
		die("the daemon did not serve");
}

static void farm_start(struct world *w, long procs, int per)
{
	char p[24], r[16];
	int in[2], out[2];
	snprintf(p, sizeof p, "%ld", procs);
	snprintf(r, sizeof r, "%d", per);
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		die("pipe");
	{
		char *argv[] = {FARM_PATH, "--procs", p, "--regions", r, "--consumer", w->cons, NULL};
		farm_pid = spawn(argv, in[0], out[1]);
	}
	close(in[0]);
	close(out[1]);
	w->farm_in = in[1];
	w->farm_out = out[0];
}

/* When the farm said ready (all its processes made their regions). */
static int64_t farm_ready(struct world *w)
{
	char buf[64];
	ssize_t n = read(w->farm_out, buf, sizeof buf - 1);
	if (n <= 0 || strncmp(buf, "ready ", 6))
		die("the farm did not start");
	return bench_now_ns();
}

static void world_stop(struct world *w)
{
	grpc_completion_queue_shutdown(w->cq);
	grpc_completion_queue_destroy(w->cq);
	grpc_channel_destroy(w->ch);
	close(w->farm_in);
	close(w->farm_out);
	waitpid(farm_pid, NULL, 0);
	kill(daemon_pid, SIGTERM);
	waitpid(daemon_pid, NULL, 0);
	farm_pid = daemon_pid = 0;
}

/* Context switches by thread to stderr; the procctl-* threads' per second. */
static double by_thread(long n, const struct bench_threads *t0, const struct bench_threads *t1, int seconds)
{
	double own = 0;
	int i;
	fprintf(stderr, "bench_scale: %ld regions idle, wakeups/s by thread:", n);
	for (i = 0; i < t1->n; i++) {
		int k;
		double d;
		for (k = 0; k < t0->n && strcmp(t0->t[k].name, t1->t[i].name); k++)
			;
		d = (double)(t1->t[i].switches - (k < t0->n ? t0->t[k].switches : 0)) / seconds;
		if (!strncmp(t1->t[i].name, "procctl-", 8))
			own += d;
		fprintf(stderr, " %s %.2f", t1->t[i].name, d);
	}
	fprintf(stderr, "\n");
	return own;
}

static void idle(long n, int seconds)
{
	char tag[24], name[64];
	struct bench_threads t0, t1;
	struct world w;
	unsigned long long sw0, sw1;
	double c0, c1, b0, b1, own, tick = 1.0 / (double)sysconf(_SC_CLK_TCK);
	long anon0, got = -1;
	pid_t beat;
	int i;

	snprintf(tag, sizeof tag, "%ld", n);
	world_start(&w, tag, 2 * n);
	anon0 = bench_status_kib(daemon_pid, "RssAnon");
	farm_start(&w, n / PER_PROCESS, PER_PROCESS);
	for (i = 0; i < 600 && (got = listed(w.ch, w.cq, w.cons)) < n; i++)
		sleep(1);
	if (got < n) {
		fprintf(stderr, "bench_scale: %ld of %ld regions attached in 10 minutes\n", got, n);
		die("not all attached");
	}
	sleep(3); /* the attach's tail: its first reads, the ready scan */
	memset(&t0, 0, sizeof t0);
	memset(&t1, 0, sizeof t1);
	sw0 = bench_switches(daemon_pid, "procctl-beat", &beat, &t0);
	c0 = bench_cpu_s(daemon_pid, 0);
	b0 = beat ? bench_cpu_s(daemon_pid, beat) : 0;
	sleep((unsigned)seconds);
	sw1 = bench_switches(daemon_pid, "procctl-beat", &beat, &t1);
	c1 = bench_cpu_s(daemon_pid, 0);
	b1 = beat ? bench_cpu_s(daemon_pid, beat) : 0;

	snprintf(name, sizeof name, "node_idle_cpu_%ld", n);
	bench_report(name, "ms/s", (c1 - c0) * 1000.0 / seconds,
		     (b1 - b0 > tick ? b1 - b0 : tick) * 1000.0 / seconds);
	own = by_thread(n, &t0, &t1, seconds);
	snprintf(name, sizeof name, "node_idle_wakeups_procctl_%ld", n);
	bench_report(name, "1/s", own, 4.0 / LEASE_S);
	snprintf(name, sizeof name, "node_idle_wakeups_%ld", n);
	bench_report(name, "1/s", (double)(sw1 - sw0) / seconds, 4.0 / LEASE_S);
	snprintf(name, sizeof name, "node_rss_anon_%ld", n);
	bench_report(name, "KiB", (double)bench_status_kib(daemon_pid, "RssAnon"), (double)anon0);
	snprintf(name, sizeof name, "node_rss_shmem_%ld", n);
	bench_report(name, "KiB", (double)bench_status_kib(daemon_pid, "RssShmem"), (double)n * 4.0);
	world_stop(&w);
}

/* STORM processes (one region each) started at once by a program the
 * daemon has not seen: the time from its start until half, 99% and all
 * of them are listed, against the time it took to start them all. */
static void storm(void)
{
	int64_t t0, ready, at[3] = {0, 0, 0};
	const long want[3] = {STORM / 2, STORM * 99 / 100, STORM};
	static const char *const names[3] = {"node_start_storm_p50", "node_start_storm_p99", "node_start_storm_max"};
	struct world w;
	long got;
	int k = 0;

	world_start(&w, "storm", 2 * STORM);
	t0 = bench_now_ns();
	farm_start(&w, STORM, 1);
	ready = farm_ready(&w);
	while (k < 3 && bench_now_ns() - t0 < 60 * 1000000000ll) {
		got = listed(w.ch, w.cq, w.cons);
		for (; k < 3 && got >= want[k]; k++)
			at[k] = bench_now_ns();
		usleep(10000);
	}
	if (k < 3)
		die("the storm was not all attached in 60 s");
	for (k = 0; k < 3; k++)
		bench_report(names[k], "ms", (double)(at[k] - t0) / 1e6, (double)(ready - t0) / 1e6);
	world_stop(&w);
}

int main(int argc, char **argv)
{
	static const long dflt[] = {1000, 10000};
	const char *s = getenv("BENCH_IDLE_SECONDS");
	int seconds = s ? atoi(s) : 60, i;
	struct rlimit rl = {1 << 16, 1 << 16}; /* under fs.nr_open (1,048,576 by default) */

	if (seconds < 1)
		die("BENCH_IDLE_SECONDS: a whole number of seconds, 1 or more");
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) /* the daemon inherits it (and raises to it) */
		fprintf(stderr, "bench_scale: fd limit not raised (%s): the daemon holds 2 fds a process\n", strerror(errno));
	snprintf(dir, sizeof dir, "/tmp/bench_scale.%d", (int)getpid());
	if (mkdir(dir, 0700) < 0)
		die("mkdir");
	grpc_init();
	storm();
	for (i = 1; i < argc; i++)
		idle(atol(argv[i]), seconds);
	for (i = 0; argc == 1 && i < 2; i++)
		idle(dflt[i], seconds);
	grpc_shutdown();
	cleanup();
	return 0;
}
