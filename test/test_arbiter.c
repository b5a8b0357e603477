/* SPDX-License-Identifier: Apache-2.0 */
/* The arbiter against a fake world with a fake clock (deterministic): fake
 * processes keep grant tables the way regions do and answer the way the
 * token holder's loop does (SPEC.md 9.4), or misbehave on purpose. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arbworld.h"
#include "th.h"

static void rotation_in_order(void **state)
{
	struct world w;
	procctl_arbiter_t *a;
	pid_t seen[8];
	int k;
	(void)state;
	memset(&w, 0, sizeof w);
	w.ready = 1;
	aw_proc(&w, 30)->wants[0] = 1;
	aw_proc(&w, 10)->wants[0] = 1;
	aw_proc(&w, 20)->wants[0] = 1;
	a = aw_arbiter(&w, 0, NULL);
	for (k = 0; k < 8; k++) {
		aw_run(&w, a, HOLD / 2, MS);
		seen[k] = aw_holder(&w, 0);
		assert_true(seen[k] != 0);
		assert_int_equal(aw_snap(a, 0).holder_pid, seen[k]);
		assert_int_equal(aw_snap(a, 0).waiters, 2);
		aw_run(&w, a, HOLD / 2 + 10 * MS, MS);
	}
	/* pid order, round and round, each holding its whole turn */
	assert_int_equal(seen[0], 10);
	assert_int_equal(seen[1], 20);
	assert_int_equal(seen[2], 30);
	assert_int_equal(seen[3], 10);
	assert_int_equal(seen[4], 20);
	assert_true(aw_snap(a, 0).handoffs >= 7);
	assert_true(aw_snap(a, 0).hold_ns_total > 7 * HOLD);
	assert_true(aw_snap(a, 0).blocked_ns < HOLD); /* cooperating holders: a tick per hand-off */
	assert_int_equal(aw_holder(&w, 1), 0); /* nobody wants gpu 1 */
	procctl_arbiter_free(a);
}

/* A lone wanter keeps its grant past any number of hold times, though it
 * never reports it taken up (SPEC.md 9.2: a turn's end revokes only for
 * another wanter). */
static void lone_wanter_renewed(void **state)
{
	struct world w;
	procctl_arbiter_t *a;
	uint64_t id;
	(void)state;
	memset(&w, 0, sizeof w);
	w.ready = 1;
	aw_proc(&w, 10)->wants[0] = 1;
	a = aw_arbiter(&w, 0, NULL);
	aw_run(&w, a, 10 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 10);
	id = aw_snap(a, 0).grant_id;
	aw_run(&w, a, 10 * HOLD, MS);
	assert_int_equal(aw_holder(&w, 0), 10);
	assert_int_equal(aw_snap(a, 0).grant_id, id); /* no hand-off, no revoke */
	assert_int_equal(aw_snap(a, 0).handoffs, 0);
	assert_int_equal(aw_snap(a, 0).pending_since_ns, 0);
	/* It stops wanting: revoked, confirmed, free. */
	w.p[0].wants[0] = 0;
	aw_run(&w, a, 10 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 0);
	assert_int_equal(w.p[0].ngr, 0);
	procctl_arbiter_free(a);
}

/* A snapshot names who waits: every wanter but the holder, by pid, the
 * holder's turn going round; nobody once nobody else wants it. */
static void waiting_named(void **state)
{
	struct world w;
	procctl_arbiter_t *a;
	struct procctl_arbiter_snapshot s;
	uint32_t i;
	int turns;
	(void)state;
	memset(&w, 0, sizeof w);
	w.ready = 1;
	aw_proc(&w, 30)->wants[0] = 1;
	aw_proc(&w, 10)->wants[0] = 1;
	aw_proc(&w, 20)->wants[0] = 1;
	aw_all_cooperate(&w);
	a = aw_arbiter(&w, 0, NULL);
	for (turns = 0; turns < 3; turns++) {
		pid_t held;
		aw_run(&w, a, HOLD, MS);
		s = aw_snap(a, 0);
		held = s.holder_pid;
		assert_true(held == 10 || held == 20 || held == 30);
		assert_int_equal(s.waiters, 2);
		assert_int_equal(s.nwaiting, 2);
		for (i = 0; i < 2; i++) {
			assert_true(s.waiting[i].pid != held);
			assert_int_equal(s.waiting[i].instance, (uint64_t)s.waiting[i].pid * 1000u); /* aw_proc's */
			assert_int_equal(s.waiting[i].reserved, 0);
		}
		assert_true(s.waiting[0].pid < s.waiting[1].pid);
	}
	for (i = 0; i < 3; i++) /* only the holder wants it now */
		w.p[i].wants[0] = w.p[i].pid == aw_snap(a, 0).holder_pid;
	aw_run(&w, a, 10 * MS, MS);
	assert_int_equal(aw_snap(a, 0).nwaiting, 0);
	procctl_arbiter_free(a);
}

