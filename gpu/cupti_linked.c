/* SPDX-License-Identifier: Apache-2.0 */
/* cupti_linked.c - the table of cupti_calls.h as the program was linked. */
#include "cupti_calls.h"

#define LINKED(f) .f = f,
const struct cupti_calls cupti_linked = {CUPTI_CALLS_DRIVER(LINKED) CUPTI_CALLS_CUPTI(LINKED)};
