/* SPDX-License-Identifier: Apache-2.0 */
/* bench_many - a publish to N (1,000) processes at once, every one acked
 * (issue 39): procctl-node's Publish against the library it wraps and
 * against the peer a user would build instead, in one run. Each path has
 * processes of its own, one region (or socket) each:
 *   the daemon    one Publish (selector: its consumer, 32 bytes, a wait
 *                 for every ack) to its farm's processes (test/farm.c
 *                 --ack), every result APPLIED;
 *   the library   libprocctl-agent in this process, agent of a farm of a
 *                 consumer the daemon does not serve: procctl_client_write
 *                 to each, then procctl_client_wait_ack for each;
 *   the push      bench_push.h peers (a listener thread in each): the
 *                 config written to each socket, then each ack read.
 * Blocked: N processes asleep until woken (procctl_wait; the peers' main
 * threads in pause()), rounds interleaved (median of ROUNDS), ms:
 *   node_many_blocked_vs_library_N  the daemon against the library;
 *   library_many_blocked_vs_push_N  the library against the push;
 *   node_many_blocked_vs_push_N     the daemon against the push;
 *   node_many_blocked_cpu_vs_library_N  the daemon's CPU time a round (all
 *                 its threads) against this thread's for the library's.
 * One stopped: STOPPED (100) processes, the first of each path's stopped
 * (SIGSTOP): until the other 99 acked (the daemon's: a Publish without a
 * wait, then the Acked events on a WatchEvents stream opened before, as
 * its wait would last for the stopped one; the library's: its waits but
 * the stopped one's):
 *   node_one_stopped_vs_push_100, library_one_stopped_vs_push_100,
 *   node_one_stopped_vs_library_100.
 * Busy: N processes whose main loops work BUSY_US on the CPU between
 * looks (farm --busy), all on the machine's cores; the other path's farm
 * stopped (SIGSTOP) meanwhile (median of BUSY_ROUNDS):
 *   node_many_busy_vs_library_N     ms, the daemon against the library.
 * Usage: bench_many [N] (PROCCTL_NODE_PATH and FARM_PATH built in). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>

#include "bench.h"
#include "bench_grpc.h"
#include "bench_proc.h"
#include "bench_push.h"
#include "client.h" /* procctl_client_claim: the bench is the library path's agent */

#define ROUNDS 9
#define BUSY_ROUNDS 5
#define BUSY_US 10
#define WAIT_MS 120000
#define STOPPED 100 /* one of them stopped */

static char dir[64], node_cons[32], lib_cons[32];
static pid_t daemon_pid;
static struct bench_farm node_farm, lib_farm;
static struct bench_push *push;
static procctl_client_t **lib; /* the library's clients, nlib of them */
static int64_t *lib_gen;       /* what a round wrote to each */
static pid_t *lib_pid;         /* each one's process */
static long n, procs, nlib;    /* N, and the processes each path has now */
static grpc_channel *ch;
static grpc_completion_queue *cq;

static void cleanup(void)
{
	char cmd[128];
	long i;
	while (nlib)
		procctl_client_close(lib[--nlib]);
	if (node_farm.pid > 0)
		bench_farm_stop(&node_farm);
	if (lib_farm.pid > 0)
		bench_farm_stop(&lib_farm);
	for (i = 0; push && i < n; i++)
		if (push[i].pid > 0)
			kill(push[i].pid, SIGKILL);
	if (daemon_pid > 0)
		kill(daemon_pid, SIGKILL);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (dir[0] && system(cmd) != 0)
		fprintf(stderr, "bench_many: could not remove %s\n", dir);
}

static _Noreturn void die(const char *what)
{
	fprintf(stderr, "bench_many: %s\n", what);
	cleanup();
	exit(1);
}

static double thread_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- the three paths, one round each: its ms ---------------------------- */

/* A Publish to the daemon's farm (its procs processes), with a wait (every
 * result APPLIED) or without (every one WRITTEN). */
