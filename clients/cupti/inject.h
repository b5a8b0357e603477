/* SPDX-License-Identifier: Apache-2.0 */
/* inject.h - libprocctl-cupti's parts: the entry and CUPTI's callbacks on
 * the program's threads (inject.c), the control thread and the procctl
 * region (control.c), the functions' counts (top.c). One lock, mu, guards
 * the contexts and every PC sampling call, whichever thread makes it. */
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
	int gpu;        /* its index in gpus */
	int sampling;   /* enabled (and started) under a hold */
	struct pcs p;
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
	struct cupti_calls c;
	uint32_t kind;
	uint8_t uuid[INJECT_GPUS][16];
	unsigned ngpus;
	unsigned lost_gpus;   /* contexts on GPUs past INJECT_GPUS */
	unsigned lost_ctxs;   /* contexts past INJECT_CTXS */
	struct inject_ctx ctxs[INJECT_CTXS];
	int wake_fd;          /* eventfd: a context came or went */
	unsigned period;      /* from the config: used at the next Enable */
	uint64_t errors;      /* failed CUPTI calls, and the last */
	int32_t last_error;
	uint32_t last_call;
	uint64_t samples, dropped;
	struct top top;       /* under mu: drains add to it */
};

extern struct inject inj;

/* control.c: the region (consumer, schema 2, a resource entry per GPU) and
 * the control thread: 0 or -errno (nothing started). */
int control_start(const char *consumer, char *err, size_t errlen);
/* A context came or went: wake the control thread. */
void control_wake(void);

/* inject.c, under mu: stop, drain and disable PC sampling on x (no-op
 * when it is not sampling), and start it (enable, configure, start: 0,
 * or -EIO with it disabled again). */
void ctx_unsample(struct inject_ctx *x);
int ctx_sample(struct inject_ctx *x);

/* top.c, under mu: a PC record's samples (pcs_record_fn), and the
 * functions with the most samples into out (at most n): how many. */
void top_add(void *top, const char *function, uint64_t samples);
unsigned top_best(const struct top *t, struct pcsampling_function *out, unsigned n);

#endif
