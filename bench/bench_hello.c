/* SPDX-License-Identifier: Apache-2.0 */
/* bench_hello - fast discovery: from procctl_init's return in a new
 * process to the agent's ATTACHED event, over 200 processes started one
 * after another, with a registry (rescans an hour apart) and a hello in
 * this process. The attach often completes before init has returned (the
 * hello is inside it): such a process counts 0, and how many did is
 * printed on stderr.
 *   hello_discovery_p50, hello_discovery_p99   against a floor of the
 *       same percentile of a targeted attach (notify(pid) of a process
 *       that has initialised, to ATTACHED; no hello) plus the cost of one
 *       uprobe hit in the process (procctl_reinit with a uprobe on its
 *       site, less without), all measured in this run;
 *   hello_discovery_rescan_only_p50   the p50 with no hello and a rescan
 *       every 100 ms (the registry's own net), against the same floor.
 * Usage: bench_hello (HELLO_CLIENT_PATH is built in). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "procctl_agent.h"

#ifndef HELLO_CLIENT_PATH
#error "HELLO_CLIENT_PATH must name the bench's client"
#endif

#define NPROC 200
#define MAXSITES 16

static char consumer[32], lockdir[64];
static procctl_registry_t *reg;
static procctl_hello_t *hello;
static pid_t want;
static int64_t attached_at;

static _Noreturn void die(const char *what)
{
	fprintf(stderr, "bench_hello: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void on_event(const struct procctl_event *ev, void *arg)
{
	(void)arg;
	if (ev->type == PROCCTL_EV_ATTACHED && ev->pid == want)
		attached_at = bench_now_ns();
}

static void on_pid(pid_t pid, void *arg)
{
	(void)arg;
	if (pid)
		procctl_registry_notify(reg, pid);
	else
		procctl_registry_rescan(reg);
}

static void pump_until_attached(void)
{
	int64_t end = bench_now_ns() + 10000000000ll;
	while (!attached_at && bench_now_ns() < end) {
		struct pollfd p[2] = {{procctl_registry_fd(reg), POLLIN, 0}, {hello ? procctl_hello_fd(hello) : -1, POLLIN, 0}};
		poll(p, 2, 5);
		if (hello)
			procctl_hello_dispatch(hello);
		procctl_registry_dispatch(reg);
	}
	if (!attached_at)
		die("a process was not attached within 10 s");
}

/* A new hello_client; when its procctl_init returned (read from its
 * stdout) in *init_ns. */
