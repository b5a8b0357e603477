/* SPDX-License-Identifier: Apache-2.0 */
/* commands.c - procctl's commands, each one call (or two) to the daemon
 * and its output; watch is in watch.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <grpc/support/alloc.h>

#include "cli.h"
#include "statedata.h"
#include "grpc/health/v1/health.pb-c.h"

int cmd_ps(const struct opts *o)
{
	Procctl__V1__ListProcessesRequest rq = PROCCTL__V1__LIST_PROCESSES_REQUEST__INIT;
	Procctl__V1__ListProcessesResponse *r;
	size_t i;
	if (no_operands(o))
		return 2;
	rq.filter = (Procctl__V1__Selector *)&o->sel;
	if (!(r = (void *)call("/procctl.v1.NodeService/ListProcesses", &rq.base,
			       &procctl__v1__list_processes_response__descriptor)))
		return 1;
	if (cli_json) {
		print_json(&r->base);
	} else {
		process_header();
		for (i = 0; i < r->n_processes; i++)
			show_process(r->processes[i]);
	}
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return 0;
}

/* The one process of get and state: "PID" or "--pid PID". */
static int one_pid(const struct opts *o, Procctl__V1__ProcessRef *ref)
{
	long pid;
	if (o->nargs > 1 || (o->nargs == 1) == !!o->sel.pid) {
		fprintf(stderr, "procctl: give one PID (PID or --pid PID)\n");
		return 2;
	}
	if (o->sel.pid) {
		ref->pid = o->sel.pid;
		return 0;
	}
	if (parse_int(o->args[0], 1, 0x7fffffff, &pid) < 0) {
		fprintf(stderr, "procctl: %s: not a pid (1 to 2147483647)\n", o->args[0]);
		return 2;
	}
	ref->pid = (int32_t)pid;
	return 0;
}

int cmd_get(const struct opts *o)
{
	Procctl__V1__GetProcessRequest rq = PROCCTL__V1__GET_PROCESS_REQUEST__INIT;
	Procctl__V1__ProcessRef ref = PROCCTL__V1__PROCESS_REF__INIT;
	Procctl__V1__GetProcessResponse *r;
	int e;
	if ((e = one_pid(o, &ref)))
		return e;
	rq.process = &ref;
	if (!(r = (void *)call("/procctl.v1.NodeService/GetProcess", &rq.base, &procctl__v1__get_process_response__descriptor)))
		return 1;
	if (cli_json) {
		print_json(&r->base);
	} else {
		process_header();
		show_process(r->process);
	}
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return 0;
}

int cmd_state(const struct opts *o)
{
	Procctl__V1__ReadStateRequest rq = PROCCTL__V1__READ_STATE_REQUEST__INIT;
	Procctl__V1__ProcessRef ref = PROCCTL__V1__PROCESS_REF__INIT;
	Procctl__V1__ReadStateResponse *r;
	size_t i;
	int e;
	if ((e = one_pid(o, &ref)))
		return e;
	rq.process = &ref;
	if (!(r = (void *)call("/procctl.v1.NodeService/ReadState", &rq.base, &procctl__v1__read_state_response__descriptor)))
		return 1;
	if (cli_json) {
		print_json(&r->base);
	} else {
		char num[16];
		if (r->ack_result)
			printf("acked:     %llu %s (%s)\n", (unsigned long long)r->acked_generation,
			       short_enum(&procctl__v1__ack_result__descriptor, r->ack_result, "ACK_RESULT_"),
			       r->ack_status ? errno_name(r->ack_status, num) : "status 0");
		else
			printf("acked:     -\n");
		for (i = 0; i < r->n_resources; i++) {
			const Procctl__V1__ResourceReport *x = r->resources[i];
			printf("resource:  %s:%s %s%s grant=%s seen=%llu\n", x->kind, x->id,
			       short_enum(&procctl__v1__resource_state__descriptor, x->state, "RESOURCE_STATE_"),
			       x->wants ? " wants" : "", x->grant_id[0] ? x->grant_id : "-",
			       (unsigned long long)x->seen_generation);
		}
		show_state_data(stdout, r->data.data, r->data.len);
	}
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return 0;
}

