/* SPDX-License-Identifier: Apache-2.0 */
/* registry_bells.c - a registry's ack doorbells (SPEC.md 6.5): a futex
 * wait per attached region in one io_uring (bellring.h), armed at attach,
 * ended at detach (its word woken), re-armed when it rings, its
 * completions read by the loop, which emits PROCCTL_EV_DOORBELL for them
 * at once; or, on a kernel without io_uring futex waits (before 6.7),
 * watcher threads in futex_waitv (doorbell.h), 127 words each and
 * PROCCTL_WATCHERS_MAX of them, on the slices of a dense array of the
 * heard regions (bell_set).
 * A watcher learns of one ring a return and hears nothing until it waits
 * again, so a slice whose watcher returned is swept: every region of it
 * gets a DOORBELL event once the kernel has its watcher's wait queued
 * again (looked at BELL_SETTLE_NS after the return, and as often until
 * it is), and at most once per BELL_SWEEP_NS. Either way a process that rings more than BELL_LIMIT
 * times a second is muted for the rest of it, and one that writes its
 * doorbell word is never heard again. The public questions about a
 * client's doorbell (procctl_registry_doorbell_rang, _heard) are here too. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "log.h"
#include "registry_int.h"

#define REAP_BATCH 256

/* Under mu: count a ring of e; 1 if it is muted now. */
static int count_ring(procctl_registry_t *r, struct entry *e, uint64_t now)
{
	if (now - e->bell_window >= BELL_WINDOW_NS) {
		e->bell_window = now;
		e->bell_count = 0;
	}
	r->stats.doorbells++;
	e->bell_rang = 1;
	if (++e->bell_count <= BELL_LIMIT)
		return 0;
	e->bell_muted_until = e->bell_window + BELL_WINDOW_NS;
	r->stats.doorbells_muted++;
	procctl_log_limited(PROCCTL_LOG_WARN, "doorbell_muted", "pid=%d rings=%u (for the rest of the second)",
			    (int)e->c->info.pid, e->bell_count);
	return 1;
}

static void set_del(procctl_registry_t *r, struct entry *e);

/* Under mu: e's word was written by its process. */
static void mark_bad(procctl_registry_t *r, struct entry *e)
{
	e->bell_bad = 1;
	e->bell_watched = 0;
	set_del(r, e);
	r->stats.doorbells_bad++;
	procctl_log_limited(PROCCTL_LOG_WARN, "doorbell_written", "pid=%d (never listened to again)", (int)e->c->info.pid);
}

/* ---- io_uring (the loop's thread) ---------------------------------------- */

static int ring_start(procctl_registry_t *r)
{
	struct epoll_event ee;
	int err = procctl_bellring_open(&r->ring);
	if (err < 0)
		return err;
	memset(&ee, 0, sizeof ee);
	ee.events = EPOLLIN;
	ee.data.u64 = TAG_BELLS;
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->ring.fd, &ee) < 0) {
		err = -errno;
		procctl_bellring_close(&r->ring);
		return err;
	}
	r->ring_on = 1;
	return 0;
}

static size_t bells_collect(void *arg, struct procctl_bell *out, size_t first, size_t max);
static void bells_woke(void *arg, size_t first);
static void bells_rang(void *arg, uint64_t id);
static void bells_nonzero(void *arg, uint64_t id);

int reg_bells_start(procctl_registry_t *r)
{
	int err = (r->o.flags & PROCCTL_REGISTRY_BELL_THREADS) ? -ECANCELED : ring_start(r);
	if (!err)
		return 0;
	procctl_log(PROCCTL_LOG_INFO, "doorbells", "mode=threads reason=\"%s: %s\" watchers_max=%d words_each=%d",
		    err == -ECANCELED ? "asked for" : "no io_uring futex waits (Linux 6.7+)", strerror(-err),
		    PROCCTL_WATCHERS_MAX, PROCCTL_BELLS_MAX);
	r->bells.mu = &r->mu;
	r->bells.collect = bells_collect;
	r->bells.woke = bells_woke;
	r->bells.rang = bells_rang;
	r->bells.nonzero = bells_nonzero;
	r->bells.arg = r;
	return procctl_doorbells_start(&r->bells);
}

/* Under mu (the queue is the loop's; a full one is submitted now). */
static void ring_arm_locked(procctl_registry_t *r, struct entry *e)
{
	int ok;
	if (!r->ring_on || e->bell_armed || e->bell_bad)
		return;
	ok = procctl_bellring_arm(&r->ring, &e->c->r.ctrl->doorbell, e->id) == 0;
	e->bell_armed = ok;
	e->bell_watched = ok;
	r->ring_dirty = 1;
}

