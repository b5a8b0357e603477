/* SPDX-License-Identifier: Apache-2.0 */
/* reply.c - the API's forms of the loop's things, built in an arena
 * (arena.c): a process (with its arbiters' refusals and its pod), its ack,
 * a desired config and its rollout, a state block (ReadState's answer),
 * a resource kind's name; a message packed for many readers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_int.h"

/* A resource kind as people read it: its [arbiter NAME], or its number. */
const char *node_kind_name(const struct node *n, uint32_t kind, char buf[16])
{
	size_t i;
	for (i = 0; i < n->cfg.narbiters; i++)
		if (n->cfg.arbiters[i].kind == kind)
			return n->cfg.arbiters[i].name;
	snprintf(buf, 16, "%u", kind);
	return buf;
}

Procctl__V1__AckResult proc_ack_result(const struct proc *p)
{
	if (!p->have_state || !p->acked_gen)
		return PROCCTL__V1__ACK_RESULT__ACK_RESULT_UNSPECIFIED;
	return p->ack_status ? PROCCTL__V1__ACK_RESULT__ACK_RESULT_REJECTED : PROCCTL__V1__ACK_RESULT__ACK_RESULT_APPLIED;
}

/* How this daemon stands with the region, as the API says it. */
static Procctl__V1__LeaseState lease_state(const procctl_client_t *c)
{
	switch (procctl_client_ownership(c)) {
	case PROCCTL_OWN_OWNED:
		return PROCCTL__V1__LEASE_STATE__LEASE_STATE_LIVE;
	case PROCCTL_OWN_CONFLICT:
		return PROCCTL__V1__LEASE_STATE__LEASE_STATE_CONFLICT;
	case PROCCTL_OWN_BROKEN:
		return PROCCTL__V1__LEASE_STATE__LEASE_STATE_BROKEN;
	default:
		return PROCCTL__V1__LEASE_STATE__LEASE_STATE_NOT_OWNED;
	}
}

PbProcess *mk_process(struct arena *a, const struct proc *p)
{
	PbProcess *m = ar_alloc(a, sizeof *m);
	const struct podmeta *pm;
	int i;
	if (!m)
		return NULL;
	procctl__v1__process__init(m);
	m->ref = mk_ref(a, p->key.pid, p->instance);
	m->nspid = ar_alloc(a, sizeof(int32_t) * (size_t)(p->nspid_count ? p->nspid_count : 1));
	if (m->nspid) {
		for (i = 0; i < p->nspid_count; i++)
			m->nspid[i] = p->nspid[i];
		m->n_nspid = (size_t)p->nspid_count;
	}
	m->consumer = ar_str(a, p->key.consumer);
	m->schema_version = p->key.version;
	m->pod_uid = ar_str(a, p->key.pod_uid);
	m->container_id = ar_str(a, p->key.container_id);
	if (p->key.pod_uid[0] && (pm = kubepods_find(&p->n->kube, p->key.pod_uid))) {
		const char *cn = podmeta_container(pm, p->key.container_id);
		m->pod_namespace = ar_str(a, pm->ns);
		m->pod_name = ar_str(a, pm->name);
		m->container_name = ar_str(a, cn ? cn : "");
	}
	m->qos_class = (Procctl__V1__QosClass)p->qos; /* the same order */
	m->lease_state = lease_state(p->c);
	/* This daemon's own copy while it writes the region; else what the
	 * region holds (another daemon's, or another agent's, writes). */
	m->generation = m->lease_state == PROCCTL__V1__LEASE_STATE__LEASE_STATE_LIVE ? procctl_client_config_gen(p->c)
										 : procctl_client_region_config_gen(p->c);
	m->acked_generation = p->acked_gen;
	m->ack_result = proc_ack_result(p);
	m->ack_status = p->ack_status;
	if (p->refused && (m->arbiter_refusals = ar_alloc(a, p->n->narb * sizeof(char *))))
		for (i = 0; i < (int)p->n->narb; i++) {
			char why[300], line[400];
			if (arbiter_refusal(p->n, p, (size_t)i, why, sizeof why)) {
				snprintf(line, sizeof line, "%s: %s", p->n->arb[i].cfg->name, why);
				m->arbiter_refusals[m->n_arbiter_refusals++] = ar_str(a, line);
			}
		}
	return m;
}

Procctl__V1__DesiredRollout *mk_rollout(struct arena *a, const struct desired_rollout *r)
{
	Procctl__V1__DesiredRollout *m = ar_alloc(a, sizeof *m);
	if (!m)
		return NULL;
	procctl__v1__desired_rollout__init(m);
	m->applied = r->applied;
	m->rejected = r->rejected;
	m->pending = r->pending;
	m->superseded = r->superseded;
	m->not_owned = r->not_owned;
	return m;
}

