/* SPDX-License-Identifier: Apache-2.0 */
/* node.c - procctl-node's event loop (node.h).
 *
 * The loop owns everything of libprocctl-agent: one registry per
 * configured consumer (one for all when none is named), an arbiter per
 * configured kind, and the table of attached processes with what the
 * daemon knows of each: its pod identity, the last ack it read, a hash of
 * its state block. Requests arrive from the gRPC thread on a queue and
 * an eventfd; a request that waits for acks becomes a wait the loop
 * finishes when the acks are read or its deadline passes, and state
 * reads run on reader threads (reads.c), so nothing on the loop waits on
 * a process. Each turn, from the wake to the next wait, is timed
 * (procctl_loop_turn_seconds; one over slow_turn_ms is logged with its
 * longest step) and serves at most TURN_JOBS requests, fewer once they
 * took TURN_JOBS_NS, a peer's at a time (jobq.h). */
#include "node_int.h"
#include "hellothread.h"
#include "sys/nodelock.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "desired/desired.h"
#include "sys/podid.h"
#include "sys/procstat.h"
#include "procctl/v1/node.pb-c.h"
#include "procctl_arbiter.h"
#include "sys/prom.h"

static void on_tick(struct timer *t, int64_t now)
{
	(void)now;
	arbiters_tick(container_of(t, struct node, t_tick)); /* it arms the next */
}

/* hooks.alive, every alive_ns: only a loop that comes round to its
 * timers calls it. */
static void on_alive(struct timer *t, int64_t now)
{
	struct node *n = container_of(t, struct node, t_alive);
	n->hooks.alive(n->hooks.arg);
	if (timer_arm(&n->timers, t, now + n->hooks.alive_ns) < 0)
		node_log(PROCCTL_LOG_ERROR, "alive_unarmed", "error=\"out of memory\" reason=\"a watchdog will "
			 "find the loop hung\"");
}

/* Watch NODE.lock: an unlink, or a rename over it or of it, changes its
 * link count or moves it (IN_ATTRIB, IN_MOVE_SELF). 0 or -errno. */
