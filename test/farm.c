/* SPDX-License-Identifier: Apache-2.0 */
/* farm.c - many regions in many real processes, for the node-scale tests
 * and benchmarks (issue 19):
 *
 *   farm --procs P --regions R --consumer NAME [--ack] [--busy US]
 *
 * forks P processes, each creating R regions of consumer NAME (schema
 * versions 1 .. R, 4 KiB payloads, a state block each). With --ack each
 * process acks every config it finds, as a real consumer would: it looks
 * when its first region is woken (a write to it), and with more than one
 * region at least once a second, for the writes to the others. With
 * --busy it never sleeps: a main loop that works US microseconds (on the
 * CPU) between looks, as a busy consumer's would, from the moment the
 * farm says ready (so that the last start as fast as the first).
 * Prints "ready PROCS REGIONS" once every process has made its regions
 * (or "failed N" and exits 1), then waits for SIGTERM, SIGINT or stdin's
 * end, and ends every process it started (SIGKILL) before it exits.
 * Each process is small: no threads, one page of state per region. */
#define PROCCTL_IMPLEMENTATION
#include "procctl.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REGIONS_MAX 8
#define PAYLOAD 4096
#define STATE 256

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Work on the CPU for us microseconds. */
static void work(int us)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

/* One process of the farm: its regions, acked for ever (busy: us of work
 * between looks, else asleep until woken). Never returns. Idle, it wakes
 * no more than it must: every wake is a context switch, and looking every
 * 100 ms, 2,500 of them took both cores of a 2-core guest (a switch there
 * costs 50 to 70 us) and 150 s to start. */
static void tenant(const char *consumer, int nregions, int ack, int busy, int ready_fd, int go_fd)
{
	static unsigned char storage[REGIONS_MAX][PROCCTL_STATE_STORAGE(4, STATE)] __attribute__((aligned(64)));
	static procctl_t ctx[REGIONS_MAX];
	static unsigned char buf[PAYLOAD];
	char ok = 1;
	int i;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (i = 0; i < nregions; i++) {
		procctl_config_t cfg;
		memset(&cfg, 0, sizeof cfg);
		cfg.consumer = consumer;
		cfg.schema_version = (uint32_t)i + 1;
		cfg.payload_capacity = PAYLOAD;
		cfg.state_capacity = STATE;
		cfg.resource_capacity = 4;
		cfg.state_storage = storage[i];
		if (procctl_init(&ctx[i], &cfg) != 0)
			ok = 0;
	}
	if (write(ready_fd, &ok, 1) != 1 || !ok)
		_exit(1);
	close(ready_fd);
	if (busy && read(go_fd, &ok, 1) != 0) /* the farm's end closed: go */
		_exit(1);
	close(go_fd);
	for (;;) {
		/* Woken by region 0, the others looked at as often. Every region
		 * is polled (what procctl_wait waits for is news not yet polled);
		 * with ack, what came is acked. */
		if (busy)
			work(busy);
		else
			procctl_wait(&ctx[0], nregions > 1 ? 1000000000 : -1);
		for (i = 0; i < nregions; i++) {
			uint64_t gen;
			int n = procctl_poll(&ctx[i], buf, sizeof buf, &gen);
			if (ack && (n > 0 || n == -ENODATA))
				procctl_ack(&ctx[i], gen, 0);
		}
	}
}

static int arg_int(int argc, char **argv, int i)
{
	long v;
	char *end;
	if (i + 1 >= argc)
		return -1;
	v = strtol(argv[i + 1], &end, 10);
	return *end || v < 1 || v > 100000 ? -1 : (int)v;
}

int main(int argc, char **argv)
{
	const char *consumer = NULL;
	int procs = -1, regions = -1, ack = 0, busy = 0, pfd[2], go[2], i, failed = 0;
	pid_t *kids;
	struct sigaction sa;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--procs"))
			procs = arg_int(argc, argv, i++);
		else if (!strcmp(argv[i], "--regions"))
			regions = arg_int(argc, argv, i++);
		else if (!strcmp(argv[i], "--consumer") && i + 1 < argc)
			consumer = argv[++i];
		else if (!strcmp(argv[i], "--ack"))
			ack = 1;
		else if (!strcmp(argv[i], "--busy"))
			busy = arg_int(argc, argv, i++);
		else
			procs = -1, i = argc;
	}
	if (procs < 1 || regions < 1 || regions > REGIONS_MAX || !consumer || busy < 0) {
		fprintf(stderr, "usage: farm --procs P --regions R (1..%d) --consumer NAME [--ack] [--busy US]\n",
			REGIONS_MAX);
		return 2;
	}
	if (pipe(pfd) < 0 || pipe(go) < 0 || !(kids = calloc((size_t)procs, sizeof *kids))) {
		perror("farm");
		return 1;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* stopped (SIGSTOP), it would never see a SIGTERM; its processes die with it */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	for (i = 0; i < procs && !stop; i++) {
		if ((kids[i] = fork()) == 0) {
			close(pfd[0]);
			close(go[1]);
			tenant(consumer, regions, ack, busy, pfd[1], go[0]);
		}
		if (kids[i] < 0) {
			perror("farm: fork");
			failed = procs;
			break;
		}
	}
	close(pfd[1]);
	close(go[0]);
	for (i = 0; i < procs && !failed; i++) {
		char ok;
		if (read(pfd[0], &ok, 1) != 1 || !ok)
			failed++;
	}
	if (failed) {
		printf("failed %d\n", failed);
	} else {
		struct pollfd in = {0, POLLIN, 0};
		close(go[1]);
		printf("ready %d %d\n", procs, regions);
		fflush(stdout);
		while (!stop && (poll(&in, 1, 1000) <= 0 || !(in.revents & (POLLIN | POLLHUP)) ||
				 read(0, &(char){0}, 1) > 0))
			;
	}
	fflush(stdout);
	for (i = 0; i < procs; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
	for (i = 0; i < procs; i++)
		if (kids[i] > 0)
			waitpid(kids[i], NULL, 0);
	free(kids);
	return failed ? 1 : 0;
}
