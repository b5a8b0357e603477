/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_server.h - procctl-node's gRPC side, on the gRPC C core: the
 * listeners, one completion-queue thread, procctl.v1.NodeService (decoded
 * here, served by the loop through node_submit), grpc.health.v1, server
 * reflection v1 and v1alpha, and UNIMPLEMENTED for every other method.
 * Everything of gRPC stays in grpc_*.c (grpc_int.h between them). */
#ifndef PROCCTL_NODE_GRPC_SERVER_H
#define PROCCTL_NODE_GRPC_SERVER_H

#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "config/config.h"
#include "node/events.h"
#include "node/node.h"

struct grpc_srv;

/* Bind every listener of cfg (a Unix socket's directory is made, a stale
 * socket replaced only after connect() to it failed, the socket chmod
 * 0660) and start serving for n. 0, or -errno and a message in err;
 * nothing is left bound on failure. */
int grpcsrv_start(const struct node_cfg *cfg, struct node *n, struct grpc_srv **out, char *err, size_t errlen);
/* End every stream with UNAVAILABLE, stop taking calls, wait up to
 * grace_ms for the calls in flight, cancel the rest; unlink the Unix
 * sockets; free. Call after node_run returned. */
void grpcsrv_stop(struct grpc_srv *s, unsigned grace_ms);

struct prom;

/* Its Prometheus metrics (calls by method and code, streams open), for
 * the loop's /metrics. Any thread. */
void grpcsrv_metrics(struct grpc_srv *s, struct prom *p);

struct conns_tcp;
/* Its TCP listeners' connections (conns_tcp_state): 1, or 0 when it has
 * none. Any thread. */
int grpcsrv_tcp_state(struct grpc_srv *s, struct conns_tcp *out);

/* From the loop: wake the watchers (events were appended, or readiness
 * changed). */
void grpcsrv_kick(struct grpc_srv *s);

#endif
