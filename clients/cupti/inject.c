/* SPDX-License-Identifier: Apache-2.0 */
/* inject.c - libprocctl-cupti's entry: the CUDA driver loads the library
 * named by CUDA_INJECTION64_PATH at cuInit and calls InitializeInjection.
 * It finds the driver's and CUPTI's calls (dlsym, one table: cupti_calls.h),
 * follows the program's contexts by CUPTI's resource callbacks, and
 * starts the control thread (control.c), which samples a GPU's contexts
 * only while procctl grants the GPU's PC sampling. Whatever fails, it
 * says so once on stderr and leaves the program as it was: never granted,
 * a program runs as without it.
 *
 * Environment: PROCCTL_CUPTI_CONSUMER (pcsamp), PROCCTL_CUPTI_KIND (2),
 * PROCCTL_CUPTI_LIBRARY (the libcupti to load; default its soname, found
 * by the library's RUNPATH, the toolkit's folders). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"

#define STR_(x) #x
#define STR(x) STR_(x) /* a call's symbol: cuda.h's mapping (cuCtxPushCurrent_v2) applied */

struct inject inj = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake_fd = -1};

static void say(const char *what, const char *why)
{
	fprintf(stderr, "procctl-cupti: %s: %s; PC sampling is off in this process\n", what, why);
}

/* One entry of the table from h: 0, or -1 said. */
static int from(void *h, const char *name, void *slot)
{
	void *s = dlsym(h, name);
	if (!s) {
		fprintf(stderr, "procctl-cupti: no %s: the driver or CUPTI is older than the headers (CUDA_VERSION %s); "
				"PC sampling is off in this process\n", name, STR(CUDA_VERSION));
		return -1;
	}
	memcpy(slot, &s, sizeof s); /* a function's address, as dlsym gives it */
	return 0;
}

/* The table's entries from the driver (already loaded: it loaded us) and
 * from CUPTI: 0, or -1 said. */
static int resolve(void)
{
	const char *lib = getenv("PROCCTL_CUPTI_LIBRARY");
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD), *cupti;
	if (!cuda) {
		say("libcuda.so.1 is not loaded", dlerror());
		return -1;
	}
	if (!(cupti = dlopen(lib && *lib ? lib : PROCCTL_CUPTI_SONAME, RTLD_NOW | RTLD_LOCAL))) {
		say("loading CUPTI (PROCCTL_CUPTI_LIBRARY names another)", dlerror());
		return -1;
	}
#define DRIVER(f) if (from(cuda, STR(f), &inj.c.f) < 0) return -1;
#define CUPTI(f) if (from(cupti, STR(f), &inj.c.f) < 0) return -1;
	CUPTI_CALLS_DRIVER(DRIVER)
	CUPTI_CALLS_CUPTI(CUPTI)
#undef DRIVER
#undef CUPTI
	return 0;
}

/* The GPU of ctx, by UUID, its index in inj.uuid: -1 past INJECT_GPUS or
 * when the driver cannot say. Under mu. */
static int gpu_of(CUcontext ctx)
{
	uint32_t ord;
	CUdevice dev;
	CUuuid u;
	unsigned i;
	if (inj.c.cuptiGetDeviceId(ctx, &ord) != CUPTI_SUCCESS || inj.c.cuDeviceGet(&dev, (int)ord) != CUDA_SUCCESS ||
	    inj.c.cuDeviceGetUuid(&u, dev) != CUDA_SUCCESS)
		return -1;
	for (i = 0; i < inj.ngpus; i++)
		if (!memcmp(inj.uuid[i], u.bytes, 16))
			return (int)i;
	if (inj.ngpus == INJECT_GPUS) {
		inj.lost_gpus++;
		return -1;
	}
	memcpy(inj.uuid[inj.ngpus], u.bytes, 16);
	return (int)inj.ngpus++;
}

static void ctx_created(CUcontext ctx)
{
	int i, gpu = gpu_of(ctx);
	if (gpu < 0)
		return;
	for (i = 0; i < INJECT_CTXS; i++) {
		if (!inj.ctxs[i].ctx) {
			memset(&inj.ctxs[i], 0, sizeof inj.ctxs[i]);
			inj.ctxs[i].ctx = ctx;
			inj.ctxs[i].gpu = gpu;
			return;
		}
	}
	inj.lost_ctxs++;
}

/* A context going away is let go of here, on the program's thread, while
 * it still exists; the control thread reports the release. */
