/* SPDX-License-Identifier: Apache-2.0 */
/* commands.c - procctl's commands, each one call (or two) to the daemon
 * and its output; watch is in watch.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "grpc/health/v1/health.pb-c.h"

int cmd_ps(const struct opts *o)
{
	Procctl__V1__ListProcessesRequest rq = PROCCTL__V1__LIST_PROCESSES_REQUEST__INIT;
	Procctl__V1__ListProcessesResponse *r;
	size_t i;
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

/* "PID" or "--pid PID", as the selectors take it. */
static int one_pid(int argc, char **argv, Procctl__V1__ProcessRef *ref)
{
	long pid;
	if (argc == 2 && !strcmp(argv[0], "--pid")) {
		argc--;
		argv++;
	}
	if (argc != 1 || parse_int(argv[0], 1, 0x7fffffff, &pid) < 0) {
		fprintf(stderr, "procctl: give one PID (a number, 1 to 2147483647)\n");
		return 2;
	}
	ref->pid = (int32_t)pid;
	return 0;
}

int cmd_get(int argc, char **argv)
{
	Procctl__V1__GetProcessRequest rq = PROCCTL__V1__GET_PROCESS_REQUEST__INIT;
	Procctl__V1__ProcessRef ref = PROCCTL__V1__PROCESS_REF__INIT;
	Procctl__V1__GetProcessResponse *r;
	int e;
	if ((e = one_pid(argc, argv, &ref)))
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

int cmd_state(int argc, char **argv)
{
	Procctl__V1__ReadStateRequest rq = PROCCTL__V1__READ_STATE_REQUEST__INIT;
	Procctl__V1__ProcessRef ref = PROCCTL__V1__PROCESS_REF__INIT;
	Procctl__V1__ReadStateResponse *r;
	size_t i;
	int e;
	if ((e = one_pid(argc, argv, &ref)))
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
			char id[80];
			printf("resource:  %s:%s %s%s grant=%s seen=%llu\n", x->kind, resource_id(&x->id, id),
			       short_enum(&procctl__v1__resource_state__descriptor, x->state, "RESOURCE_STATE_"),
			       x->wants ? " wants" : "", x->grant_id[0] ? x->grant_id : "-",
			       (unsigned long long)x->seen_generation);
		}
		if (printable(r->data.data, r->data.len))
			printf("data:      %.*s\n", (int)r->data.len, (const char *)r->data.data);
		else
			printf("data:      %zu bytes (not text: -o json shows them in base64)\n", r->data.len);
	}
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return 0;
}

static int need_selector(const struct opts *o)
{
	if (!o->have_sel) {
		fprintf(stderr, "procctl: name the processes: --pid PID, or --consumer NAME [--schema N] [--pod UID] "
				"[--container ID]\n");
		return 2;
	}
	return 0;
}

/* The wait a --wait asks for (0 without it) into *ms: 0, or 2 (usage)
 * for --wait with --timeout 0, which would wait for nothing. */
static int wait_of(const struct opts *o, uint32_t *ms)
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
	if ((e = need_selector(o)) || (e = wait_of(o, &wait)) || (!clear && (e = read_data(o, &data))))
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
		char id[80];
		printf("%-8s %-36s %-8d %-9.3f %-10.3f %-10.3f %-9llu %u\n", a->kind, resource_id(&x->id, id),
		       x->holder ? x->holder->pid : 0, (double)x->held_ns / 1e9,
		       (double)x->blocked_ns_total / 1e9, (double)x->pending_ns_total / 1e9, (unsigned long long)x->handoffs,
		       x->waiters);
	}
}

/* resources: every arbiter (ListArbiters), or one kind's (GetArbiter:
 * NOT_FOUND when the daemon runs none for it). */
