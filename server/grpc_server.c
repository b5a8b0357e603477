/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_server.c - procctl-node's gRPC side (grpc_server.h), on the gRPC C
 * core and protobuf-c.
 *
 * One completion queue, one thread draining it. Every call is a struct
 * rpc whose tags are its own fields (a tag is a function and its rpc);
 * a reference count covers each batch in flight, the loop while it holds
 * the call, and the watcher list. The C core allows one operation of each
 * type in flight per call, so a stream has at most one message send out:
 * the next is taken from the event history when it completes (pump), and
 * a stream's status waits for its last send. RECV_CLOSE_ON_SERVER is
 * posted when a stream starts, so a client that cancels or dies is seen
 * at once. Requests are decoded here; NodeService calls go to the loop,
 * health and reflection are answered here. */
#include "grpc_server.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>

#include "grpc/health/v1/health.pb-c.h"
#include "pb_grpc.h"
#include "procctl/v1/node.pb-c.h"
#include "reflect.h"

extern const unsigned char node_descriptors[];
extern const size_t node_descriptors_len;

#define SLOTS 8            /* requests posted per method */
#define WATCH_SLOTS 32     /* ... for WatchEvents: many streams open at once */

enum kind { UNARY, SERVER_STREAM, BIDI };
enum handler { H_NODE, H_HEALTH_CHECK, H_HEALTH_WATCH, H_REFLECT };

struct method {
	const char *path;
	enum kind kind;
	enum handler h;
	enum node_method nm;
	const ProtobufCMessageDescriptor *req;
	int mutating;
};

