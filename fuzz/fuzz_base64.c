/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_base64 - base64 as a client's JSON payload or a config file's
 * data_base64 gives it. Accepted: the bytes encode back to the input's
 * one canonical spelling (the input in the standard alphabet, padded),
 * and a smaller output bound is refused with -EMSGSIZE, never overrun.
 * Refused: -EINVAL, or -EMSGSIZE only where the bound is what failed. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "fuzz.h"

#define IN_MAX 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[IN_MAX], small[IN_MAX];
	static char enc[BASE64_LEN(IN_MAX) + 1], canon[BASE64_LEN(IN_MAX) + 1];
	ssize_t n;
	size_t i, e;

	if (size > IN_MAX)
		return 0;
	n = base64_decode((const char *)data, size, out, sizeof out);
	if (n < 0) {
		if (n != -EINVAL)
			abort();
		return 0;
	}
	/* Its canonical spelling: the standard alphabet, padded. */
	for (i = 0; i < size; i++)
		canon[i] = data[i] == '-' ? '+' : data[i] == '_' ? '/' : (char)data[i];
	for (; i % 4; i++)
		canon[i] = '=';
	canon[i] = '\0';
	e = base64_encode(out, (size_t)n, enc);
	if (e != i || memcmp(enc, canon, e))
		abort();
	/* One byte less room: refused, and nothing past it written. */
	if (n > 0) {
		memset(small, 0xa5, sizeof small);
		if (base64_decode((const char *)data, size, small, (size_t)n - 1) != -EMSGSIZE || small[n - 1] != 0xa5)
			abort();
	}
	return 0;
}
