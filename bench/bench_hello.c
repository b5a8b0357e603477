/* SPDX-License-Identifier: Apache-2.0 */
/* bench_hello - process discovery (issue 39): from a new process making
 * itself known to its agent having it, over NPROC (200) processes
 * (bench/hello_client.c) started one after another, each killed and
 * reaped before the next, through three paths in one run:
 *   the library  a registry (rescans an hour apart) and a hello in this
 *                process: the registry's ATTACHED event;
 *   the daemon   a procctl-node started here (its hello on) serving one
 *                consumer, and a WatchEvents stream of it, opened (its
 *                snapshot taken) and seen to work (a first process's
 *                Attached, which also probes the client's file) before:
 *                this process receiving the stream's Attached for the pid;
 *   the peer     what a user would build instead: each process listens on
 *                a Unix socket DIR/<pid>.sock (hello_client --socket DIR)
 *                and this process, an inotify watch (IN_CREATE) on DIR,
 *                connects to each new one, again while refused (bind makes
 *                the file, before listen): connect's return.
 * The library's attach mostly completes before procctl_init has returned
 * (the hello is init's last step and the agent, woken, runs first), so
 * from init's return its p50 is 0: the paths are compared from the start
 * of making itself known instead, procctl_init's call and socket's call.
 * stderr: how many were early, and each path's p50 and p99 from init's
 * (listen's) return. Figures (us):
 *   hello_discovery_p50, hello_discovery_p99   the library from init's
 *       return, against the same percentile of a targeted attach
 *       (notify(pid) of a process that has initialised, to ATTACHED; no
 *       hello) plus one uprobe hit's cost in the process (procctl_reinit
 *       with a uprobe on its site, less without), all in this run;
 *   hello_discovery_rescan_only_p50   the same with no hello and a rescan
 *       every 100 ms (the registry's own net), against the same floor;
 *   node_discovery_p50, node_discovery_p99   the daemon from init's call,
 *       against the library's same percentile from init's call;
 *   library_discovery_vs_inotify_p50   the library's p50 from init's call
 *       against the peer's from socket's call;
 *   node_discovery_vs_inotify_p50   the daemon's, the same way.
 * All in a mkdtemp directory under /tmp (the library's lock dir, the
 * daemon's socket, locks and state, the peer's sockets), consumer
 * bh<pid>; removed at the end, the daemon ended with SIGTERM.
 * Usage: bench_hello, as root (uprobes; HELLO_CLIENT_PATH and
 * PROCCTL_NODE_PATH are built in). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>

#include "bench.h"
#include "bench_grpc.h"
#include "bench_proc.h"
#include "procctl_agent.h"

#ifndef HELLO_CLIENT_PATH
#error "HELLO_CLIENT_PATH must name the bench's client"
#endif
#ifndef PROCCTL_NODE_PATH
#error "PROCCTL_NODE_PATH must name procctl-node"
#endif

#define NPROC 200
#define MAXSITES 16

static char dir[64], consumer[32], lockdir[80];
static procctl_registry_t *reg;
static procctl_hello_t *hello;
static pid_t want, child, node_pid;
static int64_t attached_at;
static grpc_channel *ch;
static grpc_completion_queue *cq;
static struct pb_stream watch;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* Leave nothing behind: the client of the moment, the daemon, the dir. */
static void cleanup(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = 0;
	}
	if (node_pid > 0) {
		kill(node_pid, SIGTERM);
		waitpid(node_pid, NULL, 0);
		node_pid = 0;
	}
	if (dir[0] && nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
		fprintf(stderr, "bench_hello: could not remove %s\n", dir);
}

static _Noreturn void die(const char *what)
{
	fprintf(stderr, "bench_hello: %s: %s\n", what, strerror(errno));
	cleanup();
	exit(1);
}

/* ---- the clients ------------------------------------------------------ */

/* hello_client with a1 (and a2 when not NULL), its output into a pipe
 * whose end is *out: its pid (killed and reaped by stop_child). */
