/* SPDX-License-Identifier: Apache-2.0 */
/* arbiters.c - the arbiters (one per [arbiter NAME] section, each on
 * its consumer's registry), their ticks, and the events of their grants
 * and releases. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_int.h"

/* What admission sees of p. */
static struct admit_who who_of(const struct proc *p)
{
	struct admit_who w = {p->uid, p->gid, p->key.pod_uid, p->cgroup};
	return w;
}

/* The arbiter's admission hook: its [arbiter] admit_ keys on the
 * process's credentials as read at attach; a refusal is marked on the
 * process (ListProcesses, /metrics) and logged once. */
static int admit(void *arg, const struct procctl_arb_target *t)
{
	struct arb *ab = arg;
	struct proc *p = procctl_client_data(t->handle); /* the registry source's handle is its client */
	struct admit_who w;
	char why[300];
	int ok;
	if (!ab->cfg->admit.deny)
		return 1;
	if (!p || p->key.pid != t->pid || p->instance != t->instance_id)
		return 0; /* not in the table yet: next tick */
	w = who_of(p);
	ok = admission_check(&ab->cfg->admit, &w, why, sizeof why);
	if (ok) {
		p->refused &= ~ab->bit;
		return 1;
	}
	p->refused |= ab->bit;
	if (!(p->refusal_said & ab->bit)) {
		p->refusal_said |= ab->bit;
		node_log(PROCCTL_LOG_INFO, "admission_refused", "kind=%s pid=%d reason=\"%s\"", ab->cfg->name, (int)t->pid,
			 why);
	}
	return 0;
}

int arbiter_refusal(const struct node *n, const struct proc *p, size_t i, char *why, size_t len)
{
	struct admit_who w = who_of(p);
	if (!(p->refused & n->arb[i].bit))
		return 0;
	return !admission_check(&n->arb[i].cfg->admit, &w, why, len);
}

int arbiters_new(struct node *n, char *err, size_t errlen)
{
	size_t i, j;
	for (i = 0; i < n->cfg.narbiters; i++) {
		const struct node_arbiter_cfg *ac = &n->cfg.arbiters[i];
		struct arb *ab = &n->arb[n->narb];
		struct procctl_arbiter_opts ao;
		procctl_registry_t *reg = n->reg[0];
		int r;
		for (j = 0; j < n->cfg.nconsumers; j++)
			if (!strcmp(n->cfg.consumers[j], ac->consumer))
				reg = n->reg[j];
		ab->cfg = &n->cfg.arbiters[i];
		if ((r = procctl_arbiter_registry_source(&ab->src, reg, ac->consumer, STATE_READ_NS)) < 0) {
			snprintf(err, errlen, "arbiter %s: %s", ac->name, strerror(-r));
			return -1;
		}
		memset(&ao, 0, sizeof ao);
		ao.sz = sizeof ao;
		ao.kind = ac->kind;
		ao.hold_ns = ac->hold_ns;
		ao.flags = (ac->process_bound ? PROCCTL_ARB_PROCESS_BOUND : 0) | PROCCTL_ARB_READY_EVENTS; /* node_on_event kicks */
		ao.resources = ac->resources;
		ao.nresources = ac->nresources;
		ao.learn_max_per_target = ac->learn_max;
		ao.admit = admit;
		ao.admit_arg = ab;
		ab->bit = 1u << n->narb;
		if (!(ab->a = procctl_arbiter_new(&ao, &ab->src))) {
			snprintf(err, errlen, "arbiter %s: %s", ac->name, strerror(errno));
			procctl_arbiter_registry_source_free(&ab->src);
			return -1;
		}
		n->narb++;
	}
	return 0;
}

