/* SPDX-License-Identifier: Apache-2.0 */
/* inject.h - libprocctl-cupti's parts: the entry and CUPTI's callbacks on
 * the program's threads (inject.c), the control thread and the procctl
 * region (control.c), the functions' counts (top.c).
 *
 * Locks. mu guards the contexts and GPUs, and no thread holds it across
 * a call into CUDA or CUPTI: a thread claims a context (busy), lets mu
 * go, makes its calls, and takes mu again to unclaim it. The control
 * thread passes over a busy context; the program's threads (CUPTI's
 * callbacks, the exit) wait for it, 5 s at most. So nothing that waits
 * for mu can hold up a thread inside the driver. stats_mu guards the
 * counts, the functions' table and the names, which drains fill on
 * either side; nothing else is taken under it. */
#ifndef PROCCTL_INJECT_H
#define PROCCTL_INJECT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "pcs.h"
#include "pcsampling_schema.h"

#define INJECT_GPUS 16 /* GPUs asked for (resource entries) */
#define INJECT_CTXS 32 /* contexts followed */
#define TOP_TRACK 256  /* functions counted apart */

struct inject_ctx {
	CUcontext ctx;  /* NULL: a free entry */
	int gpu;        /* its index in uuid */
	int sampling;   /* enabled under a hold (and started, unless a start failed) */
	int started;    /* within a Start/Stop range */
	int busy;       /* claimed: a thread is in CUDA or CUPTI for it, without mu */
	int dying;      /* 1 its destroy began: nothing new starts on it; 2 that destroy
			 * went on without it: its claimer forgets it when done */
	int broken;     /* a Disable failed: never sampled again, its buffers kept for CUPTI */
	struct pcs p;   /* from its creation; its buffers from Enable to Disable */
};

struct top_fn {
	uint64_t samples;
	char name[PCSAMPLING_NAME];
};

struct top {
	struct top_fn fn[TOP_TRACK];
	uint16_t slot[2 * TOP_TRACK]; /* open addressing: index + 1; 0 empty */
	unsigned n;
	uint64_t other;
};

struct inject {
	pthread_mutex_t mu;
	pthread_cond_t idle;  /* a context's busy cleared */
	struct cupti_calls c;
	uint32_t kind;
	uint8_t uuid[INJECT_GPUS][16];
	unsigned ngpus;
	unsigned lost_gpus;   /* contexts on GPUs past INJECT_GPUS */
	unsigned lost_ctxs;   /* contexts past INJECT_CTXS */
	struct inject_ctx ctxs[INJECT_CTXS];
	int exiting;          /* the program is exiting: nothing starts */
	int wake_fd;          /* eventfd: a context came or went */
	unsigned period;      /* from the config: used at the next Enable */
	pthread_mutex_t stats_mu;
	uint64_t errors;      /* failed CUDA and CUPTI calls, and the last */
	int32_t last_error;
	uint32_t last_call;
	uint64_t samples, dropped;
	struct top top;
	struct pcs_names names; /* CUPTI's function names: the process's, never freed */
};

extern struct inject inj;

/* control.c: the region (consumer, schema 2, a resource entry per GPU) and
 * the control thread: 0 or -errno (nothing started). */
int control_start(const char *consumer, char *err, size_t errlen);
/* A context came or went: wake the control thread. */
void control_wake(void);

/* inject.c, under mu: claim x (busy) for calls without mu, waiting for
 * its claimer until *until (CLOCK_MONOTONIC; NULL: not at all): 1
 * claimed, 0 not; and give it back (forgotten if its destroy went on). */
int ctx_claim(struct inject_ctx *x, const struct timespec *until);
void ctx_unclaim(struct inject_ctx *x);
/* inject.c, on a context the caller claimed: start sampling (enable,
 * configure, start: 0, or -EIO with it disabled again); stop, drain and
 * disable it (nothing when it is not sampling); end the range and start
 * another (stop, drain, start: 0, or -EIO). */
int ctx_sample(struct inject_ctx *x);
void ctx_unsample(struct inject_ctx *x);
int ctx_split(struct inject_ctx *x);

/* top.c, under stats_mu: a PC record's samples, and the functions with
 * the most samples into out (at most n): how many. */
void top_add(struct top *t, const char *function, uint64_t samples);
unsigned top_best(const struct top *t, struct pcsampling_function *out, unsigned n);

#endif
