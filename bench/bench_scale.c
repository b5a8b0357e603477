/* SPDX-License-Identifier: Apache-2.0 */
/* bench_scale - procctl-node with many regions (issue 19): for N of 1,000
 * and 10,000 (or the arguments), a daemon and N regions in N/4 farm
 * processes (test/farm.c, 4 regions each), found by the hello probe;
 * once every one is attached (ListProcesses), nothing happens for
 * BENCH_IDLE_SECONDS (60), and:
 *   node_idle_cpu_N       the daemon's CPU milliseconds per second,
 *                         against its heartbeat thread's (what the leases
 *                         need), one clock tick over the window at least;
 *   node_idle_wakeups_N   its threads' wakeups (voluntary context
 *                         switches: a preemption is the CPU's contention)
 *                         per second, against what the heartbeats alone
 *                         need: 4 per lease (10 s) in one batch, 0.4;
 *   node_idle_wakeups_procctl_N  the same of its own threads (procctl-*),
 *                         the gRPC C core's timer threads left out (the
 *                         figure by thread goes to stderr);
 *   node_idle_wakeups_vs_grpc_N  all its threads' again, against the
 *                         heartbeats' 0.4 plus what a bare gRPC server
 *                         (grpc_idle: the same library, no call) wakes
 *                         over the same window: the floor with the
 *                         library the design links;
 *   node_rss_anon_N       its anonymous memory (RssAnon, KiB), against the
 *                         same before any region;
 *   node_rss_shmem_N      the region pages it maps (RssShmem, KiB),
 *                         reported apart, against one page per region;
 * then a Publish of 4 KiB to all N regions with wait-for-ack (120 s): one
 * call a schema version (the selector is consumer and version; the farm's
 * versions are 1..4), all four at once, version 1 the last (a farm process
 * sleeps on its first region: that write wakes it, and it finds its
 * others written); the farm's processes ack what they find (--ack):
 *   node_publish_all_N    ms from the calls' start until the last of them
 *                         returned, every result APPLIED (else it fails),
 *                         against N x (one FUTEX_WAKE on a shared word, no
 *                         waiter, and one 4 KiB process_vm_readv from a
 *                         live process), timed in this process (median of
 *                         5 runs of N in a row): what a region's write and
 *                         read cannot do with less;
 *   node_publish_all_vs_wakes_N  the same, against the floor with the
 *                         hand-offs the design requires: N/4 processes
 *                         asleep in FUTEX_WAIT, each woken and answering
 *                         with a FUTEX_WAKE of this one, and N 4 KiB reads,
 *                         the processes on the same cores (median of 3);
 *   node_publish_apply_p99_N  ms from the calls' start until 99% of the
 *                         regions' Acked (APPLIED) events came on a
 *                         WatchEvents stream of the consumer opened before
 *                         (a region is the API's "process"), against the
 *                         time at which that floor's ceil(0.99 N)th wake
 *                         and read was done;
 *   node_publish_check_max_N  the longest grpc.health.v1 Check, one a
 *                         millisecond on a channel of its own (its own
 *                         connection), during the publish, against the
 *                         median of 50 on the idle daemon just before;
 * and first, a start storm: 1,000 processes of one region each, forked at
 * once by a program the daemon has not seen (its hello probe is placed
 * as they start), found through the probe:
 *   node_start_storm_p50, _p99, _max  ms from the program's start until
 *                         half, 99% and all of them are listed, against
 *                         the time it took to start them all (its
 *                         "ready").
 * Raises its fd limit where allowed (the daemon holds two fds a process);
 * the daemon keeps 65,536 events for watchers (2 a region: Acked, StateChanged).
 * Usage: bench_scale [N...] (PROCCTL_NODE_PATH and FARM_PATH built in). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>

#include "bench.h"
#include "bench_grpc.h"
#include "bench_proc.h"
#include "procctl/v1/node.pb-c.h"

#define PER_PROCESS 4
#define STORM 1000
#define LEASE_S 10.0 /* the daemon's default lease */
#define PAYLOAD 4096 /* a farm region's payload capacity */
#define CHECKS 50
#define WAIT_MS 120000