#define NODE_M(name, k, nm, req, mut) {"/procctl.v1.NodeService/" name, k, H_NODE, nm, &req, mut}
static const struct method methods[] = {
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
#define NMETHODS (sizeof methods / sizeof methods[0])
#define NCODES 17 /* gRPC status codes 0 .. 16 */

struct rpc;
struct tag {
	void (*fn)(struct rpc *c, int ok);
	struct rpc *c;
};

struct rpc {
	struct grpc_srv *s;
	const struct method *m; /* NULL: the catch-all */
	int refs;               /* atomic */
	grpc_call *call;
	gpr_timespec deadline;
	grpc_metadata_array md;
	grpc_call_details details; /* the catch-all's */
	grpc_byte_buffer *payload; /* a received message */
	struct tag t_req, t_send, t_recv, t_close, t_status;
	int client_cancelled;      /* RECV_CLOSE_ON_SERVER's result */
	grpc_slice status_msg;
	int have_status_msg;

	/* streams, under mu */
	pthread_mutex_t mu;
	int md_sent, sending, status_sent, closed, linked, watching;
	int end_pending;
	enum node_code end_code;
	char end_msg[160];
	void *first;               /* the snapshot, sent before the events */
	size_t first_len;
	uint64_t cursor;
	struct selector filter;
	int health_sent;           /* the serving status last sent; -1 none */
	int health_known;          /* the service asked for is ours */
	grpc_byte_buffer *send_bb;
	struct rpc *wnext, *wprev;
};

struct grpc_srv {
	const struct node_cfg *cfg;
	struct node *node;
	grpc_server *server;
	grpc_completion_queue *cq;
	void *handle[NMETHODS];
	pthread_t thread;
	int started;
	struct reflect *reflect;
	pthread_mutex_t wmu;       /* the watcher list */
	struct rpc *watchers;
	int nwatch;                /* atomic: stream calls alive */
	int shutting_down;         /* atomic */
	struct tag t_shutdown;
	pthread_mutex_t smu;
	pthread_cond_t scond;
	int shutdown_done;
	char unix_paths[NODE_LISTEN_MAX][NODE_PATH_MAX];
	size_t nunix;
	uint64_t calls[NMETHODS + 1][NCODES]; /* atomic; the last row: unknown methods */
};

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

/* ---- calls: life and death --------------------------------------------- */

static void rpc_ref(struct rpc *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

static void rpc_unref(struct rpc *c)
{
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL))
		return;
	if (c->m && c->m->kind == SERVER_STREAM && c->call)
		__atomic_sub_fetch(&c->s->nwatch, 1, __ATOMIC_RELAXED);
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
	free(c->first);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* Point t at fn before a batch or a request uses it. The release store
 * pairs with cq_thread's acquire load: what this thread wrote before the
 * batch is seen by the completion's handler, in a way ThreadSanitizer can
 * follow (gRPC's own ordering is invisible to it). */
static void tag_arm(struct tag *t, void (*fn)(struct rpc *c, int ok), struct rpc *c)
{
	t->c = c;
	__atomic_store_n(&t->fn, fn, __ATOMIC_RELEASE);
}

static void batch(struct rpc *c, const grpc_op *ops, size_t n, struct tag *t)
{
	grpc_call_error e;
	rpc_ref(c);
	e = grpc_call_start_batch(c->call, ops, n, t, NULL);
	if (e != GRPC_CALL_OK) {
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

/* ---- messages ---------------------------------------------------------- */

/* ---- ending calls -------------------------------------------------------- */

static void on_status(struct rpc *c, int ok)
{
	(void)ok;
	rpc_unref(c);
}

/* Send the status (and, for a unary call, its one message), under c->mu
 * for streams. Unary calls also receive the close here; streams posted
 * theirs when they started. */
static void send_status(struct rpc *c, enum node_code code, const char *msg, grpc_byte_buffer *resp)
{
	grpc_op ops[4];
	size_t n = 0;
	memset(ops, 0, sizeof ops);
	if (!c->md_sent) {
		ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
		c->md_sent = 1;
	}
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
	if (!c->m || c->m->kind != SERVER_STREAM) {
		ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
		ops[n++].data.recv_close_on_server.cancelled = &c->client_cancelled;
	}
	c->status_sent = 1;
	__atomic_add_fetch(&c->s->calls[c->m ? (size_t)(c->m - methods) : NMETHODS][(unsigned)code < NCODES ? code : NODE_INTERNAL], 1,
			   __ATOMIC_RELAXED);
	tag_arm(&c->t_status, on_status, c);
	batch(c, ops, n, &c->t_status);
}

/* End a stream with code: now, or after the send in flight. Under c->mu. */
static void end_stream(struct rpc *c, enum node_code code, const char *msg)
{
	if (c->status_sent || c->end_pending)
		return;
	c->end_pending = 1;
	c->end_code = code;
	snprintf(c->end_msg, sizeof c->end_msg, "%s", msg ? msg : "");
	if (!c->sending)
		send_status(c, code, c->end_msg, NULL);
}

static void rpc_reply(struct rpc *c, enum node_code code, const char *msg, const ProtobufCMessage *resp)
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
		end_stream(c, code, msg);
	} else {
		send_status(c, code, msg, bb);
	}
	pthread_mutex_unlock(&c->mu);
	rpc_unref(c); /* the loop's */
}

/* ---- streams: WatchEvents and health Watch ------------------------------- */

static void on_sent(struct rpc *c, int ok);

static int serving(struct grpc_srv *s)
{
	return node_ready(s->node) && !__atomic_load_n(&s->shutting_down, __ATOMIC_RELAXED);
}

/* The next message of a stream, if there is one. Under c->mu. */
static void pump(struct rpc *c)
{
	grpc_op ops[2];
	size_t n = 0, len = 0;
	void *bytes = NULL;
	int r;
	if (c->sending || c->status_sent || c->closed)
		return;
	if (c->end_pending) {
		send_status(c, c->end_code, c->end_msg, NULL);
		return;
	}
	if (c->m->h == H_HEALTH_WATCH) {
		Grpc__Health__V1__HealthCheckResponse m = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
		int st = !c->health_known ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN
			 : serving(c->s)  ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
					  : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
		if (st == c->health_sent)
			return;
		m.status = (Grpc__Health__V1__HealthCheckResponse__ServingStatus)st;
		c->health_sent = st;
		len = protobuf_c_message_get_packed_size(&m.base);
		if (!(bytes = malloc(len ? len : 1)))
			return end_stream(c, NODE_RESOURCE_EXHAUSTED, "out of memory");
		protobuf_c_message_pack(&m.base, bytes);
	} else if (c->first) {
		bytes = c->first;
		len = c->first_len;
		c->first = NULL;
	} else {
		r = events_next(node_events(c->s->node), &c->cursor, &c->filter, &bytes, &len);
		if (r == -ERANGE)
			return end_stream(c, NODE_RESOURCE_EXHAUSTED,
					  "the watcher fell behind the events kept: watch again (a snapshot) and relist");
		if (r < 0)
			return end_stream(c, NODE_RESOURCE_EXHAUSTED, "out of memory");
		if (r == 0)
			return;
	}
	memset(ops, 0, sizeof ops);
	if (!c->md_sent) {
		ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
		c->md_sent = 1;
	}
	c->send_bb = pb_take(bytes, len);
	ops[n].op = GRPC_OP_SEND_MESSAGE;
	ops[n++].data.send_message.send_message = c->send_bb;
	c->sending = 1;
	tag_arm(&c->t_send, on_sent, c);
	batch(c, ops, n, &c->t_send);
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

static void on_closed(struct rpc *c, int ok)
{
	(void)ok;
	pthread_mutex_lock(&c->mu);
	c->closed = 1;
	pthread_mutex_unlock(&c->mu);
	unlink_watcher(c);
	rpc_unref(c);
}

/* Link c into the watchers (the caller's reference becomes the list's)
 * and send what it has. */
static void watch(struct rpc *c)
{
	struct grpc_srv *s = c->s;
	pthread_mutex_lock(&s->wmu);
	pthread_mutex_lock(&c->mu);
	if (c->closed || c->status_sent || __atomic_load_n(&s->shutting_down, __ATOMIC_RELAXED)) {
		if (!c->status_sent)
			end_stream(c, NODE_UNAVAILABLE, "procctl-node is shutting down");
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

static void rpc_watch_begin(struct rpc *c, const ProtobufCMessage *first, uint64_t cursor, const struct selector *filter)
{
	pthread_mutex_lock(&c->mu);
	c->cursor = cursor;
	c->filter = *filter;
	if (first) {
		c->first_len = protobuf_c_message_get_packed_size(first);
		if ((c->first = malloc(c->first_len ? c->first_len : 1)))
			protobuf_c_message_pack(first, c->first);
		else
			end_stream(c, NODE_RESOURCE_EXHAUSTED, "out of memory");
	}
	pthread_mutex_unlock(&c->mu);
	watch(c); /* the loop's reference becomes the list's */
}

/* ---- metrics ----------------------------------------------------------- */

void grpcsrv_metrics(struct grpc_srv *s, FILE *f)
{
	size_t m, k;
	fprintf(f, "# HELP procctl_grpc_calls_total gRPC calls answered, by method and status code.\n"
		   "# TYPE procctl_grpc_calls_total counter\n");
	for (m = 0; m <= NMETHODS; m++)
		for (k = 0; k < NCODES; k++) {
			uint64_t v = __atomic_load_n(&s->calls[m][k], __ATOMIC_RELAXED);
			if (v)
				fprintf(f, "procctl_grpc_calls_total{method=\"%s\",code=\"%s\"} %llu\n",
					m < NMETHODS ? methods[m].path + 1 : "unknown", rpc_status_name((unsigned)k), (unsigned long long)v);
		}
	fprintf(f, "# HELP procctl_grpc_streams Server streams open (WatchEvents, health Watch).\n"
		   "# TYPE procctl_grpc_streams gauge\n"
		   "procctl_grpc_streams %d\n",
		__atomic_load_n(&s->nwatch, __ATOMIC_RELAXED));
}

/* ---- the loop's answers -------------------------------------------------- */

static void on_job_reply(struct node_job *job, enum node_code code, const char *msg, const ProtobufCMessage *resp)
{
	rpc_reply(job->ctx, code, msg, resp);
}

static void on_job_watch(struct node_job *job, const ProtobufCMessage *first, uint64_t cursor, const struct selector *filter)
{
	rpc_watch_begin(job->ctx, first, cursor, filter);
}

static const struct node_reply_ops job_ops = {on_job_reply, on_job_watch};

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

static void reflect_recv(struct rpc *c)
{
	grpc_op op[2];
	size_t n = 0;
	memset(op, 0, sizeof op);
	if (!c->md_sent) {
		op[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
		c->md_sent = 1;
	}
	op[n].op = GRPC_OP_RECV_MESSAGE;
	op[n++].data.recv_message.recv_message = &c->payload;
	tag_arm(&c->t_recv, on_reflect_recv, c);
	batch(c, op, n, &c->t_recv);
}

static void on_reflect_sent(struct rpc *c, int ok)
{
	grpc_byte_buffer_destroy(c->send_bb);
	c->send_bb = NULL;
	if (ok)
		reflect_recv(c);
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
		send_status(c, NODE_OK, NULL, NULL);
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
		send_status(c, e == -EINVAL ? NODE_INVALID_ARGUMENT : NODE_RESOURCE_EXHAUSTED,
			    e == -EINVAL ? "not a ServerReflectionRequest" : "out of memory", NULL);
		rpc_unref(c);
		return;
	}
	memset(&op, 0, sizeof op);
	c->send_bb = pb_take(out, outlen);
	op.op = GRPC_OP_SEND_MESSAGE;
	op.data.send_message.send_message = c->send_bb;
	tag_arm(&c->t_send, on_reflect_sent, c);
	batch(c, &op, 1, &c->t_send);
	rpc_unref(c);
}

/* ---- new calls ---------------------------------------------------------- */

static void post(struct grpc_srv *s, const struct method *m);

/* May this call change anything? 2: yes, over the Unix socket; 1: yes,
 * over TCP with a verified client certificate (the listener requires one)
 * or plain TCP allowed to write; 0: no. who: the peer (and its CN). */
static int may_write(struct rpc *c, char *who, size_t wholen)
{
	char *peer = grpc_call_get_peer(c->call);
	grpc_auth_context *ctx;
	grpc_auth_property_iterator it;
	const grpc_auth_property *p;
	int tls = 0;
	snprintf(who, wholen, "peer=%s", peer ? peer : "?");
	if (peer && !strncmp(peer, "unix:", 5)) {
		gpr_free(peer);
		return 2;
	}
	gpr_free(peer);
	if ((ctx = grpc_call_auth_context(c->call))) {
		it = grpc_auth_context_find_properties_by_name(ctx, GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME);
		if ((p = grpc_auth_property_iterator_next(&it)) && (!strcmp(p->value, GRPC_TLS_TRANSPORT_SECURITY_TYPE) ||
								      !strcmp(p->value, GRPC_SSL_TRANSPORT_SECURITY_TYPE)))
			tls = grpc_auth_context_peer_is_authenticated(ctx);
		it = grpc_auth_context_find_properties_by_name(ctx, GRPC_X509_CN_PROPERTY_NAME);
		if ((p = grpc_auth_property_iterator_next(&it))) {
			size_t n = strlen(who);
			snprintf(who + n, wholen - n, " cn=%.*s", (int)p->value_length, p->value);
		}
		grpc_auth_context_release(ctx);
	}
	return tls || c->s->cfg->insecure_tcp_writes;
}

static void on_request(struct rpc *c, int ok)
{
	struct grpc_srv *s = c->s;
	const struct method *m = c->m;
	ProtobufCMessage *req = NULL;
	char who[256];

	if (!ok) { /* the server is shutting down: the slot is gone */
		rpc_unref(c);
		return;
	}
	post(s, m);
	if (m->kind == SERVER_STREAM) {
		grpc_op op;
		int live = __atomic_add_fetch(&s->nwatch, 1, __ATOMIC_RELAXED);
		memset(&op, 0, sizeof op);
		op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
		op.data.recv_close_on_server.cancelled = &c->client_cancelled;
		tag_arm(&c->t_close, on_closed, c);
		batch(c, &op, 1, &c->t_close);
		if ((uint32_t)live > s->cfg->max_watchers) {
			pthread_mutex_lock(&c->mu);
			end_stream(c, NODE_RESOURCE_EXHAUSTED, "too many streams open (max_watchers)");
			pthread_mutex_unlock(&c->mu);
			rpc_unref(c);
			return;
		}
	}
	if (m->h == H_REFLECT) {
		reflect_recv(c);
		rpc_unref(c);
		return;
	}
	if (!(req = pb_unpack(m->req, c->payload))) {
		pthread_mutex_lock(&c->mu);
		if (m->kind == SERVER_STREAM)
			end_stream(c, NODE_INVALID_ARGUMENT, "the request does not parse");
		else
			send_status(c, NODE_INVALID_ARGUMENT, "the request does not parse", NULL);
		pthread_mutex_unlock(&c->mu);
		rpc_unref(c);
		return;
	}
	if (m->mutating) {
		int may = may_write(c, who, sizeof who);
		if (!may) {
			node_log(PROCCTL_LOG_WARN, "call_refused", "method=%s %s reason=read_only_listener", m->path, who);
			send_status(c, NODE_PERMISSION_DENIED,
				    "mutating calls need the Unix socket, mTLS, or insecure_tcp_writes", NULL);
			protobuf_c_message_free_unpacked(req, NULL);
			rpc_unref(c);
			return;
		}
		node_log(may == 2 ? PROCCTL_LOG_DEBUG : PROCCTL_LOG_INFO, "call", "method=%s %s", m->path, who);
	}
	if (m->h == H_NODE) {
		struct node_job *job = calloc(1, sizeof *job);
		if (!job) {
			protobuf_c_message_free_unpacked(req, NULL);
			send_status(c, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
			rpc_unref(c);
			return;
		}
		job->method = m->nm;
		job->req = req;
		job->deadline_ns = deadline_ns(c->deadline);
		job->ops = &job_ops;
		job->ctx = c; /* our reference becomes the loop's */
		if (node_submit(s->node, job) < 0) {
			free(job);
			protobuf_c_message_free_unpacked(req, NULL);
			rpc_reply(c, NODE_UNAVAILABLE, "procctl-node is shutting down", NULL);
		}
		return;
	}
	/* health */
	{
		Grpc__Health__V1__HealthCheckRequest *hr = (void *)req;
		int ours = !hr->service[0] || !strcmp(hr->service, "procctl.v1.NodeService");
		protobuf_c_message_free_unpacked(req, NULL);
		if (m->h == H_HEALTH_WATCH) {
			c->health_known = ours;
			c->health_sent = -1;
			watch(c);
			return;
		}
		if (!ours) {
			send_status(c, NODE_NOT_FOUND, "unknown service", NULL);
		} else {
			Grpc__Health__V1__HealthCheckResponse r = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
			r.status = serving(s) ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
					      : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
			send_status(c, NODE_OK, NULL, pb_pack(&r.base));
		}
		rpc_unref(c);
	}
}

static void on_unknown(struct rpc *c, int ok)
{
	if (ok) {
		char msg[300];
		post(c->s, NULL);
		snprintf(msg, sizeof msg, "unknown method %.*s", (int)GRPC_SLICE_LENGTH(c->details.method),
			 (const char *)GRPC_SLICE_START_PTR(c->details.method));
		node_log(PROCCTL_LOG_DEBUG, "unknown_method", "%s", msg + 15);
		send_status(c, NODE_UNIMPLEMENTED, msg, NULL);
	}
	rpc_unref(c);
}

/* Post one request slot for m (NULL: the catch-all). */
static void post(struct grpc_srv *s, const struct method *m)
{
	struct rpc *c;
	grpc_call_error e;
	if (__atomic_load_n(&s->shutting_down, __ATOMIC_RELAXED))
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
		tag_arm(&c->t_req, on_unknown, c);
		e = grpc_server_request_call(s->server, &c->call, &c->details, &c->md, s->cq, s->cq, &c->t_req);
	} else {
		tag_arm(&c->t_req, on_request, c);
		e = grpc_server_request_registered_call(s->server, s->handle[m - methods], &c->call, &c->deadline, &c->md,
							 m->kind == BIDI ? NULL : &c->payload, s->cq, s->cq, &c->t_req);
	}
	if (e != GRPC_CALL_OK) {
		node_log(PROCCTL_LOG_ERROR, "grpc_slot_refused", "error=%d", (int)e);
		rpc_unref(c);
	}
}

/* ---- the server ---------------------------------------------------------- */

static void *cq_thread(void *arg)
{
	struct grpc_srv *s = arg;
	for (;;) {
		grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		struct tag *t;
		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type != GRPC_OP_COMPLETE)
			continue;
		t = ev.tag;
		if (t == &s->t_shutdown) {
			pthread_mutex_lock(&s->smu);
			s->shutdown_done = 1;
			pthread_cond_signal(&s->scond);
			pthread_mutex_unlock(&s->smu);
			continue;
		}
		__atomic_load_n(&t->fn, __ATOMIC_ACQUIRE)(t->c, ev.success);
	}
	return NULL;
}

static void on_grpc_log(gpr_log_func_args *a)
{
	enum procctl_log_level l = a->severity == GPR_LOG_SEVERITY_ERROR ? PROCCTL_LOG_ERROR
				   : a->severity == GPR_LOG_SEVERITY_INFO ? PROCCTL_LOG_INFO
									 : PROCCTL_LOG_DEBUG;
	node_log(l, "grpc", "file=%s line=%d msg=\"%s\"", a->file, a->line, a->message);
}

static char *slurp(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	buf = calloc(1, 1 << 20);
	n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	if (!buf || !n) {
		snprintf(err, errlen, "%s: %s", path, buf ? "empty" : "out of memory");
		free(buf);
		return NULL;
	}
	return buf;
}

/* Make a Unix socket's path ready: its directory, and no stale socket. */
static int unix_prepare(const char *path, char *err, size_t errlen)
{
	char dir[NODE_PATH_MAX];
	struct sockaddr_un a;
	struct stat st;
	char *slash;
	size_t i;
	int fd, r;
	if (strlen(path) >= sizeof a.sun_path) {
		snprintf(err, errlen, "unix:%s: longer than %zu bytes", path, sizeof a.sun_path - 1);
		return -ENAMETOOLONG;
	}
	snprintf(dir, sizeof dir, "%s", path);
	if ((slash = strrchr(dir, '/')) && slash != dir) {
		*slash = 0;
		for (i = 1; dir[i]; i++)
			if (dir[i] == '/') {
				dir[i] = 0;
				if (mkdir(dir, 0755) < 0 && errno != EEXIST)
					goto dirfail;
				dir[i] = '/';
			}
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			goto dirfail;
	}
	if (lstat(path, &st) < 0)
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "unix:%s: exists and is not a socket", path);
		return -EEXIST;
	}
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	memcpy(a.sun_path, path, strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	r = connect(fd, (struct sockaddr *)&a, sizeof a);
	close(fd);
	if (r == 0) {
		snprintf(err, errlen, "unix:%s: another server is listening there", path);
		return -EADDRINUSE;
	}
	node_log(PROCCTL_LOG_INFO, "stale_socket_replaced", "path=%s", path);
	unlink(path);
	return 0;
dirfail:
	r = -errno;
	snprintf(err, errlen, "unix:%s: making %s: %s", path, dir, strerror(errno));
	return r;
}

int grpcsrv_start(const struct node_cfg *cfg, struct node *n, struct grpc_srv **out, char *err, size_t errlen)
{
	struct grpc_srv *s = calloc(1, sizeof *s);
	grpc_arg args[2];
	grpc_channel_args ca = {2, args};
	grpc_server_credentials *tls = NULL;
	size_t i;
	int r;

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->cfg = cfg;
	s->node = n;
	pthread_mutex_init(&s->wmu, NULL);
	pthread_mutex_init(&s->smu, NULL);
	pthread_cond_init(&s->scond, NULL);
	if ((r = reflect_new(&s->reflect, node_descriptors, node_descriptors_len)) < 0) {
		snprintf(err, errlen, "reflection: the embedded descriptors: %s", strerror(-r));
		free(s);
		return r;
	}
	gpr_set_log_function(on_grpc_log);
	grpc_init();
	args[0].type = GRPC_ARG_INTEGER;
	args[0].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
	args[0].value.integer = (int)cfg->max_message_bytes;
	args[1].type = GRPC_ARG_INTEGER;
	args[1].key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
	args[1].value.integer = (int)cfg->max_message_bytes;
	s->server = grpc_server_create(&ca, NULL);
	s->cq = grpc_completion_queue_create_for_next(NULL);
	grpc_server_register_completion_queue(s->server, s->cq, NULL);
	for (i = 0; i < NMETHODS; i++)
		s->handle[i] = grpc_server_register_method(s->server, methods[i].path, NULL,
							   methods[i].kind == BIDI ? GRPC_SRM_PAYLOAD_NONE
										: GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER,
							   0);
	if (cfg->tls_cert[0]) {
		/* Read once now, so that a missing or unreadable file stops the
		 * start with its name; then served through a file watcher, so a
		 * renewed certificate (cert-manager rewriting its Secret) is used
		 * within tls_refresh_s, without a restart. */
		char *ca_pem = slurp(cfg->tls_client_ca, err, errlen), *cert = NULL, *key = NULL;
		int readable = ca_pem && (cert = slurp(cfg->tls_cert, err, errlen)) && (key = slurp(cfg->tls_key, err, errlen));
		free(ca_pem);
		free(cert);
		free(key);
		if (readable) {
			grpc_tls_certificate_provider *prov = grpc_tls_certificate_provider_file_watcher_create(
				cfg->tls_key, cfg->tls_cert, cfg->tls_client_ca, cfg->tls_refresh_s);
			grpc_tls_credentials_options *o = grpc_tls_credentials_options_create();
			grpc_tls_credentials_options_set_certificate_provider(o, prov);
			grpc_tls_credentials_options_watch_root_certs(o);
			grpc_tls_credentials_options_watch_identity_key_cert_pairs(o);
			grpc_tls_credentials_options_set_cert_request_type(
				o, GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
			tls = grpc_tls_server_credentials_create(o); /* takes o */
			grpc_tls_certificate_provider_release(prov); /* o holds its own reference */
		}
		if (!tls) {
			if (!err[0])
				snprintf(err, errlen, "TLS: the certificate, key or CA were refused");
			r = -EINVAL;
			goto fail;
		}
	}
	for (i = 0; i < cfg->ngrpc_listen; i++) {
		const char *a = cfg->grpc_listen[i];
		int is_unix = !strncmp(a, "unix:", 5);
		grpc_server_credentials *cr = is_unix || !tls ? grpc_insecure_server_credentials_create() : tls;
		if (is_unix && (r = unix_prepare(a + 5, err, errlen)) < 0) {
			if (cr != tls)
				grpc_server_credentials_release(cr);
			goto fail;
		}
		r = grpc_server_add_http2_port(s->server, a, cr);
		if (cr != tls)
			grpc_server_credentials_release(cr);
		if (!r) {
			snprintf(err, errlen, "grpc_listen %s: cannot listen there (in use, or not an address)", a);
			r = -EADDRNOTAVAIL;
			goto fail;
		}
		if (is_unix)
			snprintf(s->unix_paths[s->nunix++], NODE_PATH_MAX, "%s", a + 5);
		node_log(PROCCTL_LOG_INFO, "listening", "addr=%s%s", a, is_unix ? " mode=0660" : tls ? " tls=mtls" : " tls=none");
	}
	if (tls)
		grpc_server_credentials_release(tls);
	tls = NULL;
	grpc_server_start(s->server);
	for (i = 0; i < s->nunix; i++)
		if (chmod(s->unix_paths[i], 0660) < 0)
			node_log(PROCCTL_LOG_WARN, "socket_mode", "path=%s error=%s", s->unix_paths[i], strerror(errno));
	s->t_shutdown.c = NULL;
	if ((r = pthread_create(&s->thread, NULL, cq_thread, s))) {
		snprintf(err, errlen, "the gRPC thread: %s", strerror(r));
		r = -r;
		goto fail_started;
	}
	s->started = 1;
	for (i = 0; i < NMETHODS; i++) {
		int k, slots = methods[i].nm == NODE_WATCH_EVENTS && methods[i].h == H_NODE ? WATCH_SLOTS : SLOTS;
		for (k = 0; k < slots; k++)
			post(s, &methods[i]);
	}
	for (i = 0; i < SLOTS; i++)
		post(s, NULL);
	*out = s;
	return 0;
fail:
	if (tls)
		grpc_server_credentials_release(tls);
	grpc_server_start(s->server); /* shutdown wants a started server */
fail_started:
	s->shutting_down = 1;
	grpc_server_shutdown_and_notify(s->server, s->cq, &s->t_shutdown);
	grpc_server_cancel_all_calls(s->server);
	grpc_completion_queue_shutdown(s->cq);
	while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN)
		;
	grpc_server_destroy(s->server);
	grpc_completion_queue_destroy(s->cq);
	for (i = 0; i < s->nunix; i++)
		unlink(s->unix_paths[i]);
	reflect_free(s->reflect);
	free(s);
	grpc_shutdown_blocking();
	return r;
}

void grpcsrv_stop(struct grpc_srv *s, unsigned grace_ms)
{
	struct timespec until;
	struct rpc *c;
	size_t i;
	int done;

	__atomic_store_n(&s->shutting_down, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&s->wmu);
	for (c = s->watchers; c; c = c->wnext) {
		pthread_mutex_lock(&c->mu);
		end_stream(c, NODE_UNAVAILABLE, "procctl-node is shutting down");
		pthread_mutex_unlock(&c->mu);
	}
	pthread_mutex_unlock(&s->wmu);
	grpc_server_shutdown_and_notify(s->server, s->cq, &s->t_shutdown);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += grace_ms / 1000;
	until.tv_nsec += (long)(grace_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&s->smu);
	while (!s->shutdown_done && pthread_cond_timedwait(&s->scond, &s->smu, &until) == 0)
		;
	done = s->shutdown_done;
	pthread_mutex_unlock(&s->smu);
	if (!done) {
		node_log(PROCCTL_LOG_WARN, "calls_cancelled", "reason=\"grace period over\" grace_ms=%u", grace_ms);
		grpc_server_cancel_all_calls(s->server);
		pthread_mutex_lock(&s->smu);
		while (!s->shutdown_done)
			pthread_cond_wait(&s->scond, &s->smu);
		pthread_mutex_unlock(&s->smu);
	}
	grpc_server_cancel_all_calls(s->server); /* streams still open */
	grpc_server_destroy(s->server);
	grpc_completion_queue_shutdown(s->cq);
	pthread_join(s->thread, NULL);
	grpc_completion_queue_destroy(s->cq);
	for (i = 0; i < s->nunix; i++)
		unlink(s->unix_paths[i]);
	reflect_free(s->reflect);
	pthread_mutex_destroy(&s->wmu);
	pthread_mutex_destroy(&s->smu);
	pthread_cond_destroy(&s->scond);
	free(s);
	grpc_shutdown_blocking();
}
