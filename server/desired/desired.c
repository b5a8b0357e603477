/* SPDX-License-Identifier: Apache-2.0 */
/* desired.c - desired configs (desired.h): which is a process's, and
 * the changes to the store; its file is desired_file.c's. */
#include "desired.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "desired_int.h"
#include "procctl_agent.h"

enum desired_level desired_level_of(const struct selector *k, const struct podsel *ps)
{
	return k->pid		    ? DESIRED_PID
	       : k->container_id[0] ? DESIRED_CONTAINER
	       : k->pod_uid[0]	    ? DESIRED_POD
	       : ps->labels[0]	    ? DESIRED_LABELS
	       : ps->ns[0]	    ? DESIRED_NAMESPACE
				    : DESIRED_CONSUMER;
}

int desired_check(const struct selector *sel, const char **why)
{
	if (procctl_name_valid(sel->consumer, PROCCTL_CONSUMER_MAX) < 0 || !sel->version) {
		*why = "selector: a desired config names a consumer and the schema_version its payload is in (0 "
		       "matches any version only in calls that read: ListProcesses, WatchEvents)";
		return -EINVAL;
	}
	return selector_valid(sel, why);
}

/* Could one process match both? Fields both name must agree. */
static int overlap(const struct selector *a, const struct selector *b)
{
	return a->version == b->version && !strcmp(a->consumer, b->consumer) && (!a->pid || !b->pid || a->pid == b->pid) &&
	       (!a->pod_uid[0] || !b->pod_uid[0] || !strcmp(a->pod_uid, b->pod_uid)) &&
	       (!a->container_id[0] || !b->container_id[0] || !strcmp(a->container_id, b->container_id));
}

int desired_conflict(const struct selector *a, const struct podsel *pa, const struct selector *b,
		     const struct podsel *pb)
{
	enum desired_level la = desired_level_of(a, pa);
	if (la != desired_level_of(b, pb) || !overlap(a, b) || (pa->ns[0] && pb->ns[0] && strcmp(pa->ns, pb->ns)))
		return 0;
	return la != DESIRED_LABELS || podsel_same(pa, pb);
}

int desired_by_pod(const struct desired_store *s)
{
	size_t i;
	if (s->kn)
		return 1;
	for (i = 0; i < s->n; i++)
		if (!podsel_empty(&s->v[i].pod))
			return 1;
	return 0;
}

const struct desired *desired_find(const struct desired_store *s, const struct selector *sel, const struct podsel *pod)
{
	size_t i;
	for (i = 0; i < s->n; i++)
		if (selector_same(&s->v[i].sel, sel) && podsel_same(&s->v[i].pod, pod))
			return &s->v[i];
	return NULL;
}

/* Of two ProcessConfigs' configs, is a's the older object? */
static int older(const struct desired_kube *a, const struct desired_kube *b)
{
	int c;
	if (a->created != b->created)
		return a->created < b->created;
	return (c = strcmp(a->ns, b->ns)) ? c < 0 : strcmp(a->name, b->name) < 0;
}

/* Does d come before best for a process both match? Label selectors of
 * one precedence: with a namespace, then with a container, then more
 * requirements, then the node's own over a ProcessConfig's, then set
 * first (the older ProcessConfig). */
static int beats(const struct desired *d, const struct desired *best)
{
	size_t rd, rb;
	if (d->level != best->level)
		return d->level > best->level;
	if (d->level != DESIRED_LABELS)
		return 0;
	if (!d->pod.ns[0] != !best->pod.ns[0])
		return d->pod.ns[0] != 0;
	if (!d->pod.container[0] != !best->pod.container[0])
		return d->pod.container[0] != 0;
	if ((rd = podsel_requirements(&d->pod)) != (rb = podsel_requirements(&best->pod)))
		return rd > rb;
	if (!d->kube != !best->kube)
		return !d->kube;
	return d->kube ? older(d->kube, best->kube) : d->created < best->created;
}

static const struct desired *best_of(const struct desired *v, size_t n, const struct desired *best,
				     const struct selector *pk, const struct podmeta *m)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (selector_match(&v[i].sel, pk) && podsel_match(&v[i].pod, m, pk->container_id) &&
		    (!best || beats(&v[i], best)))
			best = &v[i];
	return best;
}

const struct desired *desired_match(const struct desired_store *s, const struct selector *k, const struct podmeta *m)
{
	struct selector pk = *k;
	pk.always = 0; /* a process key: no event's match-everything */
	return best_of(s->kv, s->kn, best_of(s->v, s->n, NULL, &pk, m), &pk, m);
}

int desired_effective(const struct desired_store *s, const struct desired *d, const struct selector *k,
		      const struct podmeta *m)
{
	return d && desired_match(s, k, m) == d;
}

void desired_forget(struct desired_store *s)
{
	size_t i;
	for (i = 0; i < s->n; i++)
		free(s->v[i].payload);
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
	s->changes++;
}

/* The store written where it is kept (s->save: desired_file.c's), if anywhere. */
static int store_save(const struct desired_store *s, char *err, size_t errlen)
{
	return s->save ? s->save(s, err, errlen) : 0;
}

void desired_free(struct desired_store *s)
{
	desired_forget(s);
	desired_kube_forget(s);
	if (s->path[0])
		close(s->dirfd);
	s->path[0] = 0;
}

