/* SPDX-License-Identifier: Apache-2.0 */
/* jobq.c - the loop's requests, a turn a peer (jobq.h). */
#include "jobq.h"

#include <stdint.h>
#include <string.h>

#include "node.h"

static unsigned bucket(const char *peer)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; *peer; peer++)
		h = (h ^ (uint8_t)*peer) * 16777619u;
	return h % JOBQ_BUCKETS;
}

void jobq_init(struct jobq *q)
{
	memset(q, 0, sizeof *q);
	q->tail = &q->head;
}

/* In turn: job stands for its peer. */
static void stand(struct jobq *q, struct node_job *job)
{
	struct node_job **b = &q->peers[bucket(job->peer)];
	job->hnext = *b;
	*b = job;
	job->next = NULL;
	*q->tail = job;
	q->tail = &job->next;
}

void jobq_put(struct jobq *q, struct node_job *job)
{
	struct node_job *s;
	q->n++;
	job->later = NULL;
	job->later_tail = &job->later;
	for (s = q->peers[bucket(job->peer)]; s; s = s->hnext)
		if (!strcmp(s->peer, job->peer)) {
			*s->later_tail = job;
			s->later_tail = &job->later;
			return;
		}
	stand(q, job);
}

struct node_job *jobq_take(struct jobq *q)
{
	struct node_job *job = q->head, **b, *next;
	if (!job)
		return NULL;
	q->n--;
	if (!(q->head = job->next))
		q->tail = &q->head;
	for (b = &q->peers[bucket(job->peer)]; *b != job; b = &(*b)->hnext)
		;
	*b = job->hnext;
	if ((next = job->later)) { /* the peer's next stands for it, at the back */
		next->later_tail = job->later_tail; /* the chain behind it, A's or a later one's */
		stand(q, next);
	}
	job->next = job->later = job->hnext = NULL;
	job->later_tail = NULL;
	return job;
}
