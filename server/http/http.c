/* SPDX-License-Identifier: Apache-2.0 */
/* http.c - procctl-node's HTTP side (http.h).
 *
 * libmicrohttpd runs on a thread of ours (procctl-http), on its epoll
 * descriptor. Its own thread cannot be told to close a connection, and
 * its idle timeout counts from a client's last byte: clients that
 * trickle a byte every few seconds (slowloris) would hold every
 * connection and keep the kubelet's probes out. This thread closes
 * (shuts down the socket of) each connection whose request has not all
 * arrived within HTTP_REQUEST_S and, for each newcomer past
 * HTTP_MAX_CONNECTIONS - HTTP_SPARE_CONNECTIONS open, the one that has
 * waited longest for its request: a probe, whole in its first packet, is
 * read long before 2,000 newer connections come after it.
 *
 * A request is read whole (a write's body kept, bounded by HTTP_MAX_BODY
 * and HTTP_MAX_BODIES; any other body dropped as it comes), routed, and
 * either answered at once (/healthz, /readyz, errors) or handed to the
 * loop as a node_job while its connection is suspended; the loop's reply
 * renders the answer (a gRPC response through pbjson, or the metrics
 * text) and resumes it. Errors are {"error": ..., "code": ...} with the
 * HTTP status of the gRPC code. */
#include "http.h"
#include "http_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "sys/fdlimit.h"
#include "httpbody.h"
#include "httpindex.h"
#include "sys/log.h"
#include "pbjson.h"
#include "sys/prom.h"
#include "rpc_status.h"
#include "procctl/v1/node.pb-c.h"

/* One request, from its first callback to its completion. */
struct hreq {
	struct httpsrv *h;
	struct MHD_Connection *conn;
	struct hconn *c; /* its connection's */
	char *body;
	size_t len, cap; /* cap: body's size, counted in body_bytes */
	int keep_body; /* a write that may be served: its body is kept; any other is dropped unread */
	int too_big;   /* 1: over HTTP_MAX_BODY; 2: over HTTP_MAX_BODIES, all requests' together; 3: no memory */
	int submitted;
	/* the answer, set by the loop's reply before it resumes the connection;
	 * done is stored with release and loaded with acquire, so the answer is
	 * seen whole in a way ThreadSanitizer can follow (libmicrohttpd's own
	 * ordering is invisible to it) */
	int done;
	unsigned status;
	char *out;
	size_t out_len;
	const char *type;
	struct prom *metrics; /* /metrics: the loop's part, for this thread to finish (answer_metrics) */
};

/* Set r's answer to a JSON value (taken) with status. */
static void answer_json(struct hreq *r, unsigned status, json_t *j)
{
	r->out = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!r->out) {
		static const char oom[] = "{\"error\":\"out of memory\",\"code\":\"RESOURCE_EXHAUSTED\"}";
		r->out = strdup(oom);
		status = 500;
	}
	r->out_len = r->out ? strlen(r->out) : 0;
	r->status = status;
	r->type = "application/json";
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

static void answer_error(struct hreq *r, enum node_code code, const char *msg)
{
	answer_json(r, rpc_status_http(code), json_pack("{s:s, s:s}", "error", msg ? msg : rpc_status_name(code), "code", rpc_status_name(code)));
}

/* ---- the loop's answers -------------------------------------------------- */

/* /metrics, on the HTTP thread: the loop's part (r->metrics, taken), this
 * side's, and every other source's, which cost the loop nothing. A
 * mistake in any part is a 500 and a log line: an exposition a scraper
 * would refuse is never served. */
static void answer_metrics(struct hreq *r)
{
	const struct httpsrv *h = r->h;
	struct prom *p = r->metrics;
	char why[200];
	size_t i;
	int err;
	r->metrics = NULL;
	httpsrv_metrics(h, p);
	for (i = 0; i < h->nmore; i++)
		h->more[i].write(p, h->more[i].arg);
	if ((err = prom_finish(p, &r->out, &r->out_len, why, sizeof why)) < 0) {
		node_log_limited(PROCCTL_LOG_ERROR, "metrics_failed", "error=\"%s\"", why);
		answer_error(r, err == -ENOMEM ? NODE_RESOURCE_EXHAUSTED : NODE_INTERNAL, why);
		return;
	}
	r->status = 200;
	r->type = "text/plain; version=0.0.4; charset=utf-8";
}

