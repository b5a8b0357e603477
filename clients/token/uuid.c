/* SPDX-License-Identifier: Apache-2.0 */
/* uuid.c - resource ids as UUIDs (uuid.h). */
#include "uuid.h"

#include <stdio.h>

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int uuid_parse(const char *s, uint8_t out[16])
{
	size_t n = 0;
	for (; *s; s++) {
		int v = hexval(*s);
		if (*s == '-')
			continue;
		if (v < 0 || n == 32)
			return -1;
		out[n / 2] = (uint8_t)(n % 2 ? out[n / 2] | v : v << 4);
		n++;
	}
	return n == 32 ? 0 : -1;
}

void uuid_format(const uint8_t id[16], char out[37])
{
	size_t i, o = 0;
	for (i = 0; i < 16; i++)
		o += (size_t)snprintf(out + o, 37 - o, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", id[i]);
}