static char dir[64];
static pid_t daemon_pid, farm_pid, copy_pid;

static void cleanup(void)
{
	char cmd[128];
	if (farm_pid > 0)
		kill(farm_pid, SIGTERM); /* it ends its processes */
	if (daemon_pid > 0)
		kill(daemon_pid, SIGKILL);
	if (copy_pid > 0)
		kill(copy_pid, SIGKILL);
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

/* A daemon for consumer "scale<pid>_<tag>", its channel, and a farm. */
struct world {
	char cons[32], target[160];
	grpc_channel *ch;
	grpc_completion_queue *cq;
	struct bench_farm farm;
};

static void world_start(struct world *w, const char *tag, long max_regions)
{
	char sock[128], locks[96], state[96], max[24];
	snprintf(sock, sizeof sock, "%s/node_%s.sock", dir, tag);
	snprintf(w->target, sizeof w->target, "unix:%s", sock);
	snprintf(locks, sizeof locks, "%s/locks_%s", dir, tag);
	snprintf(state, sizeof state, "%s/state_%s", dir, tag);
	snprintf(w->cons, sizeof w->cons, "scale%d_%s", (int)getpid(), tag);
	snprintf(max, sizeof max, "%ld", max_regions);
	{
		char *argv[] = {PROCCTL_NODE_PATH, "--grpc-listen", w->target, "--lock-dir", locks, "--state-dir", state,
				"--consumers", w->cons, "--max-regions", max, "--http-listen", "",
				"--watch-history", "65536", NULL}; /* the publish's 2 events a region, watched */
		daemon_pid = bench_spawn(argv, -1, -1, -1);
	}
	if (bench_node_connect(w->target, w->cons, &w->ch, &w->cq) < 0)
		die("the daemon did not serve");
}

static void farm_start(struct world *w, long procs, int per)
{
	if (bench_farm_start(&w->farm, FARM_PATH, w->cons, procs, per, 0) < 0)
		die("could not start the farm");
	farm_pid = w->farm.pid;
}

/* When the farm said ready (all its processes made their regions). */
static int64_t farm_ready(struct world *w)
{
	if (bench_farm_ready(&w->farm) < 0)
		die("the farm did not start");
	return bench_now_ns();
}

static void world_stop(struct world *w)
{
	grpc_completion_queue_shutdown(w->cq);
	grpc_completion_queue_destroy(w->cq);
	grpc_channel_destroy(w->ch);
	bench_farm_stop(&w->farm);
	kill(daemon_pid, SIGTERM);
	waitpid(daemon_pid, NULL, 0);
	farm_pid = daemon_pid = 0;
}

/* ---- a publish to every region ----------------------------------------- */

/* The floor's other side: a live process holding PAYLOAD bytes of its own
 * at copy_buf, and a word shared with it. Forked before any thread. */
static unsigned char copy_buf[PAYLOAD];
static uint32_t *copy_word;

static void copy_start(void)
{
	copy_word = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (copy_word == MAP_FAILED)
		die("mmap");
	if ((copy_pid = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		memset(copy_buf, 0x5a, sizeof copy_buf);
		for (;;)
			pause();
	}
	if (copy_pid < 0)
		die("fork");
}

/* What a region's publish cannot do with less: one FUTEX_WAKE on a shared
 * word and one PAYLOAD-byte process_vm_readv from a live process, n times
 * in a row: the ms they take, and in *p99 the ms until the ceil(0.99 n)th
 * is done (medians of 5 runs). */
static double copy_floor(long n, double *p99)
{
	static unsigned char local[PAYLOAD];
	struct iovec l = {local, PAYLOAD}, r = {copy_buf, PAYLOAD};
	double all[5], at[5] = {0, 0, 0, 0, 0};
	long k = (n * 99 + 99) / 100, i;
	int run;
	for (run = 0; run < 5; run++) {
		int64_t t0 = bench_now_ns();
		for (i = 0; i < n; i++) {
			bench_futex(copy_word, FUTEX_WAKE, 1);
			if (process_vm_readv(copy_pid, &l, 1, &r, 1, 0) != PAYLOAD)
				die("process_vm_readv from the floor's process");
			if (i + 1 == k)
				at[run] = (double)(bench_now_ns() - t0) / 1e6;
		}
		all[run] = (double)(bench_now_ns() - t0) / 1e6;
	}
	*p99 = bench_median(at, 5);
	return bench_median(all, 5);
}

/* The floor's reads: n PAYLOAD-byte reads from the copy process (arg). */
static void copy_reads(void *arg)
{
	static unsigned char local[PAYLOAD];
	struct iovec l = {local, PAYLOAD}, r = {copy_buf, PAYLOAD};
	long i, n = *(const long *)arg;
	for (i = 0; i < n; i++)
		if (process_vm_readv(copy_pid, &l, 1, &r, 1, 0) != PAYLOAD)
			die("process_vm_readv from the floor's process");
}

/* Health Checks on a channel of their own (its own connection), in a
 * loop on their own thread (one a millisecond) until stop: the longest. */
struct checker {
	grpc_channel *ch;
	grpc_completion_queue *cq;
	pthread_t th;
	int stop, n;
	double max_ms;
};

static double check_ms(struct checker *c)
{
	int64_t t0 = bench_now_ns();
	if (!bench_health_check(c->ch, c->cq))
		die("a health Check was not answered SERVING");
	return (double)(bench_now_ns() - t0) / 1e6;
}

static void *checker_run(void *arg)
{
	struct checker *c = arg;
	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		double ms = check_ms(c);
		if (ms > c->max_ms)
			c->max_ms = ms;
		c->n++;
		usleep(1000);
	}
	return NULL;
}

static void checker_open(struct checker *c, const struct world *w)
{
	grpc_arg own = {GRPC_ARG_INTEGER, GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, {.integer = 1}};
	grpc_channel_args args = {1, &own};
	grpc_channel_credentials *cr = grpc_insecure_credentials_create();
	memset(c, 0, sizeof *c);
	c->ch = grpc_channel_create(w->target, cr, &args);
	grpc_channel_credentials_release(cr);
	c->cq = grpc_completion_queue_create_for_pluck(NULL);
}

static void checker_close(struct checker *c)
{
	grpc_completion_queue_shutdown(c->cq);
	grpc_completion_queue_destroy(c->cq);
	grpc_channel_destroy(c->ch);
}

/* A WatchEvents stream of the consumer, read on its own thread: when each
 * of the first `want` Acked (APPLIED) events came, in order. */
struct acks {
	struct pb_stream s;
	grpc_completion_queue *cq;
	pthread_t th;
	long want, got;
	int64_t *at;
};

static void *acks_run(void *arg)
{
	struct acks *a = arg;
	Procctl__V1__WatchEventsResponse *e;
	while (a->got < a->want &&
	       (e = (void *)pb_stream_next(&a->s, &procctl__v1__watch_events_response__descriptor))) {
		if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_ACKED &&
		    e->acked->result == PROCCTL__V1__ACK_RESULT__ACK_RESULT_APPLIED) {
			a->at[a->got] = bench_now_ns();
			__atomic_store_n(&a->got, a->got + 1, __ATOMIC_RELEASE);
		}
		protobuf_c_message_free_unpacked(&e->base, NULL);
	}
	return NULL;
}