static void ring_arm(procctl_registry_t *r, struct entry *e)
{
	pthread_mutex_lock(&r->mu);
	ring_arm_locked(r, e);
	pthread_mutex_unlock(&r->mu);
}

/* The ring took neither a wait's end nor its cancel: closed, which ends
 * every wait in it (queued ones too), and every region polled from now
 * on, as where the kernel has no ring. */
static void ring_fail(procctl_registry_t *r, int err)
{
	struct entry *e;
	procctl_log(PROCCTL_LOG_WARN, "doorbell_ring_failed", "errno=%d (every region polled instead)", -err);
	procctl_bellring_close(&r->ring);
	r->ring_on = 0;
	r->ring_dirty = 0;
	pthread_mutex_lock(&r->mu);
	for (e = r->entries; e; e = e->next)
		e->bell_armed = e->bell_watched = 0;
	pthread_mutex_unlock(&r->mu);
}

static void ring_forget(procctl_registry_t *r, struct entry *e)
{
	int err;
	if (!r->ring_on || !e->bell_armed)
		return;
	/* Now, before its mapping goes: a wait left in the kernel would
	 * never end. Its completion finds e gone, or not armed. */
	if ((err = procctl_bellring_end(&r->ring, &e->c->r.ctrl->doorbell, e->id)) < 0)
		ring_fail(r, err);
	e->bell_armed = 0;
}

/* Completions: each that rang is armed again, the waits submitted, and
 * only then its DOORBELL emitted, so a ring after the event's read is
 * heard. */
void reg_ring_dispatch(procctl_registry_t *r)
{
	struct procctl_bellring_done d[REAP_BATCH];
	uint64_t rang[REAP_BATCH], now = (uint64_t)procctl_now_ns();
	size_t n, i, k = 0;
	struct entry *e;

	n = procctl_bellring_reap(&r->ring, d, REAP_BATCH);
	if (n == REAP_BATCH)
		reg_kick(r); /* the rest at the next dispatch */
	pthread_mutex_lock(&r->mu);
	for (i = 0; i < n; i++) {
		if (!(e = reg_by_id(r, d[i].id)) || !e->bell_armed)
			continue; /* detached meanwhile: its wait was ended */
		e->bell_armed = 0;
		e->bell_watched = 0;
		if (d[i].res == -EAGAIN) {
			mark_bad(r, e);
			rang[k++] = e->id; /* unheard now: one more event says so (it is polled) */
		} else if (d[i].res == 0) {
			if (count_ring(r, e, now) && (!r->mute_due || e->bell_muted_until < r->mute_due))
				r->mute_due = e->bell_muted_until;
			rang[k++] = e->id;
		} else {
			procctl_log_limited(PROCCTL_LOG_WARN, "doorbell_wait_failed", "pid=%d errno=%d (polled instead)",
					    (int)e->c->info.pid, -d[i].res);
		}
	}
	pthread_mutex_unlock(&r->mu);
	for (i = 0; i < k; i++)
		if ((e = reg_by_id(r, rang[i])) && !e->bell_bad && now >= e->bell_muted_until)
			ring_arm(r, e);
	procctl_bellring_submit(&r->ring);
	r->ring_dirty = 0;
	for (i = 0; i < k; i++)
		if ((e = reg_by_id(r, rang[i])))
			reg_emit_entry(r, e, PROCCTL_EV_DOORBELL, 0);
}

/* ---- the watcher threads' set (under mu) ----------------------------------- */

#define SLOT_NONE SIZE_MAX

static void set_add(procctl_registry_t *r, struct entry *e)
{
	if (r->bell_n == r->bell_cap) {
		size_t cap = r->bell_cap ? 2 * r->bell_cap : 256;
		struct entry **set = realloc(r->bell_set, cap * sizeof *set);
		if (!set) {
			procctl_log_limited(PROCCTL_LOG_WARN, "doorbell_unwatched", "pid=%d reason=ENOMEM (polled instead)",
					    (int)e->c->info.pid);
			return;
		}
		r->bell_set = set;
		r->bell_cap = cap;
	}
	e->bell_slot = r->bell_n;
	r->bell_set[r->bell_n++] = e;
	procctl_doorbells_touch(&r->bells, e->bell_slot);
}

/* The last one moves into e's place: both slices change. */
static void set_del(procctl_registry_t *r, struct entry *e)
{
	size_t i = e->bell_slot;
	struct entry *last;
	if (i == SLOT_NONE)
		return;
	e->bell_slot = SLOT_NONE;
	last = r->bell_set[--r->bell_n];
	if (last != e) {
		r->bell_set[i] = last;
		last->bell_slot = i;
		procctl_doorbells_touch(&r->bells, r->bell_n);
	}
	procctl_doorbells_touch(&r->bells, i);
}

