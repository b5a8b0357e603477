/* SPDX-License-Identifier: Apache-2.0 */
/* The process-side implementation of procctl.h, compiled once into
 * libprocctl-agent: the agent uses its CRC32C and name checks, and programs
 * that link the library get the procctl_* calls from here. */
#define PROCCTL_IMPLEMENTATION
#include "procctl.h"