/* A holder that stops answering keeps the resource: it is revoked after
 * its turn but never confirmed, so nobody else gets it; the time counts as
 * blocked. A read that times out is not tried again for a second (each
 * costs the deadline on the loop). Its exit frees it. */
static void hung_holder_blocks(void **state)
{
	struct world w;
	procctl_arbiter_t *a = aw_two_wanters(&w, 0);
	struct fproc *h = &w.p[0];
	procctl_resource_t r = aw_gpu(0);
	(void)state;
	h->readable = 0; /* its state page stalls */
	h->nreads = 0;
	aw_run(&w, a, 5 * HOLD, MS);
	assert_int_equal(h->nreads, 1);
	assert_null(aw_entry(&w.p[1], &r));
	assert_true(aw_snap(a, 0).blocked_ns >= 4 * HOLD);
	assert_true(aw_snap(a, 0).pending_ns >= 4 * HOLD);
	assert_true(aw_snap(a, 0).pending_since_ns > 0);
	assert_int_equal(aw_snap(a, 0).holder_pid, 10);
	/* SIGKILL: it exits; the registry detaches it; its pid is gone. */
	h->alive = -ESRCH;
	aw_run(&w, a, 2 * MS, MS);
	h->listed = 0;
	h->exists = 0;
	aw_run(&w, a, 2 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 20);
	procctl_arbiter_free(a);
}

/* A holder whose release is not confirmed yet is no waiter of its own
 * resource: waiters counts the others. */
static void holder_not_a_waiter(void **state)
{
	struct world w;
	procctl_arbiter_t *a = aw_two_wanters(&w, 0);
	struct fproc *h = &w.p[0];
	(void)state;
	aw_run(&w, a, HOLD / 2, MS);
	assert_int_equal(aw_snap(a, 0).waiters, 1);
	h->slow = 1; /* it still reports HOLDING, and wanting it */
	aw_run(&w, a, HOLD, MS);
	assert_true(aw_snap(a, 0).pending_since_ns > 0);
	assert_int_equal(aw_snap(a, 0).holder_pid, 10);
	assert_int_equal(aw_snap(a, 0).waiters, 1);
	h->slow = 0;
	aw_run(&w, a, 5 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 20);
	assert_int_equal(aw_snap(a, 0).waiters, 1);
	procctl_arbiter_free(a);
}

/* A release report from before the revocation does not count. */
static void stale_release_ignored(void **state)
{
	struct world w;
	procctl_arbiter_t *a = aw_two_wanters(&w, 0);
	struct fproc *h = &w.p[0];
	procctl_resource_t r = aw_gpu(0);
	(void)state;
	/* It says RELEASED about its grant, but saw only the grant's write. */
	h->readable = 1;
	w.now += HOLD;
	aw_all_cooperate(&w);
	h->rep[0].state = PROCCTL_RES_RELEASED;
	assert_int_equal(procctl_arbiter_tick(a), 0); /* revokes */
	assert_true(aw_entry(h, &r)->revoke_gen > h->rep[0].seen_gen);
	h->rep[0].state = PROCCTL_RES_RELEASED; /* same stale report */
	w.now += MS;
	assert_int_equal(procctl_arbiter_tick(a), 0);
	assert_non_null(aw_entry(h, &r)); /* not confirmed */
	assert_null(aw_entry(&w.p[1], &r));
	/* A report that saw the revocation confirms it. */
	aw_cooperate(h, 0);
	w.now += MS;
	assert_int_equal(procctl_arbiter_tick(a), 0);
	assert_null(aw_entry(h, &r));
	assert_non_null(aw_entry(&w.p[1], &r));
	procctl_arbiter_free(a);
}

/* A revoked holder that frees its entry (IDLE, nothing wanted, no grant
 * snapshot) confirms nothing (SPEC 9.5): the resource stays blocked until
 * a report about the grant confirms it, or the holder exits. */
