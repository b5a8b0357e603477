/* SPDX-License-Identifier: Apache-2.0 */
/* gpu.h - what the GPU PC sampling programs (spike/pcsampling, clients/
 * pcsamp) share: a context on one GPU running a steady stream of short
 * busy kernels, and CUPTI's PC Sampling API on that context, each call
 * timed and its result kept by name. C on the driver API; the kernel is
 * gpu/kernel.cu, embedded. Not thread-safe: one thread uses a struct gpu
 * (or its context is made current where another does, gpu_current). */
#ifndef PROCCTL_GPU_H
#define PROCCTL_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cupti_pcsampling.h>

struct gpu {
	CUdevice dev;
	CUcontext ctx;     /* the device's primary context */
	CUmodule mod;
	void *image;       /* the module's fatbin, aligned, kept until it is unloaded */
	CUfunction busy;
	CUdeviceptr out;
	unsigned iters;    /* per thread per kernel: about a millisecond on an H200 */
	unsigned blocks;   /* one per SM */
	uint8_t uuid[16];  /* cuDeviceGetUuid: the same GPU under any index */
	char name[96];
	uint64_t kernels;  /* launched */
};

/* Open GPU ordinal (cuInit, its primary context current on this thread,
 * the kernel loaded): 0, or -1 with why in err. */
int gpu_open(struct gpu *g, int ordinal, char *err, size_t errlen);
/* Make g's context current on the calling thread: a CUresult. */
CUresult gpu_current(struct gpu *g);
/* One busy kernel, waited for: a CUresult. */
CUresult gpu_run(struct gpu *g);
void gpu_close(struct gpu *g);

/* PC sampling on g's context: each call's result and duration. */
enum pcs_call { PCS_ENABLE, PCS_CONFIGURE, PCS_START, PCS_STOP, PCS_GETDATA, PCS_DISABLE, PCS_NCALLS };

struct pcs {
	struct gpu *g;
	size_t nstall;            /* stall reasons (0 until enabled once) */
	CUpti_PCSamplingData cfg; /* the configured buffer (Disable flushes into it) */
	CUpti_PCSamplingData get; /* GetData's */
	int start_stop;           /* configured with start/stop control */
	unsigned period;          /* 2^period cycles between samples; 0: CUPTI's default */
	CUptiResult last[PCS_NCALLS];
	double ms[PCS_NCALLS];    /* the last call's duration */
	uint64_t samples;         /* attributed to PCs, in all */
	uint64_t total, dropped;  /* totalSamples and droppedSamples, summed over GetData */
	char **names;             /* the records' functionName strings, each once: CUPTI may */
	size_t nnames, cap;       /* hand one out again later, so they are freed by pcs_free */
};

/* pcs_call: run one call (PCS_GETDATA drains: GetData until nothing is
 * left); its CUptiResult, also in p->last[call] with its time in p->ms.
 * PCS_CONFIGURE sets the sampling data buffer, start/stop control
 * (start_stop) and period 2^period (0: CUPTI's default). New samples of a
 * drain are added to p->samples and returned in *got (may be NULL). */
void pcs_init(struct pcs *p, struct gpu *g, int start_stop, unsigned period);
CUptiResult pcs_call(struct pcs *p, enum pcs_call call, uint64_t *got);
/* The buffers and the function names: after Disable, or after gpu_close
 * (a context destroyed while sampling is enabled flushes into p->cfg). */
void pcs_free(struct pcs *p);
const char *pcs_call_name(enum pcs_call call);
const char *pcs_result_name(CUptiResult r);

#endif
