/* SPDX-License-Identifier: Apache-2.0 */
/* control.c - libprocctl-cupti's control thread: the procctl region of
 * consumer pcsamp, schema 2 (pcsampling_schema.h), with a resource entry
 * per GPU of the program's contexts (kind 2, the GPU's UUID), and the
 * holder loop of SPEC.md section 9 for each GPU:
 *
 *   a GPU with a context: WANT. Granted (usable) and not sampling:
 *   ACQUIRING, enable + configure + start on each of its contexts,
 *   HOLDING. Sampling and the grant no longer usable (revoked, lease
 *   expired) or its last context gone: stop + drain + disable, RELEASED.
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
#include <time.h>
#include <unistd.h>

#include "inject.h"

#define WAKE_MS 100

struct gpu_turn {
	int holding;
	uint64_t since;
	uint64_t grant_id;
	uint32_t state, flags; /* the last report, to skip repeats */
	uint64_t seen;
	int reported;
};

static procctl_t ctx;
static char storage[PROCCTL_STATE_STORAGE(INJECT_GPUS, sizeof(struct pcsampling_status))];
static struct gpu_turn turn[INJECT_GPUS];
static struct pcsampling_status status;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void control_wake(void)
{
	uint64_t one = 1;
	if (inj.wake_fd >= 0 && write(inj.wake_fd, &one, sizeof one) < 0)
		return; /* a full counter wakes it all the same */
}

/* The status block from the counts (under mu). */
static void status_put(void)
{
	status.magic = PCSAMPLING_MAGIC;
	status.gpus = inj.ngpus;
	status.samples = inj.samples;
	status.dropped = inj.dropped;
	status.other_samples = inj.top.other;
	status.cupti_errors = inj.errors;
	status.last_error = inj.last_error;
	status.last_call = inj.last_call;
	status.period = inj.period;
	memset(status.top, 0, sizeof status.top);
	status.nfunctions = top_best(&inj.top, status.top, PCSAMPLING_TOP);
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
		procctl_ack(&ctx, gen, 0);
	}
}

/* Start or stop sampling on GPU i's contexts (under mu): 1 all started. */
static int gpu_sample(unsigned i, int on)
{
	int k, ok = 1;
	for (k = 0; k < INJECT_CTXS; k++) {
		struct inject_ctx *x = &inj.ctxs[k];
		if (!x->ctx || x->gpu != (int)i)
			continue;
		if (!on)
			ctx_unsample(x);
		else if (!x->sampling && ctx_sample(x) < 0)
			ok = 0;
	}
	if (on && !ok)
		gpu_sample(i, 0);
	return ok;
}

static int gpu_live(unsigned i)
{
	int k;
	for (k = 0; k < INJECT_CTXS; k++)
		if (inj.ctxs[k].ctx && inj.ctxs[k].gpu == (int)i)
			return 1;
	return 0;
}

/* One GPU's turn of the holder loop. */
static void step(unsigned i)
{
	struct gpu_turn *t = &turn[i];
	procctl_grant_t g;
	int r, usable, live;
	uint32_t want;
	pthread_mutex_lock(&inj.mu);
	live = gpu_live(i);
	pthread_mutex_unlock(&inj.mu);
	want = live ? PROCCTL_RES_F_WANT : 0;
	if ((r = procctl_grant_get(&ctx, inj.kind, inj.uuid[i], &g)) < 0)
		return; /* a write in progress: the next one wakes us */
	usable = r == 1 && procctl_grant_usable(&ctx, &g, 0) && !procctl_lease_expired(&ctx, 0);
	if (t->holding && (!usable || !live)) {
		report(i, PROCCTL_RES_RELEASING, want, &g);
		pthread_mutex_lock(&inj.mu);
		gpu_sample(i, 0);
		status.held_ns += now_ns() - t->since;
		status_put();
		pthread_mutex_unlock(&inj.mu);
		t->holding = 0;
		report(i, PROCCTL_RES_RELEASED, want, &g);
	} else if (!t->holding && usable && live) {
		if (procctl_resource_report(&ctx, inj.kind, inj.uuid[i], PROCCTL_RES_ACQUIRING, want, &g, 0) != 0)
			return;
		t->reported = 0;
		pthread_mutex_lock(&inj.mu);
		t->holding = gpu_sample(i, 1);
		if (t->holding) {
			t->since = now_ns();
			status.turns++;
			status.last_grant_id = g.grant_id;
		}
		status_put();
		pthread_mutex_unlock(&inj.mu);
		report(i, t->holding ? PROCCTL_RES_HOLDING : PROCCTL_RES_RELEASED, want, &g);
	} else {
		report(i, t->holding ? PROCCTL_RES_HOLDING : r == 1 ? PROCCTL_RES_RELEASED : PROCCTL_RES_IDLE, want, &g);
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
		if (pf[0].revents & POLLIN)
			procctl_event_read(&ctx);
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
	pthread_mutex_lock(&inj.mu);
	status_put();
	pthread_mutex_unlock(&inj.mu);
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
