/* SPDX-License-Identifier: Apache-2.0 */
/* pconfig_status.c - what this node did with each ProcessConfig, written
 * on the object (pconfigs.h): its entry of status.nodes, by server-side
 * apply with a field manager of its own (procctl-node/NODE, forced: the
 * entry is this node's alone), so that every node writes its entry of one
 * object without reading it first and none loses another's; an Event
 * (events.k8s.io/v1) when it turns to a failure. A node writes an entry
 * only for an object it has processes or pods of: 5,000 nodes do not
 * each write one for every object. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "node_int.h"
#include "sys/log.h"

#define API "procctl.io/v1alpha1"

/* The node's pods by namespace, for one tick: which an object's
 * namespace and labels select is a search, not a pass over every pod. */
struct by_ns {
	const struct podmeta **v;
	size_t n;
};

static int ns_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct podmeta *const *)a)->ns, (*(const struct podmeta *const *)b)->ns);
}

static int by_ns_make(const struct node *n, struct by_ns *x)
{
	x->n = n->kube.n;
	if (!(x->v = malloc((x->n ? x->n : 1) * sizeof *x->v)))
		return -ENOMEM;
	memcpy(x->v, n->kube.v, x->n * sizeof *x->v);
	qsort(x->v, x->n, sizeof *x->v, ns_cmp);
	return 0;
}

/* Does the node run a pod of ns that labels select (NULL: any of ns)? */
static int pods_here(const struct by_ns *x, const char *ns, const char *labels)
{
	size_t lo = 0, hi = x->n;
	while (lo < hi) { /* the first of ns, or where it would be */
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(x->v[mid]->ns, ns) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < x->n && !strcmp(x->v[lo]->ns, ns); lo++)
		if (!labels || podmeta_match(x->v[lo], labels))
			return 1;
	return 0;
}

/* The first process (of those d is the config for) that rejected it: its
 * pid and status into buf ("" none found). 1. */
static int first_rejected(const struct node *n, const struct desired *d, char *buf, size_t cap)
{
	size_t i;
	buf[0] = 0;
	for (i = 0; i < n->nprocs; i++) {
		const struct proc *p = n->procs[i];
		if (p->config == d && p->desired_rev == d->revision && p->acked_gen == p->desired_gen && p->ack_status) {
			snprintf(buf, cap, " (pid %d: status %d)", (int)p->key.pid, (int)p->ack_status);
			break;
		}
	}
	return 1;
}

/* The processes d selects whose config is another (one that takes
 * precedence). */
static uint32_t overridden(const struct node *n, const struct desired *d)
{
	size_t i;
	uint32_t k = 0;
	for (i = 0; i < n->nprocs; i++) {
		const struct proc *p = n->procs[i];
		k += selector_match(&d->sel, &p->key) && podsel_match(&d->pod, proc_pod(n, p), p->key.container_id);
	}
	return k;
}

static void say(struct pconfig_entry *e, const char *reason, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(struct pconfig_entry *e, const char *reason, const char *fmt, ...)
{
	va_list ap;
	snprintf(e->reason, sizeof e->reason, "%s", reason);
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof e->message, fmt, ap);
	va_end(ap);
}

/* r's entry now, for config d (NULL: refused) counted as ro says: 1, or
 * 0 when the node has nothing of it (no entry). */
