/* SPDX-License-Identifier: Apache-2.0 */
/* service.c - the NodeService requests the loop serves (node_handle):
 * listing, reading, publishing, waiting, arbiters, metrics; a watch's
 * start is watch.c's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_int.h"

/* The process a ProcessRef names. */
static enum node_code resolve_ref(struct node *n, const PbRef *r, struct proc **out, const char **why)
{
	struct proc *hit = NULL;
	size_t i, found = 0;
	uint64_t instance;
	int named; /* an id given, all zeros included: only that region is meant */
	if (!r || r->pid <= 0) {
		*why = "process.pid: required (a pid in the daemon's namespace)";
		return NODE_INVALID_ARGUMENT;
	}
	if (hexid_parse(r->instance_id, &instance) < 0) {
		*why = "process.instance_id: 16 hex digits, or empty for the pid's only region";
		return NODE_INVALID_ARGUMENT;
	}
	named = r->instance_id && *r->instance_id;
	for (i = 0; i < n->nprocs; i++) {
		struct proc *p = n->procs[i];
		if (p->key.pid == r->pid && (!named || instance == p->instance)) {
			hit = p;
			found++;
		}
	}
	if (!found) {
		*why = "no such process attached";
		return NODE_NOT_FOUND;
	}
	if (found > 1) {
		*why = "the pid has several regions: name one by process.instance_id";
		return NODE_INVALID_ARGUMENT;
	}
	*out = hit;
	return NODE_OK;
}

static void do_list(struct node *n, struct node_job *job)
{
	Procctl__V1__ListProcessesRequest *rq = (void *)job->req;
	Procctl__V1__ListProcessesResponse m = PROCCTL__V1__LIST_PROCESSES_RESPONSE__INIT;
	struct arena a = {0};
	struct proc **v;
	struct selector f;
	struct podsel ps;
	char err[LABELSEL_MAX + 600];
	enum node_code code = filter_from_pb(n, rq->filter, &f, &ps, err, sizeof err);
	ssize_t c, i;
	if (code) {
		job_finish(job, code, err, NULL);
		return;
	}
	if ((c = procs_matching(n, &f, &ps, &v)) < 0) {
		job_finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
		return;
	}
	m.processes = ar_alloc(&a, sizeof *m.processes * (size_t)(c ? c : 1));
	for (i = 0; m.processes && i < c; i++)
		m.processes[m.n_processes++] = mk_process(&a, v[i]);
	free(v);
	job_finish_arena(job, &a, &m.base);
}

static void do_get(struct node *n, struct node_job *job)
{
	Procctl__V1__GetProcessRequest *rq = (void *)job->req;
	Procctl__V1__GetProcessResponse m = PROCCTL__V1__GET_PROCESS_RESPONSE__INIT;
	struct arena a = {0};
	struct proc *p;
	const char *why = NULL;
	enum node_code code = resolve_ref(n, rq->process, &p, &why);
	if (code) {
		job_finish(job, code, why, NULL);
		return;
	}
	m.process = mk_process(&a, p);
	job_finish_arena(job, &a, &m.base);
}

static void do_read_state(struct node *n, struct node_job *job)
{
	Procctl__V1__ReadStateRequest *rq = (void *)job->req;
	struct proc *p;
	const char *why = NULL;
	enum node_code code = resolve_ref(n, rq->process, &p, &why);
	if (code) {
		job_finish(job, code, why, NULL);
		return;
	}
	proc_read_for(n, p, job);
}