static void freed_entry_no_confirmation(void **state)
{
	struct world w;
	procctl_arbiter_t *a = aw_two_wanters(&w, 0);
	struct fproc *h = &w.p[0];
	procctl_resource_t r = aw_gpu(0);
	(void)state;
	w.now += HOLD;
	aw_all_cooperate(&w);
	assert_int_equal(procctl_arbiter_tick(a), 0); /* its turn is over: revoked */
	assert_true(aw_entry(h, &r)->revoke_gen > 0);
	h->slow = 1;
	memset(&h->rep[0], 0, sizeof h->rep[0]); /* freed */
	w.now += MS;
	assert_int_equal(procctl_arbiter_tick(a), 0);
	aw_run(&w, a, 5 * HOLD, MS); /* the others keep cooperating */
	assert_non_null(aw_entry(h, &r)); /* still pending */
	assert_null(aw_entry(&w.p[1], &r));
	assert_true(aw_snap(a, 0).blocked_ns >= 4 * HOLD);
	/* A report about the grant that saw the revocation confirms it. */
	h->slow = 0;
	aw_run(&w, a, 5 * MS, MS);
	assert_null(aw_entry(h, &r));
	assert_int_equal(aw_holder(&w, 0), 20);
	procctl_arbiter_free(a);
}

/* A successor finds two live grants (its predecessor's, or a bug): it
 * revokes both and grants only after both are confirmed. A process that
 * reports HOLDING without a grant holds nothing (SPEC.md 9.6: its own
 * risk). Nothing happens before ready. */
