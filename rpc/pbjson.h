/* SPDX-License-Identifier: Apache-2.0 */
/* pbjson.h - a protobuf-c message as JSON, by the proto3 JSON mapping:
 * lowerCamelCase field names, 64-bit integers as decimal strings, bytes
 * as base64, enums by name, every field present (defaults included, an
 * unset message as null, an unset oneof member left out), so a view's
 * field names never come and go. procctl-node's HTTP views are the
 * gRPC responses through this, field for field. */
#ifndef PROCCTL_NODE_PBJSON_H
#define PROCCTL_NODE_PBJSON_H

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

/* A new JSON object for m (the caller owns the reference), or NULL when
 * out of memory. */
json_t *pbjson_from(const ProtobufCMessage *m);

#endif
