/* SPDX-License-Identifier: Apache-2.0 */
/* pbjson.c - protobuf-c messages as proto3 JSON (pbjson.h). */
#include "pbjson.h"

#include "base64.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *base64(const uint8_t *p, size_t n)
{
	char *out = malloc(BASE64_LEN(n) + 1);
	json_t *j;
	if (!out)
		return NULL;
	j = json_stringn(out, base64_encode(p, n, out));
	free(out);
	return j;
}

static json_t *u64(uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
	return json_string(buf);
}

static json_t *s64(int64_t v)
{
	char buf[24];
	snprintf(buf, sizeof buf, "%lld", (long long)v);
	return json_string(buf);
}

/* One value of field f at p. */
static json_t *value(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		return json_integer(*(const int32_t *)p);
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return json_integer(*(const uint32_t *)p);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		return s64(*(const int64_t *)p);
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return u64(*(const uint64_t *)p);
	case PROTOBUF_C_TYPE_FLOAT:
		return json_real(*(const float *)p);
	case PROTOBUF_C_TYPE_DOUBLE:
		return json_real(*(const double *)p);
	case PROTOBUF_C_TYPE_BOOL:
		return json_boolean(*(const protobuf_c_boolean *)p);
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumValue *ev =
			protobuf_c_enum_descriptor_get_value((const ProtobufCEnumDescriptor *)f->descriptor, *(const int *)p);
		return ev ? json_string(ev->name) : json_integer(*(const int *)p);
	}
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;
		return json_string(s ? s : ""); /* NULL for invalid UTF-8: the caller fails */
	}
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *b = p;
		return base64(b->data, b->len);
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *m = *(ProtobufCMessage *const *)p;
		return m ? pbjson_from(m) : json_null();
	}
	}
	return NULL;
}

static size_t elem_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_ENUM:
		return sizeof(int);
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	default:
		return 4;
	}
}

/* snake_case -> lowerCamelCase, as protoc's json_name. */
static void json_name(const char *in, char *out, size_t cap)
{
	size_t o = 0;
	int up = 0;
	for (; *in && o + 1 < cap; in++) {
		if (*in == '_') {
			up = 1;
			continue;
		}
		out[o++] = up && *in >= 'a' && *in <= 'z' ? (char)(*in - 'a' + 'A') : *in;
		up = 0;
	}
	out[o] = 0;
}

json_t *pbjson_from(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	json_t *obj = json_object();
	unsigned i;
	if (!obj)
		return NULL;
	for (i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *base = (const char *)m;
		char name[128];
		json_t *v;
		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			if (*(const uint32_t *)(base + f->quantifier_offset) != f->id)
				continue; /* another member, or none, is set */
		}
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset), k;
			const char *arr = *(char *const *)(base + f->offset);
			v = json_array();
			for (k = 0; v && k < n; k++) {
				json_t *e = value(f, arr + k * elem_size(f->type));
				if (!e || json_array_append_new(v, e) < 0) {
					json_decref(v);
					v = NULL;
				}
			}
		} else {
			v = value(f, base + f->offset);
		}
		json_name(f->name, name, sizeof name);
		if (!v || json_object_set_new(obj, name, v) < 0) {
			json_decref(obj);
			return NULL;
		}
	}
	return obj;
}