/* Open it, take its snapshot, and start its thread. */
static void acks_open(struct acks *a, struct world *w, long want)
{
	Procctl__V1__WatchEventsRequest rq = PROCCTL__V1__WATCH_EVENTS_REQUEST__INIT;
	Procctl__V1__Selector f = PROCCTL__V1__SELECTOR__INIT;
	Procctl__V1__WatchEventsResponse *snap = NULL;
	memset(a, 0, sizeof *a);
	f.consumer = w->cons;
	rq.filter = &f;
	a->want = want;
	a->cq = grpc_completion_queue_create_for_pluck(NULL);
	if (!(a->at = calloc((size_t)want, sizeof *a->at)))
		die("out of memory");
	if (pb_stream_start(&a->s, w->ch, a->cq, "/procctl.v1.NodeService/WatchEvents", bench_in_s(WAIT_MS / 1000 + 120),
			    &rq.base) < 0 ||
	    !(snap = (void *)pb_stream_next(&a->s, &procctl__v1__watch_events_response__descriptor)) ||
	    snap->event_case != PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_SNAPSHOT)
		die("WatchEvents: no snapshot first");
	protobuf_c_message_free_unpacked(&snap->base, NULL);
	if (pthread_create(&a->th, NULL, acks_run, a))
		die("pthread_create");
}

