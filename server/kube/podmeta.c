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

#include "jsonscan.h"
#include "sys/log.h"

_Static_assert(PODMETA_TEXT_MAX <= 65536, "podmeta's offsets are 16 bits");

#define LIST_META_MAX (KUBE_CONTINUE_MAX + 4096) /* a list's metadata: a version, a token, a count */

static int bad(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* v's string when it holds no NUL, else NULL. A document is parsed with
 * its NULs (JSON_ALLOW_NUL), so that one in an object's text the daemon
 * does not read (an annotation, an argument: the API server keeps them)
 * costs nothing, and one in what it reads costs that object alone; every
 * string read is taken through here or checked for one. */
static const char *text(const json_t *v)
{
	const char *s = json_string_value(v);
	return s && strlen(s) == json_string_length(v) ? s : NULL;
}

static int uid_ok(const char *s, size_t n)
{
	size_t i;
	if (n != 36)
		return 0;
	for (i = 0; i < n; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	}
	return 1;
}

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
	return hash_ok(s, n) || uid_ok(s, n);
}

static int label_ok(const char *s, size_t n)
{
	return n <= 63 && !memchr(s, '.', n) && labelsel_subdomain_valid(s, n);
}

/* Printable ASCII, no blank: an opaque token's bytes. */
static int token_ok(const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return 0;
	return 1;
}

static int rv_ok(const char *s, size_t n)
{
	return n && n <= PODMETA_RV_MAX && token_ok(s, n);
}

/* obj's string field key into dst (cap bytes with its NUL), when ok says
 * it is one; what names it in errors. */
