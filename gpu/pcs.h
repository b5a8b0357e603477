/* SPDX-License-Identifier: Apache-2.0 */
/* pcs.h - CUPTI's PC Sampling API on one context, each call timed and its
 * result kept by name; the calls go through a cupti_calls table (the
 * linked one, or the injection library's). Shared by spike/pcsampling,
 * examples/pcsamp and libprocctl-cupti. Not thread-safe: one thread at a
 * time calls on a struct pcs. */
#ifndef PROCCTL_PCS_H
#define PROCCTL_PCS_H

#include <stddef.h>
#include <stdint.h>

#include "cupti_calls.h"

enum pcs_call { PCS_ENABLE, PCS_CONFIGURE, PCS_START, PCS_STOP, PCS_GETDATA, PCS_DISABLE, PCS_NCALLS };

/* Each PC record's function and samples, as a drain or Disable takes it
 * (name NULL where CUPTI gave none). The name is the hook's to keep: a
 * string of CUPTI's, freed once, when no record can name it again. */
typedef void pcs_record_fn(void *arg, char *function, uint64_t samples);

/* CUPTI's function name strings, each once: a set of pointers (open
 * addressing, at most half full). CUPTI may share one string among
 * records, also those of later GetData calls (CUpti_PCSamplingPCData:
 * "should not be modified or freed until post processing of all the
 * records is done"), so they are freed together, at the end. */
struct pcs_names {
	char **set;
	size_t n, cap;
};
void pcs_names_keep(struct pcs_names *s, char *name);
void pcs_names_free(struct pcs_names *s);

struct pcs {
	const struct cupti_calls *c;
	CUcontext ctx;
	size_t nstall;            /* stall reasons (0 until enabled) */
	CUpti_PCSamplingData cfg; /* the configured buffer (Disable flushes into it) */
	CUpti_PCSamplingData get; /* GetData's */
	int start_stop;           /* configured with start/stop control */
	unsigned period;          /* 2^period cycles between samples; 0: CUPTI's default */
	pcs_record_fn *record;    /* may be NULL: the names are kept in names */
	void *record_arg;
	int stuck;                /* a Disable after a failed Enable failed too: CUPTI may be enabled */
	CUptiResult last[PCS_NCALLS];
	double ms[PCS_NCALLS];    /* the last call's duration */
	uint64_t samples;         /* attributed to PCs, in all */
	uint64_t total, dropped;  /* totalSamples and droppedSamples, summed over GetData */
	struct pcs_names names;   /* the records' names without a record hook, until pcs_free */
};

/* pcs_call: run one call (PCS_GETDATA drains: GetData until nothing is
 * left; PCS_ENABLE disables again when it cannot size its buffers); its
 * CUptiResult, also in p->last[call] with its time in p->ms.
 * PCS_CONFIGURE sets the sampling data buffer, start/stop control
 * (start_stop) and period 2^period (0: CUPTI's default). New samples of a
 * drain are added to p->samples and returned in *got (may be NULL). */
void pcs_init(struct pcs *p, const struct cupti_calls *c, CUcontext ctx, int start_stop, unsigned period);
/* CLOCK_MONOTONIC in ns: the GPU line's clock (what links no
 * libprocctl-agent, whose procctl_now_ns the rest uses). */
uint64_t pcs_now_ns(void);
CUptiResult pcs_call(struct pcs *p, enum pcs_call call, uint64_t *got);
/* The buffers (sized again at the next Enable): after a Disable that
 * succeeded. The function names stay: CUPTI may hand one out again. */
void pcs_drop(struct pcs *p);
/* The buffers and the function names: once the context is gone (a
 * context destroyed while sampling is enabled flushes into p->cfg). The
 * counts stay. */
void pcs_free(struct pcs *p);
const char *pcs_call_name(enum pcs_call call);
const char *pcs_result_name(const struct pcs *p, CUptiResult r);

#endif
