/* SPDX-License-Identifier: Apache-2.0 */
/* bench_node - procctl-node through gRPC, with a C-core client over the
 * daemon's Unix socket, each figure against a floor measured in the same
 * run:
 *   node_publish_ack      Publish to one echo client with wait-for-ack,
 *                         against a grpc.health.v1 Check on the same
 *                         server and socket (the cost of a gRPC call);
 *   node_publish_ack_vs_library  the same against the library path in
 *                         the same run: libprocctl-agent in this process
 *                         (procctl_client_write, procctl_client_wait_ack) to
 *                         another echo client, of a consumer the daemon
 *                         does not serve;
 *   library_publish_ack_vs_push  that library path against the peer a
 *                         user would build instead (bench_push.h: a Unix
 *                         socket to a listener thread in the process, a
 *                         byte back as its ack), the same 32 bytes;
 *   node_publish_ack_vs_push  the daemon's against that peer;
 *   node_publish_ack_vs_check_and_rtt  the same against that Check plus
 *                         one cross-process futex round trip between
 *                         processes on different CPUs: a publish with
 *                         wait-for-ack cannot do with less (the client
 *                         must wake and its ack be heard), so this ratio
 *                         is what the daemon adds;
 *   node_idle_stream_rss  the daemon's RSS with 2,000 idle WatchEvents
 *                         streams, against its RSS before them;
 *   node_idle_stream_cpu  its CPU time per second with them open, against
 *                         the same without them;
 *   node_fanout_1000      a publish's events (Acked, StateChanged) to
 *                         1,000 watchers of its process, until the last has
 *                         them, against the same to one watcher (median of
 *                         9 rounds);
 *   node_restart_seen     a SIGKILLed daemon's successor started 1.5 s
 *                         later: ms from its start until a channel that
 *                         lived through it (procctl's reconnect backoff,
 *                         100 ms growing to 1 s) answers a Check, against
 *                         the same for a new channel each try (the first
 *                         moment anyone could see it; median of 3);
 *   node_restart_seen_grpc_defaults  the same for a channel with gRPC's
 *                         default backoff (1 s growing to 120 s);
 *   node_fanout_daemon_us_per_watcher  the daemon's CPU time (all its
 *                         threads, to the ns) over those rounds divided by
 *                         rounds x 2 events x 1,000 watchers (an event to
 *                         one watcher), against its CPU time per round with
 *                         one watcher (a publish and its events to one):
 *                         what each more watcher costs beside what a whole
 *                         publish costs.
 * (The daemon with thousands of regions: bench_scale.)
 * Usage: bench_node (PROCCTL_NODE_PATH and ECHO_CLIENT_PATH are built in). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "bench.h"
#include "bench_grpc.h"
#include "bench_push.h"
#include "bench_proc.h"
#include "client.h" /* procctl_client_claim: the bench is the library path's agent */
#include "procctl/v1/node.pb-c.h"

#define ROUNDS 2000
#define IDLE_STREAMS 2000
#define FANOUT 1000
#define FANOUT_ROUNDS 9

static grpc_channel *ch;
static grpc_completion_queue *pluck;
static char dir[64], sock[128], consumer[32];
static pid_t daemon_pid, echo_pid, lib_pid, push_pid;

static void cleanup(void)
{
	char cmd[128];
	if (push_pid > 0)
		kill(push_pid, SIGKILL);
	if (lib_pid > 0)
		kill(lib_pid, SIGKILL);
	if (echo_pid > 0)
		kill(echo_pid, SIGKILL);
	if (daemon_pid > 0)
		kill(daemon_pid, SIGKILL);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (dir[0] && system(cmd) != 0)
		fprintf(stderr, "bench_node: could not remove %s\n", dir);
}

static void die(const char *what)
{
	fprintf(stderr, "bench_node: %s\n", what);
	cleanup();
	exit(1);
}

static grpc_byte_buffer *pack(const ProtobufCMessage *m)
{
	grpc_byte_buffer *bb = pb_pack(m);
	if (!bb)
		die("out of memory");
	return bb;
}

/* One unary call: the response (the caller frees it), or NULL. */
static ProtobufCMessage *unary(const char *method, const ProtobufCMessage *req, const ProtobufCMessageDescriptor *rd)
{
	ProtobufCMessage *resp;
	pb_unary(ch, pluck, method, bench_in_s(10), req, rd, &resp, NULL);
	return resp;
}

static int health_check(void)
{
	return bench_health_check(ch, pluck);
}

