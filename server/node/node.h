/* SPDX-License-Identifier: Apache-2.0 */
/* node.h - procctl-node's event loop: the registries, the arbiters, the
 * table of attached processes, the waits for acks and the event history.
 * One thread runs it (node_run). The gRPC side (grpc_server.c) and the
 * HTTP side (http.c), each on threads of its own, hand it decoded
 * requests with node_submit; the loop answers each job once through the
 * job's node_reply_ops, and calls out through node_hooks (wake the
 * watchers, more metrics): it knows no transport. */
#ifndef PROCCTL_NODE_NODE_H
#define PROCCTL_NODE_NODE_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include <protobuf-c/protobuf-c.h>

#include "config/config.h"
#include "events.h"
#include "sys/log.h"
#include "procctl_agent.h"

/* gRPC status codes, by the protocol's numbers. */
enum node_code {
	NODE_OK = 0,
	NODE_CANCELLED = 1,
	NODE_INVALID_ARGUMENT = 3,
	NODE_DEADLINE_EXCEEDED = 4,
	NODE_NOT_FOUND = 5,
	NODE_ALREADY_EXISTS = 6,
	NODE_PERMISSION_DENIED = 7,
	NODE_RESOURCE_EXHAUSTED = 8,
	NODE_FAILED_PRECONDITION = 9,
	NODE_OUT_OF_RANGE = 11,
	NODE_UNIMPLEMENTED = 12,
	NODE_INTERNAL = 13,
	NODE_UNAVAILABLE = 14,
	NODE_UNAUTHENTICATED = 16,
};

/* The NodeService methods the loop serves. */
enum node_method {
	NODE_LIST_PROCESSES,
	NODE_GET_PROCESS,
	NODE_WATCH_EVENTS,
	NODE_PUBLISH,
	NODE_CLEAR,
	NODE_WAIT_ACK,
	NODE_READ_STATE,
	NODE_LIST_ARBITERS,
	NODE_GET_ARBITER,
	NODE_SET_DESIRED,
	NODE_DELETE_DESIRED,
	NODE_LIST_DESIRED,
	NODE_METRICS, /* no request: the loop's part of the Prometheus exposition, written to job->metrics */
	NODE_CANCEL,  /* no request: the job cancel_id's call is gone; its wait ends (answered CANCELLED) */
};

struct node_job;
struct node_packed;
struct prom;

/* Where a job's answer goes. Called on the loop's thread, once per job;
 * the job is freed when it returns. */
struct node_reply_ops {
	/* resp is NULL unless code is NODE_OK (and for NODE_METRICS). */
	void (*reply)(struct node_job *job, enum node_code code, const char *msg, const ProtobufCMessage *resp);
	/* NODE_WATCH_EVENTS only: the stream starts with first, a packed
	 * WatchEventsResponse that the watchers starting with it share
	 * (NULL: a resume; the callee takes a reference of its own to keep
	 * it), and goes on with the events after cursor matching filter. */
	void (*watch)(struct node_job *job, struct node_packed *first, uint64_t cursor, const struct selector *filter);
};

/* A message packed once for many readers: len bytes, never changed
 * after it is made, freed with its last reference (any thread). */
struct node_packed {
	unsigned refs; /* atomic */
	size_t len;
	uint8_t data[];
};
/* m packed, one reference held; NULL when out of memory. */
struct node_packed *node_packed_new(const ProtobufCMessage *m);
struct node_packed *node_packed_ref(struct node_packed *p);
void node_packed_unref(struct node_packed *p); /* NULL: nothing */

/* What a caller may do, for the room it may take (waits): a writer
 * changes things (the Unix socket, mTLS, HTTP with its key), a reader
 * only reads (plain TCP without insecure_tcp_writes), root on the Unix
 * socket has room no one else may take. A zeroed job is a writer's. */
enum node_peer_class { NODE_PEER_WRITER, NODE_PEER_READER, NODE_PEER_ROOT };

/* One request handed to the loop. */
struct node_job {
	enum node_method method;
	ProtobufCMessage *req; /* unpacked (NULL for NODE_METRICS); the loop frees it */
	int64_t deadline_ns;   /* the call's deadline, CLOCK_MONOTONIC; INT64_MAX: none */
	const struct node_reply_ops *ops;
	void *ctx;             /* the submitter's */
	struct prom *metrics;  /* NODE_METRICS: the writer the loop writes its part to (the submitter's,
				* taken by the loop: the reply gives it back, or it is freed) */
	uint64_t id;           /* the submitter's, unique for the daemon's life (0: none): what NODE_CANCEL names */
	uint64_t cancel_id;    /* NODE_CANCEL: the job whose call is gone */
	char peer[64];         /* who asked ("": unknown): "uid:N" on the Unix socket, "x509:SUBJECT" over mTLS,
				* "addr:A" on plain TCP; waits are bounded per peer */
	enum node_peer_class peer_class;
	struct node_job *next;
	struct node_job *later, **later_tail, *hnext; /* the loop's queue's (jobq.h) */
};

