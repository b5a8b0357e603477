/* SPDX-License-Identifier: Apache-2.0 */
/* registry_bells.c - a registry's ack doorbells (SPEC.md 6.5): a futex
 * wait per attached region in one io_uring (bellring.h), armed at attach,
 * cancelled at detach, re-armed when it rings, its completions read by
 * the loop, which emits PROCCTL_EV_DOORBELL for them at once; or, on a
 * kernel without io_uring futex waits (before 6.7), watcher threads in
 * futex_waitv (doorbell.h), 127 words each and PROCCTL_WATCHERS_MAX of
 * them, which collect the whole set again whenever it changes. Either
 * way a process that rings more than BELL_LIMIT times a second is muted
 * for the rest of it, and one that writes its doorbell word is never
 * heard again. The public questions about a client's doorbell
 * (procctl_registry_doorbell_rang, _heard) are here too. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
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

/* Under mu: e's word was written by its process. */
static void mark_bad(procctl_registry_t *r, struct entry *e)
{
	e->bell_bad = 1;
	e->bell_watched = 0;
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

int reg_bells_start(procctl_registry_t *r)
{
	int err = (r->o.flags & PROCCTL_REGISTRY_BELL_THREADS) ? -ECANCELED : ring_start(r);
	if (!err)
		return 0;
	procctl_log(PROCCTL_LOG_INFO, "doorbells", "mode=threads reason=\"%s: %s\" watchers_max=%d words_each=%d",
		    err == -ECANCELED ? "asked for" : "no io_uring futex waits (Linux 6.7+)", strerror(-err),
		    PROCCTL_WATCHERS_MAX, PROCCTL_BELLS_MAX);
	r->bells.mu = &r->mu;
	r->bells.collect = reg_bells_collect;
	r->bells.rang = reg_bells_rang;
	r->bells.nonzero = reg_bells_nonzero;
	r->bells.arg = r;
	return procctl_doorbells_start(&r->bells);
}

void reg_ring_arm(procctl_registry_t *r, struct entry *e)
{
	int ok;
	if (!r->ring_on || e->bell_armed || e->bell_bad)
		return;
	ok = procctl_bellring_arm(&r->ring, &e->c->r.ctrl->doorbell, e->id) == 0;
	pthread_mutex_lock(&r->mu);
	e->bell_armed = ok;
	e->bell_watched = ok;
	pthread_mutex_unlock(&r->mu);
	r->ring_dirty = 1;
}

void reg_ring_forget(procctl_registry_t *r, struct entry *e)
{
	if (!r->ring_on || !e->bell_armed)
		return;
	/* Now, before its mapping goes: a wait left in the kernel would
	 * never end. */
	procctl_bellring_cancel(&r->ring, e->id);
	procctl_bellring_submit(&r->ring);
	e->bell_armed = 0;
}

/* Muted regions whose second is over are armed again. */
void reg_ring_unmute(procctl_registry_t *r)
{
	uint64_t now = (uint64_t)procctl_now_ns(), next = 0;
	struct entry *e;
	if (!r->mute_due || now < r->mute_due)
		return;
	for (e = r->entries; e; e = e->next) /* rare: a process that rang 1,000 times a second */
		if (!e->bell_armed && !e->bell_bad && e->bell_muted_until) {
			if (now >= e->bell_muted_until)
				reg_ring_arm(r, e);
			else if (!next || e->bell_muted_until < next)
				next = e->bell_muted_until;
		}
	r->mute_due = next;
	procctl_bellring_submit(&r->ring);
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
			continue; /* detached meanwhile: its wait was cancelled */
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
			reg_ring_arm(r, e);
	procctl_bellring_submit(&r->ring);
	r->ring_dirty = 0;
	for (i = 0; i < k; i++)
		if ((e = reg_by_id(r, rang[i])))
			reg_emit_entry(r, e, PROCCTL_EV_DOORBELL, 0);
}

/* ---- watcher threads (theirs, under mu) ---------------------------------- */

size_t reg_bells_collect(void *arg, struct procctl_bell *out, size_t first, size_t max, size_t limit, uint64_t *again)
{
	procctl_registry_t *r = arg;
	uint64_t now = (uint64_t)procctl_now_ns();
	struct entry *e;
	size_t k = 0, n = 0; /* k: the words to watch so far */
	*again = 0;
	for (e = r->entries; e; e = e->next) {
		if (e->bell_bad || now < e->bell_muted_until) {
			e->bell_watched = 0;
			if (!e->bell_bad && (!*again || e->bell_muted_until < *again))
				*again = e->bell_muted_until; /* every watcher looks again then: the slices move */
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

void reg_bells_rang(void *arg, uint64_t id)
{
	procctl_registry_t *r = arg;
	struct entry *e = reg_by_id(r, id);
	if (!e)
		return;
	if (count_ring(r, e, (uint64_t)procctl_now_ns()))
		procctl_doorbells_bump(&r->bells); /* every slice after it moves */
	e->bell_event = 1;
	r->bell_pending = 1;
	reg_kick(r);
}

void reg_bells_nonzero(void *arg, uint64_t id)
{
	procctl_registry_t *r = arg;
	struct entry *e = reg_by_id(r, id);
	if (!e || e->bell_bad)
		return;
	mark_bad(r, e);
	procctl_doorbells_bump(&r->bells); /* every slice after it moves */
	e->bell_event = 1; /* unheard now: one more event says so (it is polled) */
	r->bell_pending = 1;
	reg_kick(r);
}

/* On the loop thread: an event for each entry that rang since the last
 * ones (entries leave only on this thread, so the list holds still). */
void reg_emit_doorbell(procctl_registry_t *r)
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
			reg_emit_entry(r, e, PROCCTL_EV_DOORBELL, 0);
		}
}

int procctl_registry_doorbell_rang(procctl_registry_t *r, const procctl_client_t *c)
{
	struct entry *e;
	int rang = -ENOTSUP;
	pthread_mutex_lock(&r->mu);
	e = reg_by_client(r, c);
	if (e && e->bell_watched) {
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
		heard = e->bell_watched && !e->bell_bad && (uint64_t)procctl_now_ns() >= e->bell_muted_until;
	pthread_mutex_unlock(&r->mu);
	return heard;
}