/* Wake the HTTP thread: libmicrohttpd, run by a thread of ours, wakes
 * nobody when a connection is resumed or the daemon stops. */
static void wake(struct httpsrv *h)
{
	uint64_t one = 1;
	/* an eventfd takes this 1 (it refuses only a counter past 2^64 - 2) */
	while (write(h->wake, &one, sizeof one) < 0 && errno == EINTR)
		;
}

/* Resume r's connection, to send its answer. */
static void resume(struct hreq *r)
{
	struct httpsrv *h = r->h; /* r may be freed once resumed */
	MHD_resume_connection(r->conn);
	wake(h);
}

static void on_reply(struct node_job *job, enum node_code code, const char *msg, const ProtobufCMessage *resp)
{
	struct hreq *r = job->ctx;
	if (code != NODE_OK) {
		answer_error(r, code, msg);
	} else if (job->method == NODE_METRICS) {
		r->metrics = job->metrics; /* finished on the HTTP thread */
		job->metrics = NULL;
		__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	} else {
		json_t *j = pbjson_from(resp);
		if (j)
			answer_json(r, 200, j);
		else
			answer_error(r, NODE_INTERNAL, "the response does not convert to JSON");
	}
	resume(r);
}

static void on_watch(struct node_job *job, struct node_packed *first, uint64_t cursor, const struct selector *filter)
{
	(void)first, (void)cursor, (void)filter;
	on_reply(job, NODE_UNIMPLEMENTED, "no streams over HTTP", NULL);
}

static const struct node_reply_ops http_ops = {on_reply, on_watch};

/* Hand a request to the loop; the connection waits suspended. */
static enum MHD_Result submit(struct hreq *r, enum node_method m, ProtobufCMessage *req, int64_t timeout_ms)
{
	struct node_job *job = calloc(1, sizeof *job);
	if (!job) {
		if (req)
			protobuf_c_message_free_unpacked(req, NULL);
		answer_error(r, NODE_RESOURCE_EXHAUSTED, "out of memory");
		return MHD_YES;
	}
	if (m == NODE_METRICS && !(job->metrics = prom_new())) {
		free(job);
		answer_error(r, NODE_RESOURCE_EXHAUSTED, "out of memory");
		return MHD_YES;
	}
	job->method = m;
	job->req = req;
	job->deadline_ns = procctl_now_ns() + timeout_ms * 1000000ll;
	job->ops = &http_ops;
	job->ctx = r;
	snprintf(job->peer, sizeof job->peer, "http"); /* whoever holds the key: one caller */
	r->submitted = 1;
	MHD_suspend_connection(r->conn);
	if (node_submit(r->h->node, job) < 0) {
		prom_free(job->metrics);
		free(job);
		if (req)
			protobuf_c_message_free_unpacked(req, NULL);
		answer_error(r, NODE_UNAVAILABLE, "procctl-node is shutting down");
		resume(r);
	}
	return MHD_YES;
}

/* ---- requests -------------------------------------------------------------- */

/* A heap copy of m, made the way the loop frees requests (unpacked,
 * with the system allocator); NULL when out of memory. */
static ProtobufCMessage *copy_msg(const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(n ? n : 1);
	ProtobufCMessage *c = NULL;
	if (buf) {
		protobuf_c_message_pack(m, buf);
		c = protobuf_c_message_unpack(m->descriptor, NULL, n, buf);
		free(buf);
	}
	return c;
}

/* Hand a copy of m to the loop as a job of method m. */
static enum MHD_Result submit_msg(struct hreq *r, enum node_method method, const ProtobufCMessage *m, int64_t timeout_ms)
{
	ProtobufCMessage *req = copy_msg(m);
	if (!req)
		return answer_error(r, NODE_RESOURCE_EXHAUSTED, "out of memory"), MHD_YES;
	return submit(r, method, req, timeout_ms);
}

/* POST /v1/processes/{pid}/config: a Publish to pid. Body: JSON
 * {"payload": base64, "waitMs": N} (application/json), or the payload's
 * raw bytes (any other type; wait_ms from the query). */