static pid_t start(int64_t *init_ns)
{
	int p[2];
	char buf[64];
	ssize_t n, got = 0;
	pid_t pid;
	if (pipe2(p, O_CLOEXEC) < 0)
		die("pipe");
	if ((pid = fork()) < 0)
		die("fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], 1);
		execl(HELLO_CLIENT_PATH, "hello_client", consumer, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	want = pid;
	attached_at = 0;
	/* Pump while it starts: its hello comes while we wait for its line. */
	for (;;) {
		struct pollfd q[3] = {{p[0], POLLIN, 0}, {procctl_registry_fd(reg), POLLIN, 0},
				      {hello ? procctl_hello_fd(hello) : -1, POLLIN, 0}};
		poll(q, 3, 5);
		if (hello)
			procctl_hello_dispatch(hello);
		procctl_registry_dispatch(reg);
		if (q[0].revents) {
			if ((n = read(p[0], buf + got, sizeof buf - 1 - (size_t)got)) <= 0)
				die("the client died");
			got += n;
			if (memchr(buf, '\n', (size_t)got))
				break;
		}
	}
	close(p[0]);
	buf[got] = 0;
	*init_ns = strtoll(strchr(buf, ' ') ? strchr(buf, ' ') + 1 : buf, NULL, 10);
	return pid;
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* Let the registry see it go before the next one. */
	procctl_registry_dispatch(reg);
}

static void world(uint64_t rescan_ns, int with_hello)
{
	struct procctl_registry_opts o;
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.consumer = consumer;
	o.lock_dir = lockdir;
	o.rescan_ns = rescan_ns;
	o.on_event = on_event;
	if (!(reg = procctl_registry_new(&o)))
		die("procctl_registry_new");
	hello = NULL;
	if (with_hello) {
		struct procctl_hello_opts ho;
		memset(&ho, 0, sizeof ho);
		ho.sz = sizeof ho;
		ho.on_pid = on_pid;
		if (!(hello = procctl_hello_new(&ho)))
			die(procctl_hello_error(-errno));
	}
	while (!procctl_registry_first_scan_done(reg)) {
		struct pollfd p = {procctl_registry_fd(reg), POLLIN, 0};
		poll(&p, 1, 5);
		procctl_registry_dispatch(reg);
	}
}

static void world_end(void)
{
	procctl_hello_free(hello);
	hello = NULL;
	procctl_registry_close(reg, 0);
}

/* Discovery latencies (us) of n processes, sorted; how many were
 * attached before their procctl_init returned. */
static int discover(double *v, int n)
{
	int i, early = 0;
	for (i = 0; i < n; i++) {
		int64_t init;
		pid_t pid = start(&init);
		pump_until_attached();
		early += attached_at <= init;
		v[i] = attached_at > init ? (double)(attached_at - init) / 1000.0 : 0.0;
		stop(pid);
	}
	bench_median(v, n);
	return early;
}

/* Targeted attaches (us): notify(pid) of an initialised process to ATTACHED. */
static void targeted(double *v, int n)
{
	int i;
	for (i = 0; i < n; i++) {
		int64_t init, t0;
		pid_t pid = start(&init);
		if (attached_at)
			die("attached without hello or rescan");
		t0 = bench_now_ns();
		procctl_registry_notify(reg, pid);
		pump_until_attached();
		v[i] = (double)(attached_at - t0) / 1000.0;
		stop(pid);
	}
	bench_median(v, n);
}

/* One uprobe hit's cost in the process (us): procctl_reinit with a uprobe
 * on this program's hello sites (sampled into a ring, as hello's are),
 * less without. */
static double hit_cost(void)
{
	static unsigned char storage[PROCCTL_STATE_STORAGE(0, 16)];
	static double with[1001], without[1001];
	uint64_t off[MAXSITES];
	int fds[MAXSITES], n, i, k, fd, type = -1;
	procctl_config_t cfg;
	procctl_t ctx;
	FILE *f;
	if ((f = fopen("/sys/bus/event_source/devices/uprobe/type", "r"))) {
		if (fscanf(f, "%d", &type) != 1)
			type = -1;
		fclose(f);
	}
	if (type < 0 || (fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC)) < 0)
		die("uprobe type");
	n = procctl_elf_hello_sites(fd, off, MAXSITES);
	close(fd);
	if (n < 1)
		die("no hello site in bench_hello");
	for (k = 0; k < n; k++)
		if ((fds[k] = bench_uprobe(type, "/proc/self/exe", off[k], 0, -1, 1)) < 0 ||
		    mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fds[k], 0) == MAP_FAILED)
			die("uprobe");
	memset(&cfg, 0, sizeof cfg);
	cfg.consumer = "benchhit";
	cfg.schema_version = 1;
	cfg.payload_capacity = 64;
	cfg.state_capacity = 16;
	cfg.state_storage = storage;
	if (procctl_init(&ctx, &cfg) < 0)
		die("procctl_init");
	for (i = 0; i < 1001; i++) {
		int64_t t0 = bench_now_ns();
		procctl_reinit(&ctx);
		without[i] = (double)(bench_now_ns() - t0);
		for (k = 0; k < n; k++)
			ioctl(fds[k], PERF_EVENT_IOC_ENABLE, 0);
		t0 = bench_now_ns();
		procctl_reinit(&ctx);
		with[i] = (double)(bench_now_ns() - t0);
		for (k = 0; k < n; k++)
			ioctl(fds[k], PERF_EVENT_IOC_DISABLE, 0);
	}
	procctl_close(&ctx);
	for (k = 0; k < n; k++)
		close(fds[k]);
	return (bench_median(with, 1001) - bench_median(without, 1001)) / 1000.0;
}

int main(void)
{
	static double fast[NPROC], tgt[NPROC], slow[NPROC];
	double hit;
	snprintf(consumer, sizeof consumer, "bh%d", (int)getpid());
	snprintf(lockdir, sizeof lockdir, "/tmp/bench_hello.XXXXXX");
	if (!mkdtemp(lockdir))
		die("mkdtemp");
	hit = hit_cost();
	if (hit < 0)
		hit = 0;

	world(3600000000000ull, 0);
	targeted(tgt, NPROC);
	world_end();

	world(3600000000000ull, 1);
	{
		double warm;
		discover(&warm, 1); /* the client's file gets its uprobe */
	}
	fprintf(stderr, "bench_hello: %d of %d processes attached before procctl_init returned\n", discover(fast, NPROC),
		NPROC);
	world_end();

	world(100000000ull, 0);
	discover(slow, NPROC);
	world_end();

	bench_report("hello_discovery_p50", "us", fast[NPROC / 2], tgt[NPROC / 2] + hit);
	bench_report("hello_discovery_p99", "us", fast[NPROC * 99 / 100], tgt[NPROC * 99 / 100] + hit);
	bench_report("hello_discovery_rescan_only_p50", "us", slow[NPROC / 2], tgt[NPROC / 2] + hit);
	rmdir(lockdir);
	return 0;
}
