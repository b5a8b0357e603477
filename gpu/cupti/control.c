/* SPDX-License-Identifier: Apache-2.0 */
/* control.c - libprocctl-cupti's control thread: the procctl region of
 * consumer pcsamp, schema 2 (pcsampling_schema.h), with a resource entry
 * per GPU of the program's contexts (kind 2, the GPU's UUID), and the
 * holder loop of SPEC.md section 9 for each GPU:
 *
 *   a GPU with a context: WANT. Granted (usable) and not sampling:
 *   ACQUIRING, enable + configure + start on each of its contexts,
 *   HOLDING (a failure: stopped again, RELEASED, no WANT for a second).
 *   Holding: contexts created since sample too, and each second a range
 *   ends and another starts (stop, drain, start: CUPTI's flush point).
 *   The grant no longer usable (revoked, replaced, its lease expired,
 *   also while the agent's write is in progress) or its last context
 *   gone: RELEASING, stop + drain + disable, RELEASED.
 *
 * It wakes on the event socket (an agent's write), on the library's
 * eventfd (a context came or went) or after 100 ms (a lease's expiry).
 * The only thread that reports; procctl.h is compiled in static
 * (PROCCTL_STATIC), so a program with procctl.h of its own keeps its own. */
#define PROCCTL_STATIC
#define PROCCTL_IMPLEMENTATION
#include "procctl.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "inject.h"

#define WAKE_MS 100

#define RETRY_NS 1000000000ull /* after a failed acquire, no WANT for this long */
#define RANGE_NS 1000000000ull /* a hold's Start/Stop ranges: drained this often */

struct gpu_turn {
	int holding;
	procctl_grant_t basis; /* the grant it holds under */
	uint64_t since, range; /* the hold's start, its range's */
	uint64_t retry;        /* no WANT before this (a failed acquire) */
	uint32_t state, flags; /* the last report, to skip repeats */
	uint64_t grant_id, seen;
	int reported;
};

static procctl_t ctx;
static char storage[PROCCTL_STATE_STORAGE(INJECT_GPUS, sizeof(struct pcsampling_status))];
static struct gpu_turn turn[INJECT_GPUS];
static struct pcsampling_status status;

void control_wake(void)
{
	uint64_t one = 1;
	if (inj.wake_fd >= 0 && write(inj.wake_fd, &one, sizeof one) < 0)
		return; /* a full counter wakes it all the same */
}

/* The status block from the counts. */
static void status_put(void)
{
	pthread_mutex_lock(&inj.mu);
	status.gpus = inj.ngpus;
	status.period = inj.period;
	pthread_mutex_unlock(&inj.mu);
	pthread_mutex_lock(&inj.stats_mu);
	status.magic = PCSAMPLING_MAGIC;
	status.samples = inj.samples;
	status.dropped = inj.dropped;
	status.other_samples = inj.top.other;
	status.cupti_errors = inj.errors;
	status.last_error = inj.last_error;
	status.last_call = inj.last_call;
	memset(status.top, 0, sizeof status.top);
	status.nfunctions = top_best(&inj.top, status.top, PCSAMPLING_TOP);
	pthread_mutex_unlock(&inj.stats_mu);
	procctl_state_set(&ctx, &status, sizeof status, 0);
}

static void report(unsigned i, uint32_t state, uint32_t flags, const procctl_grant_t *g)
{
	struct gpu_turn *t = &turn[i];
	uint64_t id = g ? g->grant_id : 0, seen = g ? g->seen_gen : 0;
	if (t->reported && t->state == state && t->flags == flags && t->grant_id == id && t->seen == seen)
		return;
	if (procctl_resource_report(&ctx, inj.kind, inj.uuid[i], state, flags, g, 0) == 0) {
		t->reported = 1;
		t->state = state;
		t->flags = flags;
		t->grant_id = id;
		t->seen = seen;
	}
}

