/* SPDX-License-Identifier: Apache-2.0 */
/* registry.c - discovery, attach, exit and exec detection, node locks and
 * ownership, heartbeats and hand-off (SPEC.md 2.4, 8, 10). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "doorbell.h"
#include "lock.h"
#include "log.h"

#define DEFAULT_LEASE_NS 10000000000ull
#define DEFAULT_RESCAN_NS 60000000000ull
#define TICK_NS 20000000ull   /* lock retries for passive consumers */
#define SWEEP_BATCH 64        /* clients an exec sweep looks at a tick; notify finds most sooner */
#define NOTIFY_BATCH 16       /* notified pids scanned a dispatch (the rest at the next) */
#define FULL_SCAN_SHARE 10    /* asked-for full scans start at most every 10x a scan's time */
#define SCAN_STEP_PIDS 16     /* processes a full scan looks at in one dispatch (~1 ms) */
#define NOTIFY_MAX 1024
#define REJECTED_MAX 256
#define UNSEALED_MAX 64
#define UNSEALED_TICKS 50 /* a region found mid-init is probed again for 1 s */
#define DEFAULT_PER_PROCESS 8
#define DEFAULT_REGIONS 4096
#define DEFAULT_CONSUMERS 256
#define BELL_WINDOW_NS 1000000000ull
#define BELL_LIMIT 1000 /* rings a process may make per window */

/* epoll tags; a client's is its entry id, TAG_FIRST_ID and up (never a
 * pointer: a freed entry's address can come back in the same batch). */
enum { TAG_EVENT = 1, TAG_RESCAN, TAG_TICK, TAG_FIRST_ID };

struct lock_rec {
	char consumer[32];
	int fd;
	int held;
	uint32_t epoch;
	uint64_t ready_scan; /* ready once scan number ready_scan has finished */
	struct lock_rec *next;
};

struct entry {
	procctl_client_t *c;
	struct lock_rec *lk;
	uint64_t id;
	struct entry *next;
	/* its doorbell, under mu (the watcher's) */
	uint64_t bell_window, bell_muted_until;
	uint32_t bell_count;
	int bell_bad;
	int bell_watched; /* in a watcher's set now */
	int bell_rang;    /* rang since procctl_registry_doorbell_rang last asked */
	int bell_event;   /* rang since the last DOORBELL event */
	int bell_emit;    /* the loop's: an event to emit now */
};

struct rejected {
	pid_t pid;
	dev_t dev;
	ino_t ino;
};

struct procctl_registry {
	struct procctl_registry_opts o;
	char consumer[32], lock_dir[256], proc_root[256];
	int epfd, evfd, rescan_fd, tick_fd;
	uint32_t domain;
	int have_domain, domain_logged;
	uint32_t scan_over_cap; /* regions the full scan under way left out for a cap */
	int lock_dirfd; /* procctl_trusted_dir(lock_dir); -1 passive */
	struct lock_rec *locks;
	uint32_t nlocks;
	int closing; /* locks go with the registry, not one by one */
	uint64_t scans_started, scans_done, next_id;
	uint32_t sweep_pos; /* the exec sweep's place in the entries */
	int first_scan_done, stop;

	pthread_mutex_t mu; /* entries, notify queue, stats: shared with the heartbeat thread */
	struct entry *entries;
	pid_t notify_q[NOTIFY_MAX];
	unsigned nq;
	int notify_all;
	int64_t full_start, full_ns; /* the last full scan: when it began, its steps' time */
	procctl_scan_iter_t *scan_it; /* a full scan under way */
	uint64_t scan_no;             /* its number (scans_started then) */
	struct procctl_registry_stats stats;

	struct rejected rejected[REJECTED_MAX];
	unsigned nrejected;
	struct {
		pid_t pid;
		unsigned ticks; /* probes left */
		dev_t dev;      /* the region */
		ino_t ino;
		char consumer[PROCCTL_CONSUMER_MAX + 1];
	} unsealed[UNSEALED_MAX];
	int reprobing; /* inside probe_unsealed: its refusals are not new */

	pthread_t hb;
	pthread_cond_t hb_cv;
	int hb_stop, hb_started;

	struct procctl_doorbells bells; /* PROCCTL_REGISTRY_DOORBELLS */
	int bell_pending;               /* under mu: some entry rang since the last events */
};

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
static void kick(procctl_registry_t *r)
{
	uint64_t one = 1;
	if (write(r->evfd, &one, sizeof one) < 0) {
		/* EAGAIN: the counter is saturated, a wakeup is pending anyway */
	}
}

static void emit(procctl_registry_t *r, struct procctl_event *ev)
{
	if (r->o.on_event)
		r->o.on_event(ev, r->o.arg);
}

