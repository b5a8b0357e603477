/* SPDX-License-Identifier: Apache-2.0 */
/* events.c - the event history (events.h). */
#include "events.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>


struct ev_slot {
	uint64_t seq; /* 0: never used */
	struct selector key;
	void *bytes;
	size_t len;
};

struct events {
	pthread_mutex_t mu;
	uint64_t last; /* sequence number of the newest event */
	size_t bytes;  /* atomic: the slots written (the rest of the array never touched) and their events' allocations */
	size_t cap;
	struct ev_slot slot[]; /* event seq lives in slot[seq % cap] */
};

struct events *events_new(size_t cap)
{
	struct events *ev;
	if (!cap) {
		errno = EINVAL;
		return NULL;
	}
	ev = calloc(1, sizeof *ev + cap * sizeof ev->slot[0]);
	if (!ev)
		return NULL;
	pthread_mutex_init(&ev->mu, NULL);
	ev->cap = cap;
	return ev;
}

void events_free(struct events *ev)
{
	size_t i;
	if (!ev)
		return;
	for (i = 0; i < ev->cap; i++)
		free(ev->slot[i].bytes);
	pthread_mutex_destroy(&ev->mu);
	free(ev);
}

uint64_t events_last(struct events *ev)
{
	uint64_t last;
	pthread_mutex_lock(&ev->mu);
	last = ev->last;
	pthread_mutex_unlock(&ev->mu);
	return last;
}

int64_t events_append(struct events *ev, const struct selector *k, const void *bytes, size_t len)
{
	struct ev_slot *s;
	void *copy = malloc(len ? len : 1);
	void *old;
	int64_t seq;
	if (!copy)
		return -ENOMEM;
	memcpy(copy, bytes, len);
	pthread_mutex_lock(&ev->mu);
	seq = (int64_t)++ev->last;
	s = &ev->slot[(uint64_t)seq % ev->cap];
	old = s->bytes;
	__atomic_store_n(&ev->bytes, ev->bytes + (s->seq ? 0 : sizeof *s) + malloc_usable_size(copy) - malloc_usable_size(old),
			 __ATOMIC_RELAXED); /* written under mu, read by events_bytes without it */
	s->seq = (uint64_t)seq;
	s->key = *k;
	s->bytes = copy;
	s->len = len;
	pthread_mutex_unlock(&ev->mu);
	free(old);
	return seq;
}

size_t events_bytes(struct events *ev)
{
	return __atomic_load_n(&ev->bytes, __ATOMIC_RELAXED); /* a gauge: no lock */
}

/* The oldest sequence number kept (last + 1 when none is): under mu. */
static uint64_t oldest(const struct events *ev)
{
	return ev->last >= ev->cap ? ev->last - ev->cap + 1 : 1;
}

int events_resumable(struct events *ev, uint64_t seq)
{
	int ok;
	pthread_mutex_lock(&ev->mu);
	ok = seq <= ev->last && seq + 1 >= oldest(ev);
	pthread_mutex_unlock(&ev->mu);
	return ok;
}

int events_next(struct events *ev, uint64_t *cursor, const struct selector *filter, void **out, size_t *len)
{
	int r = 0;
	pthread_mutex_lock(&ev->mu);
	if (*cursor + 1 < oldest(ev)) {
		r = -ERANGE;
		goto out;
	}
	while (*cursor < ev->last) {
		const struct ev_slot *s = &ev->slot[(*cursor + 1) % ev->cap];
		++*cursor;
		if (!selector_match(filter, &s->key))
			continue;
		*out = malloc(s->len ? s->len : 1);
		if (!*out) {
			--*cursor;
			r = -ENOMEM;
			goto out;
		}
		memcpy(*out, s->bytes, s->len);
		*len = s->len;
		r = 1;
		break;
	}
out:
	pthread_mutex_unlock(&ev->mu);
	return r;
}
