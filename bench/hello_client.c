/* SPDX-License-Identifier: Apache-2.0 */
/* hello_client - bench_hello's new process: procctl_init, then the
 * CLOCK_MONOTONIC times (ns) at which it was called and returned on
 * stdout, then wait to be killed. Usage: hello_client CONSUMER */
#define PROCCTL_IMPLEMENTATION
#include "procctl.h"

#include <stdio.h>
#include <time.h>

int main(int argc, char **argv)
{
	static unsigned char storage[PROCCTL_STATE_STORAGE(0, 16)];
	procctl_config_t cfg;
	procctl_t ctx;
	struct timespec t0, t1;
	if (argc != 2)
		return 2;
	memset(&cfg, 0, sizeof cfg);
	cfg.consumer = argv[1];
	cfg.schema_version = 1;
	cfg.payload_capacity = 64;
	cfg.state_capacity = 16;
	cfg.state_storage = storage;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (procctl_init(&ctx, &cfg) < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%lld %lld\n", (long long)t0.tv_sec * 1000000000 + t0.tv_nsec,
	       (long long)t1.tv_sec * 1000000000 + t1.tv_nsec);
	fflush(stdout);
	for (;;)
		pause();
}
