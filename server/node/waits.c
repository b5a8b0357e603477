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

/* Item it of w is done (its status set): counted, and no longer an
 * ack its process is polled for. */
static void item_done(struct wait *w, struct wait_item *it)
{
	if (it->done)
		return;
	it->done = 1;
	w->open--;
	if (it->p && it->gen)
		it->p->waiting--;
}

static void item_link(struct wait_item *it, struct proc *p)
{
	it->p = p;
	it->pid = p->key.pid;
	it->instance = p->instance;
	if ((it->pnext = p->items))
		p->items->pprev = &it->pnext;
	it->pprev = &p->items;
	p->items = it;
}

static void item_unlink(struct wait_item *it)
{
	if (!it->p)
		return;
	if (!it->done && it->gen)
		it->p->waiting--;
	if (it->pnext)
		it->pnext->pprev = it->pprev;
	*it->pprev = it->pnext;
	it->p = NULL;
}

/* Settle one item from what p acked (the library's decision, SPEC.md
 * 7.3: an ack above what was published is none). */
static void wait_settle(struct wait_item *it, const struct proc *p, const struct procctl_state *st)
{
	int kind;
	if (it->done || !it->gen || !p->have_state ||
	    !(kind = procctl_ack_decide(it->gen, procctl_client_published_max(p->c), p->acked_gen, p->ack_status)))
		return;
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
	item_done(it->w, it);
}

void waits_update(struct node *n, struct proc *p, const struct procctl_state *st)
{
	struct wait_item *it;
	(void)n;
	for (it = p->items; it; it = it->pnext)
		wait_settle(it, p, st);
}

void waits_gone(struct node *n, struct proc *p)
{
	(void)n;
	while (p->items) {
		struct wait_item *it = p->items;
		if (!it->done) {
			it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_GONE;
			item_done(it->w, it);
		}
		item_unlink(it);
	}
}

/* A pid's call whose write was refused (not this daemon's region,
 * another domain's, broken): FAILED_PRECONDITION, saying which. */
