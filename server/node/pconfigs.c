/* SPDX-License-Identifier: Apache-2.0 */
/* pconfigs.c - the cluster's ProcessConfigs, taken into the desired store
 * and given to the node's processes (pconfigs.h). */
#include "pconfigs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/pconfig.h"
#include "node_int.h"
#include "sys/log.h"

#define TOUCHED_MAX 64

static void on_status(struct timer *t, int64_t now)
{
	(void)now;
	pconfig_status_tick(container_of(t, struct node, pconfigs.t_status));
}

int pconfigs_open(struct pconfigs *pc, const struct node_cfg *cfg, int wake_fd, char *err, size_t errlen)
{
	struct kubewatch_cfg kc;
	struct kubewrite_cfg wc;
	int r;
	memset(pc, 0, sizeof *pc);
	pc->t_status = TIMER_INIT(on_status);
	if (!cfg->kube_pconfigs)
		return 0;
	if ((r = kube_watch_cfg(&kc, cfg, wake_fd, err, errlen)) < 0)
		return r;
	snprintf(pc->node, sizeof pc->node, "%s", cfg->kube_node);
	pc->kind = pconfig_kind;
	pc->kind.ctx = pc->node;
	kc.kind = &pc->kind;
	snprintf(kc.path, sizeof kc.path, "/apis/procctl.io/v1alpha1/processconfigs");
	kc.max = cfg->kube_pconfigs_max;
	kc.group_max = cfg->kube_pconfigs_ns_max;
	kc.cost_max = cfg->kube_pconfigs_bytes_max;
	kc.group_key = "kubernetes_processconfigs_namespace_max";
	kc.cost_key = "kubernetes_processconfigs_bytes_max";
	pc->max = cfg->kube_pconfigs_max;
	pc->ns_max = cfg->kube_pconfigs_ns_max;
	pc->bytes_max = cfg->kube_pconfigs_bytes_max;
	memset(&wc, 0, sizeof wc);
	memcpy(wc.url, kc.url, sizeof wc.url);
	memcpy(wc.token_file, kc.token_file, sizeof wc.token_file);
	memcpy(wc.ca_file, kc.ca_file, sizeof wc.ca_file);
	wc.min_ms = PCONFIG_STATUS_MIN_MS;
	wc.max = 2 * pc->max + 64; /* each object's status, and an Event */
	if (!(pc->rec = calloc(pc->max, sizeof pc->rec[0]))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!(pc->wr = kubewrite_start(&wc, err, errlen)) || !(pc->kw = kubewatch_start(&kc, err, errlen))) {
		kubewrite_stop(pc->wr);
		pc->wr = NULL;
		free(pc->rec);
		pc->rec = NULL;
		return -EINVAL;
	}
	node_log(PROCCTL_LOG_INFO, "kube_watching", "api=%s processconfigs=all node=%s", kc.url, pc->node);
	return 0;
}

void pconfigs_close(struct pconfigs *pc)
{
	kubewatch_stop(pc->kw);
	kubewrite_stop(pc->wr);
	pc->kw = NULL;
	pc->wr = NULL;
	free(pc->rec);
	pc->rec = NULL;
	pc->n = 0;
}

/* ---- the objects known ----------------------------------------------- */

static struct pcrec *rec_find(struct pconfigs *pc, const char *uid)
{
	size_t i;
	for (i = 0; i < pc->n; i++)
		if (!strcmp(pc->rec[i].uid, uid))
			return &pc->rec[i];
	return NULL;
}

/* o as known now (why: "" kept), a record made when there is room: it,
 * or NULL (the table is full). */
static struct pcrec *rec_put(struct pconfigs *pc, const struct pconfig *o, const char *why)
{
	struct pcrec *r = rec_find(pc, o->uid);
	if (!r) {
		if (pc->n == pc->max)
			return NULL;
		r = &pc->rec[pc->n++];
		memset(r, 0, sizeof *r);
		memcpy(r->uid, o->uid, sizeof r->uid);
		memcpy(r->ns, o->ns, sizeof r->ns);
		memcpy(r->name, o->name, sizeof r->name);
		r->written = o->has_mine; /* what a predecessor wrote, found on the object */
		r->sent = o->mine;
	}
	r->generation = o->generation;
	snprintf(r->why, sizeof r->why, "%s", why);
	return r;
}

