/* SPDX-License-Identifier: Apache-2.0 */
/* base64.h - base64 (RFC 4648), the one encoder and decoder of procctl-node
 * and its clients: payloads in proto3 JSON, the HTTP views' bodies, the
 * config file's data_base64.
 *
 * The encoder writes the standard alphabet with padding, as proto3 JSON
 * does. The decoder takes what proto3 JSON parsers take, the standard or
 * the URL-safe alphabet (section 5), padded or not, and nothing else:
 * one alphabet a string, padding only at its end and only as much as
 * makes its length a multiple of four, no length that leaves a lone
 * character, and the bits past the last byte zero (so each byte string
 * has one padded and one unpadded spelling an alphabet). The input is
 * untrusted: every check is made before a byte past cap is written. */
#ifndef PROCCTL_BASE64_H
#define PROCCTL_BASE64_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The length of n bytes encoded, padded (without a NUL). */
#define BASE64_LEN(n) (((n) + 2) / 3 * 4)

/* n bytes of p into out (BASE64_LEN(n) characters and a NUL): its length. */
size_t base64_encode(const uint8_t *p, size_t n, char *out);

/* The n characters of s decoded into out (at most cap bytes): their
 * number, -EINVAL when s is no base64 as above, or -EMSGSIZE when it
 * holds more than cap bytes. */
ssize_t base64_decode(const char *s, size_t n, uint8_t *out, size_t cap);

#endif
