/* SPDX-License-Identifier: Apache-2.0 */
/* waits.c - writes that wait: a Publish, Clear, SetDesiredConfig or
 * WaitAck becomes a wait the loop settles as it reads acks (the library's
 * ack decision), and answers when all are settled or its time is up. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_int.h"

/* A refusal in words: the errno's name and text, and the status the
 * process reported with it when that is text (st: the state block read
 * with the ack, or NULL). */
static void rejected_why(char *buf, size_t len, int32_t status, const struct procctl_state *st)
{
	const char *name = status < 0 && status > -4096 ? strerrorname_np((int)-status) : NULL;
	size_t i, o;
	if (name)
		o = (size_t)snprintf(buf, len, "%s (%s)", name, strerror((int)-status));
	else
		o = (size_t)snprintf(buf, len, "status %d", (int)status);
	if (!st || !st->data_len || o >= len)
		return;
	for (i = 0; i < st->data_len; i++)
		if (st->data[i] < 0x20 || st->data[i] > 0x7e)
			return;
	snprintf(buf + o, len - o, ": %.*s", (int)st->data_len, (const char *)st->data);
}

/* Settle one item from what p acked (the library's decision, SPEC.md
 * 7.3: an ack above what was published is none): 1 when it is done. */
static int wait_settle(struct wait_item *it, const struct proc *p, const struct procctl_state *st)
{
	int kind;
	if (it->done)
		return 1;
	if (!p->have_state ||
	    !(kind = procctl_ack_decide(it->gen, procctl_client_published_max(p->c), p->acked_gen, p->ack_status)))
		return 0;
	switch (kind) {
	case PROCCTL_ACK_SUPERSEDED:
		it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_SUPERSEDED;
		break;
	case PROCCTL_ACK_REJECTED:
		it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_REJECTED;
		it->pstatus = p->ack_status;
		rejected_why(it->error, sizeof it->error, p->ack_status, st);
		break;
	default:
		it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_APPLIED;
	}
	it->done = 1;
	return 1;
}

void waits_update(struct node *n, struct proc *p, const struct procctl_state *st)
{
	struct wait *w;
	size_t i;
	for (w = n->waits; w; w = w->next)
		for (i = 0; i < w->n; i++)
			if (w->item[i].p == p)
				wait_settle(&w->item[i], p, st);
}

static void wait_reply(struct wait *w)
{
	struct arena a = {0};
	PbResult **rs = ar_alloc(&a, sizeof *rs * (w->n ? w->n : 1));
	size_t i;
	for (i = 0; rs && i < w->n; i++) {
		const struct wait_item *it = &w->item[i];
		PbResult *r = ar_alloc(&a, sizeof *r);
		if (!r)
			break;
		procctl__v1__publish_result__init(r);
		r->process = mk_ref(&a, it->pid, it->instance);
		r->generation = it->gen;
		r->status = it->done || !it->gen ? it->status : PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_PENDING;
		r->process_status = it->pstatus;
		r->error = ar_str(&a, it->error);
		rs[i] = r;
	}
	switch (w->job->method) {
	case NODE_PUBLISH: {
		Procctl__V1__PublishResponse m = PROCCTL__V1__PUBLISH_RESPONSE__INIT;
		m.n_results = w->n;
		m.results = rs;
		job_finish_arena(w->job, &a, &m.base);
		break;
	}
	case NODE_CLEAR: {
		Procctl__V1__ClearResponse m = PROCCTL__V1__CLEAR_RESPONSE__INIT;
		m.n_results = w->n;
		m.results = rs;
		job_finish_arena(w->job, &a, &m.base);
		break;
	}
	case NODE_SET_DESIRED: {
		Procctl__V1__SetDesiredConfigResponse m = PROCCTL__V1__SET_DESIRED_CONFIG_RESPONSE__INIT;
		m.config = mk_desired(&a, &w->desired);
		m.n_results = w->n;
		m.results = rs;
		job_finish_arena(w->job, &a, &m.base);
		break;
	}
	default: {
		Procctl__V1__WaitAckResponse m = PROCCTL__V1__WAIT_ACK_RESPONSE__INIT;
		m.result = rs ? rs[0] : NULL;
		job_finish_arena(w->job, &a, &m.base);
		break;
	}
	}
}

/* Answer the waits that are settled or past their deadline; mark the
 * processes the rest wait on. */
void waits_sweep(struct node *n, int64_t now, int all)
{
	struct wait **pw = &n->waits, *w;
	size_t i, k;
	for (k = 0; k < n->nprocs; k++)
		n->procs[k]->waiting = 0;
	while ((w = *pw)) {
		int open = 0;
		for (i = 0; i < w->n; i++)
			if (!w->item[i].done && w->item[i].gen)
				open = 1;
		if (!open || all || w->expired) {
			*pw = w->next;
			if (open && !all && w->call_deadline) {
				/* The call is over: what gRPC's own timer says too, whichever is first. */
				job_finish(w->job, NODE_DEADLINE_EXCEEDED, "the call's deadline came before the acks", NULL);
			} else {
				wait_reply(w);
			}
			wait_free(n, w);
			continue;
		}
		for (i = 0; i < w->n; i++)
			if (w->item[i].p && !w->item[i].done) {
				w->item[i].p->waiting = 1;
				proc_poll_soon(n, w->item[i].p, now);
			}
		pw = &w->next;
	}
}

static void on_deadline(struct timer *t, int64_t now)
{
	(void)now;
	container_of(t, struct wait, t_deadline)->expired = 1; /* waits_sweep answers it */
}

