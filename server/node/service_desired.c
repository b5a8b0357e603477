/* SPDX-License-Identifier: Apache-2.0 */
/* service_desired.c - desired configs: set, delete and list through the
 * API, those of the config file, and giving each to the processes it is
 * for. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_int.h"
#include "sys/procstat.h"

int64_t desired_give(struct node *n, struct proc *p, const struct desired *d)
{
	int64_t g;
	if (!procctl_registry_owner(p->reg, p->key.consumer))
		return 0;
	if (d && d->len > p->payload_cap) {
		node_log(PROCCTL_LOG_WARN, "desired_too_big", "pid=%d revision=%llu bytes=%zu capacity=%u", (int)p->key.pid,
			 (unsigned long long)d->revision, d->len, p->payload_cap);
		p->too_big_rev = d->revision;
		return 0;
	}
	g = d ? procctl_client_write(p->c, d->payload, d->len) : procctl_client_clear(p->c);
	proc_wrote(n, p, g, d ? d->revision : 0);
	return g > 0 ? g : 0;
}

/* Give d to the processes it is the config for now (those of this
 * daemon's regions); no one waits for their acks. */
static void desired_push(struct node *n, const struct desired *d)
{
	struct proc **v = NULL;
	ssize_t c, i;
	if ((c = procs_matching(n, &d->sel, &d->pod, &v)) < 0)
		return;
	for (i = 0; i < c; i++)
		if (!v[i]->apply_deferred && desired_effective(&n->desired, d, &v[i]->key, proc_pod(n, v[i])))
			desired_give(n, v[i], d);
	free(v);
}

void desired_pod_changed(void *arg, const char *uid, const struct podmeta *old, const struct podmeta *new_)
{
	struct node *n = arg;
	size_t i;
	for (i = 0; i < n->nprocs; i++) {
		struct proc *p = n->procs[i];
		const struct desired *was, *now;
		int64_t g;
		if (strcmp(p->key.pod_uid, uid) || !p->announced || p->apply_deferred)
			continue; /* its config comes when it is announced (desired_apply) */
		was = desired_match(&n->desired, &p->key, old);
		now = desired_match(&n->desired, &p->key, new_);
		if (was == now || (now && p->desired_rev == now->revision))
			continue;
		if (!now && (!was || p->desired_rev != was->revision))
			continue; /* it holds no config of the one that went: a Publish, a Clear */
		g = desired_give(n, p, now);
		node_log(PROCCTL_LOG_INFO, "desired_pod_changed", "pid=%d pod=%s revision=%llu was=%llu generation=%lld",
			 (int)p->key.pid, uid, (unsigned long long)(now ? now->revision : 0),
			 (unsigned long long)(was ? was->revision : 0), (long long)g);
	}
}

/* The process p was (its pid and start time) is gone, or exec'd: the pid
 * configs bound to it go too (a later process with the pid is another). */
void desired_process_gone(struct node *n, pid_t pid, uint64_t start)
{
	char err[400], q[1700];
	int r;
	if (!start)
		return;
	r = desired_forget_process(&n->desired, pid, start, err, sizeof err);
	if (r > 0)
		node_log(PROCCTL_LOG_INFO, "desired_deleted", "pid=%d configs=%d reason=\"its process is gone\"", (int)pid, r);
	else if (r < 0)
		node_log(PROCCTL_LOG_WARN, "desired_not_kept", "pid=%d error=\"%s\"", (int)pid,
			 node_log_quote(q, sizeof q, err));
}

/* At start: a pid config whose process is no longer the one running
 * under its pid, or runs another image (it exited or exec'd while no
 * daemon ran), goes. */
