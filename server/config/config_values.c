/* SPDX-License-Identifier: Apache-2.0 */
/* config_values.c - the values of procctl-node's config keys: numbers,
 * durations, booleans, lists, listen addresses, resource ids; each
 * refusal says what is wrong with the value (config_int.h). */
#define _GNU_SOURCE 1
#include "config_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "procctl_agent.h"

int cfg_fail(const struct where *w, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(w->err, w->errlen, "%s: %s", w->name, msg);
	return -EINVAL;
}

int cfg_copy(const struct where *w, char *dst, size_t cap, const char *v)
{
	size_t n = strlen(v);
	if (n >= cap)
		return cfg_fail(w, "longer than %zu bytes", cap - 1);
	memcpy(dst, v, n + 1);
	return 0;
}

int cfg_boolean(const struct where *w, const char *v, int *out)
{
	if (!strcmp(v, "true"))
		*out = 1;
	else if (!strcmp(v, "false"))
		*out = 0;
	else
		return cfg_fail(w, "'%s' is not true or false", v);
	return 0;
}

static int cfg_number(const struct where *w, const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long n;
	if (!*v || *v == '-' || *v == '+')
		return cfg_fail(w, "'%s' is not a whole number", v);
	errno = 0;
	n = strtoull(v, &end, 10);
	if (*end || errno)
		return cfg_fail(w, "'%s' is not a whole number", v);
	if (n < lo || n > hi)
		return cfg_fail(w, "%llu is outside %llu..%llu", n, (unsigned long long)lo, (unsigned long long)hi);
	*out = n;
	return 0;
}

int cfg_millis(const struct where *w, const char *v, uint64_t lo_ns, uint64_t hi_ns, uint64_t *out_ns)
{
	uint64_t ms = 0; /* gcc 12 -O3 cannot see that r != 0 leaves it unused */
	int r = cfg_number(w, v, lo_ns / MS, hi_ns / MS, &ms);
	if (!r)
		*out_ns = ms * MS;
	return r;
}

int cfg_u32(const struct where *w, const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t n = 0; /* the same */
	int r = cfg_number(w, v, lo, hi, &n);
	if (!r)
		*out = (uint32_t)n;
	return r;
}

/* "unix:/abs/path" or "HOST:PORT" (HOST may be [v6]). */
int cfg_listen_addr(const struct where *w, const char *v)
{
	const char *colon;
	uint64_t port;
	if (!strncmp(v, "unix:", 5))
		return v[5] == '/' ? 0 : cfg_fail(w, "'%s': a unix socket needs an absolute path", v);
	colon = strrchr(v, ':');
	if (!colon || colon == v || (*v != '[' && memchr(v, ':', (size_t)(colon - v))))
		return cfg_fail(w, "'%s' is neither unix:PATH nor HOST:PORT", v);
	if (*v == '[' && (colon[-1] != ']' || colon - v < 3))
		return cfg_fail(w, "'%s': an IPv6 host goes in brackets", v);
	if (!colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1) || strlen(colon + 1) > 5)
		return cfg_fail(w, "'%s' is neither unix:PATH nor HOST:PORT (PORT 0 to 65535)", v);
	return cfg_number(w, colon + 1, 0, 65535, &port); /* 0: one the kernel picks, said when listening */
}

char *cfg_trim(char *s)
{
	char *e;
	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = 0;
	return s;
}

/* Comma-separated items, trimmed, none empty: each to fn. */
int cfg_each_item(const struct where *w, const char *v, int (*fn)(const struct where *, void *, const char *),
		     void *arg)
{
	char buf[LINE_MAX_], *p = buf, *item;
	int r;
	if (cfg_copy(w, buf, sizeof buf, v))
		return -EINVAL;
	while ((item = strsep(&p, ",")) != NULL) {
		item = cfg_trim(item);
		if (!*item)
			return cfg_fail(w, "an empty item in '%s'", v);
		if ((r = fn(w, arg, item)) < 0)
			return r;
	}
	return 0;
}

int cfg_add_consumer(const struct where *w, void *arg, const char *item)
{
	struct node_cfg *c = arg;
	size_t i;
	if (procctl_name_valid(item, PROCCTL_CONSUMER_MAX) < 0)
		return cfg_fail(w, "'%s' is not a consumer name ([a-z0-9_.-], 1 to %u)", item, PROCCTL_CONSUMER_MAX);
	for (i = 0; i < c->nconsumers; i++)
		if (!strcmp(c->consumers[i], item))
			return cfg_fail(w, "'%s' twice", item);
	if (c->nconsumers == NODE_CONSUMERS_MAX)
		return cfg_fail(w, "more than %d consumers", NODE_CONSUMERS_MAX);
	strcpy(c->consumers[c->nconsumers++], item);
	return 0;
}

/* A resource id: a UUID (nvidia-smi's "GPU-" prefix allowed) or 32 hex. */
int cfg_add_resource(const struct where *w, void *arg, const char *item)
{
	struct node_arbiter_cfg *a = arg;
	procctl_resource_t *r;
	if (a->nresources == NODE_RESOURCES_MAX)
		return cfg_fail(w, "more than %d resources", NODE_RESOURCES_MAX);
	r = &a->resources[a->nresources];
	memset(r, 0, sizeof *r);
	if (procctl_resource_id_parse(item, r->id) < 0)
		return cfg_fail(w, "'%s' is not a resource id (a UUID, or 32 hex digits)", item);
	a->nresources++; /* its kind: when the section ends */
	return 0;
}