/* Publish and Clear: write to the selected processes, then wait. */
static void do_write(struct node *n, struct node_job *job)
{
	const PbSelector *sel;
	const ProtobufCBinaryData *payload = NULL;
	uint32_t wait_ms;
	struct selector f;
	struct podsel ps;
	struct proc **v = NULL;
	struct wait *w;
	char err[LABELSEL_MAX + 600];
	enum node_code code;
	ssize_t c, i;

	if (job->method == NODE_PUBLISH) {
		Procctl__V1__PublishRequest *rq = (void *)job->req;
		sel = rq->selector;
		payload = &rq->payload;
		wait_ms = rq->wait_ms;
		if (!payload->len) {
			job_finish(job, NODE_INVALID_ARGUMENT, "payload: empty (Clear withdraws a config)", NULL);
			return;
		}
	} else {
		Procctl__V1__ClearRequest *rq = (void *)job->req;
		sel = rq->selector;
		wait_ms = rq->wait_ms;
	}
	if ((code = filter_from_pb(n, sel, &f, &ps, err, sizeof err))) {
		job_finish(job, code, err, NULL);
		return;
	}
	if (!f.pid && (!f.consumer[0] || !f.version)) {
		job_finish(job, NODE_INVALID_ARGUMENT,
			   "selector: a write names a pid, or a consumer and the schema_version its payload is "
			   "in (0 matches any version only in calls that read: ListProcesses, WatchEvents)", NULL);
		return;
	}
	if ((c = procs_matching(n, &f, &ps, &v)) < 0) {
		job_finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
		return;
	}
	if (f.pid && !c) {
		free(v);
		job_finish(job, NODE_NOT_FOUND, "no such process attached", NULL);
		return;
	}
	for (i = 1; i < c; i++)
		if (strcmp(v[i]->key.consumer, v[0]->key.consumer) || v[i]->key.version != v[0]->key.version) {
			free(v);
			job_finish(job, NODE_INVALID_ARGUMENT,
				   "selector: the processes are of several consumers or schema versions: name one",
				   NULL);
			return;
		}
	if (f.pid && payload)
		for (i = 0; i < c; i++)
			if (payload->len > v[i]->payload_cap) {
				char msg[96];
				snprintf(msg, sizeof msg, "payload: %zu bytes, over the process's capacity of %u",
					 payload->len, v[i]->payload_cap);
				free(v);
				job_finish(job, NODE_INVALID_ARGUMENT, msg, NULL);
				return;
			}
	w = wait_write_all(n, job, v, (size_t)c, payload, wait_ms, f.pid != 0);
	free(v);
	if (w)
		node_log(PROCCTL_LOG_DEBUG, job->method == NODE_PUBLISH ? "publish" : "clear",
			 "processes=%zd bytes=%zu wait_ms=%u", c, payload ? payload->len : 0, wait_ms);
}

static void do_wait_ack(struct node *n, struct node_job *job)
{
	Procctl__V1__WaitAckRequest *rq = (void *)job->req;
	struct proc *p;
	struct wait *w;
	const char *why = NULL;
	enum node_code code = resolve_ref(n, rq->process, &p, &why);
	if (code) {
		job_finish(job, code, why, NULL);
		return;
	}
	if (!p->first_gen || rq->generation < p->first_gen || rq->generation > procctl_client_config_gen(p->c)) {
		job_finish(job, NODE_INVALID_ARGUMENT, "generation: not one published to this process", NULL);
		return;
	}
	if (!(w = wait_new(n, job, 1, rq->wait_ms)))
		return;
	wait_item_pending(n, w, 0, p, rq->generation);
	wait_start(n, w);
	proc_read_state(n, p, 0);
}

static void fill_arbiter(struct arena *a, const struct arb *ab, Procctl__V1__Arbiter *m, int64_t now)
{
	size_t i, j;
	procctl__v1__arbiter__init(m);
	m->kind = ar_str(a, ab->cfg->name);
	m->kind_number = ab->cfg->kind;
	m->hold_ns = ab->cfg->hold_ns;
	m->resources = ar_alloc(a, sizeof *m->resources * (ab->nsnap ? ab->nsnap : 1));
	for (i = 0; m->resources && i < ab->nsnap; i++) {
		const struct procctl_arbiter_snapshot *s = &ab->snap[i];
		Procctl__V1__ArbiterResource *r = ar_alloc(a, sizeof *r);
		if (!r)
			return;
		procctl__v1__arbiter_resource__init(r);
		r->kind = ar_str(a, ab->cfg->name);
		r->id = ar_resid(a, s->res.id);
		r->holder = mk_ref(a, s->holder_pid, s->holder_instance);
		r->grant_id = ar_hexid(a, s->grant_id);
		r->held_ns = s->held_ns;
		r->pending_ns = s->pending_since_ns && now > (int64_t)s->pending_since_ns
					? (uint64_t)now - s->pending_since_ns
					: 0;
		r->hold_ns_total = s->hold_ns_total;
		r->pending_ns_total = s->pending_ns;
		r->blocked_ns_total = s->blocked_ns;
		r->handoffs = s->handoffs;
		r->waiters = s->waiters;
		r->waiting = ar_alloc(a, sizeof *r->waiting * (s->nwaiting ? s->nwaiting : 1));
		for (j = 0; r->waiting && j < s->nwaiting; j++)
			r->waiting[r->n_waiting++] = mk_ref(a, s->waiting[j].pid, s->waiting[j].instance);
		m->resources[m->n_resources++] = r;
	}
}

