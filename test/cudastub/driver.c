/* SPDX-License-Identifier: Apache-2.0 */
/* driver.c - the CUDA driver's stand-in, libcuda.so.1 (standin.h): the
 * calls gpu-busy and libprocctl-cupti make, no more. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "standin.h"

#define GPUS_MAX 8

struct CUctx_st {
	int ordinal, refs;
	struct standin_pcs pcs;
};
struct CUmod_st {
	int unused;
};
struct CUfunc_st {
	int unused;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct CUctx_st ctxs[GPUS_MAX];
static struct CUmod_st module;
static struct CUfunc_st busy;
static CUpti_CallbackFunc sub_fn;
static void *sub_arg;
static int ngpus, inited;
static __thread CUcontext current, stack[8];
static __thread int depth;

void standin_lock(void)
{
	pthread_mutex_lock(&mu);
}

void standin_unlock(void)
{
	pthread_mutex_unlock(&mu);
}

void standin_subscribe(CUpti_CallbackFunc fn, void *arg)
{
	standin_lock();
	sub_fn = fn;
	sub_arg = arg;
	standin_unlock();
}

/* Under the lock. */
struct standin_pcs *standin_ctx(CUcontext ctx, int *ordinal)
{
	if (!ctx || ctx < ctxs || ctx >= ctxs + GPUS_MAX || !ctx->refs)
		return NULL;
	if (ordinal)
		*ordinal = ctx->ordinal;
	return &ctx->pcs;
}

void standin_uuid(int ordinal, uint8_t out[16])
{
	static const uint8_t dflt[16] = {0x8e, 0x2f, 0x7a, 0x4c, 0x51, 0xd3, 0x4b, 0x9e,
					 0xa0, 0xc6, 0x3d, 0x1f, 0x9b, 0x2e, 0x7c, 0x45};
	const char *s = getenv("STANDIN_UUID");
	unsigned b[16];
	int i;
	memcpy(out, dflt, 16);
	if (s && sscanf(s, "%2x%2x%2x%2x-%2x%2x-%2x%2x-%2x%2x-%2x%2x%2x%2x%2x%2x", &b[0], &b[1], &b[2], &b[3], &b[4],
			&b[5], &b[6], &b[7], &b[8], &b[9], &b[10], &b[11], &b[12], &b[13], &b[14], &b[15]) == 16)
		for (i = 0; i < 16; i++)
			out[i] = (uint8_t)b[i];
	out[15] = (uint8_t)(out[15] + ordinal);
}

/* The resource callback, as CUDA calls it: on the caller's thread. */
static void resource_event(CUpti_CallbackId cbid, CUcontext ctx)
{
	CUpti_ResourceData rd;
	CUpti_CallbackFunc fn;
	void *arg;
	memset(&rd, 0, sizeof rd);
	rd.context = ctx;
	standin_lock();
	fn = sub_fn;
	arg = sub_arg;
	standin_unlock();
	if (fn)
		fn(arg, CUPTI_CB_DOMAIN_RESOURCE, cbid, &rd);
}

CUresult cuInit(unsigned flags)
{
	const char *path = getenv("CUDA_INJECTION64_PATH"), *n = getenv("STANDIN_GPUS");
	(void)flags;
	standin_lock();
	if (inited) {
		standin_unlock();
		return CUDA_SUCCESS;
	}
	inited = 1;
	ngpus = n ? atoi(n) : 1;
	if (ngpus < 1 || ngpus > GPUS_MAX)
		ngpus = 1;
	standin_unlock();
	if (path && *path) {
		void *h = dlopen(path, RTLD_NOW);
		int (*init)(void) = NULL;
		void *s = h ? dlsym(h, "InitializeInjection") : NULL;
		memcpy(&init, &s, sizeof s);
		if (!init)
			fprintf(stderr, "cuda stand-in: %s: no InitializeInjection (%s)\n", path, dlerror());
		else
			init();
	}
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (ordinal < 0 || ordinal >= ngpus)
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = ordinal;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	snprintf(name, (size_t)len, "stand-in GPU %d", dev);
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	if (dev < 0 || dev >= ngpus)
		return CUDA_ERROR_INVALID_DEVICE;
	standin_uuid(dev, (uint8_t *)uuid->bytes);
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice dev)
{
	(void)a;
	(void)dev;
	*v = 4;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
	int first;
	if (dev < 0 || dev >= ngpus)
		return CUDA_ERROR_INVALID_DEVICE;
	standin_lock();
	first = ctxs[dev].refs++ == 0;
	if (first) {
		memset(&ctxs[dev].pcs, 0, sizeof ctxs[dev].pcs);
		ctxs[dev].pcs.lock_fd = -1;
		ctxs[dev].ordinal = dev;
	}
	standin_unlock();
	*ctx = &ctxs[dev];
	if (first)
		resource_event(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, *ctx);
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	int refs;
	if (dev < 0 || dev >= ngpus)
		return CUDA_ERROR_INVALID_DEVICE;
	standin_lock();
	refs = ctxs[dev].refs;
	standin_unlock();
	if (!refs)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (refs == 1) /* as CUDA does: the callback while the context exists */
		resource_event(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, &ctxs[dev]);
	standin_lock();
	ctxs[dev].refs--;
	standin_unlock();
	return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	current = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	int ok;
	standin_lock();
	ok = standin_ctx(ctx, NULL) != NULL;
	standin_unlock();
	if (depth == 8 || !ok)
		return CUDA_ERROR_INVALID_CONTEXT;
	stack[depth++] = current;
	current = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *ctx)
{
	if (!depth)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (ctx)
		*ctx = current;
	current = stack[--depth];
	return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *mod, const void *image)
{
	(void)image;
	*mod = &module;
	return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule mod, const char *name)
{
	(void)mod;
	if (strcmp(name, "busy"))
		return CUDA_ERROR_NOT_FOUND;
	*f = &busy;
	return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule mod)
{
	(void)mod;
	if (!current)
		return CUDA_ERROR_INVALID_CONTEXT;
	resource_event(CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, current);
	return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	void *m = malloc(n);
	*p = (CUdeviceptr)(uintptr_t)m;
	return m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
	free((void *)(uintptr_t)p);
	return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
			unsigned shared, CUstream s, void **params, void **extra)
{
	struct timespec ms = {0, 1000000};
	struct standin_pcs *p;
	(void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)s, (void)params, (void)extra;
	if (f != &busy)
		return CUDA_ERROR_INVALID_HANDLE;
	nanosleep(&ms, NULL);
	standin_lock();
	if (!(p = standin_ctx(current, NULL))) {
		standin_unlock();
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	if (p->started || (p->configured && !p->start_stop)) {
		p->pending_busy += STANDIN_SAMPLES * 3 / 4;
		p->pending_tail += STANDIN_SAMPLES / 4;
	}
	standin_unlock();
	return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
	return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuGetErrorName(CUresult r, const char **name)
{
	*name = r == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_STANDIN";
	return CUDA_SUCCESS;
}
