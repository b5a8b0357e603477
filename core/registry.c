/* SPDX-License-Identifier: Apache-2.0 */
/* registry.c - discovery, attach, exit and exec detection, the loop and
 * the registry's lifecycle, hand-off included (SPEC.md 2.4, 8, 10); a
 * found region's attach in registry_attach.c; node locks and ownership in
 * registry_locks.c, the heartbeat thread and the
 * doorbell callbacks in registry_threads.c (registry_int.h between them). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "doorbell.h"
#include "lock.h"
#include "log.h"
#include "opts.h"
#include "registry_int.h"
#include "scan.h"
#include "thread.h"

static void arm(int tfd, uint64_t first_ns, uint64_t every_ns)
{
	struct itimerspec it;
	memset(&it, 0, sizeof it);
	it.it_value.tv_sec = (time_t)(first_ns / 1000000000ull);
	it.it_value.tv_nsec = (long)(first_ns % 1000000000ull);
	it.it_interval.tv_sec = (time_t)(every_ns / 1000000000ull);
	it.it_interval.tv_nsec = (long)(every_ns % 1000000000ull);
	timerfd_settime(tfd, 0, &it, NULL);
}

/* Make the loop's fd readable: it has work. */
void reg_kick(procctl_registry_t *r)
{
	uint64_t one = 1;
	if (write(r->evfd, &one, sizeof one) < 0) {
		/* EAGAIN: the counter is saturated, a wakeup is pending anyway */
	}
}

void reg_emit(procctl_registry_t *r, struct procctl_event *ev)
{
	ev->sz = sizeof *ev;
	if (r->o.on_event)
		r->o.on_event(ev, r->o.arg);
}

/* An event about an attached region (entry e). */
void reg_emit_entry(procctl_registry_t *r, const struct entry *e, enum procctl_event_type type, int reason)
{
	struct procctl_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = type;
	ev.client = e->c;
	ev.pid = e->c->info.pid;
	ev.instance_id = e->c->info.hdr.instance_id;
	ev.consumer = e->lk->consumer;
	ev.reason = reason;
	reg_emit(r, &ev);
}

/* ---- attach and detach ------------------------------------------------ */

static void detach(procctl_registry_t *r, struct entry *e, int reason)
{
	const struct entry *sib = reg_sibling(r, e);
	struct lock_rec *l;

	if (sib) /* the process's pidfd is watched under a sibling's id now */
		epoll_ctl(r->epfd, EPOLL_CTL_MOD, procctl_client_pidfd(e->c),
			  &(struct epoll_event){.events = EPOLLIN, .data.u64 = sib->id});
	else
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, procctl_client_pidfd(e->c), NULL);
	reg_bells_detach(r, e);
	pthread_mutex_lock(&r->mu); /* after this the heartbeat thread cannot see it */
	if ((*e->pprev = e->next))
		e->next->pprev = e->pprev;
	if ((*e->lk_pprev = e->lk_next))
		e->lk_next->lk_pprev = e->lk_pprev;
	reg_index_del(r, e);
	e->lk->nentries--;
	r->stats.detached++;
	r->stats.clients--;
	pthread_mutex_unlock(&r->mu);
	procctl_log(PROCCTL_LOG_INFO, "detached", "pid=%d consumer=%s instance=%016llx reason=%s", (int)e->c->info.pid,
		    e->lk->consumer, (unsigned long long)e->c->info.hdr.instance_id,
		    reason == -ESRCH ? "exited" : reason == -ESTALE ? "execed" : reason ? strerror(-reason) : "closed");
	reg_emit_entry(r, e, PROCCTL_EV_DETACHED, reason);
	procctl_client_close(e->c);
	l = e->lk;
	free(e);
	reg_lock_put(r, l);
}

/* Exec keeps the pid and the pidfd quiet: procctl_registry_exec says which
 * process did; without it (no hello probe) each rescan looks at every
 * client, SWEEP_BATCH a dispatch, so thousands never hold the loop. */
static void sweep(procctl_registry_t *r)
{
	struct entry *e = r->entries, *next;
	uint32_t i;
	for (i = 0; e && i < r->sweep_pos; i++) /* where the last batch stopped */
		e = e->next;
	if (!e) {
		r->sweeping = 0;
		return;
	}
	reg_kick(r); /* the next batch (or the end) at the next dispatch */
	for (i = 0; e && i < SWEEP_BATCH; i++, e = next) {
		int a = procctl_client_alive(e->c);
		next = e->next;
		r->sweep_pos++;
		if (a < 0) {
			detach(r, e, a);
			r->sweep_pos--; /* the next one moved into its place */
		}
	}
}