/* An event about an attached region (entry e). */
static void emit_entry(procctl_registry_t *r, const struct entry *e, enum procctl_event_type type, int reason)
{
	struct procctl_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = type;
	ev.client = e->c;
	ev.pid = e->c->info.pid;
	ev.instance_id = e->c->info.hdr.instance_id;
	ev.consumer = e->lk->consumer;
	ev.reason = reason;
	emit(r, &ev);
}

/* ---- heartbeats ------------------------------------------------------- */

/* The lease a process applies: ours clamped into its header's bounds. */
static uint64_t clamped_lease(const procctl_registry_t *r, const procctl_client_t *c)
{
	uint64_t l = r->o.lease_ns;
	return l < c->info.hdr.lease_min_ns ? c->info.hdr.lease_min_ns
	       : l > c->info.hdr.lease_max_ns ? c->info.hdr.lease_max_ns
					      : l;
}

/* Only stores to mapped memory, under locks held for stores only: no
 * remote read, no syscall on a fetched fd ever delays it (SPEC.md 8.3).
 * Every owned region is beaten at a quarter of the shortest lease any of
 * them applies (beating more often than needed is harmless). */
static void *hb_main(void *arg)
{
	procctl_registry_t *r = arg;
	uint64_t last_beat = 0, last_lease = 0;
	pthread_mutex_lock(&r->mu);
	while (!r->hb_stop) {
		struct timespec ts;
		uint64_t at, now, every = r->o.lease_ns / 4;
		struct entry *e;
		int beat = 0;
		for (e = r->entries; e; e = e->next)
			if ((procctl_client_ownership(e->c) == PROCCTL_OWN_OWNED)) {
				uint64_t l = clamped_lease(r, e->c) / 4;
				procctl_client_heartbeat(e->c);
				r->stats.heartbeats++;
				beat = 1;
				if (l < every)
					every = l;
			}
		now = (uint64_t)procctl_now_ns();
		/* A beat more than a lease after the one before: the processes
		 * may have seen their lease expire (this agent was stopped or
		 * starved). */
		if (beat && last_beat && now - last_beat > last_lease)
			r->stats.lease_lapses++;
		last_beat = beat ? now : 0;
		last_lease = every * 4;
		at = now + every;
		ts.tv_sec = (time_t)(at / 1000000000ull);
		ts.tv_nsec = (long)(at % 1000000000ull);
		pthread_cond_timedwait(&r->hb_cv, &r->mu, &ts);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* ---- doorbells (the watcher thread, under mu) --------------------------- */

static size_t bells_collect(void *arg, struct procctl_bell *out, size_t first, size_t max, size_t limit)
{
	procctl_registry_t *r = arg;
	uint64_t now = (uint64_t)procctl_now_ns();
	struct entry *e;
	size_t k = 0, n = 0; /* k: the words to watch so far */
	for (e = r->entries; e; e = e->next) {
		if (e->bell_bad || now < e->bell_muted_until) {
			e->bell_watched = 0;
			continue;
		}
		e->bell_watched = k < limit; /* past every watcher's slice: not watched */
		if (k >= first && k < first + max) {
			out[n].word = &e->c->r.ctrl->doorbell;
			out[n++].id = e->id;
		}
		k++;
	}
	return n;
}

static struct entry *entry_by_id(const procctl_registry_t *r, uint64_t id)
{
	struct entry *e;
	for (e = r->entries; e && e->id != id; e = e->next)
		;
	return e;
}

static void bells_rang(void *arg, uint64_t id)
{
	procctl_registry_t *r = arg;
	struct entry *e = entry_by_id(r, id);
	uint64_t now = (uint64_t)procctl_now_ns();
	if (!e)
		return;
	if (now - e->bell_window >= BELL_WINDOW_NS) {
		e->bell_window = now;
		e->bell_count = 0;
	}
	if (++e->bell_count > BELL_LIMIT) {
		e->bell_muted_until = e->bell_window + BELL_WINDOW_NS;
		r->stats.doorbells_muted++;
		procctl_log_limited(PROCCTL_LOG_WARN, "doorbell_muted", "pid=%d rings=%u (for the rest of the second)",
			    (int)e->c->info.pid, e->bell_count);
	}
	r->stats.doorbells++;
	e->bell_rang = 1;
	e->bell_event = 1;
	r->bell_pending = 1;
	kick(r);
}

static void bells_nonzero(void *arg, uint64_t id)
{
	procctl_registry_t *r = arg;
	struct entry *e = entry_by_id(r, id);
	if (!e || e->bell_bad)
		return;
	e->bell_bad = 1;
	r->stats.doorbells_bad++;
	procctl_log_limited(PROCCTL_LOG_WARN, "doorbell_written", "pid=%d (never listened to again)", (int)e->c->info.pid);
}

/* On the loop thread: an event for each entry that rang since the last
 * ones (entries leave only on this thread, so the list holds still). */
static void emit_doorbell(procctl_registry_t *r)
{
	struct entry *e;
	int pending;
	pthread_mutex_lock(&r->mu);
	pending = r->bell_pending;
	r->bell_pending = 0;
	for (e = r->entries; pending && e; e = e->next) {
		e->bell_emit = e->bell_event;
		e->bell_event = 0;
	}
	pthread_mutex_unlock(&r->mu);
	for (e = r->entries; pending && e; e = e->next)
		if (e->bell_emit) {
			e->bell_emit = 0;
			emit_entry(r, e, PROCCTL_EV_DOORBELL, 0);
		}
}

/* ---- locks and ownership ----------------------------------------------- */

static struct lock_rec *lock_find(procctl_registry_t *r, const char *consumer)
{
	struct lock_rec *l;
	for (l = r->locks; l; l = l->next)
		if (!strcmp(l->consumer, consumer))
			return l;
	return NULL;
}

static void claim(procctl_registry_t *r, struct entry *e)
{
	int64_t g = procctl_client_claim(e->c, r->domain, e->lk->epoch, r->o.lease_ns);
	if (g > 0) { /* its lease may be the shortest: let the beat recompute */
		pthread_mutex_lock(&r->mu);
		pthread_cond_signal(&r->hb_cv);
		pthread_mutex_unlock(&r->mu);
	}
	if (g == -EEXIST) {
		pthread_mutex_lock(&r->mu);
		r->stats.conflicts++;
		pthread_mutex_unlock(&r->mu);
		procctl_log_limited(PROCCTL_LOG_WARN, "owner_conflict", "pid=%d consumer=%s",
			    (int)e->c->info.pid, e->lk->consumer);
	} else if (g < 0) {
		procctl_log_limited(PROCCTL_LOG_WARN, "claim_failed", "pid=%d consumer=%s errno=%d",
			    (int)e->c->info.pid, e->lk->consumer, (int)-g);
	}
}

static void emit_ownership(procctl_registry_t *r, struct lock_rec *l)
{
	struct procctl_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = PROCCTL_EV_OWNERSHIP;
	ev.consumer = l->consumer;
	ev.held = l->held;
	emit(r, &ev);
}

/* Try to take l's lock; on success claim every region of its consumer and
 * ask for the full scan that makes it ready. */
static void lock_try(procctl_registry_t *r, struct lock_rec *l)
{
	struct entry *e;
	int err;

	if (l->held || (r->o.flags & PROCCTL_REGISTRY_PASSIVE))
		return;
	if (l->fd < 0 && (l->fd = procctl_lock_open(r->lock_dirfd, l->consumer)) < 0)
		return; /* not yet: the next tick tries again */
	if (!r->have_domain) {
		err = procctl_lock_domain(r->lock_dirfd, &r->domain);
		if (err) { /* said once; retried every tick */
			if (!r->domain_logged++)
				procctl_log(PROCCTL_LOG_ERROR, "lock_domain_failed", "dir=%s errno=%d (retrying)",
					    r->lock_dir, -err);
			return;
		}
		r->have_domain = 1;
	}
	err = procctl_lock_take(l->fd, r->lock_dirfd, l->consumer, &l->epoch);
	if (err == -ESTALE) { /* the file was replaced: the next tick reopens */
		close(l->fd);
		l->fd = -1;
	}
	if (err)
		return;
	l->held = 1;
	/* Ready after a full scan that begins after now (SPEC.md 9.2). */
	l->ready_scan = r->scans_started + 1;
	procctl_log(PROCCTL_LOG_INFO, "lock_taken", "consumer=%s epoch=%u domain=%u", l->consumer, l->epoch, r->domain);
	for (e = r->entries; e; e = e->next)
		if (e->lk == l)
			claim(r, e);
	emit_ownership(r, l); /* ready once a full scan begun now ends: procctl_registry_ready asks for it */
}

/* Our lock file is no longer the one at the path (deleted or replaced):
 * another agent can lock the new one, so this one stops writing. */
static void lock_check(procctl_registry_t *r, struct lock_rec *l)
{
	struct entry *e;
	if (!l->held || procctl_lock_current(l->fd, r->lock_dirfd, l->consumer))
		return;
	procctl_log(PROCCTL_LOG_ERROR, "lock_lost", "consumer=%s epoch=%u", l->consumer, l->epoch);
	for (e = r->entries; e; e = e->next)
		if (e->lk == l)
			procctl_client_release(e->c);
	procctl_lock_drop(l->fd);
	close(l->fd);
	l->fd = -1;
	l->held = 0;
	emit_ownership(r, l);
}

static struct lock_rec *lock_for(procctl_registry_t *r, const char *consumer)
{
	struct lock_rec *l = lock_find(r, consumer);
	if (l)
		return l;
	l = calloc(1, sizeof *l);
	if (!l)
		return NULL;
	snprintf(l->consumer, sizeof l->consumer, "%s", consumer);
	l->fd = (r->o.flags & PROCCTL_REGISTRY_PASSIVE) ? -1 : procctl_lock_open(r->lock_dirfd, consumer);
	if (l->fd < 0 && !(r->o.flags & PROCCTL_REGISTRY_PASSIVE))
		procctl_log_limited(PROCCTL_LOG_ERROR, "lock_open_failed", "dir=%s consumer=%s errno=%d (retrying)",
				    r->lock_dir, consumer, -l->fd);
	l->next = r->locks;
	r->locks = l;
	r->nlocks++;
	lock_try(r, l);
	return l;
}

/* l's consumer has no region attached any more: its lock goes (a
 * consumer named up front keeps it), so names a process made up cost
 * nothing once it is gone. The file is removed while still locked. */
static void lock_put(procctl_registry_t *r, struct lock_rec *l)
{
	struct lock_rec **pp;
	const struct entry *e;
	if (r->consumer[0] || r->closing)
		return;
	for (e = r->entries; e; e = e->next)
		if (e->lk == l)
			return;
	for (pp = &r->locks; *pp != l; pp = &(*pp)->next)
		;
	*pp = l->next;
	r->nlocks--;
	if (l->fd >= 0) {
		if (l->held) {
			procctl_lock_remove(l->fd, r->lock_dirfd, l->consumer);
			procctl_lock_drop(l->fd);
		}
		close(l->fd);
	}
	if (l->held) {
		l->held = 0;
		procctl_log(PROCCTL_LOG_INFO, "lock_released", "consumer=%s epoch=%u (no region left)", l->consumer,
			    l->epoch);
		emit_ownership(r, l);
	}
	free(l);
}

/* ---- attach and detach ------------------------------------------------ */

static struct entry *entry_of(procctl_registry_t *r, pid_t pid, dev_t dev, ino_t ino)
{
	struct entry *e;
	for (e = r->entries; e; e = e->next)
		if (e->c->info.pid == pid && e->c->info.dev == dev && e->c->info.ino == ino)
			return e;
	return NULL;
}

static int was_rejected(procctl_registry_t *r, pid_t pid, dev_t dev, ino_t ino)
{
	unsigned i;
	for (i = 0; i < r->nrejected && i < REJECTED_MAX; i++)
		if (r->rejected[i].pid == pid && r->rejected[i].dev == dev && r->rejected[i].ino == ino)
			return 1;
	return 0;
}

/* Forget pid's refusals: a notify(pid) says it has something new. */
static void forget_rejected(procctl_registry_t *r, pid_t pid)
{
	unsigned i;
	for (i = 0; i < r->nrejected && i < REJECTED_MAX; i++)
		if (r->rejected[i].pid == pid)
			r->rejected[i].pid = 0;
}

/* A region without its seals yet: its process may be inside procctl_init,
 * so it is probed again on each tick for a while (no notify need come). */
static void retry_unsealed(procctl_registry_t *r, const struct procctl_scan_entry *s)
{
	unsigned i, free_slot = UNSEALED_MAX;
	for (i = 0; i < UNSEALED_MAX; i++) {
		if (r->unsealed[i].ticks && r->unsealed[i].pid == s->pid)
			return; /* already counting down: a region that never seals stops */
		if (!r->unsealed[i].ticks && free_slot == UNSEALED_MAX)
			free_slot = i;
	}
	if (free_slot < UNSEALED_MAX) {
		r->unsealed[free_slot].pid = s->pid;
		r->unsealed[free_slot].ticks = UNSEALED_TICKS;
		r->unsealed[free_slot].dev = s->dev;
		r->unsealed[free_slot].ino = s->ino;
		snprintf(r->unsealed[free_slot].consumer, sizeof r->unsealed[free_slot].consumer, "%s", s->consumer);
	}
}

static void remember_rejected(procctl_registry_t *r, pid_t pid, dev_t dev, ino_t ino)
{
	struct rejected *rj = &r->rejected[r->nrejected++ % REJECTED_MAX];
	rj->pid = pid;
	rj->dev = dev;
	rj->ino = ino;
}

/* The cap a region of pid would pass: PROCCTL_REJECT_LIMIT (its
 * process's), PROCCTL_REJECT_REGION_LIMIT (all), or 0. */
static enum procctl_reject over_limit(procctl_registry_t *r, pid_t pid)
{
	const struct entry *e;
	uint32_t mine = 0, all = 0;
	for (e = r->entries; e; e = e->next, all++)
		mine += e->c->info.pid == pid;
	if (mine >= r->o.max_per_process)
		return PROCCTL_REJECT_LIMIT;
	return all >= r->o.max_regions ? PROCCTL_REJECT_REGION_LIMIT : 0;
}

static void count_reject(procctl_registry_t *r, enum procctl_reject why)
{
	pthread_mutex_lock(&r->mu);
	r->stats.rejects[why]++;
	pthread_mutex_unlock(&r->mu);
}

static int on_found(const struct procctl_scan_entry *s, void *arg)
{
	procctl_registry_t *r = arg;
	struct procctl_attach_opts ao = {sizeof ao, r->proc_root, 0};
	enum procctl_reject why;
	struct epoll_event ee;
	procctl_client_t *c;
	struct entry *e;

	if (entry_of(r, s->pid, s->dev, s->ino) || was_rejected(r, s->pid, s->dev, s->ino))
		return 0;
	if (!lock_find(r, s->consumer) && r->nlocks >= r->o.max_consumers) {
		count_reject(r, PROCCTL_REJECT_CONSUMER_LIMIT);
		procctl_log_limited(PROCCTL_LOG_WARN, "attach_rejected", "pid=%d fd=%d consumer=%s reason=%s max_consumers=%u",
				    (int)s->pid, s->fd, s->consumer, procctl_reject_name(PROCCTL_REJECT_CONSUMER_LIMIT),
				    r->o.max_consumers);
		return 0;
	}
	if ((why = over_limit(r, s->pid))) {
		count_reject(r, why);
		r->scan_over_cap += r->scan_it != NULL; /* the full scan's count: a gauge, warned once */
		procctl_log(PROCCTL_LOG_DEBUG, "attach_rejected", "pid=%d fd=%d consumer=%s reason=%s", (int)s->pid,
			    s->fd, s->consumer, procctl_reject_name(why));
		return 0;
	}
	pthread_mutex_lock(&r->mu);
	r->stats.attach_attempts += !r->reprobing; /* a probe of a region mid-init is not a new attempt */
	pthread_mutex_unlock(&r->mu);
	c = procctl_client_attach(s, &ao, &why);
	if (!c) {
		if (errno == EPROTO) {
			/* Unsealed may be a process inside procctl_init (the name
			 * exists before the seals): probed again soon, and quiet.
			 * The rest is remembered, logged once, counted each time. */
			int final = why != PROCCTL_REJECT_UNSEALED;
			if (!final)
				retry_unsealed(r, s);
			else
				remember_rejected(r, s->pid, s->dev, s->ino);
			if (!r->reprobing || final) /* a verdict a probe reached counts */
				count_reject(r, why);
			if (final) /* a peer can make as many as it likes */
				procctl_log_limited(PROCCTL_LOG_WARN, "attach_rejected", "pid=%d fd=%d consumer=%s reason=%s",
						    (int)s->pid, s->fd, s->consumer, procctl_reject_name(why));
			else
				procctl_log(PROCCTL_LOG_DEBUG, "attach_rejected", "pid=%d fd=%d consumer=%s reason=%s",
					    (int)s->pid, s->fd, s->consumer, procctl_reject_name(why));
		} else if (errno == EMFILE || errno == ENFILE || errno == ENOMEM) { /* ours, not the region's */
			procctl_log_limited(PROCCTL_LOG_WARN, "attach_failed", "pid=%d fd=%d errno=%d error=\"%s\"",
					    (int)s->pid, s->fd, errno, strerror(errno));
		} else {
			procctl_log(PROCCTL_LOG_DEBUG, "attach_failed", "pid=%d fd=%d errno=%d", (int)s->pid, s->fd,
				    errno);
		}
		return 0;
	}
	e = calloc(1, sizeof *e);
	if (!e || !(e->lk = lock_for(r, s->consumer))) {
		free(e);
		procctl_client_close(c);
		return 0;
	}
	e->c = c;
	e->id = TAG_FIRST_ID + r->next_id++;
	memset(&ee, 0, sizeof ee);
	ee.events = EPOLLIN;
	ee.data.u64 = e->id;
	epoll_ctl(r->epfd, EPOLL_CTL_ADD, procctl_client_pidfd(c), &ee);
	pthread_mutex_lock(&r->mu);
	e->next = r->entries;
	r->entries = e;
	r->stats.attached++;
	r->stats.clients++;
	pthread_mutex_unlock(&r->mu);
	procctl_doorbells_changed(&r->bells, r->stats.clients);
	if (e->lk->held)
		claim(r, e);
	procctl_log(PROCCTL_LOG_INFO, "attached", "pid=%d consumer=%s instance=%016llx owned=%d", (int)s->pid,
		    s->consumer, (unsigned long long)c->info.hdr.instance_id, (procctl_client_ownership(c) == PROCCTL_OWN_OWNED));
	emit_entry(r, e, PROCCTL_EV_ATTACHED, 0);
	return 0;
}

static void probe_unsealed(procctl_registry_t *r)
{
	unsigned i;
	for (i = 0; i < UNSEALED_MAX; i++) {
		pid_t pid = r->unsealed[i].pid;
		const struct entry *e;
		if (!r->unsealed[i].ticks)
			continue;
		if (!--r->unsealed[i].ticks) {
			/* Still unsealed after a second: not a process inside
			 * procctl_init. Refused, said once, skipped by rescans
			 * until a notify says the process has something new. */
			remember_rejected(r, pid, r->unsealed[i].dev, r->unsealed[i].ino);
			procctl_log_limited(PROCCTL_LOG_WARN, "attach_rejected", "pid=%d consumer=%s reason=unsealed probed_ms=%d",
				    (int)pid, r->unsealed[i].consumer, (int)(UNSEALED_TICKS * TICK_NS / 1000000));
			continue;
		}
		r->reprobing = 1;
		procctl_scan_pid(r->proc_root, pid, r->consumer[0] ? r->consumer : NULL, on_found, r);
		r->reprobing = 0;
		for (e = r->entries; e && e->c->info.pid != pid; e = e->next)
			;
		if (e || was_rejected(r, pid, r->unsealed[i].dev, r->unsealed[i].ino))
			r->unsealed[i].ticks = 0; /* sealed now: attached, or refused for good */
	}
}

static void detach(procctl_registry_t *r, struct entry *e, int reason)
{
	struct entry **pp;
	struct lock_rec *l;

	epoll_ctl(r->epfd, EPOLL_CTL_DEL, procctl_client_pidfd(e->c), NULL);
	pthread_mutex_lock(&r->mu); /* after this the heartbeat thread cannot see it */
	for (pp = &r->entries; *pp; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	r->stats.detached++;
	r->stats.clients--;
	pthread_mutex_unlock(&r->mu);
	procctl_doorbells_changed(&r->bells, r->stats.clients);
	procctl_log(PROCCTL_LOG_INFO, "detached", "pid=%d consumer=%s instance=%016llx reason=%s", (int)e->c->info.pid,
		    e->lk->consumer, (unsigned long long)e->c->info.hdr.instance_id,
		    reason == -ESRCH ? "exited" : reason == -ESTALE ? "execed" : reason ? strerror(-reason) : "closed");
	emit_entry(r, e, PROCCTL_EV_DETACHED, reason);
	procctl_client_close(e->c);
	l = e->lk;
	free(e);
	lock_put(r, l);
}

/* Exec keeps the pid and the pidfd quiet: look at every client, SWEEP_BATCH
 * a tick, so a thousand of them never hold the loop at once. */
static void sweep(procctl_registry_t *r)
{
	struct entry *e = r->entries, *next;
	uint32_t i;
	for (i = 0; e && i < r->sweep_pos; i++) /* where the last batch stopped */
		e = e->next;
	if (!e) {
		r->sweep_pos = 0;
		e = r->entries;
	}
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
 * so the loop is never held for all of /proc; its time is the steps'. */
static void full_scan_step(procctl_registry_t *r)
{
	int64_t t0 = procctl_now_ns();
	struct lock_rec *l;
	int more = procctl_scan_step(r->scan_it, r->consumer[0] ? r->consumer : NULL, SCAN_STEP_PIDS, on_found, r);
	r->full_ns += procctl_now_ns() - t0;
	if (more > 0) {
		kick(r); /* the next step at the next dispatch */
		return;
	}
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
	pthread_mutex_unlock(&r->mu);
	for (l = r->locks; l; l = l->next)
		if (l->held && l->ready_scan == r->scan_no)
			procctl_log(PROCCTL_LOG_INFO, "ready", "consumer=%s epoch=%u", l->consumer, l->epoch);
}

static void full_scan(procctl_registry_t *r)
{
	int64_t t0 = procctl_now_ns();
	if (r->scan_it)
		return; /* one at a time: a scan asked for meanwhile waits (notify_all) */
	r->full_start = t0;
	/* A consumer named up front has its lock taken before the scan
	 * begins, so this very scan makes it ready. */
	if (r->consumer[0])
		lock_for(r, r->consumer);
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

static void drain_notify(procctl_registry_t *r)
{
	pid_t q[NOTIFY_MAX];
	unsigned n, i;
	int all;
	uint64_t v;

	if (read(r->evfd, &v, sizeof v) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&r->mu);
	n = r->nq < NOTIFY_BATCH ? r->nq : NOTIFY_BATCH; /* the rest after other work */
	memcpy(q, r->notify_q, n * sizeof *q);
	memmove(r->notify_q, r->notify_q + n, (r->nq - n) * sizeof *q);
	r->nq -= n;
	if (r->nq)
		kick(r);
	all = r->notify_all;
	/* A full scan asked for (a lock taken, a notify queue overflowed) waits
	 * until the last one is ten of its durations old: names a process can
	 * make up cannot keep the loop scanning. The tick asks again. */
	if (all && (r->scan_it || procctl_now_ns() < full_scan_due(r)))
		all = 0;
	else
		r->notify_all = 0;
	r->stats.targeted_scans += n;
	pthread_mutex_unlock(&r->mu);
	if (all) {
		full_scan(r);
		return;
	}
	for (i = 0; i < n; i++) {
		struct entry *e = r->entries, *next;
		forget_rejected(r, q[i]);
		for (; e; e = next) { /* a pid that exec'd has a new region */
			next = e->next;
			if (e->c->info.pid == q[i]) {
				int a = procctl_client_alive(e->c);
				if (a < 0)
					detach(r, e, a);
			}
		}
		procctl_scan_pid(r->proc_root, q[i], r->consumer[0] ? r->consumer : NULL, on_found, r);
	}
}

int procctl_registry_dispatch(procctl_registry_t *r)
{
	struct epoll_event evs[16];
	int n, i;

	if (r->scan_it)
		full_scan_step(r);
	else if (!r->first_scan_done)
		full_scan(r);
	n = epoll_wait(r->epfd, evs, 16, 0); /* more at the next dispatch: the fd stays readable */
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (i = 0; i < n; i++) {
		uint64_t tag = evs[i].data.u64, v;
		if (tag == TAG_EVENT) {
			drain_notify(r);
			emit_doorbell(r);
		} else if (tag == TAG_RESCAN) {
			if (read(r->rescan_fd, &v, sizeof v) > 0)
				full_scan(r);
		} else if (tag == TAG_TICK) {
			struct lock_rec *l;
			if (read(r->tick_fd, &v, sizeof v) <= 0)
				continue;
			for (l = r->locks; l; l = l->next) {
				lock_check(r, l);
				lock_try(r, l);
			}
			probe_unsealed(r);
			sweep(r);
			pthread_mutex_lock(&r->mu);
			if (r->notify_all && !r->scan_it && procctl_now_ns() >= full_scan_due(r))
				kick(r); /* a deferred full scan is due */
			pthread_mutex_unlock(&r->mu);
		} else {
			struct entry *e;
			for (e = r->entries; e && e->id != tag; e = e->next) /* still attached? */
				;
			if (e)
				detach(r, e, -ESRCH);
		}
	}
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
	kick(r);
}

int procctl_registry_notify(procctl_registry_t *r, pid_t pid)
{
	if (pid <= 0)
		return -EINVAL;
	pthread_mutex_lock(&r->mu);
	if (r->nq < NOTIFY_MAX)
		r->notify_q[r->nq++] = pid;
	else
		r->notify_all = 1; /* too many at once: a full scan finds them all */
	pthread_mutex_unlock(&r->mu);
	kick(r);
	return 0;
}

int procctl_registry_rescan(procctl_registry_t *r)
{
	pthread_mutex_lock(&r->mu);
	r->notify_all = 1;
	pthread_mutex_unlock(&r->mu);
	kick(r);
	return 0;
}

/* ---- lifecycle ------------------------------------------------------ */

procctl_registry_t *procctl_registry_new(const struct procctl_registry_opts *opts)
{
	procctl_registry_t *r;
	struct epoll_event ee;
	size_t n;

	if (!opts || opts->sz < offsetof(struct procctl_registry_opts, flags) + sizeof opts->flags ||
	    (opts->flags & ~(PROCCTL_REGISTRY_PASSIVE | PROCCTL_REGISTRY_DOORBELLS)) ||
	    (opts->consumer && procctl_name_valid(opts->consumer, PROCCTL_CONSUMER_MAX) < 0) ||
	    (opts->lease_ns && (opts->lease_ns < PROCCTL_LEASE_FLOOR_NS || opts->lease_ns > PROCCTL_LEASE_CEIL_NS))) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	/* An older caller's smaller struct: the fields it lacks are 0. */
	memcpy(&r->o, opts, opts->sz < sizeof r->o ? opts->sz : sizeof r->o);
	if (!r->o.max_per_process)
		r->o.max_per_process = DEFAULT_PER_PROCESS;
	if (!r->o.max_regions)
		r->o.max_regions = DEFAULT_REGIONS;
	if (!r->o.max_consumers)
		r->o.max_consumers = DEFAULT_CONSUMERS;
	if (!r->o.lease_ns)
		r->o.lease_ns = DEFAULT_LEASE_NS;
	if (!r->o.rescan_ns)
		r->o.rescan_ns = DEFAULT_RESCAN_NS;
	snprintf(r->consumer, sizeof r->consumer, "%s", opts->consumer ? opts->consumer : "");
	n = (size_t)snprintf(r->lock_dir, sizeof r->lock_dir, "%s", opts->lock_dir ? opts->lock_dir : PROCCTL_LOCK_DIR_DEFAULT);
	n |= (size_t)snprintf(r->proc_root, sizeof r->proc_root, "%s", opts->proc_root ? opts->proc_root : "/proc");
	if (n >= sizeof r->lock_dir) {
		free(r);
		errno = ENAMETOOLONG;
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
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&r->hb_cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	r->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	r->rescan_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	r->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (r->epfd < 0 || r->evfd < 0 || r->rescan_fd < 0 || r->tick_fd < 0) {
		int err = errno;
		procctl_registry_close(r, 0);
		errno = err;
		return NULL;
	}
	memset(&ee, 0, sizeof ee);
	ee.events = EPOLLIN;
	ee.data.u64 = TAG_EVENT;
	epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->evfd, &ee);
	ee.data.u64 = TAG_RESCAN;
	epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->rescan_fd, &ee);
	ee.data.u64 = TAG_TICK;
	epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->tick_fd, &ee);
	arm(r->rescan_fd, r->o.rescan_ns, r->o.rescan_ns);
	arm(r->tick_fd, TICK_NS, TICK_NS);
	kick(r); /* the first dispatch runs the first scan */
	if (pthread_create(&r->hb, NULL, hb_main, r) != 0) {
		int err = errno;
		procctl_registry_close(r, 0);
		errno = err ? err : EAGAIN;
		return NULL;
	}
	r->hb_started = 1;
	if (r->o.flags & PROCCTL_REGISTRY_DOORBELLS) {
		int err;
		r->bells.mu = &r->mu;
		r->bells.collect = bells_collect;
		r->bells.rang = bells_rang;
		r->bells.nonzero = bells_nonzero;
		r->bells.arg = r;
		if ((err = procctl_doorbells_start(&r->bells)) < 0) {
			procctl_registry_close(r, 0);
			errno = -err;
			return NULL;
		}
	}
	return r;
}

int procctl_registry_fd(const procctl_registry_t *r)
{
	return r->epfd;
}

int procctl_registry_first_scan_done(const procctl_registry_t *r)
{
	return r->first_scan_done;
}

int procctl_registry_owner(const procctl_registry_t *r, const char *consumer)
{
	const struct lock_rec *l;
	for (l = r->locks; l; l = l->next)
		if (!strcmp(l->consumer, consumer))
			return l->held;
	return 0;
}

int procctl_registry_ready(procctl_registry_t *r, const char *consumer)
{
	const struct lock_rec *l = lock_find(r, consumer);
	if (!l || !l->held)
		return 0;
	if (r->scans_done >= l->ready_scan)
		return 1;
	if (r->scans_started < l->ready_scan) { /* none begun since the lock: ask for one */
		pthread_mutex_lock(&r->mu);
		r->notify_all = 1;
		pthread_mutex_unlock(&r->mu);
		kick(r);
	}
	return 0;
}

size_t procctl_registry_clients(const procctl_registry_t *r, procctl_client_t **out, size_t max)
{
	const struct entry *e;
	size_t n = 0;
	for (e = r->entries; e; e = e->next, n++)
		if (n < max)
			out[n] = e->c;
	return n;
}

int procctl_registry_doorbell_rang(procctl_registry_t *r, const procctl_client_t *c)
{
	struct entry *e;
	int rang = -ENOTSUP;
	pthread_mutex_lock(&r->mu);
	for (e = r->entries; e && e->c != c; e = e->next)
		;
	if (e && e->bell_watched) {
		rang = e->bell_rang;
		e->bell_rang = 0;
	}
	pthread_mutex_unlock(&r->mu);
	return rang;
}

procctl_client_t *procctl_registry_find(const procctl_registry_t *r, pid_t pid)
{
	const struct entry *e;
	for (e = r->entries; e; e = e->next)
		if (e->c->info.pid == pid)
			return e->c;
	return NULL;
}

void procctl_registry_stats(procctl_registry_t *r, struct procctl_registry_stats *out)
{
	const struct entry *e;
	pthread_mutex_lock(&r->mu);
	*out = r->stats;
	out->owned = 0;
	for (e = r->entries; e; e = e->next)
		out->owned += (procctl_client_ownership(e->c) == PROCCTL_OWN_OWNED) != 0;
	pthread_mutex_unlock(&r->mu);
}

void procctl_registry_close(procctl_registry_t *r, unsigned flags)
{
	struct lock_rec *l, *ln;

	if (!r)
		return;
	procctl_scan_end(r->scan_it);
	procctl_doorbells_stop(&r->bells);
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
			emit_ownership(r, l);
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
	if (r->lock_dirfd >= 0)
		close(r->lock_dirfd);
	pthread_cond_destroy(&r->hb_cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
