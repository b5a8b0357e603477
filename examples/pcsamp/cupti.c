/* SPDX-License-Identifier: Apache-2.0 */
/* cupti.c - pcsamp's use of PC sampling on a GPU: a context running short
 * busy kernels (the application's work, on the main thread), and CUPTI PC
 * sampling on it with start/stop control, driven from the holder's control
 * thread: acquire = enable + configure + start, release = stop + drain +
 * disable (a hold is one range, drained at its Stop). The resource's id is the GPU's
 * UUID (cuDeviceGetUuid): the same GPU under any index. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "pcs.h"
#include "pcsamp.h"

struct backend {
	struct gpu g;
	struct pcs p;
};

struct backend *backend_open(struct pcsamp_opts *o, char *err, size_t errlen)
{
	struct backend *b = calloc(1, sizeof *b);
	if (!b) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (gpu_open(&b->g, o->device, err, errlen) < 0) {
		free(b);
		return NULL;
	}
	memcpy(o->uuid, b->g.uuid, sizeof o->uuid);
	pcs_init(&b->p, &cupti_linked, b->g.ctx, 1, 0);
	return b;
}

/* Call c; on a failure, say which in why (once: the first) and 0. */
static int step(struct backend *b, enum pcs_call c, uint64_t *got, char *why, size_t len)
{
	CUptiResult r = pcs_call(&b->p, c, got);
	printf("event=cupti call=%s result=%s ms=%.3f\n", pcs_call_name(c), pcs_result_name(&b->p, r), b->p.ms[c]);
	if (r != CUPTI_SUCCESS && len && !why[0])
		snprintf(why, len, "%s: %s", pcs_call_name(c), pcs_result_name(&b->p, r));
	return r == CUPTI_SUCCESS;
}

int backend_acquire(struct backend *b, char *why, size_t len)
{
	uint64_t n;
	if (len)
		why[0] = 0;
	if (gpu_current(&b->g) != CUDA_SUCCESS) {
		snprintf(why, len, "cuCtxSetCurrent failed");
		return -EIO;
	}
	if (step(b, PCS_ENABLE, NULL, why, len) && step(b, PCS_CONFIGURE, NULL, why, len) &&
	    step(b, PCS_START, NULL, why, len))
		return 0;
	step(b, PCS_DISABLE, &n, NULL, 0); /* not held: give back what was taken */
	return -EIO;
}

uint64_t backend_release(struct backend *b, char *why, size_t len)
{
	uint64_t n = 0, got = 0;
	if (len)
		why[0] = 0;
	step(b, PCS_STOP, NULL, why, len);
	step(b, PCS_GETDATA, &got, why, len);
	n += got;
	step(b, PCS_DISABLE, &got, why, len);
	return n + got;
}

void backend_work(struct backend *b)
{
	gpu_run(&b->g);
}

void backend_close(struct backend *b)
{
	gpu_close(&b->g); /* first: a context destroyed while enabled flushes into p's buffer */
	pcs_free(&b->p);
	free(b);
}
