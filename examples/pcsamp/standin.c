/* SPDX-License-Identifier: Apache-2.0 */
/* standin.c - pcsamp's use of PC sampling without a GPU: acquiring and
 * releasing sleep --acquire-ms and --release-ms (what enable + configure +
 * start and stop + drain + disable take on the GPU machine), no samples;
 * the resource is --uuid. For the daemon's side of GPU PC sampling on
 * machines without a GPU (pcsamp-standin). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pcsamp.h"

struct backend {
	unsigned acquire_ms, release_ms;
};

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

struct backend *backend_open(struct pcsamp_opts *o, char *err, size_t errlen)
{
	struct backend *b;
	if (!o->uuid_given) {
		snprintf(err, errlen, "the stand-in needs --uuid UUID (the GPU it stands in for)");
		return NULL;
	}
	if (!(b = calloc(1, sizeof *b))) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	b->acquire_ms = o->acquire_ms;
	b->release_ms = o->release_ms;
	return b;
}

/* The CUPTI calls' time, and no failure. */
static void pause_for(unsigned ms, char *why, size_t len)
{
	sleep_ms(ms);
	if (len)
		why[0] = 0;
}

int backend_acquire(struct backend *b, char *why, size_t len)
{
	pause_for(b->acquire_ms, why, len);
	return 0;
}

uint64_t backend_release(struct backend *b, char *why, size_t len)
{
	pause_for(b->release_ms, why, len);
	return 0;
}

void backend_work(struct backend *b)
{
	(void)b;
	sleep_ms(1);
}

void backend_close(struct backend *b)
{
	free(b);
}
