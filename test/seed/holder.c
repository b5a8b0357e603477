/* SPDX-License-Identifier: Apache-2.0 */
/* The seed README's holder loop (holder_loop.inc), verbatim, as the body
 * of a token holder: kind 1 and the all-zero id (a literal 0), the token
 * agent's defaults. The names the loop leaves to the application are
 * defined here: acquire() and release() (start and stop using the
 * resource: they print event=acquired and event=released), holding, the
 * states, and report(), which the seed defines as
 * procctl_resource_report(..., PROCCTL_RES_F_WANT, ...) with the grant
 * snapshot of this round; "current state" is the state the holder is in.
 * It exits 0 once it has reported a release after holding.
 * Usage: holder CONSUMER */
#define PROCCTL_IMPLEMENTATION
#include "procctl.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static _Alignas(8) unsigned char storage[PROCCTL_STATE_STORAGE(1, 64)];
static procctl_t ctx;
static bool holding, released_once;

static void acquire(void)
{
	holding = true;
	puts("event=acquired");
}

static void release(void)
{
	holding = false;
	released_once = true;
	puts("event=released");
}

static void report_(uint32_t state, const procctl_grant_t *g)
{
	int r = procctl_resource_report(&ctx, 1, 0, state, PROCCTL_RES_F_WANT, g, 0);
	if (r < 0)
		printf("event=report_failed state=%u error=%d\n", state, r);
	if (state == PROCCTL_RES_RELEASED && released_once) {
		puts("event=done");
		exit(0);
	}
}

#define KIND 1
#define id 0
#define ACQUIRING PROCCTL_RES_ACQUIRING
#define HOLDING PROCCTL_RES_HOLDING
#define RELEASED PROCCTL_RES_RELEASED
#define current
#define state (holding ? PROCCTL_RES_HOLDING : g.grant_id ? PROCCTL_RES_RELEASED : PROCCTL_RES_IDLE)
#define report(st, ...) report_((st), &g)

int main(int argc, char **argv)
{
	procctl_config_t cfg = {argc == 2 ? argv[1] : "token", 1, 64, 64, storage, 1, 0, 0, 0};
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (procctl_init(&ctx, &cfg) < 0) {
		perror("procctl_init");
		return 1;
	}
	printf("event=started pid=%d\n", (int)getpid());
#include "holder_loop.inc"
}
