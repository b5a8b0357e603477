/* SPDX-License-Identifier: Apache-2.0 */
/* desired_file.c - the desired-config store's file, desired.store
 * (its format is in desired.h): written atomically, read back and checked
 * like a request, set aside when damaged, and older formats read. */
#include "desired.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "procctl/v1/node.pb-c.h"
#include "desired_int.h"
#include "sys/nodelock.h"
#include "procctl_agent.h"

#define FILE_NAME "desired.store"
#define V0_NAME "desired.pb" /* before format 1: a ListDesiredConfigsResponse */
#define FILE_MAX (128u << 20) /* above what the largest limits let a store hold */
#define MAGIC "PCDSTORE"
#define FORMAT 5 /* 1: no pid_start; 2: no pid_image; 3: no namespace, label selector; 4: no created */

/* The length of the state directory's path at the head of s->path. */
static int dir_len(const struct desired_store *s)
{
	return (int)(strlen(s->path) - sizeof FILE_NAME);
}

/* ---- the file -------------------------------------------------------- */

static void put32(uint8_t **p, uint32_t v)
{
	size_t i;
	for (i = 0; i < 4; i++)
		*(*p)++ = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t **p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p, (uint32_t)(v >> 32));
}

static void put_bytes(uint8_t **p, const void *b, size_t n)
{
	memcpy(*p, b, n);
	*p += n;
}

int desired_encode(const struct desired_store *s, uint8_t **out, size_t *outlen)
{
	size_t i, len = 8 + 4 + 4 + 8 + 4;
	uint8_t *buf, *p;
	for (i = 0; i < s->n; i++) {
		const struct desired *d = &s->v[i];
		len += 8 + 8 + 4 + 8 + 8 + 4 + 4 + 4 + 3 + strlen(d->sel.consumer) + strlen(d->sel.pod_uid) +
		       strlen(d->sel.container_id) + strlen(d->source) + strlen(d->pod.ns) + strlen(d->pod.labels) + d->len;
	}
	if (!(p = buf = malloc(len)))
		return -ENOMEM;
	put_bytes(&p, MAGIC, 8);
	put32(&p, FORMAT);
	put32(&p, (uint32_t)s->n);
	put64(&p, s->revision);
	for (i = 0; i < s->n; i++) {
		const struct desired *d = &s->v[i];
		const char *str[6] = {d->sel.consumer, d->sel.pod_uid, d->sel.container_id, d->source, d->pod.ns, d->pod.labels};
		size_t k;
		put64(&p, d->revision);
		put64(&p, d->created);
		put32(&p, (uint32_t)d->sel.pid);
		put64(&p, d->sel.pid_start);
		put64(&p, d->sel.pid_image);
		put32(&p, d->sel.version);
		put32(&p, (uint32_t)d->len);
		for (k = 0; k < 5; k++)
			*p++ = (uint8_t)strlen(str[k]);
		*p++ = (uint8_t)strlen(d->pod.labels);
		*p++ = (uint8_t)(strlen(d->pod.labels) >> 8);
		for (k = 0; k < 6; k++)
			put_bytes(&p, str[k], strlen(str[k]));
		put_bytes(&p, d->payload, d->len);
	}
	put32(&p, procctl_crc32c(0, buf, (size_t)(p - buf)));
	*out = buf;
	*outlen = len;
	return 0;
}

/* Write buf to name in the store's directory, atomically and durably: a
 * temp file, fsync, rename, fsync of the directory. 0, or -EIO (err says
 * which path and why). */