/* A full scan runs in steps of SCAN_STEP_PIDS processes, one a dispatch,
 * so the loop is never held for all of /proc; its time is the steps'.
 * The first runs its steps back to back (the consumers' readiness waits
 * for it), and so does a rescan (a net under the hello and notify) while
 * the loop comes back to it within a step's time and SCAN_LATE_NS: an
 * idle loop, which then sleeps no more often. Once the loop came back
 * later (other work between two steps, or a CPU it waited for), the rest
 * of the rescan is paced (each step SCAN_STEP_SHARE - 1 times its length
 * after the last, by the tick): on a loaded node (3,000 processes to look
 * at, 1,000 of them busy) a rescan back to back holds the loop runnable
 * for minutes, and what it is there for (doorbells, requests) waits
 * behind it. */
static void full_scan_step(procctl_registry_t *r)
{
	int64_t t0 = procctl_now_ns(), took;
	struct lock_rec *l;
	unsigned denied;
	int more;
	r->in_full_step = 1; /* a targeted scan between two steps sees pids this one sees too */
	more = procctl_scan_step(r->scan_it, r->consumer[0] ? r->consumer : NULL, SCAN_STEP_PIDS, reg_on_found, r);
	r->in_full_step = 0;
	took = procctl_now_ns() - t0;
	r->full_ns += took;
	if (more > 0) {
		if (r->first_scan_done && r->step_end && t0 - r->step_end > took + SCAN_LATE_NS)
			r->paced = 1;
		r->step_end = t0 + took;
		if (r->paced)
			r->step_due = t0 + SCAN_STEP_SHARE * took; /* the tick (plan_tick) */
		else
			reg_kick(r); /* the next step at the next dispatch */
		return;
	}
	denied = procctl_scan_denied(r->scan_it);
	procctl_scan_end(r->scan_it);
	r->scan_it = NULL;
	r->scans_done = r->scan_no;
	r->first_scan_done = 1;
	pthread_mutex_lock(&r->mu);
	r->stats.scans++;
	r->stats.scan_ns += (uint64_t)r->full_ns;
	if (!r->stats.over_cap != !r->scan_over_cap) { /* said when it begins and when it ends */
		if (r->scan_over_cap)
			procctl_log(PROCCTL_LOG_WARN, "regions_over_cap", "count=%u max_per_process=%u max_regions=%u "
				    "reason=\"regions left unattached: raise the caps, or find who makes so many\"",
				    r->scan_over_cap, r->o.max_per_process, r->o.max_regions);
		else
			procctl_log(PROCCTL_LOG_INFO, "regions_over_cap", "count=0");
	}
	r->stats.over_cap = r->scan_over_cap;
	if (!r->stats.scan_denied != !denied) {
		if (denied)
			procctl_log(PROCCTL_LOG_WARN, "scan_denied", "count=%u reason=\"their fd tables were refused: "
				    "no CAP_SYS_PTRACE over them, or an LSM (AppArmor) forbids ptrace\"", denied);
		else
			procctl_log(PROCCTL_LOG_INFO, "scan_denied", "count=0");
	}
	r->stats.scan_denied = denied;
	pthread_mutex_unlock(&r->mu);
	for (l = r->locks; l; l = l->next)
		if (l->held && l->ready_scan == r->scan_no)
			reg_emit_ready(r, l);
}

static void full_scan(procctl_registry_t *r)
{
	int64_t t0 = procctl_now_ns();
	if (r->scan_it)
		return; /* one at a time: a scan asked for meanwhile waits (notify_all) */
	r->full_start = t0;
	r->step_due = r->step_end = 0;
	r->paced = 0;
	r->sweep_pos = 0; /* and a sweep for exec'd clients */
	r->sweeping = 1;
	/* A consumer named up front has its lock taken before the scan
	 * begins, so this very scan makes it ready. */
	if (r->consumer[0])
		reg_lock_for(r, r->consumer);
	r->scan_no = ++r->scans_started;
	r->scan_over_cap = 0;
	r->full_ns = procctl_now_ns() - t0;
	/* Not its own process: an agent's regions are its processes', and its
	 * own fd table (a pidfd and a mem fd a region) is the largest there is. */
	if (!(r->scan_it = procctl_scan_begin(r->proc_root, strcmp(r->proc_root, "/proc") ? 0 : getpid()))) {
		procctl_log_limited(PROCCTL_LOG_ERROR, "scan_failed", "dir=%s errno=%d (the next rescan tries again)",
				    r->proc_root, errno);
		return;
	}
	full_scan_step(r);
}