struct node;
struct nodelock;

/* What the loop calls out to; main wires them to the serving side. Each
 * may be NULL. Called on the loop's thread. */
struct node_hooks {
	void (*changed)(void *arg); /* events were appended, or readiness changed */
	void (*ready)(void *arg);   /* once: the first scans are done and the serving side is up */
	void (*alive)(void *arg);   /* every alive_ns, from the loop's timers: a loop that hangs stops
				     * calling it (a watchdog's ping) */
	int64_t alive_ns;           /* 0: alive is not called */
	void *arg;
};

/* Set up the loop for cfg (the registries take the node locks as they
 * can: a consumer another agent owns is served read-only), holding lock
 * (NODE.lock; NULL: none): the desired store is written only while it is
 * current, and the loop stops at once when it is deleted or replaced
 * (node_lock_lost). NULL and a message in err. */
struct node *node_new(const struct node_cfg *cfg, const struct nodelock *lock, char *err, size_t errlen);
/* After node_run returned: 1 when it stopped because NODE.lock was lost. */
int node_lock_lost(const struct node *n);
/* The hooks (before node_run, once the serving side is up: from then on
 * node_serving can say yes). */
void node_set_hooks(struct node *n, const struct node_hooks *h);
/* The loop sleeps (ppoll) with its thread's signal mask set to mask, and
 * only then: a program that blocks the signals it handles everywhere
 * else has them handled on the loop's thread, while it waits, and never
 * in a library's thread (whose calls would fail with EINTR, or, under
 * ThreadSanitizer, hold the handler until that thread next wakes). Not
 * called: the mask is left as it is. */
void node_set_sigmask(struct node *n, const sigset_t *mask);
/* Run until node_stop; then answer every job still held UNAVAILABLE.
 * 0, or -errno when the loop failed. */
int node_run(struct node *n);
/* Follow the configuration file at path (before node_run): when it
 * changes, written in place or replaced (a rename over it, or over a
 * symlink on its way: Kubernetes swaps the ..data symlink of a mounted
 * ConfigMap), build(c, err, errlen, arg) builds the whole configuration
 * again and the loop applies what can change while it runs, the
 * [desired] sections; a change to anything else is logged as needing a
 * restart, and a configuration that does not build is logged and
 * ignored (the running one stays). 0 or -errno (inotify refused). */
int node_watch_config(struct node *n, const char *path,
		      int (*build)(struct node_cfg *c, char *err, size_t errlen, void *arg), void *arg);
/* Any thread, async-signal-safe: make node_run return. */
void node_stop(struct node *n);
/* Any thread, async-signal-safe (SIGHUP): the loop reads the followed
 * configuration file again now, as on a change (node_watch_config); without
 * one it logs that there is nothing to read. */
void node_reload(struct node *n);
/* After node_run returned: hand off (SIGTERM: RELEASED, the consumer
 * locks dropped: a successor takes over) or, with PROCCTL_CLOSE_UNINSTALL,
 * revert every process. Once only; node_close does it when it was not. */
void node_release(struct node *n, unsigned flags);
/* After node_run returned: node_release if not done, then free. The
 * hello probe's uprobes go last: each close waits in the kernel for RCU
 * grace periods, serialized by its event_mutex (70-90 ms each on a small
 * VM), and the hand-off must not wait for them. */
void node_close(struct node *n, unsigned flags);

/* Any thread: queue a request for the loop. 0, or -ESHUTDOWN when the
 * loop no longer takes requests (the caller answers UNAVAILABLE). */
int node_submit(struct node *n, struct node_job *job);
/* Any thread: 1 once every registry finished its first full scan. */
int node_ready(const struct node *n);
/* Any thread: ready, gRPC serving, and not stopping (/readyz). */
int node_serving(const struct node *n);
/* Any thread: how long the loop has been in its present turn, ns; 0
 * while it waits for work (a loop that hangs shows here). */
int64_t node_busy_ns(const struct node *n);
/* The event history the watchers read. */
struct events *node_events(struct node *n);

#endif
