/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_request.c - new gRPC calls (grpc_int.h): request slots posted per
 * method, the request decoded and checked (may this peer write?), then
 * handed to the loop (NodeService), answered here (health), or started
 * (reflection); UNIMPLEMENTED for any other method. */
#include "grpc_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "grpc/health/v1/health.pb-c.h"
#include "pb_grpc.h"

/* A gRPC deadline on our CLOCK_MONOTONIC (gRPC's own monotonic clock
 * has another origin). */
static int64_t deadline_ns(gpr_timespec d)
{
	gpr_timespec rem;
	if (!gpr_time_cmp(d, gpr_inf_future(d.clock_type)))
		return INT64_MAX;
	d = gpr_convert_clock_type(d, GPR_CLOCK_MONOTONIC);
	rem = gpr_time_sub(d, gpr_now(GPR_CLOCK_MONOTONIC));
	if (rem.tv_sec < 0)
		return procctl_now_ns();
	if (rem.tv_sec > 1000000000)
		return INT64_MAX;
	return procctl_now_ns() + rem.tv_sec * 1000000000ll + rem.tv_nsec;
}

/* ---- new calls ---------------------------------------------------------- */

/* Post RECV_CLOSE_ON_SERVER now, so that a client that cancels or goes
 * away is seen at once (fn runs then, or when the call ends). */
static void watch_close(struct rpc *c, void (*fn)(struct rpc *c, int ok))
{
	grpc_op op;
	memset(&op, 0, sizeof op);
	op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	op.data.recv_close_on_server.cancelled = &c->client_cancelled;
	c->close_posted = 1;
	rpc_arm(&c->t_close, fn, c);
	rpc_batch(c, &op, 1, &c->t_close);
}

static void on_cancel_reply(struct node_job *job, enum node_code code, const char *msg, const ProtobufCMessage *resp)
{
	(void)job, (void)code, (void)msg, (void)resp;
}

static const struct node_reply_ops cancel_ops = {on_cancel_reply, NULL};

/* A NodeService call's close: when the client cancelled it or went away
 * while the loop holds it (a wait for acks), the loop lets it go now. */
static void on_node_closed(struct rpc *c, int ok)
{
	struct node_job *job;
	conns_call_closed(c->s->conns, &c->ticket);
	if (ok && c->client_cancelled && (job = calloc(1, sizeof *job))) {
		job->method = NODE_CANCEL;
		job->cancel_id = c->job_id;
		job->deadline_ns = INT64_MAX;
		snprintf(job->peer, sizeof job->peer, "%s", c->ident); /* behind the call's own, in its peer's turn */
		job->ops = &cancel_ops;
		if (node_submit(c->s->node, job) < 0)
			free(job);
	}
	rpc_unref(c);
}

/* c's caller's streams open, besides c (root's on the Unix socket are
 * not counted). Under s->wmu. */
static uint32_t streams_of(const struct rpc *c)
{
	const struct rpc *x;
	uint32_t n = 0;
	if (c->klass == NODE_PEER_ROOT)
		return 0;
	for (x = c->s->streams; x; x = x->snext)
		n += x != c && !strcmp(x->ident, c->ident);
	return n;
}

/* A stream's start: its close watched at once, and no more than
 * max_watchers open, max_watchers_per_peer of its caller's. 0, or -1 when
 * c was ended (and its reference dropped). */
static int stream_start(struct rpc *c)
{
	struct grpc_srv *s = c->s;
	int live = __atomic_add_fetch(&s->nwatch, 1, __ATOMIC_RELAXED);
	const char *limit = (uint32_t)live > s->cfg->max_watchers ? "max_watchers" : NULL;
	char msg[96];
	c->counted_stream = 1;
	watch_close(c, rpc_on_closed);
	pthread_mutex_lock(&s->wmu);
	c->snext = s->streams;
	if (s->streams)
		s->streams->sprev = c;
	s->streams = c;
	c->slinked = 1;
	if (!limit && streams_of(c) >= s->cfg->max_watchers_per_peer)
		limit = "max_watchers_per_peer";
	pthread_mutex_unlock(&s->wmu);
	if (!limit)
		return 0;
	node_log_limited(PROCCTL_LOG_WARN, "stream_refused", "peer=%s reason=%s", c->ident, limit);
	snprintf(msg, sizeof msg, "too many streams open (%s)", limit);
	pthread_mutex_lock(&c->mu);
	rpc_end_stream(c, NODE_RESOURCE_EXHAUSTED, msg);
	pthread_mutex_unlock(&c->mu);
	rpc_unref(c);
	return -1;
}

/* Refuse a mutating call from a caller that may not write: 0, or -1
 * when c was answered (and its reference dropped). */
static int write_check(struct rpc *c)
{
	char who[256];
	call_describe(c, who, sizeof who);
	if (c->klass == NODE_PEER_READER) {
		node_log(PROCCTL_LOG_WARN, "call_refused", "method=%s %s reason=read_only_listener", c->m->path, who);
		rpc_send_status(c, NODE_PERMISSION_DENIED, "mutating calls need the Unix socket, mTLS, or insecure_tcp_writes",
				NULL);
		rpc_unref(c);
		return -1;
	}
	node_log(c->who.is_unix ? PROCCTL_LOG_DEBUG : PROCCTL_LOG_INFO, "call", "method=%s %s", c->m->path, who);
	return 0;
}

