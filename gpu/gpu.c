/* SPDX-License-Identifier: Apache-2.0 */
/* gpu.c - a busy GPU context (gpu.h). */
#include "gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 256          /* per block; a block per SM */
#define ITERS 200000         /* per thread: about a millisecond of work */

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
