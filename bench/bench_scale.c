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
 *                         reported apart, against one page per region.
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

/* argv as a child, its output to /dev/null, its input in (-1: /dev/null),
 * killed with this process. */
static pid_t spawn(char *const argv[], int in)
{
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(in >= 0 ? in : null, 0);
		dup2(null, 1);
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

static void idle(long n, int seconds)
{
	char sock[128], listen[160], locks[96], state[96], cons[32], procs[24], per[16], max[24], name[64];
	grpc_channel_credentials *cr;
	grpc_completion_queue *cq;
	grpc_channel *ch;
	unsigned long long sw0, sw1;
	struct bench_threads t0, t1;
	double own = 0;
	double c0, c1, b0, b1, tick = 1.0 / (double)sysconf(_SC_CLK_TCK);
	long anon0, got = -1;
	int farm_in[2];
	pid_t beat;
	int i;

	snprintf(sock, sizeof sock, "%s/node%ld.sock", dir, n);
	snprintf(listen, sizeof listen, "unix:%s", sock);
	snprintf(locks, sizeof locks, "%s/locks%ld", dir, n);
	snprintf(state, sizeof state, "%s/state%ld", dir, n);
	snprintf(cons, sizeof cons, "scale%d_%ld", (int)getpid(), n);
	snprintf(procs, sizeof procs, "%ld", n / PER_PROCESS);
	snprintf(per, sizeof per, "%d", PER_PROCESS);
	snprintf(max, sizeof max, "%ld", 2 * n);
	{
		char *argv[] = {PROCCTL_NODE_PATH, "--grpc-listen", listen, "--lock-dir", locks, "--state-dir", state,
				"--consumers", cons, "--max-regions", max, "--http-listen", "", NULL};
		daemon_pid = spawn(argv, -1);
	}
	cr = grpc_insecure_credentials_create();
	ch = grpc_channel_create(listen, cr, NULL);
	grpc_channel_credentials_release(cr);
	cq = grpc_completion_queue_create_for_pluck(NULL);
	for (i = 0; i < 1000 && listed(ch, cq, cons) < 0; i++)
		usleep(10000);
	if (i == 1000)
		die("the daemon did not serve");
	anon0 = bench_status_kib(daemon_pid, "RssAnon");
	if (pipe2(farm_in, O_CLOEXEC) < 0)
		die("pipe");
	{
		char *argv[] = {FARM_PATH, "--procs", procs, "--regions", per, "--consumer", cons, NULL};
		farm_pid = spawn(argv, farm_in[0]); /* it lives until its input ends */
	}
	close(farm_in[0]);
	for (i = 0; i < 600 && (got = listed(ch, cq, cons)) < n; i++)
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
	fprintf(stderr, "bench_scale: %ld regions idle, wakeups/s by thread:", n);
	for (i = 0; i < t1.n; i++) {
		int k;
		double d;
		for (k = 0; k < t0.n && strcmp(t0.t[k].name, t1.t[i].name); k++)
			;
		d = (double)(t1.t[i].switches - (k < t0.n ? t0.t[k].switches : 0)) / seconds;
		if (!strncmp(t1.t[i].name, "procctl-", 8))
			own += d;
		fprintf(stderr, " %s %.2f", t1.t[i].name, d);
	}
	fprintf(stderr, "\n");
	snprintf(name, sizeof name, "node_idle_wakeups_procctl_%ld", n);
	bench_report(name, "1/s", own, 4.0 / LEASE_S);
	snprintf(name, sizeof name, "node_idle_wakeups_%ld", n);
	bench_report(name, "1/s", (double)(sw1 - sw0) / seconds, 4.0 / LEASE_S);
	snprintf(name, sizeof name, "node_rss_anon_%ld", n);
	bench_report(name, "KiB", (double)bench_status_kib(daemon_pid, "RssAnon"), (double)anon0);
	snprintf(name, sizeof name, "node_rss_shmem_%ld", n);
	bench_report(name, "KiB", (double)bench_status_kib(daemon_pid, "RssShmem"), (double)n * 4.0);

	grpc_completion_queue_shutdown(cq);
	grpc_completion_queue_destroy(cq);
	grpc_channel_destroy(ch);
	close(farm_in[1]);
	waitpid(farm_pid, NULL, 0);
	kill(daemon_pid, SIGTERM);
	waitpid(daemon_pid, NULL, 0);
	farm_pid = daemon_pid = 0;
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
	for (i = 1; i < argc; i++)
		idle(atol(argv[i]), seconds);
	for (i = 0; argc == 1 && i < 2; i++)
		idle(dflt[i], seconds);
	grpc_shutdown();
	cleanup();
	return 0;
}
