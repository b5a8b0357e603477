/* SPDX-License-Identifier: Apache-2.0 */
/* pconfig.c - a ProcessConfig of the Kubernetes API, checked and bounded
 * (pconfig.h). */
#define _GNU_SOURCE 1
#include "pconfig.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base64.h"
#include "sys/log.h"

/* The spec is not one to apply: why (-EINVAL), the payload dropped. */
static int refuse(struct pconfig *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(struct pconfig *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->why, sizeof p->why, fmt, ap);
	va_end(ap);
	p->len = 0;
	return -EINVAL;
}

/* metav1.Time: RFC 3339, as the API server writes it ("...Z"), or with
 * an offset. Seconds since the epoch, or -1. */
static int64_t rfc3339(const char *s)
{
	struct tm tm;
	const char *e;
	int64_t t, off = 0;
	memset(&tm, 0, sizeof tm);
	if (!(e = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)))
		return -1;
	if (*e == '.')
		e += 1 + strspn(e + 1, "0123456789");
	if ((*e == '+' || *e == '-') && strlen(e) == 6 && e[3] == ':') {
		int h = atoi(e + 1), m = atoi(e + 4);
		off = (*e == '-' ? -1 : 1) * (h * 3600 + m * 60);
	} else if (strcmp(e, "Z") && strcmp(e, "z")) {
		return -1;
	}
	t = (int64_t)timegm(&tm) - off;
	return t >= 0 ? t : -1;
}

static int metadata(const json_t *md, struct pconfig *p, char *err, size_t errlen)
{
	const json_t *g = json_object_get(md, "generation");
	const char *ts;
	int r;
	char q[80];
	if (!json_is_object(md))
		return kube_bad(err, errlen, "a ProcessConfig without metadata");
	if ((r = kube_field(md, "uid", "metadata.uid", kube_uid_ok, p->uid, sizeof p->uid, err, errlen)) < 0 ||
	    (r = kube_field(md, "namespace", "metadata.namespace", kube_dns_label_ok, p->ns, sizeof p->ns, err, errlen)) < 0 ||
	    (r = kube_field(md, "name", "metadata.name", kube_dns_name_ok, p->name, sizeof p->name, err, errlen)) < 0 ||
	    (r = kube_field(md, "resourceVersion", "metadata.resourceVersion", kube_rv_ok, p->rv, sizeof p->rv, err, errlen)) < 0)
		return r;
	if (g && (!json_is_integer(g) || json_integer_value(g) < 0))
		return kube_bad(err, errlen, "metadata.generation: not a whole number");
	p->generation = g ? json_integer_value(g) : 0;
	if (!(ts = kube_text(json_object_get(md, "creationTimestamp"))) || (p->created = rfc3339(ts)) < 0)
		return kube_bad(err, errlen, "metadata.creationTimestamp \"%s\": not an RFC 3339 time",
				ts ? node_log_quote(q, sizeof q, ts) : "(missing)");
	return 0;
}

/* Append the n bytes of s to p->labels (at *at): 0, or -1 when full. */
static int put(struct pconfig *p, size_t *at, const char *s, size_t n)
{
	if (n >= sizeof p->labels - *at)
		return -1;
	memcpy(p->labels + *at, s, n);
	*at += n;
	p->labels[*at] = 0;
	return 0;
}

/* matchExpressions[i] (checked) in kubectl -l's syntax. */
static int expression(const json_t *e, size_t i, struct pconfig *p, size_t *at)
{
	const char *key = kube_text(json_object_get(e, "key")), *op = kube_text(json_object_get(e, "operator"));
	const json_t *vs = json_object_get(e, "values"), *v;
	int in = op && !strcmp(op, "In"), notin = op && !strcmp(op, "NotIn"), r = 0;
	size_t j;
	if (!key || !labelsel_key_valid(key, strlen(key)))
		return refuse(p, "spec.selector.matchExpressions[%zu].key: not a label key", i);
	if (!op || (!in && !notin && strcmp(op, "Exists") && strcmp(op, "DoesNotExist")))
		return refuse(p, "spec.selector.matchExpressions[%zu].operator: not In, NotIn, Exists or DoesNotExist", i);
	if (vs && !json_is_null(vs) && !json_is_array(vs))
		return refuse(p, "spec.selector.matchExpressions[%zu].values: not an array", i);
	if ((in || notin) != (json_array_size(vs) > 0))
		return refuse(p, "spec.selector.matchExpressions[%zu].values: %s", i,
			      in || notin ? "In and NotIn need one value or more" : "Exists and DoesNotExist take none");
	r |= *at && put(p, at, ",", 1);
	r |= !strcmp(op, "DoesNotExist") && put(p, at, "!", 1);
	r |= put(p, at, key, strlen(key));
	r |= (in || notin) && put(p, at, in ? " in (" : " notin (", in ? 5 : 8);
	json_array_foreach(vs, j, v) {
		const char *s = kube_text(v);
		if (!s || !labelsel_value_valid(s, strlen(s)))
			return refuse(p, "spec.selector.matchExpressions[%zu].values[%zu]: not a label value", i, j);
		r |= (j && put(p, at, ",", 1)) || put(p, at, s, strlen(s));
	}
	r |= (in || notin) && put(p, at, ")", 1);
	return r ? refuse(p, "spec.selector: over %d bytes as a label selector", LABELSEL_MAX) : 0;
}

