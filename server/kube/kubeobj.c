/* SPDX-License-Identifier: Apache-2.0 */
/* kubeobj.c - a watch's lines and a list's pages, of any kind of object
 * (kubeobj.h). */
#define _GNU_SOURCE 1
#include "kubeobj.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonscan.h"
#include "labelsel.h"
#include "sys/log.h"

#define LIST_META_MAX (KUBE_CONTINUE_MAX + 4096) /* a list's metadata: a version, a token, a count */

int kube_bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

const char *kube_text(const json_t *v)
{
	const char *s = json_string_value(v);
	return s && strlen(s) == json_string_length(v) ? s : NULL;
}

int kube_token_ok(const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return 0;
	return 1;
}

int kube_uid_ok(const char *s, size_t n)
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

int kube_dns_label_ok(const char *s, size_t n)
{
	return n <= 63 && !memchr(s, '.', n) && labelsel_subdomain_valid(s, n);
}

int kube_dns_name_ok(const char *s, size_t n)
{
	return labelsel_subdomain_valid(s, n);
}

int kube_rv_ok(const char *s, size_t n)
{
	return n && n <= KUBE_RV_MAX && kube_token_ok(s, n);
}

int kube_field(const json_t *obj, const char *key, const char *what, int (*ok)(const char *, size_t), char *dst,
	       size_t cap, char *err, size_t errlen)
{
	const json_t *v = json_object_get(obj, key);
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	char q[300];
	if (!s)
		return kube_bad(err, errlen, "%s: missing, or not a string", what);
	if (memchr(s, 0, n))
		return kube_bad(err, errlen, "%s: holds a NUL (\\u0000)", what);
	if (n >= cap || !ok(s, n))
		return kube_bad(err, errlen, "%s \"%s\": not one", what, node_log_quote(q, sizeof q, s));
	memcpy(dst, s, n + 1);
	return 0;
}

int kube_too_many_values(const char *buf, size_t len)
{
	struct jsonscan sc = {buf, buf + len, 0};
	const char *at;
	return jsonscan_value(&sc, &at) == 0 && sc.values > KUBE_VALUES_MAX;
}

/* ---- a watch's line ---------------------------------------------------- */

int kube_event_parse(const struct kube_kind *k, const char *line, size_t len, struct kube_event *ev, char *err,
		     size_t errlen)
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
	if (kube_too_many_values(line, len))
		return kube_bad(err, errlen, "a watch event of more than %d JSON values", KUBE_VALUES_MAX);
	root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (!root)
		return kube_bad(err, errlen, "a watch event that is not JSON: %s", node_log_quote(q, sizeof q, je.text));
	type = kube_text(json_object_get(root, "type"));
	obj = json_object_get(root, "object");
	for (t = 0; type && t < sizeof types / sizeof types[0] && strcmp(type, types[t]); t++)
		;
	if (!type || t == sizeof types / sizeof types[0]) {
		r = kube_bad(err, errlen, "a watch event of type \"%s\"", type ? node_log_quote(q, sizeof q, type) : "(none)");
	} else if (!json_is_object(obj)) {
		r = kube_bad(err, errlen, "a %s event without an object", types[t]);
	} else if ((ev->type = (enum kube_event_type)t) == KUBE_ERROR) {
		const char *reason = kube_text(json_object_get(obj, "reason"));
		json_int_t code = json_integer_value(json_object_get(obj, "code"));
		ev->code = code > 0 && code < 1000 ? (int)code : 0;
		node_log_quote(ev->reason, sizeof ev->reason, reason ? reason : "");
		r = 0;
	} else if (ev->type == KUBE_BOOKMARK) {
		r = kube_field(json_object_get(obj, "metadata"), "resourceVersion", "a bookmark's resourceVersion",
			       kube_rv_ok, ev->rv, sizeof ev->rv, err, errlen);
	} else if ((r = k->parse(k, obj, ev->obj, err, errlen)) == 0) {
		snprintf(ev->rv, sizeof ev->rv, "%s", k->rv(ev->obj));
	}
	json_decref(root);
	return r;
}

