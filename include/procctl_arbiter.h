/* SPDX-License-Identifier: Apache-2.0 */
/* procctl_arbiter.h - exclusive resources (SPEC.md section 9): grant each
 * resource of one kind to one process at a time, among the processes that
 * ask for it, round robin after a hold time; confirm every release before
 * moving a resource; account the time a resource is blocked.
 *
 * The arbiter sees the world through a source (struct
 * procctl_arbiter_source): the targets, their resource reports, the grant
 * entries the agent wrote, and the writes. procctl_arbiter_registry_source
 * is the real one, on a registry's clients; tests use fakes. Calls return
 * 0 or a count, or a negative errno; nothing here blocks longer than the
 * source's reads.
 */
#ifndef PROCCTL_ARBITER_H
#define PROCCTL_ARBITER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "procctl.h"
#include "procctl_agent.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct procctl_arbiter procctl_arbiter_t;

/* One process the arbiter may grant to. handle is the source's own. */
struct procctl_arb_target {
	void *handle;
	pid_t pid;
	uint64_t instance_id;
};

#define PROCCTL_ARB_MAX_RESOURCES 64
#define PROCCTL_ARB_WAITING_MAX 8 /* waiters a snapshot names */

struct procctl_arbiter_source {
	size_t sz;  /* sizeof(struct procctl_arbiter_source): taken as opts are (procctl_agent.h's top) */
	void *ctx;
	/* The targets now: how many there are, at most max of them written;
	 * when there are more, the arbiter makes room and asks again (a
	 * tick sees every target or decides nothing). */
	size_t (*targets)(void *ctx, struct procctl_arb_target *out, size_t max);
	/* 1 when this agent holds the node lock and a full scan begun after it
	 * took it has finished (SPEC.md 9.2): only then does it arbitrate. */
	int (*ready)(void *ctx);
	/* The target's resource entries: their count, or < 0 when its state
	 * block cannot be read (a holder then keeps its grant, and a
	 * revocation stays unconfirmed). */
	int (*reports)(void *ctx, void *handle, struct procctl_res_entry *out, uint32_t max);
	/* The grant entries this agent holds in the target's region (its own
	 * copies, authoritative): their count. */
	int (*grants)(void *ctx, void *handle, struct procctl_grant_entry *out, uint32_t max);
	/* Region writes: the generation written, or < 0. */
	int64_t (*grant)(void *ctx, void *handle, const procctl_resource_t *res, uint64_t grant_id);
	int64_t (*revoke)(void *ctx, void *handle, const procctl_resource_t *res);
	int64_t (*drop)(void *ctx, void *handle, const procctl_resource_t *res);
	/* 0 running; -ESRCH exited; -ESTALE exec'd. */
	int (*alive)(void *ctx, void *handle);
	/* 1 while a live process (not a zombie) has this pid. A holder that
	 * left the targets (exit or exec) holds a kind that is not
	 * process-bound until its pid is gone (a reused pid only keeps the
	 * resource blocked longer). */
	int (*pid_exists)(void *ctx, pid_t pid);
	/* CLOCK_MONOTONIC, ns. */
	uint64_t (*now)(void *ctx);
	/* A fresh random nonzero grant id. */
	uint64_t (*random_id)(void *ctx);
	/* Optional (NULL: every tick reads every target): 0 when the target
	 * has not rung its doorbell since the last call, so the reports read
	 * before still stand; anything else: read them. Whatever it says (a
	 * wake is a hint), reports are read again at least every 20 ms for a
	 * target with a grant entry or shown using a resource, and every
	 * second for the others (a lost ring delays a new want by a second). */
	int (*changed)(void *ctx, void *handle);
	/* Optional (NULL: never): 1 while the process is stopped (SIGSTOP,
	 * ptrace). A stopped wanter is passed over in its turn (it could
	 * neither take the grant up nor give it back); when every wanter is
	 * stopped, the next in turn gets it, as if none were. */
	int (*stopped)(void *ctx, pid_t pid);
};

#define PROCCTL_ARB_PROCESS_BOUND 0x1u /* the resource dies with the image: exec releases it */
/* The caller ticks on every OWNERSHIP and READY event of the consumer (as
 * it does on ATTACHED, DETACHED and DOORBELL): while not ready, the
 * arbiter then needs no tick of its own (next_tick UINT64_MAX) instead of
 * asking again every 100 ms. A passive standby agent sleeps. */
#define PROCCTL_ARB_READY_EVENTS 0x2u

