/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_call.c - procctl-node's gRPC calls once taken (grpc_int.h): their
 * references and batches, replies and statuses, the streams (WatchEvents,
 * health Watch) fed from the event history, reflection's bidi stream. */
#include "grpc_int.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>

#include "grpc/health/v1/health.pb-c.h"
#include "pb_grpc.h"
#include "reflect.h"

/* ---- calls: life and death --------------------------------------------- */

void rpc_ref(struct rpc *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

void rpc_unref(struct rpc *c)
{
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL))
		return;
	if (c->counted_stream)
		__atomic_sub_fetch(&c->s->nwatch, 1, __ATOMIC_RELAXED);
	if (c->slinked) {
		pthread_mutex_lock(&c->s->wmu);
		if (c->sprev)
			c->sprev->snext = c->snext;
		else
			c->s->streams = c->snext;
		if (c->snext)
			c->snext->sprev = c->sprev;
		pthread_mutex_unlock(&c->s->wmu);
	}
	conns_call_end(c->s->conns, &c->ticket);
	if (c->call)
		grpc_call_unref(c->call);
	grpc_metadata_array_destroy(&c->md);
	if (!c->m)
		grpc_call_details_destroy(&c->details);
	if (c->payload)
		grpc_byte_buffer_destroy(c->payload);
	if (c->send_bb)
		grpc_byte_buffer_destroy(c->send_bb);
	if (c->have_status_msg)
		grpc_slice_unref(c->status_msg);
	node_packed_unref(c->first);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* Point t at fn before a batch or a request uses it. The release store
 * pairs with cq_thread's acquire load: what this thread wrote before the
 * batch is seen by the completion's handler, in a way ThreadSanitizer can
 * follow (gRPC's own ordering is invisible to it). */
void rpc_arm(struct tag *t, void (*fn)(struct rpc *c, int ok), struct rpc *c)
{
	t->c = c;
	__atomic_store_n(&t->fn, fn, __ATOMIC_RELEASE);
}

/* The initial metadata, sent with the first batch that sends anything:
 * the ops it took (0 or 1). */
static size_t first_ops(struct rpc *c, grpc_op *ops)
{
	if (c->md_sent)
		return 0;
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	c->md_sent = 1;
	return 1;
}

/* A batch asked for after the calls' queue closed: its handler runs as
 * for a failed one, once the queue's thread has ended (rpc_fail_later). */
static void later(struct grpc_srv *s, struct tag *t)
{
	pthread_mutex_lock(&s->smu);
	t->later = s->later;
	s->later = t;
	pthread_mutex_unlock(&s->smu);
}

/* The calls' queue shut down once no batch is being started on it: a
 * batch started on a queue shut down makes gRPC abort (call.cc's
 * grpc_cq_begin_op assertion, seen when a stop came as 8,192 held streams
 * were cancelled). */
void rpc_cq_close(struct grpc_srv *s)
{
	__atomic_store_n(&s->cq_closed, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&s->starting, __ATOMIC_SEQ_CST))
		sched_yield();
	grpc_completion_queue_shutdown(s->cq);
}

/* After the queue's thread: the batches that came too late end as failed
 * ones would (their handlers may ask for more, which come here too). */
void rpc_fail_later(struct grpc_srv *s)
{
	for (;;) {
		struct tag *t, *next;
		pthread_mutex_lock(&s->smu);
		t = s->later;
		s->later = NULL;
		pthread_mutex_unlock(&s->smu);
		if (!t)
			return;
		for (; t; t = next) {
			next = t->later;
			__atomic_load_n(&t->fn, __ATOMIC_ACQUIRE)(t->c, 0);
		}
	}
}

