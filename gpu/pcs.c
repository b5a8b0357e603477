/* SPDX-License-Identifier: Apache-2.0 */
/* pcs.c - CUPTI PC sampling on one context (pcs.h). */
#include "pcs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COLLECT_PCS 4096     /* PC records per buffer */
#define DRAIN_MAX 64         /* GetData calls per drain at most */

uint64_t pcs_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double now_ms(void)
{
	return (double)pcs_now_ns() / 1e6;
}

void pcs_init(struct pcs *p, const struct cupti_calls *c, CUcontext ctx, int start_stop, unsigned period)
{
	memset(p, 0, sizeof *p);
	p->c = c;
	p->ctx = ctx;
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

static size_t slot(const char *name, size_t cap)
{
	return ((uintptr_t)name >> 4) & (cap - 1);
}

void pcs_names_keep(struct pcs_names *s, char *name)
{
	size_t i;
	if (!name)
		return;
	if (2 * (s->n + 1) > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64, k;
		char **n = calloc(cap, sizeof *n);
		if (!n)
			return; /* left to CUPTI: a leak, never a double free */
		for (k = 0; k < s->cap; k++) {
			if (!s->set[k])
				continue;
			for (i = slot(s->set[k], cap); n[i]; i = (i + 1) & (cap - 1))
				;
			n[i] = s->set[k];
		}
		free(s->set);
		s->set = n;
		s->cap = cap;
	}
	for (i = slot(name, s->cap); s->set[i]; i = (i + 1) & (s->cap - 1))
		if (s->set[i] == name)
			return;
	s->set[i] = name;
	s->n++;
}

void pcs_names_free(struct pcs_names *s)
{
	size_t i;
	for (i = 0; i < s->cap; i++)
		free(s->set[i]);
	free(s->set);
	memset(s, 0, sizeof *s);
}

/* The samples of d's records (attributed to PCs); their function names
 * to the record hook, or kept for pcs_free. */
static uint64_t take(struct pcs *p, CUpti_PCSamplingData *d)
{
	size_t i, j, n = d->totalNumPcs < COLLECT_PCS ? d->totalNumPcs : COLLECT_PCS;
	uint64_t s = 0;
	for (i = 0; i < n; i++) {
		uint64_t k = 0;
		size_t m = d->pPcData[i].stallReasonCount < p->nstall ? d->pPcData[i].stallReasonCount : p->nstall;
		for (j = 0; j < m; j++)
			k += d->pPcData[i].stallReason[j].samples;
		if (p->record)
			p->record(p->record_arg, d->pPcData[i].functionName, k);
		else
			pcs_names_keep(&p->names, d->pPcData[i].functionName);
		s += k;
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
	cp.ctx = p->ctx;
	cp.numAttributes = n;
	cp.pPCSamplingConfigurationInfo = a;
	return p->c->cuptiPCSamplingSetConfigurationAttribute(&cp);
}

/* Enable, and on the first success the buffers, sized by the stall reasons. */
static CUptiResult enable(struct pcs *p)
{
	CUpti_PCSamplingEnableParams ep = {CUpti_PCSamplingEnableParamsSize, NULL, p->ctx};
	CUpti_PCSamplingGetNumStallReasonsParams np;
	CUptiResult r = p->c->cuptiPCSamplingEnable(&ep);
	if (r != CUPTI_SUCCESS || p->nstall)
		return r;
	memset(&np, 0, sizeof np);
	np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
	np.ctx = p->ctx;
	np.numStallReasons = &p->nstall;
	if ((r = p->c->cuptiPCSamplingGetNumStallReasons(&np)) == CUPTI_SUCCESS &&
	    (alloc_buf(&p->cfg, p->nstall) < 0 || alloc_buf(&p->get, p->nstall) < 0))
		r = CUPTI_ERROR_OUT_OF_MEMORY;
	if (r != CUPTI_SUCCESS) { /* enabled, and nothing to sample with: disabled again */
		CUpti_PCSamplingDisableParams dp = {CUpti_PCSamplingDisableParamsSize, NULL, p->ctx};
		free_buf(&p->cfg);
		free_buf(&p->get);
		p->nstall = 0;
		p->stuck = p->c->cuptiPCSamplingDisable(&dp) != CUPTI_SUCCESS;
	}
	return r;
}

/* GetData until CUPTI holds nothing more: the samples it brought. */
static CUptiResult drain(struct pcs *p, uint64_t *got)
{
	CUpti_PCSamplingGetDataParams gp = {CUpti_PCSamplingGetDataParamsSize, NULL, p->ctx, &p->get};
	CUptiResult r = CUPTI_SUCCESS;
	int k;
	if (!p->nstall)
		return CUPTI_ERROR_INVALID_OPERATION; /* never enabled: nothing to get */
	for (k = 0; k < DRAIN_MAX; k++) {
		p->get.totalNumPcs = p->get.remainingNumPcs = 0;
		if ((r = p->c->cuptiPCSamplingGetData(&gp)) != CUPTI_SUCCESS)
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
	CUpti_PCSamplingStartParams sp = {CUpti_PCSamplingStartParamsSize, NULL, p->ctx};
	CUpti_PCSamplingStopParams tp = {CUpti_PCSamplingStopParamsSize, NULL, p->ctx};
	CUpti_PCSamplingDisableParams dp = {CUpti_PCSamplingDisableParamsSize, NULL, p->ctx};
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
		r = p->c->cuptiPCSamplingStart(&sp);
		break;
	case PCS_STOP:
		r = p->c->cuptiPCSamplingStop(&tp);
		break;
	case PCS_GETDATA:
		r = drain(p, &n);
		break;
	case PCS_DISABLE:
		p->cfg.totalNumPcs = 0;
		r = p->c->cuptiPCSamplingDisable(&dp);
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

void pcs_drop(struct pcs *p)
{
	free_buf(&p->cfg);
	free_buf(&p->get);
	p->nstall = 0; /* the buffers are sized again at the next Enable */
}

void pcs_free(struct pcs *p)
{
	pcs_drop(p);
	pcs_names_free(&p->names);
}

const char *pcs_call_name(enum pcs_call call)
{
	static const char *const names[PCS_NCALLS] = {"enable", "configure", "start", "stop", "getdata", "disable"};
	return (unsigned)call < PCS_NCALLS ? names[call] : "?";
}

const char *pcs_result_name(const struct pcs *p, CUptiResult r)
{
	const char *s = NULL;
	return p->c->cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s ? s : "CUPTI_ERROR_?";
}