/* Publish to pid and wait for its ack: 1 APPLIED. */
static int publish(pid_t pid, int round, uint32_t wait_ms)
{
	Procctl__V1__PublishRequest rq = PROCCTL__V1__PUBLISH_REQUEST__INIT;
	Procctl__V1__Selector sel = PROCCTL__V1__SELECTOR__INIT;
	char payload[32];
	Procctl__V1__PublishResponse *r;
	int ok;
	sel.pid = pid;
	rq.selector = &sel;
	rq.payload.len = (size_t)snprintf(payload, sizeof payload, "bench %d", round);
	rq.payload.data = (uint8_t *)payload;
	rq.wait_ms = wait_ms;
	r = (void *)unary("/procctl.v1.NodeService/Publish", &rq.base, &procctl__v1__publish_response__descriptor);
	ok = r && r->n_results == 1 &&
	     r->results[0]->status == (wait_ms ? PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_APPLIED
					       : PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_WRITTEN);
	if (r)
		protobuf_c_message_free_unpacked(&r->base, NULL);
	return ok;
}

static int listed(pid_t pid)
{
	Procctl__V1__GetProcessRequest rq = PROCCTL__V1__GET_PROCESS_REQUEST__INIT;
	Procctl__V1__ProcessRef ref = PROCCTL__V1__PROCESS_REF__INIT;
	ProtobufCMessage *r;
	ref.pid = pid;
	rq.process = &ref;
	r = unary("/procctl.v1.NodeService/GetProcess", &rq.base, &procctl__v1__get_process_response__descriptor);
	if (r)
		protobuf_c_message_free_unpacked(r, NULL);
	return r != NULL;
}

/* ---- the library path: this process as the agent of another client ------ */

static int first_region(const struct procctl_scan_entry *e, void *arg)
{
	*(struct procctl_scan_entry *)arg = *e;
	return 0;
}

/* An echo client of consumer c, attached and claimed by this process. */
static procctl_client_t *library_client(const char *c)
{
	struct procctl_scan_entry e;
	enum procctl_reject why;
	procctl_client_t *cl = NULL;
	int i;
	for (i = 0; i < 1000 && procctl_scan_pid(NULL, lib_pid, c, first_region, &e) < 1; i++)
		usleep(10000);
	if (i == 1000 || !(cl = procctl_client_attach(&e, NULL, &why)) || procctl_client_claim(cl, 1, 1, 60000000000ull) < 0)
		die("could not attach the library path's echo client");
	return cl;
}

/* Write to it and wait for its ack: 1 APPLIED. */
static int library_publish(procctl_client_t *cl, int round)
{
	struct procctl_ack ack;
	char payload[32];
	int64_t g = procctl_client_write(cl, payload, (size_t)snprintf(payload, sizeof payload, "bench %d", round));
	return g > 0 && procctl_client_wait_ack(cl, (uint64_t)g, bench_now_ns() + 5000000000ll, &ack) == 0 &&
	       ack.status == 0;
}

/* ---- WatchEvents streams, on their own completion queue -------------- */

struct stream {
	grpc_call *call;
	grpc_byte_buffer *req, *msg;
	grpc_metadata_array md;
	int msgs;
	char tag; /* its address is the receive tag */
};

static grpc_completion_queue *scq;

static void recv_next(struct stream *s)
{
	grpc_op op;
	memset(&op, 0, sizeof op);
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &s->msg;
	if (grpc_call_start_batch(s->call, &op, 1, &s->tag, NULL) != GRPC_CALL_OK)
		die("recv batch");
}

