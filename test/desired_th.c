/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "desired_th.h"

static const struct podsel nopod; /* no namespace, no label selector */

char desired_th_dir[64];

/* A selector or a process's key: "" and 0 name nothing. */
struct selector key(pid_t pid, const char *consumer, uint32_t version, const char *pod, const char *ctr)
{
	struct selector k;
	memset(&k, 0, sizeof k);
	k.pid = pid;
	k.pid_start = pid > 0 ? START(pid) : 0;
	k.version = version;
	snprintf(k.consumer, sizeof k.consumer, "%s", consumer);
	snprintf(k.pod_uid, sizeof k.pod_uid, "%s", pod);
	snprintf(k.container_id, sizeof k.container_id, "%s", ctr);
	return k;
}

/* Set a string payload; the call's return. */
int set(struct desired_store *s, struct selector sel, const char *payload, const struct desired **out,
	const struct desired **other)
{
	const struct desired *o = NULL, *x = NULL;
	const char *why = NULL;
	char err[512] = "";
	int rc = desired_set(s, &sel, &nopod, payload, strlen(payload), NULL, &o, &x, &why, err, sizeof err);
	if (rc)
		print_message("desired_set: %d %s %s\n", rc, why ? why : "", err);
	if (out)
		*out = o;
	if (other)
		*other = x;
	return rc;
}

void set_ok(struct desired_store *s, struct selector sel, const char *payload)
{
	const struct desired *d;
	assert_int_equal(set(s, sel, payload, &d, NULL), 0);
	assert_non_null(d);
	assert_true(selector_same(&d->sel, &sel));
	assert_int_equal(d->len, strlen(payload));
	assert_memory_equal(d->payload, payload, d->len);
	assert_int_equal(d->revision, s->revision);
}

void payload_is(const struct desired *d, const char *payload)
{
	assert_non_null(d);
	assert_int_equal(d->len, strlen(payload));
	assert_memory_equal(d->payload, payload, d->len);
}

void subdir(char *path, size_t len, const char *name)
{
	snprintf(path, len, "%s/%s", desired_th_dir, name);
}

void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

uint32_t le32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* Load dir, whose file (file) is damaged: an empty store, the file
 * renamed FILE.bad-SECONDS beside it (not deleted), and why. */
void set_aside_ok(struct desired_store *s, const char *dir, const char *file)
{
	char err[512] = "";
	assert_int_equal(desired_load(s, dir, err, sizeof err), 0);
	assert_int_equal(s->n, 0);
	assert_null(s->v);
	assert_int_equal(s->revision, 0);
	assert_non_null(strstr(s->set_aside, file));
	assert_non_null(strstr(s->set_aside, ".bad-"));
	assert_true(s->set_aside_why[0]);
	assert_true(exists(s->set_aside));
	assert_false(exists(file));
	assert_int_equal(remove(s->set_aside), 0); /* (a directory, once) */
}

void same_store(const struct desired_store *a, const struct desired_store *b)
{
	size_t i;
	assert_int_equal(a->n, b->n);
	for (i = 0; i < a->n; i++) {
		const struct desired *x = &a->v[i], *y = desired_find(b, &a->v[i].sel, &a->v[i].pod);
		assert_non_null(y);
		assert_int_equal(x->level, y->level);
		assert_int_equal(x->revision, y->revision);
		assert_int_equal(x->created, y->created);
		assert_int_equal(x->len, y->len);
		assert_memory_equal(x->payload, y->payload, x->len);
		assert_string_equal(x->source, y->source);
	}
}

int desired_th_setup(void **state)
{
	(void)state;
	if (!mkdtemp(strcpy(desired_th_dir, "/tmp/test_desired.XXXXXX"))) {
		perror("mkdtemp");
		return -1;
	}
	return 0;
}

int desired_th_teardown(void **state)
{
	char cmd[96];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf %s", desired_th_dir);
	return system(cmd) == 0 ? 0 : -1;
}
