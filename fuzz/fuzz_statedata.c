/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_statedata - a process's own state bytes as `procctl state` shows
 * them (clients/cli/statedata.c): a hostile process chooses every byte,
 * GPU PC sampling's status (592 bytes, magic "PCS2") included. The output
 * is printable ASCII in lines, at most 3 + PCSAMPLING_TOP of them, and a
 * function's name is one word of at most 4 bytes per byte of its field. */
#define _GNU_SOURCE 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "pcsampling_schema.h"
#include "statedata.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *out = NULL, *line, *next;
	size_t len = 0, lines = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		abort();
	show_state_data(f, data, size);
	if (fclose(f) != 0 || !len || out[len - 1] != '\n')
		abort();
	for (line = out; *line; line = next + 1) {
		if (!(next = strchr(line, '\n')))
			abort();
		*next = 0;
		fuzz_printable(line);
		if (!strncmp(line, "function:  ", 11)) {
			const char *name = strchr(line + 11, ' ');
			if (!name || strchr(name + 1, ' ') || strlen(name + 1) > 4 * PCSAMPLING_NAME)
				abort();
		}
		lines++;
	}
	if (lines > 3 + PCSAMPLING_TOP)
		abort();
	free(out);
	return 0;
}
