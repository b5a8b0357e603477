/* SPDX-License-Identifier: Apache-2.0 */
/* pcsamp.h - what pcsamp's holder (main.c) asks of using GPU PC sampling:
 * cupti.c does it on a GPU with CUPTI; standin.c sleeps the time the CUPTI
 * calls take, for the daemon's side of it on machines without a GPU. */
#ifndef PCSAMP_H
#define PCSAMP_H

#include <stddef.h>
#include <stdint.h>

struct pcsamp_opts {
	int device;          /* cupti: the GPU's ordinal */
	uint8_t uuid[16];    /* standin: the resource's id (cupti: the GPU's, found) */
	int uuid_given;
	unsigned acquire_ms; /* standin: enable + configure + start */
	unsigned release_ms; /* standin: stop + drain + disable */
};

struct backend;

/* Open what is sampled; its id (the GPU's UUID) in o->uuid: the backend,
 * or NULL with why in err. */
struct backend *backend_open(struct pcsamp_opts *o, char *err, size_t errlen);
/* Enable, configure, start: 0, or -EIO with the failed call and its
 * result in why (sampling is disabled again). */
int backend_acquire(struct backend *b, char *why, size_t len);
/* Stop, drain, disable: the samples of the hold (a range: drained at its
 * Stop, the documented way); why: the first call that failed, or "". */
uint64_t backend_release(struct backend *b, char *why, size_t len);
/* The application's work, one step (a kernel, waited for). */
void backend_work(struct backend *b);
void backend_close(struct backend *b);

#endif
