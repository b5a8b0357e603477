/* SPDX-License-Identifier: Apache-2.0 */
/* resid.c - resource ids as text (procctl_agent.h): a GPU's UUID as
 * cuDeviceGetUuid gives its bytes and nvidia-smi prints it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "procctl_agent.h"

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Dashes where a UUID has them (after hex digits 8, 12, 16 and 20), or none. */
int procctl_resource_id_parse(const char *s, uint8_t id[16])
{
	uint8_t v[16];
	size_t n = 0, len;
	int dashes;
	if (!s)
		return -EINVAL;
	if (!strncmp(s, "GPU-", 4))
		s += 4;
	len = strlen(s);
	if (len != 32 && len != 36)
		return -EINVAL;
	dashes = len == 36;
	for (; *s; s++) {
		int h = hexval(*s);
		if (dashes && (n == 8 || n == 12 || n == 16 || n == 20) && *s == '-' && s[1] != '-') {
			dashes++;
			continue;
		}
		if (h < 0)
			return -EINVAL;
		v[n / 2] = (uint8_t)(n % 2 ? v[n / 2] | h : h << 4);
		n++;
	}
	if (n != 32 || (len == 36 && dashes != 5))
		return -EINVAL;
	memcpy(id, v, sizeof v);
	return 0;
}

void procctl_resource_id_format(const uint8_t id[16], char out[37])
{
	size_t i, o = 0;
	for (i = 0; i < 16; i++)
		o += (size_t)snprintf(out + o, 37 - o, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", id[i]);
}
