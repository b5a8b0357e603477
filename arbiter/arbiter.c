/* SPDX-License-Identifier: Apache-2.0 */
/* arbiter.c - exclusive resources, one kind (SPEC.md section 9).
 *
 * Each tick looks at every target: its resource reports (untrusted) and the
 * grant entries this agent wrote to its region (trusted: the agent's own
 * copies). For each resource:
 *  - a revoked grant is confirmed released only by an IDLE or RELEASED
 *    report with the same grant id and a seen generation at or above the
 *    revocation's, or by the holder's exit (or exec, for process-bound
 *    kinds); then its entry is dropped;
 *  - a live (not revoked) grant is held, whatever its holder reports; with
 *    several (adopted after a hand-off) all are revoked; a single holder is
 *    revoked when it no longer wants the resource, when it saw the grant
 *    and declined it (its lease lapsed: the grant is void for it), or when
 *    its turn is over and someone else wants it: hold_ns after a report
 *    first showed the grant taken up (ACQUIRING or HOLDING), or hold_ns
 *    after the grant when none did; a lone wanter keeps it (renewed);
 *  - the resource is free only when no target holds a grant for it, live or
 *    revoked (an unreadable holder keeps its grant, and a revocation stays
 *    unconfirmed); a report of ACQUIRING, HOLDING or RELEASING without a
 *    grant of this agent's (written or adopted) is nobody's holding, the
 *    process's own risk (SPEC.md 9.6); then it goes to the next admitted
 *    wanter after the last holder, in a fixed order of (pid, instance).
 *  - a target the admission hook refuses counts for nothing it reports: it
 *    never wants, never teaches a resource; a grant it holds (adopted from
 *    an agent that admitted it) is revoked and confirmed as any other. 
 * Time during which someone wants a resource that cannot move is blocked.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "opts.h"
#include "procctl_arbiter.h"

struct res_state {
	procctl_resource_t res;
	pid_t holder_pid;
	uint64_t holder_instance, grant_id, granted_at, pending_since;
	uint64_t taken_at; /* a report first showed the grant taken up; 0: not yet */
	uint64_t blocked_ns, hold_total_ns, pending_ns, handoffs;
	pid_t last_pid; /* the last holder: round robin continues after it */
	uint64_t last_instance;
	uint32_t waiters;
	/* The last tick's first wanters (the holder may be among them):
	 * what a snapshot names as waiting. */
	struct procctl_arbiter_waiter wanting[PROCCTL_ARB_WAITING_MAX + 1];
	uint32_t nwanting;
	int learned;            /* from a report, not the options: forgotten once unused */
	pid_t learner_pid;      /* the target whose report added it */
	uint64_t learner_instance;
};

/* What one tick knows of one target. */
struct view {
	struct procctl_arb_target t;
	struct last_seen *s; /* its record (NULL: no room) */
	int alive, readable, admitted;
	int passed; /* stopped: passed over for this tick's grant */
	uint32_t nrep, ngr;
	struct procctl_res_entry rep[PROCCTL_RES_MAX];
	struct procctl_grant_entry gr[PROCCTL_GRANT_MAX];
};

/* What the last read of a target gave: its reports, kept while its
 * doorbell is quiet (source.changed), for REFRESH_NS at most. */
struct last_seen {
	pid_t pid;
	uint64_t instance;
	uint64_t tick;    /* the last tick that listed it */
	uint64_t read_at; /* 0: never read */
	int readable;
	uint32_t nrep;
	struct procctl_res_entry rep[PROCCTL_RES_MAX];
};

#define CAP_MIN 64 /* targets a tick has room for at first; grown to as many as the source has */
#define CAP_MAX (1u << 24)
#define REFRESH_NS 20000000ull
#define QUIET_NS 1000000000ull
#define UNREADABLE_NS 1000000000ull
#define NOT_READY_NS 100000000ull /* ready is asked again this often (it needs a scan) */

