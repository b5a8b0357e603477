/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_int.h - what the gRPC side's files share: the methods served, a
 * call (struct rpc) and its tags, the server. grpc_server.c owns the
 * server and its thread, grpc_request.c takes new calls, grpc_call.c runs
 * them (replies, streams, reflection). The design: grpc_server.c. */
#ifndef PROCCTL_NODE_GRPC_INT_H
#define PROCCTL_NODE_GRPC_INT_H

#include <pthread.h>
#include <stdint.h>

#include <grpc/grpc.h>
#include <grpc/support/time.h>
#include <protobuf-c/protobuf-c.h>

#include "grpc_conns.h"
#include "grpc_server.h"
#include "match/selector.h"

#define SLOTS 8            /* requests posted per method */
#define DRAIN_MS 500       /* at a stop, the calls open get this long to end before the connections are cut */
#define WATCH_SLOTS 32     /* ... for WatchEvents: many streams open at once */
/* Threads polling the connections. A connection's read runs on one, to
 * its end: a flood of streams cut at its limit still costs 35-90 ms
 * there, parsing what was sent before the cut and tearing those streams
 * down, and with one thread every other connection's bytes waited that
 * long (the soak's probe: p99 3.2 times its unloaded one, against 1.8
 * with four). */
#define IO_THREADS 4

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

extern const struct method methods[];
#define NMETHODS ((size_t)16) /* the entries of methods[] */
#define NCODES 17             /* gRPC status codes 0 .. 16 */

struct rpc;
struct tag {
	void (*fn)(struct rpc *c, int ok);
	struct rpc *c;
	struct tag *later; /* grpc_srv's later: its batch came after the queue closed */
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
	struct conn_peer who;      /* at the connection's other end */
	char ident[64];            /* who, for the limits per caller (node_job.peer) */
	enum node_peer_class klass;
	struct conn_ticket ticket; /* its hold on the connection and the calls open */
	struct tag t_req, t_send, t_recv, t_close, t_status;
	int client_cancelled;      /* RECV_CLOSE_ON_SERVER's result */
	int close_posted;          /* RECV_CLOSE_ON_SERVER is out (streams, NodeService calls) */
	uint64_t job_id;           /* a NodeService call's job, for NODE_CANCEL */
	grpc_slice status_msg;
	int have_status_msg;

	/* streams, under mu */
	pthread_mutex_t mu;
	int md_sent, sending, status_sent, closed, linked, watching;
	int end_pending;
	enum node_code end_code;
	char end_msg[160];
	struct node_packed *first; /* the snapshot (shared with the watchers that started with it),
				    * sent before the events */
	uint64_t cursor;
	struct selector filter;
	int health_sent;           /* the serving status last sent; -1 none */
	int health_known;          /* the service asked for is ours */
	grpc_byte_buffer *send_bb;
	struct rpc *wnext, *wprev;
	int counted_stream;        /* counted in s->nwatch (a stream that started) */
	struct rpc *snext, *sprev; /* the streams open, under s->wmu (slinked) */
	int slinked;
};

struct grpc_srv {
	const struct node_cfg *cfg;
	struct node *node;
	grpc_server *server;
	grpc_completion_queue *cq;    /* the calls' events (no I/O: cq_thread) */
	grpc_completion_queue *io_cq; /* the connections' I/O (io_thread); no events */
	void *handle[NMETHODS];
	pthread_t thread, io[IO_THREADS];
	size_t io_started;         /* I/O threads running */
	int started;
	struct reflect *reflect;
	pthread_mutex_t wmu;       /* the watcher list */
	struct rpc *watchers;
	struct rpc *streams;       /* every stream open, for their count per caller */
	int nwatch;                /* atomic: stream calls alive */
	int shutting_down;         /* atomic */
	int cq_closed;             /* atomic: cq is shut down, no batch may start on it */
	int starting;              /* atomic: batches being started (rpc_cq_close waits) */
	struct tag *later;         /* under smu: batches that came after cq closed, to fail */
	struct tag t_shutdown;
	pthread_mutex_t smu;
	pthread_cond_t scond;
	int shutdown_done;
	struct grpc_conns *conns;  /* the connections, bounded (grpc_conns.h) */
	char unix_paths[NODE_LISTEN_MAX][NODE_PATH_MAX];
	size_t nunix;
	uint64_t calls[NMETHODS + 1][NCODES]; /* atomic; the last row: unknown methods */
	uint64_t next_job_id;      /* atomic */
};

/* grpc_call.c: a call's references and batches */
void rpc_ref(struct rpc *c);
void rpc_unref(struct rpc *c);
void rpc_arm(struct tag *t, void (*fn)(struct rpc *c, int ok), struct rpc *c);
void rpc_batch(struct rpc *c, const grpc_op *ops, size_t n, struct tag *t);
/* The calls' queue shut down once no batch is being started on it; then,
 * after its thread, the batches that came too late ended as failed. */
void rpc_cq_close(struct grpc_srv *s);
void rpc_fail_later(struct grpc_srv *s);
/* ... ending calls: the status (and a unary call's message), under c->mu
 * for streams; a stream's end, now or after its send in flight (under
 * c->mu); the loop's answer to a NodeService call (drops its reference) */
void rpc_send_status(struct rpc *c, enum node_code code, const char *msg, grpc_byte_buffer *resp);
void rpc_end_stream(struct rpc *c, enum node_code code, const char *msg);
void rpc_reply(struct rpc *c, enum node_code code, const char *msg, const ProtobufCMessage *resp);
/* ... streams: is the node serving (ready, not shutting down); a
 * stream's RECV_CLOSE_ON_SERVER handler; link c into the watchers (the
 * caller's reference becomes the list's) and send what it has */
int grpcsrv_serving(struct grpc_srv *s);
void rpc_on_closed(struct rpc *c, int ok);
void rpc_watch(struct rpc *c);
/* ... reflection: receive the next request of c's stream */
void rpc_reflect_recv(struct rpc *c);
/* ... the loop's answers to jobs (job->ctx is the call) */
extern const struct node_reply_ops grpc_job_ops;

/* grpc_peer.c: count c on its connection and in all, and say who calls
 * (c->who, c->ident, c->klass): 0, or -1 when c was refused (and its
 * reference dropped); c's caller as the log names it ("peer=... cn=...") */
int call_admit(struct rpc *c);
void call_describe(struct rpc *c, char *buf, size_t len);

/* grpc_request.c: post one request slot for m (NULL: the catch-all) */
void grpcsrv_post(struct grpc_srv *s, const struct method *m);

#endif
