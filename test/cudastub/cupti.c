/* SPDX-License-Identifier: Apache-2.0 */
/* cupti.c - CUPTI's stand-in, libcupti.so.13 (standin.h): callbacks and
 * PC sampling, the calls libprocctl-cupti makes, in CUPTI's order. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "standin.h"

#define NSTALL 4

static CUpti_SubscriberHandle subscriber;
static CUpti_CallbackFunc sub_fn;
static void *sub_arg;
static unsigned starts;

static const char *result_name(CUptiResult r)
{
	switch (r) {
	case CUPTI_SUCCESS: return "CUPTI_SUCCESS";
	case CUPTI_ERROR_INVALID_PARAMETER: return "CUPTI_ERROR_INVALID_PARAMETER";
	case CUPTI_ERROR_INVALID_CONTEXT: return "CUPTI_ERROR_INVALID_CONTEXT";
	case CUPTI_ERROR_INVALID_OPERATION: return "CUPTI_ERROR_INVALID_OPERATION";
	case CUPTI_ERROR_NOT_SUPPORTED: return "CUPTI_ERROR_NOT_SUPPORTED";
	case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
	default: return "CUPTI_ERROR_UNKNOWN";
	}
}

/* A PC sampling call's line in STANDIN_LOG, and its result. */
static CUptiResult logged(const char *call, CUcontext ctx, CUptiResult r)
{
	const char *path = getenv("STANDIN_LOG");
	struct timespec ts;
	char line[160];
	int fd, n;
	if (!path)
		return r;
	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(line, sizeof line, "%d %s %s %p %llu\n", (int)getpid(), call, result_name(r), (void *)ctx,
		     (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
	if ((fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) >= 0) {
		if (write(fd, line, (size_t)n) != n)
			abort();
		close(fd);
	}
	return r;
}

CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
	*s = result_name(r);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc fn, void *arg)
{
	if (sub_fn)
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	sub_fn = fn;
	sub_arg = arg;
	subscriber = (CUpti_SubscriberHandle)&sub_fn;
	*sub = subscriber;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle sub)
{
	if (sub != subscriber || !sub)
		return CUPTI_ERROR_INVALID_PARAMETER;
	standin_subscribe(NULL, NULL);
	sub_fn = NULL;
	subscriber = NULL;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle sub, CUpti_CallbackDomain domain)
{
	if (sub != subscriber || !sub || domain != CUPTI_CB_DOMAIN_RESOURCE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	standin_subscribe(enable ? sub_fn : NULL, sub_arg);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiGetDeviceId(CUcontext ctx, uint32_t *id)
{
	int ord;
	if (!standin_ctx(ctx, &ord))
		return CUPTI_ERROR_INVALID_CONTEXT;
	*id = (uint32_t)ord;
	return CUPTI_SUCCESS;
}

/* The context's state, locked (standin_unlock after), or NULL. */
static struct standin_pcs *pcs_of(CUcontext ctx, int *ord)
{
	struct standin_pcs *p;
	standin_lock();
	if (!(p = standin_ctx(ctx, ord)))
		standin_unlock();
	return p;
}

/* The GPU's exclusivity: an flock on $STANDIN_DIR/<uuid>. */
static int gpu_lock(int ord)
{
	const char *dir = getenv("STANDIN_DIR");
	uint8_t u[16];
	char path[512];
	int fd, i, n;
	if (!dir)
		return -1;
	standin_uuid(ord, u);
	n = snprintf(path, sizeof path, "%s/", dir);
	for (i = 0; i < 16 && n < (int)sizeof path - 3; i++)
		n += snprintf(path + n, sizeof path - (size_t)n, "%02x", u[i]);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

CUptiResult cuptiPCSamplingEnable(CUpti_PCSamplingEnableParams *ep)
{
	int ord;
	struct standin_pcs *p = pcs_of(ep->ctx, &ord);
	CUptiResult r = CUPTI_SUCCESS;
	if (!p)
		return logged("enable", ep->ctx, CUPTI_ERROR_INVALID_CONTEXT);
	if (p->enabled)
		r = CUPTI_ERROR_INVALID_OPERATION;
	else if ((p->lock_fd = gpu_lock(ord)) < 0)
		r = CUPTI_ERROR_NOT_SUPPORTED; /* another process samples this GPU */
	else
		p->enabled = 1;
	standin_unlock();
	return logged("enable", ep->ctx, r);
}

CUptiResult cuptiPCSamplingGetNumStallReasons(CUpti_PCSamplingGetNumStallReasonsParams *np)
{
	struct standin_pcs *p = pcs_of(np->ctx, NULL);
	CUptiResult r = CUPTI_SUCCESS;
	if (!p)
		return CUPTI_ERROR_INVALID_CONTEXT;
	if (!p->enabled)
		r = CUPTI_ERROR_INVALID_OPERATION;
	else
		*np->numStallReasons = NSTALL;
	standin_unlock();
	return r;
}

CUptiResult cuptiPCSamplingSetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams *cp)
{
	struct standin_pcs *p = pcs_of(cp->ctx, NULL);
	CUptiResult r = CUPTI_SUCCESS;
	size_t i;
	if (!p)
		return logged("configure", cp->ctx, CUPTI_ERROR_INVALID_CONTEXT);
	if (!p->enabled || p->started)
		r = CUPTI_ERROR_INVALID_OPERATION;
	for (i = 0; r == CUPTI_SUCCESS && i < cp->numAttributes; i++) {
		CUpti_PCSamplingConfigurationInfo *a = &cp->pPCSamplingConfigurationInfo[i];
		switch (a->attributeType) {
		case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER:
			p->buffer = a->attributeData.samplingDataBufferData.samplingDataBuffer;
			break;
		case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL:
			p->start_stop = (int)a->attributeData.enableStartStopControlData.enableStartStopControl;
			break;
		case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
			p->period = a->attributeData.samplingPeriodData.samplingPeriod;
			if (p->period < 5 || p->period > 31)
				r = CUPTI_ERROR_INVALID_PARAMETER;
			break;
		case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
			break;
		default:
			r = CUPTI_ERROR_INVALID_PARAMETER;
		}
	}
	if (r == CUPTI_SUCCESS)
		p->configured = 1;
	standin_unlock();
	return logged("configure", cp->ctx, r);
}

CUptiResult cuptiPCSamplingStart(CUpti_PCSamplingStartParams *sp)
{
	struct standin_pcs *p = pcs_of(sp->ctx, NULL);
	const char *fail = getenv("STANDIN_FAIL");
	CUptiResult r = CUPTI_SUCCESS;
	if (!p)
		return logged("start", sp->ctx, CUPTI_ERROR_INVALID_CONTEXT);
	if (!p->configured || !p->start_stop || p->started)
		r = CUPTI_ERROR_INVALID_OPERATION;
	else if (fail && !strcmp(fail, "start") && starts++ % 2 == 0)
		r = CUPTI_ERROR_UNKNOWN;
	else
		p->started = 1;
	standin_unlock();
	return logged("start", sp->ctx, r);
}

CUptiResult cuptiPCSamplingStop(CUpti_PCSamplingStopParams *tp)
{
	struct standin_pcs *p = pcs_of(tp->ctx, NULL);
	CUptiResult r = CUPTI_SUCCESS;
	if (!p)
		return logged("stop", tp->ctx, CUPTI_ERROR_INVALID_CONTEXT);
	if (!p->started)
		r = CUPTI_ERROR_INVALID_OPERATION;
	p->started = 0;
	standin_unlock();
	return logged("stop", tp->ctx, r);
}

/* The pending samples into d, as two PC records (CUPTI hands out the
 * function names; the caller frees them). */
static void fill(struct standin_pcs *p, CUpti_PCSamplingData *d)
{
	const char *tail = getenv("STANDIN_FUNC2");
	uint64_t n[2] = {p->pending_busy, p->pending_tail};
	const char *names[2] = {"busy", tail ? tail : "busy_tail"};
	size_t i, k = 0;
	d->totalNumPcs = d->remainingNumPcs = 0;
	d->totalSamples = d->droppedSamples = 0;
	for (i = 0; i < 2 && k < d->collectNumPcs; i++) {
		CUpti_PCSamplingPCData *pc = &d->pPcData[k];
		if (!n[i])
			continue;
		pc->pcOffset = 0x40 * i;
		pc->functionName = strdup(names[i]);
		pc->stallReasonCount = 1;
		pc->stallReason[0].pcSamplingStallReasonIndex = 0;
		pc->stallReason[0].samples = (uint32_t)n[i];
		d->totalSamples += n[i];
		k++;
	}
	d->totalNumPcs = k;
	p->pending_busy = p->pending_tail = 0;
}

CUptiResult cuptiPCSamplingGetData(CUpti_PCSamplingGetDataParams *gp)
{
	struct standin_pcs *p = pcs_of(gp->ctx, NULL);
	CUptiResult r = CUPTI_SUCCESS;
	if (!p)
		return logged("getdata", gp->ctx, CUPTI_ERROR_INVALID_CONTEXT);
	if (!p->enabled || !p->configured)
		r = CUPTI_ERROR_INVALID_OPERATION;
	else
		fill(p, gp->pcSamplingData);
	standin_unlock();
	return logged("getdata", gp->ctx, r);
}

CUptiResult cuptiPCSamplingDisable(CUpti_PCSamplingDisableParams *dp)
{
	struct standin_pcs *p = pcs_of(dp->ctx, NULL);
	CUptiResult r = CUPTI_SUCCESS;
	if (!p)
		return logged("disable", dp->ctx, CUPTI_ERROR_INVALID_CONTEXT);
	if (!p->enabled) {
		r = CUPTI_ERROR_INVALID_OPERATION;
	} else {
		if (p->buffer)
			fill(p, p->buffer); /* what was left, flushed into the configured buffer */
		close(p->lock_fd);
		p->lock_fd = -1;
		p->enabled = p->configured = p->started = 0;
		p->buffer = NULL;
	}
	standin_unlock();
	return logged("disable", dp->ctx, r);
}