void desired_prune(struct node *n)
{
	char err[400], q[1700];
	size_t i;
	if (n->desired.unbound_dropped)
		node_log(PROCCTL_LOG_WARN, "desired_unbound_dropped", "configs=%zu reason=\"pid configs of an older store "
			 "name no process instance\"", n->desired.unbound_dropped);
	for (i = 0; i < n->desired.n;) {
		const struct selector *k = &n->desired.v[i].sel;
		uint64_t start = 0, image = 0;
		size_t before = n->desired.n;
		if (k->pid && (procstat_ident(NULL, k->pid, &start, &image) < 0 || start != k->pid_start ||
			       (k->pid_image && image != k->pid_image)))
			desired_process_gone(n, k->pid, k->pid_start);
		else if (k->pid && !k->pid_image && image &&
			 desired_bind_image(&n->desired, i, image, err, sizeof err) < 0) /* a format-2 store's */
			node_log(PROCCTL_LOG_WARN, "desired_not_kept", "pid=%d error=\"%s\"", (int)k->pid,
				 node_log_quote(q, sizeof q, err));
		if (n->desired.n == before)
			i++;
	}
}

/* The [desired] sections of the config file (at start, and at each
 * reload): each is set, with the section's name as its source, unless the
 * store has it already byte for byte from that section, and then given to
 * its processes; a config of the store whose source section cfg has not
 * (any more, even across restarts: the store keeps the source) is
 * deleted, its processes keeping what they have, as after
 * DeleteDesiredConfig. A section that cannot be set (it overlaps a config
 * of the same precedence set through the API, or the store cannot be
 * written) is logged by name and tried again at the next reload. */
void desired_from_file(struct node *n, const struct node_cfg *cfg)
{
	char err[400], q[1700];
	size_t i, j;
	for (i = 0; i < n->desired.n;) {
		const struct desired *d = &n->desired.v[i];
		struct selector sel = d->sel;
		struct podsel pod = d->pod;
		char source[sizeof d->source];
		for (j = 0; j < cfg->ndesired && !(selector_same(&cfg->desired[j].sel, &d->sel) &&
						   podsel_same(&cfg->desired[j].pod, &d->pod) &&
						   !strcmp(cfg->desired[j].name, d->source));
		     j++)
			;
		if (!d->source[0] || j < cfg->ndesired) {
			i++;
			continue;
		}
		memcpy(source, d->source, sizeof source);
		if (desired_delete(&n->desired, &sel, &pod, err, sizeof err) < 0) {
			node_log(PROCCTL_LOG_ERROR, "desired_file_failed", "section=%s error=\"%s\"", source, node_log_quote(q, sizeof q, err));
			i++;
			continue;
		}
		node_log(PROCCTL_LOG_INFO, "desired_deleted", "section=%s consumer=%s version=%u pod=%s container=%.12s", source,
			 sel.consumer, sel.version, sel.pod_uid[0] ? sel.pod_uid : "-",
			 sel.container_id[0] ? sel.container_id : "-");
	}
	for (i = 0; i < cfg->ndesired; i++) {
		const struct node_desired_cfg *f = &cfg->desired[i];
		const struct desired *d = desired_find(&n->desired, &f->sel, &f->pod), *other = NULL;
		const char *why = NULL;
		uint64_t replaced;
		int r;
		if (d && d->len == f->len && !memcmp(d->payload, f->data, f->len) && !strcmp(d->source, f->name))
			continue; /* as the store has it */
		replaced = d && !d->source[0] ? d->revision : 0; /* an API config: the file's selector takes it back */
		r = desired_set(&n->desired, &f->sel, &f->pod, f->data, f->len, f->name, &d, &other, &why, err, sizeof err);
		if (r == -EEXIST)
			snprintf(err, sizeof err, "overlaps the desired config (revision %llu) of the same precedence for "
				 "consumer=%s version=%u pid=%d pod=%s container=%s",
				 (unsigned long long)other->revision, other->sel.consumer, other->sel.version,
				 (int)other->sel.pid, other->sel.pod_uid, other->sel.container_id);
		else if (r == -EINVAL)
			snprintf(err, sizeof err, "%s", why);
		else if (r < 0 && r != -EIO && r != -ENOSPC)
			snprintf(err, sizeof err, "%s", strerror(-r));
		if (r < 0) {
			node_log(PROCCTL_LOG_ERROR, "desired_file_failed", "section=%s error=\"%s\"", f->name, node_log_quote(q, sizeof q, err));
			continue;
		}
		if (replaced)
			node_log(PROCCTL_LOG_WARN, "desired_replaced", "section=%s revision=%llu reason=\"a config set "
				 "through the API had the selector the file names\"", f->name, (unsigned long long)replaced);
		node_log(PROCCTL_LOG_INFO, "desired_set", "section=%s revision=%llu consumer=%s version=%u pod=%s container=%.12s "
			 "namespace=%s labels=\"%s\" bytes=%zu", f->name, (unsigned long long)d->revision, d->sel.consumer,
			 d->sel.version, d->sel.pod_uid[0] ? d->sel.pod_uid : "-",
			 d->sel.container_id[0] ? d->sel.container_id : "-", d->pod.ns[0] ? d->pod.ns : "-",
			 node_log_quote(q, sizeof q, d->pod.labels), d->len);
		desired_push(n, d);
	}
}

