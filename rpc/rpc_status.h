/* SPDX-License-Identifier: Apache-2.0 */
/* rpc_status.h - gRPC status codes by name, and the HTTP status each is
 * answered with on procctl-node's HTTP side: what the daemon and its
 * clients share without gRPC's headers. */
#ifndef PROCCTL_RPC_STATUS_H
#define PROCCTL_RPC_STATUS_H

/* The name of a gRPC status code (the protocol's numbers, 0 .. 16):
 * "NOT_FOUND"; "UNKNOWN" past them. */
const char *rpc_status_name(unsigned code);

/* The HTTP status procctl-node's HTTP views answer a gRPC status with. */
unsigned rpc_status_http(unsigned code);

#endif