static void adoption_after_handoff(void **state)
{
	struct world w;
	procctl_arbiter_t *a;
	struct fproc *p1, *p2, *p3;
	procctl_resource_t r = aw_gpu(0);
	int k;
	(void)state;
	memset(&w, 0, sizeof w);
	p1 = aw_proc(&w, 10);
	p2 = aw_proc(&w, 20);
	p3 = aw_proc(&w, 30);
	p1->wants[0] = p2->wants[0] = p3->wants[0] = 1;
	aw_grant(&w, p1, &r, 7);
	aw_grant(&w, p2, &r, 8);
	w.writes = 0;
	a = aw_arbiter(&w, 0, NULL);
	for (k = 0; k < 50; k++) { /* not ready: not a single write */
		w.now += MS;
		aw_all_cooperate(&w);
		assert_int_equal(procctl_arbiter_tick(a), 0);
	}
	assert_int_equal(w.writes, 0);
	w.ready = 1;
	w.now += MS;
	/* Both still say HOLDING (no revocation seen yet). */
	aw_all_cooperate(&w);
	p1->readable = 0; /* and one does not answer yet */
	assert_int_equal(procctl_arbiter_tick(a), 0);
	assert_true(aw_entry(p1, &r)->revoke_gen && aw_entry(p2, &r)->revoke_gen);
	aw_run(&w, a, 20 * MS, MS);
	assert_null(aw_entry(p2, &r));        /* confirmed and dropped */
	assert_non_null(aw_entry(p1, &r));    /* waiting on its confirmation */
	assert_int_equal(aw_holder(&w, 0), 0); /* nobody got it meanwhile */
	p1->readable = 1; /* read again a second after its read timed out */
	aw_run(&w, a, 900 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 0);
	aw_run(&w, a, 100 * MS, MS);
	assert_true(aw_holder(&w, 0) != 0);

	/* A stray user: HOLDING, then RELEASING, with no grant of ours: the
	 * wanter gets the resource at once, and nothing is blocked. */
	memset(&w, 0, sizeof w);
	w.ready = 1;
	p1 = aw_proc(&w, 10);
	p2 = aw_proc(&w, 20);
	p2->wants[0] = 1;
	procctl_arbiter_free(a);
	a = aw_arbiter(&w, 0, NULL);
	aw_all_cooperate(&w);
	p1->rep[0].state = PROCCTL_RES_HOLDING;
	w.now += MS;
	assert_int_equal(procctl_arbiter_tick(a), 0);
	assert_non_null(aw_entry(p2, &r));
	assert_int_equal(aw_snap(a, 0).blocked_ns, 0);
	aw_run(&w, a, 5 * MS, MS);
	p1->rep[0].state = PROCCTL_RES_RELEASING;
	aw_run(&w, a, 5 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 20);
	assert_int_equal(aw_snap(a, 0).blocked_ns, 0);
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
		procctl_arbiter_t *a = aw_two_wanters(&w, bound ? PROCCTL_ARB_PROCESS_BOUND : 0);
		struct fproc *h = &w.p[0];
		h->alive = -ESTALE;
		h->readable = 0;
		aw_run(&w, a, 5 * MS, MS);
		h->listed = 0; /* detached by the registry */
		aw_run(&w, a, 3 * HOLD, MS);
		if (bound) {
			assert_int_equal(aw_holder(&w, 0), 20);
		} else {
			assert_int_equal(aw_holder(&w, 0), 0);
			assert_true(aw_snap(a, 0).blocked_ns > 2 * HOLD);
			h->exists = 0; /* it exits at last */
			aw_run(&w, a, 2 * MS, MS);
			assert_int_equal(aw_holder(&w, 0), 20);
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
	procctl_resource_t r = aw_gpu(0);
	uint64_t first;
	(void)state;
	memset(&w, 0, sizeof w);
	w.ready = 1;
	h = aw_proc(&w, 10);
	h->wants[0] = 1;
	a = aw_arbiter(&w, 0, NULL);
	aw_run(&w, a, 10 * MS, MS);
	first = aw_entry(h, &r)->grant_id;
	h->declines = (int)h->gen; /* everything it saw so far is void */
	aw_run(&w, a, 10 * MS, MS);
	assert_non_null(aw_entry(h, &r));
	assert_true(aw_entry(h, &r)->grant_id != first);
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
	procctl_resource_t r = aw_gpu(0);
	(void)state;
	memset(&w, 0, sizeof w);
	w.ready = 1;
	h = aw_proc(&w, 10);
	h->wants[0] = 1;
	aw_all_cooperate(&w); /* IDLE, wanting */
	h->slow = 1;
	aw_proc(&w, 20)->wants[0] = 1;
	a = aw_arbiter(&w, 0, NULL);
	aw_run(&w, a, HOLD * 8 / 10, MS);
	assert_int_equal(aw_holder(&w, 0), 10);
	assert_int_equal(h->rep[0].state, PROCCTL_RES_IDLE); /* not taken up yet */
	h->slow = 0;
	aw_run(&w, a, HOLD * 9 / 10, MS); /* 1.7 hold times after the grant */
	assert_int_equal(aw_holder(&w, 0), 10);
	assert_int_equal(aw_entry(h, &r)->revoke_gen, 0);
	aw_run(&w, a, HOLD * 2 / 10, MS); /* its turn is over */
	assert_int_equal(aw_holder(&w, 0), 20);
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
	p10 = aw_proc(&w, 10);
	p20 = aw_proc(&w, 20);
	p10->wants[0] = p20->wants[0] = 1;
	aw_all_cooperate(&w);
	w.doorbells = 1;
	a = aw_arbiter(&w, 0, NULL);
	aw_run(&w, a, (uint64_t)ticks * MS, MS); /* three hold times */
	print_message("%d reads in %d ticks of 2 targets\n", w.reads, ticks);
	assert_true(w.reads < ticks); /* every tick would read 2 */
	assert_true(aw_snap(a, 0).handoffs >= 2);

	/* The holder's release is not heard: the next refresh sees it. */
	first = aw_holder(&w, 0);
	(first == 10 ? p10 : p20)->mute = 1;
	aw_run(&w, a, HOLD + 25 * MS, MS);
	assert_true(aw_holder(&w, 0) != first);
	assert_true(aw_snap(a, 0).pending_ns > 0);
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
	aw_proc(&w, 10)->wants[0] = 1;
	aw_proc(&w, 20)->wants[1] = 1;
	p = aw_proc(&w, 30);
	p->wants[0] = p->wants[1] = 1;
	aw_proc(&w, 41)->wants[0] = 1; /* not admitted */
	a = aw_arbiter(&w, 0, not_odd);
	aw_run(&w, a, 10 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 10);
	assert_int_equal(aw_holder(&w, 1), 20);
	aw_run(&w, a, 2 * HOLD, MS);
	assert_int_equal(aw_holder(&w, 0), 10); /* 30 again: gpu 0 went 10 -> 30 -> 10 */
	aw_run(&w, a, 10 * HOLD, MS);
	assert_true(aw_snap(a, 0).handoffs >= 8);
	assert_true(aw_snap(a, 1).handoffs >= 8);
	{
		int k;
		procctl_resource_t r = aw_gpu(0);
		for (k = 0; k < w.n; k++)
			if (w.p[k].pid == 41)
				assert_null(aw_entry(&w.p[k], &r));
	}
	procctl_arbiter_free(a);
}

/* A process admission refuses counts for nothing it reports: HOLDING or
 * RELEASING without a grant, and asking, too, block nobody while two
 * admitted holders take turns (before, the first stopped every hand-off
 * for as long as it said so); an admitted process saying the same is
 * nobody's holding either. */
static void refused_reports_count_for_nothing(void **state)
{
	static const uint32_t says[] = {PROCCTL_RES_HOLDING, PROCCTL_RES_RELEASING, PROCCTL_RES_ACQUIRING};
	size_t k;
	(void)state;
	for (k = 0; k < 2 * sizeof says / sizeof says[0]; k++) {
		struct world w;
		procctl_arbiter_t *a;
		struct fproc *liar;
		uint64_t handoffs;
		memset(&w, 0, sizeof w);
		w.ready = 1;
		aw_proc(&w, 10)->wants[0] = 1;
		aw_proc(&w, 20)->wants[0] = 1;
		liar = aw_proc(&w, k & 1 ? 30 : 41); /* 41: refused; 30: admitted */
		a = aw_arbiter(&w, 0, not_odd);
		aw_run(&w, a, 3 * HOLD, MS);
		handoffs = aw_snap(a, 0).handoffs;
		assert_true(handoffs >= 2);
		/* It says it uses the GPU with no grant (refused, it asks too: an
		 * admitted one that asked would be a wanter in turn). */
		liar->rep[0].state = says[k / 2];
		liar->rep[0].flags = k & 1 ? 0 : PROCCTL_RES_F_WANT;
		liar->slow = 1; /* its report stays as set */
		aw_run(&w, a, 10 * HOLD, MS);
		assert_true(aw_snap(a, 0).handoffs >= handoffs + 8);
		assert_true(aw_holder(&w, 0) == 10 || aw_holder(&w, 0) == 20);
		assert_int_equal(aw_snap(a, 0).waiters, 1); /* the other admitted one; the liar is no waiter */
		procctl_arbiter_free(a);
	}
}

/* How many resources the arbiter knows. */
static size_t known(procctl_arbiter_t *a)
{
	struct procctl_arbiter_snapshot s[PROCCTL_ARB_MAX_RESOURCES];
	return procctl_arbiter_snapshot(a, s, PROCCTL_ARB_MAX_RESOURCES, sizeof *s);
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
	aw_proc(&w, 41)->nmore = 64; /* not admitted */
	a = aw_arbiter(&w, 0, not_odd);
	aw_run(&w, a, 5 * MS, MS);
	assert_int_equal(known(a), 2); /* the two configured */
	filler = aw_proc(&w, 50);
	filler->nmore = 64;
	aw_run(&w, a, 5 * MS, MS);
	assert_int_equal(known(a), 2 + 8);
	/* it holds one of them now; when it exits, its grants go and so do
	 * the resources only it asked for */
	filler->alive = -ESRCH;
	filler->listed = 0;
	filler->exists = 0;
	aw_run(&w, a, 5 * MS, MS);
	assert_int_equal(known(a), 2);
	/* room for the next one, which gets what it asks for */
	next = aw_proc(&w, 60);
	next->nmore = 3;
	aw_run(&w, a, 5 * MS, MS);
	assert_int_equal(known(a), 2 + 3);
	{
		struct procctl_arbiter_snapshot s[8];
		size_t i, n = procctl_arbiter_snapshot(a, s, 8, sizeof *s), held = 0;
		for (i = 2; i < n; i++)
			held += s[i].holder_pid == 60;
		assert_int_equal(held, 3);
	}
	/* a release is still confirmed first: stopping to ask is not enough
	 * while it holds them; its exit is. The configured ones are never
	 * forgotten. */
	next->nmore = 0;
	aw_run(&w, a, 5 * HOLD, MS);
	assert_int_equal(known(a), 2 + 3);
	next->alive = -ESRCH;
	next->listed = next->exists = 0;
	aw_run(&w, a, 5 * MS, MS);
	assert_int_equal(known(a), 2);
	procctl_arbiter_free(a);
}

/* A tick sees every target, however many: 1,500 more processes, listed
 * before the two wanters (the registry lists the newest first), neither
 * hide the holder (taken for gone, a process-bound grant would go to the
 * next while it still held) nor the waiter (it would never get a turn). */
static void crowd_hides_nobody(void **state)
{
	struct world w;
	procctl_arbiter_t *a = aw_two_wanters(&w, PROCCTL_ARB_PROCESS_BOUND);
	struct procctl_arbiter_snapshot s;
	(void)state;
	w.crowd = 1500;
	aw_run(&w, a, HOLD / 2, MS);
	assert_int_equal(aw_holder(&w, 0), 10); /* its turn goes on */
	aw_run(&w, a, HOLD, MS);
	assert_int_equal(aw_holder(&w, 0), 20); /* then the waiter's */
	s = aw_snap(a, 0);
	assert_int_equal(s.holder_pid, 20);
	assert_int_equal(s.waiters, 1);
	aw_run(&w, a, HOLD, MS);
	assert_int_equal(aw_holder(&w, 0), 10);
	procctl_arbiter_free(a);
}

/* Quiet targets without a grant are read once a second, not every 20 ms;
 * a waiter whose ring was lost is still heard within that second. */
static void quiet_crowd_read_seldom(void **state)
{
	struct world w;
	procctl_arbiter_t *a = aw_two_wanters(&w, 0);
	struct fproc *p30;
	int reads;
	(void)state;
	w.doorbells = 1;
	procctl_arbiter_free(a);
	a = aw_arbiter(&w, 0, NULL); /* with doorbells */
	w.crowd = 500;
	aw_run(&w, a, 10 * MS, MS);
	reads = w.reads;
	aw_run(&w, a, 900 * MS, MS);
	print_message("%d reads in 900 ticks of 502 targets\n", w.reads - reads);
	assert_true(w.reads - reads < 500 + 200); /* every 20 ms: 45 reads each */
	p30 = aw_proc(&w, 30);
	p30->wants[0] = 1;
	p30->mute = 1; /* it says so, but the ring is lost */
	aw_run(&w, a, 1000 * MS + 2 * HOLD, MS);
	assert_int_equal(aw_snap(a, 0).waiters, 2);
	procctl_arbiter_free(a);
}

/* A stopped wanter is passed over in its turn: it could neither take the
 * grant up nor give it back. Continued, it gets the next. When every
 * wanter is stopped, the next in turn gets it as before. */
static void stopped_wanter_passed_over(void **state)
{
	struct world w;
	procctl_arbiter_t *a = aw_two_wanters(&w, 0);
	struct fproc *p20 = &w.p[1], *p30 = aw_proc(&w, 30);
	(void)state;
	p30->wants[0] = 1;
	p20->stopped = p20->slow = 1;
	aw_run(&w, a, HOLD + 20 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 30); /* not 20, next in turn */
	p20->stopped = p20->slow = 0;
	aw_run(&w, a, HOLD, MS);
	assert_int_equal(aw_holder(&w, 0), 10);
	aw_run(&w, a, HOLD, MS);
	assert_int_equal(aw_holder(&w, 0), 20);
	w.p[0].stopped = w.p[0].slow = 1;
	p30->stopped = p30->slow = 1;
	aw_run(&w, a, HOLD + 20 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 20); /* the others stopped: its turn goes on */
	p20->alive = -ESRCH; /* it exits */
	p20->listed = p20->exists = 0;
	aw_run(&w, a, 20 * MS, MS);
	assert_int_equal(aw_holder(&w, 0), 30); /* all stopped: the next in turn, as if none were */
	procctl_arbiter_free(a);
}

static void bad_options(void **state)
{
	struct world w;
	struct procctl_arbiter_source src;
	struct procctl_arbiter_opts o;
	(void)state;
	memset(&w, 0, sizeof w);
	src = aw_source(&w);
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.kind = 0; /* no kind */
	assert_null(procctl_arbiter_new(&o, &src));
	assert_int_equal(errno, EINVAL);
	o.kind = TH_GPU;
	o.flags = 0x4u; /* not a flag it knows */
	errno = 0;
	assert_null(procctl_arbiter_new(&o, &src));
	assert_int_equal(errno, EINVAL);
	o.flags = 0;
	src.grant = NULL;
	assert_null(procctl_arbiter_new(&o, &src));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rotation_in_order),
		cmocka_unit_test(lone_wanter_renewed),
		cmocka_unit_test(waiting_named),
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
		cmocka_unit_test(refused_reports_count_for_nothing),
		cmocka_unit_test(learning_bounded),
		cmocka_unit_test(crowd_hides_nobody),
		cmocka_unit_test(quiet_crowd_read_seldom),
		cmocka_unit_test(stopped_wanter_passed_over),
		cmocka_unit_test(bad_options),
	};
	return TH_RUN(tests);
}
