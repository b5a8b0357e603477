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

/* One subscriber a process, as CUPTI has; STANDIN_SUBSCRIBER: another
 * tool's, there first. */
CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc fn, void *arg, CUpti_SubscriberParams *sp)
{
	const char *other = getenv("STANDIN_SUBSCRIBER");
	if (!sp || sp->structSize < CUpti_SubscriberParams_STRUCT_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (sub_fn || (other && *other)) {
		if (sp->oldSubscriberName && sp->oldSubscriberSize)
			snprintf(sp->oldSubscriberName, sp->oldSubscriberSize, "CUPTI for %s", sub_fn ? "procctl" : other);
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	}
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

/* A PC sampling call on ctx: op on its state (ord, its GPU; arg, the
 * call's parameters), under the driver's lock; logged when call is named. */
typedef CUptiResult pcs_op(struct standin_pcs *p, int ord, void *arg);

static CUptiResult step(const char *call, CUcontext ctx, pcs_op *op, void *arg)
{
	struct standin_pcs *p;
	CUptiResult r = CUPTI_ERROR_INVALID_CONTEXT;
	int ord;
	standin_lock();
	if ((p = standin_ctx(ctx, &ord)))
		r = op(p, ord, arg);
	standin_unlock();
	return call ? logged(call, ctx, r) : r;
}

static CUptiResult enable(struct standin_pcs *p, int ord, void *arg)
{
	(void)arg;
	if (p->enabled)
		return CUPTI_ERROR_INVALID_OPERATION;
	if ((p->lock_fd = gpu_lock(ord)) < 0)
		return CUPTI_ERROR_NOT_SUPPORTED; /* another process samples this GPU */
	p->enabled = 1;
	return CUPTI_SUCCESS;
}

static CUptiResult stall_reasons(struct standin_pcs *p, int ord, void *arg)
{
	(void)ord;
	if (!p->enabled)
		return CUPTI_ERROR_INVALID_OPERATION;
	*(size_t *)arg = NSTALL;
	return CUPTI_SUCCESS;
}

static CUptiResult attribute(struct standin_pcs *p, CUpti_PCSamplingConfigurationInfo *a)
{
	switch (a->attributeType) {
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER:
		p->buffer = a->attributeData.samplingDataBufferData.samplingDataBuffer;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL:
		p->start_stop = (int)a->attributeData.enableStartStopControlData.enableStartStopControl;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
		p->period = a->attributeData.samplingPeriodData.samplingPeriod;
		return p->period < 5 || p->period > 31 ? CUPTI_ERROR_INVALID_PARAMETER : CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
		return CUPTI_SUCCESS;
	default:
		return CUPTI_ERROR_INVALID_PARAMETER;
	}
}

static CUptiResult configure(struct standin_pcs *p, int ord, void *arg)
{
	CUpti_PCSamplingConfigurationInfoParams *cp = arg;
	CUptiResult r = CUPTI_SUCCESS;
	size_t i;
	(void)ord;
	if (!p->enabled || p->started)
		return CUPTI_ERROR_INVALID_OPERATION;
	for (i = 0; r == CUPTI_SUCCESS && i < cp->numAttributes; i++)
		r = attribute(p, &cp->pPCSamplingConfigurationInfo[i]);
	p->configured = r == CUPTI_SUCCESS;
	return r;
}

static CUptiResult start(struct standin_pcs *p, int ord, void *arg)
{
	const char *fail = getenv("STANDIN_FAIL");
	(void)ord, (void)arg;
	if (!p->configured || !p->start_stop || p->started)
		return CUPTI_ERROR_INVALID_OPERATION;
	if (fail && !strcmp(fail, "start") && starts++ % 2 == 0)
		return CUPTI_ERROR_UNKNOWN;
	p->started = 1;
	return CUPTI_SUCCESS;
}

static CUptiResult stop(struct standin_pcs *p, int ord, void *arg)
{
	(void)ord, (void)arg;
	if (!p->started)
		return CUPTI_ERROR_INVALID_OPERATION;
	p->started = 0;
	return CUPTI_SUCCESS;
}

/* A function's name as CUPTI hands it out: one string per name for the
 * process, the same pointer in every record (CUPTI may share one; the
 * caller frees it once, when it is done with every record). */
static char *name_of(int which)
{
	static char *names[2];
	const char *tail = getenv("STANDIN_FUNC2");
	if (!names[which])
		names[which] = strdup(which ? tail ? tail : "busy_tail" : "busy");
	return names[which];
}

/* The pending samples into d: one PC record a call (so a drain takes
 * several), the rest counted in remainingNumPcs. */
static void fill(struct standin_pcs *p, CUpti_PCSamplingData *d)
{
	uint64_t *n = p->pending_busy ? &p->pending_busy : &p->pending_tail;
	CUpti_PCSamplingPCData *pc = &d->pPcData[0];
	d->totalNumPcs = d->remainingNumPcs = 0;
	d->totalSamples = d->droppedSamples = 0;
	if (!*n || !d->collectNumPcs)
		return;
	pc->pcOffset = n == &p->pending_busy ? 0 : 0x40;
	pc->functionName = name_of(n != &p->pending_busy);
	pc->stallReasonCount = 1;
	pc->stallReason[0].pcSamplingStallReasonIndex = 0;
	pc->stallReason[0].samples = (uint32_t)*n;
	d->totalSamples = *n;
	d->totalNumPcs = 1;
	*n = 0;
	d->remainingNumPcs = p->pending_tail ? 1 : 0;
}

static CUptiResult getdata(struct standin_pcs *p, int ord, void *arg)
{
	(void)ord;
	if (!p->enabled || !p->configured)
		return CUPTI_ERROR_INVALID_OPERATION;
	fill(p, arg);
	return CUPTI_SUCCESS;
}

static CUptiResult disable(struct standin_pcs *p, int ord, void *arg)
{
	(void)ord, (void)arg;
	if (!p->enabled)
		return CUPTI_ERROR_INVALID_OPERATION;
	if (p->buffer)
		fill(p, p->buffer); /* what was left, flushed into the configured buffer */
	close(p->lock_fd);
	p->lock_fd = -1;
	p->enabled = p->configured = p->started = 0;
	p->buffer = NULL;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiPCSamplingEnable(CUpti_PCSamplingEnableParams *ep)
{
	return step("enable", ep->ctx, enable, NULL);
}

CUptiResult cuptiPCSamplingGetNumStallReasons(CUpti_PCSamplingGetNumStallReasonsParams *np)
{
	return step(NULL, np->ctx, stall_reasons, np->numStallReasons);
}

CUptiResult cuptiPCSamplingSetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams *cp)
{
	return step("configure", cp->ctx, configure, cp);
}

CUptiResult cuptiPCSamplingStart(CUpti_PCSamplingStartParams *sp)
{
	return step("start", sp->ctx, start, NULL);
}

CUptiResult cuptiPCSamplingStop(CUpti_PCSamplingStopParams *tp)
{
	return step("stop", tp->ctx, stop, NULL);
}

CUptiResult cuptiPCSamplingGetData(CUpti_PCSamplingGetDataParams *gp)
{
	return step("getdata", gp->ctx, getdata, gp->pcSamplingData);
}

CUptiResult cuptiPCSamplingDisable(CUpti_PCSamplingDisableParams *dp)
{
	return step("disable", dp->ctx, disable, NULL);
}
