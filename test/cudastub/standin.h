/* SPDX-License-Identifier: Apache-2.0 */
/* standin.h - the CUDA driver and CUPTI stand-ins (libcuda.so.1 and
 * libcupti.so.13 built here, found first by LD_LIBRARY_PATH), for running
 * an unmodified CUDA program (gpu-busy) and libprocctl-cupti on a machine
 * without a GPU: what the CUPTI stand-in shares with the driver's.
 *
 * The driver (driver.c): STANDIN_GPUS GPUs (1), whose UUIDs are
 * STANDIN_UUID (8e2f7a4c-51d3-4b9e-a0c6-3d1f9b2e7c45) with the last byte
 * plus the ordinal; primary contexts, whose creation and destruction, and
 * a module's unloading, call the subscribed resource callback, as CUDA
 * does; cuInit loads
 * CUDA_INJECTION64_PATH and calls its InitializeInjection; a kernel
 * sleeps a millisecond, and while PC sampling is started on its context
 * leaves 64 samples: 48 in function "busy", 16 in STANDIN_FUNC2
 * ("busy_tail").
 *
 * CUPTI (cupti.c): PC sampling with CUPTI's order of calls enforced
 * (enable, configure, start, stop, getdata, disable), and the GPU's
 * exclusivity as a kernel lock: Enable takes an flock on
 * $STANDIN_DIR/<uuid> and fails (CUPTI_ERROR_NOT_SUPPORTED) while another
 * process holds it. Every PC sampling call is a line appended to
 * STANDIN_LOG: "<pid> <call> <result name> <ctx> <ns>". STANDIN_FAIL=start
 * fails every other Start (CUPTI_ERROR_UNKNOWN); STANDIN_SUBSCRIBER=NAME
 * is another tool, subscribed first (CUPTI has one subscriber a process). */
#ifndef CUDA_STANDIN_H
#define CUDA_STANDIN_H

#include <stdint.h>

#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>

#define STANDIN_SAMPLES 64 /* per kernel while started */

/* PC sampling's state on a context. */
struct standin_pcs {
	int enabled, configured, started, start_stop, lock_fd;
	uint32_t period;
	CUpti_PCSamplingData *buffer; /* the configured one: Disable flushes into it */
	uint64_t pending_busy, pending_tail;
};

/* The driver's, for the CUPTI stand-in: the resource callback; a
 * context's device ordinal and PC sampling state (NULL: no such
 * context; under standin_lock); a GPU's UUID. */
void standin_subscribe(CUpti_CallbackFunc fn, void *arg);
struct standin_pcs *standin_ctx(CUcontext ctx, int *ordinal);
void standin_uuid(int ordinal, uint8_t out[16]);
void standin_lock(void);
void standin_unlock(void);

#endif
