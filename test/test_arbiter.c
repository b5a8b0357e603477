/* SPDX-License-Identifier: Apache-2.0 */
/* The arbiter against a fake world with a fake clock (deterministic): fake
 * processes keep grant tables the way regions do and answer the way the
 * token holder's loop does (SPEC.md 9.4), or misbehave on purpose. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "procctl_arbiter.h"
#include "th.h"

#define MS 1000000ull
#define HOLD (100 * MS)

struct fproc {
	pid_t pid;
	uint64_t inst;
	int alive;    /* 0, -ESRCH, -ESTALE */
	int listed;   /* the registry still has it */
	int readable; /* its state block reads */
	int exists;   /* its pid is taken */
	int wants[2]; /* per resource */
	int declines; /* its lease lapsed: its grants are void to it */
	int slow;     /* it has not looked yet: its reports stay as they were */
	int rang;     /* its doorbell rang since the arbiter last asked */
	int mute;     /* its rings are lost */
	int nreads;   /* f_reports calls for it */
	uint64_t gen; /* its region's generation */
	struct procctl_res_entry rep[2];
	struct procctl_grant_entry gr[16];
	uint32_t ngr;
	int nmore;    /* it also wants resources 100 .. 100 + nmore - 1 (none configured) */
};

struct world {
	struct fproc p[8];
	int n;
	uint64_t now, next_id;
	int ready, writes;
	int reads;     /* f_reports calls */
	int doorbells; /* the source has changed (f_changed) */
};

static procctl_resource_t gpu(int i)
{
	return th_gpu((uint8_t)i);
}

static struct fproc *of(void *ctx, void *handle)
{
	(void)ctx;
	return handle;
}