int desired_append(struct desired_store *s, const struct selector *sel, const struct podsel *pod, const void *payload,
		  size_t len, uint64_t rev, const char *source)
{
	struct desired *d;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct desired *v = realloc(s->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	d = &s->v[s->n];
	memset(d, 0, sizeof *d);
	if (!(d->payload = malloc(len ? len : 1)))
		return -ENOMEM;
	memcpy(d->payload, payload, len);
	d->len = len;
	d->sel = *sel;
	d->sel.always = 0;
	d->pod = *pod;
	d->level = desired_level_of(sel, pod);
	d->revision = d->created = rev;
	snprintf(d->source, sizeof d->source, "%s", source ? source : "");
	s->n++;
	s->changes++;
	return 0;
}

/* ---- changes --------------------------------------------------------- */

size_t desired_bytes(const struct desired_store *s)
{
	size_t i, b = 0;
	for (i = 0; i < s->n; i++)
		b += s->v[i].len;
	return b;
}

void desired_limits(struct desired_store *s, size_t max_n, size_t max_bytes)
{
	s->max_n = max_n;
	s->max_bytes = max_bytes;
}

/* May config at (s->n: a new one) take len bytes? 0, or -ENOSPC and err. */
static int within_limits(const struct desired_store *s, size_t at, size_t len, char *err, size_t errlen)
{
	size_t kept;
	if (at == s->n && s->max_n && s->n >= s->max_n) {
		snprintf(err, errlen, "desired_max: %zu configs kept, the most there may be", s->n);
		return -ENOSPC;
	}
	kept = desired_bytes(s) - (at < s->n ? s->v[at].len : 0);
	if (s->max_bytes && len > s->max_bytes - (kept < s->max_bytes ? kept : s->max_bytes)) {
		snprintf(err, errlen, "desired_bytes_max: %zu bytes kept by the others, %zu more would pass %zu", kept, len,
			 s->max_bytes);
		return -ENOSPC;
	}
	return 0;
}

int desired_set(struct desired_store *s, const struct selector *sel, const struct podsel *pod, const void *payload,
		size_t len, const char *source, const struct desired **out, const struct desired **other, const char **why,
		char *err, size_t errlen)
{
	struct desired old;
	size_t i, at = s->n;
	int r;
	if ((r = desired_check(sel, why)) < 0)
		return r;
	if (sel->pid > 0 && !sel->pid_start) {
		*why = "selector.pid: not bound to a process (its start time)";
		return -EINVAL;
	}
	if (!len || len > PROCCTL_PAYLOAD_MAX) {
		*why = "config.payload: 1 to 1 MiB bytes";
		return -EINVAL;
	}
	if (s->revision >= REVISION_MAX) {
		snprintf(err, errlen, "revisions used up");
		return -EIO;
	}
	for (i = 0; i < s->n; i++) {
		if (selector_same(&s->v[i].sel, sel) && podsel_same(&s->v[i].pod, pod))
			at = i;
		else if (desired_conflict(&s->v[i].sel, &s->v[i].pod, sel, pod)) {
			*other = &s->v[i];
			return -EEXIST;
		}
	}
	if ((r = within_limits(s, at, len, err, errlen)) < 0)
		return r;
	s->revision++; /* the file keeps the counter: revisions only grow */
	s->changes++;
	if (at < s->n) { /* replace: keep the old one until the file has the new */
		uint8_t *p = malloc(len);
		if (!p) {
			s->revision--;
			return -ENOMEM;
		}
		memcpy(p, payload, len);
		old = s->v[at];
		s->v[at].payload = p;
		s->v[at].len = len;
		s->v[at].revision = s->revision;
		snprintf(s->v[at].source, sizeof s->v[at].source, "%s", source ? source : "");
		if ((r = store_save(s, err, errlen)) < 0) {
			free(p);
			s->v[at] = old;
			s->revision--;
			return r;
		}
		free(old.payload);
	} else {
		if ((r = desired_append(s, sel, pod, payload, len, s->revision, source)) < 0) {
			s->revision--;
			return r;
		}
		if ((r = store_save(s, err, errlen)) < 0) {
			free(s->v[--s->n].payload);
			s->revision--;
			return r;
		}
	}
	*out = &s->v[at];
	return 0;
}

int desired_delete(struct desired_store *s, const struct selector *sel, const struct podsel *pod, char *err,
		   size_t errlen)
{
	const struct desired *d = desired_find(s, sel, pod);
	struct desired gone;
	size_t i;
	int r;
	if (!d)
		return -ENOENT;
	i = (size_t)(d - s->v);
	gone = s->v[i];
	s->changes++;
	memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof s->v[0]);
	s->n--;
	if ((r = store_save(s, err, errlen)) < 0) { /* put it back */
		memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof s->v[0]);
		s->v[i] = gone;
		s->n++;
		return r;
	}
	free(gone.payload);
	return 0;
}

int desired_bind_image(struct desired_store *s, size_t i, uint64_t image, char *err, size_t errlen)
{
	int r;
	if (i >= s->n || !s->v[i].sel.pid || s->v[i].sel.pid_image || !image)
		return -EINVAL;
	s->v[i].sel.pid_image = image;
	if ((r = store_save(s, err, errlen)) < 0)
		s->v[i].sel.pid_image = 0;
	return r;
}

int desired_forget_process(struct desired_store *s, pid_t pid, uint64_t start, char *err, size_t errlen)
{
	size_t i, k = 0, n0 = s->n;
	int r;
	for (i = 0; i < s->n; i++)
		if (s->v[i].sel.pid == pid && (!start || s->v[i].sel.pid_start == start))
			free(s->v[i].payload);
		else
			s->v[k++] = s->v[i];
	if (k == n0)
		return 0;
	s->n = k;
	s->changes++;
	if ((r = store_save(s, err, errlen)) < 0)
		return r;
	return (int)(n0 - k);
}
