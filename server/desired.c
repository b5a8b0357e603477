/* SPDX-License-Identifier: Apache-2.0 */
/* desired.c - desired configs (desired.h). */
#include "desired.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procctl/v1/node.pb-c.h"

#define FILE_NAME "desired.pb"
#define FILE_MAX (64u << 20)
#define REVISION_MAX (1ull << 62) /* a billion changes a second for a century: never reached */

static enum desired_level level_of(const struct selector *k)
{
	return k->pid ? DESIRED_PID : k->container_id[0] ? DESIRED_CONTAINER : k->pod_uid[0] ? DESIRED_POD : DESIRED_CONSUMER;
}

int desired_check(const struct selector *sel, const char **why)
{
	if (procctl_name_valid(sel->consumer, PROCCTL_CONSUMER_MAX) < 0 || !sel->version) {
		*why = "selector: a desired config names a consumer and its schema_version";
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

int desired_conflict(const struct selector *a, const struct selector *b)
{
	return level_of(a) == level_of(b) && overlap(a, b);
}

const struct desired *desired_find(const struct desired_store *s, const struct selector *sel)
{
	size_t i;
	for (i = 0; i < s->n; i++)
		if (selector_same(&s->v[i].sel, sel))
			return &s->v[i];
	return NULL;
}

const struct desired *desired_match(const struct desired_store *s, const struct selector *k)
{
	const struct desired *best = NULL;
	struct selector pk = *k;
	size_t i;
	pk.always = 0; /* a process key: no event's match-everything */
	for (i = 0; i < s->n; i++) {
		const struct desired *d = &s->v[i];
		if (selector_match(&d->sel, &pk) && (!best || d->level > best->level))
			best = d;
	}
	return best;
}

int desired_effective(const struct desired_store *s, const struct desired *d, const struct selector *k)
{
	return d && desired_match(s, k) == d;
}

void desired_free(struct desired_store *s)
{
	size_t i;
	for (i = 0; i < s->n; i++)
		free(s->v[i].payload);
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

/* ---- the file -------------------------------------------------------- */

static void to_selector(const struct selector *k, Procctl__V1__Selector *m)
{
	procctl__v1__selector__init(m);
	m->pid = k->pid;
	m->consumer = (char *)k->consumer;
	m->schema_version = k->version;
	m->pod_uid = (char *)k->pod_uid;
	m->container_id = (char *)k->container_id;
}

/* Write the whole store to its file, atomically and durably: a temp file,
 * fsync, rename, fsync of the directory. 0; -ENOMEM; -EIO (err says
 * which path and why). */
static int save(const struct desired_store *s, char *err, size_t errlen)
{
	Procctl__V1__ListDesiredConfigsResponse m = PROCCTL__V1__LIST_DESIRED_CONFIGS_RESPONSE__INIT;
	Procctl__V1__DesiredConfig *cs = calloc(s->n ? s->n : 1, sizeof *cs);
	Procctl__V1__DesiredConfig **ps = calloc(s->n ? s->n : 1, sizeof *ps);
	Procctl__V1__Selector *sels = calloc(s->n ? s->n : 1, sizeof *sels);
	char tmp[sizeof s->path + 8], dir[sizeof s->path], *slash;
	const char *failed = tmp;
	uint8_t *buf = NULL;
	size_t i, len, off = 0;
	int fd = -1, r = 0;

	if (!s->path[0])
		goto out;
	r = -ENOMEM;
	if (!cs || !ps || !sels) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < s->n; i++) {
		procctl__v1__desired_config__init(&cs[i]);
		to_selector(&s->v[i].sel, &sels[i]);
		cs[i].selector = &sels[i];
		cs[i].payload.data = s->v[i].payload;
		cs[i].payload.len = s->v[i].len;
		cs[i].revision = s->v[i].revision;
		cs[i].source = s->v[i].source;
		ps[i] = &cs[i];
	}
	m.n_configs = s->n;
	m.configs = ps;
	m.revision = s->revision;
	len = protobuf_c_message_get_packed_size(&m.base);
	if (!(buf = malloc(len ? len : 1))) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	protobuf_c_message_pack(&m.base, buf);
	snprintf(tmp, sizeof tmp, "%s.tmp", s->path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
		goto fail;
	while (off < len) {
		ssize_t w = write(fd, buf + off, len - off);
		if (w < 0)
			goto fail;
		off += (size_t)w;
	}
	if (fsync(fd) < 0)
		goto fail;
	r = close(fd);
	fd = -1;
	if (r < 0)
		goto fail;
	failed = s->path;
	if (rename(tmp, s->path) < 0)
		goto fail;
	memcpy(dir, s->path, sizeof dir);
	if ((slash = strrchr(dir, '/')))
		*slash = 0;
	failed = dir;
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || fsync(fd) < 0)
		goto fail;
	close(fd);
	r = 0;
	goto out;
fail:
	snprintf(err, errlen, "%s: %s", failed, strerror(errno));
	if (fd >= 0)
		close(fd);
	if (failed == tmp)
		unlink(tmp);
	r = -EIO;
out:
	free(buf);
	free(cs);
	free(ps);
	free(sels);
	return r;
}

static int append(struct desired_store *s, const struct selector *sel, const void *payload, size_t len, uint64_t rev,
		  const char *source)
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
	d->level = level_of(sel);
	d->revision = rev;
	snprintf(d->source, sizeof d->source, "%s", source ? source : "");
	s->n++;
	return 0;
}

int desired_parse(struct desired_store *s, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	Procctl__V1__ListDesiredConfigsResponse *m = procctl__v1__list_desired_configs_response__unpack(NULL, len, buf);
	size_t i, j;
	int r = 0;
	if (!m) {
		snprintf(err, errlen, "not a serialized procctl.v1.ListDesiredConfigsResponse");
		return -EINVAL;
	}
	for (i = 0; i < m->n_configs && !r; i++) {
		const Procctl__V1__DesiredConfig *c = m->configs[i];
		const char *why = NULL;
		struct selector k;
		const Procctl__V1__Selector *sm = c->selector;
		if (!sm ||
		    selector_from(&k, sm->pid, sm->consumer, sm->schema_version, sm->pod_uid, sm->container_id, &why) < 0 ||
		    desired_check(&k, &why) < 0) {
			snprintf(err, errlen, "config %zu: %s", i, why ? why : "no selector");
			r = -EINVAL;
		} else if (!c->revision || c->revision > REVISION_MAX || c->revision > m->revision) {
			snprintf(err, errlen, "config %zu: revision %llu (1 to the store's %llu, at most 2^62)", i,
				 (unsigned long long)c->revision, (unsigned long long)m->revision);
			r = -EINVAL;
		} else if (c->source[0] && procctl_name_valid(c->source, sizeof s->v[0].source - 1) < 0) {
			snprintf(err, errlen, "config %zu: source is not a section name", i);
			r = -EINVAL;
		} else if (!c->payload.len || c->payload.len > PROCCTL_PAYLOAD_MAX) {
			snprintf(err, errlen, "config %zu: payload of %zu bytes (1 to %u)", i, c->payload.len,
				 (unsigned)PROCCTL_PAYLOAD_MAX);
			r = -EINVAL;
		} else {
			for (j = 0; j < s->n; j++)
				if (s->v[j].level == level_of(&k) && overlap(&s->v[j].sel, &k))
					break;
			if (j < s->n) {
				snprintf(err, errlen, "config %zu overlaps config %zu", i, j);
				r = -EINVAL;
			} else if ((r = append(s, &k, c->payload.data, c->payload.len, c->revision, c->source)) < 0) {
				snprintf(err, errlen, "out of memory");
			}
		}
	}
	if (!r && m->revision > REVISION_MAX) {
		snprintf(err, errlen, "revision %llu: over 2^62", (unsigned long long)m->revision);
		r = -EINVAL;
	}
	s->revision = m->revision;
	protobuf_c_message_free_unpacked(&m->base, NULL);
	if (r)
		desired_free(s);
	return r;
}

int desired_load(struct desired_store *s, const char *dir, char *err, size_t errlen)
{
	struct stat st;
	uint8_t *buf;
	ssize_t n;
	size_t len = 0;
	int fd, r;
	memset(s, 0, sizeof *s);
	if (!dir || !dir[0])
		return 0;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(err, errlen, "state_dir %s: %s", dir, strerror(errno));
		return r;
	}
	if (strlen(dir) + sizeof "/" FILE_NAME > sizeof s->path) {
		snprintf(err, errlen, "state_dir %s: longer than %zu bytes", dir, sizeof s->path - sizeof "/" FILE_NAME);
		return -ENAMETOOLONG;
	}
	snprintf(s->path, sizeof s->path, "%s/" FILE_NAME, dir);
	if ((fd = open(s->path, O_RDONLY | O_CLOEXEC)) < 0) {
		if (errno == ENOENT)
			return 0;
		r = -errno;
		snprintf(err, errlen, "%s: %s", s->path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > FILE_MAX) {
		close(fd);
		snprintf(err, errlen, "%s: not a regular file of at most %u bytes", s->path, FILE_MAX);
		return -EINVAL;
	}
	if (!(buf = malloc((size_t)st.st_size + 1))) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", s->path);
		return -ENOMEM;
	}
	while ((n = read(fd, buf + len, (size_t)st.st_size + 1 - len)) > 0)
		len += (size_t)n;
	r = n < 0 ? -errno : 0;
	close(fd);
	if (r) {
		snprintf(err, errlen, "%s: %s", s->path, strerror(-r));
	} else {
		char why[200];
		char path[sizeof s->path];
		memcpy(path, s->path, sizeof path);
		r = desired_parse(s, buf, len, why, sizeof why);
		memcpy(s->path, path, sizeof path);
		if (r)
			snprintf(err, errlen, "%s: corrupt (%s): move it away to start without desired configs", s->path,
				 why);
	}
	free(buf);
	return r;
}

