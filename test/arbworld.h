/* SPDX-License-Identifier: Apache-2.0 */
/* arbworld.h - a fake world for the arbiter's tests, with a fake clock
 * (deterministic): fake processes keep grant tables the way regions do
 * and answer the way the token holder's loop does (SPEC.md 9.4), or
 * misbehave on purpose; the source an arbiter sees them through. */
#ifndef PROCCTL_ARBWORLD_H
#define PROCCTL_ARBWORLD_H

#include <stdint.h>
#include <sys/types.h>

#include "procctl_arbiter.h"

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
	int stopped;  /* SIGSTOPped (set slow too: it answers nothing) */
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
	int crowd;     /* that many more targets (at most AW_CROWD_MAX), listed before p[] as the registry
			  lists the newest first: running, readable, wanting nothing */
};

#define AW_CROWD_MAX 4096

/* Resource i of the tests' GPU kind. */
procctl_resource_t aw_gpu(int i);
/* p's grant entry for r, or NULL. */
struct procctl_grant_entry *aw_entry(struct fproc *p, const procctl_resource_t *r);
/* A grant of r (id) written into p's region, as an agent's source does:
 * its generation. */
int64_t aw_grant(struct world *w, struct fproc *p, const procctl_resource_t *r, uint64_t id);
/* The arbiter's source on w. Without w->doorbells, changed is NULL:
 * every tick reads every target. */
struct procctl_arbiter_source aw_source(struct world *w);
/* A new process of w: listed, readable, its pid taken. */
struct fproc *aw_proc(struct world *w, pid_t pid);
/* The token holder's loop for resource i (SPEC.md 9.4): a live grant it
 * wants: HOLDING; a revoked one: RELEASED; none: IDLE, wanting or not. */
void aw_cooperate(struct fproc *p, int i);
/* Every live, readable, not slow process of w cooperates on both. */
void aw_all_cooperate(struct world *w);
/* The process holding a live grant for resource i, or 0. Fails the test
 * if two processes hold one: never two holders. */
pid_t aw_holder(struct world *w, int i);
/* Advance the clock by step, let the processes answer, tick; repeat
 * for ns. */
void aw_run(struct world *w, procctl_arbiter_t *a, uint64_t ns, uint64_t step);
/* An arbiter of gpu 0 and 1 (hold HOLD) on w. */
procctl_arbiter_t *aw_arbiter(struct world *w, unsigned flags, int (*admit)(void *, const struct procctl_arb_target *));
/* Processes 10 and 20 both want gpu 0; run until 10 holds it. */
procctl_arbiter_t *aw_two_wanters(struct world *w, unsigned flags);
/* Resource i's snapshot (of 2). */
struct procctl_arbiter_snapshot aw_snap(procctl_arbiter_t *a, int i);

#endif