struct procctl_arbiter {
	struct procctl_arbiter_opts o;
	struct procctl_arbiter_source src;
	uint32_t kind;
	struct res_state res[PROCCTL_ARB_MAX_RESOURCES];
	size_t nres;
	uint64_t last_tick;
	uint64_t next_due;      /* procctl_arbiter_next_tick */
	/* Room for cap targets, made at the start of a tick that lists more:
	 * a tick always sees every target (one left out could be a holder,
	 * taken for gone). */
	size_t cap;
	struct procctl_arb_target *ts; /* cap: the source's list */
	struct view *views;            /* cap, reused each tick */
	struct view **live;            /* cap: a survey's holders */
	struct last_seen *seen;        /* 2 * cap: this tick's and the last's */
	size_t nseen;
	uint32_t *seen_ix; /* 4 * cap slots: seen by (pid, instance), index + 1, open addressing; 0 empty */
	uint64_t ticks;
};

static int same_key(const procctl_resource_t *a, uint32_t kind, const uint8_t id[16])
{
	return a->kind == kind && !memcmp(a->id, id, 16);
}

static int find_res(procctl_arbiter_t *a, uint32_t kind, const uint8_t id[16])
{
	size_t i;
	for (i = 0; i < a->nres; i++)
		if (same_key(&a->res[i].res, kind, id))
			return (int)i;
	return -1;
}

static int add_res(procctl_arbiter_t *a, const procctl_resource_t *r)
{
	int i;
	if (r->kind != a->kind)
		return -EINVAL;
	i = find_res(a, r->kind, r->id);
	if (i >= 0)
		return i;
	if (a->nres >= PROCCTL_ARB_MAX_RESOURCES)
		return -ENOSPC;
	memset(&a->res[a->nres], 0, sizeof a->res[a->nres]);
	a->res[a->nres].res.kind = r->kind;
	memcpy(a->res[a->nres].res.id, r->id, sizeof r->id);
	return (int)a->nres++;
}

#define LEARN_PER_TARGET 8 /* the default of opts.learn_max_per_target */

/* Learn r from v's report: only from an admitted target, and at most
 * learn_max_per_target resources added by one target (what a process
 * names is untrusted: one cannot fill the table for everyone). */
static void learn(procctl_arbiter_t *a, const struct view *v, const procctl_resource_t *r)
{
	uint32_t max = a->o.learn_max_per_target ? a->o.learn_max_per_target : LEARN_PER_TARGET, mine = 0;
	size_t i;
	int at;
	if (!v->admitted || find_res(a, r->kind, r->id) >= 0)
		return;
	for (i = 0; i < a->nres; i++)
		mine += a->res[i].learned && a->res[i].learner_pid == v->t.pid &&
			a->res[i].learner_instance == v->t.instance_id;
	if (mine >= max || (at = add_res(a, r)) < 0)
		return;
	a->res[at].learned = 1;
	a->res[at].learner_pid = v->t.pid;
	a->res[at].learner_instance = v->t.instance_id;
}

static int make_room(procctl_arbiter_t *a, size_t want);

_Static_assert(sizeof(struct procctl_arbiter_opts) == PROCCTL_OPTS_END(struct procctl_arbiter_opts, admit_arg),
	       "no trailing padding (opts.h)");
_Static_assert(sizeof(struct procctl_arbiter_source) == PROCCTL_OPTS_END(struct procctl_arbiter_source, stopped),
	       "no trailing padding (opts.h)");