/* e's DOORBELL event is due (the loop emits it). */
static void event_mark(procctl_registry_t *r, struct entry *e)
{
	if (e->bell_ev_pprev)
		return;
	if ((e->bell_ev_next = r->bell_events))
		e->bell_ev_next->bell_ev_pprev = &e->bell_ev_next;
	e->bell_ev_pprev = &r->bell_events;
	r->bell_events = e;
}

static void event_unmark(struct entry *e)
{
	if (!e->bell_ev_pprev)
		return;
	if ((*e->bell_ev_pprev = e->bell_ev_next))
		e->bell_ev_next->bell_ev_pprev = e->bell_ev_pprev;
	e->bell_ev_pprev = NULL;
}

/* Heard now: its wait armed in the ring, or in a watcher's slice. */
static int listened(const procctl_registry_t *r, const struct entry *e)
{
	return r->ring_on ? e->bell_watched : e->bell_slot < procctl_doorbells_limit(&r->bells);
}

/* ---- attach, detach, unmute (the loop's thread) ----------------------- */

void reg_bells_attach(procctl_registry_t *r, struct entry *e)
{
	size_t n;
	e->bell_slot = SLOT_NONE;
	if (r->ring_on || !r->bells.started) {
		ring_arm(r, e);
		return;
	}
	pthread_mutex_lock(&r->mu);
	set_add(r, e);
	n = r->bell_n;
	pthread_mutex_unlock(&r->mu);
	procctl_doorbells_grow(&r->bells, n);
}

void reg_bells_detach(procctl_registry_t *r, struct entry *e)
{
	ring_forget(r, e);
	pthread_mutex_lock(&r->mu);
	set_del(r, e);
	event_unmark(e);
	pthread_mutex_unlock(&r->mu);
}

void reg_bells_flush(procctl_registry_t *r)
{
	if (r->ring_dirty) {
		procctl_bellring_submit(&r->ring);
		r->ring_dirty = 0;
	}
	procctl_doorbells_flush(&r->bells);
}

/* The watchers joined; the ring closed, which ends every wait in it at
 * once (a cancel each walks the ring's waits: at 8,000 regions the close
 * took 0.7 s). */
void reg_bells_stop(procctl_registry_t *r)
{
	procctl_doorbells_stop(&r->bells);
	if (r->ring_on) {
		procctl_bellring_close(&r->ring);
		r->ring_on = 0;
	}
}

/* Muted regions whose second is over are heard again (rare: a process
 * that rang 1,000 times a second). */
static void unmute(procctl_registry_t *r, uint64_t now)
{
	uint64_t next = 0;
	size_t n;
	struct entry *e;
	pthread_mutex_lock(&r->mu);
	if (!r->mute_due || now < r->mute_due) {
		pthread_mutex_unlock(&r->mu);
		return;
	}
	for (e = r->entries; e; e = e->next) {
		if (e->bell_bad || !e->bell_muted_until) {
			continue;
		} else if (now < e->bell_muted_until) {
			if (!next || e->bell_muted_until < next)
				next = e->bell_muted_until;
		} else if (r->ring_on) {
			e->bell_muted_until = 0;
			ring_arm_locked(r, e);
		} else {
			e->bell_muted_until = 0;
			set_add(r, e);
		}
	}
	r->mute_due = next;
	n = r->bell_n;
	pthread_mutex_unlock(&r->mu);
	if (r->ring_on)
		procctl_bellring_submit(&r->ring);
	else
		procctl_doorbells_grow(&r->bells, n);
}

/* Slices due a sweep whose watcher waits again get an event for each of
 * their regions; the others are looked at again BELL_SETTLE_NS later. A
 * ring before the wait was queued is heard by the sweep, one after it by
 * the wait; a return after the sweep asks for another (bells_woke). */
static void sweep_slices(procctl_registry_t *r, uint64_t now)
{
	unsigned k;
	pthread_mutex_lock(&r->mu);
	if (!r->sweep_next || now < r->sweep_next) {
		pthread_mutex_unlock(&r->mu);
		return;
	}
	r->sweep_next = 0;
	for (k = 0; k < PROCCTL_WATCHERS_MAX; k++) {
		size_t i = (size_t)k * PROCCTL_BELLS_MAX;
		if (!r->sweep_due[k] || now < r->sweep_due[k]) {
			/* not due */
		} else if (i >= r->bell_n) {
			r->sweep_due[k] = 0; /* an empty slice: nothing to sweep */
		} else if (!procctl_doorbells_waiting(&r->bells, k)) {
			r->sweep_due[k] = now + BELL_SETTLE_NS;
		} else {
			for (; i < r->bell_n && i < (size_t)(k + 1) * PROCCTL_BELLS_MAX; i++) {
				r->bell_set[i]->bell_rang = 1;
				event_mark(r, r->bell_set[i]);
			}
			r->swept_at[k] = now;
			r->sweep_due[k] = 0;
		}
		if (r->sweep_due[k] && (!r->sweep_next || r->sweep_due[k] < r->sweep_next))
			r->sweep_next = r->sweep_due[k];
	}
	pthread_mutex_unlock(&r->mu);
}