static int wait_refused(const struct wait *w)
{
	const struct wait_item *it = &w->item[0];
	if (!w->single || w->n != 1 || !it->done)
		return 0;
	if (it->status != PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_NOT_OWNER &&
	    it->status != PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_CONFLICT &&
	    it->status != PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_BROKEN)
		return 0;
	job_finish(w->job, NODE_FAILED_PRECONDITION, it->error, NULL);
	return 1;
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
	case NODE_DELETE_DESIRED: {
		Procctl__V1__DeleteDesiredConfigResponse m = PROCCTL__V1__DELETE_DESIRED_CONFIG_RESPONSE__INIT;
		if ((m.config = mk_desired(&a, &w->desired)))
			m.config->rollout = mk_rollout(&a, &w->rollout);
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

/* Answer the waits whose writes are out and which are settled, past
 * their deadline or cancelled (all: every wait, the daemon stops). */
void waits_sweep(struct node *n, int all)
{
	struct wait **pw = &n->waits, *w;
	size_t i;
	while ((w = *pw)) {
		if (!all && (w->written < w->n || (w->open && !w->expired && !w->cancelled))) {
			pw = &w->next;
			continue;
		}
		*pw = w->next;
		for (i = w->written; i < w->n; i++)
			if (!w->item[i].done) {
				w->item[i].status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_FAILED;
				snprintf(w->item[i].error, sizeof w->item[i].error, "not written: the daemon stopped first");
				item_done(w, &w->item[i]);
			}
		if (w->cancelled)
			job_finish(w->job, NODE_CANCELLED, "the call was cancelled", NULL);
		else if (w->open && !all && w->call_deadline)
			/* The call is over: what gRPC's own timer says too, whichever is first. */
			job_finish(w->job, NODE_DEADLINE_EXCEEDED, "the call's deadline came before the acks", NULL);
		else if (!wait_refused(w))
			wait_reply(w);
		wait_free(n, w);
	}
}

static void on_deadline(struct timer *t, int64_t now)
{
	(void)now;
	container_of(t, struct wait, t_deadline)->expired = 1; /* waits_sweep answers it */
}

/* The limit job's wait would pass, or NULL; *held: the waits that count
 * against it. Root on the Unix socket has the last eighth of max_waits
 * to itself and no limit of its own; read-only callers together hold a
 * quarter at most, so that they never keep a writer waiting. */
static const char *wait_limit(const struct node *n, const struct node_job *job, size_t *held)
{
	const struct wait *w;
	size_t all = 0, mine = 0, readers = 0;
	int root = job->peer_class == NODE_PEER_ROOT;
	for (w = n->waits; w; w = w->next) {
		all++;
		mine += job->peer[0] && !strcmp(w->job->peer, job->peer);
		readers += w->job->peer_class == NODE_PEER_READER;
	}
	if (all >= (root ? n->cfg.max_waits : n->cfg.max_waits - n->cfg.max_waits / 8))
		return *held = all, "max_waits";
	if (!root && mine >= n->cfg.max_waits_per_peer)
		return *held = mine, "max_waits_per_peer";
	if (job->peer_class == NODE_PEER_READER && readers >= n->cfg.max_waits / 4)
		return *held = readers, "max_waits (a quarter for read-only callers)";
	return NULL;
}

int wait_admit(struct node *n, struct node_job *job, uint32_t wait_ms)
{
	const char *limit;
	size_t held = 0;
	char msg[160];
	if (!wait_ms)
		return 0;
	if (wait_ms > n->cfg.max_wait_ms) {
		snprintf(msg, sizeof msg, "wait_ms: %u, over max_wait_ms (%u)", wait_ms, n->cfg.max_wait_ms);
		job_finish(job, NODE_INVALID_ARGUMENT, msg, NULL);
		return -1;
	}
	if (!(limit = wait_limit(n, job, &held)))
		return 0;
	snprintf(msg, sizeof msg, "%s: %zu calls waiting for acks already", limit, held);
	node_log_limited(PROCCTL_LOG_WARN, "waits_refused", "peer=%s reason=\"%s\"", job->peer[0] ? job->peer : "-", limit);
	job_finish(job, NODE_RESOURCE_EXHAUSTED, msg, NULL);
	return -1;
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
	w->open = c;
	w->written = c; /* a wait that writes sets it back */
	w->wait_ms = wait_ms;
	for (size_t i = 0; i < c; i++)
		w->item[i].w = w;
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
	struct wait *w;
	for (w = n->waits; id && w; w = w->next)
		if (w->job->id == id) {
			w->cancelled = 1; /* waits_sweep answers it once its writes are out */
			return;
		}
}

/* Off the writing queue, off its processes, its deadline disarmed: freed. */
void wait_free(struct node *n, struct wait *w)
{
	struct wait **pw;
	size_t i;
	for (pw = &n->writing; *pw; pw = &(*pw)->wnext)
		if (*pw == w) {
			if (!(*pw = w->wnext))
				n->writing_tail = pw;
			break;
		}
	for (i = 0; i < w->n; i++)
		item_unlink(&w->item[i]);
	timer_disarm(&n->timers, &w->t_deadline);
	for (i = 0; i < w->nsrcs; i++)
		free(w->srcs[i].payload);
	free(w->srcs);
	free(w->desired.payload);
	free(w->payload);
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

void wait_item_pending(struct node *n, struct wait *w, size_t i, struct proc *p, uint64_t gen)
{
	struct wait_item *it = &w->item[i];
	if (!it->p)
		item_link(it, p);
	it->gen = gen;
	it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_PENDING;
	p->waiting++;
	wait_settle(it, p, NULL); /* already acked or superseded, as last read: answered so, whatever the wait */
	proc_poll_soon(n, p, now_ns());
}

/* Write item i of w (its process still attached, the item not done). */
static void write_one(struct node *n, struct wait *w, size_t i)
{
	struct wait_item *it = &w->item[i];
	struct proc *p = it->p;
	const struct wait_src all = {w->desired.revision, w->payload, w->len};
	const struct wait_src *src = w->srcs ? &w->srcs[it->src] : &all;
	int64_t g;
	if (src->payload && src->len > p->payload_cap) {
		it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_TOO_LARGE;
		snprintf(it->error, sizeof it->error, "payload over the process's capacity of %u bytes", p->payload_cap);
		if (src->rev)
			p->too_big_rev = src->rev;
		item_done(w, it);
		return;
	}
	g = src->payload ? procctl_client_write(p->c, src->payload, src->len) : procctl_client_clear(p->c);
	proc_wrote(n, p, g, src->rev);
	if (g <= 0) {
		write_refused(it, p, g);
		item_done(w, it);
		return;
	}
	if (!w->wait_ms) {
		it->gen = (uint64_t)g;
		it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_WRITTEN;
		item_done(w, it);
		return;
	}
	wait_item_pending(n, w, i, p, (uint64_t)g);
}

#define WRITE_SLICE_NS (2 * MS) /* a loop turn's writes at most (then requests, reads, timers) */

int waits_write(struct node *n)
{
	int64_t end = now_ns() + WRITE_SLICE_NS;
	unsigned k = 0;
	struct wait *w;
	while ((w = n->writing)) {
		for (; w->written < w->n; w->written++) {
			if (!(++k % 32) && now_ns() >= end)
				return 1;
			if (!w->item[w->written].done)
				write_one(n, w, w->written);
		}
		if (!(n->writing = w->wnext))
			n->writing_tail = &n->writing;
	}
	return 0;
}

struct wait *wait_write_all(struct node *n, struct node_job *job, struct proc **v, size_t c,
			    const ProtobufCBinaryData *payload, uint32_t wait_ms, int single)
{
	struct wait *w = wait_new(n, job, c, wait_ms);
	size_t i;
	if (!w)
		return NULL;
	if (payload && !(w->payload = malloc(payload->len ? payload->len : 1))) {
		wait_free(n, w);
		job_finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
		return NULL;
	}
	if (payload) {
		memcpy(w->payload, payload->data, payload->len);
		w->len = payload->len;
	}
	w->single = single;
	w->written = 0;
	for (i = 0; i < c; i++)
		item_link(&w->item[i], v[i]);
	w->wnext = NULL;
	*n->writing_tail = w;
	n->writing_tail = &w->wnext;
	wait_start(n, w);
	return w;
}

void wait_start(struct node *n, struct wait *w)
{
	w->next = n->waits;
	n->waits = w;
}