static enum MHD_Result post_config(struct hreq *r, int32_t pid)
{
	Procctl__V1__PublishRequest rq = PROCCTL__V1__PUBLISH_REQUEST__INIT;
	Procctl__V1__Selector sel = PROCCTL__V1__SELECTOR__INIT;
	const char *type = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *wait = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "wait_ms");
	ProtobufCMessage *req;
	uint8_t *payload = NULL;
	size_t len = 0;
	uint32_t wait_ms = 0;
	char why[200];
	int e;

	if (!r->h->cfg->http_writes)
		return answer_error(r, NODE_PERMISSION_DENIED, "mutating HTTP is off (http_writes)"), MHD_YES;
	e = http_parse_config(type, r->body, r->len, wait, &payload, &len, &wait_ms, why, sizeof why);
	if (e < 0)
		return answer_error(r, e == -ENOMEM ? NODE_RESOURCE_EXHAUSTED : NODE_INVALID_ARGUMENT, why), MHD_YES;
	sel.pid = pid;
	rq.selector = &sel;
	rq.payload.data = payload;
	rq.payload.len = len;
	rq.wait_ms = wait_ms;
	req = copy_msg(&rq.base);
	free(payload);
	if (!req)
		return answer_error(r, NODE_RESOURCE_EXHAUSTED, "out of memory"), MHD_YES;
	return submit(r, NODE_PUBLISH, req, (int64_t)wait_ms + 10000);
}

static enum MHD_Result not_allowed(struct hreq *r, const char *allow)
{
	answer_error(r, NODE_UNIMPLEMENTED, "method not allowed here");
	r->status = 405;
	r->type = allow; /* sent as Allow (below) */
	return MHD_YES;
}

/* libmicrohttpd's unescape callback, for the path and each argument. */
static size_t on_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return http_unescape(s);
}

/* 1 when r carries http_api_key_file's key. */
static int key_ok(const struct hreq *r)
{
	const struct httpsrv *h = r->h;
	return h->keylen && http_bearer_ok(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
								     MHD_HTTP_HEADER_AUTHORIZATION),
					   h->key, h->keylen);
}

/* The JSON views (/v1/...): served on a loopback listener (HTTP has no
 * mTLS) to a caller with the key; else r is answered and 0. */
static int views_allowed(struct hreq *r)
{
	const struct httpsrv *h = r->h;
	if (!h->loopback)
		answer_error(r, NODE_PERMISSION_DENIED, "the JSON views are served on a loopback listener only "
			     "(HTTP has no mTLS): use gRPC over mTLS");
	else if (!h->keylen)
		answer_error(r, NODE_PERMISSION_DENIED, "the JSON views are off (http_api_key_file)");
	else if (!key_ok(r))
		answer_error(r, NODE_UNAUTHENTICATED, "Authorization: Bearer KEY (http_api_key_file's) is needed");
	else
		return 1;
	return 0;
}

/* 1 when the request, from its headers alone, is a write that may be
 * served (POST .../config, writes on, loopback, the key): only its body
 * is kept. Any other body is read and dropped, never held: whoever
 * reaches the listener cannot make the daemon hold memory. */
static int body_wanted(const struct hreq *r, const char *url, const char *method)
{
	size_t n = strlen(url);
	return !strcmp(method, "POST") && !strncmp(url, "/v1/processes/", 14) && n > 21 &&
	       !strcmp(url + n - 7, "/config") && r->h->cfg->http_writes && r->h->loopback && key_ok(r);
}

/* Keep a write's body bytes, bounded by HTTP_MAX_BODY for one request and
 * HTTP_MAX_BODIES for all of them together, counted as the memory held:
 * the buffer doubles from a turn's size (a realloc each 16 KiB turn would
 * copy a 2 MiB body 128 times over), and its capacity is what counts. */
static void body_add(struct hreq *r, const char *data, size_t n)
{
	struct httpsrv *h = r->h;
	size_t held = __atomic_load_n(&h->body_bytes, __ATOMIC_RELAXED); /* only this thread writes it */
	size_t cap = r->cap ? r->cap : HTTP_CONN_MEMORY;
	char *b;
	if (r->too_big)
		return;
	while (cap < r->len + n && cap < HTTP_MAX_BODY)
		cap = cap * 2 < HTTP_MAX_BODY ? cap * 2 : HTTP_MAX_BODY;
	if (r->len + n > HTTP_MAX_BODY)
		r->too_big = 1;
	else if (cap > r->cap && held - r->cap + cap > HTTP_MAX_BODIES)
		r->too_big = 2;
	else if (cap > r->cap) {
		if ((b = realloc(r->body, cap))) {
			r->body = b;
			held += cap - r->cap;
			r->cap = cap;
		} else
			r->too_big = 3;
	}
	if (r->too_big) {
		__atomic_store_n(&h->body_bytes, held - r->cap, __ATOMIC_RELAXED);
		free(r->body);
		r->body = NULL;
		r->len = r->cap = 0;
		return;
	}
	memcpy(r->body + r->len, data, n);
	r->len += n;
	__atomic_store_n(&h->body_bytes, held, __ATOMIC_RELAXED);
}