/* SetDesiredConfig's checks, before anything is set: the config, its
 * selector as a filter (*f, *ps), a pid's process, a selector of the
 * config file's, the wait. 0, or -1 and the job answered. */
static int set_desired_check(struct node *n, struct node_job *job, struct selector *f, struct podsel *ps)
{
	Procctl__V1__SetDesiredConfigRequest *rq = (void *)job->req;
	const struct desired *d;
	char err[LABELSEL_MAX + 600];
	enum node_code code;
	if (!rq->config) {
		job_finish(job, NODE_INVALID_ARGUMENT, "config: required", NULL);
		return -1;
	}
	if ((code = filter_from_pb(n, rq->config->selector, f, ps, err, sizeof err))) {
		job_finish(job, code, err, NULL);
		return -1;
	}
	if (f->pid && !(f->pid_start = procs_start_of(n, f->pid, &f->pid_image))) {
		snprintf(err, sizeof err, "selector.pid: %d is no attached process (a pid's config binds to its process, "
			 "and goes when it does)", (int)f->pid);
		job_finish(job, NODE_FAILED_PRECONDITION, err, NULL);
		return -1;
	}
	if ((d = desired_find(&n->desired, f, ps)) && d->source[0]) {
		snprintf(err, sizeof err, "the selector belongs to [desired %s] of the config file: change it there",
			 d->source);
		job_finish(job, NODE_FAILED_PRECONDITION, err, NULL);
		return -1;
	}
	if (wait_admit(n, job, rq->wait_ms) < 0)
		return -1; /* refused before anything is set */
	return 0;
}

/* SetDesiredConfig's config stored, and said: it, or NULL and the job
 * answered. */
static const struct desired *set_desired_store(struct node *n, struct node_job *job, const struct selector *f,
					       const struct podsel *ps)
{
	Procctl__V1__SetDesiredConfigRequest *rq = (void *)job->req;
	const struct desired *d = NULL, *other = NULL;
	const char *why = NULL;
	char err[LABELSEL_MAX + 600], msg[4 * LABELSEL_MAX + 8];
	int r;
	r = desired_set(&n->desired, f, ps, rq->config->payload.data, rq->config->payload.len, NULL, &d, &other, &why,
			err, sizeof err);
	if (r == -EINVAL) {
		job_finish(job, NODE_INVALID_ARGUMENT, why, NULL);
		return NULL;
	}
	if (r == -EEXIST) {
		snprintf(err, sizeof err,
			 "overlaps the desired config of the same precedence for pid=%d consumer=%s schema_version=%u "
			 "pod_uid=%s container_id=%s namespace=%s (revision %llu): delete it first",
			 (int)other->sel.pid, other->sel.consumer, other->sel.version, other->sel.pod_uid,
			 other->sel.container_id, other->pod.ns, (unsigned long long)other->revision);
		job_finish(job, NODE_ALREADY_EXISTS, err, NULL);
		return NULL;
	}
	if (r == -ENOSPC) {
		job_finish(job, NODE_RESOURCE_EXHAUSTED, err, NULL);
		return NULL;
	}
	if (r == -EIO) {
		char msg[sizeof err + 64];
		snprintf(msg, sizeof msg, "could not keep it on the host (%s): nothing changed", err);
		job_finish(job, NODE_UNAVAILABLE, msg, NULL);
		return NULL;
	}
	if (r < 0) {
		job_finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
		return NULL;
	}
	node_log(PROCCTL_LOG_INFO, "desired_set", "revision=%llu consumer=%s version=%u pid=%d pod=%s container=%.12s "
		 "namespace=%s labels=\"%s\" bytes=%zu", (unsigned long long)d->revision, d->sel.consumer, d->sel.version,
		 (int)d->sel.pid, d->sel.pod_uid[0] ? d->sel.pod_uid : "-", d->sel.container_id[0] ? d->sel.container_id : "-",
		 d->pod.ns[0] ? d->pod.ns : "-", node_log_quote(msg, sizeof msg, d->pod.labels), d->len);
	return d;
}

