/* SPDX-License-Identifier: Apache-2.0 */
/* registry_threads.c - what a registry's own threads do: the heartbeat
 * thread (every owned region's heartbeat at a quarter of its lease) and
 * the doorbell watchers' callbacks (which regions to watch, which rang). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "registry_int.h"

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
void *reg_hb_main(void *arg)
{
	procctl_registry_t *r = arg;
	uint64_t last_beat = 0, last_lease = 0;
	pthread_setname_np(pthread_self(), "procctl-beat");
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
	uint64_t now = (uint64_t)procctl_now_ns();
	if (!e)
		return;
	if (now - e->bell_window >= BELL_WINDOW_NS) {
		e->bell_window = now;
		e->bell_count = 0;
	}
	if (++e->bell_count > BELL_LIMIT) {
		e->bell_muted_until = e->bell_window + BELL_WINDOW_NS;
		procctl_doorbells_bump(&r->bells); /* every slice after it moves */
		r->stats.doorbells_muted++;
		procctl_log_limited(PROCCTL_LOG_WARN, "doorbell_muted", "pid=%d rings=%u (for the rest of the second)",
			    (int)e->c->info.pid, e->bell_count);
	}
	r->stats.doorbells++;
	e->bell_rang = 1;
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
	e->bell_bad = 1;
	procctl_doorbells_bump(&r->bells); /* every slice after it moves */
	e->bell_event = 1; /* unheard now: one more event says so (it is polled) */
	r->bell_pending = 1;
	reg_kick(r);
	r->stats.doorbells_bad++;
	procctl_log_limited(PROCCTL_LOG_WARN, "doorbell_written", "pid=%d (never listened to again)", (int)e->c->info.pid);
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