int need_selector(const struct opts *o)
{
	if (!(o->given & CLI_SEL_OPTS & ~(1ull << O_SCHEMA))) {
		fprintf(stderr, "procctl: name the processes: --pid PID, or --consumer NAME [--schema N] [--pod UID] "
				"[--container ID]\n");
		return 2;
	}
	return 0;
}

int wait_of(const struct opts *o, uint32_t *ms)
{
	*ms = o->wait ? (uint32_t)cli_timeout_ms : 0;
	if (o->wait && !cli_timeout_ms) {
		fprintf(stderr, "procctl: --wait with --timeout 0 would wait for nothing: give a timeout, or no --wait\n");
		return 2;
	}
	return 0;
}

int cmd_publish(const struct opts *o, int clear)
{
	Procctl__V1__PublishRequest pq = PROCCTL__V1__PUBLISH_REQUEST__INIT;
	Procctl__V1__ClearRequest cq_ = PROCCTL__V1__CLEAR_REQUEST__INIT;
	Procctl__V1__PublishResponse *r;
	ProtobufCBinaryData data = {0, NULL};
	uint32_t wait;
	int e;
	if ((e = no_operands(o)) || (e = need_selector(o)) || (e = wait_of(o, &wait)) ||
	    (!clear && (e = read_data(o, &data))))
		return e;
	if (clear) {
		cq_.selector = (Procctl__V1__Selector *)&o->sel;
		cq_.wait_ms = wait;
		/* ClearResponse and PublishResponse have one wire format */
		r = (void *)call("/procctl.v1.NodeService/Clear", &cq_.base, &procctl__v1__publish_response__descriptor);
	} else {
		pq.selector = (Procctl__V1__Selector *)&o->sel;
		pq.payload = data;
		pq.wait_ms = wait;
		r = (void *)call("/procctl.v1.NodeService/Publish", &pq.base, &procctl__v1__publish_response__descriptor);
	}
	free(data.data);
	if (!r) /* a pid no attached process has is NOT_FOUND: no process matched */
		return o->sel.pid && cli_last_status == GRPC_STATUS_NOT_FOUND ? (o->allow_none ? 0 : EXIT_NONE) : 1;
	if (!r->n_results && !o->allow_none) {
		if (cli_json)
			print_json(&r->base);
		fprintf(stderr, "procctl: no attached process matches %s (--allow-none accepts that)\n",
			selector_words(o));
		protobuf_c_message_free_unpacked(&r->base, NULL);
		return EXIT_NONE;
	}
	e = results(r->results, r->n_results, o->wait);
	if (cli_json)
		print_json(&r->base);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return e;
}

static void arbiter_rows(const Procctl__V1__Arbiter *a)
{
	size_t j;
	for (j = 0; j < a->n_resources; j++) {
		const Procctl__V1__ArbiterResource *x = a->resources[j];
		printf("%-8s %-36s %-8d %-9.3f %-10.3f %-10.3f %-9llu %u\n", a->kind, x->id,
		       x->holder ? x->holder->pid : 0, (double)x->held_ns / 1e9,
		       (double)x->blocked_ns_total / 1e9, (double)x->pending_ns_total / 1e9, (unsigned long long)x->handoffs,
		       x->waiters);
	}
}

/* resources: every arbiter (ListArbiters), or one kind's (GetArbiter:
 * NOT_FOUND when the daemon runs none for it). */