static void rec_drop(struct pconfigs *pc, const char *uid)
{
	struct pcrec *r = rec_find(pc, uid);
	if (r)
		*r = pc->rec[--pc->n];
}

/* What a batch's objects select (consumer, version, namespace), before
 * and after: only a process they name may get another config. */
struct touched {
	size_t n;
	int all;
	struct {
		const char *consumer, *ns; /* the store's or the batch's: both live until after */
		uint32_t version;
	} v[TOUCHED_MAX];
};

static void touch(struct touched *t, const char *consumer, uint32_t version, const char *ns)
{
	size_t i;
	for (i = 0; i < t->n; i++)
		if (t->v[i].version == version && !strcmp(t->v[i].consumer, consumer) && !strcmp(t->v[i].ns, ns))
			return;
	if (t->n == TOUCHED_MAX) {
		t->all = 1;
		return;
	}
	t->v[t->n].consumer = consumer;
	t->v[t->n].ns = ns;
	t->v[t->n++].version = version;
}

static int touches(const struct touched *t, const struct proc *p, const struct podmeta *m)
{
	size_t i;
	if (!m)
		return 0;
	for (i = 0; i < t->n && !t->all; i++)
		if (t->v[i].version == p->key.version && !strcmp(t->v[i].consumer, p->key.consumer) && !strcmp(t->v[i].ns, m->ns))
			return 1;
	return t->all;
}

static void touch_batch(struct node *n, const struct kube_batch *b, struct touched *t)
{
	size_t i;
	memset(t, 0, sizeof *t);
	t->all = b->kind == KUBE_BATCH_LIST;
	for (i = 0; i < b->n && !t->all; i++) {
		const struct pconfig *o = b->v[i].obj;
		const struct desired *d = desired_kube_find(&n->desired, o->uid);
		if (d)
			touch(t, d->sel.consumer, d->sel.version, d->pod.ns);
		if (b->v[i].type != KUBE_DELETED && !o->why[0])
			touch(t, o->consumer, o->version, o->ns);
	}
}

/* A process whose config may change, and the revision of the one it had. */
struct before {
	struct proc *p;
	uint64_t was;
};

static ssize_t note_before(struct node *n, const struct touched *t, struct before **out)
{
	size_t i, k = 0;
	*out = NULL;
	if (!n->nprocs)
		return 0;
	if (!(*out = malloc(n->nprocs * sizeof **out)))
		return -ENOMEM;
	for (i = 0; i < n->nprocs; i++) {
		struct proc *p = n->procs[i];
		const struct desired *d;
		if (!p->announced || p->apply_deferred || !touches(t, p, proc_pod(n, p)))
			continue; /* one not announced gets its config then (desired_apply) */
		d = proc_desired(n, p);
		(*out)[k].p = p;
		(*out)[k++].was = d ? d->revision : 0;
	}
	return (ssize_t)k;
}

/* Each process noted gets its config now, when it changed: as
 * desired_pod_changed does. One that holds the payload already (a
 * predecessor wrote it) is not written again. */
static void give_after(struct node *n, const struct before *v, size_t k)
{
	size_t i;
	for (i = 0; i < k; i++) {
		struct proc *p = v[i].p;
		const struct desired *now = proc_desired(n, p);
		uint64_t rev = now ? now->revision : 0, found;
		int64_t g;
		if (rev == v[i].was || (now && p->desired_rev == rev))
			continue;
		if (!now && (!v[i].was || p->desired_rev != v[i].was))
			continue; /* it holds no config of the one that went: a Publish, a Clear */
		if (now && (found = procctl_client_config_gen(p->c)) && procctl_client_config_is(p->c, now->payload, now->len)) {
			p->desired_gen = found;
			p->desired_rev = rev;
			continue;
		}
		g = desired_give(n, p, now);
		node_log(PROCCTL_LOG_INFO, "desired_applied", "pid=%d revision=%llu was=%llu generation=%lld%s%s%s%s",
			 (int)p->key.pid, (unsigned long long)rev, (unsigned long long)v[i].was, (long long)g,
			 now && now->kube ? " processconfig=" : "", now && now->kube ? now->kube->ns : "",
			 now && now->kube ? "/" : "", now && now->kube ? now->kube->name : "");
	}
}