/* ---- the loop ------------------------------------------------------- */

static int64_t full_scan_due(const procctl_registry_t *r)
{
	return r->full_start + FULL_SCAN_SHARE * r->full_ns;
}

/* pid onto the notify queue, under mu. One waiting there already is not
 * queued again: its scan comes after this call anyway. */
static void queue_pid(procctl_registry_t *r, pid_t pid)
{
	pid_t *slot = &r->queued[(unsigned)pid % NOTIFY_SLOTS];
	if (*slot == pid)
		return;
	if (r->nq == NOTIFY_MAX) {
		r->notify_all = 1; /* too many at once: a full scan finds them all */
		return;
	}
	r->notify_q[(r->nq_head + r->nq++) % NOTIFY_MAX] = pid;
	*slot = pid;
}

/* The next pid on the notify queue; 0 when it is empty. */
static pid_t notify_pop(procctl_registry_t *r)
{
	pid_t pid = 0, *slot;
	pthread_mutex_lock(&r->mu);
	if (r->nq) {
		pid = r->notify_q[r->nq_head];
		r->nq_head = (r->nq_head + 1) % NOTIFY_MAX;
		r->nq--;
		slot = &r->queued[(unsigned)pid % NOTIFY_SLOTS];
		if (*slot == pid)
			*slot = 0;
		r->stats.targeted_scans++;
	}
	pthread_mutex_unlock(&r->mu);
	return pid;
}

/* A targeted scan of pid begins: its regions that exec took away go (a
 * pid that exec'd has a new region), and its fd table is read in steps. */
static void targeted_begin(procctl_registry_t *r, pid_t pid)
{
	struct entry *e, *next;
	reg_rejected_forget(r, pid);
	for (e = reg_by_pid(r, pid, NULL); e; e = next) {
		int a = procctl_client_alive(e->c);
		next = reg_by_pid(r, pid, e);
		if (a < 0)
			detach(r, e, a);
	}
	r->pid_it = scan_begin_pid(r->proc_root, pid); /* NULL: gone */
}

/* Targeted scans, up to NOTIFY_BATCH queued pids and NOTIFY_LINKS fd
 * links a dispatch: the rest, and the rest of a process with more fds
 * (its own choice: a million is allowed), at the next. */
static void drain_notify(procctl_registry_t *r)
{
	unsigned links = NOTIFY_LINKS, n = 0;
	int all, more;

	pthread_mutex_lock(&r->mu);
	all = r->notify_all;
	/* A full scan asked for (a lock taken, a notify queue overflowed) waits
	 * until the last one is ten of its durations old: names a process can
	 * make up cannot keep the loop scanning. The tick asks again. */
	if (all && (r->scan_it || procctl_now_ns() < full_scan_due(r)))
		all = 0;
	else
		r->notify_all = 0;
	pthread_mutex_unlock(&r->mu);
	if (all)
		full_scan(r); /* the queue's pids are in it too; their scans come after it */
	while (!all && links && n < NOTIFY_BATCH) {
		if (!r->pid_it) {
			pid_t pid = notify_pop(r);
			if (!pid)
				break;
			n++;
			targeted_begin(r, pid);
			continue;
		}
		if (scan_step_links(r->pid_it, r->consumer[0] ? r->consumer : NULL, 1, &links, reg_on_found, r) <= 0) {
			procctl_scan_end(r->pid_it);
			r->pid_it = NULL;
		}
	}
	pthread_mutex_lock(&r->mu);
	more = r->pid_it || r->nq;
	pthread_mutex_unlock(&r->mu);
	if (more)
		reg_kick(r);
}

/* Every lock record: still ours? Not taken: try. */
static void locks_look(procctl_registry_t *r)
{
	struct lock_rec *l;
	for (l = r->locks; l; l = l->next) {
		reg_lock_check(r, l);
		reg_lock_try(r, l);
	}
}

/* The tick is armed only while something waits for time: a region found
 * unsealed (probed every TICK_NS), a lock not taken (LOCK_RETRY_NS: its
 * holder's close is heard at once), a full scan asked for and deferred
 * (when it is due), a muted doorbell or a watcher's slice to sweep. An
 * idle registry has it disarmed. An armed tick
 * that comes sooner than needed stays (it plans again when it fires). */
