/* SPDX-License-Identifier: Apache-2.0 */
/* watch.c - procctl watch: a WatchEvents stream, one line per event. */
#include <stdio.h>
#include <string.h>

#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "cli.h"
#include "pb_grpc.h"

/* A WatchEvents stream: one line per event until --count or the end. */
int cmd_watch(const struct opts *o)
{
	Procctl__V1__WatchEventsRequest rq = PROCCTL__V1__WATCH_EVENTS_REQUEST__INIT;
	grpc_metadata_array md_in, md_trail;
	grpc_byte_buffer *out, *in = NULL;
	grpc_status_code st = GRPC_STATUS_UNKNOWN;
	grpc_slice details;
	grpc_op ops[5];
	grpc_call *c;
	long seen = 0;
	int tag_status, tag_msg;

	if (connect_once() < 0)
		return 1;
	rq.filter = (Procctl__V1__Selector *)&o->sel;
	rq.resume_token = (char *)(o->from ? o->from : "");
	out = pb_pack(&rq.base);
	grpc_metadata_array_init(&md_in);
	grpc_metadata_array_init(&md_trail);
	c = grpc_channel_create_call(cli_ch, NULL, 0, cli_cq, grpc_slice_from_static_string("/procctl.v1.NodeService/WatchEvents"),
				     NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	memset(ops, 0, sizeof ops);
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = out;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &md_in;
	ops[4].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[4].data.recv_status_on_client.trailing_metadata = &md_trail;
	ops[4].data.recv_status_on_client.status = &st;
	ops[4].data.recv_status_on_client.status_details = &details;
	if (grpc_call_start_batch(c, ops, 5, &tag_status, NULL) != GRPC_CALL_OK)
		return 1;
	for (;;) {
		grpc_op op;
		grpc_event ev;
		Procctl__V1__WatchEventsResponse *e;
		memset(&op, 0, sizeof op);
		op.op = GRPC_OP_RECV_MESSAGE;
		op.data.recv_message.recv_message = &in;
		if (grpc_call_start_batch(c, &op, 1, &tag_msg, NULL) != GRPC_CALL_OK)
			break;
		ev = grpc_completion_queue_pluck(cli_cq, &tag_msg, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		if (!ev.success || !in)
			break;
		e = (void *)pb_unpack(&procctl__v1__watch_events_response__descriptor, in);
		grpc_byte_buffer_destroy(in);
		in = NULL;
		if (!e)
			break;
		if (cli_json) {
			print_json(&e->base);
		} else {
			const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(
				&procctl__v1__watch_events_response__descriptor, (unsigned)e->event_case);
			printf("%-8llu %-18s", (unsigned long long)e->sequence, f ? f->name : "?");
			if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_SNAPSHOT)
				printf(" processes=%zu", e->snapshot->n_processes);
			else if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_ATTACHED && e->attached->process)
				printf(" pid=%d consumer=%s", e->attached->process->ref ? e->attached->process->ref->pid : 0,
				       e->attached->process->consumer);
			else if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_DETACHED && e->detached->process)
				printf(" pid=%d reason=%s", e->detached->process->pid,
				       short_enum(&procctl__v1__detach_reason__descriptor, e->detached->reason, "DETACH_REASON_"));
			else if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_ACKED && e->acked->process)
				printf(" pid=%d generation=%llu result=%s", e->acked->process->pid,
				       (unsigned long long)e->acked->generation,
				       short_enum(&procctl__v1__ack_result__descriptor, e->acked->result, "ACK_RESULT_"));
			else if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_STATE_CHANGED && e->state_changed->process)
				printf(" pid=%d", e->state_changed->process->pid);
			else if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_OWNERSHIP_CHANGED)
				printf(" consumer=%s owner=%d", e->ownership_changed->consumer, e->ownership_changed->owner);
			else if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_RESOURCE_GRANTED)
				printf(" kind=%s pid=%d", e->resource_granted->kind,
				       e->resource_granted->holder ? e->resource_granted->holder->pid : 0);
			else if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_RESOURCE_RELEASED)
				printf(" kind=%s pid=%d reason=%s", e->resource_released->kind,
				       e->resource_released->holder ? e->resource_released->holder->pid : 0,
				       short_enum(&procctl__v1__release_reason__descriptor, e->resource_released->reason,
						  "RELEASE_REASON_"));
			printf(" token=%s\n", e->resume_token);
		}
		fflush(stdout);
		protobuf_c_message_free_unpacked(&e->base, NULL);
		if (o->count && ++seen >= o->count)
			break;
	}
	if (o->count && seen >= o->count) {
		grpc_call_cancel(c, NULL);
		st = GRPC_STATUS_OK;
	}
	grpc_completion_queue_pluck(cli_cq, &tag_status, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	if (st != GRPC_STATUS_OK && !(o->count && seen >= o->count)) {
		char *d = grpc_slice_to_c_string(details);
		fprintf(stderr, "procctl: %s: %s\n", rpc_status_name((unsigned)st), d);
		gpr_free(d);
	}
	grpc_slice_unref(details);
	grpc_call_unref(c);
	grpc_metadata_array_destroy(&md_in);
	grpc_metadata_array_destroy(&md_trail);
	grpc_byte_buffer_destroy(out);
	return o->count && seen >= o->count ? 0 : 1;
}