/* o's config leaves the store (deleted, or no longer one to apply). */
static void withdraw(struct node *n, const char *uid)
{
	const struct desired *d = desired_kube_find(&n->desired, uid);
	if (!d)
		return;
	n->pconfigs.bytes -= d->len;
	desired_kube_delete(&n->desired, uid);
}

static void refuse(struct node *n, const struct pconfig *o, const char *why)
{
	char q[600];
	withdraw(n, o->uid);
	rec_put(&n->pconfigs, o, why);
	n->pconfigs.refused++;
	node_log_limited(PROCCTL_LOG_WARN, "processconfig_refused", "namespace=%s name=%s generation=%lld why=\"%s\"", o->ns,
			 o->name, (long long)o->generation, node_log_quote(q, sizeof q, why));
}

/* The configs of namespace ns's objects kept. */
static size_t kept_of(const struct node *n, const char *ns)
{
	size_t i, k = 0;
	for (i = 0; i < n->desired.kn; i++)
		k += !strcmp(n->desired.kv[i].kube->ns, ns);
	return k;
}

/* o's config into the store: 0, or -1 and why in err (cap bytes). */
static int keep(struct node *n, const struct pconfig *o, char *err, size_t cap)
{
	struct pconfigs *pc = &n->pconfigs;
	const struct desired *old = desired_kube_find(&n->desired, o->uid), *d;
	uint64_t rev = old ? old->revision : 0;
	struct desired_kube k = {.created = o->created, .generation = o->generation};
	struct selector sel = {.version = o->version};
	size_t others = pc->bytes - (old ? old->len : 0);
	struct podsel ps;
	const char *why = "";
	if (!old && kept_of(n, o->ns) >= pc->ns_max) {
		snprintf(err, cap, "kubernetes_processconfigs_namespace_max: %zu objects of namespace %s kept", pc->ns_max, o->ns);
		return -1;
	}
	if (o->len > pc->bytes_max - others) {
		snprintf(err, cap, "kubernetes_processconfigs_bytes_max: %zu bytes kept, %zu more would pass %zu",
			 others, o->len, pc->bytes_max);
		return -1;
	}
	memcpy(k.uid, o->uid, sizeof k.uid);
	memcpy(k.ns, o->ns, sizeof k.ns);
	memcpy(k.name, o->name, sizeof k.name);
	memcpy(sel.consumer, o->consumer, sizeof sel.consumer);
	if (podsel_from(&ps, o->ns, o->labels, err, cap) < 0)
		return -1;
	memcpy(ps.container, o->container, sizeof ps.container);
	if (desired_kube_set(&n->desired, &k, &sel, &ps, o->payload, o->len, &d, &why) < 0) {
		snprintf(err, cap, "%s", why[0] ? why : "out of memory");
		return -1;
	}
	pc->bytes = others + d->len;
	if (old && d->revision == rev)
		return 0; /* the same spec: its status, or its labels, changed */
	node_log(PROCCTL_LOG_INFO, "processconfig_taken", "namespace=%s name=%s generation=%lld revision=%llu consumer=%s "
		 "version=%u labels=\"%s\" container=%s bytes=%zu", o->ns, o->name, (long long)o->generation,
		 (unsigned long long)d->revision, o->consumer, o->version, o->labels, o->container, o->len);
	return 0;
}

/* The records of namespace ns's objects refused. */
static size_t refused_of(const struct pconfigs *pc, const char *ns)
{
	size_t i, k = 0;
	for (i = 0; i < pc->n; i++)
		k += pc->rec[i].why[0] && !strcmp(pc->rec[i].ns, ns);
	return k;
}

