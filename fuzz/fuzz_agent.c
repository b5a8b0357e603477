/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_agent - the agent reading bytes a hostile process wrote: a region
 * header (procctl_hdr_check) and a state block copy (procctl_state_parse).
 * Whatever passes must be safe to use: checked here. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "procctl.h"
#include "region.h"
#include "state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Room for the largest state block an accepted header may give. */
	static uint64_t buf[PROCCTL_STATE_SIZE_LIMIT / 8u];
	struct procctl_hdr h;
	struct procctl_state_view v;
	enum procctl_reject why;
	uint64_t file_size;
	const uint8_t *rest;
	size_t rest_len, total = size;

	if (size < 1 + 8 + sizeof h)
		return 0;
	memcpy(&file_size, data + 1, 8);
	if (data[0] & 1) /* mostly, the size the header claims */
		memcpy(&file_size, data + 9 + offsetof(struct procctl_hdr, region_size), 8);
	if (data[0] & 2) { /* let the fuzzer past the CRC */
		memcpy(&h, data + 9, sizeof h);
		h.header_crc = 0;
		h.header_crc = procctl_crc32c(0, &h, sizeof h);
		memcpy(buf, &h, sizeof h);
		memcpy((unsigned char *)buf + sizeof h, data + 9 + sizeof h,
		       size - 9 - sizeof h < PROCCTL_HDR_AREA - sizeof h ? size - 9 - sizeof h
									  : PROCCTL_HDR_AREA - sizeof h);
		size = sizeof h;
	} else {
		size -= 9;
		if (size > sizeof buf)
			size = sizeof buf;
		memcpy(buf, data + 9, size);
	}
	if (procctl_hdr_check(buf, size, file_size) != PROCCTL_REJECT_NONE)
		return 0;
	memcpy(&h, buf, sizeof h);
	/* An accepted header keeps everything inside the file and limits. */
	if (h.region_size > PROCCTL_REGION_MAX || h.slot_off[1] + (uint64_t)h.slot_size > h.region_size ||
	    h.slot_off[0] + (uint64_t)h.slot_size > h.region_size ||
	    h.payload_off + (uint64_t)h.payload_cap > h.slot_size || h.state_size > sizeof buf)
		abort();
	/* The bytes after the header are that process's state block. */
	rest = data + 9 + h.header_size;
	rest_len = total - 9 > h.header_size ? total - 9 - h.header_size : 0;
	memset(buf, 0, h.state_size);
	memcpy(buf, rest, rest_len < h.state_size ? rest_len : h.state_size);
	if (procctl_state_parse(buf, h.state_size, h.instance_id, &h, &v, &why) == 0 &&
	    ((const unsigned char *)v.data + v.data_len > (const unsigned char *)buf + h.state_size ||
	     v.nres != h.resource_cap))
		abort();
	return 0;
}
