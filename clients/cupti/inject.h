/* SPDX-License-Identifier: Apache-2.0 */
/* inject.h - libprocctl-cupti's parts: the entry and CUPTI's callbacks on
 * the program's threads (inject.c), the control thread and the procctl
 * region (control.c), the functions' counts (top.c).
 *
 * Locks. mu guards the contexts and GPUs. The program's threads may call
 * CUDA and CUPTI holding it (in CUPTI's callbacks, where the driver may
 * hold locks of its own); the control thread never does: it marks a
 * context busy, lets mu go, makes its calls, and takes mu again to clear
 * busy. A callback waits on the control thread only for busy to clear,
 * and 5 s at most: never on a lock held across a call into the driver.
 * stats_mu guards the counts and the functions' table, which drains fill
 * on either side; nothing else is taken under it. */
#ifndef PROCCTL_INJECT_H
#define PROCCTL_INJECT_H

#include <pthread.h>
#include <stdint.h>

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
	int busy;       /* the control thread is in CUDA or CUPTI for it, without mu */
	int dying;      /* 1 its destroy began (nothing new starts on it); 2 that destroy gave
			 * up waiting for busy: the control thread forgets it */
	int broken;     /* a Disable failed: never sampled again, its buffers kept for CUPTI */
	struct pcs p;   /* from its creation; its names freed once it is gone */
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
};

extern struct inject inj;

/* control.c: the region (consumer, schema 2, a resource entry per GPU) and
 * the control thread: 0 or -errno (nothing started). */
int control_start(const char *consumer, char *err, size_t errlen);
/* A context came or went: wake the control thread. */
void control_wake(void);

/* inject.c, on a context x that the caller alone uses (busy set, or mu
 * held and x not busy): start sampling (enable, configure, start: 0, or
 * -EIO with it disabled again); stop, drain and disable it (nothing when
 * it is not sampling); end the range and start another (stop, drain,
 * start: 0, or -EIO with it disabled). */
int ctx_sample(struct inject_ctx *x);
void ctx_unsample(struct inject_ctx *x);
int ctx_split(struct inject_ctx *x);

/* top.c, under stats_mu: a PC record's samples, and the functions with
 * the most samples into out (at most n): how many. */
void top_add(struct top *t, const char *function, uint64_t samples);
unsigned top_best(const struct top *t, struct pcsampling_function *out, unsigned n);

#endif