/* An object not kept at all (no record: nothing said on it), counted. */
static void drop(struct node *n, const struct kube_change *c, const char *why)
{
	const struct pconfig *o = c->obj;
	n->pconfigs.dropped += c->type == KUBE_ADDED;
	node_log_limited(PROCCTL_LOG_WARN, "processconfig_dropped", "namespace=%s name=%s why=\"%s\"", o->ns, o->name, why);
}

/* One ADDED or MODIFIED object (a list's are ADDED). A namespace holds at
 * most ns_max records of objects refused (its objects applied, ns_max
 * too): one namespace's flood of them costs the others no room. */
static void take(struct node *n, const struct kube_change *c)
{
	struct pconfigs *pc = &n->pconfigs;
	const struct pconfig *o = c->obj;
	struct pcrec *r = rec_find(pc, o->uid);
	char err[400];
	const char *why = o->why;
	if (!r && pc->n == pc->max) {
		drop(n, c, "kubernetes_processconfigs_max objects known");
		return;
	}
	if (!why[0] && keep(n, o, err, sizeof err) < 0)
		why = err;
	if (!why[0]) {
		rec_put(pc, o, "");
	} else if (!(r && r->why[0]) && refused_of(pc, o->ns) >= pc->ns_max) {
		withdraw(n, o->uid);
		rec_drop(pc, o->uid);
		drop(n, c, "kubernetes_processconfigs_namespace_max objects of its namespace refused");
	} else {
		refuse(n, o, why);
	}
}

static int by_uid(const void *a, const void *b)
{
	const struct pconfig *pa = ((const struct kube_change *)a)->obj, *pb = ((const struct kube_change *)b)->obj;
	return strcmp(pa->uid, pb->uid);
}

static int uid_is(const void *uid, const void *c)
{
	return strcmp(uid, ((const struct pconfig *)((const struct kube_change *)c)->obj)->uid);
}

static int in_list(const struct kube_batch *b, const char *uid)
{
	return bsearch(uid, b->v, b->n, sizeof b->v[0], uid_is) != NULL;
}

static void gone(struct node *n, const char *uid)
{
	struct pcrec *r = rec_find(&n->pconfigs, uid);
	if (!r)
		return;
	node_log(PROCCTL_LOG_INFO, "processconfig_gone", "namespace=%s name=%s", r->ns, r->name);
	withdraw(n, uid);
	rec_drop(&n->pconfigs, uid);
}

static void apply(struct node *n, struct kube_batch *b)
{
	struct pconfigs *pc = &n->pconfigs;
	size_t i = 0;
	if (b->kind == KUBE_BATCH_LIST) { /* those it does not have are gone */
		qsort(b->v, b->n, sizeof b->v[0], by_uid);
		while (i < pc->n)
			if (in_list(b, pc->rec[i].uid))
				i++;
			else
				gone(n, pc->rec[i].uid); /* the last comes to i */
		pc->dropped = b->dropped;
	}
	for (i = 0; i < b->n; i++)
		if (b->v[i].type != KUBE_DELETED)
			take(n, &b->v[i]);
		else
			gone(n, ((const struct pconfig *)b->v[i].obj)->uid);
}

int pconfigs_drain(struct node *n)
{
	struct pconfigs *pc = &n->pconfigs;
	struct kube_batch *b, *next;
	struct touched t;
	struct before *v;
	ssize_t k;
	int first = 0;
	if (!pc->kw)
		return 0;
	for (b = kubewatch_take(pc->kw); b; b = next) {
		next = b->next;
		touch_batch(n, b, &t);
		k = note_before(n, &t, &v);
		apply(n, b);
		if (b->kind == KUBE_BATCH_LIST) {
			first |= !pc->synced;
			pc->synced = 1;
			if (!timer_armed(&pc->t_status))
				timer_arm(&n->timers, &pc->t_status, now_ns());
		}
		if (k > 0)
			give_after(n, v, (size_t)k);
		else if (k < 0)
			node_log(PROCCTL_LOG_ERROR, "processconfigs_not_given", "error=ENOMEM");
		free(v);
		kube_batch_free(b);
	}
	return first;
}