void reg_bells_tick(procctl_registry_t *r)
{
	uint64_t now = (uint64_t)procctl_now_ns();
	unmute(r, now);
	sweep_slices(r, now);
	reg_emit_doorbell(r);
}

uint64_t reg_bells_due(procctl_registry_t *r)
{
	uint64_t due;
	pthread_mutex_lock(&r->mu);
	due = r->mute_due;
	if (r->sweep_next && (!due || r->sweep_next < due))
		due = r->sweep_next;
	pthread_mutex_unlock(&r->mu);
	return due;
}

/* ---- watcher threads (theirs, under mu) ---------------------------------- */

static size_t bells_collect(void *arg, struct procctl_bell *out, size_t first, size_t max)
{
	procctl_registry_t *r = arg;
	size_t n = 0;
	for (; first < r->bell_n && n < max; first++, n++) {
		out[n].word = &r->bell_set[first]->c->r.ctrl->doorbell;
		out[n].id = r->bell_set[first]->id;
	}
	return n;
}

/* A ring of the slice before its watcher waits again is not heard: the
 * slice is swept once it waits (sweep_slices), looked at first
 * BELL_SETTLE_NS from now, but not sooner than BELL_SWEEP_NS after its
 * last sweep. */
static void bells_woke(void *arg, size_t first)
{
	procctl_registry_t *r = arg;
	size_t k = first / PROCCTL_BELLS_MAX;
	uint64_t now = (uint64_t)procctl_now_ns(), due;
	if (r->sweep_due[k])
		return;
	due = now + BELL_SETTLE_NS;
	if (r->swept_at[k] && r->swept_at[k] + BELL_SWEEP_NS > due)
		due = r->swept_at[k] + BELL_SWEEP_NS;
	r->sweep_due[k] = due;
	if (!r->sweep_next || due < r->sweep_next) {
		r->sweep_next = due;
		reg_kick(r); /* the loop plans its tick */
	}
}

static void bells_rang(void *arg, uint64_t id)
{
	procctl_registry_t *r = arg;
	struct entry *e = reg_by_id(r, id);
	if (!e)
		return;
	if (count_ring(r, e, (uint64_t)procctl_now_ns())) {
		set_del(r, e); /* back in at the loop's tick after bell_muted_until */
		if (!r->mute_due || e->bell_muted_until < r->mute_due)
			r->mute_due = e->bell_muted_until;
	}
	event_mark(r, e);
	reg_kick(r);
}

static void bells_nonzero(void *arg, uint64_t id)
{
	procctl_registry_t *r = arg;
	struct entry *e = reg_by_id(r, id);
	if (!e || e->bell_bad)
		return;
	mark_bad(r, e);
	event_mark(r, e); /* unheard now: one more event says so (it is polled) */
	reg_kick(r);
}

/* On the loop thread: an event for each entry that rang since the last
 * ones (entries leave only on this thread, so the chain holds still). */
void reg_emit_doorbell(procctl_registry_t *r)
{
	struct entry *e, *chain = NULL;
	pthread_mutex_lock(&r->mu);
	while ((e = r->bell_events)) {
		event_unmark(e);
		e->bell_emit_next = chain;
		chain = e;
	}
	pthread_mutex_unlock(&r->mu);
	for (e = chain; e; e = e->bell_emit_next)
		reg_emit_entry(r, e, PROCCTL_EV_DOORBELL, 0);
}

int procctl_registry_doorbell_rang(procctl_registry_t *r, const procctl_client_t *c)
{
	struct entry *e;
	int rang = -ENOTSUP;
	pthread_mutex_lock(&r->mu);
	e = reg_by_client(r, c);
	if (e && listened(r, e)) {
		rang = e->bell_rang;
		e->bell_rang = 0;
	}
	pthread_mutex_unlock(&r->mu);
	return rang;
}

int procctl_registry_doorbell_heard(procctl_registry_t *r, const procctl_client_t *c)
{
	struct entry *e;
	int heard = -ENOTSUP;
	if (!(r->o.flags & PROCCTL_REGISTRY_DOORBELLS))
		return heard;
	pthread_mutex_lock(&r->mu);
	e = reg_by_client(r, c);
	if (e)
		heard = listened(r, e) && !e->bell_bad && (uint64_t)procctl_now_ns() >= e->bell_muted_until;
	pthread_mutex_unlock(&r->mu);
	return heard;
}