static void plan_tick(procctl_registry_t *r)
{
	int64_t now = procctl_now_ns(), due = 0, bells = (int64_t)reg_bells_due(r);
	const struct lock_rec *l;
	struct itimerspec it;
	unsigned i;
	int all;
	for (i = 0; i < UNSEALED_MAX && !due; i++)
		if (r->unsealed[i].ticks)
			due = now + (int64_t)TICK_NS;
	if (bells && (!due || bells < due))
		due = bells;
	for (l = r->locks; l && !(r->o.flags & PROCCTL_REGISTRY_PASSIVE); l = l->next)
		if (!l->held && (!due || now + LOCK_RETRY_NS < due))
			due = now + LOCK_RETRY_NS;
	pthread_mutex_lock(&r->mu);
	all = r->notify_all;
	pthread_mutex_unlock(&r->mu);
	if (all && !r->scan_it && (!due || full_scan_due(r) < due))
		due = full_scan_due(r) > now ? full_scan_due(r) : now + 1;
	if (r->scan_it && r->step_due && (!due || r->step_due < due))
		due = r->step_due > now ? r->step_due : now + 1;
	if (due && r->tick_due && r->tick_due <= due)
		return;
	if (!due && !r->tick_due)
		return;
	memset(&it, 0, sizeof it);
	it.it_value.tv_sec = due / 1000000000ll;
	it.it_value.tv_nsec = due % 1000000000ll;
	timerfd_settime(r->tick_fd, TFD_TIMER_ABSTIME, &it, NULL); /* 0: disarmed */
	r->tick_due = due;
}

int procctl_registry_dispatch(procctl_registry_t *r)
{
	struct epoll_event evs[16];
	uint64_t v;
	int n, i, kicked;

	/* The kick first: what this dispatch leaves to the next one (a scan's
	 * next step, a sweep's next batch, the rest of a queue) kicks again
	 * and stays pending, so the caller's poll comes straight back. */
	kicked = read(r->evfd, &v, sizeof v) > 0;
	if (r->scan_it && procctl_now_ns() >= r->step_due)
		full_scan_step(r);
	else if (!r->scan_it && !r->first_scan_done)
		full_scan(r);
	if (r->sweeping)
		sweep(r);
	if (kicked) {
		drain_notify(r);
		reg_emit_doorbell(r);
	}
	n = epoll_wait(r->epfd, evs, 16, 0); /* more at the next dispatch: the fd stays readable */
	if (n < 0) {
		int err = errno;
		reg_bells_flush(r); /* what the scans and sweep changed */
		return err == EINTR ? 0 : -err;
	}
	for (i = 0; i < n; i++) {
		uint64_t tag = evs[i].data.u64;
		if (tag == TAG_EVENT) {
			continue; /* read above: a kick since is the next dispatch's */
		} else if (tag == TAG_RESCAN) {
			if (read(r->rescan_fd, &v, sizeof v) > 0)
				full_scan(r);
		} else if (tag == TAG_TICK) {
			if (read(r->tick_fd, &v, sizeof v) <= 0)
				continue;
			r->tick_due = 0;
			locks_look(r);
			reg_probe_unsealed(r);
			reg_bells_tick(r);
			pthread_mutex_lock(&r->mu);
			if (r->notify_all && !r->scan_it && procctl_now_ns() >= full_scan_due(r))
				reg_kick(r); /* a deferred full scan is due */
			pthread_mutex_unlock(&r->mu);
		} else if (tag == TAG_BELLS) {
			reg_ring_dispatch(r);
		} else if (tag == TAG_LOCKS) {
			char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
			while (read(r->lock_ifd, buf, sizeof buf) > 0)
				;
			locks_look(r);
		} else {
			struct entry *e = reg_by_id(r, tag), *sib; /* still attached? */
			for (; e; e = sib) { /* exited: its other regions share the pidfd that woke */
				sib = reg_sibling(r, e);
				detach(r, e, -ESRCH);
			}
		}
	}
	reg_bells_flush(r);
	plan_tick(r);
	return 0;
}

int procctl_registry_run(procctl_registry_t *r)
{
	int err = 0;
	while (!err && !__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		struct epoll_event ev;
		err = procctl_registry_dispatch(r);
		if (!err && epoll_wait(r->epfd, &ev, 1, -1) < 0 && errno != EINTR)
			err = -errno;
	}
	__atomic_store_n(&r->stop, 0, __ATOMIC_RELEASE); /* run may be called again */
	return err;
}