static void emit_grant(struct node *n, const struct node_arbiter_cfg *cfg, const struct procctl_arbiter_snapshot *s,
		       int released, int exited)
{
	PbEvent ev = PROCCTL__V1__WATCH_EVENTS_RESPONSE__INIT;
	PbRef ref = PROCCTL__V1__PROCESS_REF__INIT;
	char *kind = (char *)cfg->name; /* protobuf-c's strings are not const; not written */
	char idbuf[HEXID_LEN], grant[HEXID_LEN], id[37];
	struct selector k = {.pid = s->holder_pid};
	size_t i;
	procctl_resource_id_format(s->res.id, id);
	ref.pid = s->holder_pid;
	ref.instance_id = hexid(idbuf, s->holder_instance);
	snprintf(k.consumer, sizeof k.consumer, "%s", cfg->consumer);
	for (i = 0; i < n->nprocs; i++)
		if (n->procs[i]->key.pid == s->holder_pid && n->procs[i]->instance == s->holder_instance)
			k = n->procs[i]->key;
	if (released) {
		Procctl__V1__ResourceReleased m = PROCCTL__V1__RESOURCE_RELEASED__INIT;
		m.kind = kind;
		m.id = id;
		m.holder = &ref;
		m.grant_id = hexid(grant, s->grant_id);
		m.reason = exited ? PROCCTL__V1__RELEASE_REASON__RELEASE_REASON_EXITED
				  : PROCCTL__V1__RELEASE_REASON__RELEASE_REASON_CONFIRMED;
		ev.event_case = PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_RESOURCE_RELEASED;
		ev.resource_released = &m;
		node_emit(n, &k, &ev);
	} else {
		Procctl__V1__ResourceGranted m = PROCCTL__V1__RESOURCE_GRANTED__INIT;
		m.kind = kind;
		m.id = id;
		m.holder = &ref;
		m.grant_id = hexid(grant, s->grant_id);
		ev.event_case = PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_RESOURCE_GRANTED;
		ev.resource_granted = &m;
		node_emit(n, &k, &ev);
	}
	node_log(PROCCTL_LOG_INFO, released ? "released" : "granted", "kind=%s pid=%d grant=%016llx%s", kind,
		 (int)s->holder_pid, (unsigned long long)s->grant_id, released ? (exited ? " reason=exited" : " reason=confirmed") : "");
}

/* 1 when a grant's holder is gone: detached, or exited or exec'd and not
 * detached yet (the arbiter can see the exit through the pidfd a tick
 * before the registry's DETACHED comes). A holder that confirmed its
 * release and exited within the same tick is reported as exited too. */
static int holder_gone(const struct node *n, pid_t pid, uint64_t instance)
{
	size_t i;
	for (i = 0; i < n->nprocs; i++)
		if (n->procs[i]->key.pid == pid && n->procs[i]->instance == instance)
			return procctl_client_alive(n->procs[i]->c) < 0;
	return 1;
}

/* The namespace of the pod of process (pid, instance): "" none known. */
static const char *ns_of(const struct node *n, pid_t pid, uint64_t instance)
{
	const struct podmeta *m;
	size_t i;
	for (i = 0; i < n->nprocs; i++)
		if (n->procs[i]->key.pid == pid && n->procs[i]->instance == instance)
			return (m = proc_pod(n, n->procs[i])) ? m->ns : "";
	return "";
}

/* Add to res's time of namespace ns: a namespace past metrics_namespaces
 * of res's counts as NS_OTHER. */
static void ns_add(struct node *n, struct arb *ab, const procctl_resource_t *res, const char *ns, uint64_t hold,
		   uint64_t blocked)
{
	struct ns_time *t = NULL, *v;
	size_t i, of_res = 0;
	for (i = 0; i < ab->nnst && !t; i++)
		if (!memcmp(&ab->nst[i].res, res, sizeof *res)) {
			of_res += strcmp(ab->nst[i].ns, NS_OTHER) != 0;
			if (!strcmp(ab->nst[i].ns, ns))
				t = &ab->nst[i];
		}
	if (!t && of_res >= n->cfg.metrics_namespaces) {
		ns = NS_OTHER;
		for (i = 0; i < ab->nnst && !t; i++)
			if (!memcmp(&ab->nst[i].res, res, sizeof *res) && !strcmp(ab->nst[i].ns, NS_OTHER))
				t = &ab->nst[i];
	}
	if (!t) {
		if (!(v = realloc(ab->nst, (ab->nnst + 1) * sizeof *v)))
			return; /* not counted: no room */
		ab->nst = v;
		t = &v[ab->nnst++];
		memset(t, 0, sizeof *t);
		t->res = *res;
		snprintf(t->ns, sizeof t->ns, "%s", ns);
	}
	t->hold_ns += hold;
	t->blocked_ns += blocked;
}