void rpc_batch(struct rpc *c, const grpc_op *ops, size_t n, struct tag *t)
{
	struct grpc_srv *s = c->s;
	grpc_call_error e = GRPC_CALL_OK;
	int closed;
	rpc_ref(c);
	/* Not on a queue shut down (gRPC aborts): rpc_cq_close waits for the
	 * batches being started, and those after it fail later. */
	__atomic_add_fetch(&s->starting, 1, __ATOMIC_SEQ_CST);
	closed = __atomic_load_n(&s->cq_closed, __ATOMIC_SEQ_CST);
	if (!closed)
		e = grpc_call_start_batch(c->call, ops, n, t, NULL);
	__atomic_sub_fetch(&s->starting, 1, __ATOMIC_SEQ_CST);
	if (closed) {
		later(s, t);
	} else if (e != GRPC_CALL_OK) {
		node_log(PROCCTL_LOG_ERROR, "grpc_batch_refused", "method=%s error=%d", c->m ? c->m->path : "?", (int)e);
		rpc_unref(c);
	}
}

static void unlink_watcher(struct rpc *c)
{
	struct grpc_srv *s = c->s;
	int linked;
	pthread_mutex_lock(&s->wmu);
	linked = c->linked;
	if (linked) {
		if (c->wprev)
			c->wprev->wnext = c->wnext;
		else
			s->watchers = c->wnext;
		if (c->wnext)
			c->wnext->wprev = c->wprev;
		c->linked = 0;
	}
	pthread_mutex_unlock(&s->wmu);
	if (linked)
		rpc_unref(c);
}

/* ---- ending calls -------------------------------------------------------- */

static void on_status(struct rpc *c, int ok)
{
	(void)ok;
	rpc_unref(c);
}

/* Send the status (and, for a unary call, its one message), under c->mu
 * for streams. The close is received here unless it was posted when the
 * call started (streams, NodeService calls). */
void rpc_send_status(struct rpc *c, enum node_code code, const char *msg, grpc_byte_buffer *resp)
{
	grpc_op ops[4];
	size_t n;
	memset(ops, 0, sizeof ops);
	n = first_ops(c, ops);
	if (resp) {
		c->send_bb = resp;
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = resp;
	}
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = (grpc_status_code)code;
	if (msg && *msg) {
		c->status_msg = grpc_slice_from_copied_string(msg);
		c->have_status_msg = 1;
		ops[n].data.send_status_from_server.status_details = &c->status_msg;
	}
	n++;
	if (!c->close_posted) {
		c->close_posted = 1;
		ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
		ops[n++].data.recv_close_on_server.cancelled = &c->client_cancelled;
	}
	c->status_sent = 1;
	__atomic_add_fetch(&c->s->calls[c->m ? (size_t)(c->m - methods) : NMETHODS][(unsigned)code < NCODES ? code : NODE_INTERNAL], 1,
			   __ATOMIC_RELAXED);
	rpc_arm(&c->t_status, on_status, c);
	rpc_batch(c, ops, n, &c->t_status);
}

/* End a stream with code: now, or after the send in flight. Under c->mu. */
void rpc_end_stream(struct rpc *c, enum node_code code, const char *msg)
{
	if (c->status_sent || c->end_pending)
		return;
	c->end_pending = 1;
	c->end_code = code;
	snprintf(c->end_msg, sizeof c->end_msg, "%s", msg ? msg : "");
	if (!c->sending)
		rpc_send_status(c, code, c->end_msg, NULL);
}

void rpc_reply(struct rpc *c, enum node_code code, const char *msg, const ProtobufCMessage *resp)
{
	grpc_byte_buffer *bb = NULL;
	if (resp && !(bb = pb_pack(resp))) {
		code = NODE_RESOURCE_EXHAUSTED;
		msg = "out of memory";
	}
	pthread_mutex_lock(&c->mu);
	if (c->m->kind == SERVER_STREAM) {
		if (bb)
			grpc_byte_buffer_destroy(bb);
		rpc_end_stream(c, code, msg);
	} else {
		rpc_send_status(c, code, msg, bb);
	}
	pthread_mutex_unlock(&c->mu);
	rpc_unref(c); /* the loop's */
}

/* ---- streams: WatchEvents and health Watch ------------------------------- */

static void on_sent(struct rpc *c, int ok);

int grpcsrv_serving(struct grpc_srv *s)
{
	return node_ready(s->node) && !__atomic_load_n(&s->shutting_down, __ATOMIC_RELAXED);
}

