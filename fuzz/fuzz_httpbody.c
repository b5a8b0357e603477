/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_httpbody - what procctl-node's HTTP side reads from a request: a
 * pid in a path, a path or argument decoded, an Authorization header, and
 * POST config bodies (JSON with base64, or raw), with
 * their wait_ms argument. The first byte picks the content type and
 * whether a wait_ms argument comes along (the bytes up to the first NUL).
 * Whatever is accepted must be within its bounds; a refusal leaves
 * nothing allocated and says why. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/httpbody.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *types[] = {"application/json", "application/json; charset=utf-8", "application/octet-stream",
				      NULL};
	char wait[32], why[200];
	const char *body, *wait_arg = NULL;
	uint8_t *payload = (uint8_t *)1, mode;
	size_t n, len = 7;
	uint32_t wait_ms = 7;
	int32_t pid = 0;
	int r;

	if (!size)
		return 0;
	if (http_parse_pid((const char *)data, size < 16 ? size : 16, &pid) == 0 && (pid < 1 || data[0] == '0'))
		abort();
	{ /* an Authorization header: accepted only when it is exactly "Bearer KEY" */
		static const char key[] = "0123456789abcdef0123";
		char *hd = malloc(size + 1);
		if (!hd)
			return 0;
		memcpy(hd, data, size);
		hd[size] = 0;
		if (http_bearer_ok(hd, key, sizeof key - 1) != (strncmp(hd, "Bearer ", 7) == 0 && !strcmp(hd + 7, key)))
			abort();
		free(hd);
	}
	{ /* a path or argument decoded: never longer, never with a NUL inside */
		char *u = malloc(size + 1);
		size_t k;
		if (!u)
			return 0;
		memcpy(u, data, size);
		u[size] = 0;
		k = strlen(u);
		if (http_unescape(u) != strlen(u) || strlen(u) > k)
			abort();
		free(u);
	}
	mode = data[0];
	body = (const char *)data + 1;
	n = size - 1;
	if (mode & 4) { /* a wait_ms argument: the bytes before the first NUL */
		const char *nul = memchr(body, 0, n);
		size_t k = nul ? (size_t)(nul - body) : n;
		if (k >= sizeof wait)
			k = sizeof wait - 1;
		memcpy(wait, body, k);
		wait[k] = 0;
		wait_arg = wait;
		if (nul) {
			n -= (size_t)(nul - body) + 1;
			body = nul + 1;
		}
	}
	why[0] = 0;
	r = http_parse_config(types[mode & 3], body, n, wait_arg, &payload, &len, &wait_ms, why, sizeof why);
	if (r == 0) {
		if (!payload || wait_ms > HTTP_MAX_WAIT_MS || (types[mode & 3] && !strncmp(types[mode & 3], "application/json", 16)
								       ? len > n
								       : len != n || memcmp(payload, body, n)))
			abort();
		free(payload);
	} else if ((r != -EINVAL && r != -ENOMEM) || payload || !why[0]) {
		abort();
	}
	return 0;
}
