/* SPDX-License-Identifier: Apache-2.0 */
/* podmeta.c - a Pod of the Kubernetes API, checked and bounded
 * (podmeta.h). */
#define _GNU_SOURCE 1
#include "podmeta.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/log.h"

_Static_assert(PODMETA_TEXT_MAX <= 65536, "podmeta's offsets are 16 bits");

/* A static pod's UID: the kubelet's hash of its manifest, 32 lowercase
 * hex (its cgroup is named by it). */
static int hash_ok(const char *s, size_t n)
{
	size_t i;
	if (n != 32)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int static_uid_ok(const char *s, size_t n)
{
	return hash_ok(s, n) || kube_uid_ok(s, n);
}

/* A mirror pod (the API's copy of a static pod) is known by its
 * kubernetes.io/config.mirror annotation: the static pod's UID, which
 * its cgroup names; its own UID names nothing on the node. Into uid:
 * 1 when md has one, 0 when not, -EINVAL when it is no UID. */
static int mirror_uid(const json_t *md, char *uid, size_t cap, char *err, size_t errlen)
{
	const json_t *an = json_object_get(md, "annotations");
	if (!json_object_get(an, "kubernetes.io/config.mirror"))
		return 0;
	if (kube_field(an, "kubernetes.io/config.mirror", "metadata.annotations[\"kubernetes.io/config.mirror\"]", static_uid_ok,
		  uid, cap, err, errlen) < 0)
		return -EINVAL;
	return 1;
}

/* s (n bytes) into m's text: its offset, or -1 when it is full. */
static int keep(struct podmeta *m, const char *s, size_t n)
{
	size_t at = m->used;
	if (n + 1 > sizeof m->text - m->used)
		return -1;
	memcpy(m->text + at, s, n);
	m->text[at + n] = 0;
	m->used += n + 1;
	return (int)at;
}

static int labels(const json_t *md, struct podmeta *m, char *err, size_t errlen)
{
	const json_t *ls = json_object_get(md, "labels"), *v;
	const char *k;
	char q[300], qv[300];
	size_t start = m->used;
	if (!ls || json_is_null(ls))
		return 0;
	if (!json_is_object(ls))
		return kube_bad(err, errlen, "metadata.labels: not an object");
	json_object_foreach((json_t *)ls, k, v) {
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);
		int kat, vat;
		if (!s || memchr(s, 0, n) || !labelsel_key_valid(k, strlen(k)) || !labelsel_value_valid(s, n))
			return kube_bad(err, errlen, "metadata.labels: \"%s\": \"%s\": not a label", node_log_quote(q, sizeof q, k),
				   s ? node_log_quote(qv, sizeof qv, s) : "(not a string)");
		if (m->labels_over)
			continue; /* every one is still checked */
		if (m->nlabels == PODMETA_LABELS_MAX || (kat = keep(m, k, strlen(k))) < 0 || (vat = keep(m, s, n)) < 0) {
			m->labels_over = 1;
			m->nlabels = 0;
			m->used = start; /* the room goes to the containers */
			continue;
		}
		m->labels[m->nlabels].key = (uint16_t)kat;
		m->labels[m->nlabels++].value = (uint16_t)vat;
	}
	return 0;
}

static int containers(const json_t *spec, const char *key, struct podmeta *m, char *err, size_t errlen)
{
	const json_t *cs = json_object_get(spec, key), *c;
	size_t i;
	char q[300];
	if (!cs || json_is_null(cs))
		return 0;
	if (!json_is_array(cs))
		return kube_bad(err, errlen, "spec.%s: not an array", key);
	json_array_foreach(cs, i, c) {
		const char *s = json_string_value(json_object_get(c, "name"));
		size_t n = json_string_length(json_object_get(c, "name"));
		int at;
		if (!s || memchr(s, 0, n) || !kube_dns_label_ok(s, n))
			return kube_bad(err, errlen, "spec.%s[%zu].name \"%s\": not a container name", key, i,
				   s ? node_log_quote(q, sizeof q, s) : "(missing)");
		if (m->ncontainers == PODMETA_CONTAINERS_MAX || (at = keep(m, s, n)) < 0)
			m->containers_over = 1;
		else
			m->containers[m->ncontainers++] = (uint16_t)at;
	}
	return 0;
}

