/* SPDX-License-Identifier: Apache-2.0 */
/* pcsampling_schema.h - the GPU PC sampling consumer's schema, version 2
 * (regions named procctl:pcsamp-v2): what libprocctl-cupti, the injection
 * library for unmodified CUDA programs, takes as config and reports as
 * status. Version 1 of the consumer is pcsamp's (token_schema.h): both
 * versions ask for the same resource (kind 2, the GPU's UUID), so one
 * [arbiter] for consumer pcsamp rotates both. The rules are
 * docs/consumer-schemas.md's: fixed-width fields, explicit padding, sizes
 * pinned, a reader takes exactly sizeof bytes. */
#ifndef PCSAMPLING_SCHEMA_H
#define PCSAMPLING_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#define PCSAMPLING_SCHEMA_VERSION 2
#define PCSAMPLING_MAGIC 0x32534350u /* "PCS2", the status's first bytes */
#define PCSAMPLING_TOP 8             /* functions in the status */
#define PCSAMPLING_NAME 56           /* bytes of a function's name, NUL-padded (longer ones cut) */
#define PCSAMPLING_PERIOD_MIN 5      /* CUPTI's range for the period's log2 */
#define PCSAMPLING_PERIOD_MAX 31

/* The config (agent -> process), optional: none is CUPTI's default
 * period. Another size, reserved bytes not 0 or a period out of range
 * are nacked -EINVAL. Used from the next hold on. */
struct pcsampling_config {
	uint32_t period;   /* 0 2^period GPU cycles between samples; 0: CUPTI's default */
	uint32_t reserved; /* 4 0 */
};

/* A function and its samples. */
struct pcsampling_function {
	uint64_t samples; /*  0 */
	char name[PCSAMPLING_NAME]; /*  8 CUPTI's functionName (mangled), NUL-padded */
};

/* The status bytes (process -> agent), rewritten after every hold. The
 * samples of every hold so far, by function: the PCSAMPLING_TOP with the
 * most, most first; the library counts 256 functions apart, and the
 * samples of any beyond those in other_samples. */
struct pcsampling_status {
	uint32_t magic;         /*   0 PCSAMPLING_MAGIC */
	uint32_t gpus;          /*   4 GPUs of its contexts so far (16 at most are asked for) */
	uint64_t turns;         /*   8 holds in which it sampled */
	uint64_t held_ns;       /*  16 time it sampled, all holds */
	uint64_t samples;       /*  24 samples attributed to PCs, all holds */
	uint64_t dropped;       /*  32 CUPTI's droppedSamples, all holds */
	uint64_t other_samples; /*  40 samples of functions past the 256 counted apart */
	uint64_t cupti_errors;  /*  48 CUPTI calls that failed */
	int32_t last_error;     /*  56 the last failure's CUptiResult; 0: none */
	uint32_t last_call;     /*  60 its call: 1 enable, 2 configure, 3 start, 4 stop, 5 getdata, 6 disable */
	uint64_t last_grant_id; /*  64 the grant of its last hold; 0: none yet */
	uint32_t period;        /*  72 the period of the config (0: CUPTI's default) */
	uint32_t nfunctions;    /*  76 entries of top in use */
	struct pcsampling_function top[PCSAMPLING_TOP]; /* 80 */
};

#ifdef __cplusplus
#define PCSAMPLING_ASSERT static_assert
#else
#define PCSAMPLING_ASSERT _Static_assert
#endif
PCSAMPLING_ASSERT(sizeof(struct pcsampling_config) == 8, "pcsampling_config is 8 bytes");
PCSAMPLING_ASSERT(sizeof(struct pcsampling_function) == 64, "pcsampling_function is 64 bytes");
PCSAMPLING_ASSERT(sizeof(struct pcsampling_status) == 592, "pcsampling_status is 592 bytes");
PCSAMPLING_ASSERT(offsetof(struct pcsampling_status, last_error) == 56, "pcsampling_status.last_error at 56");
PCSAMPLING_ASSERT(offsetof(struct pcsampling_status, top) == 80, "pcsampling_status.top at 80");
#undef PCSAMPLING_ASSERT

#endif