/* ---- changes --------------------------------------------------------- */

int desired_set(struct desired_store *s, const struct selector *sel, const void *payload, size_t len, const char *source,
		const struct desired **out, const struct desired **other, const char **why, char *err, size_t errlen)
{
	enum desired_level lv = level_of(sel);
	struct desired old;
	size_t i, at = s->n;
	int r;
	if ((r = desired_check(sel, why)) < 0)
		return r;
	if (!len || len > PROCCTL_PAYLOAD_MAX) {
		*why = "config.payload: 1 to 1 MiB bytes";
		return -EINVAL;
	}
	if (s->revision >= REVISION_MAX) {
		snprintf(err, errlen, "revisions used up");
		return -EIO;
	}
	for (i = 0; i < s->n; i++) {
		if (selector_same(&s->v[i].sel, sel))
			at = i;
		else if (s->v[i].level == lv && overlap(&s->v[i].sel, sel)) {
			*other = &s->v[i];
			return -EEXIST;
		}
	}
	s->revision++; /* the file keeps the counter: revisions only grow */
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
		if ((r = save(s, err, errlen)) < 0) {
			free(p);
			s->v[at] = old;
			s->revision--;
			return r;
		}
		free(old.payload);
	} else {
		if ((r = append(s, sel, payload, len, s->revision, source)) < 0) {
			s->revision--;
			return r;
		}
		if ((r = save(s, err, errlen)) < 0) {
			free(s->v[--s->n].payload);
			s->revision--;
			return r;
		}
	}
	*out = &s->v[at];
	return 0;
}

int desired_delete(struct desired_store *s, const struct selector *sel, char *err, size_t errlen)
{
	struct desired gone;
	size_t i;
	int r;
	for (i = 0; i < s->n && !selector_same(&s->v[i].sel, sel); i++)
		;
	if (i == s->n)
		return -ENOENT;
	gone = s->v[i];
	memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof s->v[0]);
	s->n--;
	if ((r = save(s, err, errlen)) < 0) { /* put it back */
		memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof s->v[0]);
		s->v[i] = gone;
		s->n++;
		return r;
	}
	free(gone.payload);
	return 0;
}