Procctl__V1__DesiredConfig *mk_desired(struct arena *a, const struct desired *d)
{
	const struct selector *sel = &d->sel;
	const uint8_t *payload = d->payload;
	size_t len = d->len;
	Procctl__V1__DesiredConfig *m = ar_alloc(a, sizeof *m);
	PbSelector *s = ar_alloc(a, sizeof *s);
	if (!m || !s)
		return NULL;
	procctl__v1__desired_config__init(m);
	procctl__v1__selector__init(s);
	s->pid = sel->pid;
	s->consumer = ar_str(a, sel->consumer);
	s->schema_version = sel->version;
	s->pod_uid = ar_str(a, sel->pod_uid);
	s->container_id = ar_str(a, sel->container_id);
	s->namespace_ = ar_str(a, d->pod.ns);
	s->label_selector = ar_str(a, d->pod.labels);
	m->selector = s;
	m->revision = d->revision;
	m->source = ar_str(a, d->source);
	m->pid_start_time = d->sel.pid_start;
	if ((m->payload.data = ar_alloc(a, len))) {
		memcpy(m->payload.data, payload, len);
		m->payload.len = len;
	}
	return m;
}

/* A ReadState call's answer: what a read of the process returned (r),
 * and the block it found (n->st). */
void state_reply(struct node *n, struct node_job *job, int r)
{
	Procctl__V1__ReadStateResponse m = PROCCTL__V1__READ_STATE_RESPONSE__INIT;
	const struct procctl_state *st = &n->st;
	struct arena a = {0};
	char msg[96];
	uint32_t i;
	switch (r) {
	case 0:
		break;
	case -ESRCH:
	case -ESTALE:
		job_finish(job, NODE_NOT_FOUND, "the process exited or exec'd", NULL);
		return;
	case -ETIMEDOUT:
		job_finish(job, NODE_DEADLINE_EXCEEDED,
			   "the process is stalled: a read of its state block has not returned (a page nobody "
			   "serves); it is not read again until that read returns",
			   NULL);
		return;
	case -EAGAIN:
		job_finish(job, NODE_UNAVAILABLE, "the state block is being written, or no reader is free", NULL);
		return;
	case -ESHUTDOWN:
		job_finish(job, NODE_UNAVAILABLE, "procctl-node is shutting down", NULL);
		return;
	case -EPROTO:
		snprintf(msg, sizeof msg, "state block refused: %s", procctl_reject_name(st->why));
		job_finish(job, NODE_FAILED_PRECONDITION, msg, NULL);
		return;
	default:
		snprintf(msg, sizeof msg, "state block unreadable: %s", strerror(-r));
		job_finish(job, NODE_FAILED_PRECONDITION, msg, NULL);
		return;
	}
	m.acked_generation = st->acked_gen;
	m.ack_result = !st->acked_gen    ? PROCCTL__V1__ACK_RESULT__ACK_RESULT_UNSPECIFIED
		       : st->ack_status ? PROCCTL__V1__ACK_RESULT__ACK_RESULT_REJECTED
					: PROCCTL__V1__ACK_RESULT__ACK_RESULT_APPLIED;
	m.ack_status = st->ack_status;
	m.resources = ar_alloc(&a, sizeof *m.resources * (st->nres ? st->nres : 1));
	for (i = 0; m.resources && i < st->nres; i++) {
		const struct procctl_res_entry *e = &st->res[i];
		Procctl__V1__ResourceReport *rr;
		char kind[16];
		if (!e->kind)
			continue; /* an unused entry: no resource */
		if (!(rr = ar_alloc(&a, sizeof *rr)))
			break;
		procctl__v1__resource_report__init(rr);
		rr->kind = ar_str(&a, node_kind_name(n, e->kind, kind));
		rr->kind_number = e->kind;
		rr->id = ar_resid(&a, e->id);
		rr->grant_id = ar_hexid(&a, e->grant_id);
		rr->seen_generation = e->seen_gen;
		rr->state = e->state <= PROCCTL_RES_RELEASED ? (Procctl__V1__ResourceState)(e->state + 1)
							     : PROCCTL__V1__RESOURCE_STATE__RESOURCE_STATE_UNSPECIFIED;
		rr->wants = (e->flags & PROCCTL_RES_F_WANT) != 0;
		m.resources[m.n_resources++] = rr;
	}
	m.data.data = ar_alloc(&a, st->data_len);
	if (m.data.data) {
		memcpy(m.data.data, st->data, st->data_len);
		m.data.len = st->data_len;
	}
	job_finish_arena(job, &a, &m.base);
}

struct node_packed *node_packed_new(const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	struct node_packed *p = malloc(sizeof *p + len);
	if (!p)
		return NULL;
	p->refs = 1;
	p->len = protobuf_c_message_pack(m, p->data);
	return p;
}

struct node_packed *node_packed_ref(struct node_packed *p)
{
	__atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
	return p;
}

void node_packed_unref(struct node_packed *p)
{
	if (p && !__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL))
		free(p);
}
