/* SPDX-License-Identifier: Apache-2.0 */
/* registry_index.c - a registry's entries found by id (epoll tags,
 * doorbells), by pid (caps, notifies, exec events) and by region (a scan's
 * link to a region attached already) without walking them: three chained
 * hash tables of REG_BUCKETS, changed under mu on the
 * loop's thread only, so the loop reads them without mu; the regions
 * refused for good, which scans skip; and the public lookups (every
 * client, a consumer's, a pid's). */
#include "registry_int.h"

static unsigned hash(uint64_t v)
{
	v *= 0x9e3779b97f4a7c15ull; /* Fibonacci hashing: the top bits */
	return (unsigned)(v >> (64 - REG_BUCKET_BITS));
}

static unsigned region_hash(dev_t dev, ino_t ino)
{
	return hash((uint64_t)ino ^ ((uint64_t)dev << 40));
}

void reg_index_add(procctl_registry_t *r, struct entry *e)
{
	struct entry **id = &r->by_id[hash(e->id)], **pid = &r->by_pid[hash((uint64_t)e->c->info.pid)];
	struct entry **rg = &r->by_region[region_hash(e->c->info.dev, e->c->info.ino)];
	e->id_next = *id;
	*id = e;
	e->pid_next = *pid;
	*pid = e;
	e->region_next = *rg;
	*rg = e;
}

void reg_index_del(procctl_registry_t *r, struct entry *e)
{
	struct entry **pp;
	for (pp = &r->by_id[hash(e->id)]; *pp; pp = &(*pp)->id_next)
		if (*pp == e) {
			*pp = e->id_next;
			break;
		}
	for (pp = &r->by_pid[hash((uint64_t)e->c->info.pid)]; *pp; pp = &(*pp)->pid_next)
		if (*pp == e) {
			*pp = e->pid_next;
			break;
		}
	for (pp = &r->by_region[region_hash(e->c->info.dev, e->c->info.ino)]; *pp; pp = &(*pp)->region_next)
		if (*pp == e) {
			*pp = e->region_next;
			break;
		}
}

struct entry *reg_by_id(const procctl_registry_t *r, uint64_t id)
{
	struct entry *e;
	for (e = r->by_id[hash(id)]; e && e->id != id; e = e->id_next)
		;
	return e;
}

struct entry *reg_by_client(const procctl_registry_t *r, const procctl_client_t *c)
{
	struct entry *e = NULL;
	while ((e = reg_by_pid(r, c->info.pid, e)) && e->c != c)
		;
	return e;
}

struct entry *reg_by_region(const procctl_registry_t *r, dev_t dev, ino_t ino)
{
	struct entry *e;
	for (e = r->by_region[region_hash(dev, ino)]; e && (e->c->info.ino != ino || e->c->info.dev != dev);
	     e = e->region_next)
		;
	return e;
}

struct entry *reg_by_pid(const procctl_registry_t *r, pid_t pid, struct entry *after)
{
	struct entry *e = after ? after->pid_next : r->by_pid[hash((uint64_t)pid)];
	for (; e && e->c->info.pid != pid; e = e->pid_next)
		;
	return e;
}

struct entry *reg_sibling(const procctl_registry_t *r, const struct entry *e)
{
	struct entry *s = NULL;
	while ((s = reg_by_pid(r, e->c->info.pid, s)))
		if (s != e && procctl_client_pidfd(s->c) == procctl_client_pidfd(e->c))
			return s;
	return NULL;
}

/* ---- regions refused, not looked at again -------------------------------- */

int reg_rejected_was(const procctl_registry_t *r, pid_t pid, dev_t dev, ino_t ino)
{
	unsigned i;
	for (i = 0; i < r->nrejected && i < REJECTED_MAX; i++)
		if (r->rejected[i].pid == pid && r->rejected[i].dev == dev && r->rejected[i].ino == ino)
			return 1;
	return 0;
}

void reg_rejected_forget(procctl_registry_t *r, pid_t pid)
{
	unsigned i;
	for (i = 0; i < r->nrejected && i < REJECTED_MAX; i++)
		if (r->rejected[i].pid == pid)
			r->rejected[i].pid = 0;
}

void reg_rejected_add(procctl_registry_t *r, pid_t pid, dev_t dev, ino_t ino)
{
	struct rejected *rj = &r->rejected[r->nrejected++ % REJECTED_MAX];
	rj->pid = pid;
	rj->dev = dev;
	rj->ino = ino;
}

/* ---- the public lookups ---------------------------------------------- */

size_t procctl_registry_clients(const procctl_registry_t *r, procctl_client_t **out, size_t max)
{
	const struct entry *e;
	size_t n = 0;
	for (e = r->entries; e; e = e->next, n++)
		if (n < max)
			out[n] = e->c;
	return n;
}

size_t procctl_registry_clients_of(const procctl_registry_t *r, const char *consumer, procctl_client_t **out,
				   size_t max)
{
	const struct lock_rec *l = reg_lock_find(r, consumer);
	const struct entry *e;
	size_t n = 0;
	for (e = l ? l->ents : NULL; e; e = e->lk_next, n++)
		if (n < max)
			out[n] = e->c;
	return n;
}

procctl_client_t *procctl_registry_find(const procctl_registry_t *r, pid_t pid)
{
	const struct entry *e = reg_by_pid(r, pid, NULL);
	return e ? e->c : NULL;
}
