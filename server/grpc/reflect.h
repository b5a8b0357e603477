/* SPDX-License-Identifier: Apache-2.0 */
/* reflect.h - gRPC server reflection (grpc.reflection.v1 and v1alpha, one
 * wire format) answered from a FileDescriptorSet embedded at build time,
 * so grpcurl and `buf curl` need no .proto files. Pure: no gRPC here;
 * grpc/grpc_call.c feeds it each request of a ServerReflectionInfo stream. */
#ifndef PROCCTL_NODE_REFLECT_H
#define PROCCTL_NODE_REFLECT_H

#include <stddef.h>
#include <stdint.h>

struct reflect;

/* Index a serialized FileDescriptorSet (len bytes, which must outlive the
 * index): its files, their dependencies, and every symbol they define
 * (packages' services, methods, messages, nested messages, enums, enum
 * values, fields). 0, or -EINVAL when the set cannot be parsed, -ENOMEM. */
int reflect_new(struct reflect **out, const uint8_t *fdset, size_t len);
void reflect_free(struct reflect *r);

/* Answer one serialized ServerReflectionRequest with a serialized
 * ServerReflectionResponse in *out (malloc'd, *outlen bytes; the caller
 * frees it): list_services, file_by_filename and file_containing_symbol
 * (the file and every file it imports, transitively, each once, the
 * dependencies after the file), and for the rest an error_response with
 * a gRPC status code (NOT_FOUND for unknown names and extensions,
 * UNIMPLEMENTED for no request at all). The response echoes the request
 * and its host. 0; -EINVAL the request bytes do not parse (the caller
 * ends the stream with INVALID_ARGUMENT); -ENOMEM. */
int reflect_answer(const struct reflect *r, const uint8_t *req, size_t reqlen, uint8_t **out, size_t *outlen);

#endif
