/* SPDX-License-Identifier: Apache-2.0 */
/* gpu.c - a busy GPU context, and CUPTI PC sampling on it (gpu.h). */
#include "gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THREADS 256          /* per block; a block per SM */
#define ITERS 200000         /* per thread: about a millisecond of work */
#define COLLECT_PCS 4096     /* PC records per buffer */
#define DRAIN_MAX 64         /* GetData calls per drain at most */

extern const unsigned char gpu_kernel[]; /* kernel.cu's fatbin, embedded (cmake/embed.cmake) */
extern const size_t gpu_kernel_len;

/* The module, from an 8-byte aligned copy of the fatbin (the array's own
 * alignment is a char's), kept in g->image until the module is unloaded
 * (the driver API does not say the image may go sooner). */
static CUresult load_kernel(struct gpu *g)
{
	CUresult r;
	if (!(g->image = aligned_alloc(64, (gpu_kernel_len + 63) / 64 * 64)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy(g->image, gpu_kernel, gpu_kernel_len);
	if ((r = cuModuleLoadData(&g->mod, g->image)) != CUDA_SUCCESS) {
		free(g->image);
		g->image = NULL;
	}
	return r;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Fail with the call and the driver's name for r: -1. */
static int cu_fail(const char *what, CUresult r, char *err, size_t errlen)
{
	const char *name = NULL;
	cuGetErrorName(r, &name);
	snprintf(err, errlen, "%s: %s (%d)", what, name ? name : "CUDA_ERROR_?", (int)r);
	return -1;
}

int gpu_open(struct gpu *g, int ordinal, char *err, size_t errlen)
{
	CUuuid u;
	CUresult r;
	int sms = 0;
	memset(g, 0, sizeof *g);
	g->iters = ITERS;
	if ((r = cuInit(0)) != CUDA_SUCCESS)
		return cu_fail("cuInit", r, err, errlen);
	if ((r = cuDeviceGet(&g->dev, ordinal)) != CUDA_SUCCESS)
		return cu_fail("cuDeviceGet", r, err, errlen);
	if ((r = cuDeviceGetName(g->name, sizeof g->name, g->dev)) != CUDA_SUCCESS)
		return cu_fail("cuDeviceGetName", r, err, errlen);
	if ((r = cuDeviceGetUuid(&u, g->dev)) != CUDA_SUCCESS)
		return cu_fail("cuDeviceGetUuid", r, err, errlen);
	memcpy(g->uuid, u.bytes, sizeof g->uuid);
	if ((r = cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g->dev)) != CUDA_SUCCESS)
		return cu_fail("cuDeviceGetAttribute", r, err, errlen);
	g->blocks = sms > 0 ? (unsigned)sms : 1;
	if ((r = cuDevicePrimaryCtxRetain(&g->ctx, g->dev)) != CUDA_SUCCESS)
		return cu_fail("cuDevicePrimaryCtxRetain", r, err, errlen);
	if ((r = cuCtxSetCurrent(g->ctx)) != CUDA_SUCCESS || (r = load_kernel(g)) != CUDA_SUCCESS ||
	    (r = cuModuleGetFunction(&g->busy, g->mod, "busy")) != CUDA_SUCCESS ||
	    (r = cuMemAlloc(&g->out, (size_t)g->blocks * THREADS * sizeof(unsigned long long))) != CUDA_SUCCESS) {
		if (g->mod)
			cuModuleUnload(g->mod);
		free(g->image);
		cuDevicePrimaryCtxRelease(g->dev);
		memset(g, 0, sizeof *g);
		return cu_fail("loading the kernel", r, err, errlen);
	}
	return 0;
}

CUresult gpu_current(struct gpu *g)
{
	return cuCtxSetCurrent(g->ctx);
}

CUresult gpu_run(struct gpu *g)
{
	void *args[] = {&g->out, &g->iters};
	CUresult r = cuLaunchKernel(g->busy, g->blocks, 1, 1, THREADS, 1, 1, 0, NULL, args, NULL);
	if (r == CUDA_SUCCESS)
		g->kernels++;
	return r == CUDA_SUCCESS ? cuCtxSynchronize() : r;
}

void gpu_close(struct gpu *g)
{
	if (!g->ctx)
		return;
	cuMemFree(g->out);
	cuModuleUnload(g->mod);
	free(g->image);
	g->image = NULL;
	cuDevicePrimaryCtxRelease(g->dev);
	g->ctx = NULL;
}

/* ---- PC sampling --------------------------------------------------- */

void pcs_init(struct pcs *p, struct gpu *g, int start_stop, unsigned period)
{
	memset(p, 0, sizeof *p);
	p->g = g;
	p->start_stop = start_stop;
	p->period = period;
}

static int alloc_buf(CUpti_PCSamplingData *d, size_t nstall)
{
	size_t i;
	memset(d, 0, sizeof *d);
	d->size = sizeof *d;
	d->collectNumPcs = COLLECT_PCS;
	if (!(d->pPcData = calloc(COLLECT_PCS, sizeof *d->pPcData)))
		return -1;
	for (i = 0; i < COLLECT_PCS; i++) {
		d->pPcData[i].size = sizeof d->pPcData[i];
		if (!(d->pPcData[i].stallReason = calloc(nstall, sizeof *d->pPcData[i].stallReason)))
			return -1;
	}
	return 0;
}

static void free_buf(CUpti_PCSamplingData *d)
{
	size_t i;
	for (i = 0; d->pPcData && i < COLLECT_PCS; i++)
		free(d->pPcData[i].stallReason);
	free(d->pPcData);
	memset(d, 0, sizeof *d);
}

/* Keep name to free in pcs_free, once: CUPTI may share one string among
 * records, also those of later GetData calls (CUpti_PCSamplingPCData:
 * "should not be modified or freed until post processing of all the
 * records is done"). */
static void keep_name(struct pcs *p, char *name)
{
	size_t i;
	if (!name)
		return;
	for (i = p->nnames; i > 0; i--)
		if (p->names[i - 1] == name)
			return;
	if (p->nnames == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		char **n = realloc(p->names, cap * sizeof *n);
		if (!n)
			return; /* left to CUPTI: a leak, never a double free */
		p->names = n;
		p->cap = cap;
	}
	p->names[p->nnames++] = name;
}

/* The samples of d's records (attributed to PCs); their function names
 * kept for pcs_free. */
static uint64_t take(struct pcs *p, CUpti_PCSamplingData *d)
{
	size_t i, j, n = d->totalNumPcs < COLLECT_PCS ? d->totalNumPcs : COLLECT_PCS;
	uint64_t s = 0;
	for (i = 0; i < n; i++) {
		for (j = 0; j < d->pPcData[i].stallReasonCount; j++)
			s += d->pPcData[i].stallReason[j].samples;
		keep_name(p, d->pPcData[i].functionName);
		d->pPcData[i].functionName = NULL;
	}
	return s;
}

static CUptiResult configure(struct pcs *p)
{
	CUpti_PCSamplingConfigurationInfo a[4];
	CUpti_PCSamplingConfigurationInfoParams cp;
	size_t n = 0;
	memset(a, 0, sizeof a);
	a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
	a[n++].attributeData.samplingDataBufferData.samplingDataBuffer = &p->cfg;
	a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
	a[n++].attributeData.collectionModeData.collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
	a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
	a[n++].attributeData.enableStartStopControlData.enableStartStopControl = (uint32_t)p->start_stop;
	if (p->period) {
		a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
		a[n++].attributeData.samplingPeriodData.samplingPeriod = p->period;
	}
	memset(&cp, 0, sizeof cp);
	cp.size = CUpti_PCSamplingConfigurationInfoParamsSize;
	cp.ctx = p->g->ctx;
	cp.numAttributes = n;
	cp.pPCSamplingConfigurationInfo = a;
	return cuptiPCSamplingSetConfigurationAttribute(&cp);
}

/* Enable, and on the first success the buffers, sized by the stall reasons. */
static CUptiResult enable(struct pcs *p)
{
	CUpti_PCSamplingEnableParams ep = {CUpti_PCSamplingEnableParamsSize, NULL, p->g->ctx};
	CUpti_PCSamplingGetNumStallReasonsParams np;
	CUptiResult r = cuptiPCSamplingEnable(&ep);
	if (r != CUPTI_SUCCESS || p->nstall)
		return r;
	memset(&np, 0, sizeof np);
	np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
	np.ctx = p->g->ctx;
	np.numStallReasons = &p->nstall;
	if ((r = cuptiPCSamplingGetNumStallReasons(&np)) != CUPTI_SUCCESS)
		return r;
	if (alloc_buf(&p->cfg, p->nstall) < 0 || alloc_buf(&p->get, p->nstall) < 0) {
		free_buf(&p->cfg);
		free_buf(&p->get);
		p->nstall = 0;
		return CUPTI_ERROR_OUT_OF_MEMORY;
	}
	return CUPTI_SUCCESS;
}

/* GetData until CUPTI holds nothing more: the samples it brought. */
static CUptiResult drain(struct pcs *p, uint64_t *got)
{
	CUpti_PCSamplingGetDataParams gp = {CUpti_PCSamplingGetDataParamsSize, NULL, p->g->ctx, &p->get};
	CUptiResult r = CUPTI_SUCCESS;
	int k;
	if (!p->nstall)
		return CUPTI_ERROR_INVALID_OPERATION; /* never enabled: nothing to get */
	for (k = 0; k < DRAIN_MAX; k++) {
		p->get.totalNumPcs = p->get.remainingNumPcs = 0;
		if ((r = cuptiPCSamplingGetData(&gp)) != CUPTI_SUCCESS)
			break;
		*got += take(p, &p->get);
		p->total += p->get.totalSamples;
		p->dropped += p->get.droppedSamples;
		if (!p->get.totalNumPcs && !p->get.remainingNumPcs)
			break;
	}
	return r;
}

CUptiResult pcs_call(struct pcs *p, enum pcs_call call, uint64_t *got)
{
	CUpti_PCSamplingStartParams sp = {CUpti_PCSamplingStartParamsSize, NULL, p->g->ctx};
	CUpti_PCSamplingStopParams tp = {CUpti_PCSamplingStopParamsSize, NULL, p->g->ctx};
	CUpti_PCSamplingDisableParams dp = {CUpti_PCSamplingDisableParamsSize, NULL, p->g->ctx};
	uint64_t n = 0;
	double t0 = now_ms();
	CUptiResult r;
	switch (call) {
	case PCS_ENABLE:
		r = enable(p);
		break;
	case PCS_CONFIGURE:
		r = p->nstall ? configure(p) : CUPTI_ERROR_INVALID_OPERATION;
		break;
	case PCS_START:
		r = cuptiPCSamplingStart(&sp);
		break;
	case PCS_STOP:
		r = cuptiPCSamplingStop(&tp);
		break;
	case PCS_GETDATA:
		r = drain(p, &n);
		break;
	case PCS_DISABLE:
		p->cfg.totalNumPcs = 0;
		r = cuptiPCSamplingDisable(&dp);
		if (r == CUPTI_SUCCESS && p->nstall)
			n = take(p, &p->cfg); /* what Disable flushed into the configured buffer */
		break;
	default:
		r = CUPTI_ERROR_INVALID_PARAMETER;
		call = PCS_ENABLE;
	}
	p->ms[call] = now_ms() - t0;
	p->last[call] = r;
	p->samples += n;
	if (got)
		*got = n;
	return r;
}

void pcs_free(struct pcs *p)
{
	size_t i;
	free_buf(&p->cfg);
	free_buf(&p->get);
	for (i = 0; i < p->nnames; i++)
		free(p->names[i]);
	free(p->names);
	p->names = NULL;
	p->nnames = p->cap = 0;
}

const char *pcs_call_name(enum pcs_call call)
{
	static const char *const names[PCS_NCALLS] = {"enable", "configure", "start", "stop", "getdata", "disable"};
	return (unsigned)call < PCS_NCALLS ? names[call] : "?";
}

const char *pcs_result_name(CUptiResult r)
{
	const char *s = NULL;
	return cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s ? s : "CUPTI_ERROR_?";
}