static int lock_watch(struct node *n)
{
	char self[64];
	if (!n->lock)
		return 0;
	if ((n->lock_ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
		return -errno;
	snprintf(self, sizeof self, "/proc/self/fd/%d", n->lock->fd);
	return inotify_add_watch(n->lock_ifd, self, IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF) < 0 ? -errno : 0;
}

/* Something happened to NODE.lock: still ours? Else stop, writing
 * nothing more (the desired store is fenced on it too). 1 lost. */
static int lock_check(struct node *n)
{
	char buf[1024] __attribute__((aligned(__alignof__(struct inotify_event))));
	int any = 0;
	if (n->lock_ifd < 0 || n->lock_lost)
		return n->lock_lost;
	while (read(n->lock_ifd, buf, sizeof buf) > 0)
		any = 1;
	if (!any || nodelock_current(n->lock))
		return 0;
	node_log(PROCCTL_LOG_ERROR, "node_lock_lost", "lock=%s reason=\"deleted or replaced: another procctl-node "
		 "may serve now\" next=standby", n->lock->path);
	n->lock_lost = 1;
	n->stop = 1;
	return 1;
}

int node_lock_lost(const struct node *n)
{
	return n->lock_lost;
}

/* Once, where a process's pod identity comes from: every hierarchy its
 * cgroup file names (the host's init's tell which there are: on a hybrid
 * host, v1 controllers and the unified v2 one), a kubelet-named cgroup at
 * the root of any of them. */
static void pod_identity_said(void)
{
	char text[4096], list[1024];
	ssize_t len = procstat_read(NULL, 1, "cgroup", text, sizeof text);
	int k = len > 0 ? procctl_podid_hierarchies(text, (size_t)len, list, sizeof list) : 0;
	node_log(PROCCTL_LOG_INFO, "pod_identity", "from=/proc/PID/cgroup hierarchies=\"%s\" count=%d reason=\"a pod is a "
		 "kubelet-named cgroup (kubepods, kubepods.slice, kubelet.slice) at the root of any of them\"",
		 k ? list : "unknown: /proc/1/cgroup unreadable", k);
}

/* The loop's own: its eventfd, the event history, the incarnation, the
 * reads' queue, the watch on NODE.lock. 0, or -1 and a message. */
static int loop_open(struct node *n, const struct node_cfg *cfg, const struct nodelock *lock, char *err, size_t errlen)
{
	n->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	n->ev = events_new(cfg->watch_history);
	if (n->efd < 0 || !n->ev || getrandom(&n->incarnation, sizeof n->incarnation, 0) != sizeof n->incarnation ||
	    reads_open(n, &procs_read_sink) < 0) {
		snprintf(err, errlen, "setting up the loop: %s", strerror(errno));
		return -1;
	}
	if (lock_watch(n) < 0) {
		snprintf(err, errlen, "watching %s: %s", lock->path, strerror(errno));
		return -1;
	}
	return 0;
}

/* The desired store, loaded (and said), fenced on NODE.lock, pruned,
 * and the config file's sections set in it. 0, or -1 and a message. */
static int desired_open(struct node *n, const struct node_cfg *cfg, const struct nodelock *lock, char *err,
			size_t errlen)
{
	if (desired_load(&n->desired, cfg->state_dir, err, errlen) < 0)
		return -1;
	n->desired.fence = lock;
	desired_limits(&n->desired, cfg->desired_max, cfg->desired_bytes_max);
	if (n->desired.set_aside[0]) {
		char q[4 * sizeof n->desired.set_aside_why];
		node_log(PROCCTL_LOG_WARN, "desired_set_aside", "file=%s reason=\"%s\" desired=none",
			 n->desired.set_aside, node_log_quote(q, sizeof q, n->desired.set_aside_why));
	}
	if (n->desired.converted)
		node_log(PROCCTL_LOG_INFO, "desired_converted", "from=desired.pb to=%s configs=%zu", n->desired.path,
			 n->desired.n);
	if (n->desired.n)
		node_log(PROCCTL_LOG_INFO, "desired_loaded", "configs=%zu revision=%llu", n->desired.n,
			 (unsigned long long)n->desired.revision);
	n->rev_at_start = n->desired.revision;
	desired_prune(n);
	desired_from_file(n, &n->cfg);
	return 0;
}

/* A registry per configured consumer (one for all when none is named).
 * 0, or -1 and a message (those made so far are n's). */
static int registries_open(struct node *n, const struct node_cfg *cfg, char *err, size_t errlen)
{
	size_t i;
	n->nreg = cfg->nconsumers ? cfg->nconsumers : 1;
	for (i = 0; i < n->nreg; i++) {
		struct procctl_registry_opts o;
		memset(&o, 0, sizeof o);
		o.sz = sizeof o;
		o.consumer = cfg->nconsumers ? cfg->consumers[i] : NULL;
		o.lease_ns = cfg->lease_ns;
		o.rescan_ns = cfg->rescan_ns;
		o.lock_dir = cfg->lock_dir;
		o.on_event = node_on_event;
		o.arg = &n->args[i];
		o.flags = PROCCTL_REGISTRY_DOORBELLS;
		o.max_per_process = cfg->max_per_process;
		o.max_regions = cfg->max_regions;
		o.max_consumers = cfg->max_consumers;
		n->args[i].n = n;
		n->reg[i] = procctl_registry_new(&o);
		if (!n->reg[i] && errno == ENOSYS) {
			node_log(PROCCTL_LOG_WARN, "no_doorbells", "reason=\"no futex_waitv (Linux < 5.16)\"");
			o.flags = 0;
			n->reg[i] = procctl_registry_new(&o);
		}
		if (!n->reg[i]) {
			snprintf(err, errlen, "registry for %s: %s", o.consumer ? o.consumer : "every consumer",
				 strerror(errno));
			return -1;
		}
		n->args[i].reg = n->reg[i];
	}
	return 0;
}

/* hello, when configured, on a thread of its own: unavailable is said,
 * not fatal (the rescans find the processes). */
static void hello_open(struct node *n, const struct node_cfg *cfg)
{
	struct procctl_hello_opts ho;
	procctl_hello_t *h;
	if (!cfg->hello)
		return;
	memset(&ho, 0, sizeof ho);
	ho.sz = sizeof ho;
	ho.on_pid = node_on_hello;
	ho.on_exec = node_on_exec;
	ho.arg = n;
	if (!(h = procctl_hello_new(&ho)) || !(n->hello = hellothread_start(h, n->efd)))
		node_log(PROCCTL_LOG_WARN, "hello_unavailable", "reason=\"%s\" error=\"%s\" rescan_ms=%llu",
			 procctl_hello_error(-errno), strerror(errno), (unsigned long long)(cfg->rescan_ns / MS));
}

/* n's parts, phase by phase, in the order each needs the ones before:
 * 0, or -1 and a message, n left part built. */
static int node_build(struct node *n, const struct node_cfg *cfg, const struct nodelock *lock, char *err,
		      size_t errlen)
{
	if (loop_open(n, cfg, lock, err, errlen) < 0)
		return -1;
	pod_identity_said();
	if (kubepods_open(&n->kube, cfg, n->efd, err, errlen) < 0 || pconfigs_open(&n->pconfigs, cfg, n->efd, err, errlen) < 0 ||
	    desired_open(n, cfg, lock, err, errlen) < 0 ||
	    registries_open(n, cfg, err, errlen) < 0)
		return -1;
	hello_open(n, cfg);
	return arbiters_new(n, err, errlen);
}

struct node *node_new(const struct node_cfg *cfg, const struct nodelock *lock, char *err, size_t errlen)
{
	struct node *n = calloc(1, sizeof *n);
	if (!n) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	n->cfg = *cfg;
	pthread_mutex_init(&n->mu, NULL);
	jobq_init(&n->jobs);
	n->writing_tail = &n->writing;
	n->cfg_ifd = -1;
	n->lock_ifd = -1;
	n->lock = lock;
	n->t_tick = TIMER_INIT(on_tick);
	n->t_cfg = TIMER_INIT(cfg_on_due);
	n->t_alive = TIMER_INIT(on_alive);
	if (node_build(n, cfg, lock, err, errlen) < 0) {
		/* node_close undoes whatever a phase made: descriptors of -1,
		 * NULL pointers and parts still zeroed are skipped. */
		node_close(n, 0);
		return NULL;
	}
	return n;
}

void node_set_hooks(struct node *n, const struct node_hooks *h)
{
	n->hooks = *h;
	__atomic_store_n(&n->serving, 1, __ATOMIC_RELEASE);
}

struct events *node_events(struct node *n)
{
	return n->ev;
}

int node_ready(const struct node *n)
{
	return __atomic_load_n(&n->ready, __ATOMIC_ACQUIRE);
}

int64_t node_busy_ns(const struct node *n)
{
	int64_t since = __atomic_load_n(&n->busy_since, __ATOMIC_RELAXED);
	return since ? now_ns() - since : 0;
}

int node_serving(const struct node *n)
{
	return node_ready(n) && __atomic_load_n(&n->serving, __ATOMIC_ACQUIRE) && !n->stop;
}

void node_stop(struct node *n)
{
	uint64_t one = 1;
	n->stop = 1;
	if (write(n->efd, &one, sizeof one) < 0) {
		/* the counter is full: the loop is awake anyway */
	}
}

void node_set_sigmask(struct node *n, const sigset_t *mask)
{
	n->sigmask = *mask;
	n->has_sigmask = 1;
}

void node_reload(struct node *n)
{
	uint64_t one = 1;
	__atomic_store_n(&n->reload_asked, 1, __ATOMIC_RELAXED);
	if (write(n->efd, &one, sizeof one) < 0) {
		/* the counter is full: the loop is awake anyway */
	}
}

int node_submit(struct node *n, struct node_job *job)
{
	uint64_t one = 1;
	pthread_mutex_lock(&n->mu);
	if (n->closed) {
		pthread_mutex_unlock(&n->mu);
		return -ESHUTDOWN;
	}
	jobq_put(&n->jobs, job);
	pthread_mutex_unlock(&n->mu);
	if (write(n->efd, &one, sizeof one) < 0) {
		/* full: the loop is awake anyway */
	}
	return 0;
}

/* A turn of the loop, from its wake to its next wait: its time goes to
 * procctl_loop_turn_seconds; one over slow_turn_ms is counted and said,
 * with the step that took longest (a request, a registry's scan, the
 * timers), how much came at once, and how much of it was the loop's CPU. */
struct turn {
	int64_t start, mark; /* the turn's start, the step under way's */
	int64_t cpu;         /* the loop thread's CPU time at the start */
	int64_t worst_ns;    /* the longest step's time, what it was */
	const char *worst, *detail;
	char said[160];      /* a detail made up for the longest step */
	unsigned jobs, fds;
};

static const char *const method_names[] = {
	"ListProcesses", "GetProcess", "WatchEvents", "Publish",    "Clear",       "WaitAck", "ReadState",
	"ListArbiters",  "GetArbiter", "SetDesired",  "DeleteDesired", "ListDesired", "metrics", "cancel",
};
_Static_assert(sizeof method_names / sizeof method_names[0] == NODE_CANCEL + 1, "a name for each node_method");

/* This thread's CPU time: a slow turn's cpu_ms tells a loop that worked
 * from one that waited for a CPU (or was stopped). */
static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The loop woke: a turn starts (node_busy_ns counts from it). */
static void turn_start(struct node *n, struct turn *t, unsigned fds)
{
	*t = (struct turn){.fds = fds, .worst = "", .detail = ""};
	t->cpu = thread_cpu_ns();
	t->start = t->mark = now_ns();
	__atomic_store_n(&n->busy_since, t->start, __ATOMIC_RELAXED);
}

/* The step since the last ended: what, and detail ("" or a name). 1:
 * it is the longest so far (the caller may say more in t->said). */
static int turn_step(struct turn *t, const char *what, const char *detail)
{
	int64_t now = now_ns(), ns = now - t->mark;
	t->mark = now;
	if (ns <= t->worst_ns)
		return 0;
	t->worst_ns = ns;
	t->worst = what;
	t->detail = detail;
	return 1;
}

/* The loop goes to wait: the turn's time counted, said when slow. */
static void turn_end(struct node *n, const struct turn *t)
{
	int64_t ns = now_ns() - t->start;
	char q[256];
	__atomic_store_n(&n->busy_since, 0, __ATOMIC_RELAXED);
	n->stats.turn_hist[prom_bucket(turn_buckets, NTURN_BUCKETS, (double)ns / 1e9)]++;
	n->stats.turn_sum += (double)ns / 1e9;
	if (ns <= (int64_t)n->cfg.slow_turn_ms * MS)
		return;
	n->stats.slow_turns++;
	node_log_limited(PROCCTL_LOG_WARN, "slow_turn",
			 "ms=%.1f step=%s detail=\"%s\" step_ms=%.1f jobs=%u fds=%u cpu_ms=%.1f", (double)ns / 1e6,
			 t->worst, node_log_quote(q, sizeof q, t->detail), (double)t->worst_ns / 1e6, t->jobs, t->fds,
			 (double)(thread_cpu_ns() - t->cpu) / 1e6);
}

/* Requests a turn serves at most, and once they took this long, no
 * more: the rest wait for the next turn, which comes at once, after the
 * registries, timers and reads had theirs (a snapshot of thousands of
 * processes takes milliseconds). */
#define TURN_JOBS 8
#define TURN_JOBS_NS (5 * MS)

/* The next request, the peers' in turn; *more: some are left. close: no
 * more are taken after it. */
static struct node_job *take_job(struct node *n, int close, int *more)
{
	struct node_job *job;
	pthread_mutex_lock(&n->mu);
	job = jobq_take(&n->jobs);
	*more = n->jobs.n > 0;
	if (close)
		n->closed = 1;
	pthread_mutex_unlock(&n->mu);
	return job;
}

/* The loop's descriptors: each registry's, efd, the config file's
 * directories', NODE.lock's (-1: none, poll skips it). */
static void loop_fds(struct node *n, struct pollfd *pfd)
{
	size_t i;
	for (i = 0; i < n->nreg; i++)
		pfd[i] = (struct pollfd){procctl_registry_fd(n->reg[i]), POLLIN, 0};
	pfd[n->nreg] = (struct pollfd){n->efd, POLLIN, 0};
	pfd[n->nreg + 1] = (struct pollfd){n->cfg_ifd, POLLIN, 0};
	pfd[n->nreg + 2] = (struct pollfd){n->lock_ifd, POLLIN, 0};
}

/* A turn's steps, in order (turn_steps): each does its part and ends
 * its time (turn_step), leaving in *l what the later steps and the
 * turn's wait need. 0, or -errno: the loop ends. */
struct turn_left {
	int more;    /* requests left for the next turn */
	int writing; /* writes left to go out */
	int ready;   /* every registry's first scan is done */
};

/* Up to TURN_JOBS requests (fewer past TURN_JOBS_NS), each a step
 * named by its method. */
static int step_jobs(struct node *n, struct turn *t, struct turn_left *l)
{
	int64_t start = t->mark;
	struct node_job *j;
	l->more = 0;
	while (t->jobs < TURN_JOBS && t->mark - start < TURN_JOBS_NS && (j = take_job(n, 0, &l->more))) {
		enum node_method m = j->method;
		node_handle(n, j);
		turn_step(t, "job", method_names[m]);
		t->jobs++;
	}
	watch_share_end(n);
	return 0;
}

static int step_writes(struct node *n, struct turn *t, struct turn_left *l)
{
	l->writing = waits_write(n);
	node_reads_done(n);
	turn_step(t, "writes", "");
	return 0;
}

static int step_pods(struct node *n, struct turn *t, struct turn_left *l)
{
	(void)l;
	int first = kubepods_drain(&n->kube, desired_pod_changed, n);
	first |= pconfigs_drain(n);
	if (first && node_pods_known(n))
		desired_pods_synced(n);
	turn_step(t, "pods", "");
	return 0;
}

/* The hello probe runs on its thread (hellothread.h): the loop only
 * learns that it failed, and ends as it did when it dispatched it. */
static int step_hello(struct node *n, struct turn *t, struct turn_left *l)
{
	int err;
	(void)l;
	if (n->hello && (err = hellothread_error(n->hello)) < 0) {
		node_log(PROCCTL_LOG_ERROR, "hello_failed", "error=%s", strerror(-err));
		return err;
	}
	turn_step(t, "hello", "");
	return 0;
}

/* Each registry, a step named by its consumer. */
static int step_registries(struct node *n, struct turn *t, struct turn_left *l)
{
	size_t i;
	int err;
	for (i = 0; i < n->nreg; i++) {
		const char *consumer = i < n->cfg.nconsumers ? n->cfg.consumers[i] : "";
		n->on_events = 0;
		n->on_events_ns = n->on_event_worst_ns = 0;
		n->on_event_worst = "";
		n->on_event_worst_pid = 0;
		if ((err = procctl_registry_dispatch(n->reg[i])) < 0) {
			node_log(PROCCTL_LOG_ERROR, "registry_failed", "error=%s", strerror(-err));
			return err;
		}
		l->ready &= procctl_registry_first_scan_done(n->reg[i]);
		if (!turn_step(t, "registry", consumer)) /* the library's part, and the daemon's in its events */
			continue;
		if (n->on_events)
			snprintf(t->said, sizeof t->said, "%s: %u events, %.1f ms in their handlers, the slowest %s pid %d: %.1f ms",
				 consumer, n->on_events, (double)n->on_events_ns / 1e6, n->on_event_worst,
				 (int)n->on_event_worst_pid, (double)n->on_event_worst_ns / 1e6);
		else
			snprintf(t->said, sizeof t->said, "%s: no events", consumer);
		t->detail = t->said;
	}
	return 0;
}

static int step_config(struct node *n, struct turn *t, struct turn_left *l)
{
	(void)l;
	if (n->cfg_ifd >= 0)
		cfg_events(n, now_ns());
	if (__atomic_exchange_n(&n->reload_asked, 0, __ATOMIC_RELAXED))
		cfg_asked(n);
	turn_step(t, "config", "");
	return 0;
}

static int step_timers(struct node *n, struct turn *t, struct turn_left *l)
{
	/* The timers poll the processes waits expect acks of, tick the
	 * arbiters, reload the config and end the waits whose time is
	 * up; the settled and ended waits are answered. */
	size_t fired;
	int64_t start;
	(void)l;
	waits_sweep(n, 0);
	start = now_ns();
	fired = timers_run(&n->timers, start);
	start = now_ns() - start; /* the timers' part of the step; the rest is the waits' */
	waits_sweep(n, 0);
	if (turn_step(t, "timers", "") && fired) {
		snprintf(t->said, sizeof t->said, "%zu fired in %.1f ms, the slowest %s: %.1f ms", fired,
			 (double)start / 1e6, n->timers.slowest, (double)n->timers.slowest_ns / 1e6);
		t->detail = t->said;
	}
	return 0;
}

static int step_events(struct node *n, struct turn *t, struct turn_left *l)
{
	if (l->ready != node_ready(n)) {
		__atomic_store_n(&n->ready, l->ready, __ATOMIC_RELEASE);
		node_log(PROCCTL_LOG_INFO, "ready", "processes=%zu", n->nprocs);
		n->kick = 1;
	}
	if (l->ready && !n->ready_said && n->hooks.ready) {
		n->ready_said = 1;
		n->hooks.ready(n->hooks.arg);
	}
	if (n->kick && n->hooks.changed) {
		n->kick = 0;
		n->hooks.changed(n->hooks.arg);
	}
	turn_step(t, "events", "");
	return 0;
}

static int (*const turn_steps[])(struct node *n, struct turn *t, struct turn_left *l) = {
	step_jobs, step_writes, step_pods, step_hello, step_registries, step_config, step_timers, step_events,
};

/* The turn ends, and the next starts at the wake. 0, or -errno: poll
 * failed. */
static int turn_wait(struct node *n, struct turn *t, const struct turn_left *l, struct pollfd *pfd)
{
	int64_t now, timeout;
	struct timespec ts;
	uint64_t v;
	int nready;
	/* Asleep until a timer is due or an fd has work: every other
	 * thread's news (a request, a read done, a stop) comes through
	 * efd, so an idle node never wakes for nothing. */
	now = now_ns();
	timeout = l->writing || l->more                  ? 0
		  : timers_next(&n->timers) == INT64_MAX ? -1
		  : timers_next(&n->timers) <= now    ? 0
						       : (timers_next(&n->timers) - now + MS - 1) / MS;
	turn_end(n, t);
	ts = (struct timespec){timeout / 1000, timeout % 1000 * MS};
	if ((nready = ppoll(pfd, n->nreg + 3, timeout < 0 ? NULL : &ts, n->has_sigmask ? &n->sigmask : NULL)) < 0 &&
	    errno != EINTR)
		return -errno;
	turn_start(n, t, nready > 0 ? (unsigned)nready : 0);
	if (pfd[n->nreg].revents & POLLIN) {
		if (read(n->efd, &v, sizeof v) < 0) {
			/* EAGAIN: another wake consumed it */
		}
	}
	return 0;
}

/* The loop ended (err: why, 0 a stop): err. */
static int loop_end(struct node *n, int err)
{
	size_t i;
	__atomic_store_n(&n->busy_since, 0, __ATOMIC_RELAXED);
	/* Everything still held is answered: the daemon is going away. */
	waits_sweep(n, 1);
	for (i = 0; i < n->nprocs; i++)
		proc_reads_gone(n, n->procs[i], -ESHUTDOWN);
	{
		struct node_job *j;
		int more;
		while ((j = take_job(n, 1, &more)))
			job_finish(j, NODE_UNAVAILABLE, "procctl-node is shutting down", NULL);
	}
	return err;
}

int node_run(struct node *n)
{
	struct pollfd pfd[NODE_CONSUMERS_MAX + 3];
	struct turn t;
	int err = 0;
	size_t k;

	loop_fds(n, pfd);
	if (n->narb && (err = timer_arm(&n->timers, &n->t_tick, now_ns())) < 0)
		return loop_end(n, err);
	if (n->hooks.alive && n->hooks.alive_ns > 0 && (err = timer_arm(&n->timers, &n->t_alive, now_ns())) < 0)
		return loop_end(n, err);
	turn_start(n, &t, 0);
	while (!n->stop) {
		struct turn_left l = {.ready = 1};

		if (lock_check(n)) /* before any request is served */
			break;
		for (k = 0; k < sizeof turn_steps / sizeof turn_steps[0]; k++)
			if ((err = turn_steps[k](n, &t, &l)) < 0)
				return loop_end(n, err);
		if ((err = turn_wait(n, &t, &l, pfd)) < 0)
			break;
	}
	return loop_end(n, err);
}

void node_release(struct node *n, unsigned flags)
{
	size_t i;
	if (!n || n->released)
		return;
	n->released = 1;
	if (n->hello)
		hellothread_stop(n->hello); /* it calls into the registries */
	for (i = 0; i < n->narb; i++) {
		procctl_arbiter_free(n->arb[i].a);
		procctl_arbiter_registry_source_free(&n->arb[i].src);
		free(n->arb[i].nst);
		n->arb[i].nst = NULL;
		n->arb[i].nnst = 0;
	}
	for (i = 0; i < n->nreg; i++)
		if (n->reg[i])
			procctl_registry_close(n->reg[i], flags); /* DETACHED for each: the table empties */
}

void node_close(struct node *n, unsigned flags)
{
	if (!n)
		return;
	node_release(n, flags);
	kubepods_close(&n->kube);
	pconfigs_close(&n->pconfigs);
	if (n->cfg_ifd >= 0)
		close(n->cfg_ifd);
	if (n->lock_ifd >= 0)
		close(n->lock_ifd);
	hellothread_free(n->hello);
	reads_close(n);
	free(n->procs);
	timers_free(&n->timers);
	desired_free(&n->desired);
	events_free(n->ev);
	if (n->efd >= 0)
		close(n->efd);
	pthread_mutex_destroy(&n->mu);
	free(n);
}
