/* config.c - procctl-node's configuration file and flags.
 *
 * The file: one "key = value" a line; blank lines and lines starting with
 * '#' are skipped; "[arbiter KIND]" starts the settings of one arbiter.
 * A key given twice in one file is an error, except grpc_listen, which
 * adds a listener. Durations carry their unit in the key (_ms), lists are
 * comma-separated, booleans are true or false. */
#define _GNU_SOURCE 1
#include "config.h"
#include "desired.h"
#include "httpbody.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procctl_agent.h"

#define MS 1000000ull
#define FILE_MAX (1 << 20)
#define LINE_MAX_ 4096

enum src { SRC_DEFAULT, SRC_FILE, SRC_FLAG };

/* Where a value came from, and the error buffer: what one key's setter
 * needs besides the value. */
struct where {
	enum src src;
	char *err;
	size_t errlen;
	const char *name; /* "FILE:LINE: KEY" or "--flag" */
};

static int fail(const struct where *w, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(w->err, w->errlen, "%s: %s", w->name, msg);
	return -EINVAL;
}

static int copy(const struct where *w, char *dst, size_t cap, const char *v)
{
	size_t n = strlen(v);
	if (n >= cap)
		return fail(w, "longer than %zu bytes", cap - 1);
	memcpy(dst, v, n + 1);
	return 0;
}

static int boolean(const struct where *w, const char *v, int *out)
{
	if (!strcmp(v, "true"))
		*out = 1;
	else if (!strcmp(v, "false"))
		*out = 0;
	else
		return fail(w, "'%s' is not true or false", v);
	return 0;
}

static int number(const struct where *w, const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long n;
	if (!*v || *v == '-' || *v == '+')
		return fail(w, "'%s' is not a whole number", v);
	errno = 0;
	n = strtoull(v, &end, 10);
	if (*end || errno)
		return fail(w, "'%s' is not a whole number", v);
	if (n < lo || n > hi)
		return fail(w, "%llu is outside %llu..%llu", n, (unsigned long long)lo, (unsigned long long)hi);
	*out = n;
	return 0;
}

static int millis(const struct where *w, const char *v, uint64_t lo_ns, uint64_t hi_ns, uint64_t *out_ns)
{
	uint64_t ms;
	int r = number(w, v, lo_ns / MS, hi_ns / MS, &ms);
	if (!r)
		*out_ns = ms * MS;
	return r;
}

static int u32(const struct where *w, const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t n;
	int r = number(w, v, lo, hi, &n);
	if (!r)
		*out = (uint32_t)n;
	return r;
}

/* "unix:/abs/path" or "HOST:PORT" (HOST may be [v6]). */
static int listen_addr(const struct where *w, const char *v)
{
	const char *colon;
	uint64_t port;
	if (!strncmp(v, "unix:", 5))
		return v[5] == '/' ? 0 : fail(w, "'%s': a unix socket needs an absolute path", v);
	colon = strrchr(v, ':');
	if (!colon || colon == v || (*v != '[' && memchr(v, ':', (size_t)(colon - v))))
		return fail(w, "'%s' is neither unix:PATH nor HOST:PORT", v);
	if (*v == '[' && (colon[-1] != ']' || colon - v < 3))
		return fail(w, "'%s': an IPv6 host goes in brackets", v);
	return number(w, colon + 1, 1, 65535, &port);
}

static char *trim(char *s)
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
static int each_item(const struct where *w, const char *v, int (*fn)(const struct where *, void *, const char *),
		     void *arg)
{
	char buf[LINE_MAX_], *p = buf, *item;
	int r;
	if (copy(w, buf, sizeof buf, v))
		return -EINVAL;
	while ((item = strsep(&p, ",")) != NULL) {
		item = trim(item);
		if (!*item)
			return fail(w, "an empty item in '%s'", v);
		if ((r = fn(w, arg, item)) < 0)
			return r;
	}
	return 0;
}

static int add_consumer(const struct where *w, void *arg, const char *item)
{
	struct node_cfg *c = arg;
	size_t i;
	if (procctl_name_valid(item, PROCCTL_CONSUMER_MAX) < 0)
		return fail(w, "'%s' is not a consumer name ([a-z0-9_.-], 1 to %u)", item, PROCCTL_CONSUMER_MAX);
	for (i = 0; i < c->nconsumers; i++)
		if (!strcmp(c->consumers[i], item))
			return fail(w, "'%s' twice", item);
	if (c->nconsumers == NODE_CONSUMERS_MAX)
		return fail(w, "more than %d consumers", NODE_CONSUMERS_MAX);
	strcpy(c->consumers[c->nconsumers++], item);
	return 0;
}

