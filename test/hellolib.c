/* SPDX-License-Identifier: Apache-2.0 */
/* hellolib.c - procctl.h inside a shared library (libhellolib.so), so the
 * procctl:hello note is in the library and not in the program that loads
 * it: fast discovery must find it through the library's mapping. */
#define PROCCTL_IMPLEMENTATION
#include "procctl.h"

int hellolib_start(const char *consumer);

static procctl_t ctx;
static unsigned char storage[PROCCTL_STATE_STORAGE(0, 16)];

/* procctl_init for consumer: 0 or -errno. */
int hellolib_start(const char *consumer)
{
	procctl_config_t cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.consumer = consumer;
	cfg.schema_version = 1;
	cfg.payload_capacity = 64;
	cfg.state_capacity = 16;
	cfg.state_storage = storage;
	return procctl_init(&ctx, &cfg);
}
