/* SPDX-License-Identifier: Apache-2.0 */
/* A second file of the same program that only declares: the split between
 * declarations and PROCCTL_IMPLEMENTATION links. */
#include <stdio.h>

#include "procctl.h"

int header_decl_only(void);

int header_decl_only(void)
{
	procctl_resource_t r;
	return procctl_name_valid("decl", PROCCTL_CONSUMER_MAX) + (int)sizeof r - (int)sizeof r;
}
