/* SPDX-License-Identifier: Apache-2.0 */
/* pb_grpc.h - protobuf-c messages into and out of gRPC byte buffers, and
 * a client's unary call: what the daemon's gRPC side (grpc_server.c) and
 * the C-core clients (clients/cli, bench/bench_node.c) share. */
#ifndef PROCCTL_RPC_PB_GRPC_H
#define PROCCTL_RPC_PB_GRPC_H

#include <stdint.h>
#include <stdlib.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <string.h>
#include <protobuf-c/protobuf-c.h>

#include "rpc_status.h"

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

/* A unary call of method with req on a client channel, its completion
 * plucked from cq (a queue for pluck): the status; *resp the response
 * (type rd; NULL unless OK and it parses) and, when details is not NULL,
 * *details the status message (gpr_free it). */
static inline grpc_status_code pb_unary(grpc_channel *ch, grpc_completion_queue *cq, const char *method,
					gpr_timespec deadline, const ProtobufCMessage *req,
					const ProtobufCMessageDescriptor *rd, ProtobufCMessage **resp, char **details)
{
	grpc_metadata_array md_in, md_trail;
	grpc_byte_buffer *out = pb_pack(req), *in = NULL;
	grpc_status_code st = GRPC_STATUS_RESOURCE_EXHAUSTED;
	grpc_slice msg = grpc_empty_slice();
	grpc_op ops[6];
	grpc_call *c;

	*resp = NULL;
	if (details)
		*details = NULL;
	if (!out)
		return st;
	grpc_metadata_array_init(&md_in);
	grpc_metadata_array_init(&md_trail);
	c = grpc_channel_create_call(ch, NULL, 0, cq, grpc_slice_from_static_string(method), NULL, deadline, NULL);
	memset(ops, 0, sizeof ops);
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = out;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &md_in;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &in;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &md_trail;
	ops[5].data.recv_status_on_client.status = &st;
	ops[5].data.recv_status_on_client.status_details = &msg;
	if (grpc_call_start_batch(c, ops, 6, c, NULL) == GRPC_CALL_OK) {
		grpc_completion_queue_pluck(cq, c, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	} else {
		st = GRPC_STATUS_INTERNAL;
	}
	if (st == GRPC_STATUS_OK)
		*resp = pb_unpack(rd, in);
	if (details)
		*details = grpc_slice_to_c_string(msg);
	grpc_slice_unref(msg);
	grpc_call_unref(c);
	grpc_metadata_array_destroy(&md_in);
	grpc_metadata_array_destroy(&md_trail);
	grpc_byte_buffer_destroy(out);
	if (in)
		grpc_byte_buffer_destroy(in);
	return st;
}

#endif