/* The processes the stored d is the config for now get it, as one wait
 * of job's (which keeps a copy of d). */
static void set_desired_give(struct node *n, struct node_job *job, const struct selector *f, const struct podsel *ps,
			     const struct desired *d)
{
	Procctl__V1__SetDesiredConfigRequest *rq = (void *)job->req;
	struct proc **v = NULL, **eff;
	struct wait *w;
	uint8_t *copy;
	ssize_t c, i, k = 0;
	if ((c = procs_matching(n, f, ps, &v)) < 0)
		c = 0;
	eff = v;
	for (i = 0; i < c; i++) /* one whose pods are not listed yet gets it then */
		if (!v[i]->apply_deferred && desired_effective(&n->desired, d, &v[i]->key, proc_pod(n, v[i])))
			eff[k++] = v[i];
	if (!(copy = malloc(d->len))) {
		free(v);
		job_finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
		return;
	}
	memcpy(copy, d->payload, d->len);
	{
		ProtobufCBinaryData payload = {d->len, d->payload};
		w = wait_write_all(n, job, eff, (size_t)k, &payload, rq->wait_ms, 0);
	}
	free(v);
	if (!w) {
		free(copy);
		return;
	}
	w->desired = *d;
	w->desired.payload = copy;
}

void do_set_desired(struct node *n, struct node_job *job)
{
	const struct desired *d;
	struct selector f;
	struct podsel ps;
	if (set_desired_check(n, job, &f, &ps) < 0 || !(d = set_desired_store(n, job, &f, &ps)))
		return;
	/* The processes it is the config for now get it. */
	set_desired_give(n, job, &f, &ps, d);
}

/* A copy of d (its payload malloc'd) and its rollout now: 0, or -ENOMEM. */
static int desired_snapshot(const struct node *n, const struct desired *d, struct desired *copy,
			    struct desired_rollout *ro)
{
	struct desired_rollout *r = malloc(sizeof *r * n->desired.n);
	*copy = *d;
	copy->payload = malloc(d->len ? d->len : 1);
	if (!r || !copy->payload) {
		free(r);
		free(copy->payload);
		return -ENOMEM;
	}
	memcpy(copy->payload, d->payload, d->len);
	rollout_count(n, r);
	*ro = r[d - n->desired.v];
	free(r);
	return 0;
}

/* The source in w for what applies to p now (a desired config, or none:
 * a clear), added when new: its index, or -ENOMEM. */
static ssize_t src_for(struct node *n, struct wait *w, const struct proc *p)
{
	const struct desired *d = proc_desired(n, p);
	uint64_t rev = d ? d->revision : 0;
	struct wait_src *s;
	size_t i;
	for (i = 0; i < w->nsrcs; i++)
		if (w->srcs[i].rev == rev)
			return (ssize_t)i;
	s = &w->srcs[w->nsrcs];
	*s = (struct wait_src){rev, NULL, 0};
	if (d && !(s->payload = malloc(d->len ? d->len : 1)))
		return -ENOMEM;
	if (d) {
		memcpy(s->payload, d->payload, d->len);
		s->len = d->len;
	}
	return (ssize_t)w->nsrcs++;
}

