/* SPDX-License-Identifier: Apache-2.0 */
/* gpu.h - what the GPU programs (spike/pcsampling, examples/pcsamp,
 * gpu-busy) share: a context on one GPU running a steady stream of short
 * busy kernels. C on the driver API alone; the kernel is gpu/kernel.cu,
 * embedded. Not thread-safe: one thread uses a struct gpu (or its context
 * is made current where another does, gpu_current). PC sampling on such
 * a context is pcs.h. */
#ifndef PROCCTL_GPU_H
#define PROCCTL_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

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

#endif
