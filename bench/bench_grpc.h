/* SPDX-License-Identifier: Apache-2.0 */
/* bench_grpc.h - what the benchmarks that call procctl-node through the
 * gRPC C core share (link procctl-rpc-grpc): a deadline, the
 * grpc.health.v1 Check several figures are measured against, and how
 * many regions of a consumer the daemon lists. */
#ifndef PROCCTL_BENCH_GRPC_H
#define PROCCTL_BENCH_GRPC_H

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "grpc/health/v1/health.pb-c.h"
#include "pb_grpc.h"
#include "procctl/v1/node.pb-c.h"

#include <unistd.h>

/* The deadline s seconds from now. */
static inline gpr_timespec bench_in_s(int s)
{
	return gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_seconds(s, GPR_TIMESPAN));
}

/* One Check on ch, its completion plucked from cq (a queue for pluck),
 * within 10 s: 1 when the answer is SERVING. */
static inline int bench_health_check(grpc_channel *ch, grpc_completion_queue *cq)
{
	Grpc__Health__V1__HealthCheckRequest rq = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
	Grpc__Health__V1__HealthCheckResponse *r = NULL;
	int ok;
	pb_unary(ch, cq, "/grpc.health.v1.Health/Check", bench_in_s(10), &rq.base,
		 &grpc__health__v1__health_check_response__descriptor, (ProtobufCMessage **)&r, NULL);
	ok = r && r->status == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
	if (r)
		protobuf_c_message_free_unpacked(&r->base, NULL);
	return ok;
}

/* The regions of consumer the daemon lists (ListProcesses, within 30 s),
 * or -1. */
static inline long bench_listed(grpc_channel *ch, grpc_completion_queue *cq, const char *consumer)
{
	Procctl__V1__ListProcessesRequest rq = PROCCTL__V1__LIST_PROCESSES_REQUEST__INIT;
	Procctl__V1__Selector sel = PROCCTL__V1__SELECTOR__INIT;
	Procctl__V1__ListProcessesResponse *r = NULL;
	long n;
	sel.consumer = (char *)consumer;
	rq.filter = &sel;
	pb_unary(ch, cq, "/procctl.v1.NodeService/ListProcesses", bench_in_s(30), &rq.base,
		 &procctl__v1__list_processes_response__descriptor, (ProtobufCMessage **)&r, NULL);
	n = r ? (long)r->n_processes : -1;
	if (r)
		protobuf_c_message_free_unpacked(&r->base, NULL);
	return n;
}

/* A channel to the daemon at target (insecure: a Unix socket) and a queue
 * for pluck, once it answers a ListProcesses of consumer (10 s at most):
 * 0, or -1 (they are made either way). */
static inline int bench_node_connect(const char *target, const char *consumer, grpc_channel **ch,
				     grpc_completion_queue **cq)
{
	grpc_channel_credentials *cr = grpc_insecure_credentials_create();
	int i;
	*ch = grpc_channel_create(target, cr, NULL);
	grpc_channel_credentials_release(cr);
	*cq = grpc_completion_queue_create_for_pluck(NULL);
	for (i = 0; i < 1000 && bench_listed(*ch, *cq, consumer) < 0; i++)
		usleep(10000);
	return i == 1000 ? -1 : 0;
}

#endif
