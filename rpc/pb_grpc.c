/* SPDX-License-Identifier: Apache-2.0 */
/* pb_grpc.c - a client's calls over the gRPC C core (pb_grpc.h): one
 * request out, then one response (unary) or many (a server stream). */
#include "pb_grpc.h"

#include <grpc/support/time.h>

/* Create a call of method and start its first batch: the request sent
 * and closed, the initial metadata and the status received, and (when
 * in is not NULL) one message, all completing on tag. */
static grpc_call *call_start(grpc_channel *ch, grpc_completion_queue *cq, const char *method, gpr_timespec deadline,
			     grpc_byte_buffer *out, grpc_metadata_array *md_in, grpc_metadata_array *md_trail,
			     grpc_status_code *st, grpc_slice *details, grpc_byte_buffer **in, void *tag)
{
	grpc_call *c = grpc_channel_create_call(ch, NULL, 0, cq, grpc_slice_from_static_string(method), NULL, deadline,
						NULL);
	grpc_op ops[6];
	size_t n = 0;
	memset(ops, 0, sizeof ops);
	ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[n].op = GRPC_OP_SEND_MESSAGE;
	ops[n++].data.send_message.send_message = out;
	ops[n++].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[n].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[n++].data.recv_initial_metadata.recv_initial_metadata = md_in;
	if (in) {
		ops[n].op = GRPC_OP_RECV_MESSAGE;
		ops[n++].data.recv_message.recv_message = in;
	}
	ops[n].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[n].data.recv_status_on_client.trailing_metadata = md_trail;
	ops[n].data.recv_status_on_client.status = st;
	ops[n++].data.recv_status_on_client.status_details = details;
	if (grpc_call_start_batch(c, ops, n, tag, NULL) != GRPC_CALL_OK) {
		grpc_call_unref(c);
		return NULL;
	}
	return c;
}

grpc_status_code pb_unary(grpc_channel *ch, grpc_completion_queue *cq, const char *method, gpr_timespec deadline,
			  const ProtobufCMessage *req, const ProtobufCMessageDescriptor *rd, ProtobufCMessage **resp,
			  char **details)
{
	grpc_metadata_array md_in, md_trail;
	grpc_byte_buffer *out = pb_pack(req), *in = NULL;
	grpc_status_code st = GRPC_STATUS_RESOURCE_EXHAUSTED;
	grpc_slice msg = grpc_empty_slice();
	grpc_call *c;
	int tag;

	*resp = NULL;
	if (details)
		*details = NULL;
	if (!out)
		return st;
	grpc_metadata_array_init(&md_in);
	grpc_metadata_array_init(&md_trail);
	if ((c = call_start(ch, cq, method, deadline, out, &md_in, &md_trail, &st, &msg, &in, &tag))) {
		grpc_completion_queue_pluck(cq, &tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		grpc_call_unref(c);
	} else {
		st = GRPC_STATUS_INTERNAL;
	}
	if (st == GRPC_STATUS_OK)
		*resp = pb_unpack(rd, in);
	if (details)
		*details = grpc_slice_to_c_string(msg);
	grpc_slice_unref(msg);
	grpc_metadata_array_destroy(&md_in);
	grpc_metadata_array_destroy(&md_trail);
	grpc_byte_buffer_destroy(out);
	if (in)
		grpc_byte_buffer_destroy(in);
	return st;
}

int pb_stream_start(struct pb_stream *s, grpc_channel *ch, grpc_completion_queue *cq, const char *method,
		    gpr_timespec deadline, const ProtobufCMessage *req)
{
	memset(s, 0, sizeof *s);
	s->cq = cq;
	s->status = GRPC_STATUS_UNKNOWN;
	s->details = grpc_empty_slice();
	if (!(s->out = pb_pack(req)))
		return -1;
	grpc_metadata_array_init(&s->md_in);
	grpc_metadata_array_init(&s->md_trail);
	s->call = call_start(ch, cq, method, deadline, s->out, &s->md_in, &s->md_trail, &s->status, &s->details, NULL,
			     &s->tag_status);
	if (s->call)
		return 0;
	grpc_metadata_array_destroy(&s->md_in);
	grpc_metadata_array_destroy(&s->md_trail);
	grpc_byte_buffer_destroy(s->out);
	return -1;
}

int pb_stream_wait(struct pb_stream *s, const ProtobufCMessageDescriptor *rd, gpr_timespec until, ProtobufCMessage **m)
{
	grpc_event ev;
	*m = NULL;
	if (!s->armed) {
		grpc_op op;
		memset(&op, 0, sizeof op);
		op.op = GRPC_OP_RECV_MESSAGE;
		op.data.recv_message.recv_message = &s->in;
		s->in = NULL;
		if (grpc_call_start_batch(s->call, &op, 1, &s->tag_msg, NULL) != GRPC_CALL_OK)
			return -1;
		s->armed = 1;
	}
	ev = grpc_completion_queue_pluck(s->cq, &s->tag_msg, until, NULL);
	if (ev.type == GRPC_QUEUE_TIMEOUT)
		return 0;
	s->armed = 0;
	if (!ev.success || !s->in)
		return -1;
	*m = pb_unpack(rd, s->in);
	grpc_byte_buffer_destroy(s->in);
	s->in = NULL;
	s->bad = !*m;
	return 1;
}

ProtobufCMessage *pb_stream_next(struct pb_stream *s, const ProtobufCMessageDescriptor *rd)
{
	ProtobufCMessage *m;
	pb_stream_wait(s, rd, gpr_inf_future(GPR_CLOCK_REALTIME), &m);
	return m;
}

grpc_status_code pb_stream_end(struct pb_stream *s, int cancel, char **details)
{
	grpc_status_code st;
	if (cancel)
		grpc_call_cancel(s->call, NULL);
	if (s->armed) { /* a receive in flight: it ends with the call */
		grpc_completion_queue_pluck(s->cq, &s->tag_msg, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		if (s->in)
			grpc_byte_buffer_destroy(s->in);
		s->armed = 0;
	}
	grpc_completion_queue_pluck(s->cq, &s->tag_status, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	st = cancel ? GRPC_STATUS_OK : s->status;
	if (details)
		*details = grpc_slice_to_c_string(s->details);
	grpc_slice_unref(s->details);
	grpc_call_unref(s->call);
	grpc_metadata_array_destroy(&s->md_in);
	grpc_metadata_array_destroy(&s->md_trail);
	grpc_byte_buffer_destroy(s->out);
	return st;
}
