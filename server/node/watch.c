/* SPDX-License-Identifier: Apache-2.0 */
/* watch.c - WatchEvents' start (node_handle's): a resume from a token, or
 * a snapshot of the processes the filter matches. A snapshot is built and
 * packed once for the watches the loop takes one after another in a turn
 * with the same filter and nothing between them: a burst of watchers that
 * start together costs one snapshot, in the loop's time and in memory
 * (each stream holds a reference until it has sent it), not one each. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_int.h"

/* "<incarnation hex>.<seq>": 0 and the seq, or -1. */
static int parse_token(const struct node *n, const char *t, uint64_t *seq)
{
	char *end;
	unsigned long long inc, s;
	if (strlen(t) < 18 || t[16] != '.')
		return -1;
	errno = 0;
	inc = strtoull(t, &end, 16);
	if (errno || end != t + 16 || inc != n->incarnation || t[17] < '0' || t[17] > '9')
		return -1;
	s = strtoull(t + 17, &end, 10);
	if (errno || *end)
		return -1;
	*seq = s;
	return 0;
}

/* The processes f matches as of event seq, as a WatchEventsResponse
 * packed; NULL when out of memory. */
static struct node_packed *snapshot_pack(struct node *n, const struct selector *f, uint64_t seq)
{
	struct arena a = {0};
	Procctl__V1__Snapshot snap = PROCCTL__V1__SNAPSHOT__INIT;
	PbEvent ev = PROCCTL__V1__WATCH_EVENTS_RESPONSE__INIT;
	struct node_packed *p = NULL;
	char token[48];
	struct proc **v;
	ssize_t c, i;
	if ((c = procs_matching(n, f, NULL, &v)) < 0)
		return NULL;
	snap.processes = ar_alloc(&a, sizeof *snap.processes * (size_t)(c ? c : 1));
	for (i = 0; snap.processes && i < c; i++)
		snap.processes[snap.n_processes++] = mk_process(&a, v[i]);
	free(v);
	snprintf(token, sizeof token, "%016llx.%llu", (unsigned long long)n->incarnation, (unsigned long long)seq);
	ev.sequence = seq;
	ev.resume_token = token;
	ev.event_case = PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_SNAPSHOT;
	ev.snapshot = &snap;
	if (!a.failed)
		p = node_packed_new(&ev.base);
	ar_free(&a);
	return p;
}

/* The snapshot for f at seq: the one just made when it is the same,
 * else a new one (kept for the next watch). NULL when out of memory. */
static struct node_packed *snapshot_for(struct node *n, const struct selector *f, uint64_t seq)
{
	if (n->snap.msg && n->snap.seq == seq && selector_same(&n->snap.filter, f)) {
		n->stats.snapshots_shared++;
		return n->snap.msg;
	}
	watch_share_end(n);
	if (!(n->snap.msg = snapshot_pack(n, f, seq)))
		return NULL;
	n->snap.filter = *f;
	n->snap.seq = seq;
	n->stats.snapshots_built++;
	return n->snap.msg;
}

void watch_share_end(struct node *n)
{
	node_packed_unref(n->snap.msg);
	n->snap.msg = NULL;
}

void do_watch(struct node *n, struct node_job *job)
{
	Procctl__V1__WatchEventsRequest *rq = (void *)job->req;
	struct node_packed *first = NULL;
	struct selector f;
	struct podsel ps;
	char err[LABELSEL_MAX + 600];
	enum node_code code;
	uint64_t seq;
	/* Never for a watch, with kubernetes_api or without: refused first. */
	if (rq->filter && ((rq->filter->namespace_ && *rq->filter->namespace_) ||
			   (rq->filter->label_selector && *rq->filter->label_selector))) {
		job_finish(job, NODE_INVALID_ARGUMENT,
			   "filter.namespace, filter.label_selector: not for WatchEvents (events are matched where pods "
			   "are not known): filter by pod_uid, or ListProcesses by namespace and labels", NULL);
		return;
	}
	if ((code = filter_from_pb(n, rq->filter, &f, &ps, err, sizeof err))) {
		job_finish(job, code, err, NULL);
		return;
	}
	if (rq->resume_token[0]) {
		if (parse_token(n, rq->resume_token, &seq) < 0 || !events_resumable(n->ev, seq)) {
			job_finish(job, NODE_OUT_OF_RANGE,
				   "resume_token: unknown, of another daemon incarnation, or too old: watch without "
				   "one (a snapshot) and relist",
				   NULL);
			return;
		}
	} else {
		seq = events_last(n->ev);
		if (!(first = snapshot_for(n, &f, seq))) {
			job_finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
			return;
		}
	}
	job->ops->watch(job, first, seq, &f);
	protobuf_c_message_free_unpacked(job->req, NULL);
	free(job);
}
