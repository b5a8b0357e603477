/* SPDX-License-Identifier: Apache-2.0 */
/* The mission's usage snippet, as a user writes it: one file, the header
 * vendored, no agent around (so: nothing to poll, lease expired). */
#define PROCCTL_IMPLEMENTATION
#include "procctl.h"

#include <stdio.h>
#include <string.h>

static char state_storage[PROCCTL_STATE_STORAGE(0, 256)];

int main(void)
{
	procctl_t ctx;
	procctl_config_t cfg = {
		.consumer = "echo",
		.schema_version = 1,
		.payload_capacity = 4096,
		.state_capacity = 256,
		.state_storage = state_storage,
	};
	char buf[4096];
	uint64_t gen;
	int n, err = procctl_init(&ctx, &cfg);

	if (err < 0) {
		fprintf(stderr, "procctl_init: %s\n", strerror(-err));
		return 1;
	}
	n = procctl_poll(&ctx, buf, sizeof buf, &gen);
	if (n > 0) {
		/* apply buf[0..n) */
		procctl_ack(&ctx, gen, PROCCTL_TRY);
	}
	if (procctl_lease_expired(&ctx, 0)) {
		/* no agent holds a lease: use the defaults */
	}
	if (procctl_state_set(&ctx, "ok", 2, PROCCTL_TRY) < 0)
		return 1;
	printf("seed snippet: poll=%d lease_expired=%d\n", n, procctl_lease_expired(&ctx, 0));
	procctl_close(&ctx);
	return n == 0 ? 0 : 1;
}
