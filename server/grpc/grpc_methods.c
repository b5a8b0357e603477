/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_methods.c - the methods procctl-node serves (grpc_int.h's
 * methods[]): each one's path, its kind of stream, who answers it (the
 * loop, health, reflection), its request's type, and whether it changes
 * anything. Data only: the server registers them (grpc_server.c), a call
 * is counted by its method (grpc_call.c), a request is taken for one
 * (grpc_request.c). */
#include "grpc_int.h"

#include "grpc/health/v1/health.pb-c.h"
#include "procctl/v1/node.pb-c.h"

#define NODE_M(name, k, nm, req, mut) {"/procctl.v1.NodeService/" name, k, H_NODE, nm, &req, mut}
const struct method methods[] = {
	NODE_M("ListProcesses", UNARY, NODE_LIST_PROCESSES, procctl__v1__list_processes_request__descriptor, 0),
	NODE_M("GetProcess", UNARY, NODE_GET_PROCESS, procctl__v1__get_process_request__descriptor, 0),
	NODE_M("WatchEvents", SERVER_STREAM, NODE_WATCH_EVENTS, procctl__v1__watch_events_request__descriptor, 0),
	NODE_M("Publish", UNARY, NODE_PUBLISH, procctl__v1__publish_request__descriptor, 1),
	NODE_M("Clear", UNARY, NODE_CLEAR, procctl__v1__clear_request__descriptor, 1),
	NODE_M("WaitAck", UNARY, NODE_WAIT_ACK, procctl__v1__wait_ack_request__descriptor, 0),
	NODE_M("ReadState", UNARY, NODE_READ_STATE, procctl__v1__read_state_request__descriptor, 0),
	NODE_M("ListArbiters", UNARY, NODE_LIST_ARBITERS, procctl__v1__list_arbiters_request__descriptor, 0),
	NODE_M("GetArbiter", UNARY, NODE_GET_ARBITER, procctl__v1__get_arbiter_request__descriptor, 0),
	NODE_M("SetDesiredConfig", UNARY, NODE_SET_DESIRED, procctl__v1__set_desired_config_request__descriptor, 1),
	NODE_M("DeleteDesiredConfig", UNARY, NODE_DELETE_DESIRED, procctl__v1__delete_desired_config_request__descriptor, 1),
	NODE_M("ListDesiredConfigs", UNARY, NODE_LIST_DESIRED, procctl__v1__list_desired_configs_request__descriptor, 0),
	{"/grpc.health.v1.Health/Check", UNARY, H_HEALTH_CHECK, 0, &grpc__health__v1__health_check_request__descriptor, 0},
	{"/grpc.health.v1.Health/Watch", SERVER_STREAM, H_HEALTH_WATCH, 0,
	 &grpc__health__v1__health_check_request__descriptor, 0},
	{"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", BIDI, H_REFLECT, 0, NULL, 0},
	{"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", BIDI, H_REFLECT, 0, NULL, 0},
};
_Static_assert(sizeof methods / sizeof methods[0] == NMETHODS, "NMETHODS is methods[]'s size");
