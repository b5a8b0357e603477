/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_desired - the desired-config files as the daemon reads them back
 * (<state_dir>/desired.store, and the desired.pb of format 0 it converts):
 * the bytes parsed into an empty store, by both parsers, must be refused
 * (-EINVAL, the store left empty) or give a store that answers like one:
 * each config is effective for a process named by its own selector
 * unless a more specific one is, a fixed set of processes gets the most
 * specific match, a set and a delete work on it, and it encodes to a
 * store that parses back the same. The store's checksum is made right
 * before parsing (else almost every input stops there), and left as it
 * came once more. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "desired/desired.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define P1 "0b6d7a2e-5c1f-4c1a-9f3e-2d7b8c9a1e4f"
#define C1 "3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e"

static const struct selector keys[] = {
	{.pid = 1, .version = 1, .consumer = "billing"},
	{.pid = 42, .version = 1, .consumer = "billing", .pod_uid = P1},
	{.pid = 42, .version = 1, .consumer = "billing", .pod_uid = P1, .container_id = C1},
	{.pid = 7, .version = 2, .consumer = "billing", .pod_uid = P1, .container_id = C1},
	{.pid = 7, .version = 1, .consumer = "a"},
	{.pid = 9, .version = 3, .consumer = "a", .pod_uid = "0", .container_id = "0"},
};

static const struct podsel nopod; /* no namespace, no label selector */

/* A process fits a filter: the fields the filter names agree. */
static int fits(const struct selector *f, const struct selector *k)
{
	return (!f->pid || f->pid == k->pid) && f->version == k->version && !strcmp(f->consumer, k->consumer) &&
	       (!f->pod_uid[0] || !strcmp(f->pod_uid, k->pod_uid)) &&
	       (!f->container_id[0] || !strcmp(f->container_id, k->container_id));
}

/* The answer for k, checked against every config. */
static void match(const struct desired_store *s, const struct selector *k)
{
	const struct desired *m = desired_match(s, k, NULL);
	size_t i;
	if (m && (!fits(&m->sel, k) || !podsel_empty(&m->pod) || !desired_effective(s, m, k, NULL)))
		abort();
	for (i = 0; i < s->n; i++) {
		const struct desired *d = &s->v[i];
		/* a process of no known pod: a namespace or labels select it not */
		if (fits(&d->sel, k) && podsel_empty(&d->pod) &&
		    (!m || d->level > m->level || (d != m && d->level == m->level)))
			abort(); /* missed, or two of one level both match */
		if (d != m && desired_effective(s, d, k, NULL))
			abort();
	}
}

/* A parsed store, checked and freed. */
static void check_store(struct desired_store *s)
{
	static const struct selector sel = {.version = 1, .consumer = "billing", .pod_uid = P1};
	const struct desired *out = NULL, *other = NULL;
	struct desired_store back;
	const char *why = NULL;
	char err[256];
	uint8_t *buf;
	size_t i, n, len;
	int rc;

	for (i = 0; i < s->n; i++) {
		struct selector k = s->v[i].sel;
		if (!s->v[i].len || s->v[i].revision > s->revision || desired_check(&k, &why))
			abort();
		if (!k.pid)
			k.pid = 4242;
		if (i < 64)
			match(s, &k);
	}
	for (i = 0; i < sizeof keys / sizeof keys[0]; i++)
		match(s, &keys[i]);

	/* encoded and parsed back: the same configs */
	if (desired_encode(s, &buf, &len) == 0) {
		memset(&back, 0, sizeof back);
		if (desired_parse(&back, buf, len, err, sizeof err) || back.n != s->n || back.revision != s->revision)
			abort();
		for (i = 0; i < s->n; i++)
			if (!selector_same(&back.v[i].sel, &s->v[i].sel) || !podsel_same(&back.v[i].pod, &s->v[i].pod) ||
			    back.v[i].len != s->v[i].len ||
			    memcmp(back.v[i].payload, s->v[i].payload, s->v[i].len) ||
			    back.v[i].revision != s->v[i].revision || back.v[i].created != s->v[i].created ||
			    strcmp(back.v[i].source, s->v[i].source))
				abort();
		desired_free(&back);
		free(buf);
	}

	/* not kept (no path): a set succeeds or names what it overlaps */
	n = s->n;
	rc = desired_set(s, &sel, &nopod, "x", 1, NULL, &out, &other, &why, err, sizeof err);
	if (rc == 0) {
		if (!out || out->len != 1 || out->revision != s->revision)
			abort();
		if (desired_delete(s, &sel, &nopod, err, sizeof err) || s->n > n)
			abort();
	} else if (rc == -EIO ? s->revision < (1ull << 62) || s->n != n /* only when revisions are used up */
			      : rc != -EEXIST || !other || s->n != n) {
		abort();
	}
	match(s, &keys[1]);
	desired_free(s);
}

static void parse_one(int (*parse)(struct desired_store *, const uint8_t *, size_t, char *, size_t),
		      const uint8_t *data, size_t size)
{
	struct desired_store s;
	char err[256];
	int rc;
	memset(&s, 0, sizeof s);
	err[0] = 0;
	rc = parse(&s, data, size, err, sizeof err);
	if (rc) {
		if (rc != -EINVAL || !err[0] || s.n || s.v)
			abort();
		return;
	}
	check_store(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed;
	uint32_t crc;
	parse_one(desired_parse_v0, data, size);
	parse_one(desired_parse, data, size);
	if (size < 4 || !(fixed = malloc(size)))
		return 0;
	memcpy(fixed, data, size);
	crc = procctl_crc32c(0, fixed, size - 4);
	fixed[size - 4] = (uint8_t)crc;
	fixed[size - 3] = (uint8_t)(crc >> 8);
	fixed[size - 2] = (uint8_t)(crc >> 16);
	fixed[size - 1] = (uint8_t)(crc >> 24);
	parse_one(desired_parse, fixed, size);
	free(fixed);
	return 0;
}