struct procctl_arbiter_opts {
	size_t sz;                /* sizeof(struct procctl_arbiter_opts): see procctl_agent.h's top */
	uint32_t kind;            /* the resource kind it arbitrates: a number, nonzero */
	/* Resources one target may add to the table by asking for them; 0: 8.
	 * A learned resource nobody holds, wants or shows busy any more is
	 * forgotten (its slot free for others). */
	uint32_t learn_max_per_target;
	uint64_t hold_ns;         /* round robin: a holder keeps it this long while others wait */
	unsigned flags;           /* PROCCTL_ARB_* */
	const procctl_resource_t *resources; /* known resources of this kind (others are */
	size_t nresources;                   /* learned from reports that want them) */
	/* Admission (region names are untrusted): NULL admits everyone. A
	 * target refused is never granted, and what it asks for is not learned. */
	int (*admit)(void *arg, const struct procctl_arb_target *t);
	void *admit_arg;
};

/* NULL with errno (EINVAL bad options or unknown flags, ENOMEM). o->sz
 * may be an older header's (what it lacks is 0) or a newer one's (what
 * this library does not know must be 0). The source must outlive it. */
procctl_arbiter_t *procctl_arbiter_new(const struct procctl_arbiter_opts *o, const struct procctl_arbiter_source *src);
void procctl_arbiter_free(procctl_arbiter_t *a);

/* One round: read every target, confirm releases, revoke after the hold,
 * grant free resources. Call it when something changed (an ack doorbell,
 * an attach or detach, a report seen changed by a poll) and when
 * procctl_arbiter_next_tick says; more often only costs the reads of the
 * targets whose doorbells rang. 0, or the first write error; -ENOMEM
 * when there was no room to see every target (nothing was decided). */
int procctl_arbiter_tick(procctl_arbiter_t *a);
/* When (the source's clock) the arbiter needs its next tick if nothing
 * changes: the end of a holder's turn while others wait; a revocation
 * waiting for its confirmation, or a user without a grant, read every
 * 20 ms (a wake is a hint); an unreadable target tried again (1 s); not
 * ready yet (every 100 ms; never with PROCCTL_ARB_READY_EVENTS); a failed
 * write (20 ms). UINT64_MAX: only a
 * change needs one (a lone holder, nobody waiting). 0 before the first
 * tick. */
uint64_t procctl_arbiter_next_tick(const procctl_arbiter_t *a);

struct procctl_arbiter_snapshot {
	procctl_resource_t res;
	pid_t holder_pid;         /* 0: none */
	uint64_t holder_instance;
	uint64_t grant_id;
	uint64_t held_ns;         /* since the holder got it */
	uint64_t pending_since_ns; /* a revocation waiting for its confirmation: since when (CLOCK_MONOTONIC); 0 none */
	/* Totals, PSI style: */
	uint64_t hold_ns_total;   /* time it was held under a live grant */
	uint64_t pending_ns;      /* time a revocation waited for its confirmation */
	uint64_t blocked_ns;      /* time someone wanted it while it could not move: a release
	                           * not confirmed yet, a holder that cannot be read, a user
	                           * without a grant (a hung holder's whole hang) */
	uint64_t handoffs;        /* grants to a process other than the last holder */
	uint32_t waiters;         /* admitted processes that want it, holder excluded */
	uint32_t nwaiting;        /* entries of waiting[]: min(waiters, PROCCTL_ARB_WAITING_MAX) */
	struct procctl_arbiter_waiter {
		pid_t pid;
		uint32_t reserved; /* 0 */
		uint64_t instance;
	} waiting[PROCCTL_ARB_WAITING_MAX]; /* who waits, by pid (at most that many of them) */
};

/* The state of every resource (at most max, each sz bytes apart: sizeof
 * *out; a field this library does not have reads 0): how many there are.
 * sz 0 writes nothing. */
size_t procctl_arbiter_snapshot(const procctl_arbiter_t *a, struct procctl_arbiter_snapshot *out, size_t max, size_t sz);

/* The real source: consumer's clients in registry r (call tick on r's loop
 * thread). Reads use a deadline of read_deadline_ns from now. 0, -EINVAL,
 * -ENOMEM; free it with procctl_arbiter_registry_source_free after the
 * arbiter. */
int procctl_arbiter_registry_source(struct procctl_arbiter_source *src, procctl_registry_t *r, const char *consumer,
				    uint64_t read_deadline_ns);
void procctl_arbiter_registry_source_free(struct procctl_arbiter_source *src);

#ifdef __cplusplus
}
#endif
#endif