static int entry_of(const struct node *n, const struct by_ns *x, const struct pcrec *r, const struct desired *d,
		    const struct desired_rollout *ro, struct pconfig_entry *e)
{
	char why[64];
	uint32_t over;
	memset(e, 0, sizeof *e);
	e->generation = r->generation;
	if (!d) {
		say(e, "Invalid", "%s", r->why);
		return pods_here(x, r->ns, NULL);
	}
	e->applied = ro->applied;
	e->pending = ro->pending;
	e->failed = ro->rejected;
	e->matched = ro->applied + ro->pending + ro->rejected + ro->superseded + ro->not_owned;
	if (!e->matched && !pods_here(x, r->ns, d->pod.labels))
		return 0; /* nothing of it here */
	if (!e->matched && (over = overridden(n, d)))
		say(e, "Overridden", "%u processes here have a config that takes precedence over it", over);
	else if (!e->matched)
		say(e, "NoProcesses", "no process of consumer %s schema %u in the pods it selects here", d->sel.consumer,
		    d->sel.version);
	else if (ro->too_big)
		say(e, "PayloadTooLarge", "%u processes' regions are smaller than its %zu bytes", ro->too_big, d->len);
	else if (ro->rejected && first_rejected(n, d, why, sizeof why))
		say(e, "Rejected", "%u of %u processes rejected it%s", ro->rejected, e->matched, why);
	else if (ro->pending)
		say(e, "Pending", "%u of %u processes have not acknowledged it yet", ro->pending, e->matched);
	else if (ro->not_owned)
		say(e, "NotOwned", "%u processes' regions are another agent's to write", ro->not_owned);
	else if (ro->superseded && !ro->applied)
		say(e, "Superseded", "%u processes were given another config since (a Publish or Clear)", ro->superseded);
	else
		say(e, "Applied", "%u processes applied it", ro->applied);
	return 1;
}

static int same(const struct pconfig_entry *a, const struct pconfig_entry *b)
{
	return a->generation == b->generation && a->matched == b->matched && a->applied == b->applied &&
	       a->pending == b->pending && a->failed == b->failed && !strcmp(a->reason, b->reason) &&
	       !strcmp(a->message, b->message);
}

/* Now, as the API's Time ("...Z") or MicroTime (micro: ".uuuuuuZ"). */
static void rfc3339(char *buf, size_t cap, int micro)
{
	struct timespec ts;
	struct tm tm;
	size_t n;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	if (micro)
		snprintf(buf + n, cap - n, ".%06dZ", (int)(ts.tv_nsec / 1000));
	else
		snprintf(buf + n, cap - n, "Z");
}

/* Queue j (stolen) as key's request: 0, or -errno. */
static int put(struct node *n, const char *key, const char *method, const char *path, const char *ctype, json_t *j)
{
	char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
	int r = body ? kubewrite_put(n->pconfigs.wr, key, method, path, ctype, body, strlen(body)) : -ENOMEM;
	free(body);
	json_decref(j);
	if (r < 0)
		node_log_limited(PROCCTL_LOG_WARN, "kube_write_refused", "key=%s error=%s", key, strerror(-r));
	return r;
}

/* This node's entry of r's status (e; NULL: none, withdrawn). */
static int apply_entry(struct node *n, const struct pcrec *r, const struct pconfig_entry *e)
{
	char path[KUBEWRITE_PATH_MAX], at[40];
	json_t *status = json_object(), *nodes;
	snprintf(path, sizeof path, "/apis/" API "/namespaces/%s/processconfigs/%s/status?fieldManager=procctl-node%%2F%s&force=true",
		 r->ns, r->name, n->pconfigs.node);
	rfc3339(at, sizeof at, 0);
	if (e && (!(nodes = json_pack("[{s:s, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:s}]", "node", n->pconfigs.node,
				      "observedGeneration", (json_int_t)e->generation, "matched", (json_int_t)e->matched,
				      "applied", (json_int_t)e->applied, "pending", (json_int_t)e->pending, "failed",
				      (json_int_t)e->failed, "reason", e->reason, "message", e->message, "lastUpdateTime", at)) ||
		  json_object_set_new(status, "nodes", nodes) < 0)) {
		json_decref(status); /* an entry not made is not one withdrawn */
		return -ENOMEM;
	}
	return put(n, r->uid, "PATCH", path, "application/apply-patch+yaml",
		   json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", API, "kind", "ProcessConfig", "metadata", "name",
			     r->name, "namespace", r->ns, "status", status));
}

