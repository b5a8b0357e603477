/* SPDX-License-Identifier: Apache-2.0 */
/* flood.h - self-checking payloads: payload i is the 8-byte i, then bytes
 * (i + k) & 0xff, of a length that varies with i. A torn or mixed copy of
 * two payloads fails flood_ok whatever the CRC says. */
#ifndef PROCCTL_FLOOD_H
#define PROCCTL_FLOOD_H

#include <stdint.h>
#include <string.h>

static inline uint32_t flood_len(uint64_t i, uint32_t cap)
{
	return 8u + (uint32_t)(i * 977u % (cap - 8u));
}

static inline uint32_t flood_fill(uint64_t i, unsigned char *buf, uint32_t cap)
{
	uint32_t k, len = flood_len(i, cap);
	memcpy(buf, &i, 8);
	for (k = 8; k < len; k++)
		buf[k] = (unsigned char)(i + k);
	return len;
}

static inline int flood_ok(const unsigned char *b, int n, uint32_t cap)
{
	uint64_t i;
	int k;
	if (n < 8)
		return 0;
	memcpy(&i, b, 8);
	if ((uint32_t)n != flood_len(i, cap))
		return 0;
	for (k = 8; k < n; k++)
		if (b[k] != (unsigned char)(i + (uint64_t)k))
			return 0;
	return 1;
}

/* The same as text, for helpers that print configs: "cfg I " then
 * (I % 997) letters 'a' + I % 26; flood_text_ok checks one. */
#include <stdio.h>

#define FLOOD_TEXT_MAX 1100

static inline int flood_text(uint64_t i, char *buf)
{
	int n = snprintf(buf, 32, "cfg %llu ", (unsigned long long)i), k, len = (int)(i % 997u);
	for (k = 0; k < len; k++)
		buf[n + k] = (char)('a' + i % 26u);
	buf[n + len] = 0;
	return n + len;
}

static inline int flood_text_ok(const char *s)
{
	char want[FLOOD_TEXT_MAX];
	unsigned long long i;
	if (sscanf(s, "cfg %llu ", &i) != 1)
		return 0;
	flood_text(i, want);
	return !strcmp(s, want);
}

#endif