/* The processes that hold d (their last write carried it), in (pid,
 * instance) order: their count (*out malloc'd), or -ENOMEM. */
static ssize_t holders_of(struct node *n, const struct desired *d, struct proc ***out)
{
	ssize_t c = procs_matching(n, &d->sel, NULL, out), i, k = 0;
	for (i = 0; i < c; i++)
		if ((*out)[i]->desired_rev == d->revision)
			(*out)[k++] = (*out)[i];
	return c < 0 ? c : k;
}

/* DeleteDesiredConfig's clear: the k processes in v that held old (the
 * deleted config) are each given what applies to them without it; w,
 * answered once their writes (and acks) settle, owns old's payload. The
 * wait was admitted before the delete. */
static void take_back(struct node *n, struct node_job *job, struct desired *old, const struct desired_rollout *ro,
		      uint32_t wait_ms, struct proc **v, size_t k)
{
	struct wait *w;
	ssize_t src;
	size_t i;
	if (!(w = wait_write_all(n, job, v, k, NULL, wait_ms, 0))) {
		free(old->payload);
		return;
	}
	w->desired = *old;
	w->rollout = *ro;
	if (!(w->srcs = calloc(k + 1, sizeof *w->srcs)))
		goto nomem;
	for (i = 0; i < k; i++) {
		if ((src = src_for(n, w, v[i])) < 0)
			goto nomem;
		w->item[i].src = (size_t)src;
	}
	return;
nomem:
	/* Nothing written yet (the writes go out at the loop's next turn). */
	for (i = 0; i < k; i++) {
		w->item[i].status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_FAILED;
		snprintf(w->item[i].error, sizeof w->item[i].error, "not written: out of memory");
		w->item[i].done = 1;
	}
	w->open = 0;
}

/* DeleteDesiredConfig's checks: the request, its selector (*f, *ps)
 * and the config it names, one set through the API. It, or NULL and the
 * job answered. */
static const struct desired *delete_desired_find(struct node *n, struct node_job *job, struct selector *f,
						 struct podsel *ps)
{
	Procctl__V1__DeleteDesiredConfigRequest *rq = (void *)job->req;
	const Procctl__V1__Selector *s = rq->selector;
	const struct desired *d;
	const char *why = NULL;
	char err[LABELSEL_MAX + 600], msg[LABELSEL_MAX + 700];
	enum node_code code;

	if (rq->wait_ms && !rq->clear) {
		job_finish(job, NODE_INVALID_ARGUMENT, "wait_ms: waits for the processes clear writes to; "
			   "without clear it writes to none", NULL);
		return NULL;
	}
	if (s && podsel_from(ps, s->namespace_, s->label_selector, err, sizeof err) < 0) {
		job_finish(job, NODE_INVALID_ARGUMENT, err, NULL);
		return NULL;
	}
	if (!s)
		memset(ps, 0, sizeof *ps);
	if ((code = selector_from_pb(s, f, &why))) {
		/* A pod UID an older procctl-node stored unchecked: deleted as it is
		 * written, and only that (else the selector is refused). */
		const char *bad = why;
		if (!s || selector_from_stored(f, s->pid, s->consumer, s->schema_version, s->pod_uid, s->container_id,
					       &why) < 0 || desired_check(f, &why) < 0 || !desired_find(&n->desired, f, ps)) {
			job_finish(job, code, bad, NULL);
			return NULL;
		}
	} else if (desired_check(f, &why) < 0) {
		job_finish(job, NODE_INVALID_ARGUMENT, why, NULL);
		return NULL;
	}
	if (!(d = desired_find(&n->desired, f, ps))) {
		job_finish(job, NODE_NOT_FOUND, "no desired config for that selector", NULL);
		return NULL;
	}
	if (d->source[0]) {
		snprintf(msg, sizeof msg, "the selector belongs to [desired %s] of the config file: remove it there",
			 d->source);
		job_finish(job, NODE_FAILED_PRECONDITION, msg, NULL);
		return NULL;
	}
	return d;
}

/* d deleted, a copy of it and its rollout kept in *old and *ro, and
 * said. 0, or -1 and the job answered. */