static int field(const json_t *obj, const char *key, const char *what, int (*ok)(const char *, size_t), char *dst,
		 size_t cap, char *err, size_t errlen)
{
	const json_t *v = json_object_get(obj, key);
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	char q[300];
	if (!s)
		return bad(err, errlen, "%s: missing, or not a string", what);
	if (memchr(s, 0, n))
		return bad(err, errlen, "%s: holds a NUL (\\u0000)", what);
	if (n >= cap || !ok(s, n))
		return bad(err, errlen, "%s \"%s\": not one", what, node_log_quote(q, sizeof q, s));
	memcpy(dst, s, n + 1);
	return 0;
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
	if (field(an, "kubernetes.io/config.mirror", "metadata.annotations[\"kubernetes.io/config.mirror\"]", static_uid_ok,
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
		return bad(err, errlen, "metadata.labels: not an object");
	json_object_foreach((json_t *)ls, k, v) {
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);
		int kat, vat;
		if (!s || memchr(s, 0, n) || !labelsel_key_valid(k, strlen(k)) || !labelsel_value_valid(s, n))
			return bad(err, errlen, "metadata.labels: \"%s\": \"%s\": not a label", node_log_quote(q, sizeof q, k),
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
		return bad(err, errlen, "spec.%s: not an array", key);
	json_array_foreach(cs, i, c) {
		const char *s = json_string_value(json_object_get(c, "name"));
		size_t n = json_string_length(json_object_get(c, "name"));
		int at;
		if (!s || memchr(s, 0, n) || !label_ok(s, n))
			return bad(err, errlen, "spec.%s[%zu].name \"%s\": not a container name", key, i,
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
		return bad(err, errlen, "status.%s: not an array", key);
	json_array_foreach(cs, i, c) {
		const json_t *jn = json_object_get(c, "name"), *ji = json_object_get(c, "containerID");
		const char *name = json_string_value(jn), *id = json_string_value(ji);
		size_t nn = json_string_length(jn), ni = json_string_length(ji);
		int at, nat, iat;
		if (!name || memchr(name, 0, nn) || !label_ok(name, nn))
			return bad(err, errlen, "status.%s[%zu].name \"%s\": not a container name", key, i,
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

static int name_ok(const char *s, size_t n)
{
	return labelsel_subdomain_valid(s, n);
}

int podmeta_parse(const json_t *pod, struct podmeta *m, char *err, size_t errlen)
{
	const json_t *md = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec"),
		     *status = json_object_get(pod, "status");
	int r;
	memset(m, 0, offsetof(struct podmeta, text));
	if (!json_is_object(md))
		return bad(err, errlen, "a Pod without metadata");
	if ((r = field(md, "uid", "metadata.uid", uid_ok, m->uid, sizeof m->uid, err, errlen)) < 0 ||
	    (r = field(md, "namespace", "metadata.namespace", label_ok, m->ns, sizeof m->ns, err, errlen)) < 0 ||
	    (r = field(md, "name", "metadata.name", name_ok, m->name, sizeof m->name, err, errlen)) < 0 ||
	    (r = field(md, "resourceVersion", "metadata.resourceVersion", rv_ok, m->rv, sizeof m->rv, err, errlen)) < 0 ||
	    (r = mirror_uid(md, m->uid, sizeof m->uid, err, errlen)) < 0 || (r = labels(md, m, err, errlen)) < 0)
		return r;
	if (spec && !json_is_object(spec))
		return bad(err, errlen, "spec: not an object");
	if ((r = containers(spec, "containers", m, err, errlen)) < 0 ||
	    (r = containers(spec, "initContainers", m, err, errlen)) < 0 ||
	    (r = containers(spec, "ephemeralContainers", m, err, errlen)) < 0)
		return r;
	if (status && !json_is_object(status))
		return bad(err, errlen, "status: not an object");
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

/* 1 when the JSON text is a value of more than KUBE_VALUES_MAX values:
 * not to be parsed (a tree costs tens of bytes a value). */
static int too_many_values(const char *buf, size_t len)
{
	struct jsonscan sc = {buf, buf + len, 0};
	const char *at;
	return jsonscan_value(&sc, &at) == 0 && sc.values > KUBE_VALUES_MAX;
}

int kube_event_parse(const char *line, size_t len, struct kube_event *ev, char *err, size_t errlen)
{
	static const char *const types[] = {[KUBE_ADDED] = "ADDED", [KUBE_MODIFIED] = "MODIFIED",
					    [KUBE_DELETED] = "DELETED", [KUBE_BOOKMARK] = "BOOKMARK", [KUBE_ERROR] = "ERROR"};
	json_error_t je;
	json_t *root, *obj;
	const char *type;
	char q[300];
	size_t t;
	int r = -EINVAL;

	ev->type = KUBE_ERROR;
	ev->code = 0;
	ev->rv[0] = ev->reason[0] = 0;
	if (too_many_values(line, len))
		return bad(err, errlen, "a watch event of more than %d JSON values", KUBE_VALUES_MAX);
	root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (!root)
		return bad(err, errlen, "a watch event that is not JSON: %s", node_log_quote(q, sizeof q, je.text));
	type = text(json_object_get(root, "type"));
	obj = json_object_get(root, "object");
	for (t = 0; type && t < sizeof types / sizeof types[0] && strcmp(type, types[t]); t++)
		;
	if (!type || t == sizeof types / sizeof types[0]) {
		r = bad(err, errlen, "a watch event of type \"%s\"", type ? node_log_quote(q, sizeof q, type) : "(none)");
	} else if (!json_is_object(obj)) {
		r = bad(err, errlen, "a %s event without an object", types[t]);
	} else if ((ev->type = (enum kube_event_type)t) == KUBE_ERROR) {
		const char *reason = text(json_object_get(obj, "reason"));
		json_int_t code = json_integer_value(json_object_get(obj, "code"));
		ev->code = code > 0 && code < 1000 ? (int)code : 0;
		node_log_quote(ev->reason, sizeof ev->reason, reason ? reason : "");
		r = 0;
	} else if (ev->type == KUBE_BOOKMARK) {
		r = field(json_object_get(obj, "metadata"), "resourceVersion", "a bookmark's resourceVersion", rv_ok, ev->rv,
			  sizeof ev->rv, err, errlen);
	} else if ((r = podmeta_parse(obj, &ev->pod, err, errlen)) == 0) {
		memcpy(ev->rv, ev->pod.rv, sizeof ev->rv);
	}
	json_decref(root);
	return r;
}

int kube_event_uid(const char *line, size_t len, char *uid)
{
	json_t *root = too_many_values(line, len) ? NULL : json_loadb(line, len, JSON_ALLOW_NUL, NULL);
	const json_t *md = json_object_get(json_object_get(root, "object"), "metadata"), *v = json_object_get(md, "uid");
	const char *s = json_string_value(v);
	char err[8];
	int r = mirror_uid(md, uid, 37, err, sizeof err);
	if (r == 0 && s && uid_ok(s, json_string_length(v)))
		memcpy(uid, s, 37);
	else if (r == 0)
		r = -EINVAL;
	r = r > 0 ? 0 : r;
	json_decref(root);
	return r;
}

/* A list's kind, as its text (JSON): 0 when it is "PodList". */
static int podlist_kind(const char *at, size_t n)
{
	json_t *v = json_loadb(at, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	const char *k = text(v);
	int r = k && !strcmp(k, "PodList") ? 0 : -EINVAL;
	json_decref(v);
	return r;
}

/* A list's metadata (its text, JSON): its version and continue token
 * into pg. */
static int list_meta(const char *at, size_t n, struct kube_page *pg, char *err, size_t errlen)
{
	json_t *md = n <= LIST_META_MAX ? json_loadb(at, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL) : NULL;
	const json_t *jc = json_object_get(md, "continue");
	const char *cont = json_string_value(jc);
	size_t len = json_string_length(jc);
	char q[300];
	int r;
	if (!json_is_object(md))
		r = bad(err, errlen, "a PodList whose metadata is no object of at most %d bytes", LIST_META_MAX);
	else if ((r = field(md, "resourceVersion", "a list's resourceVersion", rv_ok, pg->rv, sizeof pg->rv, err, errlen)) < 0)
		;
	else if (cont && (len > KUBE_CONTINUE_MAX || !token_ok(cont, len)))
		r = bad(err, errlen, "a list's continue token \"%s\": not printable, or over %d bytes",
			node_log_quote(q, sizeof q, cont), KUBE_CONTINUE_MAX);
	else if (cont)
		memcpy(pg->cont, cont, len + 1);
	json_decref(md);
	return r;
}

/* An item of a list (its text, JSON, of values values), to item() when it
 * is a Pod; else counted, and the first one's reason kept. */
static void list_item(const char *at, size_t n, size_t values, size_t i, size_t bytes_max, struct kube_page *pg,
		      void (*item)(void *arg, const struct podmeta *m), void *arg)
{
	static _Thread_local struct podmeta m; /* 8 KiB: off the stack of the thread that lists */
	char why[200], q[200];
	json_error_t je;
	json_t *it = NULL;
	int r = -EINVAL;
	if (n > bytes_max)
		snprintf(why, sizeof why, "%zu bytes (an object of more than %zu, kubernetes_event_bytes_max)", n, bytes_max);
	else if (values > KUBE_VALUES_MAX)
		snprintf(why, sizeof why, "%zu JSON values (more than %d)", values, KUBE_VALUES_MAX);
	else if (!(it = json_loadb(at, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je)))
		snprintf(why, sizeof why, "not JSON: %s", node_log_quote(q, sizeof q, je.text));
	else
		r = podmeta_parse(it, &m, why, sizeof why);
	json_decref(it);
	if (r < 0) {
		if (!pg->rejected++)
			snprintf(pg->rejected_why, sizeof pg->rejected_why, "items[%zu]: %s", i, why);
		return;
	}
	pg->items++;
	item(arg, &m);
}

/* The items array's text: each to list_item. */
static int list_items(const char *at, size_t n, size_t bytes_max, struct kube_page *pg,
		      void (*item)(void *arg, const struct podmeta *m), void *arg, char *err, size_t errlen)
{
	struct jsonscan s = {at, at + n, 0};
	const char *v;
	size_t i = 0;
	if (n == 4 && !memcmp(at, "null", 4))
		return 0;
	if (!jsonscan_take(&s, '['))
		return bad(err, errlen, "a PodList whose items are not an array");
	if (jsonscan_take(&s, ']'))
		return 0;
	do {
		size_t before = s.values;
		if (jsonscan_value(&s, &v) < 0)
			return bad(err, errlen, "a list that is not JSON"); /* scanned once already */
		list_item(v, (size_t)(s.p - v), s.values - before, i++, bytes_max, pg, item, arg);
	} while (jsonscan_take(&s, ','));
	return 0;
}

/* A list's kind, metadata and items, found; a member twice is refused. */
struct list_parts {
	const char *kind, *meta, *items;
	size_t kind_n, meta_n, items_n;
};

static int list_parts(const char *buf, size_t len, struct list_parts *lp, char *err, size_t errlen)
{
	struct jsonscan s = {buf, buf + len, 0};
	memset(lp, 0, sizeof *lp);
	if (!jsonscan_take(&s, '{'))
		return bad(err, errlen, "a list that is not JSON (not an object)");
	if (!jsonscan_take(&s, '}'))
		do {
			const char *key, *v, **part = NULL;
			size_t kn, *part_n = NULL;
			if (jsonscan_key(&s, &key, &kn) < 0 || jsonscan_value(&s, &v) < 0)
				return bad(err, errlen, "a list that is not JSON (at byte %zu)", (size_t)(s.p - buf));
			if (kn == 4 && !memcmp(key, "kind", 4))
				part = &lp->kind, part_n = &lp->kind_n;
			else if (kn == 8 && !memcmp(key, "metadata", 8))
				part = &lp->meta, part_n = &lp->meta_n;
			else if (kn == 5 && !memcmp(key, "items", 5))
				part = &lp->items, part_n = &lp->items_n;
			if (part && *part)
				return bad(err, errlen, "a list with two \"%.*s\"", (int)kn, key);
			if (part)
				*part = v, *part_n = (size_t)(s.p - v);
		} while (jsonscan_take(&s, ','));
	if (!jsonscan_take(&s, '}') || !jsonscan_end(&s))
		return bad(err, errlen, "a list that is not JSON (at byte %zu)", (size_t)(s.p - buf));
	return 0;
}

int kube_list_parse(const char *buf, size_t len, size_t item_bytes_max, struct kube_page *pg,
		    void (*item)(void *arg, const struct podmeta *m), void *arg, char *err, size_t errlen)
{
	struct list_parts lp;
	int r;
	memset(pg, 0, sizeof *pg);
	if ((r = list_parts(buf, len, &lp, err, errlen)) < 0)
		return r;
	if (!lp.kind || podlist_kind(lp.kind, lp.kind_n) < 0)
		return bad(err, errlen, "a list whose kind is not PodList");
	if (!lp.meta)
		return bad(err, errlen, "a PodList without metadata");
	if ((r = list_meta(lp.meta, lp.meta_n, pg, err, errlen)) < 0)
		return r;
	return lp.items ? list_items(lp.items, lp.items_n, item_bytes_max, pg, item, arg, err, errlen) : 0;
}