int cmd_resources(const struct opts *o)
{
	ProtobufCMessage *r;
	size_t i;
	if (o->nargs > 1)
		return bad_usage(o->args[1], "not expected here (resources [KIND])");
	if (o->nargs == 1) {
		Procctl__V1__GetArbiterRequest rq = PROCCTL__V1__GET_ARBITER_REQUEST__INIT;
		rq.kind = o->args[0];
		r = call("/procctl.v1.NodeService/GetArbiter", &rq.base, &procctl__v1__get_arbiter_response__descriptor);
	} else {
		Procctl__V1__ListArbitersRequest rq = PROCCTL__V1__LIST_ARBITERS_REQUEST__INIT;
		r = call("/procctl.v1.NodeService/ListArbiters", &rq.base, &procctl__v1__list_arbiters_response__descriptor);
	}
	if (!r)
		return 1;
	if (cli_json) {
		print_json(r);
	} else {
		printf("%-8s %-36s %-8s %-9s %-10s %-10s %-9s %s\n", "KIND", "RESOURCE", "HOLDER", "HELD_S", "BLOCKED_S",
		       "PENDING_S", "HANDOFFS", "WAITERS");
		if (o->nargs == 1) {
			arbiter_rows(((Procctl__V1__GetArbiterResponse *)r)->arbiter);
		} else {
			const Procctl__V1__ListArbitersResponse *l = (void *)r;
			for (i = 0; i < l->n_arbiters; i++)
				arbiter_rows(l->arbiters[i]);
		}
	}
	protobuf_c_message_free_unpacked(r, NULL);
	return 0;
}

/* One health check within ms: 1 SERVING, 0 another status (in *status),
 * -1 failed (*st, *details: why; for a socket not there yet, *st is
 * UNAVAILABLE with no details), -2 no channel (said: the TLS files). */
static int health_once(int64_t ms, int *status, grpc_status_code *st, char **details)
{
	Grpc__Health__V1__HealthCheckRequest rq = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
	Grpc__Health__V1__HealthCheckResponse *r;
	int c;
	*details = NULL;
	*st = GRPC_STATUS_UNAVAILABLE;
	if (!cli_to.server && access(cli_to.socket, F_OK) < 0)
		return -1;
	if ((c = connect_once()) == -2)
		return -1; /* no connection yet */
	if (c < 0)
		return -2;
	if (!(r = (void *)call_for("/grpc.health.v1.Health/Check", &rq.base,
				   &grpc__health__v1__health_check_response__descriptor, ms, st, details)))
		return -1;
	*status = r->status;
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return *status == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
}

/* health: the daemon's status; with --wait, asked again until it serves
 * or --timeout is up (a daemon starting: its socket not there yet, or
 * not serving until its first discovery pass). */
int cmd_health(const struct opts *o)
{
	Grpc__Health__V1__HealthCheckResponse reply = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
	int64_t end = cli_now_ms() + cli_timeout_ms;
	grpc_status_code st;
	char *d = NULL;
	int r, status = 0;
	if (no_operands(o))
		return 2;
	for (;;) {
		int64_t left = end - cli_now_ms();
		gpr_free(d);
		/* each question within what is left of --timeout (and a second, waiting) */
		r = health_once(!o->wait ? cli_timeout_ms + 2000 : left > 1000 ? 1000 : left > 0 ? left : 0, &status, &st,
				&d);
		if (r > 0 || r == -2 || !o->wait || cli_now_ms() >= end)
			break;
		if (r < 0)
			connect_reset(); /* the next question on a new connection, checked again */
		usleep(100000);
	}
	reply.status = (Grpc__Health__V1__HealthCheckResponse__ServingStatus)status;
	if (r == -2)
		; /* said: no channel (the TLS files, the socket's listener refused) */
	else if (r == -1 && !cli_to.server && access(cli_to.socket, F_OK) < 0)
		connect_once(); /* says the socket is not there */
	else if (r == -1)
		say_failure(st, d);
	else if (cli_json)
		print_json(&reply.base);
	else
		printf("%s\n", short_enum(&grpc__health__v1__health_check_response__serving_status__descriptor, status, ""));
	gpr_free(d);
	if ((r == 0 || r == -1) && o->wait)
		fprintf(stderr, "procctl: the daemon did not serve within --timeout (%lld ms)\n", (long long)cli_timeout_ms);
	return r > 0 ? 0 : 1;
}