/* A NodeService call goes to the loop; our reference becomes its. */
static void node_call(struct rpc *c, ProtobufCMessage *req)
{
	struct node_job *job = calloc(1, sizeof *job);
	if (!job) {
		protobuf_c_message_free_unpacked(req, NULL);
		rpc_send_status(c, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
		rpc_unref(c);
		return;
	}
	job->method = c->m->nm;
	job->req = req;
	job->deadline_ns = deadline_ns(c->deadline);
	job->ops = &grpc_job_ops;
	job->ctx = c;
	job->id = c->job_id = __atomic_add_fetch(&c->s->next_job_id, 1, __ATOMIC_RELAXED);
	snprintf(job->peer, sizeof job->peer, "%s", c->ident);
	job->peer_class = c->klass;
	if (!c->close_posted) /* streams posted theirs when they started */
		watch_close(c, on_node_closed);
	if (node_submit(c->s->node, job) < 0) {
		free(job);
		protobuf_c_message_free_unpacked(req, NULL);
		rpc_reply(c, NODE_UNAVAILABLE, "procctl-node is shutting down", NULL);
	}
}

/* grpc.health.v1: Check answered here, Watch a stream of its own. */
static void health_call(struct rpc *c, ProtobufCMessage *req)
{
	Grpc__Health__V1__HealthCheckRequest *hr = (void *)req;
	Grpc__Health__V1__HealthCheckResponse r = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
	int ours = !hr->service[0] || !strcmp(hr->service, "procctl.v1.NodeService");
	protobuf_c_message_free_unpacked(req, NULL);
	if (c->m->h == H_HEALTH_WATCH) {
		c->health_known = ours;
		c->health_sent = -1;
		rpc_watch(c);
		return;
	}
	if (!ours) {
		rpc_send_status(c, NODE_NOT_FOUND, "unknown service", NULL);
	} else {
		r.status = grpcsrv_serving(c->s) ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
						 : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
		rpc_send_status(c, NODE_OK, NULL, pb_pack(&r.base));
	}
	rpc_unref(c);
}

static void on_message(struct rpc *c, int ok);

/* Receive c's request. Methods are registered without their message, so
 * that a call is counted on its connection from its headers: a stream
 * that never sends one is a call too. */
static void recv_request(struct rpc *c)
{
	grpc_op op;
	memset(&op, 0, sizeof op);
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &c->payload;
	rpc_arm(&c->t_recv, on_message, c);
	rpc_batch(c, &op, 1, &c->t_recv);
}

static void on_request(struct rpc *c, int ok)
{
	const struct method *m = c->m;

	if (!ok) { /* the server is shutting down: the slot is gone */
		rpc_unref(c);
		return;
	}
	grpcsrv_post(c->s, m);
	if (call_admit(c) < 0)
		return;
	if (m->kind != UNARY && stream_start(c) < 0)
		return;
	if (m->h == H_REFLECT)
		rpc_reflect_recv(c);
	else
		recv_request(c);
	rpc_unref(c);
}

static void on_message(struct rpc *c, int ok)
{
	const struct method *m = c->m;
	ProtobufCMessage *req;
	char why[96];

	if (!ok) { /* cancelled, or the server is going */
		rpc_unref(c);
		return;
	}
	if (!(req = pb_unpack_checked(m->req, c->payload, 1, why, sizeof why))) {
		pthread_mutex_lock(&c->mu);
		if (m->kind == SERVER_STREAM)
			rpc_end_stream(c, NODE_INVALID_ARGUMENT, why);
		else
			rpc_send_status(c, NODE_INVALID_ARGUMENT, why, NULL);
		pthread_mutex_unlock(&c->mu);
		rpc_unref(c);
		return;
	}
	if (m->mutating && write_check(c) < 0) {
		protobuf_c_message_free_unpacked(req, NULL);
		return;
	}
	if (m->h == H_NODE)
		node_call(c, req);
	else
		health_call(c, req);
}

static void on_unknown(struct rpc *c, int ok)
{
	if (ok) {
		char msg[300];
		grpcsrv_post(c->s, NULL);
		if (call_admit(c) < 0)
			return;
		snprintf(msg, sizeof msg, "unknown method %.*s", (int)GRPC_SLICE_LENGTH(c->details.method),
			 (const char *)GRPC_SLICE_START_PTR(c->details.method));
		node_log(PROCCTL_LOG_DEBUG, "unknown_method", "%s", msg + 15);
		rpc_send_status(c, NODE_UNIMPLEMENTED, msg, NULL);
	}
	rpc_unref(c);
}

void grpcsrv_post(struct grpc_srv *s, const struct method *m)
{
	struct rpc *c;
	grpc_call_error e;
	/* Slots are posted again while the server drains (a call matched
	 * then is answered UNAVAILABLE, which clients retry): a call still
	 * unmatched when the core shuts down is cancelled (CANCELLED, which
	 * they do not). Not once that shutdown is done: after start only the
	 * gRPC thread posts, and it is the one that marks it. */
	if (s->shutdown_done)
		return;
	if (!(c = calloc(1, sizeof *c))) {
		node_log(PROCCTL_LOG_ERROR, "grpc_slot_lost", "error=ENOMEM");
		return;
	}
	c->s = s;
	c->m = m;
	c->refs = 1;
	c->health_sent = -1;
	pthread_mutex_init(&c->mu, NULL);
	grpc_metadata_array_init(&c->md);
	if (!m) {
		grpc_call_details_init(&c->details);
		rpc_arm(&c->t_req, on_unknown, c);
		e = grpc_server_request_call(s->server, &c->call, &c->details, &c->md, s->cq, s->cq, &c->t_req);
	} else {
		rpc_arm(&c->t_req, on_request, c);
		e = grpc_server_request_registered_call(s->server, s->handle[m - methods], &c->call, &c->deadline, &c->md,
							 NULL, s->cq, s->cq, &c->t_req);
	}
	if (e != GRPC_CALL_OK) {
		node_log(PROCCTL_LOG_ERROR, "grpc_slot_refused", "error=%d", (int)e);
		rpc_unref(c);
	}
}

