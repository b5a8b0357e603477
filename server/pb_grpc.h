/* pb_grpc.h - protobuf-c messages into and out of gRPC byte buffers: what
 * the daemon's gRPC side (grpc_server.c) and the C-core client of
 * bench/bench_node.c share. */
#ifndef PROCCTL_NODE_PB_GRPC_H
#define PROCCTL_NODE_PB_GRPC_H

#include <stdint.h>
#include <stdlib.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>
#include <protobuf-c/protobuf-c.h>

/* A byte buffer that owns bytes (malloc'd; freed with the buffer). */
static inline grpc_byte_buffer *pb_take(void *bytes, size_t len)
{
	grpc_slice s = grpc_slice_new(bytes, len, free);
	grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);
	grpc_slice_unref(s);
	return bb;
}

/* m packed into a byte buffer; NULL when out of memory. */
static inline grpc_byte_buffer *pb_pack(const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = (uint8_t *)malloc(len ? len : 1);
	if (!buf)
		return NULL;
	protobuf_c_message_pack(m, buf);
	return pb_take(buf, len);
}

/* A message of type d from bb (free it with
 * protobuf_c_message_free_unpacked); NULL when bb is NULL or does not
 * parse. */
static inline ProtobufCMessage *pb_unpack(const ProtobufCMessageDescriptor *d, grpc_byte_buffer *bb)
{
	grpc_byte_buffer_reader r;
	grpc_slice all;
	ProtobufCMessage *m;
	if (!bb || !grpc_byte_buffer_reader_init(&r, bb))
		return NULL;
	all = grpc_byte_buffer_reader_readall(&r);
	grpc_byte_buffer_reader_destroy(&r);
	m = protobuf_c_message_unpack(d, NULL, GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
	grpc_slice_unref(all);
	return m;
}

#endif
