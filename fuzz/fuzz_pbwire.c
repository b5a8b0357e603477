/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_pbwire - a client's request bytes, checked for NUL bytes in string
 * fields before protobuf-c's unpack is trusted with them. The first byte
 * picks which of NodeService's requests the rest is read as. It never
 * reads out of bounds; a field it names is a string field, named only
 * when a NUL byte is there; and it parses whatever protobuf-c parses. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pbwire.h"
#include "procctl/v1/node.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 1 when a string field named name exists in d or below. */
static int names_string(const ProtobufCMessageDescriptor *d, const char *name, int depth)
{
	unsigned i;
	for (i = 0; depth < 8 && i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		if (f->type == PROTOBUF_C_TYPE_STRING && !strcmp(f->name, name))
			return 1;
		if (f->type == PROTOBUF_C_TYPE_MESSAGE && names_string(f->descriptor, name, depth + 1))
			return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const ProtobufCServiceDescriptor *sd = &procctl__v1__node_service__descriptor;
	const ProtobufCMessageDescriptor *d;
	ProtobufCMessage *m;
	const char *field;
	uint8_t *copy;
	int r;
	if (size < 1)
		return 0;
	d = sd->methods[data[0] % sd->n_methods].input;
	/* An exact-size copy: ASan sees any read past the end. */
	copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	r = pbwire_strings_ok(d, copy, size - 1, &field);
	if (r != 0 && r != -EINVAL && r != -ELOOP)
		abort();
	if (r == -EINVAL && field && !names_string(d, field, 0))
		abort();
	/* No NUL byte at all: no string can hold one. */
	if (field && !memchr(copy, 0, size - 1))
		abort();
	/* What protobuf-c parses, this parses too: it refuses only a string
	 * with a NUL, or nesting too deep. */
	m = protobuf_c_message_unpack(d, NULL, size - 1, copy);
	if (m && r == -EINVAL && !field)
		abort();
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
	free(copy);
	return 0;
}