/* A config from the agent: the period of the next holds, or refused. */
static void take_config(void)
{
	struct pcsampling_config pc;
	uint64_t gen;
	int n = procctl_poll(&ctx, &pc, sizeof pc, &gen);
	if (n == -ENODATA) {
		pthread_mutex_lock(&inj.mu);
		inj.period = 0;
		pthread_mutex_unlock(&inj.mu);
		status_put();
		procctl_ack(&ctx, gen, 0);
	} else if (n > 0 && n != (int)sizeof pc) {
		procctl_nack(&ctx, gen, -EINVAL, 0);
	} else if (n == (int)sizeof pc) {
		if (pc.reserved || (pc.period && (pc.period < PCSAMPLING_PERIOD_MIN || pc.period > PCSAMPLING_PERIOD_MAX))) {
			procctl_nack(&ctx, gen, -EINVAL, 0);
			return;
		}
		pthread_mutex_lock(&inj.mu);
		inj.period = pc.period;
		pthread_mutex_unlock(&inj.mu);
		status_put();
		procctl_ack(&ctx, gen, 0);
	}
}

/* What a turn does to one context. */
enum act { START, STOP, SPLIT };

/* act on each context of GPU i that it applies to, one at a time,
 * claimed and without mu (a context another thread claimed is passed
 * over, and counted as sampling): how many are sampling after, and
 * whether one failed. */
static int gpu_act(unsigned i, enum act a, int *fail)
{
	int k, n = 0;
	*fail = 0;
	for (k = 0; k < INJECT_CTXS; k++) {
		struct inject_ctx *x = &inj.ctxs[k];
		int r = 0;
		pthread_mutex_lock(&inj.mu);
		if (!x->ctx || x->gpu != (int)i || x->dying || x->busy ||
		    (a == START ? x->sampling || x->broken || inj.exiting : !x->sampling)) {
			n += x->ctx && x->gpu == (int)i && !x->dying && (x->busy || x->sampling);
			pthread_mutex_unlock(&inj.mu);
			continue;
		}
		ctx_claim(x, NULL);
		pthread_mutex_unlock(&inj.mu);
		if (a == START)
			r = ctx_sample(x);
		else if (a == SPLIT)
			r = ctx_split(x);
		else
			ctx_unsample(x);
		pthread_mutex_lock(&inj.mu);
		n += !x->dying && x->sampling;
		ctx_unclaim(x);
		pthread_mutex_unlock(&inj.mu);
		*fail |= r < 0;
	}
	return n;
}

static void gpu_stop(unsigned i)
{
	int fail;
	gpu_act(i, STOP, &fail);
}

/* A context of GPU i the program still has, which may sample (the
 * program not exiting). */
static int gpu_live(unsigned i)
{
	int k, live = 0;
	pthread_mutex_lock(&inj.mu);
	for (k = 0; k < INJECT_CTXS && !inj.exiting; k++)
		live |= inj.ctxs[k].ctx && inj.ctxs[k].gpu == (int)i && !inj.ctxs[k].dying && !inj.ctxs[k].broken;
	pthread_mutex_unlock(&inj.mu);
	return live;
}

/* Stop sampling GPU i and report it released (basis: the grant seen). */
static void release(unsigned i, const procctl_grant_t *basis, uint32_t want)
{
	struct gpu_turn *t = &turn[i];
	report(i, PROCCTL_RES_RELEASING, want, basis);
	gpu_stop(i);
	status.held_ns += pcs_now_ns() - t->since;
	status_put();
	t->holding = 0;
	report(i, PROCCTL_RES_RELEASED, want, basis);
}

/* Start sampling GPU i under grant g: HOLDING once every context of it
 * samples; else stopped again, RELEASED, and no WANT for a while. */
static void acquire(unsigned i, const procctl_grant_t *g, uint32_t want)
{
	struct gpu_turn *t = &turn[i];
	int fail;
	if (procctl_resource_report(&ctx, inj.kind, inj.uuid[i], PROCCTL_RES_ACQUIRING, want, g, 0) != 0)
		return;
	t->reported = 0;
	if (gpu_act(i, START, &fail) == 0 || fail) {
		gpu_stop(i);
		t->retry = pcs_now_ns() + RETRY_NS;
		status_put();
		report(i, PROCCTL_RES_RELEASED, 0, g);
		return;
	}
	t->holding = 1;
	t->basis = *g;
	t->since = t->range = pcs_now_ns();
	status.turns++;
	status.last_grant_id = g->grant_id;
	status_put();
	report(i, PROCCTL_RES_HOLDING, want, g);
}

/* While holding: contexts created since start sampling, and a range that
 * ran RANGE_NS ends and another starts. 0, or -1 (released). */
