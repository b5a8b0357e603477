/* SPDX-License-Identifier: Apache-2.0 */
/* Compiled by header_matrix.sh as C11/C17/C2x and C++17/C++20 with gcc
 * and clang: the implementation file includes procctl.h before any system
 * header and without _GNU_SOURCE, as a user's file would. */
#define PROCCTL_IMPLEMENTATION
#include "procctl.h"

#include <errno.h>

int header_decl_only(void);

int main(void)
{
	static unsigned char storage[PROCCTL_STATE_STORAGE(1, 16)];
#ifdef __cplusplus
	procctl_config_t cfg = procctl_config_t(); /* C++: value-initialized, not memset (its defaults) */
#else
	procctl_config_t cfg;
#endif
	procctl_t ctx;
	char buf[64];
	int r;

	if (procctl_crc32c(0, "123456789", 9) != 0xe3069283u)
		return 2;
#ifndef __cplusplus
	memset(&cfg, 0, sizeof cfg);
#endif
	cfg.consumer = "matrix";
	cfg.schema_version = 1;
	cfg.payload_capacity = 64;
	cfg.state_capacity = 16;
	cfg.resource_capacity = 1;
	cfg.state_storage = storage;
	if (procctl_init(&ctx, &cfg) != 0)
		return 3;
	r = procctl_poll(&ctx, buf, sizeof buf, NULL);
	procctl_close(&ctx);
	return r == 0 && header_decl_only() == 0 ? 0 : 4;
}
