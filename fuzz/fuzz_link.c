/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_link - the scanner's parser of /proc fd link names, which the
 * process chooses ("procctl:<consumer>-v<N>" or anything else). Whatever
 * it accepts must be a valid consumer and version. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "procctl.h"
#include "procctl_agent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char consumer[32];
	uint32_t version = 0;
	if (procctl_scan_parse_link((const char *)data, size, consumer, &version) == 0 &&
	    (procctl_name_valid(consumer, PROCCTL_CONSUMER_MAX) < 0 || version == 0 ||
	     memchr(consumer, 0, sizeof consumer) == NULL))
		abort();
	return 0;
}