/* ---- a list's page ----------------------------------------------------- */

/* A list's kind, as its text (JSON): 0 when it is k's. */
static int list_kind(const struct kube_kind *k, const char *at, size_t n)
{
	json_t *v = json_loadb(at, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	const char *s = kube_text(v);
	int r = s && !strcmp(s, k->list) ? 0 : -EINVAL;
	json_decref(v);
	return r;
}

/* A list's metadata (its text, JSON): its version and continue token
 * into pg. */
static int list_meta(const struct kube_kind *k, const char *at, size_t n, struct kube_page *pg, char *err,
		     size_t errlen)
{
	json_t *md = n <= LIST_META_MAX ? json_loadb(at, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL) : NULL;
	const json_t *jc = json_object_get(md, "continue");
	const char *cont = json_string_value(jc);
	size_t len = json_string_length(jc);
	char q[300];
	int r;
	if (!json_is_object(md))
		r = kube_bad(err, errlen, "a %s whose metadata is no object of at most %d bytes", k->list, LIST_META_MAX);
	else if ((r = kube_field(md, "resourceVersion", "a list's resourceVersion", kube_rv_ok, pg->rv, sizeof pg->rv, err,
				 errlen)) < 0)
		;
	else if (cont && (len > KUBE_CONTINUE_MAX || !kube_token_ok(cont, len)))
		r = kube_bad(err, errlen, "a list's continue token \"%s\": not printable, or over %d bytes",
			     node_log_quote(q, sizeof q, cont), KUBE_CONTINUE_MAX);
	else if (cont)
		memcpy(pg->cont, cont, len + 1);
	json_decref(md);
	return r;
}

/* What a list is parsed with, and gives its items to. */
struct lister {
	const struct kube_kind *k;
	void *obj;
	size_t bytes_max;
	struct kube_page *pg;
	void (*item)(void *arg, const void *obj);
	void *arg;
};

/* An item of a list (its text, JSON, of values values), to item() when it
 * parses; else counted, and the first one's reason kept. */
static void list_item(const struct lister *l, const char *at, size_t n, size_t values, size_t i)
{
	char why[200], q[200];
	json_error_t je;
	json_t *it = NULL;
	int r = -EINVAL;
	if (n > l->bytes_max)
		snprintf(why, sizeof why, "%zu bytes (an object of more than %zu, kubernetes_event_bytes_max)", n,
			 l->bytes_max);
	else if (values > KUBE_VALUES_MAX)
		snprintf(why, sizeof why, "%zu JSON values (more than %d)", values, KUBE_VALUES_MAX);
	else if (!(it = json_loadb(at, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je)))
		snprintf(why, sizeof why, "not JSON: %s", node_log_quote(q, sizeof q, je.text));
	else
		r = l->k->parse(l->k, it, l->obj, why, sizeof why);
	json_decref(it);
	if (r < 0) {
		if (!l->pg->rejected++)
			snprintf(l->pg->rejected_why, sizeof l->pg->rejected_why, "items[%zu]: %s", i, why);
		return;
	}
	l->pg->items++;
	l->item(l->arg, l->obj);
}

/* The items array's text: each to list_item. */
static int list_items(const struct lister *l, const char *at, size_t n, char *err, size_t errlen)
{
	struct jsonscan s = {at, at + n, 0};
	const char *v;
	size_t i = 0;
	if (n == 4 && !memcmp(at, "null", 4))
		return 0;
	if (!jsonscan_take(&s, '['))
		return kube_bad(err, errlen, "a %s whose items are not an array", l->k->list);
	if (jsonscan_take(&s, ']'))
		return 0;
	do {
		size_t before = s.values;
		if (jsonscan_value(&s, &v) < 0)
			return kube_bad(err, errlen, "a list that is not JSON"); /* scanned once already */
		list_item(l, v, (size_t)(s.p - v), s.values - before, i++);
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
		return kube_bad(err, errlen, "a list that is not JSON (not an object)");
	if (!jsonscan_take(&s, '}'))
		do {
			const char *key, *v, **part = NULL;
			size_t kn, *part_n = NULL;
			if (jsonscan_key(&s, &key, &kn) < 0 || jsonscan_value(&s, &v) < 0)
				return kube_bad(err, errlen, "a list that is not JSON (at byte %zu)", (size_t)(s.p - buf));
			if (kn == 4 && !memcmp(key, "kind", 4))
				part = &lp->kind, part_n = &lp->kind_n;
			else if (kn == 8 && !memcmp(key, "metadata", 8))
				part = &lp->meta, part_n = &lp->meta_n;
			else if (kn == 5 && !memcmp(key, "items", 5))
				part = &lp->items, part_n = &lp->items_n;
			if (part && *part)
				return kube_bad(err, errlen, "a list with two \"%.*s\"", (int)kn, key);
			if (part)
				*part = v, *part_n = (size_t)(s.p - v);
		} while (jsonscan_take(&s, ','));
	if (!jsonscan_take(&s, '}') || !jsonscan_end(&s))
		return kube_bad(err, errlen, "a list that is not JSON (at byte %zu)", (size_t)(s.p - buf));
	return 0;
}

int kube_list_parse(const struct kube_kind *k, void *obj, const char *buf, size_t len, size_t item_bytes_max,
		    struct kube_page *pg, void (*item)(void *arg, const void *obj), void *arg, char *err, size_t errlen)
{
	const struct lister l = {k, obj, item_bytes_max, pg, item, arg};
	struct list_parts lp;
	int r;
	memset(pg, 0, sizeof *pg);
	if ((r = list_parts(buf, len, &lp, err, errlen)) < 0)
		return r;
	if (!lp.kind || list_kind(k, lp.kind, lp.kind_n) < 0)
		return kube_bad(err, errlen, "a list whose kind is not %s", k->list);
	if (!lp.meta)
		return kube_bad(err, errlen, "a %s without metadata", k->list);
	if ((r = list_meta(k, lp.meta, lp.meta_n, pg, err, errlen)) < 0)
		return r;
	return lp.items ? list_items(&l, lp.items, lp.items_n, err, errlen) : 0;
}

/* ---- a list's budget --------------------------------------------------- */

static struct kube_group *group_of(struct kube_budget *b, const char *g)
{
	size_t i;
	for (i = 0; i < b->n; i++)
		if (!strcmp(b->v[i].name, g))
			return &b->v[i];
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		struct kube_group *v = realloc(b->v, cap * sizeof *v);
		if (!v)
			return NULL;
		b->v = v;
		b->cap = cap;
	}
	snprintf(b->v[b->n].name, sizeof b->v[b->n].name, "%s", g);
	b->v[b->n].n = b->v[b->n].slim = 0;
	return &b->v[b->n++];
}

enum kube_verdict kube_budget_take(struct kube_budget *b, void *obj)
{
	const struct kube_kind *k = b->k;
	struct kube_group *g;
	char why[200];
	size_t c;
	if (!k || !k->group)
		return KUBE_KEEP;
	if (!(g = group_of(b, k->group(obj)))) {
		b->nomem = 1;
		return KUBE_DROP;
	}
	c = k->cost(obj);
	if (g->n >= b->group_max)
		snprintf(why, sizeof why, "%s: %u objects of its group (%s) kept", b->group_key, b->group_max, g->name);
	else if (c > b->cost_max - (b->cost < b->cost_max ? b->cost : b->cost_max))
		snprintf(why, sizeof why, "%s: %zu bytes kept, %zu more would pass %zu", b->cost_key, b->cost, c, b->cost_max);
	else {
		b->cost += c;
		g->n++;
		return KUBE_KEEP;
	}
	if (g->slim >= b->group_max)
		return KUBE_DROP;
	g->slim++;
	k->slim(obj, why);
	return KUBE_SLIM;
}

void kube_budget_reset(struct kube_budget *b)
{
	b->n = 0;
	b->cost = 0;
}

void kube_budget_free(struct kube_budget *b)
{
	free(b->v);
	b->v = NULL;
	b->n = b->cap = 0;
}