void procctl_registry_stop(procctl_registry_t *r)
{
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	reg_kick(r);
}

int procctl_registry_notify(procctl_registry_t *r, pid_t pid)
{
	if (pid <= 0)
		return -EINVAL;
	pthread_mutex_lock(&r->mu);
	queue_pid(r, pid);
	pthread_mutex_unlock(&r->mu);
	reg_kick(r);
	return 0;
}

int procctl_registry_exec(procctl_registry_t *r, pid_t pid)
{
	if (pid <= 0)
		return -EINVAL;
	pthread_mutex_lock(&r->mu);
	if (!reg_by_pid(r, pid, NULL)) { /* not ours: most execs on a node */
		pthread_mutex_unlock(&r->mu);
		return 0;
	}
	queue_pid(r, pid); /* checked, then scanned: its new image may have a region */
	pthread_mutex_unlock(&r->mu);
	reg_kick(r);
	return 0;
}

int procctl_registry_rescan(procctl_registry_t *r)
{
	pthread_mutex_lock(&r->mu);
	r->notify_all = 1;
	pthread_mutex_unlock(&r->mu);
	reg_kick(r);
	return 0;
}

/* ---- lifecycle ------------------------------------------------------ */

/* opts into r->o (any version: opts.h), with the defaults for what is 0,
 * and its strings into r; -EINVAL when refused. */
_Static_assert(sizeof(struct procctl_registry_opts) == PROCCTL_OPTS_END(struct procctl_registry_opts, max_consumers),
	       "no trailing padding (opts.h)");

static int reg_opts_take(procctl_registry_t *r, const struct procctl_registry_opts *opts)
{
	struct procctl_registry_opts *o = &r->o;
	const char *lock_dir, *proc_root;

	if (!opts || procctl_opts_take(o, sizeof *o, opts) < 0 ||
	    (o->flags & ~(PROCCTL_REGISTRY_PASSIVE | PROCCTL_REGISTRY_DOORBELLS | PROCCTL_REGISTRY_BELL_THREADS)) ||
	    (o->consumer && procctl_name_valid(o->consumer, PROCCTL_CONSUMER_MAX) < 0) ||
	    (o->lease_ns && (o->lease_ns < PROCCTL_LEASE_FLOOR_NS || o->lease_ns > PROCCTL_LEASE_CEIL_NS)))
		return -EINVAL;
	lock_dir = o->lock_dir ? o->lock_dir : PROCCTL_LOCK_DIR_DEFAULT;
	proc_root = o->proc_root ? o->proc_root : "/proc";
	if (!o->max_per_process)
		o->max_per_process = DEFAULT_PER_PROCESS;
	if (!o->max_regions)
		o->max_regions = DEFAULT_REGIONS;
	if (!o->max_consumers)
		o->max_consumers = DEFAULT_CONSUMERS;
	if (!o->lease_ns)
		o->lease_ns = DEFAULT_LEASE_NS;
	if (!o->rescan_ns)
		o->rescan_ns = DEFAULT_RESCAN_NS;
	if (strlen(lock_dir) >= sizeof r->lock_dir || strlen(proc_root) >= sizeof r->proc_root)
		return -ENAMETOOLONG;
	snprintf(r->consumer, sizeof r->consumer, "%s", o->consumer ? o->consumer : "");
	snprintf(r->lock_dir, sizeof r->lock_dir, "%s", lock_dir);
	snprintf(r->proc_root, sizeof r->proc_root, "%s", proc_root);
	return 0;
}

/* The registry's own fds, each watched by its epoll under its tag. */
static int reg_fds_open(procctl_registry_t *r)
{
	struct epoll_event ee = {.events = EPOLLIN};

	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	r->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	r->rescan_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	r->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	r->lock_ifd = r->lock_dirfd < 0 ? -1 : reg_lock_watch(r->lock_dirfd);
	if (r->epfd < 0 || r->evfd < 0 || r->rescan_fd < 0 || r->tick_fd < 0 || (r->lock_dirfd >= 0 && r->lock_ifd < 0))
		return -errno;
	ee.data.u64 = TAG_EVENT;
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->evfd, &ee) < 0)
		return -errno;
	ee.data.u64 = TAG_RESCAN;
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->rescan_fd, &ee) < 0)
		return -errno;
	ee.data.u64 = TAG_TICK;
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->tick_fd, &ee) < 0)
		return -errno;
	ee.data.u64 = TAG_LOCKS;
	if (r->lock_ifd >= 0 && epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->lock_ifd, &ee) < 0)
		return -errno;
	return 0;
}