/* spec.selector (a metav1.LabelSelector) into p->labels, canonical. */
static int selector(const json_t *sel, struct pconfig *p)
{
	const json_t *ml = json_object_get(sel, "matchLabels"), *me = json_object_get(sel, "matchExpressions"), *v;
	char raw[LABELSEL_MAX + 1], err[200];
	const char *k;
	size_t at = 0, i;
	p->labels[0] = 0;
	if (!sel || json_is_null(sel))
		return 0;
	if (!json_is_object(sel) || (ml && !json_is_null(ml) && !json_is_object(ml)) ||
	    (me && !json_is_null(me) && !json_is_array(me)))
		return refuse(p, "spec.selector: not a label selector (matchLabels, matchExpressions)");
	json_object_foreach((json_t *)ml, k, v) {
		const char *s = kube_text(v);
		if (!labelsel_key_valid(k, strlen(k)) || !s || !labelsel_value_valid(s, strlen(s)))
			return refuse(p, "spec.selector.matchLabels: not a label (a key and a value)");
		if ((at && put(p, &at, ",", 1)) || put(p, &at, k, strlen(k)) || put(p, &at, "=", 1) || put(p, &at, s, strlen(s)))
			return refuse(p, "spec.selector: over %d bytes as a label selector", LABELSEL_MAX);
	}
	json_array_foreach(me, i, v)
		if (expression(v, i, p, &at) < 0)
			return -EINVAL;
	memcpy(raw, p->labels, at + 1);
	if (labelsel_check(raw, at, p->labels, sizeof p->labels, err, sizeof err) < 0)
		return refuse(p, "spec.selector: %s", err);
	return 0;
}

/* spec.payload: data (base64) or json, exactly one, into p->payload. */
static int payload(const json_t *pl, struct pconfig *p)
{
	const json_t *data = json_object_get(pl, "data"), *js = json_object_get(pl, "json");
	const char *s;
	ssize_t n;
	size_t len;
	if (!json_is_object(pl) || !data == !js)
		return refuse(p, "spec.payload: exactly one of data and json");
	if (data) {
		if (!(s = json_string_value(data)))
			return refuse(p, "spec.payload.data: not a string");
		if ((n = base64_decode(s, json_string_length(data), p->payload, sizeof p->payload)) < 0)
			return refuse(p, "spec.payload.data: %s", n == -EMSGSIZE ? "over 1 MiB" : "not base64");
		len = (size_t)n;
	} else if ((len = json_dumpb(js, (char *)p->payload, sizeof p->payload, JSON_COMPACT | JSON_ENCODE_ANY)) >
		   sizeof p->payload) {
		return refuse(p, "spec.payload.json: over 1 MiB written compact");
	}
	if (!len)
		return refuse(p, "spec.payload: empty (a config is 1 byte or more)");
	p->len = len;
	return 0;
}

