/* SPDX-License-Identifier: Apache-2.0 */
/* arbworld.c - the arbiter tests' fake world (arbworld.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arbworld.h"
#include "th.h"

procctl_resource_t aw_gpu(int i)
{
	return th_gpu((uint8_t)i);
}

static struct fproc *of(void *ctx, void *handle)
{
	(void)ctx;
	return handle;
}

/* Add p to out[*n] when there is room; count it anyway. */
static void list(struct fproc *p, struct procctl_arb_target *out, size_t max, size_t *n)
{
	if (*n < max) {
		out[*n].handle = p;
		out[*n].pid = p->pid;
		out[*n].instance_id = p->inst;
	}
	++*n;
}

static size_t f_targets(void *ctx, struct procctl_arb_target *out, size_t max)
{
	static struct fproc crowd[AW_CROWD_MAX];
	struct world *w = ctx;
	size_t n = 0;
	int i;
	for (i = 0; i < w->crowd && i < AW_CROWD_MAX; i++) {
		if (!crowd[i].pid) {
			crowd[i].pid = 100000 + i;
			crowd[i].inst = (uint64_t)crowd[i].pid * 1000u;
			crowd[i].listed = crowd[i].readable = crowd[i].exists = 1;
		}
		list(&crowd[i], out, max, &n);
	}
	for (i = 0; i < w->n; i++)
		if (w->p[i].listed)
			list(&w->p[i], out, max, &n);
	return n;
}

static int f_ready(void *ctx)
{
	return ((struct world *)ctx)->ready;
}

static int f_reports(void *ctx, void *h, struct procctl_res_entry *out, uint32_t max)
{
	struct fproc *p = of(ctx, h);
	uint32_t i, n = 0;
	((struct world *)ctx)->reads++;
	p->nreads++;
	if (!p->readable)
		return -ETIMEDOUT;
	for (i = 0; i < 2 && n < max; i++)
		if (p->rep[i].kind)
			out[n++] = p->rep[i];
	for (i = 0; i < (uint32_t)p->nmore && n < max; i++) {
		procctl_resource_t r = aw_gpu(100 + (int)i);
		memset(&out[n], 0, sizeof out[n]);
		out[n].kind = r.kind;
		memcpy(out[n].id, r.id, 16);
		out[n].flags = PROCCTL_RES_F_WANT;
		out[n++].state = PROCCTL_RES_IDLE;
	}
	return (int)n;
}

static int f_grants(void *ctx, void *h, struct procctl_grant_entry *out, uint32_t max)
{
	struct fproc *p = of(ctx, h);
	uint32_t i;
	for (i = 0; i < p->ngr && i < max; i++)
		out[i] = p->gr[i];
	return (int)p->ngr;
}

struct procctl_grant_entry *aw_entry(struct fproc *p, const procctl_resource_t *r)
{
	uint32_t i;
	for (i = 0; i < p->ngr; i++)
		if (p->gr[i].kind == r->kind && !memcmp(p->gr[i].id, r->id, 16))
			return &p->gr[i];
	return NULL;
}

static int64_t f_grant(void *ctx, void *h, const procctl_resource_t *r, uint64_t id)
{
	struct fproc *p = of(ctx, h);
	struct procctl_grant_entry *e = aw_entry(p, r);
	((struct world *)ctx)->writes++;
	if (!e)
		e = &p->gr[p->ngr++];
	memset(e, 0, sizeof *e);
	e->kind = r->kind;
	memcpy(e->id, r->id, 16);
	e->grant_id = id;
	e->gen = ++p->gen;
	return (int64_t)p->gen;
}

int64_t aw_grant(struct world *w, struct fproc *p, const procctl_resource_t *r, uint64_t id)
{
	return f_grant(w, p, r, id);
}

static int64_t f_revoke(void *ctx, void *h, const procctl_resource_t *r)
{
	struct fproc *p = of(ctx, h);
	struct procctl_grant_entry *e = aw_entry(p, r);
	((struct world *)ctx)->writes++;
	if (!e)
		return -ENOENT;
	if (!e->revoke_gen)
		e->revoke_gen = ++p->gen;
	return (int64_t)e->revoke_gen;
}

static int64_t f_drop(void *ctx, void *h, const procctl_resource_t *r)
{
	struct fproc *p = of(ctx, h);
	struct procctl_grant_entry *e = aw_entry(p, r);
	((struct world *)ctx)->writes++;
	if (!e)
		return -ENOENT;
	*e = p->gr[--p->ngr];
	return (int64_t)++p->gen;
}

static int f_alive(void *ctx, void *h)
{
	return of(ctx, h)->alive;
}

/* w's process of pid, or NULL. */
static const struct fproc *by_pid(const struct world *w, pid_t pid)
{
	int i;
	for (i = 0; i < w->n; i++)
		if (w->p[i].pid == pid)
			return &w->p[i];
	return NULL;
}

static int f_pid_exists(void *ctx, pid_t pid)
{
	const struct fproc *p = by_pid(ctx, pid);
	return p ? p->exists : 0;
}

static int f_stopped(void *ctx, pid_t pid)
{
	const struct fproc *p = by_pid(ctx, pid);
	return p ? p->stopped : 0;
}

