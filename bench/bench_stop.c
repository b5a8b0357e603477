/* SPDX-License-Identifier: Apache-2.0 */
/* bench_stop - procctl-node's SIGTERM, with two echo clients attached, over
 * ROUNDS daemons, each figure against a floor measured in this run:
 *   node_stop_handoff  from the signal to the hand-off done (every region
 *       RELEASED, every lock dropped: a successor may take over; the
 *       daemon's event=handed_off line), with fast discovery on, against
 *       the whole stop (signal to exit) of the same daemon with it off;
 *   node_stop_exit     from the signal to the exit, with fast discovery on,
 *       against that stop without it plus the uprobes the daemon held
 *       (event=closing_uprobes count=N) times one uprobe close, measured
 *       here on echo-client's own procctl:hello site: the kernel waits in
 *       each close for RCU grace periods, one close after another (its
 *       event_mutex), and no daemon can close a uprobe faster.
 * Usage: bench_stop (PROCCTL_NODE_PATH and ECHO_CLIENT_PATH are built in). */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "bench_proc.h"
#include "procctl_agent.h"

#define ROUNDS 5
#define CLOSES 16
#define MAXSITES 16

static char dir[64];

static _Noreturn void die(const char *what)
{
	fprintf(stderr, "bench_stop: %s\n", what);
	exit(1);
}

/* One uprobe close, in ms: the median of CLOSES events on echo-client's
 * hello sites, each opened on a CPU, then closed and timed alone. */
static double uprobe_close_ms(void)
{
	static double v[CLOSES];
	uint64_t off[MAXSITES];
	int fd, n, i, type = -1;
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	if (!f || fscanf(f, "%d", &type) != 1)
		die("no uprobe PMU");
	fclose(f);
	if ((fd = open(ECHO_CLIENT_PATH, O_RDONLY | O_CLOEXEC)) < 0)
		die("echo-client");
	n = procctl_elf_hello_sites(fd, off, MAXSITES);
	close(fd);
	if (n < 1)
		die("no hello site in echo-client");
	for (i = 0; i < CLOSES; i++) {
		int64_t t0;
		if ((fd = bench_uprobe(type, ECHO_CLIENT_PATH, off[i % n], -1, i % (int)sysconf(_SC_NPROCESSORS_ONLN), 0)) < 0)
			die("uprobe perf_event_open (root?)");
		t0 = bench_now_ns();
		close(fd);
		v[i] = (double)(bench_now_ns() - t0) / 1e6;
	}
	return bench_median(v, CLOSES);
}

/* Read the daemon's log until a line holding what: its time (ns), and
 * the line in line. */
static int64_t until_line(FILE *log, const char *what, char *line, size_t len)
{
	while (fgets(line, (int)len, log))
		if (strstr(line, what))
			return bench_now_ns();
	die(what);
}

struct stop {
	double handoff_ms, exit_ms;
	unsigned long uprobes;
};

/* One daemon with two echo clients: SIGTERM once both are attached. */
static struct stop one_stop(int round, int hello)
{
	char consumer[32], sock[128], locks[128], state[128], line[512], *p;
	int pipefd[2], attached = 0;
	struct stop s = {0, 0, 0};
	pid_t node, echo[2];
	int64_t t0;
	FILE *log;
	snprintf(consumer, sizeof consumer, "stop%d.%d", (int)getpid() % 100000, round);
	snprintf(sock, sizeof sock, "unix:%s/%d.sock", dir, round);
	snprintf(locks, sizeof locks, "%s/locks%d", dir, round);
	snprintf(state, sizeof state, "%s/state%d", dir, round);
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		die("pipe");
	{
		char *argv[] = {PROCCTL_NODE_PATH, "--grpc-listen", sock,    "--lock-dir", locks, "--state-dir", state,
				"--consumers",     consumer, "--http-listen", "", "--rescan-ms", "100", "--hello",
				hello ? "true" : "false", NULL};
		if ((node = bench_spawn(argv, -1, -1, pipefd[1])) < 0)
			die("fork");
	}
	close(pipefd[1]);
	if (!(log = fdopen(pipefd[0], "r")))
		die("fdopen");
	{
		char *argv[] = {ECHO_CLIENT_PATH, "--consumer", consumer, NULL};
		if ((echo[0] = bench_spawn(argv, -1, -1, -1)) < 0 || (echo[1] = bench_spawn(argv, -1, -1, -1)) < 0)
			die("fork");
	}
	while (attached < 2) {
		until_line(log, "event=attached", line, sizeof line);
		attached++;
	}
	t0 = bench_now_ns();
	kill(node, SIGTERM);
	s.handoff_ms = (double)(until_line(log, hello ? "event=handed_off" : "event=stopped", line, sizeof line) - t0) / 1e6;
	while (fgets(line, sizeof line, log))
		if ((p = strstr(line, "event=closing_uprobes count=")))
			s.uprobes = strtoul(p + strlen("event=closing_uprobes count="), NULL, 10);
	if (waitpid(node, NULL, 0) != node)
		die("waitpid");
	s.exit_ms = (double)(bench_now_ns() - t0) / 1e6;
	fclose(log);
	kill(echo[0], SIGKILL);
	kill(echo[1], SIGKILL);
	waitpid(echo[0], NULL, 0);
	waitpid(echo[1], NULL, 0);
	return s;
}

int main(void)
{
	static double handoff[ROUNDS], exit_hello[ROUNDS], exit_plain[ROUNDS], uprobes[ROUNDS];
	double close_ms;
	char cmd[96];
	int i;

	snprintf(dir, sizeof dir, "/tmp/bench_stop.%d", (int)getpid());
	if (mkdir(dir, 0700) < 0)
		die("mkdir");
	close_ms = uprobe_close_ms();
	for (i = 0; i < ROUNDS; i++) {
		struct stop with = one_stop(2 * i, 1), without = one_stop(2 * i + 1, 0);
		handoff[i] = with.handoff_ms;
		exit_hello[i] = with.exit_ms;
		uprobes[i] = (double)with.uprobes;
		exit_plain[i] = without.exit_ms;
	}
	{
		double plain = bench_median(exit_plain, ROUNDS), n = bench_median(uprobes, ROUNDS);
		fprintf(stderr, "bench_stop: %.0f uprobes held, one uprobe close %.1f ms, a stop without them %.1f ms\n", n,
			close_ms, plain);
		bench_report("node_stop_handoff", "ms", bench_median(handoff, ROUNDS), plain);
		bench_report("node_stop_exit", "ms", bench_median(exit_hello, ROUNDS), plain + n * close_ms);
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_stop: could not remove %s\n", dir);
	return 0;
}