static int delete_desired_store(struct node *n, struct node_job *job, const struct desired *d, const struct selector *f,
				const struct podsel *ps, struct desired *old, struct desired_rollout *ro)
{
	Procctl__V1__DeleteDesiredConfigRequest *rq = (void *)job->req;
	char err[LABELSEL_MAX + 600], msg[LABELSEL_MAX + 700];
	if (desired_snapshot(n, d, old, ro) < 0) {
		job_finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
		return -1;
	}
	if (desired_delete(&n->desired, f, ps, err, sizeof err) < 0) {
		free(old->payload);
		snprintf(msg, sizeof msg, "could not keep the change on the host (%s): nothing changed", err);
		job_finish(job, NODE_UNAVAILABLE, msg, NULL);
		return -1;
	}
	node_log(PROCCTL_LOG_INFO, "desired_deleted", "revision=%llu consumer=%s version=%u pid=%d pod=%s container=%.12s "
		 "clear=%d", (unsigned long long)old->revision, f->consumer, f->version, (int)f->pid,
		 f->pod_uid[0] ? f->pod_uid : "-", f->container_id[0] ? f->container_id : "-", rq->clear);
	return 0;
}

void do_delete_desired(struct node *n, struct node_job *job)
{
	Procctl__V1__DeleteDesiredConfigRequest *rq = (void *)job->req;
	Procctl__V1__DeleteDesiredConfigResponse m = PROCCTL__V1__DELETE_DESIRED_CONFIG_RESPONSE__INIT;
	const struct desired *d;
	struct desired old;
	struct desired_rollout ro;
	struct selector f;
	struct podsel ps;
	struct arena a = {0};
	struct proc **v = NULL;
	ssize_t k = 0;

	if (!(d = delete_desired_find(n, job, &f, &ps)))
		return;
	/* Whatever can refuse the call, before the delete. */
	if (rq->clear && wait_admit(n, job, rq->wait_ms) < 0)
		return;
	if (rq->clear && (k = holders_of(n, d, &v)) < 0) {
		job_finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
		return;
	}
	if (delete_desired_store(n, job, d, &f, &ps, &old, &ro) < 0) {
		free(v);
		return;
	}
	if (rq->clear) {
		take_back(n, job, &old, &ro, rq->wait_ms, v, (size_t)k);
		free(v);
		return;
	}
	if ((m.config = mk_desired(&a, &old)))
		m.config->rollout = mk_rollout(&a, &ro);
	free(old.payload);
	job_finish_arena(job, &a, &m.base);
}

static int by_precedence(const void *a, const void *b)
{
	const struct desired *x = *(const struct desired *const *)a, *y = *(const struct desired *const *)b;
	if (x->level != y->level)
		return x->level > y->level ? -1 : 1;
	return x->revision < y->revision ? -1 : x->revision > y->revision;
}

void do_list_desired(struct node *n, struct node_job *job)
{
	Procctl__V1__ListDesiredConfigsResponse m = PROCCTL__V1__LIST_DESIRED_CONFIGS_RESPONSE__INIT;
	struct arena a = {0};
	size_t i, cnt = n->desired.n ? n->desired.n : 1;
	const struct desired **v = ar_alloc(&a, sizeof *v * cnt);
	struct desired_rollout *r = ar_alloc(&a, sizeof *r * cnt);
	m.revision = n->desired.revision;
	m.configs = ar_alloc(&a, sizeof *m.configs * cnt);
	if (v && r && m.configs) {
		rollout_count(n, r);
		for (i = 0; i < n->desired.n; i++)
			v[i] = &n->desired.v[i];
		qsort(v, n->desired.n, sizeof *v, by_precedence);
		for (i = 0; i < n->desired.n; i++) {
			if (!(m.configs[m.n_configs] = mk_desired(&a, v[i])))
				break;
			m.configs[m.n_configs++]->rollout = mk_rollout(&a, &r[v[i] - n->desired.v]);
		}
	}
	job_finish_arena(job, &a, &m.base);
}
