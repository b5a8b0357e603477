/* SPDX-License-Identifier: Apache-2.0 */
/* bench_arbiter - the arbiter's hand-off with responsive holders, against a
 * floor measured in the same run. Prints JSON lines as the other benches.
 *
 *   handoff   from the tick that decides to rotate (it revokes) to the
 *             next holder's HOLDING report: the holder wakes, releases and
 *             reports; the agent hears the doorbell, confirms and grants;
 *             the next holder wakes, takes it and reports
 *             floor: two cross-process futex round trips, the processes
 *             on different CPUs
 *   handoff_vs_shared_cpu_floor   the same figure against two round trips
 *             of processes the scheduler may put on one CPU (a lower
 *             floor on VMs, where waking another CPU is slow)
 *
 * The holders are two real token clients (their witness log gives the
 * time each HOLDING was reported); the agent is a registry with doorbells
 * and an arbiter, driven as token-agent drives them.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "procctl_arbiter.h"

#ifndef TOKEN_CLIENT_PATH
#error "TOKEN_CLIENT_PATH must name the token client"
#endif

#define ROUNDS 301
#define NHOLD 2
#define MAXS 100000

static pid_t holder(const char *consumer, const char *witness)
{
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execl(TOKEN_CLIENT_PATH, "token-client", "--consumer", consumer, "--witness", witness, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Decisions in, the first HOLDING after each (by another holder) out. */
static int handoffs(const char *witness, const int64_t *decided, int n, double *out)
{
	static long long s_ns[MAXS];
	char what;
	int pid, ns = 0, i, j = 0, k = 0;
	long long t;
	FILE *f = fopen(witness, "r");
	if (!f)
		return 0;
	while (ns < MAXS && fscanf(f, " %c %d %lld", &what, &pid, &t) == 3)
		if (what == 'S')
			s_ns[ns++] = t;
	fclose(f);
	for (i = 0; i < n; i++) { /* both are in time order: S lines are appended as they happen */
		while (j < ns && s_ns[j] <= decided[i])
			j++;
		if (j < ns)
			out[k++] = (double)(s_ns[j] - decided[i]);
	}
	return k;
}

int main(void)
{
	static int64_t decided[ROUNDS + 8];
	static double lat[ROUNDS + 8];
	char consumer[16], lockdir[] = "/tmp/procctl-bench.XXXXXX", witness[] = "/tmp/procctl-benchw.XXXXXX", cmd[64];
	struct bench_pingpong *pp = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct procctl_registry_opts o;
	struct procctl_arbiter_source src;
	struct procctl_arbiter_opts ao;
	procctl_resource_t res;
	procctl_registry_t *r;
	procctl_arbiter_t *a;
	pid_t pong, h[NHOLD];
	double fl, fl_near, med;
	int i, n = 0, m, fd;
	int64_t end;

	if (pp == MAP_FAILED || !mkdtemp(lockdir) || (fd = mkstemp(witness)) < 0)
		return 1;
	close(fd);
	snprintf(consumer, sizeof consumer, "bench%d", (int)getpid());
	/* Every process first: no thread exists yet. */
	pong = fork();
	if (pong == 0)
		bench_ponger(pp);
	for (i = 0; i < NHOLD; i++)
		h[i] = holder(consumer, witness);
	fl = bench_pingpong_floor(pp, pong, 1, 2, ROUNDS, 1000);
	fl_near = bench_pingpong_floor(pp, pong, 0, 2, ROUNDS, 1000);

	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.consumer = consumer;
	o.lock_dir = lockdir;
	o.rescan_ns = 100000000ull;
	o.flags = PROCCTL_REGISTRY_DOORBELLS;
	memset(&res, 0, sizeof res);
	res.kind = 1; /* token-client's default kind */
	memset(&ao, 0, sizeof ao);
	ao.sz = sizeof ao;
	ao.kind = 1;
	ao.hold_ns = 1000000; /* 1 ms turns: a hand-off after each */
	ao.resources = &res;
	ao.nresources = 1;
	if (!(r = procctl_registry_new(&o)) || procctl_arbiter_registry_source(&src, r, consumer, 100000000ull) < 0 ||
	    !(a = procctl_arbiter_new(&ao, &src))) {
		perror("bench_arbiter");
		return 1;
	}
	/* The loop of token-agent, with a 1 ms timeout: the hold ends on time. */
	end = bench_now_ns() + 20000000000ll;
	while (n < ROUNDS && bench_now_ns() < end) {
		struct pollfd p = {procctl_registry_fd(r), POLLIN, 0};
		struct timespec ts = {0, 1000000};
		struct procctl_arbiter_snapshot before, after;
		ppoll(&p, 1, &ts, NULL);
		if (procctl_registry_dispatch(r) < 0)
			break;
		procctl_arbiter_snapshot(a, &before, 1, sizeof before);
		procctl_arbiter_tick(a);
		procctl_arbiter_snapshot(a, &after, 1, sizeof after);
		if (!before.pending_since_ns && after.pending_since_ns && after.waiters)
			decided[n++] = (int64_t)after.pending_since_ns; /* this tick revoked: the decision */
	}
	procctl_arbiter_free(a);
	procctl_registry_close(r, 0);
	procctl_arbiter_registry_source_free(&src);
	for (i = 0; i < NHOLD; i++)
		kill(h[i], SIGTERM);
	kill(pong, SIGKILL);
	for (i = 0; i < NHOLD; i++)
		waitpid(h[i], NULL, 0);
	waitpid(pong, NULL, 0);

	m = handoffs(witness, decided, n, lat);
	unlink(witness);
	snprintf(cmd, sizeof cmd, "rm -rf %s", lockdir);
	if (system(cmd) != 0 || m < ROUNDS / 2) {
		fprintf(stderr, "bench_arbiter: %d hand-offs seen of %d decisions\n", m, n);
		return 1;
	}
	med = bench_median(lat, m);
	bench_report("handoff", "ns", med, fl);
	bench_report("handoff_vs_shared_cpu_floor", "ns", med, fl_near);
	return 0;
}
