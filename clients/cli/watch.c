/* SPDX-License-Identifier: Apache-2.0 */
/* watch.c - procctl watch: a WatchEvents stream, one line per event. */
#include <stdio.h>
#include <string.h>

#include <grpc/support/alloc.h>

#include "cli.h"
#include "pb_grpc.h"

/* One event as a line: its sequence, its kind, what it is about, and
 * the token to resume after it. */
static void print_event(const Procctl__V1__WatchEventsResponse *e)
{
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

/* A WatchEvents stream: one line per event until --count, --for,
 * --timeout (when given: a watch has none by default) or the end. */
int cmd_watch(const struct opts *o)
{
	Procctl__V1__WatchEventsRequest rq = PROCCTL__V1__WATCH_EVENTS_REQUEST__INIT;
	Procctl__V1__WatchEventsResponse *e;
	struct pb_stream s;
	grpc_status_code st;
	gpr_timespec deadline = gpr_inf_future(GPR_CLOCK_REALTIME);
	int64_t ms = o->for_ms;
	char *details = NULL;
	long seen = 0;
	int enough = 0, timed_out = 0, by_timeout = 0;

	if (no_operands(o))
		return 2;
	if (o->timeout_given && (!ms || cli_timeout_ms < ms)) {
		ms = cli_timeout_ms;
		by_timeout = 1;
	}
	if (ms || by_timeout)
		deadline = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(ms, GPR_TIMESPAN));
	if (connected() < 0)
		return 1;
	rq.filter = (Procctl__V1__Selector *)&o->sel;
	rq.resume_token = (char *)(o->from ? o->from : "");
	if (pb_stream_start(&s, cli_ch, cli_cq, "/procctl.v1.NodeService/WatchEvents", deadline, &rq.base) < 0) {
		fprintf(stderr, "procctl: WatchEvents: the call could not start\n");
		return 1;
	}
	while (!enough && (e = (void *)pb_stream_next(&s, &procctl__v1__watch_events_response__descriptor))) {
		if (cli_json)
			print_json(&e->base);
		else
			print_event(e);
		fflush(stdout);
		protobuf_c_message_free_unpacked(&e->base, NULL);
		enough = o->count && ++seen >= o->count;
	}
	if (s.bad)
		fprintf(stderr, "procctl: WatchEvents: a message that does not parse\n");
	st = pb_stream_end(&s, enough || s.bad, &details);
	timed_out = !enough && st == GRPC_STATUS_DEADLINE_EXCEEDED && (ms || by_timeout);
	if (timed_out && by_timeout && o->count)
		fprintf(stderr, "procctl: watch: %ld of --count %ld events within --timeout\n", seen, o->count);
	else if (st != GRPC_STATUS_OK && !timed_out)
		say_failure(st, details);
	gpr_free(details);
	if (timed_out)
		return by_timeout && o->count ? EXIT_PENDING : 0;
	return enough ? 0 : 1;
}
