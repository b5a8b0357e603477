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

#endif
