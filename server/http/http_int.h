/* SPDX-License-Identifier: Apache-2.0 */
/* http_int.h - what http.c (requests, routing, the thread) and
 * httpconns.c (each connection's wait for its request, the cuts, this
 * side's metrics) share. Only the HTTP thread touches a connection. */
#ifndef PROCCTL_NODE_HTTP_INT_H
#define PROCCTL_NODE_HTTP_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "http.h"
#include "httpbody.h" /* HTTP_KEY_MAX */

/* One connection, from its accept to its close (libmicrohttpd's socket
 * context). Only the HTTP thread touches it. */
struct hconn {
	struct hconn *prev, *next; /* on httpsrv.waiting while its request has not all arrived; else NULL */
	struct MHD_Connection *conn;
	int64_t since_ns; /* waiting since: its accept, or its previous answer */
};

enum { HTTP_CUT_LATE, HTTP_CUT_EVICTED, HTTP_CUT_N };

struct httpsrv {
	const struct node_cfg *cfg;
	struct node *node;
	struct MHD_Daemon *d;
	pthread_t thread; /* procctl-http: runs d */
	int wake;         /* eventfd: a resumed connection, or httpsrv_stop, for the thread */
	int stopping;     /* atomic; set by httpsrv_stop before it wakes the thread */
	struct hconn waiting; /* the list's head: connections whose request has not all arrived, oldest first */
	size_t conns;         /* atomic; open connections, written by the HTTP thread */
	unsigned max_conns;   /* HTTP_MAX_CONNECTIONS, or a quarter of the descriptors fdlimit.h leaves them */
	uint64_t cut[HTTP_CUT_N]; /* atomic; connections closed before their request arrived, by why */
	int loopback; /* the listener is on a loopback address */
	char key[HTTP_KEY_MAX + 2]; /* http_api_key_file's key; "" : the JSON views are off */
	size_t keylen;
	struct metrics_source more[HTTP_MAX_SOURCES];
	size_t nmore;
	struct http_liveness live;
	uint64_t responses[600]; /* atomic; by HTTP status, 100 .. 599 */
	size_t body_bytes;       /* atomic; held by the writes' bodies, written by libmicrohttpd's thread */
};

/* c's request has all arrived: off the waiting list. */
void hconn_wait_end(struct hconn *c);
/* c waits for its next request from now (last on h's list). */
void hconn_wait_start(struct httpsrv *h, struct hconn *c);
/* libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION (cls: h): a connection
 * accepted, tracked (past the spare room the longest waiting is evicted),
 * or closed. */
void hconn_notify(void *cls, struct MHD_Connection *conn, void **ctx, enum MHD_ConnectionNotificationCode code);
/* Cut each connection whose request has not all arrived within
 * HTTP_REQUEST_S: the milliseconds until the next is due; -1: none waits. */
int hconn_cut_late(struct httpsrv *h);

struct prom;
/* This side's own families of /metrics. */
void httpsrv_metrics(const struct httpsrv *h, struct prom *p);

#endif
