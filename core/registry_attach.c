/* SPDX-License-Identifier: Apache-2.0 */
/* registry_attach.c - a region a scan found: the limits it must fit, its
 * attach, the entry and watches it gets, or the refusal it earns (counted,
 * remembered, logged); regions found mid-init probed again. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "client.h"
#include "log.h"
#include "registry_int.h"
#include "scan.h"

/* A region without its seals yet: its process may be inside procctl_init,
 * so it is probed again on each tick for a while (no notify need come). */
static void retry_unsealed(procctl_registry_t *r, const struct procctl_scan_entry *s)
{
	unsigned i, free_slot = UNSEALED_MAX;
	for (i = 0; i < UNSEALED_MAX; i++) {
		if (r->unsealed[i].ticks && r->unsealed[i].pid == s->pid && r->unsealed[i].fd == s->fd)
			return; /* already counting down: a region that never seals stops */
		if (!r->unsealed[i].ticks && free_slot == UNSEALED_MAX)
			free_slot = i;
	}
	if (free_slot < UNSEALED_MAX) {
		r->unsealed[free_slot].pid = s->pid;
		r->unsealed[free_slot].fd = s->fd;
		r->unsealed[free_slot].ticks = UNSEALED_TICKS;
		r->unsealed[free_slot].dev = s->dev;
		r->unsealed[free_slot].ino = s->ino;
		snprintf(r->unsealed[free_slot].consumer, sizeof r->unsealed[free_slot].consumer, "%s", s->consumer);
	}
}

/* The cap a region of pid would pass: PROCCTL_REJECT_LIMIT (its
 * process's), PROCCTL_REJECT_REGION_LIMIT (all), or 0. */
static enum procctl_reject over_limit(procctl_registry_t *r, pid_t pid)
{
	struct entry *e = NULL;
	uint32_t mine = 0;
	while ((e = reg_by_pid(r, pid, e)))
		mine++;
	if (mine >= r->o.max_per_process)
		return PROCCTL_REJECT_LIMIT;
	return r->stats.clients >= r->o.max_regions ? PROCCTL_REJECT_REGION_LIMIT : 0; /* the loop writes it */
}

static void count_reject(procctl_registry_t *r, enum procctl_reject why)
{
	pthread_mutex_lock(&r->mu);
	r->stats.rejects[why]++;
	pthread_mutex_unlock(&r->mu);
}

/* A region procctl_client_attach refused (err, its errno, and why say how):
 * counted, remembered or probed again, and logged. */
static void attach_refused(procctl_registry_t *r, const struct procctl_scan_entry *s, enum procctl_reject why, int err)
{
	if (err == EPROTO) {
		/* Unsealed may be a process inside procctl_init (the name
		 * exists before the seals): probed again soon, and quiet.
		 * The rest is remembered, logged once, counted each time. */
		int final = why != PROCCTL_REJECT_UNSEALED;
		if (!final)
			retry_unsealed(r, s);
		else
			reg_rejected_add(r, s->pid, s->dev, s->ino);
		if (!r->reprobing || final) /* a verdict a probe reached counts */
			count_reject(r, why);
		if (final) /* a peer can make as many as it likes */
			procctl_log_limited(PROCCTL_LOG_WARN, "attach_rejected", "pid=%d fd=%d consumer=%s reason=%s",
					    (int)s->pid, s->fd, s->consumer, procctl_reject_name(why));
		else
			procctl_log(PROCCTL_LOG_DEBUG, "attach_rejected", "pid=%d fd=%d consumer=%s reason=%s",
				    (int)s->pid, s->fd, s->consumer, procctl_reject_name(why));
	} else if (err == EPERM || err == EACCES) {
		pthread_mutex_lock(&r->mu);
		r->stats.attach_denied++;
		pthread_mutex_unlock(&r->mu);
		procctl_log_limited(PROCCTL_LOG_WARN, "attach_denied", "pid=%d fd=%d error=\"%s\" reason=\"no "
				    "ptrace access to it: CAP_SYS_PTRACE, or an LSM (AppArmor) forbids it\"",
				    (int)s->pid, s->fd, strerror(err));
	} else if (err == EMFILE || err == ENFILE || err == ENOMEM || err == ENOSPC) { /* ours, not the region's */
		procctl_log_limited(PROCCTL_LOG_WARN, "attach_failed", "pid=%d fd=%d errno=%d error=\"%s\"",
				    (int)s->pid, s->fd, err, strerror(err));
	} else {
		procctl_log(PROCCTL_LOG_DEBUG, "attach_failed", "pid=%d fd=%d errno=%d", (int)s->pid, s->fd, err);
	}
}

/* 1 when the region s is passed over before an attach: attached already,
 * refused before, or past a limit (counted, logged). */
static int found_skipped(procctl_registry_t *r, const struct procctl_scan_entry *s)
{
	enum procctl_reject why;
	struct entry *e;

	if ((e = reg_by_region(r, s->dev, s->ino))) {
		/* Attached already, through its creator: another process's
		 * link to it (a forked child that kept the fd, an agent that
		 * keeps the fds it fetched) is skipped unfetched (SPEC.md 2.4). */
		if (e->c->info.pid != s->pid) {
			pthread_mutex_lock(&r->mu);
			r->stats.held_elsewhere++;
			pthread_mutex_unlock(&r->mu);
		}
		return 1;
	}
	if (reg_rejected_was(r, s->pid, s->dev, s->ino))
		return 1;
	if (!reg_lock_find(r, s->consumer) && r->nlocks >= r->o.max_consumers) {
		count_reject(r, PROCCTL_REJECT_CONSUMER_LIMIT);
		procctl_log_limited(PROCCTL_LOG_WARN, "attach_rejected", "pid=%d fd=%d consumer=%s reason=%s max_consumers=%u",
				    (int)s->pid, s->fd, s->consumer, procctl_reject_name(PROCCTL_REJECT_CONSUMER_LIMIT),
				    r->o.max_consumers);
		return 1;
	}
	if ((why = over_limit(r, s->pid))) {
		count_reject(r, why);
		r->scan_over_cap += r->in_full_step; /* the full scan's count: a gauge, warned once */
		procctl_log(PROCCTL_LOG_DEBUG, "attach_rejected", "pid=%d fd=%d consumer=%s reason=%s", (int)s->pid,
			    s->fd, s->consumer, procctl_reject_name(why));
		return 1;
	}
	return 0;
}

