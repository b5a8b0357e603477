/* SPDX-License-Identifier: Apache-2.0 */
/* events.c - the event history (events.h). */
#include "events.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>


struct ev_slot {
	uint64_t seq; /* 0: never used */
	struct ev_key key;
	void *bytes;
	size_t len;
};

struct events {
	pthread_mutex_t mu;
	uint64_t last; /* sequence number of the newest event */
	size_t cap;
	struct ev_slot slot[]; /* event seq lives in slot[seq % cap] */
};

int ev_key_match(const struct ev_key *f, const struct ev_key *k)
{
	if (k->always)
		return 1;
	return (!f->pid || f->pid == k->pid) && (!f->version || f->version == k->version) &&
	       (!f->consumer[0] || !strcmp(f->consumer, k->consumer)) &&
	       (!f->pod_uid[0] || !strcmp(f->pod_uid, k->pod_uid)) &&
	       (!f->container_id[0] || !strcmp(f->container_id, k->container_id));
}

static int hexstr(const char *s, size_t max, int dashes)
{
	size_t i, n = strlen(s);
	if (n > max)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || (dashes && s[i] == '-')))
			return 0;
	return 1;
}

int ev_key_same(const struct ev_key *a, const struct ev_key *b)
{
	return a->pid == b->pid && a->version == b->version && !strcmp(a->consumer, b->consumer) &&
	       !strcmp(a->pod_uid, b->pod_uid) && !strcmp(a->container_id, b->container_id);
}

int ev_key_valid(const struct ev_key *k, const char **why)
{
	if (k->pid < 0)
		*why = "selector.pid: negative";
	else if (k->consumer[0] && procctl_name_valid(k->consumer, PROCCTL_CONSUMER_MAX) < 0)
		*why = "selector.consumer: not a consumer name ([a-z0-9_.-], 1 to 31)";
	else if (!hexstr(k->pod_uid, PROCCTL_POD_UID_MAX, 1))
		*why = "selector.pod_uid: not a pod UID (lowercase hex and dashes, at most 36)";
	else if (!hexstr(k->container_id, PROCCTL_CONTAINER_ID_MAX, 0))
		*why = "selector.container_id: not a container ID (lowercase hex, at most 64)";
	else
		return 0;
	return -EINVAL;
}

static int copy_field(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);
	if (n >= cap)
		return -EINVAL;
	memcpy(dst, src, n + 1);
	return 0;
}

int ev_key_from(struct ev_key *k, int32_t pid, const char *consumer, uint32_t version, const char *pod_uid,
		const char *container_id, const char **why)
{
	memset(k, 0, sizeof *k);
	k->pid = pid;
	k->version = version;
	if (copy_field(k->consumer, sizeof k->consumer, consumer) < 0) {
		*why = "selector.consumer: not a consumer name ([a-z0-9_.-], 1 to 31)";
		return -EINVAL;
	}
	if (copy_field(k->pod_uid, sizeof k->pod_uid, pod_uid) < 0) {
		*why = "selector.pod_uid: not a pod UID (lowercase hex and dashes, at most 36)";
		return -EINVAL;
	}
	if (copy_field(k->container_id, sizeof k->container_id, container_id) < 0) {
		*why = "selector.container_id: not a container ID (lowercase hex, at most 64)";
		return -EINVAL;
	}
	return ev_key_valid(k, why);
}

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

int64_t events_append(struct events *ev, const struct ev_key *k, const void *bytes, size_t len)
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
	s->seq = (uint64_t)seq;
	s->key = *k;
	s->bytes = copy;
	s->len = len;
	pthread_mutex_unlock(&ev->mu);
	free(old);
	return seq;
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

int events_next(struct events *ev, uint64_t *cursor, const struct ev_key *filter, void **out, size_t *len)
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
		if (!ev_key_match(filter, &s->key))
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