static void packed_unref(void *p)
{
	node_packed_unref(p);
}

/* A byte buffer of p's bytes, not copied: it takes our reference. */
static grpc_byte_buffer *packed_take(struct node_packed *p)
{
	grpc_slice s = grpc_slice_new_with_user_data(p->data, p->len, packed_unref, p);
	grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);
	grpc_slice_unref(s);
	return bb;
}

/* The next message of a stream, if there is one. Under c->mu. */
static void pump(struct rpc *c)
{
	grpc_byte_buffer *bb;
	grpc_op ops[2];
	size_t n, len = 0;
	void *bytes = NULL;
	int r;
	if (c->sending || c->status_sent || c->closed)
		return;
	if (c->end_pending) {
		rpc_send_status(c, c->end_code, c->end_msg, NULL);
		return;
	}
	if (c->m->h == H_HEALTH_WATCH) {
		Grpc__Health__V1__HealthCheckResponse m = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
		int st = !c->health_known ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN
			 : grpcsrv_serving(c->s)  ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
					  : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
		if (st == c->health_sent)
			return;
		m.status = (Grpc__Health__V1__HealthCheckResponse__ServingStatus)st;
		c->health_sent = st;
		len = protobuf_c_message_get_packed_size(&m.base);
		if (!(bytes = malloc(len ? len : 1))) {
			rpc_end_stream(c, NODE_RESOURCE_EXHAUSTED, "out of memory");
			return;
		}
		protobuf_c_message_pack(&m.base, bytes);
		bb = pb_take(bytes, len);
	} else if (c->first) {
		bb = packed_take(c->first);
		c->first = NULL;
	} else {
		r = events_next(node_events(c->s->node), &c->cursor, &c->filter, &bytes, &len);
		if (r == -ERANGE) {
			rpc_end_stream(c, NODE_RESOURCE_EXHAUSTED,
				       "the watcher fell behind the events kept: watch again (a snapshot) and relist");
			return;
		}
		if (r < 0) {
			rpc_end_stream(c, NODE_RESOURCE_EXHAUSTED, "out of memory");
			return;
		}
		if (r == 0)
			return;
		bb = pb_take(bytes, len);
	}
	memset(ops, 0, sizeof ops);
	n = first_ops(c, ops);
	c->send_bb = bb;
	ops[n].op = GRPC_OP_SEND_MESSAGE;
	ops[n++].data.send_message.send_message = c->send_bb;
	c->sending = 1;
	rpc_arm(&c->t_send, on_sent, c);
	rpc_batch(c, ops, n, &c->t_send);
}

static void on_sent(struct rpc *c, int ok)
{
	pthread_mutex_lock(&c->mu);
	c->sending = 0;
	grpc_byte_buffer_destroy(c->send_bb);
	c->send_bb = NULL;
	if (!ok)
		c->closed = 1; /* the client is gone: nothing more goes out */
	else
		pump(c);
	pthread_mutex_unlock(&c->mu);
	if (!ok)
		unlink_watcher(c);
	rpc_unref(c);
}

void rpc_on_closed(struct rpc *c, int ok)
{
	(void)ok;
	conns_call_closed(c->s->conns, &c->ticket);
	pthread_mutex_lock(&c->mu);
	c->closed = 1;
	pthread_mutex_unlock(&c->mu);
	unlink_watcher(c);
	rpc_unref(c);
}

/* Link c into the watchers (the caller's reference becomes the list's)
 * and send what it has. */
void rpc_watch(struct rpc *c)
{
	struct grpc_srv *s = c->s;
	pthread_mutex_lock(&s->wmu);
	pthread_mutex_lock(&c->mu);
	if (c->closed || c->status_sent || __atomic_load_n(&s->shutting_down, __ATOMIC_RELAXED)) {
		if (!c->status_sent)
			rpc_end_stream(c, NODE_UNAVAILABLE, "procctl-node is shutting down");
		pthread_mutex_unlock(&c->mu);
		pthread_mutex_unlock(&s->wmu);
		rpc_unref(c);
		return;
	}
	c->linked = 1;
	c->wprev = NULL;
	c->wnext = s->watchers;
	if (s->watchers)
		s->watchers->wprev = c;
	s->watchers = c;
	pump(c);
	pthread_mutex_unlock(&c->mu);
	pthread_mutex_unlock(&s->wmu);
}