procctl_registry_t *procctl_registry_new(const struct procctl_registry_opts *opts)
{
	pthread_condattr_t ca;
	procctl_registry_t *r;
	int err;

	r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	if ((err = reg_opts_take(r, opts)) < 0) {
		free(r);
		errno = -err;
		return NULL;
	}
	r->lock_dirfd = -1;
	if (!(r->o.flags & PROCCTL_REGISTRY_PASSIVE)) {
		char why[512];
		if ((r->lock_dirfd = procctl_trusted_dir(r->lock_dir, why, sizeof why)) < 0) {
			procctl_log(PROCCTL_LOG_ERROR, "lock_dir_refused", "dir=%s errno=%d reason=\"%s\"", r->lock_dir,
				    -r->lock_dirfd, why);
			errno = -r->lock_dirfd;
			free(r);
			return NULL;
		}
	}
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->hb_cv, &ca);
	pthread_condattr_destroy(&ca);
	if ((err = reg_fds_open(r)) < 0)
		goto fail;
	arm(r->rescan_fd, r->o.rescan_ns, r->o.rescan_ns);
	reg_kick(r); /* the first dispatch runs the first scan */
	if ((err = procctl__thread_start(&r->hb, NULL, reg_hb_main, r)) < 0)
		goto fail;
	r->hb_started = 1;
	if ((r->o.flags & PROCCTL_REGISTRY_DOORBELLS) && (err = reg_bells_start(r)) < 0)
		goto fail;
	return r;
fail:
	procctl_registry_close(r, 0);
	errno = -err;
	return NULL;
}

int procctl_registry_fd(const procctl_registry_t *r)
{
	return r->epfd;
}

int procctl_registry_first_scan_done(const procctl_registry_t *r)
{
	return r->first_scan_done;
}

int procctl_registry_stats(procctl_registry_t *r, struct procctl_registry_stats *out, size_t sz)
{
	struct procctl_registry_stats st;
	const struct entry *e;
	pthread_mutex_lock(&r->mu);
	st = r->stats;
	st.owned = 0;
	for (e = r->entries; e; e = e->next)
		st.owned += (procctl_client_ownership(e->c) == PROCCTL_OWN_OWNED) != 0;
	pthread_mutex_unlock(&r->mu);
	return procctl_out_give(out, sz, &st, sizeof st);
}

void procctl_registry_close(procctl_registry_t *r, unsigned flags)
{
	struct lock_rec *l, *ln;

	if (!r)
		return;
	procctl_scan_end(r->scan_it);
	procctl_scan_end(r->pid_it);
	reg_bells_stop(r);
	if (r->hb_started) {
		pthread_mutex_lock(&r->mu);
		r->hb_stop = 1;
		pthread_cond_signal(&r->hb_cv);
		pthread_mutex_unlock(&r->mu);
		pthread_join(r->hb, NULL);
	}
	/* Stop writing; the hand-off (RELEASED) or uninstall is the last
	 * write to each region, then the locks go (SPEC.md 8.3). */
	r->closing = 1;
	while (r->entries) {
		struct entry *e = r->entries;
		if ((procctl_client_ownership(e->c) == PROCCTL_OWN_OWNED)) {
			if (flags & PROCCTL_CLOSE_UNINSTALL)
				procctl_client_uninstall(e->c);
			else
				procctl_client_release(e->c);
		}
		detach(r, e, 0);
	}
	for (l = r->locks; l; l = ln) {
		ln = l->next;
		if (l->fd >= 0) {
			if (l->held)
				procctl_lock_drop(l->fd);
			close(l->fd);
		}
		if (l->held) {
			l->held = 0;
			reg_emit_ownership(r, l);
		}
		free(l);
	}
	if (r->epfd >= 0)
		close(r->epfd);
	if (r->evfd >= 0)
		close(r->evfd);
	if (r->rescan_fd >= 0)
		close(r->rescan_fd);
	if (r->tick_fd >= 0)
		close(r->tick_fd);
	if (r->lock_ifd >= 0)
		close(r->lock_ifd);
	free(r->bell_set);
	if (r->lock_dirfd >= 0)
		close(r->lock_dirfd);
	pthread_cond_destroy(&r->hb_cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
