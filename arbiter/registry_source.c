/* SPDX-License-Identifier: Apache-2.0 */
/* registry_source.c - the arbiter's source on a registry's clients. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "procctl_arbiter.h"

struct rsrc {
	procctl_registry_t *r;
	procctl_client_t **cs; /* ncs: the registry's clients of the consumer, made room for as they grow */
	size_t ncs;
	char consumer[32];
	uint64_t deadline_ns;
	struct procctl_state st;        /* one read at a time: ticks run on the loop thread */
	struct procctl_client_info info; /* likewise */
};

static uint64_t now_ns(void *ctx)
{
	(void)ctx;
	return (uint64_t)procctl_now_ns();
}

static size_t targets(void *ctx, struct procctl_arb_target *out, size_t max)
{
	struct rsrc *s = ctx;
	procctl_client_t **cs = s->cs;
	size_t n = procctl_registry_clients_of(s->r, s->consumer, cs, s->ncs), i, k = 0;
	if (n > max)
		return n; /* the arbiter makes room, and asks again */
	if (n > s->ncs) {
		if (!(cs = realloc(s->cs, n * sizeof *cs)))
			return SIZE_MAX; /* no room here: the arbiter's fails too */
		s->cs = cs;
		s->ncs = n;
		n = procctl_registry_clients_of(s->r, s->consumer, cs, s->ncs); /* the same: one thread */
	}
	for (i = 0; i < n && k < max; i++) {
		if (procctl_client_info(cs[i], &s->info, sizeof s->info))
			continue;
		out[k].handle = cs[i];
		out[k].pid = s->info.pid;
		out[k].instance_id = s->info.hdr.instance_id;
		k++;
	}
	return k;
}

static int ready(void *ctx)
{
	struct rsrc *s = ctx;
	return procctl_registry_ready(s->r, s->consumer);
}

static int reports(void *ctx, void *h, struct procctl_res_entry *out, uint32_t max)
{
	struct rsrc *s = ctx;
	uint32_t n;
	int err = procctl_client_read_state(h, &s->st, sizeof s->st, (int64_t)(now_ns(ctx) + s->deadline_ns));
	if (err)
		return err;
	n = s->st.nres < max ? s->st.nres : max;
	memcpy(out, s->st.res, (size_t)n * sizeof *out);
	return (int)n;
}

static int changed(void *ctx, void *h)
{
	struct rsrc *s = ctx;
	return procctl_registry_doorbell_rang(s->r, h) != 0;
}

static int grants(void *ctx, void *h, struct procctl_grant_entry *out, uint32_t max)
{
	(void)ctx;
	return procctl_client_grants(h, out, max);
}

static int64_t grant(void *ctx, void *h, const procctl_resource_t *res, uint64_t id)
{
	(void)ctx;
	return procctl_client_grant(h, res, id);
}

static int64_t s_revoke(void *ctx, void *h, const procctl_resource_t *res)
{
	(void)ctx;
	return procctl_client_revoke(h, res);
}

static int64_t drop(void *ctx, void *h, const procctl_resource_t *res)
{
	(void)ctx;
	return procctl_client_drop(h, res);
}

static int alive(void *ctx, void *h)
{
	(void)ctx;
	return procctl_client_alive(h);
}

/* The state letter in /proc/PID/stat ("pid (comm) S ...", comm may hold
 * anything): 0 when there is no such process, '?' when it cannot be read. */
static char proc_state(pid_t pid)
{
	char path[32], buf[512], *rp;
	ssize_t n;
	int fd;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : '?';
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && rp[2] ? rp[2] : '?';
}

/* A zombie holds nothing (its files and memory are gone): it counts as
 * gone, so a parent slow to reap does not block the resource. */
static int pid_exists(void *ctx, pid_t pid)
{
	char st;
	(void)ctx;
	if (kill(pid, 0) < 0 && errno != EPERM)
		return 0;
	st = proc_state(pid);
	return st && st != 'Z' && st != 'X'; /* unreadable: it exists */
}

/* Stopped (SIGSTOP, a frozen cgroup shows as sleeping) or traced. */
static int stopped(void *ctx, pid_t pid)
{
	char st = proc_state(pid);
	(void)ctx;
	return st == 'T' || st == 't';
}

/* Random, nonzero, never reused: 64 random bits (SPEC.md 9.1). */
static uint64_t random_id(void *ctx)
{
	uint64_t v = 0;
	(void)ctx;
	while (v == 0)
		if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
			v = 0;
	return v;
}

int procctl_arbiter_registry_source(struct procctl_arbiter_source *src, procctl_registry_t *r, const char *consumer,
				    uint64_t read_deadline_ns)
{
	struct rsrc *s;
	if (!src || !r || procctl_name_valid(consumer, PROCCTL_CONSUMER_MAX) < 0)
		return -EINVAL;
	s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	s->r = r;
	memcpy(s->consumer, consumer, strlen(consumer));
	s->deadline_ns = read_deadline_ns;
	memset(src, 0, sizeof *src);
	src->sz = sizeof *src;
	src->ctx = s;
	src->targets = targets;
	src->ready = ready;
	src->reports = reports;
	src->grants = grants;
	src->grant = grant;
	src->revoke = s_revoke;
	src->drop = drop;
	src->alive = alive;
	src->pid_exists = pid_exists;
	src->now = now_ns;
	src->random_id = random_id;
	src->changed = changed;
	src->stopped = stopped;
	return 0;
}

void procctl_arbiter_registry_source_free(struct procctl_arbiter_source *src)
{
	if (src->ctx)
		free(((struct rsrc *)src->ctx)->cs);
	free(src->ctx);
	src->ctx = NULL;
}