static double node_round(int round, uint32_t wait_ms)
{
	Procctl__V1__PublishRequest rq = PROCCTL__V1__PUBLISH_REQUEST__INIT;
	Procctl__V1__Selector sel = PROCCTL__V1__SELECTOR__INIT;
	Procctl__V1__PublishResponse *r = NULL;
	Procctl__V1__PublishStatus want = wait_ms ? PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_APPLIED
						  : PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_WRITTEN;
	char payload[32], *why = NULL;
	int64_t t0 = bench_now_ns();
	size_t i, good = 0;
	grpc_status_code st;
	sel.consumer = node_cons;
	sel.schema_version = 1;
	rq.selector = &sel;
	rq.payload.len = (size_t)snprintf(payload, sizeof payload, "bench many %d", round);
	rq.payload.data = (uint8_t *)payload;
	rq.wait_ms = wait_ms;
	st = pb_unary(ch, cq, "/procctl.v1.NodeService/Publish", bench_in_s(WAIT_MS / 1000 + 60), &rq.base,
		      &procctl__v1__publish_response__descriptor, (ProtobufCMessage **)&r, &why);
	t0 = bench_now_ns() - t0;
	for (i = 0; r && i < r->n_results; i++)
		good += r->results[i]->status == want;
	if ((long)good != procs)
		fprintf(stderr, "bench_many: %zu of %ld results %d (call status %d %s)\n", good, procs, (int)want, (int)st,
			why ? why : "");
	gpr_free(why);
	if (r)
		protobuf_c_message_free_unpacked(&r->base, NULL);
	if ((long)good != procs)
		die("the daemon's publish did not reach every process");
	return (double)t0 / 1e6;
}

/* The library's: a write to each of its procs clients, then a wait for
 * each one's ack but the process skip's (0: none); this thread's CPU ms
 * in *cpu_ms when not NULL. */
static double lib_round(int round, pid_t skip, double *cpu_ms)
{
	char payload[32];
	size_t len = (size_t)snprintf(payload, sizeof payload, "bench many %d", round);
	double c0 = thread_cpu_ms();
	int64_t t0 = bench_now_ns();
	long i;
	for (i = 0; i < nlib; i++)
		if ((lib_gen[i] = procctl_client_write(lib[i], payload, len)) <= 0)
			die("procctl_client_write");
	for (i = 0; i < nlib; i++) {
		struct procctl_ack ack;
		if (lib_pid[i] == skip)
			continue;
		if (procctl_client_wait_ack(lib[i], (uint64_t)lib_gen[i], t0 + WAIT_MS * 1000000ll, &ack) < 0 || ack.status)
			die("a library path's process did not ack");
	}
	t0 = bench_now_ns() - t0;
	if (cpu_ms)
		*cpu_ms = thread_cpu_ms() - c0;
	return (double)t0 / 1e6;
}

/* The push's: to each of procs peers, then each one's ack but the first
 * peer's when skip_first. */
static double push_round(int round, int skip_first)
{
	char buf[4 + 32], ack;
	uint32_t len = (uint32_t)snprintf(buf + 4, sizeof buf - 4, "bench many %d", round);
	int64_t t0 = bench_now_ns();
	long i;
	memcpy(buf, &len, 4);
	for (i = 0; i < procs; i++)
		if (bench_push_io(push[i].fd, buf, 4 + len, 1) < 0)
			die("a push peer's socket");
	for (i = skip_first ? 1 : 0; i < procs; i++)
		if (bench_push_io(push[i].fd, &ack, 1, 0) < 0)
			die("a push peer did not ack");
	return (double)(bench_now_ns() - t0) / 1e6;
}

/* The daemon's, watched: a Publish without a wait, then its Acked events
 * (APPLIED) on the stream w until want came. */
static double node_round_watched(int round, struct pb_stream *w, long want)
{
	int64_t t0 = bench_now_ns();
	long got = 0;
	node_round(round, 0);
	while (got < want) {
		Procctl__V1__WatchEventsResponse *e = (void *)pb_stream_next(w, &procctl__v1__watch_events_response__descriptor);
		if (!e)
			die("the WatchEvents stream ended");
		got += e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_ACKED &&
		       e->acked->result == PROCCTL__V1__ACK_RESULT__ACK_RESULT_APPLIED;
		protobuf_c_message_free_unpacked(&e->base, NULL);
	}
	return (double)(bench_now_ns() - t0) / 1e6;
}

/* ---- setting up ----------------------------------------------------------- */

static void daemon_start(void)
{
	char sock[128], target[160], locks[96], state[96], max[24];
	snprintf(sock, sizeof sock, "%s/node.sock", dir);
	snprintf(target, sizeof target, "unix:%s", sock);
	snprintf(locks, sizeof locks, "%s/locks", dir);
	snprintf(state, sizeof state, "%s/state", dir);
	snprintf(max, sizeof max, "%ld", 2 * n);
	{
		char *argv[] = {PROCCTL_NODE_PATH, "--grpc-listen", target, "--lock-dir", locks, "--state-dir", state,
				"--consumers", node_cons, "--max-regions", max, "--http-listen", "",
				"--watch-history", "65536", NULL};
		if ((daemon_pid = bench_spawn(argv, -1, -1, -1)) < 0)
			die("fork");
	}
	if (bench_node_connect(target, node_cons, &ch, &cq) < 0)
		die("the daemon did not serve");
}

