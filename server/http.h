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
#include <stdio.h>

#include "config.h"
#include "node.h"

#define HTTP_MAX_CONNECTIONS 2048
#define HTTP_MAX_PER_IP 1100
#define HTTP_TIMEOUT_S 15       /* an idle connection is closed after this */
#define HTTP_MAX_BODY (2u << 20) /* a 1 MiB payload, base64 and JSON around it */
#define HTTP_MAX_BODIES (16u << 20) /* all requests' bodies held at once */
#define HTTP_MAX_SOURCES 4      /* metrics sources besides the loop */

struct httpsrv;

/* More of /metrics: a source's exposition lines, written to f from any
 * thread. */
struct metrics_source {
	void (*write)(FILE *f, void *arg);
	void *arg;
};

/* Listen on cfg->http_listen (HOST:PORT) and serve for n. /metrics is the
 * loop's exposition, then this side's own (responses by status), then
 * each of more[0 .. nmore) (at most HTTP_MAX_SOURCES; the array is
 * copied). 0, or -errno and a message in err. */
int httpsrv_start(const struct node_cfg *cfg, struct node *n, const struct metrics_source *more, size_t nmore,
		  struct httpsrv **out, char *err, size_t errlen);
/* After node_run returned (every suspended request was answered): stop
 * and free. */
void httpsrv_stop(struct httpsrv *h);

#endif
