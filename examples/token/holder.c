/* SPDX-License-Identifier: Apache-2.0 */
/* holder.c - the holder loop (holder.h). */
#include "holder.h"
#include "procctl_agent.h" /* procctl_now_ns */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static procctl_t *ctx;
static procctl_resource_t key;
static struct holder_use use;
static struct token_status status; /* the control thread's */
static int witness = -1;
static int stop; /* set by signal handlers, read by both threads: atomics */

/* The last report made (valid: one was): a wake that changed nothing (the
 * wait's bound, with no write since) reports nothing, since every report
 * rings the agent's doorbell. */
static struct {
	int valid;
	uint32_t state;
	uint64_t grant_id, seen_gen;
} last;

void holder_say(int fd, const char *line, int n)
{
	if (fd >= 0 && write(fd, line, (size_t)n) != n)
		abort(); /* a witness that cannot write proves nothing */
}

void holder_note(char what)
{
	static const char *const names[] = {"acquired", "released", "overlap", "forked"};
	char line[80];
	int n = snprintf(line, sizeof line, "%c %d %llu\n", what, (int)getpid(), (unsigned long long)(uint64_t)procctl_now_ns());
	holder_say(witness, line, n);
	n = snprintf(line, sizeof line, "event=%s pid=%d\n", names[strchr("SEXF", what) - "SEXF"], (int)getpid());
	holder_say(1, line, n);
}

/* The kernel's side of the witness: a write lock on byte 0. */
static int witness_lock(short type)
{
	struct flock fl;
	memset(&fl, 0, sizeof fl);
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_len = 1;
	return witness < 0 || fcntl(witness, F_SETLK, &fl) == 0;
}

static void report(uint32_t state, const procctl_grant_t *g)
{
	uint64_t id = g ? g->grant_id : 0, seen = g ? g->seen_gen : 0;
	if (last.valid && last.state == state && last.grant_id == id && last.seen_gen == seen)
		return;
	/* Reports come from this thread only: wait for nothing. */
	if (procctl_resource_report(ctx, key.kind, key.id, state, PROCCTL_RES_F_WANT, g, 0) == 0) {
		last.valid = 1;
		last.state = state;
		last.grant_id = id;
		last.seen_gen = seen;
	}
}

/* A new config from the agent: applied and acked, or refused. */
static void take_config(void)
{
	unsigned char buf[64];
	uint64_t gen;
	int n = procctl_poll(ctx, buf, sizeof buf, &gen);
	if (n == (int)sizeof(struct token_config)) {
		struct token_config tc;
		memcpy(&tc, buf, sizeof tc);
		if (tc.reserved) {
			procctl_nack(ctx, gen, -EINVAL, 0);
			return;
		}
		status.hold_ns = tc.hold_ns;
		procctl_state_set(ctx, &status, sizeof status, 0);
		procctl_ack(ctx, gen, 0);
	} else if (n > 0) {
		procctl_nack(ctx, gen, -EINVAL, 0); /* not this schema's config */
	} else if (n == -ENODATA) {
		status.hold_ns = 0;
		procctl_state_set(ctx, &status, sizeof status, 0);
		procctl_ack(ctx, gen, 0);
	}
}

void holder_init(procctl_t *c, const procctl_resource_t *k, int w, const struct holder_use *u)
{
	ctx = c;
	key = *k;
	witness = w;
	memset(&use, 0, sizeof use);
	if (u)
		use = *u;
	if (!use.wake_ns)
		use.wake_ns = 100000000; /* writes wake it; 100 ms bounds a missed lease */
	procctl_state_set(ctx, &status, sizeof status, 0);
	report(PROCCTL_RES_IDLE, NULL); /* asks for it at once */
}

/* Stop using it (held since since): the witness, the hook, the counts. */
static void let_go(const procctl_grant_t *g, uint64_t since)
{
	if (use.say_releasing)
		report(PROCCTL_RES_RELEASING, g);
	witness_lock(F_UNLCK);
	holder_note('E');
	if (use.release)
		use.release(use.arg);
	status.held_ns += (uint64_t)procctl_now_ns() - since;
	procctl_state_set(ctx, &status, sizeof status, 0);
}

/* Start using it: 1 held, 0 not (the hook refused). */
static int take(const procctl_grant_t *g, uint64_t *since)
{
	if (procctl_resource_report(ctx, key.kind, key.id, PROCCTL_RES_ACQUIRING, PROCCTL_RES_F_WANT, g, 0) != 0)
		return 0;
	if (use.acquire && use.acquire(use.arg) < 0) {
		report(PROCCTL_RES_RELEASED, g);
		return 0;
	}
	if (!witness_lock(F_WRLCK))
		holder_note('X');
	*since = (uint64_t)procctl_now_ns();
	status.turns++;
	status.last_grant_id = g->grant_id;
	procctl_state_set(ctx, &status, sizeof status, 0);
	report(PROCCTL_RES_HOLDING, g);
	holder_note('S'); /* its time: when HOLDING was reported */
	return 1;
}

void *holder_control(void *unused)
{
	int holding = 0;
	uint64_t since = 0;
	procctl_grant_t held; /* the grant it holds under */
	(void)unused;
	memset(&held, 0, sizeof held);
	while (!holder_stopping()) {
		procctl_grant_t g;
		int r, usable;
		procctl_wait(ctx, use.wake_ns);
		take_config();
		r = procctl_grant_get(ctx, key.kind, key.id, &g);
		if (r < 0) {
			/* Busy or torn: the next write wakes us. But an agent that
			 * died in a write leaves it busy: a hold ends with its lease. */
			if (holding && !procctl_grant_usable(ctx, &held, 0)) {
				let_go(&held, since);
				holding = 0;
				report(PROCCTL_RES_RELEASED, &held);
			}
			continue;
		}
		usable = r == 1 && procctl_grant_usable(ctx, &g, 0) && !procctl_lease_expired(ctx, 0);
		if (holding && !usable) {
			let_go(&g, since);
			holding = 0;
			report(PROCCTL_RES_RELEASED, &g);
		} else if (!holding && usable) {
			holding = take(&g, &since);
			held = g;
		} else {
			report(holding ? PROCCTL_RES_HOLDING : r == 1 ? PROCCTL_RES_RELEASED : PROCCTL_RES_IDLE, &g);
		}
	}
	if (holding)
		let_go(NULL, since);
	return NULL;
}

void holder_stop(void)
{
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
}

int holder_stopping(void)
{
	return __atomic_load_n(&stop, __ATOMIC_RELAXED);
}

void holder_child(void)
{
	holder_note('F');
	memset(&status, 0, sizeof status); /* a new region: its own counts */
	last.valid = 0;                   /* and its own reports */
	report(PROCCTL_RES_IDLE, NULL);
}