/* What a resource's time grew by since the last tick, by namespace: the
 * hold to the holder's; the blocked time to each namespace that waited
 * (once each), or to the holder's when none is listed. */
static void ns_account(struct node *n, struct arb *ab, const struct procctl_arbiter_snapshot *old,
		       const struct procctl_arbiter_snapshot *cur)
{
	const char *seen[PROCCTL_ARB_WAITING_MAX];
	uint64_t dh = cur->hold_ns_total - old->hold_ns_total, db = cur->blocked_ns - old->blocked_ns;
	size_t i, j, k = 0;
	if (dh && old->holder_pid)
		ns_add(n, ab, &cur->res, ns_of(n, old->holder_pid, old->holder_instance), dh, 0);
	if (!db)
		return;
	for (i = 0; i < old->nwaiting && i < PROCCTL_ARB_WAITING_MAX; i++) {
		const char *ns = ns_of(n, old->waiting[i].pid, old->waiting[i].instance);
		for (j = 0; j < k && strcmp(seen[j], ns); j++)
			;
		if (j == k)
			ns_add(n, ab, &cur->res, seen[k++] = ns, 0, db);
	}
	if (!k)
		ns_add(n, ab, &cur->res, old->holder_pid ? ns_of(n, old->holder_pid, old->holder_instance) : "", 0, db);
}

/* Tick every arbiter; a grant that changed hands is a Released event (for
 * the old one) and a Granted event (for the new). */
void arbiters_tick(struct node *n)
{
	static struct procctl_arbiter_snapshot now[PROCCTL_ARB_MAX_RESOURCES];
	uint64_t due = UINT64_MAX;
	size_t i, j, k, c;
	if (!n->narb)
		return;
	for (i = 0; i < n->narb; i++) {
		struct arb *ab = &n->arb[i];
		int r = procctl_arbiter_tick(ab->a);
		if (procctl_arbiter_next_tick(ab->a) < due)
			due = procctl_arbiter_next_tick(ab->a);
		if (r == -ENOMEM) /* nothing decided: tried again in 100 ms */
			node_log_limited(PROCCTL_LOG_WARN, "arbiter_no_room", "kind=%s reason=\"no memory to see every "
					 "process of its consumer: nothing granted or revoked\"", ab->cfg->name);
		else if (r < 0)
			node_log(PROCCTL_LOG_DEBUG, "arbiter_write_failed", "kind=%s error=%s", ab->cfg->name, strerror(-r));
		c = procctl_arbiter_snapshot(ab->a, now, PROCCTL_ARB_MAX_RESOURCES, sizeof *now);
		for (j = 0; j < c; j++) {
			const struct procctl_arbiter_snapshot *old = NULL;
			for (k = 0; k < ab->nsnap; k++)
				if (!memcmp(&ab->snap[k].res, &now[j].res, sizeof now[j].res))
					old = &ab->snap[k];
			if (old && n->cfg.metrics_namespaces)
				ns_account(n, ab, old, &now[j]);
			if (old && old->grant_id == now[j].grant_id)
				continue;
			if (old && old->grant_id)
				emit_grant(n, ab->cfg, old, 1, holder_gone(n, old->holder_pid, old->holder_instance));
			if (now[j].grant_id)
				emit_grant(n, ab->cfg, &now[j], 0, 0);
		}
		memcpy(ab->snap, now, c * sizeof now[0]);
		ab->nsnap = c;
	}
	/* The next when nothing changes (arbiters_kick for the rest). */
	if (due == UINT64_MAX)
		timer_disarm(&n->timers, &n->t_tick);
	else
		timer_arm(&n->timers, &n->t_tick, due > INT64_MAX ? INT64_MAX : (int64_t)due);
}

void arbiters_kick(struct node *n, const char *consumer)
{
	size_t i;
	for (i = 0; i < n->narb; i++)
		if (!strcmp(n->arb[i].cfg->consumer, consumer)) {
			timer_arm_by(&n->timers, &n->t_tick, now_ns());
			return;
		}
}