/* "RUNTIME://ID", ID 1 to 64 lowercase hex: ID's offset in s, or -1. */
static int runtime_id(const char *s, size_t n)
{
	const char *sep = memmem(s, n, "://", 3);
	size_t at, i;
	if (!sep || (at = (size_t)(sep - s) + 3) == n || n - at > 64)
		return -1;
	for (i = at; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return -1;
	return (int)at;
}

/* status.KEY's containers with an ID (one not started has none; one of a
 * runtime that names them otherwise is not kept). */
static int statuses(const json_t *status, const char *key, struct podmeta *m, char *err, size_t errlen)
{
	const json_t *cs = json_object_get(status, key), *c;
	size_t i;
	char q[300];
	if (!cs || json_is_null(cs))
		return 0;
	if (!json_is_array(cs))
		return kube_bad(err, errlen, "status.%s: not an array", key);
	json_array_foreach(cs, i, c) {
		const json_t *jn = json_object_get(c, "name"), *ji = json_object_get(c, "containerID");
		const char *name = json_string_value(jn), *id = json_string_value(ji);
		size_t nn = json_string_length(jn), ni = json_string_length(ji);
		int at, nat, iat;
		if (!name || memchr(name, 0, nn) || !kube_dns_label_ok(name, nn))
			return kube_bad(err, errlen, "status.%s[%zu].name \"%s\": not a container name", key, i,
				   name ? node_log_quote(q, sizeof q, name) : "(missing)");
		if (!id || memchr(id, 0, ni) || (at = runtime_id(id, ni)) < 0)
			continue;
		if (m->nstatuses == PODMETA_CONTAINERS_MAX || (nat = keep(m, name, nn)) < 0 ||
		    (iat = keep(m, id + at, ni - (size_t)at)) < 0) {
			m->containers_over = 1;
			continue;
		}
		m->statuses[m->nstatuses].name = (uint16_t)nat;
		m->statuses[m->nstatuses++].id = (uint16_t)iat;
	}
	return 0;
}

const char *podmeta_container(const struct podmeta *m, const char *id)
{
	size_t i;
	for (i = 0; id[0] && i < m->nstatuses; i++)
		if (!strcmp(m->text + m->statuses[i].id, id))
			return m->text + m->statuses[i].name;
	return NULL;
}

int podmeta_parse(const json_t *pod, struct podmeta *m, char *err, size_t errlen)
{
	const json_t *md = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec"),
		     *status = json_object_get(pod, "status");
	int r;
	memset(m, 0, offsetof(struct podmeta, text));
	if (!json_is_object(md))
		return kube_bad(err, errlen, "a Pod without metadata");
	if ((r = kube_field(md, "uid", "metadata.uid", kube_uid_ok, m->uid, sizeof m->uid, err, errlen)) < 0 ||
	    (r = kube_field(md, "namespace", "metadata.namespace", kube_dns_label_ok, m->ns, sizeof m->ns, err, errlen)) < 0 ||
	    (r = kube_field(md, "name", "metadata.name", kube_dns_name_ok, m->name, sizeof m->name, err, errlen)) < 0 ||
	    (r = kube_field(md, "resourceVersion", "metadata.resourceVersion", kube_rv_ok, m->rv, sizeof m->rv, err, errlen)) < 0 ||
	    (r = mirror_uid(md, m->uid, sizeof m->uid, err, errlen)) < 0 || (r = labels(md, m, err, errlen)) < 0)
		return r;
	if (spec && !json_is_object(spec))
		return kube_bad(err, errlen, "spec: not an object");
	if ((r = containers(spec, "containers", m, err, errlen)) < 0 ||
	    (r = containers(spec, "initContainers", m, err, errlen)) < 0 ||
	    (r = containers(spec, "ephemeralContainers", m, err, errlen)) < 0)
		return r;
	if (status && !json_is_object(status))
		return kube_bad(err, errlen, "status: not an object");
	if ((r = statuses(status, "containerStatuses", m, err, errlen)) < 0 ||
	    (r = statuses(status, "initContainerStatuses", m, err, errlen)) < 0 ||
	    (r = statuses(status, "ephemeralContainerStatuses", m, err, errlen)) < 0)
		return r;
	return 0;
}

struct podmeta *podmeta_dup(const struct podmeta *m)
{
	size_t sz = offsetof(struct podmeta, text) + m->used;
	struct podmeta *d = malloc(sz);
	if (d)
		memcpy(d, m, sz);
	return d;
}

int podmeta_match(const struct podmeta *m, const char *sel)
{
	struct label ls[PODMETA_LABELS_MAX];
	if (m->labels_over)
		return !sel[strspn(sel, " \t\r\n")];
	return labelsel_match(sel, ls, podmeta_labels(m, ls));
}

size_t podmeta_labels(const struct podmeta *m, struct label *out)
{
	size_t i;
	for (i = 0; i < m->nlabels; i++)
		out[i] = (struct label){m->text + m->labels[i].key, m->text + m->labels[i].value};
	return m->nlabels;
}

/* The pod of a line kube_event_parse refused, when its UID can be told
 * (a mirror pod's: its static pod's): 0 and m holding that alone, to be
 * forgotten; -EINVAL. */
static int forget(const char *line, size_t len, void *out)
{
	struct podmeta *m = out;
	json_t *root = kube_too_many_values(line, len) ? NULL : json_loadb(line, len, JSON_ALLOW_NUL, NULL);
	const json_t *md = json_object_get(json_object_get(root, "object"), "metadata"), *v = json_object_get(md, "uid");
	const char *s = json_string_value(v);
	char err[8];
	int r;
	memset(m, 0, offsetof(struct podmeta, text));
	r = mirror_uid(md, m->uid, sizeof m->uid, err, sizeof err);
	if (r == 0 && s && kube_uid_ok(s, json_string_length(v)))
		memcpy(m->uid, s, 37);
	else if (r == 0)
		r = -EINVAL;
	r = r > 0 ? 0 : r;
	if (r < 0)
		m->uid[0] = 0;
	json_decref(root);
	return r;
}

static int parse(const struct kube_kind *k, const json_t *obj, void *out, char *err, size_t errlen)
{
	(void)k;
	return podmeta_parse(obj, out, err, errlen);
}

static const char *rv(const void *out)
{
	return ((const struct podmeta *)out)->rv;
}

static void *dup(const void *obj)
{
	return podmeta_dup(obj);
}

const struct kube_kind podmeta_kind = {"PodList", "pods", sizeof(struct podmeta), parse, rv, forget, dup, NULL, NULL, NULL, NULL};