/* GET /: the landing page (httpindex.c). */
static void answer_index(struct hreq *r)
{
	size_t len;
	char *page = http_index_page(r->h->loopback && r->h->keylen, &len);
	if (!page) {
		answer_error(r, NODE_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	r->out = page;
	r->out_len = len;
	r->status = 200;
	r->type = "text/html; charset=utf-8";
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

/* A request whose body was not kept whole: over 2 MiB, no memory, or
 * the bodies of all requests over 16 MiB. */
static enum MHD_Result route_too_big(struct hreq *r)
{
	if (r->too_big == 1) {
		answer_error(r, NODE_RESOURCE_EXHAUSTED, "request body over 2 MiB");
		r->status = 413;
		return MHD_YES;
	}
	if (r->too_big == 3)
		return answer_error(r, NODE_RESOURCE_EXHAUSTED, "out of memory"), MHD_YES;
	return answer_error(r, NODE_UNAVAILABLE, "other requests' bodies fill the HTTP side's 16 MiB: try again"),
	       MHD_YES;
}

/* GET /healthz: is the loop alive (http_liveness)? With the gRPC TCP
 * listeners' connections, when there are any: what their slots hold. */
static enum MHD_Result route_healthz(struct hreq *r, int get)
{
	struct http_tcp_state st;
	char why[200];
	int alive = !r->h->live.alive || r->h->live.alive(r->h->live.arg, why, sizeof why);
	json_t *o;
	if (!get)
		return not_allowed(r, "GET");
	o = alive ? json_pack("{s:s}", "status", "alive") : json_pack("{s:s, s:s}", "status", "unresponsive", "reason", why);
	if (o && r->h->live.tcp && r->h->live.tcp(r->h->live.tcp_arg, &st))
		json_object_set_new(o, "grpc_tcp",
				    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "connections", (json_int_t)st.open,
					      "max_connections", (json_int_t)st.max, "pending", (json_int_t)st.pending,
					      "max_pending", (json_int_t)st.pending_max, "refused", (json_int_t)st.refused,
					      "evicted", (json_int_t)st.evicted));
	answer_json(r, alive ? 200 : 503, o);
	return MHD_YES;
}

/* GET /readyz: does the node serve? */
static enum MHD_Result route_readyz(struct hreq *r, int get)
{
	int ready = node_serving(r->h->node);
	if (!get)
		return not_allowed(r, "GET");
	answer_json(r, ready ? 200 : 503, json_pack("{s:s}", "status", ready ? "ready" : "not ready"));
	return MHD_YES;
}

/* GET /v1/processes: ListProcesses, filtered by the query's arguments. */
static enum MHD_Result route_list_processes(struct hreq *r, int get)
{
	Procctl__V1__ListProcessesRequest rq = PROCCTL__V1__LIST_PROCESSES_REQUEST__INIT;
	Procctl__V1__Selector f = PROCCTL__V1__SELECTOR__INIT;
	const char *consumer = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "consumer");
	const char *pod = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "pod_uid");
	const char *ctr = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "container_id");
	if (!get)
		return not_allowed(r, "GET");
	f.consumer = (char *)(consumer ? consumer : "");
	f.pod_uid = (char *)(pod ? pod : "");
	f.container_id = (char *)(ctr ? ctr : "");
	rq.filter = &f;
	return submit_msg(r, NODE_LIST_PROCESSES, &rq.base, 10000);
}