static void stream_open(struct stream *s, pid_t pid)
{
	Procctl__V1__WatchEventsRequest rq = PROCCTL__V1__WATCH_EVENTS_REQUEST__INIT;
	Procctl__V1__Selector f = PROCCTL__V1__SELECTOR__INIT;
	grpc_op ops[4];
	f.pid = pid;
	rq.filter = &f;
	memset(s, 0, sizeof *s);
	s->req = pack(&rq.base);
	grpc_metadata_array_init(&s->md);
	s->call = grpc_channel_create_call(ch, NULL, 0, scq, grpc_slice_from_static_string("/procctl.v1.NodeService/WatchEvents"),
					   NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	memset(ops, 0, sizeof ops);
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = s->req;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &s->md;
	if (grpc_call_start_batch(s->call, ops, 4, s, NULL) != GRPC_CALL_OK)
		die("stream batch");
	recv_next(s);
}

/* Drain stream completions until every one of n has at least want
 * messages. */
static void streams_wait(struct stream *ss, int n, int want)
{
	int behind = 0, i;
	for (i = 0; i < n; i++)
		behind += ss[i].msgs < want;
	while (behind) {
		grpc_event ev = grpc_completion_queue_next(scq, bench_in_s(60), NULL);
		struct stream *s;
		if (ev.type == GRPC_QUEUE_TIMEOUT)
			die("a stream stalled");
		if (ev.type != GRPC_OP_COMPLETE)
			continue;
		for (s = ss; s < ss + n && &s->tag != (char *)ev.tag; s++)
			;
		if (s == ss + n)
			continue; /* an open batch, or a stream closed before */
		if (!ev.success || !s->msg)
			die("a stream ended");
		grpc_byte_buffer_destroy(s->msg);
		s->msg = NULL;
		if (++s->msgs == want)
			behind--;
		recv_next(s);
	}
}

static void streams_close(struct stream *ss, int n)
{
	int i;
	for (i = 0; i < n; i++) {
		grpc_call_cancel(ss[i].call, NULL);
		grpc_call_unref(ss[i].call);
		grpc_byte_buffer_destroy(ss[i].req);
		grpc_metadata_array_destroy(&ss[i].md);
	}
}

/* ---- the daemon's resources ---------------------------------------------- */

/* The daemon's CPU milliseconds per second over the next seconds. */
static double cpu_rate(pid_t pid, int seconds)
{
	double c0 = bench_cpu_s(pid, 0);
	sleep((unsigned)seconds);
	return (bench_cpu_s(pid, 0) - c0) * 1000.0 / seconds;
}

static void stop(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

/* Fan-out: a publish's events (Acked, then StateChanged) to 1 watcher,
 * then to 1,000: the time until the last has them, and the daemon's CPU
 * time per round (and watcher). */
#define EVENTS_PER_ROUND 2 /* a publish's Acked and StateChanged */

static void fanout(void)
{
	static struct stream one[1], fan[FANOUT];
	double one_v[FANOUT_ROUNDS], all_v[FANOUT_ROUNDS], cpu0, cpu1, cpu_one;
	int i;

	stream_open(&one[0], echo_pid);
	streams_wait(one, 1, 1);
	cpu0 = bench_cpu_clock_s(daemon_pid);
	for (i = 0; i < FANOUT_ROUNDS; i++) {
		int64_t t0 = bench_now_ns();
		if (!publish(echo_pid, i, 0))
			die("publish failed");
		streams_wait(one, 1, 2 + 2 * i); /* Acked, then StateChanged */
		one_v[i] = (double)(bench_now_ns() - t0) / 1000.0;
	}
	cpu_one = (bench_cpu_clock_s(daemon_pid) - cpu0) * 1e6 / FANOUT_ROUNDS;
	streams_close(one, 1);
	for (i = 0; i < FANOUT; i++)
		stream_open(&fan[i], echo_pid);
	streams_wait(fan, FANOUT, 1);
	cpu0 = bench_cpu_clock_s(daemon_pid);
	for (i = 0; i < FANOUT_ROUNDS; i++) {
		int64_t t0 = bench_now_ns();
		if (!publish(echo_pid, i, 0))
			die("publish failed");
		streams_wait(fan, FANOUT, 2 + 2 * i);
		all_v[i] = (double)(bench_now_ns() - t0) / 1000.0;
	}
	cpu1 = bench_cpu_clock_s(daemon_pid);
	bench_report("node_fanout_1000", "us", bench_median(all_v, FANOUT_ROUNDS), bench_median(one_v, FANOUT_ROUNDS));
	bench_report("node_fanout_daemon_us_per_watcher", "us",
		     (cpu1 - cpu0) * 1e6 / ((double)FANOUT_ROUNDS * FANOUT * EVENTS_PER_ROUND), cpu_one);
	streams_close(fan, FANOUT);
}

/* ---- a restart, seen by channels that outlive it ------------------------ */

#define RESTART_ROUNDS 3
#define DOWN_MS 1500

/* A channel to target: with procctl's reconnect backoff, or gRPC's. */
static grpc_channel *channel(const char *target, int fast)
{
	grpc_arg a[2];
	grpc_channel_args args = {2, a};
	grpc_channel_credentials *cr = grpc_insecure_credentials_create();
	grpc_channel *c;
	a[0].type = a[1].type = GRPC_ARG_INTEGER;
	a[0].key = (char *)GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS;
	a[0].value.integer = 100;
	a[1].key = (char *)GRPC_ARG_MAX_RECONNECT_BACKOFF_MS;
	a[1].value.integer = 1000;
	c = grpc_channel_create(target, cr, fast ? &args : NULL);
	grpc_channel_credentials_release(cr);
	return c;
}

/* SIGKILL the daemon, start argv's successor DOWN_MS later, and time until
 * each channel sees it; the daemon left running is the successor. */
static void restart_seen(const char *target, char *const argv[])
{
	double fresh_v[RESTART_ROUNDS], fast_v[RESTART_ROUNDS], slow_v[RESTART_ROUNDS];
	int r;
	for (r = 0; r < RESTART_ROUNDS; r++) {
		grpc_channel *lived[2] = {channel(target, 1), channel(target, 0)};
		double seen[3] = {0, 0, 0};
		int64_t t0, down;
		int k;
		for (k = 0; k < 2; k++)
			if (!bench_health_check(lived[k], pluck))
				die("a channel did not reach the daemon");
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
		for (down = bench_now_ns() + DOWN_MS * 1000000ll; bench_now_ns() < down; usleep(10000))
			for (k = 0; k < 2; k++)
				bench_health_check(lived[k], pluck); /* they try, and fail, meanwhile */
		t0 = bench_now_ns();
		daemon_pid = bench_spawn(argv, -1, -1, -1);
		while (!(seen[0] && seen[1] && seen[2]) && bench_now_ns() - t0 < 30000000000ll) {
			if (!seen[0]) {
				grpc_channel *c = channel(target, 1);
				if (bench_health_check(c, pluck))
					seen[0] = (double)(bench_now_ns() - t0) / 1e6;
				grpc_channel_destroy(c);
			}
			for (k = 0; k < 2; k++)
				if (!seen[k + 1] && bench_health_check(lived[k], pluck))
					seen[k + 1] = (double)(bench_now_ns() - t0) / 1e6;
			usleep(5000);
		}
		if (!(seen[0] && seen[1] && seen[2]))
			die("a channel did not see the successor within 30 s");
		fresh_v[r] = seen[0];
		fast_v[r] = seen[1];
		slow_v[r] = seen[2];
		for (k = 0; k < 2; k++)
			grpc_channel_destroy(lived[k]);
	}
	bench_report("node_restart_seen", "ms", bench_median(fast_v, RESTART_ROUNDS), bench_median(fresh_v, RESTART_ROUNDS));
	bench_report("node_restart_seen_grpc_defaults", "ms", bench_median(slow_v, RESTART_ROUNDS),
		     bench_median(fresh_v, RESTART_ROUNDS));
}

int main(void)
{
	static struct stream idle[IDLE_STREAMS];
	static double floor_v[ROUNDS], value_v[ROUNDS], lib_v[ROUNDS], push_v[ROUNDS];
	char lock_dir[96], state_dir[96], listen[160], lib_consumer[32];
	struct bench_push push;
	procctl_client_t *lib;
	grpc_channel_credentials *cr;
	long rss0, rss1;
	double cpu0, cpu1, rtt;
	struct bench_pingpong *pp = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pong;
	int i;

	if (pp == MAP_FAILED)
		die("mmap");
	/* Before any thread: the floor's other side. */
	if ((pong = fork()) == 0)
		bench_ponger(pp);
	if (pong < 0)
		die("fork");
	rtt = bench_pingpong_floor(pp, pong, 1, 1, 1001, 0) / 1000.0;
	kill(pong, SIGKILL);
	waitpid(pong, NULL, 0);
	if (bench_push_start(&push) < 0)
		die("the push peer did not start");
	push_pid = push.pid;

	snprintf(dir, sizeof dir, "/tmp/bench_node.%d", (int)getpid());
	snprintf(sock, sizeof sock, "%s/node.sock", dir);
	snprintf(lock_dir, sizeof lock_dir, "%s/locks", dir);
	snprintf(state_dir, sizeof state_dir, "%s/state", dir); /* not the host's /var/lib/procctl */
	snprintf(listen, sizeof listen, "unix:%s", sock);
	snprintf(consumer, sizeof consumer, "bench%d", (int)getpid());
	char *node_argv[] = {PROCCTL_NODE_PATH, "--grpc-listen", listen, "--lock-dir", lock_dir, "--state-dir", state_dir,
			     "--consumers", consumer,
			     "--rescan-ms", "100", "--max-watchers", "4000", "--grpc-max-streams", "4000", /* all on one channel */
			     "--grpc-max-connections", "8", "--grpc-memory-bytes", "268435456", /* their memory in the quota */
			     "--http-listen", "", NULL};
	daemon_pid = bench_spawn(node_argv, -1, -1, -1);
	{
		char *argv[] = {ECHO_CLIENT_PATH, "--consumer", consumer, NULL};
		echo_pid = bench_spawn(argv, -1, -1, -1);
	}
	snprintf(lib_consumer, sizeof lib_consumer, "benchlib%d", (int)getpid());
	{
		char *argv[] = {ECHO_CLIENT_PATH, "--consumer", lib_consumer, NULL};
		lib_pid = bench_spawn(argv, -1, -1, -1);
	}
	grpc_init();
	cr = grpc_insecure_credentials_create();
	ch = grpc_channel_create(listen, cr, NULL);
	grpc_channel_credentials_release(cr);
	pluck = grpc_completion_queue_create_for_pluck(NULL);
	scq = grpc_completion_queue_create_for_next(NULL);
	for (i = 0; i < 1000 && !(health_check() && listed(echo_pid)); i++)
		usleep(10000);
	if (i == 1000)
		die("the daemon did not serve, or did not attach the echo client");

	lib = library_client(lib_consumer);

	/* Publish with wait-for-ack, interleaved with a health Check, the
	 * library path and the push peer. */
	for (i = 0; i < 200; i++)
		if (!health_check() || !publish(echo_pid, i, 5000) || !library_publish(lib, i) ||
		    bench_push_publish(&push, "warm", 4) < 0)
			die("warm-up failed");
	for (i = 0; i < ROUNDS; i++) {
		char payload[32];
		int64_t t0 = bench_now_ns(), t1, t2, t3, t4;
		if (!health_check())
			die("health Check failed");
		t1 = bench_now_ns();
		if (!publish(echo_pid, i, 5000))
			die("publish not APPLIED");
		t2 = bench_now_ns();
		if (!library_publish(lib, i))
			die("the library path's publish not acked");
		t3 = bench_now_ns();
		if (bench_push_publish(&push, payload, (uint32_t)snprintf(payload, sizeof payload, "bench %d", i)) < 0)
			die("the push peer did not ack");
		t4 = bench_now_ns();
		floor_v[i] = (double)(t1 - t0) / 1000.0;
		value_v[i] = (double)(t2 - t1) / 1000.0;
		lib_v[i] = (double)(t3 - t2) / 1000.0;
		push_v[i] = (double)(t4 - t3) / 1000.0;
	}
	{
		double v = bench_median(value_v, ROUNDS), f = bench_median(floor_v, ROUNDS);
		double l = bench_median(lib_v, ROUNDS), p = bench_median(push_v, ROUNDS);
		bench_report("node_publish_ack", "us", v, f);
		bench_report("node_publish_ack_vs_library", "us", v, l);
		bench_report("library_publish_ack_vs_push", "us", l, p);
		bench_report("node_publish_ack_vs_push", "us", v, p);
		bench_report("node_publish_ack_vs_check_and_rtt", "us", v, f + rtt);
	}
	procctl_client_close(lib);

	/* 2,000 idle streams. */
	rss0 = bench_status_kib(daemon_pid, "VmRSS");
	cpu0 = cpu_rate(daemon_pid, 3);
	for (i = 0; i < IDLE_STREAMS; i++)
		stream_open(&idle[i], 1); /* init has no region: the snapshot, then nothing */
	streams_wait(idle, IDLE_STREAMS, 1);
	rss1 = bench_status_kib(daemon_pid, "VmRSS");
	cpu1 = cpu_rate(daemon_pid, 3);
	bench_report("node_idle_stream_rss", "KiB", (double)rss1, (double)rss0);
	/* An idle daemon may use no CPU at all: the floor is one clock tick a second at least. */
	bench_report("node_idle_stream_cpu", "ms/s", cpu1, cpu0 > 1000.0 / sysconf(_SC_CLK_TCK) ? cpu0 : 1000.0 / sysconf(_SC_CLK_TCK));
	streams_close(idle, IDLE_STREAMS);

	fanout();
	restart_seen(listen, node_argv);

	grpc_channel_destroy(ch);
	stop(echo_pid);
	stop(lib_pid);
	stop(daemon_pid);
	kill(push_pid, SIGKILL);
	waitpid(push_pid, NULL, 0);
	echo_pid = lib_pid = daemon_pid = push_pid = 0;
	cleanup();
	return 0;
}