static int write_atomic(const struct desired_store *s, const char *name, const uint8_t *buf, size_t len, char *err,
			size_t errlen)
{
	char tmp[64];
	const char *failed = tmp;
	size_t off = 0;
	int fd;
	snprintf(tmp, sizeof tmp, "%s.tmp", name);
	fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	while (off < len) {
		ssize_t w = write(fd, buf + off, len - off);
		if (w < 0)
			goto fail;
		off += (size_t)w;
	}
	if (fsync(fd) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	failed = name;
	if (renameat(s->dirfd, tmp, s->dirfd, name) < 0)
		goto fail;
	failed = ".";
	if (fsync(s->dirfd) < 0)
		goto fail;
	return 0;
fail:
	snprintf(err, errlen, "%.*s/%s: %s", dir_len(s), s->path, failed, strerror(errno));
	if (fd >= 0)
		close(fd);
	if (failed == tmp)
		unlinkat(s->dirfd, tmp, 0);
	return -EIO;
}

/* Write the whole store to its file (none kept: nothing): s->save. 0;
 * -ENOMEM; -EIO (err says which path and why). */
static int desired_save(const struct desired_store *s, char *err, size_t errlen)
{
	uint8_t *buf;
	size_t len;
	int r;
	if (!s->path[0])
		return 0;
	if (s->fence && !nodelock_current(s->fence)) {
		snprintf(err, errlen, "%s is no longer this daemon's (deleted or replaced): not written", s->fence->path);
		return -EIO;
	}
	if (desired_encode(s, &buf, &len) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = write_atomic(s, FILE_NAME, buf, len, err, errlen);
	free(buf);
	return r;
}

/* Check config i of a file and add it to s (which holds those before
 * it): 0, -EINVAL or -ENOMEM with err. The file's bytes are the daemon's
 * own, but are checked like a request's; overlaps() checks them together. */
static int check_add(struct desired_store *s, size_t i, const struct desired *c, uint64_t store_rev, char *err,
		     size_t errlen)
{
	const char *why = NULL;
	if (desired_check(&c->sel, &why) < 0) {
		snprintf(err, errlen, "config %zu: %s", i, why);
		return -EINVAL;
	}
	if (!c->revision || c->revision > REVISION_MAX || c->revision > store_rev) {
		snprintf(err, errlen, "config %zu: revision %llu (1 to the store's %llu, at most 2^62)", i,
			 (unsigned long long)c->revision, (unsigned long long)store_rev);
		return -EINVAL;
	}
	if (!c->created || c->created > c->revision) {
		snprintf(err, errlen, "config %zu: created at %llu (1 to its revision %llu)", i,
			 (unsigned long long)c->created, (unsigned long long)c->revision);
		return -EINVAL;
	}
	if (c->source[0] && procctl_name_valid(c->source, sizeof c->source - 1) < 0) {
		snprintf(err, errlen, "config %zu: source is not a section name", i);
		return -EINVAL;
	}
	if (!c->len || c->len > PROCCTL_PAYLOAD_MAX) {
		snprintf(err, errlen, "config %zu: payload of %zu bytes (1 to %u)", i, c->len, (unsigned)PROCCTL_PAYLOAD_MAX);
		return -EINVAL;
	}
	if (desired_append(s, &c->sel, &c->pod, c->payload, c->len, c->revision, c->source) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->v[s->n - 1].created = c->created;
	return 0;
}

static int cmp_num(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

/* By what sets a config's precedence (desired_conflict): two configs that
 * could not both be set are equal here. */
static int cmp_group(const void *pa, const void *pb)
{
	const struct desired *a = *(const struct desired *const *)pa, *b = *(const struct desired *const *)pb;
	int r;
	if ((r = strcmp(a->sel.consumer, b->sel.consumer)) || (r = cmp_num(a->sel.version, b->sel.version)) ||
	    (r = cmp_num(a->level, b->level)))
		return r;
	switch (a->level) {
	case DESIRED_PID:
		return cmp_num((uint64_t)a->sel.pid, (uint64_t)b->sel.pid);
	case DESIRED_CONTAINER:
		return strcmp(a->sel.container_id, b->sel.container_id);
	case DESIRED_POD:
		return strcmp(a->sel.pod_uid, b->sel.pod_uid);
	case DESIRED_LABELS:
		return (r = strcmp(a->pod.ns, b->pod.ns)) ? r : strcmp(a->pod.labels, b->pod.labels);
	case DESIRED_NAMESPACE:
		return strcmp(a->pod.ns, b->pod.ns);
	case DESIRED_CONSUMER:
		break;
	}
	return 0;
}

/* 0 when no two configs of a file's s could not both be set, else
 * -EINVAL naming them (or -ENOMEM) in err. Only configs of one group
 * (cmp_group) are compared: each with each, a store of 65,536 took minutes
 * to load. */
static int overlaps(const struct desired_store *s, char *err, size_t errlen)
{
	const struct desired **by = malloc((s->n ? s->n : 1) * sizeof *by);
	size_t i, j, k, m;
	if (!by) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < s->n; i++)
		by[i] = &s->v[i];
	qsort(by, s->n, sizeof *by, cmp_group);
	for (i = 0; i < s->n; i = j) {
		for (j = i + 1; j < s->n && !cmp_group(&by[i], &by[j]); j++)
			;
		for (k = i; k < j; k++)
			for (m = k + 1; m < j; m++)
				if (desired_conflict(&by[k]->sel, &by[k]->pod, &by[m]->sel, &by[m]->pod)) {
					size_t a = (size_t)(by[k] - s->v), b = (size_t)(by[m] - s->v);
					snprintf(err, errlen, "config %zu overlaps config %zu", a > b ? a : b, a > b ? b : a);
					free(by);
					return -EINVAL;
				}
	}
	free(by);
	return 0;
}

/* A reader of the file's bytes: short reads fail, once. */
struct rd {
	const uint8_t *p, *end;
	int short_;
};

static const uint8_t *take(struct rd *r, size_t n)
{
	const uint8_t *at = r->p;
	if (r->short_ || (size_t)(r->end - r->p) < n) {
		r->short_ = 1;
		return NULL;
	}
	r->p += n;
	return at;
}

static uint32_t get32(struct rd *r)
{
	const uint8_t *b = take(r, 4);
	return b ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24 : 0;
}

static uint64_t get64(struct rd *r)
{
	uint64_t lo = get32(r);
	return lo | (uint64_t)get32(r) << 32;
}

/* A string of n bytes into buf (cap bytes with its NUL): 0, or -1 when
 * it does not fit, holds a NUL, or the file ends. */
static int get_str(struct rd *r, size_t n, char *buf, size_t cap)
{
	const uint8_t *b = n < cap ? take(r, n) : NULL;
	if (!b || memchr(b, 0, n))
		return -1;
	memcpy(buf, b, n);
	buf[n] = 0;
	return 0;
}

/* Config i of a format-1 file into c (its payload points into the file). */
/* A pid config bound to no process (an older store's: its process may be
 * long gone and its pid another's): dropped, and counted. 1 dropped. */
static int unbound(struct desired_store *s, const struct selector *k)
{
	if (k->pid <= 0 || k->pid_start)
		return 0;
	s->unbound_dropped++;
	return 1;
}

static int get_config(struct rd *r, uint32_t format, size_t i, struct desired *c, char *err, size_t errlen)
{
	struct selector *k = &c->sel;
	uint8_t lens[7] = {0};
	char ns[PODSEL_NS_MAX + 1], labels[LABELSEL_MAX + 1], why[400];
	const uint8_t *l;
	memset(c, 0, sizeof *c);
	c->revision = get64(r);
	c->created = format >= 5 ? get64(r) : c->revision;
	k->pid = (pid_t)get32(r);
	if (format >= 2)
		k->pid_start = get64(r);
	if (format >= 3)
		k->pid_image = get64(r);
	k->version = get32(r);
	c->len = get32(r);
	if (!(l = take(r, format >= 4 ? 7 : 4)))
		goto short_;
	memcpy(lens, l, format >= 4 ? 7 : 4);
	if (get_str(r, lens[0], k->consumer, sizeof k->consumer) || get_str(r, lens[1], k->pod_uid, sizeof k->pod_uid) ||
	    get_str(r, lens[2], k->container_id, sizeof k->container_id) ||
	    get_str(r, lens[3], c->source, sizeof c->source) || get_str(r, lens[4], ns, sizeof ns) ||
	    get_str(r, (size_t)lens[5] | (size_t)lens[6] << 8, labels, sizeof labels)) {
		if (r->short_)
			goto short_;
		snprintf(err, errlen, "config %zu: a name too long or holding a NUL byte", i);
		return -EINVAL;
	}
	if (podsel_from(&c->pod, ns, labels, why, sizeof why) < 0) {
		snprintf(err, errlen, "config %zu: %s", i, why);
		return -EINVAL;
	}
	if (strcmp(c->pod.labels, labels)) {
		snprintf(err, errlen, "config %zu: a label selector not in its canonical form", i);
		return -EINVAL;
	}
	if (c->len > PROCCTL_PAYLOAD_MAX || !(c->payload = (uint8_t *)(uintptr_t)take(r, c->len)))
		goto short_;
	return 0;
short_:
	snprintf(err, errlen, "config %zu: cut short", i);
	return -EINVAL;
}

int desired_parse(struct desired_store *s, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	struct rd r = {buf, buf + len, 0};
	struct desired c;
	uint32_t format, n, crc;
	uint64_t rev;
	size_t i;
	int rc = 0;
	if (len < 8 + 4 + 4 + 8 + 4 || memcmp(buf, MAGIC, 8)) {
		snprintf(err, errlen, "not a desired-config store (no " MAGIC " header)");
		return -EINVAL;
	}
	r.end -= 4;
	crc = (uint32_t)buf[len - 4] | (uint32_t)buf[len - 3] << 8 | (uint32_t)buf[len - 2] << 16 |
	      (uint32_t)buf[len - 1] << 24;
	if (procctl_crc32c(0, buf, len - 4) != crc) {
		snprintf(err, errlen, "checksum mismatch (a torn or altered file)");
		return -EINVAL;
	}
	take(&r, 8);
	format = get32(&r);
	n = get32(&r);
	rev = get64(&r);
	if (format < 1 || format > FORMAT) {
		snprintf(err, errlen, "format %u (this procctl-node reads formats 1 to %u: a newer one wrote it)", format,
			 FORMAT);
		return -EINVAL;
	}
	if (rev > REVISION_MAX) {
		snprintf(err, errlen, "revision %llu: over 2^62", (unsigned long long)rev);
		return -EINVAL;
	}
	for (i = 0; i < n && !rc; i++)
		if (!(rc = get_config(&r, format, i, &c, err, errlen)) && !unbound(s, &c.sel))
			rc = check_add(s, i, &c, rev, err, errlen);
	if (!rc)
		rc = overlaps(s, err, errlen);
	if (!rc && r.p != r.end) {
		snprintf(err, errlen, "%zu bytes after the last config", (size_t)(r.end - r.p));
		rc = -EINVAL;
	}
	s->revision = rev;
	if (rc)
		desired_forget(s);
	return rc < 0 ? -EINVAL : 0;
}

int desired_parse_v0(struct desired_store *s, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	Procctl__V1__ListDesiredConfigsResponse *m = procctl__v1__list_desired_configs_response__unpack(NULL, len, buf);
	size_t i;
	int r = 0;
	if (!m) {
		snprintf(err, errlen, "not a serialized procctl.v1.ListDesiredConfigsResponse");
		return -EINVAL;
	}
	if (m->revision > REVISION_MAX) {
		snprintf(err, errlen, "revision %llu: over 2^62", (unsigned long long)m->revision);
		r = -EINVAL;
	}
	for (i = 0; i < m->n_configs && !r; i++) {
		const Procctl__V1__DesiredConfig *cm = m->configs[i];
		const Procctl__V1__Selector *sm = cm->selector;
		const char *why = NULL;
		struct desired c;
		memset(&c, 0, sizeof c);
		if (!sm || selector_from_stored(&c.sel, sm->pid, sm->consumer, sm->schema_version, sm->pod_uid,
						sm->container_id, &why) < 0) {
			snprintf(err, errlen, "config %zu: %s", i, why ? why : "no selector");
			r = -EINVAL;
			break;
		}
		if (strlen(cm->source) >= sizeof c.source) {
			snprintf(err, errlen, "config %zu: source is not a section name", i);
			r = -EINVAL;
			break;
		}
		strcpy(c.source, cm->source);
		c.revision = c.created = cm->revision;
		c.len = cm->payload.len;
		c.payload = cm->payload.data;
		if (!unbound(s, &c.sel))
			r = check_add(s, i, &c, m->revision, err, errlen);
	}
	if (!r)
		r = overlaps(s, err, errlen);
	s->revision = m->revision;
	protobuf_c_message_free_unpacked(&m->base, NULL);
	if (r)
		desired_forget(s);
	return r < 0 ? -EINVAL : 0;
}

/* Read name (in the store's directory) into s with parse: 0; -ENOENT no such file; else -errno or
 * -EINVAL with err. */
static int load_file(struct desired_store *s, const char *name,
		     int (*parse)(struct desired_store *, const uint8_t *, size_t, char *, size_t), char *err,
		     size_t errlen)
{
	struct stat st;
	uint8_t *buf;
	ssize_t n;
	size_t len = 0;
	char why[200], path[DESIRED_PATH_MAX];
	int fd, r;
	snprintf(path, sizeof path, "%.*s/%s", dir_len(s), s->path, name);
	if ((fd = openat(s->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)) < 0) {
		r = -errno;
		if (r != -ENOENT)
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > FILE_MAX) {
		close(fd);
		snprintf(err, errlen, "%s: not a regular file of at most %u bytes", path, FILE_MAX);
		return -EINVAL;
	}
	if (!(buf = malloc((size_t)st.st_size + 1))) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	while ((n = read(fd, buf + len, (size_t)st.st_size + 1 - len)) > 0)
		len += (size_t)n;
	r = n < 0 ? -errno : 0;
	close(fd);
	if (r)
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
	else if ((r = parse(s, buf, len, why, sizeof why)) < 0)
		snprintf(err, errlen, "%s: corrupt (%s)", path, why);
	free(buf);
	return r;
}

/* A file the daemon wrote but cannot read (damaged, or too large) is
 * renamed PATH.bad-SECONDS, not deleted, and the daemon starts without
 * it: 0 and s->set_aside, s->set_aside_why; -EIO when it cannot be
 * renamed (starting then would overwrite it). */
static int set_aside(struct desired_store *s, const char *name, char *err, size_t errlen)
{
	char why[sizeof s->set_aside_why], aside[64];
	long long now = (long long)time(NULL);
	int i, r = -1;
	snprintf(why, sizeof why, "%s", err);
	desired_forget(s);
	/* Never over an earlier one: .bad-SECONDS, then .bad-SECONDS.1 ... */
	for (i = 0; i < 100 && r < 0; i++) {
		if (i)
			snprintf(aside, sizeof aside, "%s.bad-%lld.%d", name, now, i);
		else
			snprintf(aside, sizeof aside, "%s.bad-%lld", name, now);
		snprintf(s->set_aside, sizeof s->set_aside, "%.*s/%s", dir_len(s), s->path, aside);
		r = renameat2(s->dirfd, name, s->dirfd, aside, RENAME_NOREPLACE);
		if (r < 0 && errno == EINVAL) /* a filesystem without RENAME_NOREPLACE */
			r = faccessat(s->dirfd, aside, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ? (errno = EEXIST, -1)
			    : renameat(s->dirfd, name, s->dirfd, aside);
		if (r < 0 && errno != EEXIST)
			break;
	}
	if (r < 0) {
		snprintf(err, errlen, "%s; setting it aside as %s: %s", why, s->set_aside, strerror(errno));
		s->set_aside[0] = 0;
		return -EIO;
	}
	snprintf(s->set_aside_why, sizeof s->set_aside_why, "%s", why);
	s->revision = 0;
	return 0;
}

int desired_load(struct desired_store *s, const char *dir, char *err, size_t errlen)
{
	int r;
	memset(s, 0, sizeof *s);
	s->dirfd = -1;
	if (!dir || !dir[0])
		return 0;
	if (strlen(dir) + sizeof "/" FILE_NAME > sizeof s->path) {
		snprintf(err, errlen, "state_dir %s: longer than %zu bytes", dir, sizeof s->path - sizeof "/" FILE_NAME);
		return -ENAMETOOLONG;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(err, errlen, "state_dir %s: %s", dir, strerror(errno));
		return r;
	}
	if ((s->dirfd = procctl_trusted_dir(dir, err, errlen)) < 0) {
		char why[400];
		r = s->dirfd;
		snprintf(why, sizeof why, "%s", err);
		snprintf(err, errlen, "state_dir: %s", why);
		return r;
	}
	snprintf(s->path, sizeof s->path, "%s/" FILE_NAME, dir);
	s->save = desired_save;
	r = load_file(s, FILE_NAME, desired_parse, err, errlen);
	if (r == -EINVAL)
		return set_aside(s, FILE_NAME, err, errlen);
	if (r != -ENOENT)
		goto out;
	/* No store: a format-0 file (an older procctl-node's) is read once,
	 * saved in this format, and set aside. */
	r = load_file(s, V0_NAME, desired_parse_v0, err, errlen);
	if (r == -ENOENT)
		return 0;
	if (r == -EINVAL)
		return set_aside(s, V0_NAME, err, errlen);
	if (!r && (r = desired_save(s, err, errlen)) < 0)
		desired_forget(s);
	if (!r)
		s->converted = 1;
out:
	/* Pid configs bound to no process are gone from the file too. */
	if (!r && s->unbound_dropped && !s->converted && (r = desired_save(s, err, errlen)) < 0)
		desired_forget(s);
	/* Converted now, or before a crash that left it: set it aside. */
	if (!r && renameat(s->dirfd, V0_NAME, s->dirfd, V0_NAME ".converted") < 0 && errno != ENOENT) {
		r = -errno;
		snprintf(err, errlen, "%.*s/" V0_NAME ": setting it aside as " V0_NAME ".converted: %s", dir_len(s),
			 s->path, strerror(errno));
		desired_forget(s);
	}
	return r;
}

