/* SPDX-License-Identifier: Apache-2.0 */
/* jobq.h - the loop's requests, queued by who asked (node_job.peer): each
 * peer's in the order they came, the peers in turn, one request each, so
 * a peer with thousands queued (a client opening WatchEvents again and
 * again, each a snapshot of every process) delays another's next request
 * by at most one of its own. Allocates nothing: a peer's first request
 * stands for it in the turn and in the table, the rest wait behind it.
 * Not locked: node.c holds its mutex around every call. */
#ifndef PROCCTL_NODE_JOBQ_H
#define PROCCTL_NODE_JOBQ_H

#include <stddef.h>

#define JOBQ_BUCKETS 256

struct node_job;

struct jobq {
	struct node_job *head, **tail;         /* one request a peer, in turn */
	struct node_job *peers[JOBQ_BUCKETS]; /* those by their peer's hash */
	size_t n;                              /* requests queued */
};

void jobq_init(struct jobq *q);
/* job, behind those of its peer before it. */
void jobq_put(struct jobq *q, struct node_job *job);
/* The oldest request of the peer whose turn it is, or NULL. */
struct node_job *jobq_take(struct jobq *q);

#endif