static pid_t spawn(const char *a1, const char *a2, int *out)
{
	int p[2];
	pid_t pid;
	if (pipe2(p, O_CLOEXEC) < 0)
		die("pipe");
	if ((pid = fork()) < 0)
		die("fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], 1);
		execl(HELLO_CLIENT_PATH, "hello_client", a1, a2, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	*out = p[0];
	return child = pid;
}

static void stop_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	child = 0;
}

/* A client's times: when it began to make itself known (procctl_init
 * called; socket called) and when it had (init, or listen, returned). */
struct stamps {
	int64_t call, ret;
};

/* The client's times from its line, waiting for it (one write under
 * PIPE_BUF: one read has it whole); fd closed. */
static struct stamps line_wait(int fd)
{
	char buf[64];
	long long call, ret;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	if (n <= 0)
		die("the client died");
	buf[n] = 0;
	if (sscanf(buf, "%lld %lld", &call, &ret) != 2)
		die("the client's line");
	close(fd);
	return (struct stamps){call, ret};
}

/* Discovery latencies (us) of a path's processes, from each one's
 * stamps to when its agent had it (0 when the agent was first). */
struct lat {
	double ret[NPROC], call[NPROC];
};

/* The p50 and p99 of v (NPROC, sorted). */
#define P50(v) ((v)[NPROC / 2])
#define P99(v) ((v)[NPROC * 99 / 100])

/* Process i's latencies in l: t, and its agent had it at `at`. */
static void lat_put(struct lat *l, int i, struct stamps t, int64_t at)
{
	l->ret[i] = at > t.ret ? (double)(at - t.ret) / 1000.0 : 0.0;
	l->call[i] = at > t.call ? (double)(at - t.call) / 1000.0 : 0.0;
}

static void lat_sort(struct lat *l, int n)
{
	bench_median(l->ret, n);
	bench_median(l->call, n);
}

/* ---- the library: a registry and a hello in this process -------------- */

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

/* A new hello_client of the consumer; when its procctl_init was called
 * and returned in *t. */
static pid_t start(struct stamps *t)
{
	int fd;
	pid_t pid = spawn(consumer, NULL, &fd);
	want = pid;
	attached_at = 0;
	/* Pump while it starts: its hello comes while we wait for its line. */
	for (;;) {
		struct pollfd q[3] = {{fd, POLLIN, 0}, {procctl_registry_fd(reg), POLLIN, 0},
				      {hello ? procctl_hello_fd(hello) : -1, POLLIN, 0}};
		poll(q, 3, 5);
		if (hello)
			procctl_hello_dispatch(hello);
		procctl_registry_dispatch(reg);
		if (q[0].revents) {
			*t = line_wait(fd);
			return pid;
		}
	}
}

static void stop(pid_t pid)
{
	stop_child(pid);
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

/* Discovery latencies of n processes into l, sorted; how many were
 * attached before their procctl_init returned. */
static int discover(struct lat *l, int n)
{
	int i, early = 0;
	for (i = 0; i < n; i++) {
		struct stamps t;
		pid_t pid = start(&t);
		pump_until_attached();
		early += attached_at <= t.ret;
		lat_put(l, i, t, attached_at);
		stop(pid);
	}
	lat_sort(l, n);
	return early;
}

/* Targeted attaches (us): notify(pid) of an initialised process to ATTACHED. */
static void targeted(double *v, int n)
{
	int i;
	for (i = 0; i < n; i++) {
		struct stamps t;
		int64_t t0;
		pid_t pid = start(&t);
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

/* ---- the daemon: procctl-node and a WatchEvents stream ---------------- */

/* Start procctl-node for the consumer, in dir, and wait until it serves. */
static void node_start(void)
{
	char target[96];
	if ((node_pid = bench_node_spawn(PROCCTL_NODE_PATH, dir, consumer, target, sizeof target)) < 0)
		die("fork");
	grpc_init();
	if (bench_node_connect(target, consumer, &ch, &cq) < 0)
		die("the daemon did not serve within 10 s");
}

/* When the stream's next Attached (else Detached) event about pid came,
 * the others skipped; waiting at most 10 s for each. */
static int64_t watch_until(pid_t pid, int attached)
{
	for (;;) {
		Procctl__V1__WatchEventsResponse *e;
		ProtobufCMessage *m;
		int64_t at;
		int r, hit;
		r = pb_stream_wait(&watch, &procctl__v1__watch_events_response__descriptor, bench_in_s(10), &m);
		at = bench_now_ns();
		if (r <= 0 || !m)
			die(r ? "WatchEvents ended" : "no event from the daemon within 10 s");
		e = (void *)m;
		if (attached)
			hit = e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_ATTACHED && e->attached->process &&
			      e->attached->process->ref && e->attached->process->ref->pid == pid;
		else
			hit = e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_DETACHED &&
			      e->detached->process && e->detached->process->pid == pid;
		protobuf_c_message_free_unpacked(m, NULL);
		if (hit)
			return at;
	}
}

/* Open the watch of the consumer and take its snapshot. */
static void watch_open(void)
{
	Procctl__V1__WatchEventsRequest rq = PROCCTL__V1__WATCH_EVENTS_REQUEST__INIT;
	Procctl__V1__Selector f = PROCCTL__V1__SELECTOR__INIT;
	ProtobufCMessage *m = NULL;
	f.consumer = consumer;
	rq.filter = &f;
	if (pb_stream_start(&watch, ch, cq, "/procctl.v1.NodeService/WatchEvents", bench_in_s(3600), &rq.base) < 0 ||
	    pb_stream_wait(&watch, &procctl__v1__watch_events_response__descriptor, bench_in_s(10), &m) <= 0 || !m ||
	    ((Procctl__V1__WatchEventsResponse *)(void *)m)->event_case != PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_SNAPSHOT)
		die("WatchEvents: no snapshot first");
	protobuf_c_message_free_unpacked(m, NULL);
}

/* Discovery latencies through the daemon of n processes into l, sorted;
 * how many were told before their procctl_init returned. Each is killed,
 * and its Detached heard, before the next starts. */
static int node_discover(struct lat *l, int n)
{
	int i, fd, early = 0;
	for (i = 0; i < n; i++) {
		pid_t pid = spawn(consumer, NULL, &fd);
		int64_t at = watch_until(pid, 1);
		struct stamps t = line_wait(fd); /* the pipe kept them */
		early += at <= t.ret;
		lat_put(l, i, t, at);
		stop_child(pid);
		watch_until(pid, 0);
	}
	lat_sort(l, n);
	return early;
}

/* The daemon's path: NPROC latencies into l, sorted. */
static void node_path(struct lat *l, struct lat *warm)
{
	node_start();
	watch_open();
	node_discover(warm, 1); /* the stream works; the client's file gets its uprobe */
	fprintf(stderr, "bench_hello: daemon: %d of %d processes told before procctl_init returned\n",
		node_discover(l, NPROC), NPROC);
	pb_stream_end(&watch, 1, NULL);
	grpc_completion_queue_shutdown(cq);
	grpc_completion_queue_destroy(cq);
	grpc_channel_destroy(ch);
	grpc_shutdown();
	kill(node_pid, SIGTERM);
	waitpid(node_pid, NULL, 0);
	node_pid = 0;
}

/* ---- the peer: a socket directory and inotify ------------------------- */

/* Wait for the inotify event of sdir/<pid>.sock, then connect to it (again
 * while refused: bind made the file, listen may not have run yet; each
 * retry counted in *retries): when connect returned. */
static int64_t peer_connect(int ifd, const char *sdir, pid_t pid, int *retries)
{
	union {
		struct inotify_event ev;
		char buf[sizeof(struct inotify_event) + NAME_MAX + 1];
	} u;
	struct inotify_event *e;
	struct sockaddr_un a;
	char name[32];
	ssize_t n, off;
	int s, found = 0;
	snprintf(name, sizeof name, "%d.sock", (int)pid);
	while (!found) {
		struct pollfd p = {ifd, POLLIN, 0};
		if (poll(&p, 1, 10000) <= 0 || (n = read(ifd, u.buf, sizeof u.buf)) <= 0)
			die("no socket within 10 s");
		for (off = 0; off < n; off += (ssize_t)(sizeof *e + e->len)) {
			e = (void *)(u.buf + off);
			found |= e->len && !strcmp(e->name, name);
		}
	}
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	if (snprintf(a.sun_path, sizeof a.sun_path, "%s/%s", sdir, name) >= (int)sizeof a.sun_path)
		die("socket path too long");
	for (;;) {
		int64_t at;
		if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
			die("socket");
		if (!connect(s, (struct sockaddr *)&a, sizeof a)) {
			at = bench_now_ns();
			close(s);
			return at;
		}
		if (errno != ECONNREFUSED)
			die("connect");
		close(s);
		++*retries;
		sched_yield();
	}
}

/* Discovery latencies of n peers (to connect's return) into l, sorted;
 * how many connects were refused on the way. */
static int peer_discover(struct lat *l, int n)
{
	char sdir[96], path[128];
	int i, fd, ifd, retries = 0;
	snprintf(sdir, sizeof sdir, "%s/socks", dir);
	if (mkdir(sdir, 0700) < 0)
		die("mkdir");
	if ((ifd = inotify_init1(IN_CLOEXEC)) < 0 || inotify_add_watch(ifd, sdir, IN_CREATE) < 0)
		die("inotify");
	for (i = 0; i < n; i++) {
		pid_t pid = spawn("--socket", sdir, &fd);
		int64_t at = peer_connect(ifd, sdir, pid, &retries);
		lat_put(l, i, line_wait(fd), at);
		stop_child(pid);
		snprintf(path, sizeof path, "%s/%d.sock", sdir, (int)pid);
		unlink(path);
	}
	close(ifd);
	lat_sort(l, n);
	return retries;
}

int main(void)
{
	static struct lat lib, slow, node, peer, warm;
	static double tgt[NPROC];
	double hit;
	snprintf(consumer, sizeof consumer, "bh%d", (int)getpid());
	snprintf(dir, sizeof dir, "/tmp/bench_hello.XXXXXX");
	if (!mkdtemp(dir)) {
		dir[0] = 0;
		die("mkdtemp");
	}
	snprintf(lockdir, sizeof lockdir, "%s/lib", dir);
	if (mkdir(lockdir, 0700) < 0)
		die("mkdir");
	hit = hit_cost();
	if (hit < 0)
		hit = 0;

	world(3600000000000ull, 0);
	targeted(tgt, NPROC);
	world_end();

	world(3600000000000ull, 1);
	discover(&warm, 1); /* the client's file gets its uprobe */
	fprintf(stderr, "bench_hello: library: %d of %d processes attached before procctl_init returned\n",
		discover(&lib, NPROC), NPROC);
	world_end();

	world(100000000ull, 0);
	discover(&slow, NPROC);
	world_end();

	node_path(&node, &warm);
	fprintf(stderr, "bench_hello: peer: %d connects refused (before listen) and retried\n", peer_discover(&peer, NPROC));
	cleanup();
	fprintf(stderr, "bench_hello: from init's (listen's) return, p50/p99 us: library %.1f/%.1f, daemon %.1f/%.1f, "
		"peer %.1f/%.1f\n", P50(lib.ret), P99(lib.ret), P50(node.ret), P99(node.ret), P50(peer.ret), P99(peer.ret));

	bench_report("hello_discovery_p50", "us", P50(lib.ret), P50(tgt) + hit);
	bench_report("hello_discovery_p99", "us", P99(lib.ret), P99(tgt) + hit);
	bench_report("hello_discovery_rescan_only_p50", "us", P50(slow.ret), P50(tgt) + hit);
	bench_report("node_discovery_p50", "us", P50(node.call), P50(lib.call));
	bench_report("node_discovery_p99", "us", P99(node.call), P99(lib.call));
	bench_report("library_discovery_vs_inotify_p50", "us", P50(lib.call), P50(peer.call));
	bench_report("node_discovery_vs_inotify_p50", "us", P50(node.call), P50(peer.call));
	return 0;
}