/* The entry for c, attached (sibling: the client whose remote it shares,
 * or NULL), with its consumer's lock record and its pidfd watched; not
 * linked yet. NULL when there is none: c closed, a watch refused counted
 * and logged. */
static struct entry *entry_new(procctl_registry_t *r, const struct procctl_scan_entry *s, procctl_client_t *c,
			       const procctl_client_t *sibling)
{
	struct epoll_event ee;
	struct entry *e;

	e = calloc(1, sizeof *e);
	if (!e || !(e->lk = reg_lock_for(r, s->consumer))) {
		free(e);
		procctl_client_close(c);
		return NULL;
	}
	e->c = c;
	e->id = TAG_FIRST_ID + r->next_id++;
	memset(&ee, 0, sizeof ee);
	ee.events = EPOLLIN;
	ee.data.u64 = e->id;
	/* A sibling's pidfd is watched already; without a watch no exit would be heard. */
	if (!(sibling && procctl_client_pidfd(sibling) == procctl_client_pidfd(c)) &&
	    epoll_ctl(r->epfd, EPOLL_CTL_ADD, procctl_client_pidfd(c), &ee) < 0) {
		struct lock_rec *l = e->lk;
		int err = errno;
		free(e);
		procctl_client_close(c);
		reg_lock_put(r, l); /* a consumer new with it goes again */
		attach_refused(r, s, PROCCTL_REJECT_NONE, err); /* found again at the next scan */
		return NULL;
	}
	return e;
}

/* e into the registry's entries, its consumer's and the index, counted. */
static void entry_link(procctl_registry_t *r, struct entry *e)
{
	pthread_mutex_lock(&r->mu);
	if ((e->next = r->entries))
		e->next->pprev = &e->next;
	e->pprev = &r->entries;
	r->entries = e;
	if ((e->lk_next = e->lk->ents))
		e->lk_next->lk_pprev = &e->lk_next;
	e->lk_pprev = &e->lk->ents;
	e->lk->ents = e;
	reg_index_add(r, e);
	e->lk->nentries++;
	r->stats.attached++;
	r->stats.clients++;
	if ((e->c->info.hdr.flags & PROCCTL_HDR_EVENT_FD) && !e->c->info.event_socket)
		r->stats.event_fd_refused++;
	pthread_mutex_unlock(&r->mu);
}

int reg_on_found(const struct procctl_scan_entry *s, void *arg)
{
	procctl_registry_t *r = arg;
	struct procctl_attach_opts ao = {sizeof ao, r->proc_root, 0, NULL};
	enum procctl_reject why;
	procctl_client_t *c;
	struct entry *e;

	if (found_skipped(r, s))
		return 0;
	pthread_mutex_lock(&r->mu);
	r->stats.attach_attempts += !r->reprobing; /* a probe of a region mid-init is not a new attempt */
	pthread_mutex_unlock(&r->mu);
	if ((e = reg_by_pid(r, s->pid, NULL)))
		ao.sibling = e->c; /* one pidfd and mem fd a process */
	c = procctl_client_attach(s, &ao, &why);
	if (!c) {
		attach_refused(r, s, why, errno);
		return 0;
	}
	if (!(e = entry_new(r, s, c, ao.sibling)))
		return 0;
	entry_link(r, e);
	reg_bells_attach(r, e);
	if (e->lk->held)
		reg_claim(r, e);
	procctl_log(PROCCTL_LOG_INFO, "attached", "pid=%d consumer=%s instance=%016llx owned=%d", (int)s->pid,
		    s->consumer, (unsigned long long)c->info.hdr.instance_id, (procctl_client_ownership(c) == PROCCTL_OWN_OWNED));
	reg_emit_entry(r, e, PROCCTL_EV_ATTACHED, 0);
	return 0;
}

void reg_probe_unsealed(procctl_registry_t *r)
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
			reg_rejected_add(r, pid, r->unsealed[i].dev, r->unsealed[i].ino);
			procctl_log_limited(PROCCTL_LOG_WARN, "attach_rejected", "pid=%d consumer=%s reason=unsealed probed_ms=%d",
				    (int)pid, r->unsealed[i].consumer, (int)(UNSEALED_TICKS * TICK_NS / 1000000));
			continue;
		}
		r->reprobing = 1;
		scan_fd(r->proc_root, pid, r->unsealed[i].fd, r->consumer[0] ? r->consumer : NULL, reg_on_found, r);
		r->reprobing = 0;
		e = r->unsealed[i].ino ? reg_by_region(r, r->unsealed[i].dev, r->unsealed[i].ino) : reg_by_pid(r, pid, NULL);
		if (e || reg_rejected_was(r, pid, r->unsealed[i].dev, r->unsealed[i].ino))
			r->unsealed[i].ticks = 0; /* sealed now: attached, or refused for good */
	}
}