procctl_arbiter_t *procctl_arbiter_new(const struct procctl_arbiter_opts *opts,
				       const struct procctl_arbiter_source *source)
{
	struct procctl_arbiter_opts mine, *o = &mine;
	struct procctl_arbiter_source their, *src = &their;
	procctl_arbiter_t *a;
	size_t i;

	if (!opts || procctl_opts_take(o, sizeof *o, opts) < 0 || !source ||
	    procctl_opts_take(src, sizeof *src, source) < 0 || !src->targets || !src->ready || !src->reports ||
	    !src->grants || !src->grant || !src->revoke || !src->drop || !src->alive || !src->pid_exists ||
	    !src->now || !src->random_id || !o->kind || o->nresources > PROCCTL_ARB_MAX_RESOURCES || (o->nresources && !o->resources) ||
	    (o->flags & ~(PROCCTL_ARB_PROCESS_BOUND | PROCCTL_ARB_READY_EVENTS))) {
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	if (make_room(a, CAP_MIN) < 0) {
		procctl_arbiter_free(a);
		errno = ENOMEM;
		return NULL;
	}
	a->o = *o;
	a->src = *src;
	a->kind = o->kind;
	for (i = 0; i < o->nresources; i++)
		if (add_res(a, &o->resources[i]) < 0) {
			procctl_arbiter_free(a);
			errno = EINVAL;
			return NULL;
		}
	return a;
}

void procctl_arbiter_free(procctl_arbiter_t *a)
{
	if (!a)
		return;
	free(a->ts);
	free(a->views);
	free(a->live);
	free(a->seen);
	free(a->seen_ix);
	free(a);
}

static const struct procctl_res_entry *report_of(const struct view *v, const procctl_resource_t *r)
{
	uint32_t i;
	for (i = 0; i < v->nrep; i++)
		if (same_key(r, v->rep[i].kind, v->rep[i].id))
			return &v->rep[i];
	return NULL;
}

static const struct procctl_grant_entry *grant_of(const struct view *v, const procctl_resource_t *r)
{
	uint32_t i;
	for (i = 0; i < v->ngr; i++)
		if (same_key(r, v->gr[i].kind, v->gr[i].id))
			return &v->gr[i];
	return NULL;
}

/* The slot of (pid, instance) in seen_ix, or of the empty one it would take. */
static size_t seen_slot(const procctl_arbiter_t *a, pid_t pid, uint64_t instance)
{
	size_t mask = 4 * a->cap - 1;
	size_t i = (size_t)(((uint64_t)(uint32_t)pid * 0x9e3779b97f4a7c15ull ^ instance) * 0x9e3779b97f4a7c15ull >> 32);
	for (i &= mask; a->seen_ix[i]; i = (i + 1) & mask) {
		const struct last_seen *s = &a->seen[a->seen_ix[i] - 1];
		if (s->pid == pid && s->instance == instance)
			break;
	}
	return i;
}

/* t's record, made when it has none (NULL: no room), marked as listed. */
static struct last_seen *seen_of(procctl_arbiter_t *a, const struct procctl_arb_target *t)
{
	size_t i = seen_slot(a, t->pid, t->instance_id);
	struct last_seen *s;
	if (a->seen_ix[i]) {
		s = &a->seen[a->seen_ix[i] - 1];
	} else {
		if (a->nseen >= 2 * a->cap)
			return NULL;
		s = &a->seen[a->nseen++];
		memset(s, 0, offsetof(struct last_seen, rep));
		s->pid = t->pid;
		s->instance = t->instance_id;
		a->seen_ix[i] = (uint32_t)a->nseen;
	}
	s->tick = a->ticks;
	return s;
}

/* seen_ix made again from seen. */
static void seen_index(procctl_arbiter_t *a)
{
	size_t i;
	memset(a->seen_ix, 0, 4 * a->cap * sizeof *a->seen_ix);
	for (i = 0; i < a->nseen; i++)
		a->seen_ix[seen_slot(a, a->seen[i].pid, a->seen[i].instance)] = (uint32_t)(i + 1);
}

/* The records of targets this tick did not list go; the index is made
 * again when any did, and the n views' records found again. */
static void seen_forget(procctl_arbiter_t *a, size_t n)
{
	size_t i, kept = a->nseen;
	for (i = 0; i < a->nseen;)
		if (a->seen[i].tick != a->ticks)
			a->seen[i] = a->seen[--a->nseen];
		else
			i++;
	if (kept == a->nseen)
		return;
	seen_index(a);
	for (i = 0; i < n; i++)
		if (a->views[i].s)
			a->views[i].s = &a->seen[a->seen_ix[seen_slot(a, a->views[i].t.pid, a->views[i].t.instance_id)] - 1];
}

/* Room for want targets (a power of two at least CAP_MIN): 0, or -ENOMEM
 * with the room there was. Between ticks only: no view points into seen. */
static int make_room(procctl_arbiter_t *a, size_t want)
{
	size_t cap = a->cap ? a->cap : CAP_MIN;
	struct procctl_arb_target *ts;
	struct view *views, **live;
	struct last_seen *seen;
	uint32_t *ix;
	if (want > CAP_MAX)
		return -ENOMEM;
	while (cap < want)
		cap *= 2;
	if (cap == a->cap)
		return 0;
	ts = realloc(a->ts, cap * sizeof *ts);
	if (ts)
		a->ts = ts;
	views = realloc(a->views, cap * sizeof *views);
	if (views)
		a->views = views;
	live = realloc(a->live, cap * sizeof *live);
	if (live)
		a->live = live;
	seen = realloc(a->seen, 2 * cap * sizeof *seen);
	if (seen)
		a->seen = seen;
	ix = malloc(4 * cap * sizeof *ix);
	if (!ts || !views || !live || !seen || !ix) {
		free(ix);
		return -ENOMEM; /* what was made bigger stays so: the old room holds */
	}
	free(a->seen_ix);
	a->seen_ix = ix;
	a->cap = cap;
	seen_index(a);
	return 0;
}

/* The target's reports into v: read them, or the last ones read while its
 * doorbell was quiet. Confirmations stay sound on an older report (one
 * that saw a revocation never stops being true), and grants are the
 * agent's own copies, never cached. */
static void reports_of(procctl_arbiter_t *a, struct view *v, struct last_seen *s, uint64_t now)
{
	/* Asked first, every tick: a ring after this is read next tick. */
	int quiet = s && a->src.changed && a->src.changed(a->src.ctx, v->t.handle) == 0, k;
	/* A read that timed out cost the whole deadline on this thread: the
	 * target stays unreadable (a holder keeps its grant) for a while,
	 * whatever it rings, so one stalled process cannot slow every tick. */
	int stalled = s && s->read_at && !s->readable && now - s->read_at < UNREADABLE_NS;
	/* Quiet, it is read again after REFRESH_NS while it has a grant
	 * entry; else after QUIET_NS (a thousand waiters read every 20 ms cost
	 * a core). */
	uint64_t every = v->ngr ? REFRESH_NS : QUIET_NS;
	if (stalled || (quiet && s->read_at && now - s->read_at < every)) {
		v->readable = s->readable;
		v->nrep = s->nrep;
		memcpy(v->rep, s->rep, (size_t)s->nrep * sizeof *v->rep);
		return;
	}
	k = a->src.reports(a->src.ctx, v->t.handle, v->rep, PROCCTL_RES_MAX);
	v->readable = k >= 0;
	v->nrep = k > 0 ? (uint32_t)k : 0;
	if (s) {
		s->read_at = now ? now : 1;
		s->readable = v->readable;
		s->nrep = v->nrep;
		memcpy(s->rep, v->rep, (size_t)v->nrep * sizeof *v->rep);
	}
}

/* Read every target into a->views; learn resources from reports that want
 * them; keep what each readable target showed. The count, or -ENOMEM
 * when there is no room for all (the tick then does nothing). */
static ssize_t look(procctl_arbiter_t *a, uint64_t now)
{
	struct procctl_arb_target *ts;
	size_t n, i;
	while ((n = a->src.targets(a->src.ctx, a->ts, a->cap)) > a->cap)
		if (make_room(a, n) < 0)
			return -ENOMEM;
	ts = a->ts;
	a->ticks++;
	for (i = 0; i < n; i++) {
		struct view *v = &a->views[i];
		struct last_seen *s;
		int k;
		memset(v, 0, offsetof(struct view, rep));
		v->t = ts[i];
		v->alive = a->src.alive(a->src.ctx, v->t.handle);
		v->admitted = !a->o.admit || a->o.admit(a->o.admit_arg, &v->t);
		k = a->src.grants(a->src.ctx, v->t.handle, v->gr, PROCCTL_GRANT_MAX);
		v->ngr = k > 0 ? (uint32_t)k : 0;
		s = v->s = seen_of(a, &v->t);
		reports_of(a, v, s, now);
		if (v->readable) {
			uint32_t j;
			for (j = 0; j < v->nrep; j++)
				if (v->rep[j].kind == a->kind && (v->rep[j].flags & PROCCTL_RES_F_WANT)) {
					procctl_resource_t res;
					procctl_resource(&res, v->rep[j].kind, v->rep[j].id);
					learn(a, v, &res);
				}
		}
	}
	seen_forget(a, n); /* the targets that are gone */
	return (ssize_t)n;
}

/* The holder is gone: exited, or exec'd for a process-bound kind. */
static int gone(const procctl_arbiter_t *a, const struct view *v)
{
	return v->alive == -ESRCH || (v->alive == -ESTALE && (a->o.flags & PROCCTL_ARB_PROCESS_BOUND));
}

static int wants(const struct view *v, const procctl_resource_t *r)
{
	const struct procctl_res_entry *e = report_of(v, r);
	return v->admitted && v->readable && v->alive == 0 && e && (e->flags & PROCCTL_RES_F_WANT);
}

static int before(pid_t p1, uint64_t i1, pid_t p2, uint64_t i2)
{
	return p1 < p2 || (p1 == p2 && i1 < i2);
}

/* The next wanter in turn (pid, instance order, after the last holder),
 * of those not passed over unless all. */
static struct view *in_turn(procctl_arbiter_t *a, size_t n, const struct res_state *rs, int all)
{
	struct view *first = NULL, *after = NULL;
	size_t i;
	for (i = 0; i < n; i++) {
		struct view *v = &a->views[i];
		if (!wants(v, &rs->res) || (v->passed && !all))
			continue;
		if (!first || before(v->t.pid, v->t.instance_id, first->t.pid, first->t.instance_id))
			first = v;
		if (before(rs->last_pid, rs->last_instance, v->t.pid, v->t.instance_id) &&
		    (!after || before(v->t.pid, v->t.instance_id, after->t.pid, after->t.instance_id)))
			after = v;
	}
	return after ? after : first;
}

/* The wanter to grant to: the next in turn that is not stopped; when all
 * are, the next in turn. */
static struct view *next_wanter(procctl_arbiter_t *a, size_t n, const struct res_state *rs)
{
	struct view *w = in_turn(a, n, rs, 0);
	while (w && a->src.stopped && a->src.stopped(a->src.ctx, w->t.pid)) {
		w->passed = 1;
		w = in_turn(a, n, rs, 0);
	}
	return w ? w : in_turn(a, n, rs, 1);
}

static void set_holder(struct res_state *rs, const struct view *v, uint64_t grant_id, uint64_t now)
{
	rs->holder_pid = v->t.pid;
	rs->holder_instance = v->t.instance_id;
	rs->grant_id = grant_id;
	rs->granted_at = now;
	rs->taken_at = 0;
}

/* What one tick finds about a resource, before it acts. */
struct survey {
	size_t nlive;
	int pending; /* a revocation not confirmed yet */
	int revoked; /* a revoked grant, confirmed this tick or not */
	int busy;    /* its holder left the targets but lives on (not process-bound) */
	int err;     /* the first failure of a source call */
	uint32_t waiters, holder_wants;
	struct view **live; /* holding a grant not revoked: nlive of them (the arbiter's room) */
};

static void first_err(struct survey *sv, int64_t r)
{
	if (r < 0 && !sv->err)
		sv->err = (int)r;
}

static int is_holder(const struct res_state *rs, const struct view *v)
{
	return rs->holder_pid == v->t.pid && rs->holder_instance == v->t.instance_id;
}

/* A revoked grant: confirmed only by a report about this grant that saw
 * the revocation (SPEC.md 9.5), which drops it. */
static void revoked_grant(procctl_arbiter_t *a, struct res_state *rs, struct view *v,
			  const struct procctl_grant_entry *g, struct survey *sv)
{
	const struct procctl_res_entry *e = report_of(v, &rs->res);
	sv->revoked = 1;
	if (v->readable && e && e->grant_id == g->grant_id && e->seen_gen >= g->revoke_gen &&
	    (e->state == PROCCTL_RES_IDLE || e->state == PROCCTL_RES_RELEASED)) {
		first_err(sv, a->src.drop(a->src.ctx, v->t.handle, &rs->res));
		if (is_holder(rs, v))
			rs->holder_pid = 0;
	} else {
		sv->pending = 1;
	}
}

static void survey(procctl_arbiter_t *a, size_t n, struct res_state *rs, struct survey *sv)
{
	int holder_listed = 0;
	size_t i;

	rs->nwanting = 0;
	for (i = 0; i < n; i++) {
		struct view *v = &a->views[i];
		const struct procctl_grant_entry *g = grant_of(v, &rs->res);

		if (is_holder(rs, v)) {
			holder_listed = 1;
			if (gone(a, v))
				rs->holder_pid = 0; /* released by its exit (or exec, process-bound) */
		}
		if (wants(v, &rs->res)) {
			sv->waiters++;
			sv->holder_wants |= (uint32_t)is_holder(rs, v);
			if (rs->nwanting < PROCCTL_ARB_WAITING_MAX + 1)
				rs->wanting[rs->nwanting++] = (struct procctl_arbiter_waiter){v->t.pid, 0, v->t.instance_id};
		}
		if (gone(a, v))
			continue; /* its region, and any grant in it, go with it */
		if (g && g->revoke_gen)
			revoked_grant(a, rs, v, g, sv);
		else if (g)
			sv->live[sv->nlive++] = v;
		/* a report of use without a grant of ours is nobody's holding */
	}
	/* A holder that left the targets: exited, or exec'd (the registry
	 * detaches both). Free only when the kind dies with the image, or the
	 * pid is gone. */
	if (rs->holder_pid && !holder_listed) {
		if ((a->o.flags & PROCCTL_ARB_PROCESS_BOUND) || !a->src.pid_exists(a->src.ctx, rs->holder_pid))
			rs->holder_pid = 0;
		else
			sv->busy = 1;
	}
}

/* Several holders (adopted after a hand-off): revoke them all and wait for
 * every confirmation (SPEC.md 9.6). */
static void revoke_all(procctl_arbiter_t *a, struct res_state *rs, struct survey *sv, uint64_t now)
{
	size_t i;
	for (i = 0; i < sv->nlive; i++)
		first_err(sv, a->src.revoke(a->src.ctx, sv->live[i]->t.handle, &rs->res));
	sv->pending = 1;
	sv->nlive = 0;
	if (!rs->pending_since)
		rs->pending_since = now;
}

/* One holder: its turn goes on, or its grant is taken back. */
static int one_holder(procctl_arbiter_t *a, struct res_state *rs, struct survey *sv, uint64_t now, uint64_t dt)
{
	struct view *h = sv->live[0];
	const struct procctl_grant_entry *g = grant_of(h, &rs->res);
	const struct procctl_res_entry *e = report_of(h, &rs->res);
	uint32_t others = sv->waiters - (wants(h, &rs->res) ? 1u : 0u);
	int about, declined;

	if (!is_holder(rs, h) || rs->grant_id != g->grant_id)
		set_holder(rs, h, g->grant_id, now); /* adopted: a grant this arbiter did not give */
	rs->hold_total_ns += dt;
	rs->waiters = others;
	about = h->readable && e && e->grant_id == g->grant_id && e->seen_gen >= g->gen;
	/* Saw this grant and does not use it (a lapse voided it, SPEC.md 9.3):
	 * it needs a fresh one, so this one is taken back. */
	declined = about && (e->state == PROCCTL_RES_IDLE || e->state == PROCCTL_RES_RELEASED);
	/* The turn starts at the take-up: a holder slow to look at its grant
	 * still gets all of hold_ns. */
	if (!rs->taken_at && about && (e->state == PROCCTL_RES_ACQUIRING || e->state == PROCCTL_RES_HOLDING))
		rs->taken_at = now;
	if ((h->readable && !wants(h, &rs->res)) || declined ||
	    (others && now - (rs->taken_at ? rs->taken_at : rs->granted_at) >= a->o.hold_ns)) {
		/* It does not want it any more, declined it, or its turn is over:
		 * take it back; it stays its holder until the release is
		 * confirmed. */
		first_err(sv, a->src.revoke(a->src.ctx, h->t.handle, &rs->res));
		rs->pending_since = now;
	} else if (others && !h->readable) {
		rs->blocked_ns += dt; /* a hung holder */
	}
	return sv->err;
}

/* No live grant: wait for what is in the way, or grant the next wanter. */
static int grant_next(procctl_arbiter_t *a, size_t n, struct res_state *rs, struct survey *sv, uint64_t now,
		      uint64_t dt)
{
	struct view *w;
	uint64_t id;
	int64_t r;

	rs->waiters = sv->waiters - (rs->holder_pid ? sv->holder_wants : 0u); /* a holder waiting for its release confirmed */
	if (sv->pending || sv->busy || rs->holder_pid) {
		if (sv->waiters)
			rs->blocked_ns += dt; /* a release not confirmed yet, or a user we cannot see */
		if (!rs->pending_since)
			rs->pending_since = now;
		return sv->err;
	}
	rs->pending_since = 0;
	if (!sv->waiters)
		return sv->err;
	w = next_wanter(a, n, rs);
	id = a->src.random_id(a->src.ctx);
	r = a->src.grant(a->src.ctx, w->t.handle, &rs->res, id);
	if (r < 0)
		return sv->err ? sv->err : (int)r;
	if (rs->last_pid && (rs->last_pid != w->t.pid || rs->last_instance != w->t.instance_id))
		rs->handoffs++;
	rs->last_pid = w->t.pid;
	rs->last_instance = w->t.instance_id;
	set_holder(rs, w, id, now);
	rs->waiters = sv->waiters - 1;
	return sv->err;
}

static int arbitrate(procctl_arbiter_t *a, size_t n, struct res_state *rs, uint64_t now, uint64_t dt)
{
	struct survey sv;

	memset(&sv, 0, sizeof sv);
	sv.live = a->live;
	survey(a, n, rs, &sv);
	if (sv.revoked) {
		rs->pending_ns += dt;
		if (sv.waiters && !sv.pending)
			rs->blocked_ns += dt; /* waited for this confirmation */
	}
	if (sv.nlive > 1)
		revoke_all(a, rs, &sv, now);
	if (sv.nlive == 1)
		return one_holder(a, rs, &sv, now, dt);
	return grant_next(a, n, rs, &sv, now, dt);
}

/* 1 when nobody has anything to do with resource r: no holder, no
 * revocation pending, no grant entry, no admitted target that wants it. */
static int unused(const procctl_arbiter_t *a, size_t n, size_t r)
{
	const struct res_state *rs = &a->res[r];
	size_t i;
	if (rs->holder_pid || rs->pending_since)
		return 0;
	for (i = 0; i < n; i++) {
		const struct view *v = &a->views[i];
		const struct procctl_res_entry *e = report_of(v, &rs->res);
		if (grant_of(v, &rs->res) || (e && v->admitted && (e->flags & PROCCTL_RES_F_WANT)))
			return 0;
	}
	return 1;
}

/* Forget learned resources nobody uses any more (their learner exited,
 * or stopped asking): the table keeps room for the others. The last
 * entry takes the freed slot. */
static void forget_unused(procctl_arbiter_t *a, size_t n)
{
	size_t r;
	for (r = a->nres; r-- > 0;) {
		if (!a->res[r].learned || !unused(a, n, r))
			continue;
		if (r != --a->nres)
			a->res[r] = a->res[a->nres];
	}
}

/* When the n targets just looked at need the next tick if nothing rings,
 * attaches or detaches (UINT64_MAX: never). A write that failed (err) is
 * tried again at the next refresh. */
static uint64_t next_due(const procctl_arbiter_t *a, size_t n, uint64_t now, int err)
{
	uint64_t due = err ? now + REFRESH_NS : UINT64_MAX;
	size_t i;
	for (i = 0; i < a->nres; i++) {
		const struct res_state *rs = &a->res[i];
		uint64_t at = UINT64_MAX;
		if (rs->pending_since) /* a release to confirm, a user to see go: read as refreshes go */
			at = now + REFRESH_NS;
		else if (rs->holder_pid && rs->waiters) /* its turn ends */
			at = (rs->taken_at ? rs->taken_at : rs->granted_at) + a->o.hold_ns;
		if (at < due)
			due = at;
	}
	for (i = 0; i < n; i++) /* an unreadable target is tried again */
		if (!a->views[i].readable && a->views[i].s && a->views[i].s->read_at + UNREADABLE_NS < due)
			due = a->views[i].s->read_at + UNREADABLE_NS;
	return due > now ? due : now + REFRESH_NS;
}

int procctl_arbiter_tick(procctl_arbiter_t *a)
{
	uint64_t now = a->src.now(a->src.ctx), dt = a->last_tick && now > a->last_tick ? now - a->last_tick : 0;
	ssize_t got;
	size_t n, r;
	int err = 0;

	a->last_tick = now;
	/* A passive agent, or one not ready since it took the lock, never
	 * grants, revokes or drops (SPEC.md 9.2, 9.6). */
	if (!a->src.ready(a->src.ctx)) {
		a->next_due = (a->o.flags & PROCCTL_ARB_READY_EVENTS) ? UINT64_MAX : now + NOT_READY_NS;
		return 0;
	}
	if ((got = look(a, now)) < 0) {
		a->next_due = now + NOT_READY_NS; /* no room to see them all: nothing is decided, until there is */
		return (int)got;
	}
	n = (size_t)got;
	for (r = 0; r < a->nres; r++) {
		int e = arbitrate(a, n, &a->res[r], now, dt);
		if (e && !err)
			err = e;
	}
	forget_unused(a, n);
	a->next_due = next_due(a, n, now, err);
	return err;
}

uint64_t procctl_arbiter_next_tick(const procctl_arbiter_t *a)
{
	return a->next_due;
}

static int by_pid(const void *x, const void *y)
{
	const struct procctl_arbiter_waiter *a = x, *b = y;
	return a->pid != b->pid ? (a->pid > b->pid) - (a->pid < b->pid) : (a->instance > b->instance) - (a->instance < b->instance);
}

/* Who waits for rs: its wanters but the holder, by pid. */
static uint32_t waiting(const struct res_state *rs, struct procctl_arbiter_waiter *out)
{
	uint32_t i, n = 0;
	for (i = 0; i < rs->nwanting && n < PROCCTL_ARB_WAITING_MAX; i++)
		if (!(rs->holder_pid && rs->wanting[i].pid == rs->holder_pid && rs->wanting[i].instance == rs->holder_instance))
			out[n++] = rs->wanting[i];
	qsort(out, n, sizeof *out, by_pid);
	return n;
}

size_t procctl_arbiter_snapshot(const procctl_arbiter_t *a, struct procctl_arbiter_snapshot *out, size_t max, size_t sz)
{
	uint64_t now = a->last_tick;
	size_t i;
	for (i = 0; sz && i < a->nres && i < max; i++) {
		const struct res_state *rs = &a->res[i];
		struct procctl_arbiter_snapshot s;
		memset(&s, 0, sizeof s);
		s.res = rs->res;
		s.holder_pid = rs->holder_pid;
		s.holder_instance = rs->holder_pid ? rs->holder_instance : 0;
		s.grant_id = rs->holder_pid ? rs->grant_id : 0;
		s.held_ns = rs->holder_pid && now > rs->granted_at ? now - rs->granted_at : 0;
		s.pending_since_ns = rs->pending_since;
		s.blocked_ns = rs->blocked_ns;
		s.hold_ns_total = rs->hold_total_ns;
		s.pending_ns = rs->pending_ns;
		s.handoffs = rs->handoffs;
		s.waiters = rs->waiters;
		s.nwaiting = waiting(rs, s.waiting);
		procctl_out_give((char *)out + i * sz, sz, &s, sizeof s);
	}
	return a->nres;
}
