/* SPDX-License-Identifier: Apache-2.0 */
/* pbwire.c - a request's string fields checked on the wire (pbwire.h). */
#include "pbwire.h"

#include <errno.h>
#include <string.h>

#define DEPTH_MAX 32

/* A varint at *p (below end): 0 and *v, the cursor moved; -EINVAL. */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned shift;
	*v = 0;
	for (shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -EINVAL;
}

static int walk(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end, int depth,
		const char **field)
{
	if (depth > DEPTH_MAX)
		return -ELOOP;
	while (p < end) {
		const ProtobufCFieldDescriptor *f;
		uint64_t tag, n;
		int r;
		if (varint(&p, end, &tag) < 0)
			return -EINVAL;
		f = protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3));
		switch (tag & 7) {
		case 0: /* varint */
			if (varint(&p, end, &n) < 0)
				return -EINVAL;
			break;
		case 1: /* fixed64 */
		case 5: /* fixed32 */
			n = (tag & 7) == 1 ? 8 : 4;
			if ((uint64_t)(end - p) < n)
				return -EINVAL;
			p += n;
			break;
		case 2: /* length-delimited */
			if (varint(&p, end, &n) < 0 || (uint64_t)(end - p) < n)
				return -EINVAL;
			if (f && f->type == PROTOBUF_C_TYPE_STRING && memchr(p, 0, (size_t)n)) {
				*field = f->name;
				return -EINVAL;
			}
			if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
			    (r = walk(f->descriptor, p, p + n, depth + 1, field)) < 0)
				return r;
			p += n;
			break;
		default: /* groups (3, 4) and no type at all: not in proto3 */
			return -EINVAL;
		}
	}
	return 0;
}

int pbwire_strings_ok(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len, const char **field)
{
	*field = NULL;
	return walk(d, buf, buf + len, 0, field);
}
