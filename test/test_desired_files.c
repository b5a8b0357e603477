/* SPDX-License-Identifier: Apache-2.0 */
/* The desired configs' file (server/desired/desired.c) in a scratch directory:
 * persistence across a fresh store, corrupt files refused whole and set
 * aside, the older formats converted once, pid configs bound to their
 * process, revisions that only grow, and a failed write that leaves the
 * store as it was. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "desired/desired_int.h"
#include "desired_th.h"
#include "procctl/v1/node.pb-c.h"

static const struct podsel nopod; /* no namespace, no label selector */

/* ---- persistence ---- */

static void persistence(void **state)
{
	static const uint8_t bin[] = {0, 1, 2, 0xff, 0, 0x80, 'z'};
	struct desired_store s, t, u;
	const struct desired *d = NULL, *other = NULL;
	const char *why = NULL;
	char dir[256], file[300], tmp[310], err[512] = "";
	uint8_t buf[4096];
	struct selector gone = key(0, C, 1, P1, C1);
	uint64_t top = 0;
	ssize_t len;
	size_t i;
	int fd;
	(void)state;

	subdir(dir, sizeof dir, "persist");
	assert_int_equal(desired_load(&s, dir, err, sizeof err), 0);
	set_ok(&s, key(0, C, 1, "", ""), "consumer");
	set_ok(&s, key(0, C, 1, P1, ""), "pod");
	set_ok(&s, gone, "container");
	set_ok(&s, key(42, C, 1, P2, ""), "pid");
	assert_int_equal(desired_set(&s, &(struct selector){.consumer = C, .version = 2}, &nopod, bin, sizeof bin, "from-file", &d,
				     &other, &why, err, sizeof err),
			 0);
	assert_string_equal(d->source, "from-file"); /* a config file's section: kept with it */
	set_ok(&s, key(0, C, 1, P1, ""), "pod, replaced");
	assert_int_equal(desired_delete(&s, &gone, &nopod, err, sizeof err), 0);
	assert_int_equal(s.n, 4);
	assert_null(desired_find(&s, &gone, &nopod));

	/* not there: -ENOENT, in memory and after a reload */
	assert_int_equal(desired_delete(&s, &gone, &nopod, err, sizeof err), -ENOENT);
	assert_int_equal(desired_delete(&s, &(struct selector){.pid = 41, .pid_start = START(41), .consumer = C, .version = 1, .pod_uid = P2}, &nopod, err,
					sizeof err),
			 -ENOENT);
	assert_int_equal(desired_delete(&s, &(struct selector){.consumer = C, .version = 3}, &nopod, err, sizeof err), -ENOENT);
	assert_int_equal(s.n, 4);

	/* the file is a store of format 5 with its checksum, and no temp
	 * file is left */
	snprintf(file, sizeof file, "%s/desired.store", dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", file);
	assert_false(exists(tmp));
	fd = open(file, O_RDONLY);
	assert_true(fd >= 0);
	len = read(fd, buf, sizeof buf);
	close(fd);
	assert_true(len > 28);
	assert_memory_equal(buf, "PCDSTORE", 8);
	assert_int_equal(le32(buf + 8), 5);  /* format */
	assert_int_equal(le32(buf + 12), 4); /* configs */
	assert_int_equal(le32(buf + 16), s.revision);
	assert_int_equal(le32(buf + len - 4), procctl_crc32c(0, buf, (size_t)len - 4));

	/* a fresh store sees the same */
	assert_int_equal(desired_load(&t, dir, err, sizeof err), 0);
	assert_string_equal(t.path, file);
	same_store(&s, &t);
	same_store(&t, &s);
	for (i = 0; i < t.n; i++)
		if (t.v[i].revision > top)
			top = t.v[i].revision;
	assert_int_equal(t.revision, top);
	assert_int_equal(desired_delete(&t, &gone, &nopod, err, sizeof err), -ENOENT);
	payload_is(desired_match(&t, &(struct selector){.pid = 42, .pid_start = START(42), .consumer = C, .version = 1, .pod_uid = P2}, NULL), "pid");
	payload_is(desired_match(&t, &(struct selector){.pid = 7, .pid_start = START(7), .consumer = C, .version = 1, .pod_uid = P1,
						       .container_id = C1}, NULL),
		   "pod, replaced");
	d = desired_match(&t, &(struct selector){.pid = 7, .pid_start = START(7), .consumer = C, .version = 2}, NULL);
	assert_non_null(d);
	assert_int_equal(d->len, sizeof bin);
	assert_memory_equal(d->payload, bin, sizeof bin);

	/* numbering goes on past every loaded revision */
	set_ok(&t, key(0, C, 1, P2, ""), "after restart");
	assert_true(desired_find(&t, &(struct selector){.consumer = C, .version = 1, .pod_uid = P2}, &nopod)->revision > top);
	set_ok(&t, key(0, C, 1, "", ""), "consumer, after restart");
	assert_true(desired_find(&t, &(struct selector){.consumer = C, .version = 1}, &nopod)->revision > top + 1);
	assert_int_equal(desired_delete(&t, &(struct selector){.pid = 42, .pid_start = START(42), .consumer = C, .version = 1, .pod_uid = P2}, &nopod,
					err, sizeof err),
			 0);

	/* and a third store sees the second's changes */
	assert_int_equal(desired_load(&u, dir, err, sizeof err), 0);
	same_store(&t, &u);
	same_store(&u, &t);
	assert_int_equal(u.revision, t.revision);

	/* everything deleted: an empty file, an empty store */
	while (u.n)
		assert_int_equal(desired_delete(&u, &u.v[0].sel, &nopod, err, sizeof err), 0);
	desired_free(&t);
	assert_int_equal(desired_load(&t, dir, err, sizeof err), 0);
	assert_int_equal(t.n, 0);
	desired_free(&s);
	desired_free(&t);
	desired_free(&u);
}

/* ---- corrupt files ---- */

struct cfg {
	struct selector sel;
	const char *payload; /* NULL: none */
	uint64_t revision;
	int no_selector;
};

/* Serialize configs as format 0, a ListDesiredConfigsResponse; malloc'd,
 * *len bytes. */
static uint8_t *pack_v0(const struct cfg *c, size_t n, size_t *len)
{
	Procctl__V1__ListDesiredConfigsResponse m = PROCCTL__V1__LIST_DESIRED_CONFIGS_RESPONSE__INIT;
	Procctl__V1__DesiredConfig cs[8], *ps[8];
	Procctl__V1__Selector sels[8];
	uint8_t *buf;
	size_t i;
	assert_true(n <= 8);
	for (i = 0; i < n; i++) {
		procctl__v1__desired_config__init(&cs[i]);
		procctl__v1__selector__init(&sels[i]);
		sels[i].pid = c[i].sel.pid;
		sels[i].consumer = (char *)c[i].sel.consumer;
		sels[i].schema_version = c[i].sel.version;
		sels[i].pod_uid = (char *)c[i].sel.pod_uid;
		sels[i].container_id = (char *)c[i].sel.container_id;
		cs[i].selector = c[i].no_selector ? NULL : &sels[i];
		cs[i].payload.data = (uint8_t *)c[i].payload;
		cs[i].payload.len = c[i].payload ? strlen(c[i].payload) : 0;
		cs[i].revision = c[i].revision;
		if (c[i].revision > m.revision && c[i].revision <= 1ull << 62)
			m.revision = c[i].revision; /* the store's counter, as the daemon writes it */
		ps[i] = &cs[i];
	}
	m.n_configs = n;
	m.configs = ps;
	*len = protobuf_c_message_get_packed_size(&m.base);
	buf = malloc(*len ? *len : 1);
	assert_non_null(buf);
	assert_int_equal(protobuf_c_message_pack(&m.base, buf), *len);
	return buf;
}

static uint8_t *put(uint8_t *p, uint64_t v, int bytes)
{
	int i;
	for (i = 0; i < bytes; i++)
		*p++ = (uint8_t)(v >> (8 * i));
	return p;
}

/* Serialize configs as a store of format 1, written here from desired.h's
 * description alone; malloc'd, *len bytes. */
/* A store of format (1: no pid_start; 2: no pid_image; 3) holding c[0, n). */
static uint8_t *pack_format(const struct cfg *c, size_t n, uint32_t format, size_t *len)
{
	uint8_t *buf = calloc(1, 65536), *p = buf;
	uint64_t top = 0;
	size_t i, k;
	assert_non_null(buf);
	for (i = 0; i < n; i++)
		if (c[i].revision > top && c[i].revision <= 1ull << 62)
			top = c[i].revision; /* the store's counter, as the daemon writes it */
	memcpy(p, "PCDSTORE", 8);
	p = put(p + 8, format, 4);
	p = put(p, n, 4);
	p = put(p, top, 8);
	for (i = 0; i < n; i++) {
		const char *str[4] = {c[i].sel.consumer, c[i].sel.pod_uid, c[i].sel.container_id, ""};
		size_t plen = c[i].payload ? strlen(c[i].payload) : 0;
		p = put(p, c[i].revision, 8);
		p = put(p, (uint32_t)c[i].sel.pid, 4);
		if (format >= 2)
			p = put(p, c[i].sel.pid_start, 8);
		if (format >= 3)
			p = put(p, c[i].sel.pid_image, 8);
		p = put(p, c[i].sel.version, 4);
		p = put(p, plen, 4);
		for (k = 0; k < 4; k++)
			*p++ = (uint8_t)strlen(str[k]);
		for (k = 0; k < 4; k++) {
			memcpy(p, str[k], strlen(str[k]));
			p += strlen(str[k]);
		}
		memcpy(p, c[i].payload ? c[i].payload : "", plen);
		p += plen;
	}
	p = put(p, procctl_crc32c(0, buf, (size_t)(p - buf)), 4);
	*len = (size_t)(p - buf);
	return buf;
}

static uint8_t *pack(const struct cfg *c, size_t n, size_t *len)
{
	return pack_format(c, n, 3, len);
}

/* A fresh directory name under the run's, holding a store of format
 * with c[0, n) (dir: its path). */
static void store_in(char *dir, size_t cap, const char *name, const struct cfg *c, size_t n, uint32_t format)
{
	char file[300];
	uint8_t *buf;
	size_t len;
	subdir(dir, cap, name);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(file, sizeof file, "%s/desired.store", dir);
	buf = pack_format(c, n, format, &len);
	write_file(file, buf, len);
	free(buf);
}

/* A store of format 2 (before pid configs were bound to an image): its
 * pid configs load bound to their process and to no image (the daemon
 * binds them to what runs at its start); saved again, in format 3. */
static void format2(void **state)
{
	const struct cfg c[] = {
		{key(0, C, 1, "", ""), "consumer", 3, 0},
		{key(9, C, 1, P1, C1), "pid 9", 5, 0},
	};
	struct desired_store s, t;
	const struct desired *d;
	struct selector k;
	char dir[256], err[512] = "";
	(void)state;
	store_in(dir, sizeof dir, "format2", c, 2, 2);
	assert_int_equal(desired_load(&s, dir, err, sizeof err), 0);
	assert_int_equal(s.n, 2);
	assert_non_null(d = desired_find(&s, &c[1].sel, &nopod));
	assert_int_equal(d->sel.pid_start, START(9));
	assert_int_equal(d->sel.pid_image, 0);
	/* Bound at the daemon's start to what runs then: saved so. */
	assert_int_equal(desired_bind_image(&s, (size_t)(d - s.v), 0x77, err, sizeof err), 0);
	assert_int_equal(desired_bind_image(&s, (size_t)(d - s.v), 0x78, err, sizeof err), -EINVAL); /* bound already */
	assert_int_equal(desired_load(&t, dir, err, sizeof err), 0);
	assert_int_equal(desired_find(&t, &c[1].sel, &nopod)->sel.pid_image, 0x77);
	desired_free(&t);
	/* One bound to an image is kept so, and matches its process only
	 * while it runs that image. */
	k = key(11, C, 1, P1, C1);
	k.pid_image = 0x5eed;
	set_ok(&s, k, "pid 11");
	assert_int_equal(desired_load(&t, dir, err, sizeof err), 0);
	same_store(&s, &t);
	assert_non_null(d = desired_find(&t, &k, &nopod));
	assert_int_equal(d->sel.pid_image, 0x5eed);
	payload_is(desired_match(&t, &k, NULL), "pid 11");
	k.pid_image = 0x5eee; /* it exec'd */
	payload_is(desired_match(&t, &k, NULL), "consumer");
	desired_free(&t);
	desired_free(&s);
}

/* A store of format 1 (before pid configs were bound to their process)
 * is read; its pid configs are dropped, and the file saved without them. */
static void format1(void **state)
{
	const struct cfg c[] = {
		{key(0, C, 1, "", ""), "consumer", 3, 0},
		{key(9, C, 1, P1, C1), "pid 9", 5, 0},
		{key(0, C, 1, P1, ""), "pod", 7, 0},
	};
	struct desired_store s, t;
	char dir[256], err[512] = "";
	(void)state;
	store_in(dir, sizeof dir, "format1", c, 3, 1);
	assert_int_equal(desired_load(&s, dir, err, sizeof err), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.unbound_dropped, 1);
	assert_int_equal(s.revision, 7);
	assert_null(desired_find(&s, &c[1].sel, &nopod));
	payload_is(desired_match(&s, &c[1].sel, NULL), "pod"); /* pid 9 in pod P1: the pod's now */
	/* saved without it, in format 3 */
	assert_int_equal(desired_load(&t, dir, err, sizeof err), 0);
	assert_int_equal(t.unbound_dropped, 0);
	same_store(&s, &t);
	desired_free(&t);
	desired_free(&s);
}

/* A pid config matches its process only (the pid and its start time), and
 * goes with it. */
static void pid_bound(void **state)
{
	struct desired_store s;
	struct selector later = key(9, C, 1, "", ""), unknown = key(9, C, 1, "", "");
	char err[512] = "";
	(void)state;
	memset(&s, 0, sizeof s);
	set_ok(&s, key(0, C, 1, "", ""), "consumer");
	set_ok(&s, key(9, C, 1, "", ""), "pid 9");
	payload_is(desired_match(&s, &later, NULL), "pid 9");
	later.pid_start = START(9) + 1; /* pid 9 again, another process */
	payload_is(desired_match(&s, &later, NULL), "consumer");
	unknown.pid_start = 0; /* a process whose start is unknown is not it */
	payload_is(desired_match(&s, &unknown, NULL), "consumer");
	/* an unbound pid config is refused */
	{
		const struct desired *d, *other;
		const char *why = NULL;
		struct selector k = key(10, C, 1, "", "");
		k.pid_start = 0;
		assert_int_equal(desired_set(&s, &k, &nopod, "x", 1, NULL, &d, &other, &why, err, sizeof err), -EINVAL);
		assert_non_null(strstr(why, "bound"));
	}
	/* another process's exit changes nothing; its own removes it */
	assert_int_equal(desired_forget_process(&s, 9, START(9) + 1, err, sizeof err), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(desired_forget_process(&s, 9, START(9), err, sizeof err), 1);
	assert_int_equal(s.n, 1);
	payload_is(desired_match(&s, &(struct selector){.pid = 9, .pid_start = START(9), .consumer = C, .version = 1}, NULL),
		   "consumer");
	desired_free(&s);
}

/* desired_max's largest store, 65,536 configs of a pod each: loaded
 * whole, and an overlap of its first and last found. Only configs that
 * could overlap are compared now: each with each took 20 s before the
 * daemon served (303 s with another mix), and 65,536 is what one config
 * key allows. */
static void largest(void **state)
{
	enum { N = 65536 };
	struct desired_store s, t;
	char err[512] = "";
	uint8_t *buf;
	size_t i, len;
	(void)state;

	memset(&s, 0, sizeof s);
	for (i = 0; i < N; i++) {
		struct selector k = key(0, C, 1, "", "");
		snprintf(k.pod_uid, sizeof k.pod_uid, "%08zx-5c1f-4c1a-9f3e-2d7b8c9a1e4f", i);
		assert_int_equal(desired_append(&s, &k, &nopod, "p", 1, i + 1, ""), 0);
	}
	s.revision = N;
	assert_int_equal(desired_encode(&s, &buf, &len), 0);
	memset(&t, 0, sizeof t);
	assert_int_equal(desired_parse(&t, buf, len, err, sizeof err), 0);
	assert_int_equal(t.n, N);
	assert_string_equal(t.v[N - 1].sel.pod_uid, "0000ffff-5c1f-4c1a-9f3e-2d7b8c9a1e4f");
	desired_free(&t);
	free(buf);

	memcpy(s.v[N - 1].sel.pod_uid, s.v[0].sel.pod_uid, sizeof s.v[0].sel.pod_uid);
	assert_int_equal(desired_encode(&s, &buf, &len), 0);
	memset(&t, 0, sizeof t);
	assert_int_equal(desired_parse(&t, buf, len, err, sizeof err), -EINVAL);
	assert_string_equal(err, "config 65535 overlaps config 0");
	assert_int_equal(t.n, 0);
	free(buf);
	desired_free(&s);
}

static void corrupt(void **state)
{
	static const uint8_t junk[][40] = {
		{'P', 'C', 'D', 'S', 'T', 'O', 'R', 'E', 1},  /* a header cut short */
		{'n', 'o', 't', ' ', 'a', ' ', 's', 't', 'o', 'r', 'e', ' ', 'f', 'i', 'l', 'e', 0, 0, 0, 0, 0, 0, 0, 0, 0,
		 0, 0, 0},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	};
	static const size_t junk_len[] = {9, 28, 11};
	const struct cfg ok = {key(0, C, 1, "", ""), "fine", 1, 0};
	const struct {
		const char *what;
		struct cfg c[3];
		size_t n;
	} bad[] = {
		{"no schema version", {{key(0, C, 0, "", ""), "x", 1, 0}}, 1},
		{"no schema version, after a good one", {ok, {key(0, C, 0, P1, ""), "x", 2, 0}}, 2},
		{"no consumer", {ok, {key(0, "", 1, P1, ""), "x", 2, 0}}, 2},
		{"no selector", {ok, {key(0, "", 0, "", ""), "x", 2, 1}}, 2},
		{"a negative pid", {ok, {key(-5, C, 1, "", ""), "x", 2, 0}}, 2},
		{"an uppercase pod UID", {ok, {key(0, C, 1, "ABC", ""), "x", 2, 0}}, 2},
		{"overlapping containers", {{key(0, C, 1, "", C1), "a", 1, 0}, {key(0, C, 1, P1, C1), "b", 2, 0}}, 2},
		{"overlapping pids", {ok, {key(9, C, 1, P1, ""), "a", 2, 0}, {key(9, C, 1, P1, C1), "b", 3, 0}}, 3},
		{"one selector twice", {ok, {key(0, C, 1, P1, ""), "a", 2, 0}, {key(0, C, 1, P1, ""), "b", 3, 0}}, 3},
		{"the consumer twice", {ok, ok}, 2},
		{"an empty payload", {ok, {key(0, C, 1, P1, ""), NULL, 2, 0}}, 2},
		{"only an empty payload", {{key(0, C, 1, P1, ""), "", 2, 0}}, 1},
	};
	struct desired_store s;
	char dir[256], file[300], err[512];
	uint8_t *buf;
	size_t i, len;
	(void)state;

	subdir(dir, sizeof dir, "corrupt");
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(file, sizeof file, "%s/desired.store", dir);

	for (i = 0; i < sizeof junk / sizeof junk[0] + sizeof bad / sizeof bad[0]; i++) {
		if (i < sizeof junk / sizeof junk[0]) {
			write_file(file, junk[i], junk_len[i]);
		} else {
			size_t b = i - sizeof junk / sizeof junk[0];
			buf = pack(bad[b].c, bad[b].n, &len);
			write_file(file, buf, len);
			free(buf);
		}
		err[0] = 0;
		memset(&s, 0x5a, sizeof s);
		set_aside_ok(&s, dir, file);
		print_message("%s: %s\n", i < sizeof junk / sizeof junk[0] ? "junk" : bad[i - sizeof junk / sizeof junk[0]].what,
			      s.set_aside_why);
		desired_free(&s);
	}

	/* the same ones parsed directly: refused, the store left empty */
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		buf = pack(bad[i].c, bad[i].n, &len);
		memset(&s, 0, sizeof s);
		err[0] = 0;
		assert_int_equal(desired_parse(&s, buf, len, err, sizeof err), -EINVAL);
		assert_true(err[0]);
		assert_int_equal(s.n, 0);
		assert_null(s.v);
		free(buf);
	}

	/* not a regular file: set aside too */
	assert_false(exists(file));
	assert_int_equal(mkdir(file, 0700), 0);
	set_aside_ok(&s, dir, file);
	assert_non_null(strstr(s.set_aside_why, "not a regular file"));
	desired_free(&s);

	/* and a good one written the same way loads */
	{
		const struct cfg c[] = {
			ok,
			{key(0, C, 1, P1, ""), "pod", 7, 0},
			{key(0, C, 1, P1, C1), "container", 3, 0},
			{key(9, C, 1, P1, C1), "pid", 5, 0},
		};
		buf = pack(c, 4, &len);
		write_file(file, buf, len);
		free(buf);
		assert_int_equal(desired_load(&s, dir, err, sizeof err), 0);
		assert_int_equal(s.n, 4);
		assert_int_equal(s.revision, 7);
		payload_is(desired_match(&s, &(struct selector){.pid = 9, .pid_start = START(9), .consumer = C, .version = 1, .pod_uid = P1,
							       .container_id = C1}, NULL),
			   "pid");
		desired_free(&s);
	}
}

/* One good store, then each byte altered, the file cut short or
 * lengthened, or a newer format: refused. */
static void corrupt_bytes(void **state)
{
	const struct cfg two[] = {{key(0, C, 1, "", ""), "fine", 1, 0}, {key(0, C, 1, P1, ""), "pod", 2, 0}};
	struct desired_store s;
	char err[512];
	uint8_t *buf, *good;
	size_t len, at;
	(void)state;

	good = pack(two, 2, &len);
	memset(&s, 0, sizeof s);
	assert_int_equal(desired_parse(&s, good, len, err, sizeof err), 0);
	assert_int_equal(s.n, 2);
	desired_free(&s);
	for (at = 0; at < len; at++) {
		good[at] ^= 0x20;
		memset(&s, 0, sizeof s);
		assert_int_equal(desired_parse(&s, good, len, err, sizeof err), -EINVAL);
		assert_int_equal(s.n, 0);
		good[at] ^= 0x20;
	}
	for (at = 0; at < len; at++)
		assert_int_equal(desired_parse(&s, good, at, err, sizeof err), -EINVAL);
	buf = malloc(len + 1);
	assert_non_null(buf);
	memcpy(buf, good, len - 4);
	buf[len - 4] = 0; /* a byte after the last config, checksum right */
	put(buf + len - 3, procctl_crc32c(0, buf, len - 3), 4);
	assert_int_equal(desired_parse(&s, buf, len + 1, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "after the last config"));
	memcpy(buf, good, len);
	put(buf + 8, 6, 4); /* a newer daemon's */
	put(buf + len - 4, procctl_crc32c(0, buf, len - 4), 4);
	assert_int_equal(desired_parse(&s, buf, len, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "format 6"));
	free(buf);
	free(good);
}

/* ---- a write that fails ---- */

static void write_failure(void **state)
{
	struct desired_store s, t;
	const struct desired *d = NULL, *other = NULL, *a;
	const char *why = NULL;
	struct selector ka = key(0, C, 1, P1, ""), kb = key(0, C, 1, "", ""), kc = key(0, C, 1, P2, "");
	char dir[256], tmp[320], err[512];
	uint64_t rev, arev;
	(void)state;

	subdir(dir, sizeof dir, "wfail");
	assert_int_equal(desired_load(&s, dir, err, sizeof err), 0);
	set_ok(&s, ka, "one");
	set_ok(&s, kb, "base");
	rev = s.revision;
	a = desired_find(&s, &ka, &nopod);
	arev = a->revision;

	/* the temp file's name taken by a directory: open(O_TRUNC) fails */
	snprintf(tmp, sizeof tmp, "%s.tmp", s.path);
	assert_int_equal(mkdir(tmp, 0700), 0);

	/* a replacement */
	err[0] = 0;
	assert_int_equal(desired_set(&s, &ka, &nopod, "two", 3, NULL, &d, &other, &why, err, sizeof err), -EIO);
	print_message("set: %s\n", err);
	assert_non_null(strstr(err, s.path));
	assert_int_equal(s.n, 2);
	assert_int_equal(s.revision, rev);
	assert_ptr_equal(desired_find(&s, &ka, &nopod), a);
	payload_is(a, "one");
	assert_int_equal(a->revision, arev);

	/* a new selector */
	err[0] = 0;
	assert_int_equal(desired_set(&s, &kc, &nopod, "three", 5, NULL, &d, &other, &why, err, sizeof err), -EIO);
	assert_non_null(strstr(err, s.path));
	assert_int_equal(s.n, 2);
	assert_int_equal(s.revision, rev);
	assert_null(desired_find(&s, &kc, &nopod));

	/* a delete */
	err[0] = 0;
	assert_int_equal(desired_delete(&s, &ka, &nopod, err, sizeof err), -EIO);
	print_message("delete: %s\n", err);
	assert_non_null(strstr(err, s.path));
	assert_int_equal(s.n, 2);
	a = desired_find(&s, &ka, &nopod);
	payload_is(a, "one");
	assert_int_equal(a->revision, arev);
	payload_is(desired_find(&s, &kb, &nopod), "base");
	payload_is(desired_match(&s, &(struct selector){.pid = 3, .pid_start = START(3), .consumer = C, .version = 1, .pod_uid = P1}, NULL), "one");
	assert_int_equal(desired_delete(&s, &kb, &nopod, err, sizeof err), -EIO);
	assert_int_equal(s.n, 2);
	payload_is(desired_find(&s, &kb, &nopod), "base");
	payload_is(desired_find(&s, &ka, &nopod), "one");

	/* the file still holds the last good state */
	assert_int_equal(desired_load(&t, dir, err, sizeof err), 0);
	same_store(&s, &t);
	desired_free(&t);

	/* the way cleared, changes are kept again */
	assert_int_equal(rmdir(tmp), 0);
	set_ok(&s, ka, "two");
	assert_true(desired_find(&s, &ka, &nopod)->revision > rev);
	assert_int_equal(desired_delete(&s, &kb, &nopod, err, sizeof err), 0);
	assert_int_equal(desired_load(&t, dir, err, sizeof err), 0);
	same_store(&s, &t);
	assert_int_equal(t.n, 1);
	desired_free(&t);
	desired_free(&s);
}


/* Revisions only grow: a file whose revisions are out of range is
 * corrupt, and after the newest config is deleted and the store reloaded,
 * its revision is not handed out again. */
static void revisions_only_grow(void **state)
{
	const struct cfg c[] = {{key(0, C, 1, P1, ""), "pod", UINT64_MAX, 0}};
	struct desired_store s;
	const struct desired *d = NULL;
	char dir[256], file[300], err[512] = "";
	uint64_t top;
	(void)state;

	store_in(dir, sizeof dir, "wrap", c, 1, 2);
	snprintf(file, sizeof file, "%s/desired.store", dir);
	set_aside_ok(&s, dir, file);
	desired_free(&s);

	assert_int_equal(desired_load(&s, dir, err, sizeof err), 0);
	set_ok(&s, key(0, C, 1, P1, ""), "one");
	set_ok(&s, key(0, C, 1, P2, ""), "two");
	top = s.revision;
	assert_int_equal(desired_delete(&s, &(struct selector){.consumer = C, .version = 1, .pod_uid = P2}, &nopod, err, sizeof err), 0);
	desired_free(&s);
	assert_int_equal(desired_load(&s, dir, err, sizeof err), 0);
	assert_int_equal(s.revision, top);
	assert_int_equal(set(&s, key(0, C, 1, P2, ""), "three", &d, NULL), 0);
	assert_true(d->revision > top);
	desired_free(&s);
}

/* ---- format 0 ---- */

static void converted_once(void **state)
{
	const struct cfg c[] = {
		{key(0, C, 1, "", ""), "consumer", 3, 0},
		{key(0, C, 1, P1, ""), "pod", 9, 0},
		{key(9, C, 1, P1, C1), "pid", 5, 0},
	};
	const struct cfg bad[] = {{key(0, C, 1, P1, ""), "a", 2, 0}, {key(0, C, 1, P1, ""), "b", 3, 0}};
	struct desired_store s, t;
	char dir[256], v0[300], aside[320], store[300], err[512] = "";
	uint8_t *buf;
	size_t len;
	(void)state;

	subdir(dir, sizeof dir, "format0");
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(v0, sizeof v0, "%s/desired.pb", dir);
	snprintf(aside, sizeof aside, "%s/desired.pb.converted", dir);
	snprintf(store, sizeof store, "%s/desired.store", dir);

	/* a corrupt one is set aside, and nothing is converted */
	buf = pack_v0(bad, 2, &len);
	write_file(v0, buf, len);
	free(buf);
	set_aside_ok(&s, dir, v0);
	assert_false(exists(store));
	desired_free(&s);

	/* a good one: read, saved as a store, set aside */
	buf = pack_v0(c, 3, &len);
	write_file(v0, buf, len);
	free(buf);
	assert_int_equal(desired_load(&s, dir, err, sizeof err), 0);
	assert_int_equal(s.converted, 1);
	assert_int_equal(s.n, 2); /* the pid's: bound to no process, dropped */
	assert_int_equal(s.unbound_dropped, 1);
	assert_int_equal(s.revision, 9);
	assert_string_equal(s.path, store);
	assert_true(exists(store));
	assert_false(exists(v0));
	assert_true(exists(aside));
	payload_is(desired_match(&s, &(struct selector){.pid = 9, .pid_start = START(9), .consumer = C, .version = 1,
						       .pod_uid = P1, .container_id = C1}, NULL),
		   "pod");

	/* read once: the next start reads the store alone */
	assert_int_equal(desired_load(&t, dir, err, sizeof err), 0);
	assert_int_equal(t.converted, 0);
	same_store(&s, &t);
	same_store(&t, &s);
	desired_free(&t);

	/* a desired.pb left beside a store (a crash after the conversion's
	 * save) is not read, and is set aside */
	buf = pack_v0(bad, 1, &len);
	write_file(v0, buf, len);
	free(buf);
	assert_int_equal(desired_load(&t, dir, err, sizeof err), 0);
	assert_int_equal(t.converted, 0);
	same_store(&s, &t);
	assert_false(exists(v0));
	desired_free(&t);
	desired_free(&s);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(persistence),
		cmocka_unit_test(largest),
		cmocka_unit_test(corrupt),
		cmocka_unit_test(corrupt_bytes),
		cmocka_unit_test(write_failure),
		cmocka_unit_test(revisions_only_grow),
		cmocka_unit_test(converted_once),
		cmocka_unit_test(format1),
		cmocka_unit_test(format2),
		cmocka_unit_test(pid_bound),
	};
	return TH_RUN_WITH(tests, desired_th_setup, desired_th_teardown);
}
