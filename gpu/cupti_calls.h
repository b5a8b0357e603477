/* SPDX-License-Identifier: Apache-2.0 */
/* cupti_calls.h - every CUDA driver and CUPTI call the PC sampling code
 * (pcs.h) and the injection library (gpu/cupti) make, as one table of
 * function pointers: programs linked with CUPTI use cupti_linked; the
 * injection library fills one with dlsym, so a stand-in (test/cudastub)
 * can take the place of the driver and of CUPTI. */
#ifndef PROCCTL_CUPTI_CALLS_H
#define PROCCTL_CUPTI_CALLS_H

#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>

/* X(name): each entry, by the name cuda.h and cupti.h give the call (the
 * driver's versioned symbol, e.g. cuCtxPushCurrent_v2, where they map it). */
#define CUPTI_CALLS_DRIVER(X)                                                                                  \
	X(cuDeviceGet) X(cuDeviceGetUuid) X(cuCtxPushCurrent) X(cuCtxPopCurrent)
#define CUPTI_CALLS_CUPTI(X)                                                                                   \
	X(cuptiSubscribe_v2) X(cuptiUnsubscribe) X(cuptiEnableDomain) X(cuptiGetDeviceId) X(cuptiGetResultString)   \
	X(cuptiPCSamplingEnable) X(cuptiPCSamplingDisable) X(cuptiPCSamplingSetConfigurationAttribute)          \
	X(cuptiPCSamplingGetNumStallReasons) X(cuptiPCSamplingStart) X(cuptiPCSamplingStop)                     \
	X(cuptiPCSamplingGetData)

#define CUPTI_CALLS_FIELD(f) __typeof__(&f) f;
struct cupti_calls {
	CUPTI_CALLS_DRIVER(CUPTI_CALLS_FIELD)
	CUPTI_CALLS_CUPTI(CUPTI_CALLS_FIELD)
};
#undef CUPTI_CALLS_FIELD

/* The calls as linked (libcuda, libcupti): cupti_linked.c. */
extern const struct cupti_calls cupti_linked;

#endif