/* May job wait wait_ms more? 0, or the job answered and -1. Bounded: the
 * time, the waits in all and per peer (a client that leaves its calls
 * behind, or loops over them, holds only so much). */
static int wait_admit(struct node *n, struct node_job *job, uint32_t wait_ms)
{
	const struct wait *w;
	size_t all = 0, peer = 0;
	char msg[160];
	if (!wait_ms)
		return 0;
	if (wait_ms > n->cfg.max_wait_ms) {
		snprintf(msg, sizeof msg, "wait_ms: %u, over max_wait_ms (%u)", wait_ms, n->cfg.max_wait_ms);
		job_finish(job, NODE_INVALID_ARGUMENT, msg, NULL);
		return -1;
	}
	for (w = n->waits; w; w = w->next) {
		all++;
		peer += job->peer[0] && !strcmp(w->job->peer, job->peer);
	}
	if (all >= n->cfg.max_waits || peer >= n->cfg.max_waits_per_peer) {
		snprintf(msg, sizeof msg, "%s: %zu calls waiting for acks already", all >= n->cfg.max_waits ? "max_waits"
			 : "max_waits_per_peer", all >= n->cfg.max_waits ? all : peer);
		node_log_limited(PROCCTL_LOG_WARN, "waits_refused", "peer=%s reason=%s", job->peer[0] ? job->peer : "-",
				 all >= n->cfg.max_waits ? "max_waits" : "max_waits_per_peer");
		job_finish(job, NODE_RESOURCE_EXHAUSTED, msg, NULL);
		return -1;
	}
	return 0;
}

struct wait *wait_new(struct node *n, struct node_job *job, size_t c, uint32_t wait_ms)
{
	struct wait *w;
	if (wait_admit(n, job, wait_ms) < 0)
		return NULL;
	if (!(w = calloc(1, sizeof *w + sizeof w->item[0] * c)))
		goto nomem;
	w->job = job;
	w->n = c;
	w->deadline_ns = now_ns() + (int64_t)wait_ms * MS;
	if (w->deadline_ns >= job->deadline_ns) {
		w->deadline_ns = job->deadline_ns;
		w->call_deadline = 1;
	}
	w->t_deadline = TIMER_INIT(on_deadline);
	if (timer_arm(&n->timers, &w->t_deadline, w->deadline_ns) < 0)
		goto nomem;
	return w;
nomem:
	free(w);
	job_finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
	return NULL;
}

void waits_cancel(struct node *n, uint64_t id)
{
	struct wait **pw, *w;
	for (pw = &n->waits; id && (w = *pw); pw = &w->next)
		if (w->job->id == id) {
			*pw = w->next;
			job_finish(w->job, NODE_CANCELLED, "the call was cancelled", NULL);
			wait_free(n, w);
			return;
		}
}

void wait_free(struct node *n, struct wait *w)
{
	timer_disarm(&n->timers, &w->t_deadline);
	free(w->desired.payload);
	free(w);
}

/* A write to p refused with g: its named status, and why. */
static void write_refused(struct wait_item *it, const struct proc *p, int64_t g)
{
	enum procctl_ownership own = procctl_client_ownership(p->c);
	if (g == -ESRCH || g == -ESTALE) {
		it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_GONE;
	} else if ((g == -EPERM || g == -EBUSY) && own == PROCCTL_OWN_CONFLICT) {
		it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_CONFLICT;
		snprintf(it->error, sizeof it->error, "the region's owner word names another lock domain");
	} else if (g == -EBUSY || (g == -EPERM && own == PROCCTL_OWN_BROKEN)) {
		it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_BROKEN;
		snprintf(it->error, sizeof it->error, "the region is not as this daemon left it (another writer, or "
			 "the process wrote over it)");
	} else if (g == -EPERM) {
		it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_NOT_OWNER;
		snprintf(it->error, sizeof it->error, "this daemon does not own %s's regions", p->key.consumer);
	} else {
		it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_FAILED;
		snprintf(it->error, sizeof it->error, "write refused: %s", strerror((int)-g));
	}
}

/* Write payload (NULL: clear) to each of v, as one wait of job's: its
 * results, in v's order. NULL when out of memory (job answered). */
struct wait *wait_write_all(struct node *n, struct node_job *job, struct proc **v, size_t c,
			      const ProtobufCBinaryData *payload, uint32_t wait_ms)
{
	struct wait *w = wait_new(n, job, c, wait_ms);
	size_t i;
	if (!w)
		return NULL;
	for (i = 0; i < c; i++) {
		struct wait_item *it = &w->item[i];
		struct proc *p = v[i];
		int64_t g;
		it->p = p;
		it->pid = p->key.pid;
		it->instance = p->instance;
		if (payload && payload->len > p->payload_cap) {
			it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_TOO_LARGE;
			snprintf(it->error, sizeof it->error, "payload over the process's capacity of %u bytes",
				 p->payload_cap);
			it->done = 1;
			continue;
		}
		g = payload ? procctl_client_write(p->c, payload->data, payload->len) : procctl_client_clear(p->c);
		proc_wrote(n, p, g);
		if (g > 0) {
			it->gen = (uint64_t)g;
			it->status = wait_ms ? PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_PENDING
					     : PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_WRITTEN;
			it->done = !wait_ms;
			continue;
		}
		it->done = 1;
		write_refused(it, p, g);
	}
	return w;
}

/* A generation just written has no ack yet: its doorbell, or a poll,
 * brings it. */
void wait_start(struct node *n, struct wait *w)
{
	w->next = n->waits;
	n->waits = w;
}
