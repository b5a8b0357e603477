/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz.h - what the fuzz targets share: libFuzzer's entry point, and the
 * check that text meant for a log or a terminal is printable. */
#ifndef PROCCTL_FUZZ_H
#define PROCCTL_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Abort (a finding) unless s is printable ASCII. */
static inline void fuzz_printable(const char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			abort();
}

#endif