static uint64_t f_now(void *ctx)
{
	return ((struct world *)ctx)->now;
}

static uint64_t f_random(void *ctx)
{
	return 0x1000 + ++((struct world *)ctx)->next_id;
}

static int f_changed(void *ctx, void *h)
{
	struct fproc *p = of(ctx, h);
	int r = p->rang;
	p->rang = 0;
	return r;
}

/* Without w->doorbells, changed is NULL: every tick reads every target. */
struct procctl_arbiter_source aw_source(struct world *w)
{
	struct procctl_arbiter_source s = {sizeof s, w,       f_targets, f_ready,  f_reports, f_grants, f_grant,
					   f_revoke, f_drop,  f_alive,   f_pid_exists, f_now,   f_random, NULL,
					   f_stopped};
	if (w->doorbells)
		s.changed = f_changed;
	return s;
}

struct fproc *aw_proc(struct world *w, pid_t pid)
{
	struct fproc *p = &w->p[w->n++];
	memset(p, 0, sizeof *p);
	p->pid = pid;
	p->inst = (uint64_t)pid * 1000u;
	p->listed = p->readable = p->exists = 1;
	return p;
}

/* The token holder's loop for resource i (SPEC.md 9.4): a live grant it
 * wants: HOLDING; a revoked one: RELEASED; none: IDLE, wanting or not. */
void aw_cooperate(struct fproc *p, int i)
{
	procctl_resource_t r = aw_gpu(i);
	struct procctl_grant_entry *g = aw_entry(p, &r);
	struct procctl_res_entry *e = &p->rep[i], before = *e;
	memset(e, 0, sizeof *e);
	e->kind = r.kind;
	memcpy(e->id, r.id, 16);
	e->flags = p->wants[i] ? PROCCTL_RES_F_WANT : 0;
	e->seen_gen = p->gen;
	if (g) {
		e->grant_id = g->grant_id;
		e->state = g->revoke_gen || !p->wants[i] || (p->declines && g->gen <= (uint64_t)p->declines)
				   ? PROCCTL_RES_RELEASED
				   : PROCCTL_RES_HOLDING;
	} else {
		e->state = PROCCTL_RES_IDLE;
	}
	if (memcmp(&before, e, sizeof before) && !p->mute)
		p->rang = 1; /* procctl_resource_report rings */
}

void aw_all_cooperate(struct world *w)
{
	int i, r;
	for (i = 0; i < w->n; i++)
		if (w->p[i].alive == 0 && w->p[i].readable && !w->p[i].slow)
			for (r = 0; r < 2; r++)
				aw_cooperate(&w->p[i], r);
}

/* The process holding a live grant for resource i, or 0. Fails the test if
 * two processes hold one: never two holders. */
pid_t aw_holder(struct world *w, int i)
{
	procctl_resource_t r = aw_gpu(i);
	pid_t h = 0;
	int k;
	for (k = 0; k < w->n; k++) {
		struct procctl_grant_entry *g = aw_entry(&w->p[k], &r);
		if (g && !g->revoke_gen && w->p[k].alive == 0) {
			if (h)
				fail_msg("two holders of gpu %d: %d and %d", i, (int)h, (int)w->p[k].pid);
			h = w->p[k].pid;
		}
	}
	return h;
}

/* Advance the clock, let the processes answer, tick; repeat. */
void aw_run(struct world *w, procctl_arbiter_t *a, uint64_t ns, uint64_t step)
{
	uint64_t end = w->now + ns;
	while (w->now < end) {
		w->now += step;
		aw_all_cooperate(w);
		assert_int_equal(procctl_arbiter_tick(a), 0);
		aw_all_cooperate(w);
		aw_holder(w, 0);
		aw_holder(w, 1);
	}
}

procctl_arbiter_t *aw_arbiter(struct world *w, unsigned flags, int (*admit)(void *, const struct procctl_arb_target *))
{
	static procctl_resource_t res[2];
	static struct procctl_arbiter_source src;
	struct procctl_arbiter_opts o;
	procctl_arbiter_t *a;
	res[0] = aw_gpu(0);
	res[1] = aw_gpu(1);
	src = aw_source(w);
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.kind = TH_GPU;
	o.hold_ns = HOLD;
	o.flags = flags;
	o.resources = res;
	o.nresources = 2;
	o.admit = admit;
	a = procctl_arbiter_new(&o, &src);
	assert_non_null(a);
	return a;
}

/* Processes 10 and 20 both want gpu 0; run until 10 holds it. */
procctl_arbiter_t *aw_two_wanters(struct world *w, unsigned flags)
{
	procctl_arbiter_t *a;
	memset(w, 0, sizeof *w);
	w->ready = 1;
	aw_proc(w, 10)->wants[0] = 1;
	aw_proc(w, 20)->wants[0] = 1;
	a = aw_arbiter(w, flags, NULL);
	aw_run(w, a, 10 * MS, MS);
	assert_int_equal(aw_holder(w, 0), 10);
	return a;
}

struct procctl_arbiter_snapshot aw_snap(procctl_arbiter_t *a, int i)
{
	struct procctl_arbiter_snapshot s[4];
	assert_int_equal(procctl_arbiter_snapshot(a, s, 4, sizeof *s), 2);
	return s[i];
}