static int hexval(char ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

/* A resource id: a UUID (nvidia-smi's "GPU-" prefix allowed) or 32 hex. */
static int add_resource(const struct where *w, void *arg, const char *item)
{
	struct node_arbiter_cfg *a = arg;
	procctl_resource_t *r;
	const char *p = item;
	int n = 0;
	if (a->nresources == NODE_RESOURCES_MAX)
		return fail(w, "more than %d resources", NODE_RESOURCES_MAX);
	r = &a->resources[a->nresources];
	memset(r, 0, sizeof *r);
	if (!strncmp(p, "GPU-", 4))
		p += 4;
	for (; *p && n < 32; p++) {
		int hi, lo;
		if (*p == '-')
			continue;
		hi = hexval(p[0]);
		lo = p[1] ? hexval(p[1]) : -1;
		if (hi < 0 || lo < 0)
			break;
		r->id[n / 2] = (uint8_t)(hi << 4 | lo);
		n += 2;
		p++;
	}
	if (n != 32 || *p)
		return fail(w, "'%s' is not a resource id (a UUID, or 32 hex digits)", item);
	memcpy(r->kind, a->kind, strlen(a->kind));
	a->nresources++;
	return 0;
}

/* ---- the keys ------------------------------------------------------- */

static int set_global(struct node_cfg *c, const struct where *w, const char *key, const char *v)
{
	if (!strcmp(key, "grpc_listen")) {
		if (listen_addr(w, v))
			return -EINVAL;
		if (c->grpc_listen_src != (int)w->src) { /* a source's first replaces the earlier ones */
			c->ngrpc_listen = 0;
			c->grpc_listen_src = (int)w->src;
		}
		if (c->ngrpc_listen == NODE_LISTEN_MAX)
			return fail(w, "more than %d listeners", NODE_LISTEN_MAX);
		return copy(w, c->grpc_listen[c->ngrpc_listen++], NODE_PATH_MAX, v);
	}
	if (!strcmp(key, "http_listen")) {
		char lo[32];
		if (*v && strspn(v, "0123456789") == strlen(v)) { /* a port alone: loopback */
			snprintf(lo, sizeof lo, "127.0.0.1:%.8s", v);
			v = lo;
		}
		if (!strncmp(v, "unix:", 5))
			return fail(w, "'%s': HTTP listens on HOST:PORT (a PORT alone: 127.0.0.1)", v);
		return *v && listen_addr(w, v) ? -EINVAL : copy(w, c->http_listen, sizeof c->http_listen, v);
	}
	if (!strcmp(key, "http_writes"))
		return boolean(w, v, &c->http_writes);
	if (!strcmp(key, "http_writes_remote"))
		return boolean(w, v, &c->http_writes_remote);
	if (!strcmp(key, "hello"))
		return boolean(w, v, &c->hello);
	if (!strcmp(key, "tls_refresh_s"))
		return u32(w, v, 1, 86400, &c->tls_refresh_s);
	if (!strcmp(key, "consumers")) {
		c->nconsumers = 0;
		return *v ? each_item(w, v, add_consumer, c) : 0;
	}
	if (!strcmp(key, "lease_ms"))
		return millis(w, v, PROCCTL_LEASE_FLOOR_NS, PROCCTL_LEASE_CEIL_NS, &c->lease_ns);
	if (!strcmp(key, "rescan_ms"))
		return millis(w, v, 100 * MS, 86400000 * MS, &c->rescan_ns);
	if (!strcmp(key, "lock_dir"))
		return *v == '/' ? copy(w, c->lock_dir, sizeof c->lock_dir, v) : fail(w, "'%s' is not an absolute path", v);
	if (!strcmp(key, "state_dir"))
		return *v == '/' ? copy(w, c->state_dir, sizeof c->state_dir, v) : fail(w, "'%s' is not an absolute path", v);
	if (!strcmp(key, "tls_cert"))
		return copy(w, c->tls_cert, sizeof c->tls_cert, v);
	if (!strcmp(key, "tls_key"))
		return copy(w, c->tls_key, sizeof c->tls_key, v);
	if (!strcmp(key, "tls_client_ca"))
		return copy(w, c->tls_client_ca, sizeof c->tls_client_ca, v);
	if (!strcmp(key, "insecure_tcp"))
		return boolean(w, v, &c->insecure_tcp);
	if (!strcmp(key, "insecure_tcp_writes"))
		return boolean(w, v, &c->insecure_tcp_writes);
	if (!strcmp(key, "max_regions"))
		return u32(w, v, 1, 1 << 20, &c->max_regions);
	if (!strcmp(key, "max_per_process"))
		return u32(w, v, 1, 512, &c->max_per_process);
	if (!strcmp(key, "max_message_bytes"))
		return u32(w, v, 4096, 64 << 20, &c->max_message_bytes);
	if (!strcmp(key, "max_watchers"))
		return u32(w, v, 1, 1 << 20, &c->max_watchers);
	if (!strcmp(key, "watch_history"))
		return u32(w, v, 64, 1 << 20, &c->watch_history);
	if (!strcmp(key, "log_level")) {
		if (strcmp(v, "info") && strcmp(v, "debug"))
			return fail(w, "'%s' is not info or debug", v);
		c->log_debug = !strcmp(v, "debug");
		return 0;
	}
	return fail(w, w->src == SRC_FLAG ? "no such flag" : "no such key");
}

static int set_arbiter(struct node_arbiter_cfg *a, const struct where *w, const char *key, const char *v)
{
	if (!strcmp(key, "consumer"))
		return procctl_name_valid(v, PROCCTL_CONSUMER_MAX) < 0
			       ? fail(w, "'%s' is not a consumer name ([a-z0-9_.-], 1 to %u)", v, PROCCTL_CONSUMER_MAX)
			       : copy(w, a->consumer, sizeof a->consumer, v);
	if (!strcmp(key, "hold_ms"))
		return millis(w, v, 1 * MS, 86400000 * MS, &a->hold_ns);
	if (!strcmp(key, "process_bound"))
		return boolean(w, v, &a->process_bound);
	if (!strcmp(key, "resources")) {
		a->nresources = 0;
		return each_item(w, v, add_resource, a);
	}
	if (!strcmp(key, "policy"))
		return strcmp(v, "round_robin") ? fail(w, "'%s': the one policy is round_robin", v) : 0;
	return fail(w, "no such key in an [arbiter] section");
}

static int set_desired(struct node_desired_cfg *d, const struct where *w, const char *key, const char *v)
{
	size_t n = strlen(v);
	if (!strcmp(key, "consumer"))
		return procctl_name_valid(v, PROCCTL_CONSUMER_MAX) < 0
			       ? fail(w, "'%s' is not a consumer name ([a-z0-9_.-], 1 to %u)", v, PROCCTL_CONSUMER_MAX)
			       : copy(w, d->sel.consumer, sizeof d->sel.consumer, v);
	if (!strcmp(key, "schema"))
		return u32(w, v, 1, UINT32_MAX, &d->sel.version);
	if (!strcmp(key, "pod"))
		return copy(w, d->sel.pod_uid, sizeof d->sel.pod_uid, v);
	if (!strcmp(key, "container"))
		return copy(w, d->sel.container_id, sizeof d->sel.container_id, v);
	if (!strcmp(key, "data") || !strcmp(key, "data_base64")) {
		ssize_t len;
		if (d->has_data)
			return fail(w, "give the config once: data or data_base64");
		if (key[4]) {
			if (n * 3 / 4 > sizeof d->data || (len = http_unbase64(v, n, d->data)) < 0)
				return fail(w, "not base64 of at most %d bytes", NODE_DESIRED_DATA_MAX);
		} else {
			if (n > sizeof d->data)
				return fail(w, "over %d bytes (data_base64 for more, or for bytes that are not text)",
					    NODE_DESIRED_DATA_MAX);
			memcpy(d->data, v, n);
			len = (ssize_t)n;
		}
		if (!len)
			return fail(w, "empty: a desired config has 1 to %d bytes", NODE_DESIRED_DATA_MAX);
		d->len = (size_t)len;
		d->has_data = 1;
		return 0;
	}
	return fail(w, "no such key in a [desired] section (consumer, schema, pod, container, data, data_base64)");
}

/* What a [desired] section (the last of c's) must have, once it has
 * ended: 0, or -EINVAL. */
static int desired_done(const struct node_cfg *c, const struct node_desired_cfg *d, const char *name, char *err,
			size_t errlen)
{
	struct ev_key k;
	const char *why = NULL;
	size_t i;
	if (!d)
		return 0;
	if (!d->sel.consumer[0]) {
		snprintf(err, errlen, "%s: [desired %s]: consumer: required", name, d->name);
		return -EINVAL;
	}
	if (!d->has_data) {
		snprintf(err, errlen, "%s: [desired %s]: data or data_base64: missing", name, d->name);
		return -EINVAL;
	}
	if (ev_key_from(&k, 0, d->sel.consumer, d->sel.version, d->sel.pod_uid, d->sel.container_id, &why) < 0 ||
	    desired_check(&k, &why) < 0) {
		snprintf(err, errlen, "%s: [desired %s]: %s", name, d->name, why ? why : "a bad selector");
		return -EINVAL;
	}
	for (i = 0; &c->desired[i] != d; i++)
		if (desired_conflict(&c->desired[i].sel, &d->sel)) {
			snprintf(err, errlen,
				 "%s: [desired %s]: %s [desired %s] (one process would match both, at the same precedence)",
				 name, d->name, ev_key_same(&c->desired[i].sel, &d->sel) ? "the same selector as" : "overlaps",
				 c->desired[i].name);
			return -EINVAL;
		}
	return 0;
}

void node_cfg_defaults(struct node_cfg *c)
{
	memset(c, 0, sizeof *c);
	snprintf(c->grpc_listen[0], sizeof c->grpc_listen[0], "unix:%s", NODE_DEFAULT_SOCKET);
	c->ngrpc_listen = 1;
	snprintf(c->http_listen, sizeof c->http_listen, "127.0.0.1:9464");
	c->lease_ns = 10000 * MS;
	c->rescan_ns = 60000 * MS;
	c->hello = 1;
	c->tls_refresh_s = 60;
	snprintf(c->lock_dir, sizeof c->lock_dir, "%s", PROCCTL_LOCK_DIR_DEFAULT);
	snprintf(c->state_dir, sizeof c->state_dir, "/var/lib/procctl");
	c->max_regions = 4096;
	c->max_per_process = 8;
	c->max_message_bytes = 4 << 20;
	c->max_watchers = 4096;
	c->watch_history = 16384;
}

int node_cfg_parse(struct node_cfg *c, const char *text, size_t len, const char *name, char *err, size_t errlen)
{
	char line[LINE_MAX_], where[LINE_MAX_ + 64], seen_keys[64][40];
	struct node_arbiter_cfg *arb = NULL;
	struct node_desired_cfg *des = NULL;
	const char *p = text, *end = text + len;
	size_t nseen = 0, i;
	int lineno = 0, r;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		struct where w = {SRC_FILE, err, errlen, where};
		char *s, *eq, *key, *val;

		lineno++;
		snprintf(where, sizeof where, "%s:%d", name, lineno);
		if (n >= sizeof line)
			return fail(&w, "a line over %zu bytes", sizeof line - 1);
		memcpy(line, p, n);
		line[n] = 0;
		p += n + 1;
		if (memchr(line, 0, n))
			return fail(&w, "a NUL byte");
		s = trim(line);
		if (!*s || *s == '#')
			continue;
		if (*s == '[') {
			size_t sl = strlen(s);
			char *in, *kind;
			int is_desired;
			if (s[sl - 1] != ']')
				return fail(&w, "'%s' is not a section ([arbiter KIND] or [desired NAME])", s);
			s[sl - 1] = 0;
			in = trim(s + 1);
			is_desired = !strncmp(in, "desired", 7) && (in[7] == ' ' || in[7] == '\t');
			if (!is_desired && (strncmp(in, "arbiter", 7) || (in[7] != ' ' && in[7] != '\t')))
				return fail(&w, "'[%s]' is not a section ([arbiter KIND] or [desired NAME])", in);
			if ((r = desired_done(c, des, name, err, errlen)) < 0)
				return r;
			arb = NULL;
			des = NULL;
			kind = trim(in + 8);
			nseen = 0; /* keys are per section */
			if (is_desired) {
				if (procctl_name_valid(kind, PROCCTL_CONSUMER_MAX) < 0)
					return fail(&w, "'%s' is not a name for a desired config ([a-z0-9_.-], 1 to %u)", kind,
						    PROCCTL_CONSUMER_MAX);
				for (i = 0; i < c->ndesired; i++)
					if (!strcmp(c->desired[i].name, kind))
						return fail(&w, "[desired %s] twice", kind);
				if (c->ndesired == NODE_DESIRED_MAX)
					return fail(&w, "more than %d desired configs", NODE_DESIRED_MAX);
				des = &c->desired[c->ndesired++];
				memset(des, 0, sizeof *des);
				strcpy(des->name, kind);
				des->sel.version = 1;
				continue;
			}
			if (procctl_name_valid(kind, PROCCTL_KIND_MAX) < 0)
				return fail(&w, "'%s' is not a resource kind ([a-z0-9_.-], 1 to %u)", kind, PROCCTL_KIND_MAX);
			for (i = 0; i < c->narbiters; i++)
				if (!strcmp(c->arbiters[i].kind, kind))
					return fail(&w, "[arbiter %s] twice", kind);
			if (c->narbiters == NODE_ARBITERS_MAX)
				return fail(&w, "more than %d arbiters", NODE_ARBITERS_MAX);
			arb = &c->arbiters[c->narbiters++];
			memset(arb, 0, sizeof *arb);
			strcpy(arb->kind, kind);
			arb->hold_ns = 1000 * MS;
			continue;
		}
		eq = strchr(s, '=');
		if (!eq)
			return fail(&w, "'%s' is not key = value", s);
		*eq = 0;
		key = trim(s);
		val = trim(eq + 1);
		snprintf(where, sizeof where, "%s:%d: %s", name, lineno, key);
		if (!*key)
			return fail(&w, "a value without a key");
		if (strcmp(key, "grpc_listen")) {
			for (i = 0; i < nseen; i++)
				if (!strcmp(seen_keys[i], key))
					return fail(&w, "given twice");
			if (nseen < 64)
				snprintf(seen_keys[nseen++], sizeof seen_keys[0], "%s", key);
		}
		r = arb ? set_arbiter(arb, &w, key, val) : des ? set_desired(des, &w, key, val) : set_global(c, &w, key, val);
		if (r)
			return r;
	}
	return desired_done(c, des, name, err, errlen);
}