/* End it (cancelled when it has all it wanted, else its status said). */
static void acks_close(struct acks *a)
{
	char *details = NULL;
	grpc_status_code st = pb_stream_end(&a->s, a->got == a->want, &details);
	if (a->got < a->want)
		fprintf(stderr, "bench_scale: WatchEvents ended after %ld Acked events: status %d (%s)\n", a->got, (int)st,
			details ? details : "");
	gpr_free(details);
	grpc_completion_queue_shutdown(a->cq);
	grpc_completion_queue_destroy(a->cq);
	free(a->at);
}

/* A Publish of PAYLOAD bytes to the consumer's regions of schema version
 * v, with wait-for-ack, started as a pb_stream (one response: several
 * run at once, each on w->cq). */
static void publish_start(struct pb_stream *s, struct world *w, uint32_t v)
{
	static uint8_t payload[PAYLOAD];
	Procctl__V1__PublishRequest rq = PROCCTL__V1__PUBLISH_REQUEST__INIT;
	Procctl__V1__Selector sel = PROCCTL__V1__SELECTOR__INIT;
	memset(payload, 'p', sizeof payload);
	sel.consumer = w->cons;
	sel.schema_version = v;
	rq.selector = &sel;
	rq.payload.len = sizeof payload;
	rq.payload.data = payload;
	rq.wait_ms = WAIT_MS;
	if (pb_stream_start(s, w->ch, w->cq, "/procctl.v1.NodeService/Publish", bench_in_s(WAIT_MS / 1000 + 60),
			    &rq.base) < 0)
		die("Publish: the call did not start");
}

/* Its response: the number of results, every one APPLIED (else it dies). */
static long publish_end(struct pb_stream *s)
{
	Procctl__V1__PublishResponse *r = (void *)pb_stream_next(s, &procctl__v1__publish_response__descriptor);
	char *details = NULL;
	grpc_status_code st = pb_stream_end(s, 0, &details);
	long n;
	size_t i;
	if (!r || st != GRPC_STATUS_OK) {
		fprintf(stderr, "bench_scale: Publish: status %d (%s)\n", (int)st, details ? details : "");
		die("Publish failed");
	}
	gpr_free(details);
	for (i = 0; i < r->n_results; i++)
		if (r->results[i]->status != PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_APPLIED) {
			fprintf(stderr, "bench_scale: Publish: pid %d: status %d (%s)\n", (int)r->results[i]->process->pid,
				(int)r->results[i]->status, r->results[i]->error);
			die("a Publish result is not APPLIED");
		}
	n = (long)r->n_results;
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return n;
}

/* PAYLOAD bytes to all n regions: one call a schema version, all at once,
 * the processes' first regions' (version 1) last (a farm process sleeps on
 * its first region: that write wakes it, and it finds the others written),
 * watched, and Checked meanwhile. */
