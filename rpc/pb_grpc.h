/* SPDX-License-Identifier: Apache-2.0 */
/* pb_grpc.h - protobuf-c messages into and out of gRPC byte buffers
 * (inline: the daemon's gRPC side uses these alone), and a client's unary
 * and server-streaming calls (pb_grpc.c): what the daemon's gRPC side
 * and the C-core clients (clients/cli, bench/bench_node.c) share. */
#ifndef PROCCTL_RPC_PB_GRPC_H
#define PROCCTL_RPC_PB_GRPC_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <string.h>
#include <protobuf-c/protobuf-c.h>

#include "pbwire.h"
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
 * parse. With strict (a request), a string field that holds a NUL byte
 * (which protobuf-c would cut short) is refused too: NULL and *why set. */
static inline ProtobufCMessage *pb_unpack_checked(const ProtobufCMessageDescriptor *d, grpc_byte_buffer *bb,
						  int strict, char *why, size_t whylen)
{
	grpc_byte_buffer_reader r;
	grpc_slice all;
	ProtobufCMessage *m;
	const char *field;
	snprintf(why, whylen, "the request does not parse");
	if (!bb || !grpc_byte_buffer_reader_init(&r, bb))
		return NULL;
	all = grpc_byte_buffer_reader_readall(&r);
	grpc_byte_buffer_reader_destroy(&r);
	m = protobuf_c_message_unpack(d, NULL, GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
	if (m && strict &&
	    pbwire_strings_ok(d, GRPC_SLICE_START_PTR(all), GRPC_SLICE_LENGTH(all), &field) < 0) {
		if (field)
			snprintf(why, whylen, "%s: holds a NUL byte", field);
		protobuf_c_message_free_unpacked(m, NULL);
		m = NULL;
	}
	grpc_slice_unref(all);
	return m;
}

/* A message of type d from bb (a response: not strict). */
static inline ProtobufCMessage *pb_unpack(const ProtobufCMessageDescriptor *d, grpc_byte_buffer *bb)
{
	char why[32];
	return pb_unpack_checked(d, bb, 0, why, sizeof why);
}

/* ---- client calls (pb_grpc.c; link procctl-rpc-grpc) ---- */

/* A unary call of method with req on a client channel, its completion
 * plucked from cq (a queue for pluck): the status; *resp the response
 * (type rd; NULL unless OK and it parses) and, when details is not NULL,
 * *details the status message (gpr_free it). */
grpc_status_code pb_unary(grpc_channel *ch, grpc_completion_queue *cq, const char *method, gpr_timespec deadline,
			  const ProtobufCMessage *req, const ProtobufCMessageDescriptor *rd, ProtobufCMessage **resp,
			  char **details);

/* A server-streaming call: start it with one request, take its messages
 * with pb_stream_next until it returns NULL, end it with pb_stream_end. */
struct pb_stream {
	grpc_call *call;
	grpc_completion_queue *cq;
	grpc_metadata_array md_in, md_trail;
	grpc_byte_buffer *out;
	grpc_status_code status;
	grpc_slice details;
	int tag_status, tag_msg; /* their addresses are the batches' tags */
	int bad;                 /* a message did not parse */
	int armed;               /* a receive is in flight, into in */
	grpc_byte_buffer *in;
};

/* 0, or -1 (nothing to end: out of memory, or the call refused). */
int pb_stream_start(struct pb_stream *s, grpc_channel *ch, grpc_completion_queue *cq, const char *method,
		    gpr_timespec deadline, const ProtobufCMessage *req);
/* The next message (type rd; free it with protobuf_c_message_free_unpacked),
 * or NULL at the stream's end, when the call failed, or when it does not
 * parse (s->bad). */
ProtobufCMessage *pb_stream_next(struct pb_stream *s, const ProtobufCMessageDescriptor *rd);
/* The same, waiting at most until until (and other calls may run on the
 * queue meanwhile): 1 and *m the message (NULL: it did not parse, s->bad);
 * 0 none yet (the receive stays in flight: wait again); -1 the end. */
int pb_stream_wait(struct pb_stream *s, const ProtobufCMessageDescriptor *rd, gpr_timespec until, ProtobufCMessage **m);
/* End the stream (cancelled first when cancel: the caller has what it
 * wanted) and free it: its status (OK when cancelled by us); *details as
 * pb_unary's. */
grpc_status_code pb_stream_end(struct pb_stream *s, int cancel, char **details);

#endif
