/* SPDX-License-Identifier: Apache-2.0 */
/* desired_kube.c - the configs of ProcessConfig objects (desired.h):
 * in memory only, each known by its object's UID. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "desired_int.h"
#include "procctl.h"

const struct desired *desired_kube_find(const struct desired_store *s, const char *uid)
{
	size_t i;
	for (i = 0; i < s->kn; i++)
		if (!strcmp(s->kv[i].kube->uid, uid))
			return &s->kv[i];
	return NULL;
}

static void drop(struct desired *d)
{
	free(d->payload);
	free(d->kube);
}

void desired_kube_forget(struct desired_store *s)
{
	size_t i;
	for (i = 0; i < s->kn; i++)
		drop(&s->kv[i]);
	free(s->kv);
	s->kv = NULL;
	s->kn = s->kcap = 0;
	s->changes++;
}

/* Does d say what (sel, pod, payload) says? */
static int same(const struct desired *d, const struct selector *sel, const struct podsel *pod, const void *payload,
		size_t len)
{
	return selector_same(&d->sel, sel) && podsel_same(&d->pod, pod) && d->len == len && !memcmp(d->payload, payload, len);
}

/* Room for one more in kv: 0, or -ENOMEM. */
static int grow(struct desired_store *s)
{
	struct desired *v;
	size_t cap = s->kcap ? s->kcap * 2 : 16;
	if (s->kn < s->kcap)
		return 0;
	if (!(v = realloc(s->kv, cap * sizeof *v)))
		return -ENOMEM;
	s->kv = v;
	s->kcap = cap;
	return 0;
}

int desired_kube_set(struct desired_store *s, const struct desired_kube *k, const struct selector *sel,
		     const struct podsel *pod, const void *payload, size_t len, const struct desired **out,
		     const char **why)
{
	struct desired *d = (struct desired *)desired_kube_find(s, k->uid);
	uint8_t *p;
	if (procctl_name_valid(sel->consumer, PROCCTL_CONSUMER_MAX) < 0 || !sel->version) {
		*why = "a config names a consumer and a schema version";
		return -EINVAL;
	}
	if (sel->pid || sel->pod_uid[0] || sel->container_id[0] || !pod->ns[0]) {
		*why = "a ProcessConfig's config selects by its namespace, labels and container name alone";
		return -EINVAL;
	}
	if (!len || len > PROCCTL_PAYLOAD_MAX) {
		*why = "payload: 1 byte to 1 MiB";
		return -EINVAL;
	}
	if (d && same(d, sel, pod, payload, len)) {
		*d->kube = *k; /* its generation, as the API server counts */
		*out = d;
		return 0;
	}
	if (!(p = malloc(len)) || (!d && grow(s) < 0)) {
		free(p);
		return -ENOMEM;
	}
	memcpy(p, payload, len);
	if (!d) {
		d = &s->kv[s->kn];
		memset(d, 0, sizeof *d);
		if (!(d->kube = malloc(sizeof *d->kube))) {
			free(p);
			return -ENOMEM;
		}
		s->kn++;
	}
	free(d->payload);
	d->payload = p;
	d->len = len;
	d->sel = *sel;
	d->sel.always = 0;
	d->pod = *pod;
	d->level = DESIRED_LABELS; /* whatever its selector: desired.h */
	*d->kube = *k;
	d->revision = d->created = ++s->revision; /* in memory: a successor numbers them anew */
	s->changes++;
	*out = d;
	return 0;
}

int desired_kube_delete(struct desired_store *s, const char *uid)
{
	const struct desired *d = desired_kube_find(s, uid);
	size_t i;
	if (!d)
		return -ENOENT;
	i = (size_t)(d - s->kv);
	drop(&s->kv[i]);
	memmove(&s->kv[i], &s->kv[i + 1], (s->kn - i - 1) * sizeof s->kv[0]);
	s->kn--;
	s->changes++;
	return 0;
}
