/* SPDX-License-Identifier: Apache-2.0 */
/* base64.c - base64, strict (base64.h). */
#include "base64.h"

#include <errno.h>

static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_encode(const uint8_t *p, size_t n, char *out)
{
	size_t i, o = 0;
	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		out[o++] = tab[v >> 18];
		out[o++] = tab[v >> 12 & 63];
		out[o++] = tab[v >> 6 & 63];
		out[o++] = tab[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		out[o++] = tab[v >> 18];
		out[o++] = tab[v >> 12 & 63];
		out[o++] = i + 1 < n ? tab[v >> 6 & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

/* ch's value, and the alphabet it belongs to in *alpha (1 standard, 2
 * URL-safe, 0 both); -1 for no base64 character. */
static int value(int ch, int *alpha)
{
	*alpha = 0;
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	*alpha = ch == '+' || ch == '/' ? 1 : 2;
	return ch == '+' || ch == '-' ? 62 : ch == '/' || ch == '_' ? 63 : -1;
}

ssize_t base64_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
	uint32_t acc = 0;
	size_t i, bits = 0, o = 0, pad = 0;
	int seen = 0;
	while (pad < n && s[n - 1 - pad] == '=')
		pad++;
	if (pad > 2 || (pad && n % 4))
		return -EINVAL;
	n -= pad;
	if (n % 4 == 1 || (pad && pad != (4 - n % 4) % 4))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		int alpha, v = value((unsigned char)s[i], &alpha);
		if (v < 0 || (alpha && seen && alpha != seen))
			return -EINVAL;
		if (alpha)
			seen = alpha;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o == cap)
				return -EMSGSIZE;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	if (acc & ((1u << bits) - 1))
		return -EINVAL;
	return (ssize_t)o;
}
