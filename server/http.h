/* SPDX-License-Identifier: Apache-2.0 */
/* http.h - procctl-node's HTTP side (libmicrohttpd + jansson): /healthz,
 * /readyz, Prometheus /metrics, JSON views of what the gRPC API returns
 * (/v1/processes, /v1/processes/{pid}, /v1/processes/{pid}/state,
 * /v1/arbiters, /v1/arbiters/{kind}) and, when http_writes allows it,
 * POST /v1/processes/{pid}/config. One internal epoll thread; requests
 * that need the loop are suspended until it answers, so a slow or idle
 * client holds neither the loop nor the gRPC service. */
#ifndef PROCCTL_NODE_HTTP_H
#define PROCCTL_NODE_HTTP_H

#include <stddef.h>

#include "config.h"
#include "node.h"

#define HTTP_MAX_CONNECTIONS 2048
#define HTTP_MAX_PER_IP 1100
#define HTTP_TIMEOUT_S 15       /* an idle connection is closed after this */
#define HTTP_MAX_BODY (2u << 20) /* a 1 MiB payload, base64 and JSON around it */

struct httpsrv;

/* Listen on cfg->http_listen (HOST:PORT) and serve for n. 0, or -errno
 * and a message in err. */
int httpsrv_start(const struct node_cfg *cfg, struct node *n, struct httpsrv **out, char *err, size_t errlen);
/* After node_run returned (every suspended request was answered): stop
 * and free. */
void httpsrv_stop(struct httpsrv *h);

#endif