static int spec(const json_t *sp, struct pconfig *p)
{
	const json_t *v = json_object_get(sp, "schemaVersion");
	const char *s;
	if (!json_is_object(sp))
		return refuse(p, "spec: missing, or not an object");
	if (!(s = kube_text(json_object_get(sp, "consumer"))) || procctl_name_valid(s, PROCCTL_CONSUMER_MAX) < 0)
		return refuse(p, "spec.consumer: not a consumer name (1 to %u of [a-z0-9_.-])", PROCCTL_CONSUMER_MAX);
	memcpy(p->consumer, s, strlen(s) + 1);
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > UINT32_MAX)
		return refuse(p, "spec.schemaVersion: not a whole number of 1 to 4294967295");
	p->version = (uint32_t)json_integer_value(v);
	if ((v = json_object_get(sp, "container")) && !json_is_null(v)) {
		if (!(s = kube_text(v)) || !kube_dns_label_ok(s, strlen(s)))
			return refuse(p, "spec.container: not a container's name (a DNS label)");
		memcpy(p->container, s, strlen(s) + 1);
	}
	if (selector(json_object_get(sp, "selector"), p) < 0)
		return -EINVAL;
	return payload(json_object_get(sp, "payload"), p);
}

static uint32_t count(const json_t *e, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(e, key));
	return v < 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* node's entry of status.nodes into p->mine: what this node wrote, so
 * that the same is not written again. Another's entries are not read. */
static void mine(const json_t *status, const char *node, struct pconfig *p)
{
	const json_t *nodes = json_object_get(status, "nodes"), *e;
	const char *s;
	size_t i;
	json_array_foreach(nodes, i, e) {
		if (!(s = kube_text(json_object_get(e, "node"))) || strcmp(s, node))
			continue;
		p->has_mine = 1;
		p->mine.generation = json_integer_value(json_object_get(e, "observedGeneration"));
		p->mine.matched = count(e, "matched");
		p->mine.applied = count(e, "applied");
		p->mine.pending = count(e, "pending");
		p->mine.failed = count(e, "failed");
		if ((s = kube_text(json_object_get(e, "reason"))) && strlen(s) < sizeof p->mine.reason && kube_token_ok(s, strlen(s)))
			memcpy(p->mine.reason, s, strlen(s) + 1);
		if ((s = kube_text(json_object_get(e, "message"))) && strlen(s) < sizeof p->mine.message)
			memcpy(p->mine.message, s, strlen(s) + 1);
		return;
	}
}

int pconfig_parse(const json_t *obj, const char *node, struct pconfig *p, char *err, size_t errlen)
{
	int r;
	memset(p, 0, offsetof(struct pconfig, payload));
	if ((r = metadata(json_object_get(obj, "metadata"), p, err, errlen)) < 0)
		return r;
	spec(json_object_get(obj, "spec"), p); /* a spec that does not hold is said in p->why */
	if (node)
		mine(json_object_get(obj, "status"), node, p);
	return 0;
}

size_t pconfig_size(const struct pconfig *p)
{
	return offsetof(struct pconfig, payload) + p->len;
}

struct pconfig *pconfig_dup(const struct pconfig *p)
{
	struct pconfig *d = malloc(pconfig_size(p));
	if (d)
		memcpy(d, p, pconfig_size(p));
	return d;
}

/* The object of a line kube_event_parse refused, when its UID can be
 * told: 0 and p holding that alone, to be forgotten; -EINVAL. */
static int forget(const char *line, size_t len, void *out)
{
	struct pconfig *p = out;
	json_t *root = kube_too_many_values(line, len) ? NULL : json_loadb(line, len, JSON_ALLOW_NUL, NULL);
	const json_t *v = json_object_get(json_object_get(json_object_get(root, "object"), "metadata"), "uid");
	const char *s = json_string_value(v);
	int r = s && kube_uid_ok(s, json_string_length(v)) ? 0 : -EINVAL;
	memset(p, 0, offsetof(struct pconfig, payload));
	if (!r)
		memcpy(p->uid, s, 37);
	json_decref(root);
	return r;
}

static int parse(const struct kube_kind *k, const json_t *obj, void *out, char *err, size_t errlen)
{
	return pconfig_parse(obj, k->ctx, out, err, errlen);
}

static const char *rv(const void *out)
{
	return ((const struct pconfig *)out)->rv;
}

static void *dup(const void *obj)
{
	return pconfig_dup(obj);
}

static const char *group(const void *obj)
{
	return ((const struct pconfig *)obj)->ns;
}

static size_t cost(const void *obj)
{
	return ((const struct pconfig *)obj)->len;
}

static void slim(void *obj, const char *why)
{
	struct pconfig *p = obj;
	if (!p->why[0])
		refuse(p, "%s", why);
}

const struct kube_kind pconfig_kind = {"ProcessConfigList", "processconfigs", sizeof(struct pconfig), parse, rv, forget,
				       dup, NULL, group, cost, slim};