static void rpc_watch_begin(struct rpc *c, struct node_packed *first, uint64_t cursor, const struct selector *filter)
{
	pthread_mutex_lock(&c->mu);
	c->cursor = cursor;
	c->filter = *filter;
	if (first)
		c->first = node_packed_ref(first);
	pthread_mutex_unlock(&c->mu);
	rpc_watch(c); /* the loop's reference becomes the list's */
}

/* ---- the loop's answers -------------------------------------------------- */

static void on_job_reply(struct node_job *job, enum node_code code, const char *msg, const ProtobufCMessage *resp)
{
	rpc_reply(job->ctx, code, msg, resp);
}

static void on_job_watch(struct node_job *job, struct node_packed *first, uint64_t cursor, const struct selector *filter)
{
	rpc_watch_begin(job->ctx, first, cursor, filter);
}

const struct node_reply_ops grpc_job_ops = {on_job_reply, on_job_watch};

void grpcsrv_kick(struct grpc_srv *s)
{
	struct rpc *c;
	pthread_mutex_lock(&s->wmu);
	for (c = s->watchers; c; c = c->wnext) {
		pthread_mutex_lock(&c->mu);
		pump(c);
		pthread_mutex_unlock(&c->mu);
	}
	pthread_mutex_unlock(&s->wmu);
}

/* ---- reflection: a bidi stream, one answer per request ------------------- */

static void on_reflect_recv(struct rpc *c, int ok);

void rpc_reflect_recv(struct rpc *c)
{
	grpc_op op[2];
	size_t n;
	memset(op, 0, sizeof op);
	n = first_ops(c, op);
	op[n].op = GRPC_OP_RECV_MESSAGE;
	op[n++].data.recv_message.recv_message = &c->payload;
	rpc_arm(&c->t_recv, on_reflect_recv, c);
	rpc_batch(c, op, n, &c->t_recv);
}

static void on_reflect_sent(struct rpc *c, int ok)
{
	grpc_byte_buffer_destroy(c->send_bb);
	c->send_bb = NULL;
	if (ok)
		rpc_reflect_recv(c);
	rpc_unref(c);
}

static void on_reflect_recv(struct rpc *c, int ok)
{
	grpc_byte_buffer_reader r;
	grpc_slice all;
	grpc_op op;
	uint8_t *out = NULL;
	size_t outlen = 0;
	int e;
	if (!ok) {
		rpc_unref(c);
		return;
	}
	if (!c->payload) { /* the client is done */
		rpc_send_status(c, NODE_OK, NULL, NULL);
		rpc_unref(c);
		return;
	}
	if (!grpc_byte_buffer_reader_init(&r, c->payload)) {
		e = -EINVAL;
	} else {
		all = grpc_byte_buffer_reader_readall(&r);
		grpc_byte_buffer_reader_destroy(&r);
		e = reflect_answer(c->s->reflect, GRPC_SLICE_START_PTR(all), GRPC_SLICE_LENGTH(all), &out, &outlen);
		grpc_slice_unref(all);
	}
	grpc_byte_buffer_destroy(c->payload);
	c->payload = NULL;
	if (e < 0) {
		rpc_send_status(c, e == -EINVAL ? NODE_INVALID_ARGUMENT : NODE_RESOURCE_EXHAUSTED,
			    e == -EINVAL ? "not a ServerReflectionRequest" : "out of memory", NULL);
		rpc_unref(c);
		return;
	}
	memset(&op, 0, sizeof op);
	c->send_bb = pb_take(out, outlen);
	op.op = GRPC_OP_SEND_MESSAGE;
	op.data.send_message.send_message = c->send_bb;
	rpc_arm(&c->t_send, on_reflect_sent, c);
	rpc_batch(c, &op, 1, &c->t_send);
	rpc_unref(c);
}