int cmd_resources(int argc, char **argv)
{
	ProtobufCMessage *r;
	size_t i;
	if (argc > 1) {
		fprintf(stderr, "procctl: resources [KIND]\n");
		return 2;
	}
	if (argc == 1) {
		Procctl__V1__GetArbiterRequest rq = PROCCTL__V1__GET_ARBITER_REQUEST__INIT;
		rq.kind = argv[0];
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
		if (argc == 1) {
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

/* desired rm SELECTOR */
static int desired_rm(struct opts *o)
{
	Procctl__V1__DeleteDesiredConfigRequest rq = PROCCTL__V1__DELETE_DESIRED_CONFIG_REQUEST__INIT;
	ProtobufCMessage *r;
	rq.selector = &o->sel;
	if (!(r = call("/procctl.v1.NodeService/DeleteDesiredConfig", &rq.base,
		       &procctl__v1__delete_desired_config_response__descriptor)))
		return 1;
	if (cli_json)
		print_json(r);
	protobuf_c_message_free_unpacked(r, NULL);
	return 0;
}

int cmd_desired(int argc, char **argv)
{
	struct opts o;
	int e;
	if (argc < 1)
		return bad_usage("desired", "needs ls, set or rm");
	if (strcmp(argv[0], "ls") && strcmp(argv[0], "set") && strcmp(argv[0], "rm"))
		return bad_usage(argv[0], "not a desired command (ls, set or rm)");
	if ((e = parse_opts(argc - 1, argv + 1, &o, 0)))
		return e;
	if (!strcmp(argv[0], "ls")) {
		Procctl__V1__ListDesiredConfigsRequest rq = PROCCTL__V1__LIST_DESIRED_CONFIGS_REQUEST__INIT;
		Procctl__V1__ListDesiredConfigsResponse *r;
		size_t i;
		if (!(r = (void *)call("/procctl.v1.NodeService/ListDesiredConfigs", &rq.base,
				       &procctl__v1__list_desired_configs_response__descriptor)))
			return 1;
		if (cli_json) {
			print_json(&r->base);
		} else {
			printf("%-8s %-16s %-3s %-8s %-36s %-12s %-8s %-16s %7s %8s %7s %10s %9s\n", "REVISION", "CONSUMER",
			       "VER", "PID", "POD", "CONTAINER", "BYTES", "SOURCE", "APPLIED", "REJECTED", "PENDING", "SUPERSEDED",
			       "NOT_OWNED");
			for (i = 0; i < r->n_configs; i++) {
				const Procctl__V1__DesiredConfig *d = r->configs[i];
				const Procctl__V1__Selector *s = d->selector;
				const Procctl__V1__DesiredRollout *ro = d->rollout;
				char pid[16] = "-";
				if (s && s->pid)
					snprintf(pid, sizeof pid, "%d", s->pid);
				printf("%-8llu %-16s %-3u %-8s %-36s %-12.12s %-8zu %-16s %7u %8u %7u %10u %9u\n",
				       (unsigned long long)d->revision, s ? s->consumer : "", s ? s->schema_version : 0, pid,
				       s && s->pod_uid[0] ? s->pod_uid : "-", s && s->container_id[0] ? s->container_id : "-",
				       d->payload.len, d->source[0] ? d->source : "api", ro ? ro->applied : 0,
				       ro ? ro->rejected : 0, ro ? ro->pending : 0, ro ? ro->superseded : 0,
				       ro ? ro->not_owned : 0);
			}
		}
		protobuf_c_message_free_unpacked(&r->base, NULL);
		return 0;
	}
	if ((e = need_selector(&o)))
		return e;
	if (!strcmp(argv[0], "set")) {
		Procctl__V1__SetDesiredConfigRequest rq = PROCCTL__V1__SET_DESIRED_CONFIG_REQUEST__INIT;
		Procctl__V1__DesiredConfig d = PROCCTL__V1__DESIRED_CONFIG__INIT;
		Procctl__V1__SetDesiredConfigResponse *r;
		if ((e = wait_of(&o, &rq.wait_ms)) || (e = read_data(&o, &d.payload)))
			return e;
		d.selector = &o.sel;
		rq.config = &d;
		r = (void *)call("/procctl.v1.NodeService/SetDesiredConfig", &rq.base,
				 &procctl__v1__set_desired_config_response__descriptor);
		free(d.payload.data);
		if (!r)
			return 1;
		if (!cli_json)
			printf("revision %llu\n", (unsigned long long)(r->config ? r->config->revision : 0));
		e = r->n_results ? results(r->results, r->n_results, o.wait) : 0;
		if (cli_json)
			print_json(&r->base);
		if (!r->n_results)
			fprintf(cli_json ? stderr : stdout,
				"no attached process matches %s now: the config applies to those that attach later\n",
				selector_words(&o));
		protobuf_c_message_free_unpacked(&r->base, NULL);
		return e;
	}
	return desired_rm(&o);
}

int cmd_health(void)
{
	Grpc__Health__V1__HealthCheckRequest rq = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
	Grpc__Health__V1__HealthCheckResponse *r;
	int ok;
	if (!(r = (void *)call("/grpc.health.v1.Health/Check", &rq.base, &grpc__health__v1__health_check_response__descriptor)))
		return 1;
	ok = r->status == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
	if (cli_json)
		print_json(&r->base);
	else
		printf("%s\n", short_enum(&grpc__health__v1__health_check_response__serving_status__descriptor, r->status, ""));
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return ok ? 0 : 1;
}
