/* SPDX-License-Identifier: Apache-2.0 */
/* registry_threads.c - a registry's heartbeat thread: every owned
 * region's heartbeat at a quarter of its lease. */
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

/* Beat every owned region (under mu); the period the shortest lease they
 * apply wants, or every (a quarter of ours) when none is shorter. */
static uint64_t beat_all(procctl_registry_t *r, uint64_t every, int *beat)
{
	struct entry *e;
	*beat = 0;
	for (e = r->entries; e; e = e->next)
		if ((procctl_client_ownership(e->c) == PROCCTL_OWN_OWNED)) {
			uint64_t l = clamped_lease(r, e->c) / 4;
			procctl_client_heartbeat(e->c);
			r->stats.heartbeats++;
			*beat = 1;
			if (l < every)
				every = l;
		}
	return every;
}

/* Only stores to mapped memory, under locks held for stores only: no
 * remote read, no syscall on a fetched fd ever delays it (SPEC.md 8.3).
 * Every owned region is beaten at a quarter of the shortest lease any of
 * them applies (beating more often than needed is harmless). A claim
 * beats its region itself: it wakes this thread only to shorten the
 * period, and a wake before the next beat is due beats nothing (so an
 * attach storm of N regions is not N beats of all of them). */
void *reg_hb_main(void *arg)
{
	procctl_registry_t *r = arg;
	uint64_t last_lease = 0, beat_at = 0, due = 0;
	pthread_setname_np(pthread_self(), "procctl-beat");
	pthread_mutex_lock(&r->mu);
	while (!r->hb_stop) {
		struct timespec ts;
		uint64_t now = (uint64_t)procctl_now_ns();
		int beat;
		if (now >= due) {
			r->hb_every_ns = beat_all(r, r->o.lease_ns / 4, &beat);
			now = (uint64_t)procctl_now_ns();
			/* A beat more than a lease after the one before: the
			 * processes may have seen their lease expire (this agent
			 * was stopped or starved). */
			if (beat && r->hb_last_ns && now - r->hb_last_ns > last_lease)
				r->stats.lease_lapses++;
			r->hb_last_ns = beat ? now : 0;
			last_lease = r->hb_every_ns * 4;
			beat_at = now;
			due = now + r->hb_every_ns;
		} else if (beat_at + r->hb_every_ns < due) {
			due = beat_at + r->hb_every_ns; /* a claim shortened the period */
		}
		ts.tv_sec = (time_t)(due / 1000000000ull);
		ts.tv_nsec = (long)(due % 1000000000ull);
		pthread_cond_timedwait(&r->hb_cv, &r->mu, &ts);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

void reg_hb_claimed(procctl_registry_t *r, const struct entry *e)
{
	uint64_t l = clamped_lease(r, e->c) / 4;
	pthread_mutex_lock(&r->mu);
	if (!r->hb_last_ns) /* the first owned: its claim is the beat the next is measured from */
		r->hb_last_ns = (uint64_t)procctl_now_ns();
	if (!r->hb_every_ns || l < r->hb_every_ns) {
		r->hb_every_ns = l;
		pthread_cond_signal(&r->hb_cv);
	}
	pthread_mutex_unlock(&r->mu);
}