/* /v1/processes/PID[/state|/config]: GetProcess, ReadState, Publish. */
static enum MHD_Result route_process(struct hreq *r, const char *url, int get, int post)
{
	const char *p = url + 14, *slash = strchr(p, '/');
	size_t plen = slash ? (size_t)(slash - p) : strlen(p);
	Procctl__V1__ProcessRef ref = PROCCTL__V1__PROCESS_REF__INIT;
	int32_t pid;
	if (http_parse_pid(p, plen, &pid) < 0)
		return answer_error(r, slash || plen ? NODE_INVALID_ARGUMENT : NODE_NOT_FOUND,
				    "not a pid (1 to 2147483647)"), MHD_YES;
	ref.pid = pid;
	if (!slash) {
		Procctl__V1__GetProcessRequest rq = PROCCTL__V1__GET_PROCESS_REQUEST__INIT;
		if (!get)
			return not_allowed(r, "GET");
		rq.process = &ref;
		return submit_msg(r, NODE_GET_PROCESS, &rq.base, 10000);
	}
	if (!strcmp(slash, "/state")) {
		Procctl__V1__ReadStateRequest rq = PROCCTL__V1__READ_STATE_REQUEST__INIT;
		if (!get)
			return not_allowed(r, "GET");
		rq.process = &ref;
		return submit_msg(r, NODE_READ_STATE, &rq.base, 10000);
	}
	if (!strcmp(slash, "/config"))
		return post ? post_config(r, pid) : not_allowed(r, "POST");
	answer_error(r, NODE_NOT_FOUND, "no such path");
	return MHD_YES;
}

/* Route a whole request. */
static enum MHD_Result route(struct hreq *r, const char *url, const char *method)
{
	int get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), post = !strcmp(method, "POST");
	size_t n = strlen(url);

	if (r->too_big)
		return route_too_big(r);
	if (!strcmp(url, "/"))
		return get ? (answer_index(r), MHD_YES) : not_allowed(r, "GET");
	if (!strcmp(url, "/healthz"))
		return route_healthz(r, get);
	if (!strcmp(url, "/readyz"))
		return route_readyz(r, get);
	if (!strcmp(url, "/metrics"))
		return get ? submit(r, NODE_METRICS, NULL, 10000) : not_allowed(r, "GET");
	if (!strncmp(url, "/v1/", 4) && !views_allowed(r))
		return MHD_YES;
	if (!strcmp(url, "/v1/processes"))
		return route_list_processes(r, get);
	if (!strncmp(url, "/v1/processes/", 14))
		return route_process(r, url, get, post);
	if (!strcmp(url, "/v1/arbiters")) {
		Procctl__V1__ListArbitersRequest rq = PROCCTL__V1__LIST_ARBITERS_REQUEST__INIT;
		if (!get)
			return not_allowed(r, "GET");
		return submit_msg(r, NODE_LIST_ARBITERS, &rq.base, 10000);
	}
	if (!strncmp(url, "/v1/arbiters/", 13) && n > 13 && !strchr(url + 13, '/')) {
		Procctl__V1__GetArbiterRequest rq = PROCCTL__V1__GET_ARBITER_REQUEST__INIT;
		if (!get)
			return not_allowed(r, "GET");
		rq.kind = (char *)(url + 13);
		return submit_msg(r, NODE_GET_ARBITER, &rq.base, 10000);
	}
	answer_error(r, NODE_NOT_FOUND, "no such path");
	return MHD_YES;
}

static enum MHD_Result send_answer(struct hreq *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	if (r->metrics)
		answer_metrics(r);
	resp = MHD_create_response_from_buffer(r->out_len, r->out ? r->out : (char *)"", MHD_RESPMEM_MUST_FREE);
	if (!resp)
		return MHD_NO;
	r->out = NULL; /* the response owns it */
	if (r->status == 405) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->type);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	} else {
		if (r->status == 401)
			MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"procctl-node\"");
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->type);
	}
	ret = MHD_queue_response(r->conn, r->status, resp);
	if (ret == MHD_YES && r->status >= 100 && r->status < 600)
		__atomic_add_fetch(&r->h->responses[r->status], 1, __ATOMIC_RELAXED);
	MHD_destroy_response(resp);
	return ret;
}

