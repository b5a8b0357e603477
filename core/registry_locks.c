/* SPDX-License-Identifier: Apache-2.0 */
/* registry_locks.c - a registry's node locks (SPEC.md 8.1): one record
 * per consumer with regions attached (or named up front), taken without
 * waiting, looked at again when the lock directory changes (inotify: a
 * holder's close, a file removed or replaced) and each second while not
 * taken, removed when its last region goes; the
 * claims a held lock allows, and the ownership events; and the public
 * questions about them (procctl_registry_owner, _ready). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "lock.h"
#include "log.h"
#include "registry_int.h"

struct lock_rec *reg_lock_find(const procctl_registry_t *r, const char *consumer)
{
	struct lock_rec *l;
	for (l = r->locks; l; l = l->next)
		if (!strcmp(l->consumer, consumer))
			return l;
	return NULL;
}

void reg_claim(procctl_registry_t *r, struct entry *e)
{
	int64_t g = procctl_client_claim(e->c, r->domain, e->lk->epoch, r->o.lease_ns);
	if (g > 0)
		reg_hb_claimed(r, e);
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

/* l, held, is ready: the full scan begun after it was taken finished. */
void reg_emit_ready(procctl_registry_t *r, struct lock_rec *l)
{
	struct procctl_event ev;
	procctl_log(PROCCTL_LOG_INFO, "ready", "consumer=%s epoch=%u", l->consumer, l->epoch);
	memset(&ev, 0, sizeof ev);
	ev.type = PROCCTL_EV_READY;
	ev.consumer = l->consumer;
	ev.held = 1;
	reg_emit(r, &ev);
}

void reg_emit_ownership(procctl_registry_t *r, struct lock_rec *l)
{
	struct procctl_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = PROCCTL_EV_OWNERSHIP;
	ev.consumer = l->consumer;
	ev.held = l->held;
	reg_emit(r, &ev);
}

/* Try to take l's lock; on success claim every region of its consumer and
 * ask for the full scan that makes it ready. */
void reg_lock_try(procctl_registry_t *r, struct lock_rec *l)
{
	struct entry *e;
	int err;

	int tries = 2;

	if (l->held || (r->o.flags & PROCCTL_REGISTRY_PASSIVE))
		return;
again:
	if (l->fd < 0 && (l->fd = procctl_lock_open(r->lock_dirfd, l->consumer)) < 0)
		return; /* not yet: the next retry tries again */
	if (!r->have_domain) {
		err = procctl_lock_domain(r->lock_dirfd, &r->domain);
		if (err) { /* said once; retried */
			if (!r->domain_logged++)
				procctl_log(PROCCTL_LOG_ERROR, "lock_domain_failed", "dir=%s errno=%d (retrying)",
					    r->lock_dir, -err);
			return;
		}
		r->have_domain = 1;
	}
	err = procctl_lock_take(l->fd, r->lock_dirfd, l->consumer, &l->epoch);
	if (err == -ESTALE) { /* the file was replaced (or removed by its last holder): reopen */
		close(l->fd);
		l->fd = -1;
		if (--tries)
			goto again;
	}
	if (err)
		return;
	l->held = 1;
	/* Ready after a full scan that begins after now (SPEC.md 9.2). */
	l->ready_scan = r->scans_started + 1;
	procctl_log(PROCCTL_LOG_INFO, "lock_taken", "consumer=%s epoch=%u domain=%u", l->consumer, l->epoch, r->domain);
	for (e = r->entries; e; e = e->next)
		if (e->lk == l)
			reg_claim(r, e);
	reg_emit_ownership(r, l); /* ready once a full scan begun now ends: procctl_registry_ready asks for it */
}

int reg_lock_watch(int dirfd)
{
	char self[64];
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), err;
	if (fd < 0)
		return -1;
	snprintf(self, sizeof self, "/proc/self/fd/%d", dirfd);
	if (inotify_add_watch(fd, self, IN_CLOSE_WRITE | IN_DELETE | IN_CREATE | IN_MOVED_FROM | IN_MOVED_TO |
						IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* Our lock file is no longer the one at the path (deleted or replaced):
 * another agent can lock the new one, so this one stops writing. */
void reg_lock_check(procctl_registry_t *r, struct lock_rec *l)
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
	reg_emit_ownership(r, l);
}

struct lock_rec *reg_lock_for(procctl_registry_t *r, const char *consumer)
{
	struct lock_rec *l = reg_lock_find(r, consumer);
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
	reg_lock_try(r, l);
	return l;
}

/* l's consumer has no region attached any more: its lock goes (a
 * consumer named up front keeps it), so names a process made up cost
 * nothing once it is gone. The file is removed while still locked. */
void reg_lock_put(procctl_registry_t *r, struct lock_rec *l)
{
	struct lock_rec **pp;
	if (r->consumer[0] || r->closing || l->nentries)
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
		reg_emit_ownership(r, l);
	}
	free(l);
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
	const struct lock_rec *l = reg_lock_find(r, consumer);
	if (!l || !l->held)
		return 0;
	if (r->scans_done >= l->ready_scan)
		return 1;
	if (r->scans_started < l->ready_scan) { /* none begun since the lock: ask for one */
		pthread_mutex_lock(&r->mu);
		r->notify_all = 1;
		pthread_mutex_unlock(&r->mu);
		reg_kick(r);
	}
	return 0;
}