/* The daemon's farm of procs processes, every region attached (busy:
 * stopped). */
static void node_farm_start(int busy_us)
{
	long got = -1;
	int i;
	if (bench_farm_start(&node_farm, FARM_PATH, node_cons, procs, 1, busy_us) < 0 || bench_farm_ready(&node_farm) < 0)
		die("the daemon's farm did not start");
	if (busy_us)
		kill(-node_farm.pid, SIGSTOP); /* its busy loops wait for their turn */
	for (i = 0; i < 1200 && (got = bench_listed(ch, cq, node_cons)) != procs; i++)
		usleep(100000);
	if (got != procs)
		die("the daemon did not attach its farm in 2 minutes");
}

static int lib_found(const struct procctl_scan_entry *e, void *arg)
{
	enum procctl_reject why;
	procctl_client_t *cl;
	(void)arg;
	if (nlib == procs || !(cl = procctl_client_attach(e, NULL, &why)))
		return -EPROTO;
	lib_pid[nlib] = e->pid;
	lib[nlib++] = cl;
	return procctl_client_claim(cl, 1, 1, 600000000000ull) < 0 ? -EPROTO : 0;
}

/* The library's farm of procs processes, every region attached and
 * claimed by this process (busy: stopped). */
static void lib_farm_start(int busy_us)
{
	if (bench_farm_start(&lib_farm, FARM_PATH, lib_cons, procs, 1, busy_us) < 0 || bench_farm_ready(&lib_farm) < 0)
		die("the library's farm did not start");
	if (busy_us)
		kill(-lib_farm.pid, SIGSTOP);
	if (procctl_scan(NULL, lib_cons, lib_found, NULL) != procs || nlib != procs)
		die("the library did not attach its farm");
}

static void farms_start(long k, int busy_us)
{
	while (nlib)
		procctl_client_close(lib[--nlib]);
	if (lib_farm.pid)
		bench_farm_stop(&lib_farm);
	if (node_farm.pid)
		bench_farm_stop(&node_farm);
	procs = k;
	node_farm_start(busy_us);
	lib_farm_start(busy_us);
}

/* The first process a farm started. */
static pid_t first_child(const struct bench_farm *f)
{
	char path[64];
	int pid = 0;
	FILE *c;
	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)f->pid, (int)f->pid);
	if (!(c = fopen(path, "r")) || fscanf(c, "%d", &pid) != 1 || pid <= 0)
		die("a farm's children");
	fclose(c);
	return (pid_t)pid;
}

/* ---- the modes -------------------------------------------------------------- */

static void report(const char *what, const char *vs, double v, double floor)
{
	char name[96];
	snprintf(name, sizeof name, "%s_vs_%s_%ld", what, vs, procs);
	bench_report(name, "ms", v, floor);
}

static void blocked(void)
{
	double node[ROUNDS], libr[ROUNDS], pushr[ROUNDS], ncpu[ROUNDS], lcpu[ROUNDS];
	int r;
	farms_start(n, 0);
	node_round(-1, WAIT_MS); /* a first round of each: the paths warm */
	lib_round(-1, 0, NULL);
	push_round(-1, 0);
	for (r = 0; r < ROUNDS; r++) {
		double c0 = bench_cpu_clock_s(daemon_pid);
		node[r] = node_round(r, WAIT_MS);
		ncpu[r] = (bench_cpu_clock_s(daemon_pid) - c0) * 1e3;
		libr[r] = lib_round(r, 0, &lcpu[r]);
		pushr[r] = push_round(r, 0);
	}
	report("node_many_blocked", "library", bench_median(node, ROUNDS), bench_median(libr, ROUNDS));
	report("library_many_blocked", "push", bench_median(libr, ROUNDS), bench_median(pushr, ROUNDS));
	report("node_many_blocked", "push", bench_median(node, ROUNDS), bench_median(pushr, ROUNDS));
	report("node_many_blocked_cpu", "library", bench_median(ncpu, ROUNDS), bench_median(lcpu, ROUNDS));
}