/* ---- libmicrohttpd's callbacks and thread ----------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct hreq *r = *con_cls;
	(void)version;
	if (!r) { /* the headers only: make the request's state */
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		if (!ci || !ci->socket_context || !(r = calloc(1, sizeof *r)))
			return MHD_NO; /* no memory (for it, or for its connection's tracking, then shut): closed */
		r->h = cls;
		r->conn = conn;
		r->c = ci->socket_context;
		r->keep_body = body_wanted(r, url, method);
		*con_cls = r;
		return MHD_YES;
	}
	if (__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
		return send_answer(r);
	if (r->submitted)
		return MHD_YES; /* resumed before the answer: cannot happen, wait */
	if (*upload_size) { /* body bytes: a write's kept, bounded; any other's dropped */
		if (r->keep_body)
			body_add(r, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	hconn_wait_end(r->c); /* it has all arrived */
	if (route(r, url, method) == MHD_NO)
		return MHD_NO;
	return __atomic_load_n(&r->done, __ATOMIC_ACQUIRE) ? send_answer(r) : MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode why)
{
	struct hreq *r = *con_cls;
	(void)cls, (void)conn;
	if (!r)
		return;
	if (why == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		hconn_wait_start(r->h, r->c); /* kept alive: its next request's time starts */
	__atomic_sub_fetch(&r->h->body_bytes, r->cap, __ATOMIC_RELAXED);
	free(r->body);
	free(r->out);
	prom_free(r->metrics);
	free(r);
	*con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[300], q[1300];
	size_t n;
	(void)cls;
	vsnprintf(msg, sizeof msg, fmt, ap);
	n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = 0;
	node_log_limited(PROCCTL_LOG_WARN, "http", "msg=\"%s\"", node_log_quote(q, sizeof q, msg)); /* a peer's doing, often */
}

/* libmicrohttpd's turns, then the late connections' cuts, until
 * httpsrv_stop says. Asleep while nothing happens and no request is on
 * its way. */
static void *http_thread(void *arg)
{
	struct httpsrv *h = arg;
	const union MHD_DaemonInfo *ep = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
	struct pollfd pf[2] = {{.fd = ep->epoll_fd, .events = POLLIN}, {.fd = h->wake, .events = POLLIN}};
	int ms = -1;
	pthread_setname_np(pthread_self(), "procctl-http");
	for (;;) {
		MHD_UNSIGNED_LONG_LONG t;
		uint64_t woken;
		if (MHD_get_timeout(h->d, &t) == MHD_YES && (ms < 0 || t < (MHD_UNSIGNED_LONG_LONG)ms))
			ms = t < INT_MAX ? (int)t : INT_MAX;
		if ((poll(pf, 2, ms) < 0 && errno != EINTR) ||
		    (pf[1].revents && read(h->wake, &woken, sizeof woken) < 0 && errno != EAGAIN)) {
			node_log(PROCCTL_LOG_ERROR, "http_failed", "error=\"%s\"", strerror(errno)); /* no memory */
			break;
		}
		if (__atomic_load_n(&h->stopping, __ATOMIC_ACQUIRE))
			break;
		MHD_run(h->d);
		ms = hconn_cut_late(h);
	}
	return NULL;
}

/* Run h->d on a thread of its own. 0, or -errno. */
static int serve(struct httpsrv *h)
{
	int r;
	if ((h->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		return -errno;
	if ((r = pthread_create(&h->thread, NULL, http_thread, h))) {
		close(h->wake);
		return -r;
	}
	return 0;
}

/* http_listen's HOST:PORT ([V6]:PORT; HOST empty: every address),
 * resolved in *ai. 0, or -EINVAL and a message. */
static int listen_addr(const struct node_cfg *cfg, struct addrinfo **ai, char *err, size_t errlen)
{
	struct addrinfo hints;
	char host[NODE_PATH_MAX], *colon;
	const char *port;
	int r;

	snprintf(host, sizeof host, "%s", cfg->http_listen);
	if (!(colon = strrchr(host, ':'))) {
		snprintf(err, errlen, "http_listen %s: not HOST:PORT", cfg->http_listen);
		return -EINVAL;
	}
	*colon = 0;
	port = colon + 1;
	if (host[0] == '[' && colon > host + 1 && colon[-1] == ']') { /* [::1]:PORT */
		colon[-1] = 0;
		memmove(host, host + 1, strlen(host));
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if ((r = getaddrinfo(host[0] ? host : NULL, port, &hints, ai)) != 0) {
		snprintf(err, errlen, "http_listen %s: %s", cfg->http_listen, gai_strerror(r));
		return -EINVAL;
	}
	return 0;
}

/* The server's state, its connections bounded by the descriptors the
 * daemon may open. NULL: out of memory. */
static struct httpsrv *http_new(const struct node_cfg *cfg, struct node *n, const struct metrics_source *more,
				size_t nmore, const struct http_liveness *live)
{
	struct httpsrv *h;
	if (!(h = calloc(1, sizeof *h)))
		return NULL;
	h->cfg = cfg;
	h->node = n;
	h->max_conns = (unsigned)(fd_budget()->room / 4);
	h->max_conns = h->max_conns > HTTP_MAX_CONNECTIONS	    ? HTTP_MAX_CONNECTIONS
		       : h->max_conns < 2 * HTTP_SPARE_CONNECTIONS ? 2 * HTTP_SPARE_CONNECTIONS
								   : h->max_conns;
	h->nmore = nmore < HTTP_MAX_SOURCES ? nmore : HTTP_MAX_SOURCES;
	memcpy(h->more, more, h->nmore * sizeof *more);
	if (live)
		h->live = *live;
	return h;
}

/* Who may see the JSON views: a loopback listener's callers with the
 * key, loaded now. 0, or -errno and a message. */
static int http_access(struct httpsrv *h, const struct addrinfo *ai, char *err, size_t errlen)
{
	const struct node_cfg *cfg = h->cfg;
	int r;
	if (ai->ai_family == AF_INET)
		h->loopback = (ntohl(((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr) >> 24) == 127;
	else if (ai->ai_family == AF_INET6)
		h->loopback = IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr);
	if ((cfg->http_writes || cfg->http_api_key_file[0]) && !h->loopback) {
		snprintf(err, errlen, "http_listen %s: the JSON views (http_api_key_file, http_writes) are served on "
			 "loopback only (HTTP has no mTLS): use gRPC over mTLS", cfg->http_listen);
		return -EINVAL;
	}
	if (cfg->http_api_key_file[0] &&
	    (r = http_key_load(cfg->http_api_key_file, h->key, sizeof h->key, &h->keylen, err, errlen)) < 0)
		return r;
	return 0;
}

/* libmicrohttpd's daemon for h on ai, its callbacks h's. NULL: it
 * cannot listen there. */
static struct MHD_Daemon *http_daemon(struct httpsrv *h, const struct addrinfo *ai)
{
	/* no MHD_USE_INTERNAL_POLLING_THREAD: http_thread runs it */
	return MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
					(ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				/* the logger first: libmicrohttpd warns when it is not */
				0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,
				MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_CONNECTION_LIMIT, h->max_conns,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)HTTP_MAX_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned)HTTP_TIMEOUT_S, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				MHD_OPTION_NOTIFY_CONNECTION, hconn_notify, h, MHD_OPTION_UNESCAPE_CALLBACK, on_unescape,
				NULL, MHD_OPTION_END);
}

int httpsrv_start(const struct node_cfg *cfg, struct node *n, const struct metrics_source *more, size_t nmore,
		  const struct http_liveness *live, struct httpsrv **out, char *err, size_t errlen)
{
	const union MHD_DaemonInfo *di;
	char bound[NODE_PATH_MAX + 8];
	struct httpsrv *h;
	struct addrinfo *ai = NULL;
	int r;

	if ((r = listen_addr(cfg, &ai, err, errlen)) < 0)
		return r;
	if (!(h = http_new(cfg, n, more, nmore, live))) {
		freeaddrinfo(ai);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if ((r = http_access(h, ai, err, errlen)) < 0) {
		freeaddrinfo(ai);
		free(h);
		return r;
	}
	h->waiting.prev = h->waiting.next = &h->waiting;
	h->d = http_daemon(h, ai);
	freeaddrinfo(ai);
	if (!h->d) {
		free(h);
		snprintf(err, errlen, "http_listen %s: cannot listen there (in use, or not an address)", cfg->http_listen);
		return -EADDRNOTAVAIL;
	}
	if ((r = serve(h)) < 0) {
		MHD_stop_daemon(h->d);
		free(h);
		snprintf(err, errlen, "http_listen %s: no thread to serve it: %s", cfg->http_listen, strerror(-r));
		return r;
	}
	di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT); /* PORT 0: the one picked */
	node_log(PROCCTL_LOG_INFO, "listening", "addr=http://%s writes=%s",
		 node_cfg_bound_addr(cfg->http_listen, di ? di->port : 0, bound, sizeof bound),
		 cfg->http_writes ? "on" : "off");
	*out = h;
	return 0;
}

void httpsrv_stop(struct httpsrv *h)
{
	if (!h)
		return;
	__atomic_store_n(&h->stopping, 1, __ATOMIC_RELEASE);
	wake(h);
	pthread_join(h->thread, NULL);
	close(h->wake);
	MHD_stop_daemon(h->d); /* on this thread: the HTTP thread's state is ours now */
	free(h);
}