static int keep(unsigned i, const procctl_grant_t *g)
{
	struct gpu_turn *t = &turn[i];
	int fail, n = gpu_act(i, START, &fail);
	if (!fail && pcs_now_ns() - t->range >= RANGE_NS) {
		n = gpu_act(i, SPLIT, &fail);
		t->range = pcs_now_ns();
		status_put();
	}
	if (fail || n == 0) { /* as a failed acquire: released, no WANT for a while */
		t->retry = pcs_now_ns() + RETRY_NS;
		release(i, g, 0);
		return -1;
	}
	return 0;
}

/* One GPU's turn of the holder loop. */
static void step(unsigned i)
{
	struct gpu_turn *t = &turn[i];
	procctl_grant_t g;
	int r, usable, live = gpu_live(i);
	uint32_t want = live && pcs_now_ns() >= t->retry ? PROCCTL_RES_F_WANT : 0;
	if ((r = procctl_grant_get(&ctx, inj.kind, inj.uuid[i], &g)) < 0) {
		/* A write in progress (the next one wakes us), or an agent that
		 * died in one: a hold still ends with its lease. */
		if (t->holding && (!live || !procctl_grant_usable(&ctx, &t->basis, 0) || procctl_lease_expired(&ctx, 0)))
			release(i, &t->basis, want);
		return;
	}
	usable = r == 1 && procctl_grant_usable(&ctx, &g, 0) && !procctl_lease_expired(&ctx, 0);
	if (t->holding && usable && g.grant_id != t->basis.grant_id) {
		release(i, &t->basis, want); /* another grant in its place: the old one let go */
		if (live && want)
			acquire(i, &g, want);
	} else if (t->holding) {
		if (!usable || !live)
			release(i, &g, want);
		else if (keep(i, &g) == 0)
			report(i, PROCCTL_RES_HOLDING, want, &g);
	} else if (usable && live && want) {
		acquire(i, &g, want);
	} else {
		report(i, r == 1 ? PROCCTL_RES_RELEASED : PROCCTL_RES_IDLE, want, &g);
	}
}

static void *control(void *unused)
{
	struct pollfd pf[2];
	(void)unused;
	pf[0].fd = procctl_event_fd(&ctx);
	pf[0].events = POLLIN;
	pf[1].fd = inj.wake_fd;
	pf[1].events = POLLIN;
	for (;;) {
		uint64_t n;
		unsigned i, ngpus;
		pf[0].revents = pf[1].revents = 0;
		poll(pf, 2, WAKE_MS);
		if ((pf[0].revents & (POLLIN | POLLHUP)) && procctl_event_read(&ctx) == -EPIPE)
			pf[0].fd = -1; /* shut down by whoever holds its other end: the timer alone */
		if ((pf[1].revents & POLLIN) && read(inj.wake_fd, &n, sizeof n) < 0)
			n = 0;
		take_config();
		pthread_mutex_lock(&inj.mu);
		ngpus = inj.ngpus;
		pthread_mutex_unlock(&inj.mu);
		for (i = 0; i < ngpus; i++)
			step(i);
	}
	return NULL;
}

int control_start(const char *consumer, char *err, size_t errlen)
{
	procctl_config_t cfg;
	pthread_attr_t a;
	pthread_t t;
	sigset_t all, old;
	int r;
	memset(&cfg, 0, sizeof cfg);
	cfg.consumer = consumer;
	cfg.schema_version = PCSAMPLING_SCHEMA_VERSION;
	cfg.payload_capacity = sizeof(struct pcsampling_config);
	cfg.state_capacity = sizeof(struct pcsampling_status);
	cfg.resource_capacity = INJECT_GPUS;
	cfg.state_storage = storage;
	cfg.flags = PROCCTL_EVENT_FD;
	if ((inj.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		return -errno;
	}
	if ((r = procctl_init(&ctx, &cfg)) < 0) {
		snprintf(err, errlen, "procctl_init (consumer %.31s): %s", consumer, strerror(-r));
		goto fail;
	}
	status_put();
	/* The program's signals go to its own threads, never to this one. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	r = -pthread_create(&t, &a, control, NULL);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		snprintf(err, errlen, "pthread_create: %s", strerror(-r));
		procctl_close(&ctx);
		goto fail;
	}
	return 0;
fail:
	close(inj.wake_fd);
	inj.wake_fd = -1;
	return r;
}