int node_cfg_load(struct node_cfg *c, const char *path, char *err, size_t errlen)
{
	char *buf;
	size_t len = 0;
	ssize_t n = 0;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), r; /* a FIFO would block */
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "%s: not a regular file", path);
		return -EINVAL;
	}
	buf = malloc(FILE_MAX + 1);
	if (!buf) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	while (len <= FILE_MAX && (n = read(fd, buf + len, FILE_MAX + 1 - len)) > 0)
		len += (size_t)n;
	r = n < 0 ? -errno : 0;
	close(fd);
	if (r)
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
	else if (len > FILE_MAX)
		r = -EFBIG, snprintf(err, errlen, "%s: over %d bytes", path, FILE_MAX);
	else
		r = node_cfg_parse(c, buf, len, path, err, errlen);
	free(buf);
	return r;
}

int node_cfg_set(struct node_cfg *c, const char *key, const char *value, char *err, size_t errlen)
{
	char flag[64];
	struct where w = {SRC_FLAG, err, errlen, flag};
	size_t i;
	snprintf(flag, sizeof flag, "--%s", key);
	for (i = 0; flag[i]; i++)
		if (flag[i] == '_')
			flag[i] = '-';
	return set_global(c, &w, key, value);
}

int node_cfg_check(const struct node_cfg *c, char *err, size_t errlen)
{
	int tls = !!c->tls_cert[0] + !!c->tls_key[0] + !!c->tls_client_ca[0];
	size_t i;
	if (tls && tls != 3) {
		snprintf(err, errlen, "tls_cert, tls_key and tls_client_ca go together (mTLS): %d of 3 given", tls);
		return -EINVAL;
	}
	if (c->http_writes_remote && !c->http_writes) {
		snprintf(err, errlen, "http_writes_remote needs http_writes");
		return -EINVAL;
	}
	if (c->insecure_tcp_writes && !c->insecure_tcp) {
		snprintf(err, errlen, "insecure_tcp_writes needs insecure_tcp");
		return -EINVAL;
	}
	if (!c->ngrpc_listen) {
		snprintf(err, errlen, "grpc_listen: no listener");
		return -EINVAL;
	}
	for (i = 0; i < c->narbiters; i++) {
		const struct node_arbiter_cfg *a = &c->arbiters[i];
		size_t j;
		if (!a->consumer[0]) {
			snprintf(err, errlen, "[arbiter %s]: consumer: missing (whose processes it grants to)", a->kind);
			return -EINVAL;
		}
		for (j = 0; j < c->nconsumers && strcmp(c->consumers[j], a->consumer); j++)
			;
		if (c->nconsumers && j == c->nconsumers) {
			snprintf(err, errlen, "[arbiter %s]: consumer %s is not one of consumers", a->kind, a->consumer);
			return -EINVAL;
		}
	}
	for (i = 0; i < c->ngrpc_listen; i++)
		if (strncmp(c->grpc_listen[i], "unix:", 5) && !tls && !c->insecure_tcp) {
			snprintf(err, errlen, "grpc_listen %s: TCP needs tls_cert, tls_key and tls_client_ca, or insecure_tcp = true",
				 c->grpc_listen[i]);
			return -EINVAL;
		}
	return 0;
}