static void publish_all(struct world *w, long n)
{
	struct pb_stream calls[PER_PROCESS];
	struct checker c;
	struct acks a;
	double idle_ms[CHECKS], floor_ms, floor_p99, all_ms, p99_ms, wakes_ms;
	long got = 0, acked, k = (n * 99 + 99) / 100, i;
	char name[64];
	int64_t t0;
	int v;

	checker_open(&c, w);
	for (i = 0; i < CHECKS; i++)
		idle_ms[i] = check_ms(&c);
	acks_open(&a, w, n);
	if (pthread_create(&c.th, NULL, checker_run, &c))
		die("pthread_create");
	t0 = bench_now_ns();
	for (v = PER_PROCESS; v >= 1; v--)
		publish_start(&calls[PER_PROCESS - v], w, (uint32_t)v);
	for (v = 0; v < PER_PROCESS; v++)
		got += publish_end(&calls[v]);
	all_ms = (double)(bench_now_ns() - t0) / 1e6;
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
	pthread_join(c.th, NULL);
	for (i = 0; i < 1000 && __atomic_load_n(&a.got, __ATOMIC_ACQUIRE) < n; i++)
		usleep(10000); /* the last events on their way: 10 s at most */
	if (i == 1000)
		grpc_call_cancel(a.s.call, NULL);
	pthread_join(a.th, NULL);
	acked = a.got;
	p99_ms = acked == n ? (double)(a.at[k - 1] - t0) / 1e6 : 0;
	acks_close(&a);
	checker_close(&c);
	if (got != n || acked != n) {
		fprintf(stderr, "bench_scale: %ld results and %ld Acked events of %ld regions\n", got, acked, n);
		die("the publish did not reach every region");
	}
	floor_ms = copy_floor(n, &floor_p99);
	snprintf(name, sizeof name, "node_publish_all_%ld", n);
	bench_report(name, "ms", all_ms, floor_ms);
	if ((wakes_ms = bench_wake_floor(n / PER_PROCESS, 1, copy_reads, &n)) < 0)
		die("the wake floor's processes");
	snprintf(name, sizeof name, "node_publish_all_vs_wakes_%ld", n);
	bench_report(name, "ms", all_ms, wakes_ms);
	snprintf(name, sizeof name, "node_publish_apply_p99_%ld", n);
	bench_report(name, "ms", p99_ms, floor_p99);
	snprintf(name, sizeof name, "node_publish_check_max_%ld", n);
	bench_report(name, "ms", c.max_ms, bench_median(idle_ms, CHECKS));
	fprintf(stderr, "bench_scale: %ld regions: %d Checks during the publish\n", n, c.n);
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
	unsigned long long bare0, bare1;
	pid_t beat, bare, none;
	int i;

	snprintf(tag, sizeof tag, "%ld", n);
	world_start(&w, tag, 2 * n);
	{
		char target[160];
		char *argv[] = {GRPC_IDLE_PATH, target, NULL};
		snprintf(target, sizeof target, "unix:%s/bare_%s.sock", dir, tag);
		bare = bench_spawn(argv, -1, -1, -1);
	}
	anon0 = bench_status_kib(daemon_pid, "RssAnon");
	farm_start(&w, n / PER_PROCESS, PER_PROCESS);
	for (i = 0; i < 600 && (got = bench_listed(w.ch, w.cq, w.cons)) < n; i++)
		sleep(1);
	if (got < n) {
		fprintf(stderr, "bench_scale: %ld of %ld regions attached in 10 minutes\n", got, n);
		die("not all attached");
	}
	sleep(3); /* the attach's tail: its first reads, the ready scan */
	memset(&t0, 0, sizeof t0);
	memset(&t1, 0, sizeof t1);
	sw0 = bench_switches(daemon_pid, "procctl-beat", &beat, &t0);
	bare0 = bench_switches(bare, "", &none, NULL);
	c0 = bench_cpu_s(daemon_pid, 0);
	b0 = beat ? bench_cpu_s(daemon_pid, beat) : 0;
	sleep((unsigned)seconds);
	bare1 = bench_switches(bare, "", &none, NULL);
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
	snprintf(name, sizeof name, "node_idle_wakeups_vs_grpc_%ld", n);
	bench_report(name, "1/s", (double)(sw1 - sw0) / seconds, 4.0 / LEASE_S + (double)(bare1 - bare0) / seconds);
	kill(bare, SIGTERM);
	waitpid(bare, NULL, 0);
	snprintf(name, sizeof name, "node_rss_anon_%ld", n);
	bench_report(name, "KiB", (double)bench_status_kib(daemon_pid, "RssAnon"), (double)anon0);
	snprintf(name, sizeof name, "node_rss_shmem_%ld", n);
	bench_report(name, "KiB", (double)bench_status_kib(daemon_pid, "RssShmem"), (double)n * 4.0);
	publish_all(&w, n);
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
		got = bench_listed(w.ch, w.cq, w.cons);
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
	copy_start(); /* before any thread */
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