/* An Event about r: e's reason and message. */
static void event(struct node *n, struct pcrec *r, const struct pconfig_entry *e)
{
	char path[256], name[254], key[64], at[40];
	int64_t now = now_ns();
	if (r->event_ns && !strcmp(r->event_reason, e->reason) && now - r->event_ns < PCONFIG_EVENT_MS * 1000000ll)
		return; /* the same again, soon: once */
	r->event_ns = now;
	snprintf(r->event_reason, sizeof r->event_reason, "%s", e->reason);
	snprintf(path, sizeof path, "/apis/events.k8s.io/v1/namespaces/%s/events", r->ns);
	snprintf(name, sizeof name, "%.200s.%016llx", r->name, (unsigned long long)now);
	snprintf(key, sizeof key, "event/%s", r->uid);
	rfc3339(at, sizeof at, 1);
	put(n, key, "POST", path, "application/json",
	    json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}}", "apiVersion",
		      "events.k8s.io/v1", "kind", "Event", "metadata", "name", name, "namespace", r->ns, "eventTime", at,
		      "reportingController", "procctl.io/procctl-node", "reportingInstance", n->pconfigs.node, "action",
		      "Apply", "reason", e->reason, "note", e->message, "type", "Warning", "regarding", "apiVersion", API,
		      "kind", "ProcessConfig", "namespace", r->ns, "name", r->name, "uid", r->uid));
}

static int failure(const char *reason)
{
	return !strcmp(reason, "Invalid") || !strcmp(reason, "Rejected") || !strcmp(reason, "PayloadTooLarge");
}

static void status_one(struct node *n, const struct by_ns *x, struct pcrec *r, const struct desired_rollout *kro,
		       const uint8_t *unsettled)
{
	const struct desired *d = r->why[0] ? NULL : desired_kube_find(&n->desired, r->uid);
	struct pconfig_entry e;
	int here;
	if (!r->why[0] && (!d || unsettled[d - n->desired.kv]))
		return; /* not known yet: a process of it not read since it attached (a successor's, at its start) */
	here = entry_of(n, x, r, d, d ? &kro[d - n->desired.kv] : NULL, &e);
	if (here && (!r->written || !same(&e, &r->sent))) {
		if (apply_entry(n, r, &e) < 0)
			return;
		if (failure(e.reason) && (!r->written || strcmp(r->sent.reason, e.reason)))
			event(n, r, &e);
		r->written = 1;
		r->sent = e;
	} else if (!here && r->written && apply_entry(n, r, NULL) == 0) {
		r->written = 0;
	}
}

void pconfig_status_tick(struct node *n)
{
	struct pconfigs *pc = &n->pconfigs;
	size_t kn = n->desired.kn ? n->desired.kn : 1, i;
	struct desired_rollout *kro = calloc(kn, sizeof *kro);
	uint8_t *unsettled = calloc(kn, 1);
	struct by_ns x = {0};
	/* Nothing is said before the node knows its processes (the first scan:
	 * n->ready, as node_ready reads it; the loop calls this file, not the
	 * other way) and its pods: a successor would withdraw its
	 * predecessor's entries. */
	if (__atomic_load_n(&n->ready, __ATOMIC_ACQUIRE) && node_pods_known(n) && kro && unsettled && by_ns_make(n, &x) == 0) {
		rollout_count_kube(n, kro); /* each process's config, on it */
		for (i = 0; i < n->nprocs; i++) {
			const struct proc *p = n->procs[i];
			if (!p->announced && p->config && p->config->kube)
				unsettled[p->config - n->desired.kv] = 1;
		}
		for (i = 0; i < pc->n; i++)
			status_one(n, &x, &pc->rec[i], kro, unsettled);
	}
	free(x.v);
	free(unsettled);
	free(kro);
	timer_arm(&n->timers, &pc->t_status, now_ns() + PCONFIG_STATUS_MS * 1000000ll);
}