/* STOPPED processes, the first of each path's stopped: until the others
 * acked. The daemon's are watched (a user of its Publish with a wait
 * would wait for the stopped one). */
static void one_stopped(void)
{
	Procctl__V1__WatchEventsRequest rq = PROCCTL__V1__WATCH_EVENTS_REQUEST__INIT;
	Procctl__V1__Selector f = PROCCTL__V1__SELECTOR__INIT;
	ProtobufCMessage *snap;
	grpc_completion_queue *wcq = grpc_completion_queue_create_for_pluck(NULL);
	double node[ROUNDS], libr[ROUNDS], pushr[ROUNDS];
	pid_t lib_stopped;
	struct pb_stream w;
	int r;
	farms_start(STOPPED, 0);
	f.consumer = node_cons;
	rq.filter = &f;
	if (pb_stream_start(&w, ch, wcq, "/procctl.v1.NodeService/WatchEvents", bench_in_s(3600), &rq.base) < 0 ||
	    !(snap = pb_stream_next(&w, &procctl__v1__watch_events_response__descriptor)))
		die("WatchEvents");
	protobuf_c_message_free_unpacked(snap, NULL);
	node_round_watched(-1, &w, procs); /* warm, every one acked */
	kill(first_child(&node_farm), SIGSTOP);
	kill(lib_stopped = first_child(&lib_farm), SIGSTOP);
	kill(push[0].pid, SIGSTOP);
	for (r = 0; r < ROUNDS; r++) {
		node[r] = node_round_watched(r, &w, procs - 1);
		libr[r] = lib_round(r, lib_stopped, NULL);
		pushr[r] = push_round(r, 1);
	}
	kill(push[0].pid, SIGCONT);
	pb_stream_end(&w, 1, NULL);
	grpc_completion_queue_shutdown(wcq);
	grpc_completion_queue_destroy(wcq);
	report("node_one_stopped", "push", bench_median(node, ROUNDS), bench_median(pushr, ROUNDS));
	report("library_one_stopped", "push", bench_median(libr, ROUNDS), bench_median(pushr, ROUNDS));
	report("node_one_stopped", "library", bench_median(node, ROUNDS), bench_median(libr, ROUNDS));
}

static void busy(void)
{
	double node[BUSY_ROUNDS], libr[BUSY_ROUNDS];
	int r;
	farms_start(n, BUSY_US);
	for (r = 0; r < BUSY_ROUNDS; r++) {
		kill(-lib_farm.pid, SIGCONT);
		libr[r] = lib_round(r, 0, NULL);
		kill(-lib_farm.pid, SIGSTOP);
		kill(-node_farm.pid, SIGCONT);
		node[r] = node_round(r, WAIT_MS);
		kill(-node_farm.pid, SIGSTOP);
	}
	report("node_many_busy", "library", bench_median(node, BUSY_ROUNDS), bench_median(libr, BUSY_ROUNDS));
}

int main(int argc, char **argv)
{
	struct rlimit rl = {1 << 16, 1 << 16}; /* under fs.nr_open (1,048,576 by default) */
	long i;
	n = argc > 1 ? atol(argv[1]) : 1000;
	if (n < STOPPED || n > 10000)
		die("usage: bench_many [N], N of 100 to 10000");
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0 && !getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max; /* as far as allowed */
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < (rlim_t)(4 * n + 64))
		die("the fd limit is under 4 N: the library holds 2 fds a process, the push 1");
	if (!(push = calloc((size_t)n, sizeof *push)) || !(lib = calloc((size_t)n, sizeof *lib)) ||
	    !(lib_gen = calloc((size_t)n, sizeof *lib_gen)) || !(lib_pid = calloc((size_t)n, sizeof *lib_pid)))
		die("out of memory");
	for (i = 0; i < n; i++) /* before any thread */
		if (bench_push_start(&push[i]) < 0)
			die("could not start a push peer");
	snprintf(dir, sizeof dir, "/tmp/bench_many.%d", (int)getpid());
	snprintf(node_cons, sizeof node_cons, "many%d_node", (int)getpid());
	snprintf(lib_cons, sizeof lib_cons, "many%d_lib", (int)getpid());
	if (mkdir(dir, 0700) < 0)
		die("mkdir");
	grpc_init();
	daemon_start();
	blocked();
	one_stopped();
	busy();
	grpc_completion_queue_shutdown(cq);
	grpc_completion_queue_destroy(cq);
	grpc_channel_destroy(ch);
	cleanup();
	grpc_shutdown();
	return 0;
}
