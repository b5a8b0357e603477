/* SPDX-License-Identifier: Apache-2.0 */
/* http.h - procctl-node's HTTP side (libmicrohttpd + jansson): a landing
 * page at /, /healthz, /readyz, Prometheus /metrics, JSON views of what the gRPC API returns
 * (/v1/processes, /v1/processes/{pid}, /v1/processes/{pid}/state,
 * /v1/arbiters, /v1/arbiters/{kind}) and, when http_writes allows it,
 * POST /v1/processes/{pid}/config. One thread of its own (procctl-http)
 * runs libmicrohttpd's epoll; requests that need the loop are suspended
 * until it answers, so a slow or idle client holds neither the loop nor
 * the gRPC service. A request must arrive whole within HTTP_REQUEST_S,
 * and past HTTP_MAX_CONNECTIONS - HTTP_SPARE_CONNECTIONS open each new
 * connection closes the one that has waited longest for its request:
 * clients that trickle bytes (slowloris) never keep a probe out. Under a
 * low descriptor limit the most is a quarter of the room fdlimit.h leaves
 * network connections (at least 2 * HTTP_SPARE_CONNECTIONS). */
#ifndef PROCCTL_NODE_HTTP_H
#define PROCCTL_NODE_HTTP_H

#include <stddef.h>
#include <stdio.h>

#include "config/config.h"
#include "node/node.h"

#define HTTP_MAX_CONNECTIONS 2048
#define HTTP_SPARE_CONNECTIONS 32 /* room for newcomers while the connections they evict close */
#define HTTP_MAX_PER_IP 1100
#define HTTP_TIMEOUT_S 15       /* a connection idle this long once its request arrived (its answer unread) is closed */
#define HTTP_REQUEST_S 10       /* a request's line, headers and body arrive within this, counted from the
				 * connection's accept or its previous answer, however they trickle */
#define HTTP_CONN_MEMORY (16u << 10) /* a connection's buffers (libmicrohttpd's 32 KiB halved): headers
				      * up to about 15 KiB; all connections' in 32 MiB */
#define HTTP_MAX_BODY (2u << 20) /* a 1 MiB payload, base64 and JSON around it */
#define HTTP_MAX_BODIES (16u << 20) /* all requests' bodies held at once */
#define HTTP_MAX_SOURCES 4      /* metrics sources besides the loop */

struct httpsrv;

struct prom;

/* More of /metrics: a source's families, written to p on the HTTP
 * thread (the loop's part is done by then). */
struct metrics_source {
	void (*write)(struct prom *p, void *arg);
	void *arg;
};

/* The gRPC TCP listeners' connections, as /healthz reports them. */
struct http_tcp_state {
	uint32_t open, max;        /* connections, and grpc_max_connections */
	uint32_t pending, pending_max; /* ... of them with no call yet, and their bound */
	uint64_t refused, evicted; /* closed as they came (any limit); pending ones shut down for a slot */
};

/* What /healthz asks: 1 alive, or 0 and why (a sentence) in why; and,
 * with tcp set, the TCP listeners' state: 1, or 0 when there are none.
 * Called on the HTTP thread. */
struct http_liveness {
	int (*alive)(void *arg, char *why, size_t whylen);
	void *arg;
	int (*tcp)(void *arg, struct http_tcp_state *st);
	void *tcp_arg;
};

/* Listen on cfg->http_listen (HOST:PORT) and serve for n. /metrics is the
 * loop's exposition, then this side's own (responses by status), then
 * each of more[0 .. nmore) (at most HTTP_MAX_SOURCES; the array is
 * copied); /healthz is live's answer (copied; NULL or no function: always
 * alive). 0, or -errno and a message in err. */
int httpsrv_start(const struct node_cfg *cfg, struct node *n, const struct metrics_source *more, size_t nmore,
		  const struct http_liveness *live, struct httpsrv **out, char *err, size_t errlen);
/* After node_run returned (every suspended request was answered): stop
 * and free. */
void httpsrv_stop(struct httpsrv *h);

#endif