static void ctx_destroying(CUcontext ctx)
{
	int i;
	for (i = 0; i < INJECT_CTXS; i++) {
		if (inj.ctxs[i].ctx == ctx) {
			ctx_unsample(&inj.ctxs[i]);
			inj.ctxs[i].ctx = NULL;
		}
	}
}

static void CUPTIAPI on_resource(void *arg, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	const CUpti_ResourceData *rd = data;
	(void)arg;
	if (domain != CUPTI_CB_DOMAIN_RESOURCE || !rd || !rd->context)
		return;
	if (cbid != CUPTI_CBID_RESOURCE_CONTEXT_CREATED && cbid != CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
		return;
	pthread_mutex_lock(&inj.mu);
	if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
		ctx_created(rd->context);
	else
		ctx_destroying(rd->context);
	pthread_mutex_unlock(&inj.mu);
	control_wake();
}

/* One PC sampling call on x, its failure counted. */
static int call(struct inject_ctx *x, enum pcs_call c)
{
	uint64_t got = 0;
	CUptiResult r = pcs_call(&x->p, c, &got);
	if (r != CUPTI_SUCCESS) {
		inj.errors++;
		inj.last_error = (int32_t)r;
		inj.last_call = (uint32_t)c + 1;
	}
	return r == CUPTI_SUCCESS;
}

static void account(struct inject_ctx *x)
{
	inj.samples += x->p.samples;
	inj.dropped += x->p.dropped;
	x->p.samples = x->p.dropped = 0;
}

int ctx_sample(struct inject_ctx *x)
{
	CUcontext prev;
	int ok;
	pcs_init(&x->p, &inj.c, x->ctx, 1, inj.period);
	x->p.record = top_add;
	x->p.record_arg = &inj.top;
	if (inj.c.cuCtxPushCurrent(x->ctx) != CUDA_SUCCESS) {
		inj.errors++;
		return -EIO;
	}
	ok = call(x, PCS_ENABLE) && call(x, PCS_CONFIGURE) && call(x, PCS_START);
	if (!ok && x->p.nstall)
		call(x, PCS_DISABLE);
	inj.c.cuCtxPopCurrent(&prev);
	if (!ok) {
		account(x);
		pcs_free(&x->p);
		return -EIO;
	}
	x->sampling = 1;
	return 0;
}

void ctx_unsample(struct inject_ctx *x)
{
	CUcontext prev;
	int pushed;
	if (!x->sampling)
		return;
	pushed = inj.c.cuCtxPushCurrent(x->ctx) == CUDA_SUCCESS;
	call(x, PCS_STOP);
	call(x, PCS_GETDATA);
	call(x, PCS_DISABLE);
	if (pushed)
		inj.c.cuCtxPopCurrent(&prev);
	account(x);
	pcs_free(&x->p);
	x->sampling = 0;
}

static int number(const char *s, unsigned long max, unsigned long dflt, unsigned long *out)
{
	char *end;
	if (!s || !*s) {
		*out = dflt;
		return 0;
	}
	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || *end || *out < 1 || *out > max ? -1 : 0;
}

__attribute__((visibility("default"))) int InitializeInjection(void);

int InitializeInjection(void)
{
	static int once;
	const char *consumer = getenv("PROCCTL_CUPTI_CONSUMER");
	unsigned long kind;
	CUpti_SubscriberHandle sub;
	char err[200];
	int r;
	if (__atomic_exchange_n(&once, 1, __ATOMIC_ACQ_REL))
		return 1;
	if (number(getenv("PROCCTL_CUPTI_KIND"), UINT32_MAX, 2, &kind) < 0) {
		say("PROCCTL_CUPTI_KIND", "not a number from 1 to 4294967295");
		return 1;
	}
	inj.kind = (uint32_t)kind;
	if (resolve() < 0)
		return 1;
	if ((r = control_start(consumer && *consumer ? consumer : "pcsamp", err, sizeof err)) < 0) {
		say("procctl", err);
		return 1;
	}
	/* From here the control thread runs: contexts are followed from the
	 * first one on (cuInit creates none). */
	if (inj.c.cuptiSubscribe(&sub, on_resource, NULL) != CUPTI_SUCCESS ||
	    inj.c.cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE) != CUPTI_SUCCESS)
		say("cuptiSubscribe", "CUPTI's callbacks are taken (another tool subscribed first)");
	return 1;
}