static void do_arbiters(struct node *n, struct node_job *job)
{
	struct arena a = {0};
	int64_t now;
	size_t i;
	arbiters_tick(n); /* as of now, not of the last tick */
	now = now_ns();
	if (job->method == NODE_LIST_ARBITERS) {
		Procctl__V1__ListArbitersResponse m = PROCCTL__V1__LIST_ARBITERS_RESPONSE__INIT;
		m.arbiters = ar_alloc(&a, sizeof *m.arbiters * (n->narb ? n->narb : 1));
		for (i = 0; m.arbiters && i < n->narb; i++) {
			Procctl__V1__Arbiter *x = ar_alloc(&a, sizeof *x);
			if (!x)
				break;
			fill_arbiter(&a, &n->arb[i], x, now);
			m.arbiters[m.n_arbiters++] = x;
		}
		job_finish_arena(job, &a, &m.base);
		return;
	} else {
		Procctl__V1__GetArbiterRequest *rq = (void *)job->req;
		Procctl__V1__GetArbiterResponse m = PROCCTL__V1__GET_ARBITER_RESPONSE__INIT;
		Procctl__V1__Arbiter x;
		for (i = 0; i < n->narb; i++) {
			char num[16];
			snprintf(num, sizeof num, "%u", n->arb[i].cfg->kind);
			if (!strcmp(n->arb[i].cfg->name, rq->kind) || !strcmp(num, rq->kind))
				break; /* by its name, or its number */
		}
		if (i == n->narb) {
			job_finish(job, NODE_NOT_FOUND, "no arbiter for that kind", NULL);
			return;
		}
		fill_arbiter(&a, &n->arb[i], &x, now);
		m.arbiter = &x;
		job_finish_arena(job, &a, &m.base);
		return;
	}
}

static void do_metrics(struct node *n, struct node_job *job)
{
	arbiters_tick(n); /* their totals as of now: a sleeping arbiter's are its last tick's */
	if (!job->metrics) {
		job_finish(job, NODE_INTERNAL, "no writer for the metrics", NULL);
		return;
	}
	node_render_metrics(n, job->metrics);
	job_finish(job, NODE_OK, NULL, NULL);
}

void node_handle(struct node *n, struct node_job *job)
{
	if (job->method != NODE_WATCH_EVENTS)
		watch_share_end(n); /* it may change what a snapshot holds */
	switch (job->method) {
	case NODE_LIST_PROCESSES:
		do_list(n, job);
		return;
	case NODE_GET_PROCESS:
		do_get(n, job);
		return;
	case NODE_WATCH_EVENTS:
		do_watch(n, job);
		return;
	case NODE_PUBLISH:
	case NODE_CLEAR:
		do_write(n, job);
		return;
	case NODE_WAIT_ACK:
		do_wait_ack(n, job);
		return;
	case NODE_READ_STATE:
		do_read_state(n, job);
		return;
	case NODE_LIST_ARBITERS:
	case NODE_GET_ARBITER:
		do_arbiters(n, job);
		return;
	case NODE_SET_DESIRED:
		do_set_desired(n, job);
		return;
	case NODE_DELETE_DESIRED:
		do_delete_desired(n, job);
		return;
	case NODE_LIST_DESIRED:
		do_list_desired(n, job);
		return;
	case NODE_METRICS:
		do_metrics(n, job);
		return;
	case NODE_CANCEL:
		waits_cancel(n, job->cancel_id);
		job_finish(job, NODE_OK, NULL, NULL);
		return;
	}
	job_finish(job, NODE_UNIMPLEMENTED, "no such method", NULL);
}