static size_t f_targets(void *ctx, struct procctl_arb_target *out, size_t max)
{
	struct world *w = ctx;
	size_t n = 0;
	int i;
	for (i = 0; i < w->n; i++)
		if (w->p[i].listed && n < max) {
			out[n].handle = &w->p[i];
			out[n].pid = w->p[i].pid;
			out[n].instance_id = w->p[i].inst;
			n++;
		}
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
		procctl_resource_t r = gpu(100 + (int)i);
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

static struct procctl_grant_entry *entry(struct fproc *p, const procctl_resource_t *r)
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
	struct procctl_grant_entry *e = entry(p, r);
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

static int64_t f_revoke(void *ctx, void *h, const procctl_resource_t *r)
{
	struct fproc *p = of(ctx, h);
	struct procctl_grant_entry *e = entry(p, r);
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
	struct procctl_grant_entry *e = entry(p, r);
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

static int f_pid_exists(void *ctx, pid_t pid)
{
	struct world *w = ctx;
	int i;
	for (i = 0; i < w->n; i++)
		if (w->p[i].pid == pid)
			return w->p[i].exists;
	return 0;
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
static struct procctl_arbiter_source source(struct world *w)
{
	struct procctl_arbiter_source s = {w,       f_targets, f_ready,      f_reports, f_grants, f_grant, f_revoke,
					   f_drop,  f_alive,   f_pid_exists, f_now,     f_random, NULL};
	if (w->doorbells)
		s.changed = f_changed;
	return s;
}

static struct fproc *proc(struct world *w, pid_t pid)
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
static void cooperate(struct fproc *p, int i)
{
	procctl_resource_t r = gpu(i);
	struct procctl_grant_entry *g = entry(p, &r);
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

static void all_cooperate(struct world *w)
{
	int i, r;
	for (i = 0; i < w->n; i++)
		if (w->p[i].alive == 0 && w->p[i].readable && !w->p[i].slow)
			for (r = 0; r < 2; r++)
				cooperate(&w->p[i], r);
}

/* The process holding a live grant for resource i, or 0. Fails the test if
 * two processes hold one: never two holders. */
static pid_t holder(struct world *w, int i)
{
	procctl_resource_t r = gpu(i);
	pid_t h = 0;
	int k;
	for (k = 0; k < w->n; k++) {
		struct procctl_grant_entry *g = entry(&w->p[k], &r);
		if (g && !g->revoke_gen && w->p[k].alive == 0) {
			if (h)
				fail_msg("two holders of gpu %d: %d and %d", i, (int)h, (int)w->p[k].pid);
			h = w->p[k].pid;
		}
	}
	return h;
}

/* Advance the clock, let the processes answer, tick; repeat. */
static void run(struct world *w, procctl_arbiter_t *a, uint64_t ns, uint64_t step)
{
	uint64_t end = w->now + ns;
	while (w->now < end) {
		w->now += step;
		all_cooperate(w);
		assert_int_equal(procctl_arbiter_tick(a), 0);
		all_cooperate(w);
		holder(w, 0);
		holder(w, 1);
	}
}

static procctl_arbiter_t *arbiter(struct world *w, unsigned flags, int (*admit)(void *, const struct procctl_arb_target *))
{
	static procctl_resource_t res[2];
	static struct procctl_arbiter_source src;
	struct procctl_arbiter_opts o;
	procctl_arbiter_t *a;
	res[0] = gpu(0);
	res[1] = gpu(1);
	src = source(w);
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
static procctl_arbiter_t *two_wanters(struct world *w, unsigned flags)
{
	procctl_arbiter_t *a;
	memset(w, 0, sizeof *w);
	w->ready = 1;
	proc(w, 10)->wants[0] = 1;
	proc(w, 20)->wants[0] = 1;
	a = arbiter(w, flags, NULL);
	run(w, a, 10 * MS, MS);
	assert_int_equal(holder(w, 0), 10);
	return a;
}

static struct procctl_arbiter_snapshot snap(procctl_arbiter_t *a, int i)
{
	struct procctl_arbiter_snapshot s[4];
	assert_int_equal(procctl_arbiter_snapshot(a, s, 4), 2);
	return s[i];
}

static void rotation_in_order(void **state)
{
	struct world w;
	procctl_arbiter_t *a;
	pid_t seen[8];
	int k;
	(void)state;
	memset(&w, 0, sizeof w);
	w.ready = 1;
	proc(&w, 30)->wants[0] = 1;
	proc(&w, 10)->wants[0] = 1;
	proc(&w, 20)->wants[0] = 1;
	a = arbiter(&w, 0, NULL);
	for (k = 0; k < 8; k++) {
		run(&w, a, HOLD / 2, MS);
		seen[k] = holder(&w, 0);
		assert_true(seen[k] != 0);
		assert_int_equal(snap(a, 0).holder_pid, seen[k]);
		assert_int_equal(snap(a, 0).waiters, 2);
		run(&w, a, HOLD / 2 + 10 * MS, MS);
	}
	/* pid order, round and round, each holding its whole turn */
	assert_int_equal(seen[0], 10);
	assert_int_equal(seen[1], 20);
	assert_int_equal(seen[2], 30);
	assert_int_equal(seen[3], 10);
	assert_int_equal(seen[4], 20);
	assert_true(snap(a, 0).handoffs >= 7);
	assert_true(snap(a, 0).hold_ns_total > 7 * HOLD);
	assert_true(snap(a, 0).blocked_ns < HOLD); /* cooperating holders: a tick per hand-off */
	assert_int_equal(holder(&w, 1), 0); /* nobody wants gpu 1 */
	procctl_arbiter_free(a);
}

static void lone_wanter_renewed(void **state)
{
	struct world w;
	procctl_arbiter_t *a;
	uint64_t id;
	(void)state;
	memset(&w, 0, sizeof w);
	w.ready = 1;
	proc(&w, 10)->wants[0] = 1;
	a = arbiter(&w, 0, NULL);
	run(&w, a, 10 * MS, MS);
	assert_int_equal(holder(&w, 0), 10);
	id = snap(a, 0).grant_id;
	run(&w, a, 10 * HOLD, MS);
	assert_int_equal(holder(&w, 0), 10);
	assert_int_equal(snap(a, 0).grant_id, id); /* no hand-off, no revoke */
	assert_int_equal(snap(a, 0).handoffs, 0);
	assert_int_equal(snap(a, 0).pending_since_ns, 0);
	/* It stops wanting: revoked, confirmed, free. */
	w.p[0].wants[0] = 0;
	run(&w, a, 10 * MS, MS);
	assert_int_equal(holder(&w, 0), 0);
	assert_int_equal(w.p[0].ngr, 0);
	procctl_arbiter_free(a);
}

/* A holder that stops answering keeps the resource: it is revoked after
 * its turn but never confirmed, so nobody else gets it; the time counts as
 * blocked. A read that times out is not tried again for a second (each
 * costs the deadline on the loop). Its exit frees it. */
static void hung_holder_blocks(void **state)
{
	struct world w;
	procctl_arbiter_t *a = two_wanters(&w, 0);
	struct fproc *h = &w.p[0];
	procctl_resource_t r = gpu(0);
	(void)state;
	h->readable = 0; /* its state page stalls */
	h->nreads = 0;
	run(&w, a, 5 * HOLD, MS);
	assert_int_equal(h->nreads, 1);
	assert_null(entry(&w.p[1], &r));
	assert_true(snap(a, 0).blocked_ns >= 4 * HOLD);
	assert_true(snap(a, 0).pending_ns >= 4 * HOLD);
	assert_true(snap(a, 0).pending_since_ns > 0);
	assert_int_equal(snap(a, 0).holder_pid, 10);
	/* SIGKILL: it exits; the registry detaches it; its pid is gone. */
	h->alive = -ESRCH;
	run(&w, a, 2 * MS, MS);
	h->listed = 0;
	h->exists = 0;
	run(&w, a, 2 * MS, MS);
	assert_int_equal(holder(&w, 0), 20);
	procctl_arbiter_free(a);
}

/* A holder whose release is not confirmed yet is no waiter of its own
 * resource: waiters counts the others. */
static void holder_not_a_waiter(void **state)
{
	struct world w;
	procctl_arbiter_t *a = two_wanters(&w, 0);
	struct fproc *h = &w.p[0];
	(void)state;
	run(&w, a, HOLD / 2, MS);
	assert_int_equal(snap(a, 0).waiters, 1);
	h->slow = 1; /* it still reports HOLDING, and wanting it */
	run(&w, a, HOLD, MS);
	assert_true(snap(a, 0).pending_since_ns > 0);
	assert_int_equal(snap(a, 0).holder_pid, 10);
	assert_int_equal(snap(a, 0).waiters, 1);
	h->slow = 0;
	run(&w, a, 5 * MS, MS);
	assert_int_equal(holder(&w, 0), 20);
	assert_int_equal(snap(a, 0).waiters, 1);
	procctl_arbiter_free(a);
}

/* A release report from before the revocation does not count. */
static void stale_release_ignored(void **state)
{
	struct world w;
	procctl_arbiter_t *a = two_wanters(&w, 0);
	struct fproc *h = &w.p[0];
	procctl_resource_t r = gpu(0);
	(void)state;
	/* It says RELEASED about its grant, but saw only the grant's write. */
	h->readable = 1;
	w.now += HOLD;
	all_cooperate(&w);
	h->rep[0].state = PROCCTL_RES_RELEASED;
	assert_int_equal(procctl_arbiter_tick(a), 0); /* revokes */
	assert_true(entry(h, &r)->revoke_gen > h->rep[0].seen_gen);
	h->rep[0].state = PROCCTL_RES_RELEASED; /* same stale report */
	w.now += MS;
	assert_int_equal(procctl_arbiter_tick(a), 0);
	assert_non_null(entry(h, &r)); /* not confirmed */
	assert_null(entry(&w.p[1], &r));
	/* A report that saw the revocation confirms it. */
	cooperate(h, 0);
	w.now += MS;
	assert_int_equal(procctl_arbiter_tick(a), 0);
	assert_null(entry(h, &r));
	assert_non_null(entry(&w.p[1], &r));
	procctl_arbiter_free(a);
}

/* A revoked holder that frees its entry (IDLE, nothing wanted, no grant
 * snapshot) confirms nothing (SPEC 9.5): the resource stays blocked until
 * a report about the grant confirms it, or the holder exits. */
static void freed_entry_no_confirmation(void **state)
{
	struct world w;
	procctl_arbiter_t *a = two_wanters(&w, 0);
	struct fproc *h = &w.p[0];
	procctl_resource_t r = gpu(0);
	(void)state;
	w.now += HOLD;
	all_cooperate(&w);
	assert_int_equal(procctl_arbiter_tick(a), 0); /* its turn is over: revoked */
	assert_true(entry(h, &r)->revoke_gen > 0);
	h->slow = 1;
	memset(&h->rep[0], 0, sizeof h->rep[0]); /* freed */
	w.now += MS;
	assert_int_equal(procctl_arbiter_tick(a), 0);
	run(&w, a, 5 * HOLD, MS); /* the others keep cooperating */
	assert_non_null(entry(h, &r)); /* still pending */
	assert_null(entry(&w.p[1], &r));
	assert_true(snap(a, 0).blocked_ns >= 4 * HOLD);
	/* A report about the grant that saw the revocation confirms it. */
	h->slow = 0;
	run(&w, a, 5 * MS, MS);
	assert_null(entry(h, &r));
	assert_int_equal(holder(&w, 0), 20);
	procctl_arbiter_free(a);
}

/* A successor finds two live grants (its predecessor's, or a bug): it
 * revokes both and grants only after both are confirmed. A process that
 * reports HOLDING without a grant keeps the resource busy. Nothing
 * happens before ready. */
static void adoption_after_handoff(void **state)
{
	struct world w;
	procctl_arbiter_t *a;
	struct fproc *p1, *p2, *p3;
	procctl_resource_t r = gpu(0);
	int k;
	(void)state;
	memset(&w, 0, sizeof w);
	p1 = proc(&w, 10);
	p2 = proc(&w, 20);
	p3 = proc(&w, 30);
	p1->wants[0] = p2->wants[0] = p3->wants[0] = 1;
	f_grant(&w, p1, &r, 7);
	f_grant(&w, p2, &r, 8);
	w.writes = 0;
	a = arbiter(&w, 0, NULL);
	for (k = 0; k < 50; k++) { /* not ready: not a single write */
		w.now += MS;
		all_cooperate(&w);
		assert_int_equal(procctl_arbiter_tick(a), 0);
	}
	assert_int_equal(w.writes, 0);
	w.ready = 1;
	w.now += MS;
	/* Both still say HOLDING (no revocation seen yet). */
	all_cooperate(&w);
	p1->readable = 0; /* and one does not answer yet */
	assert_int_equal(procctl_arbiter_tick(a), 0);
	assert_true(entry(p1, &r)->revoke_gen && entry(p2, &r)->revoke_gen);
	run(&w, a, 20 * MS, MS);
	assert_null(entry(p2, &r));        /* confirmed and dropped */
	assert_non_null(entry(p1, &r));    /* waiting on its confirmation */
	assert_int_equal(holder(&w, 0), 0); /* nobody got it meanwhile */
	p1->readable = 1; /* read again a second after its read timed out */
	run(&w, a, 900 * MS, MS);
	assert_int_equal(holder(&w, 0), 0);
	run(&w, a, 100 * MS, MS);
	assert_true(holder(&w, 0) != 0);

	/* A stray user: HOLDING with no grant of ours. */
	memset(&w, 0, sizeof w);
	w.ready = 1;
	p1 = proc(&w, 10);
	p2 = proc(&w, 20);
	p2->wants[0] = 1;
	procctl_arbiter_free(a);
	a = arbiter(&w, 0, NULL);
	all_cooperate(&w);
	p1->rep[0].state = PROCCTL_RES_HOLDING;
	w.now += MS;
	assert_int_equal(procctl_arbiter_tick(a), 0);
	w.now += 50 * MS;
	assert_int_equal(procctl_arbiter_tick(a), 0);
	assert_null(entry(p2, &r));
	assert_true(snap(a, 0).blocked_ns > 0);
	p1->rep[0].state = PROCCTL_RES_IDLE;
	w.now += MS;
	assert_int_equal(procctl_arbiter_tick(a), 0);
	assert_non_null(entry(p2, &r));
	procctl_arbiter_free(a);
}

/* exec: a process-bound kind is released by it; another kind is held
 * until the pid is gone. */
static void exec_and_exit(void **state)
{
	int bound;
	(void)state;
	for (bound = 0; bound < 2; bound++) {
		struct world w;
		procctl_arbiter_t *a = two_wanters(&w, bound ? PROCCTL_ARB_PROCESS_BOUND : 0);
		struct fproc *h = &w.p[0];
		h->alive = -ESTALE;
		h->readable = 0;
		run(&w, a, 5 * MS, MS);
		h->listed = 0; /* detached by the registry */
		run(&w, a, 3 * HOLD, MS);
		if (bound) {
			assert_int_equal(holder(&w, 0), 20);
		} else {
			assert_int_equal(holder(&w, 0), 0);
			assert_true(snap(a, 0).blocked_ns > 2 * HOLD);
			h->exists = 0; /* it exits at last */
			run(&w, a, 2 * MS, MS);
			assert_int_equal(holder(&w, 0), 20);
		}
		procctl_arbiter_free(a);
	}
}

/* A lone holder whose lease lapsed cannot use its grant any more; it
 * declines it, gets it revoked, and a fresh one follows. */
static void declined_grant_replaced(void **state)
{
	struct world w;
	procctl_arbiter_t *a;
	struct fproc *h;
	procctl_resource_t r = gpu(0);
	uint64_t first;
	(void)state;
	memset(&w, 0, sizeof w);
	w.ready = 1;
	h = proc(&w, 10);
	h->wants[0] = 1;
	a = arbiter(&w, 0, NULL);
	run(&w, a, 10 * MS, MS);
	first = entry(h, &r)->grant_id;
	h->declines = (int)h->gen; /* everything it saw so far is void */
	run(&w, a, 10 * MS, MS);
	assert_non_null(entry(h, &r));
	assert_true(entry(h, &r)->grant_id != first);
	assert_int_equal(w.p[0].rep[0].state, PROCCTL_RES_HOLDING);
	procctl_arbiter_free(a);
}

/* A holder slow to look at its grant still gets a whole turn: the turn
 * starts when its report shows the grant taken up. */
static void turn_starts_at_take_up(void **state)
{
	struct world w;
	procctl_arbiter_t *a;
	struct fproc *h;
	procctl_resource_t r = gpu(0);
	(void)state;
	memset(&w, 0, sizeof w);
	w.ready = 1;
	h = proc(&w, 10);
	h->wants[0] = 1;
	all_cooperate(&w); /* IDLE, wanting */
	h->slow = 1;
	proc(&w, 20)->wants[0] = 1;
	a = arbiter(&w, 0, NULL);
	run(&w, a, HOLD * 8 / 10, MS);
	assert_int_equal(holder(&w, 0), 10);
	assert_int_equal(h->rep[0].state, PROCCTL_RES_IDLE); /* not taken up yet */
	h->slow = 0;
	run(&w, a, HOLD * 9 / 10, MS); /* 1.7 hold times after the grant */
	assert_int_equal(holder(&w, 0), 10);
	assert_int_equal(entry(h, &r)->revoke_gen, 0);
	run(&w, a, HOLD * 2 / 10, MS); /* its turn is over */
	assert_int_equal(holder(&w, 0), 20);
	procctl_arbiter_free(a);
}

/* With a doorbell source a tick reads only the targets that rang (and
 * every target every 20 ms): far fewer reads, the same rotation; a ring
 * that was lost delays the hand-off to the next refresh, nothing worse. */
static void reads_follow_doorbells(void **state)
{
	struct world w;
	procctl_arbiter_t *a;
	struct fproc *p10, *p20;
	pid_t first;
	int ticks = 300;
	(void)state;
	memset(&w, 0, sizeof w);
	w.ready = 1;
	p10 = proc(&w, 10);
	p20 = proc(&w, 20);
	p10->wants[0] = p20->wants[0] = 1;
	all_cooperate(&w);
	w.doorbells = 1;
	a = arbiter(&w, 0, NULL);
	run(&w, a, (uint64_t)ticks * MS, MS); /* three hold times */
	print_message("%d reads in %d ticks of 2 targets\n", w.reads, ticks);
	assert_true(w.reads < ticks); /* every tick would read 2 */
	assert_true(snap(a, 0).handoffs >= 2);

	/* The holder's release is not heard: the next refresh sees it. */
	first = holder(&w, 0);
	(first == 10 ? p10 : p20)->mute = 1;
	run(&w, a, HOLD + 25 * MS, MS);
	assert_true(holder(&w, 0) != first);
	assert_true(snap(a, 0).pending_ns > 0);
	procctl_arbiter_free(a);
}

static int not_odd(void *arg, const struct procctl_arb_target *t)
{
	(void)arg;
	return t->pid % 2 == 0;
}

/* Resources are arbitrated independently; admission is a policy. */
static void independent_and_admitted(void **state)
{
	struct world w;
	procctl_arbiter_t *a;
	struct fproc *p;
	(void)state;
	memset(&w, 0, sizeof w);
	w.ready = 1;
	proc(&w, 10)->wants[0] = 1;
	proc(&w, 20)->wants[1] = 1;
	p = proc(&w, 30);
	p->wants[0] = p->wants[1] = 1;
	proc(&w, 41)->wants[0] = 1; /* not admitted */
	a = arbiter(&w, 0, not_odd);
	run(&w, a, 10 * MS, MS);
	assert_int_equal(holder(&w, 0), 10);
	assert_int_equal(holder(&w, 1), 20);
	run(&w, a, 2 * HOLD, MS);
	assert_int_equal(holder(&w, 0), 10); /* 30 again: gpu 0 went 10 -> 30 -> 10 */
	run(&w, a, 10 * HOLD, MS);
	assert_true(snap(a, 0).handoffs >= 8);
	assert_true(snap(a, 1).handoffs >= 8);
	{
		int k;
		procctl_resource_t r = gpu(0);
		for (k = 0; k < w.n; k++)
			if (w.p[k].pid == 41)
				assert_null(entry(&w.p[k], &r));
	}
	procctl_arbiter_free(a);
}

/* How many resources the arbiter knows. */
static size_t known(procctl_arbiter_t *a)
{
	struct procctl_arbiter_snapshot s[PROCCTL_ARB_MAX_RESOURCES];
	return procctl_arbiter_snapshot(a, s, PROCCTL_ARB_MAX_RESOURCES);
}

/* What processes ask for is learned only from admitted ones, at most 8
 * per process, and forgotten when nobody uses it: a process naming 64
 * resources cannot fill the table for everyone, and what it filled is
 * free again when it exits. */
static void learning_bounded(void **state)
{
	struct world w;
	procctl_arbiter_t *a;
	struct fproc *filler, *next;
	(void)state;
	memset(&w, 0, sizeof w);
	w.ready = 1;
	proc(&w, 41)->nmore = 64; /* not admitted */
	a = arbiter(&w, 0, not_odd);
	run(&w, a, 5 * MS, MS);
	assert_int_equal(known(a), 2); /* the two configured */
	filler = proc(&w, 50);
	filler->nmore = 64;
	run(&w, a, 5 * MS, MS);
	assert_int_equal(known(a), 2 + 8);
	/* it holds one of them now; when it exits, its grants go and so do
	 * the resources only it asked for */
	filler->alive = -ESRCH;
	filler->listed = 0;
	filler->exists = 0;
	run(&w, a, 5 * MS, MS);
	assert_int_equal(known(a), 2);
	/* room for the next one, which gets what it asks for */
	next = proc(&w, 60);
	next->nmore = 3;
	run(&w, a, 5 * MS, MS);
	assert_int_equal(known(a), 2 + 3);
	{
		struct procctl_arbiter_snapshot s[8];
		size_t i, n = procctl_arbiter_snapshot(a, s, 8), held = 0;
		for (i = 2; i < n; i++)
			held += s[i].holder_pid == 60;
		assert_int_equal(held, 3);
	}
	/* a release is still confirmed first: stopping to ask is not enough
	 * while it holds them; its exit is. The configured ones are never
	 * forgotten. */
	next->nmore = 0;
	run(&w, a, 5 * HOLD, MS);
	assert_int_equal(known(a), 2 + 3);
	next->alive = -ESRCH;
	next->listed = next->exists = 0;
	run(&w, a, 5 * MS, MS);
	assert_int_equal(known(a), 2);
	procctl_arbiter_free(a);
}

static void bad_options(void **state)
{
	struct world w;
	struct procctl_arbiter_source src;
	struct procctl_arbiter_opts o;
	(void)state;
	memset(&w, 0, sizeof w);
	src = source(&w);
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.kind = 0; /* no kind */
	assert_null(procctl_arbiter_new(&o, &src));
	assert_int_equal(errno, EINVAL);
	o.kind = TH_GPU;
	src.grant = NULL;
	assert_null(procctl_arbiter_new(&o, &src));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rotation_in_order),
		cmocka_unit_test(lone_wanter_renewed),
		cmocka_unit_test(hung_holder_blocks),
		cmocka_unit_test(holder_not_a_waiter),
		cmocka_unit_test(stale_release_ignored),
		cmocka_unit_test(freed_entry_no_confirmation),
		cmocka_unit_test(adoption_after_handoff),
		cmocka_unit_test(exec_and_exit),
		cmocka_unit_test(declined_grant_replaced),
		cmocka_unit_test(turn_starts_at_take_up),
		cmocka_unit_test(reads_follow_doorbells),
		cmocka_unit_test(independent_and_admitted),
		cmocka_unit_test(learning_bounded),
		cmocka_unit_test(bad_options),
	};
	return TH_RUN(tests);
}
