/* SPDX-License-Identifier: Apache-2.0 */
/* kubepods.c - the node's pods, as the loop keeps them (kubepods.h). */
#include "kubepods.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/log.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount/"

/* Where uid is, or would go: *found says which. */
static size_t seek(const struct kubepods *kp, const char *uid, int *found)
{
	size_t lo = 0, hi = kp->n;
	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(kp->v[mid]->uid, uid);
		if (!c)
			return *found = 1, mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct podmeta *kubepods_find(const struct kubepods *kp, const char *uid)
{
	int found;
	size_t i = kp->n ? seek(kp, uid, &found) : 0;
	return kp->n && found ? kp->v[i] : NULL;
}

/* Do a and b select alike: the same namespace and labels? */
static int alike(const struct podmeta *a, const struct podmeta *b)
{
	size_t i;
	if (strcmp(a->ns, b->ns) || a->labels_over != b->labels_over || a->nlabels != b->nlabels)
		return 0;
	for (i = 0; i < a->nlabels; i++) /* in the API server's order, which a change of nothing keeps */
		if (strcmp(a->text + a->labels[i].key, b->text + b->labels[i].key) ||
		    strcmp(a->text + a->labels[i].value, b->text + b->labels[i].value))
			return 0;
	return 1;
}

/* Tell of a pod that came, went, or whose namespace or labels changed:
 * old and new its metadata before and after (NULL: it was not, or is no
 * longer, known). */
struct teller {
	void (*changed)(void *arg, const char *uid, const struct podmeta *old, const struct podmeta *new_);
	void *arg;
};

static void tell(struct kubepods *kp, const struct teller *t, const char *uid, const struct podmeta *old,
		 const struct podmeta *new_)
{
	kp->moves++;
	t->changed(t->arg, uid, old, new_);
}

/* Take the change's pod (the batch's) as its UID's metadata, or drop it
 * (deleted), telling t when what selects it may have changed. */
static void apply(struct kubepods *kp, struct kube_change *c, const struct teller *t)
{
	struct podmeta *old, *pod = c->obj;
	int found;
	size_t i = seek(kp, pod->uid, &found);
	if (c->type == KUBE_DELETED) {
		if (!found) { /* one left out when the table was full, most likely */
			kp->dropped -= kp->dropped > 0;
			return;
		}
		old = kp->v[i];
		memmove(&kp->v[i], &kp->v[i + 1], (kp->n - i - 1) * sizeof kp->v[0]);
		kp->n--;
		tell(kp, t, old->uid, old, NULL);
		free(old);
	} else if (found) {
		old = kp->v[i];
		kp->v[i] = pod;
		c->obj = NULL;
		if (!alike(old, kp->v[i]))
			tell(kp, t, old->uid, old, kp->v[i]);
		free(old);
	} else if (kp->n == kp->max) {
		kp->dropped += c->type == KUBE_ADDED; /* a change of one left out was counted already */
		node_log_limited(PROCCTL_LOG_WARN, "kube_pods_full", "kept=%zu kubernetes_pods_max=%zu", kp->n, kp->max);
	} else {
		memmove(&kp->v[i + 1], &kp->v[i], (kp->n - i) * sizeof kp->v[0]);
		kp->v[i] = pod;
		c->obj = NULL;
		kp->n++;
		if (c->type != KUBE_ADDED) /* one left out before, kept now there is room */
			kp->dropped -= kp->dropped > 0;
		tell(kp, t, kp->v[i]->uid, NULL, kp->v[i]);
	}
}

static int by_uid(const void *a, const void *b)
{
	const struct podmeta *pa = ((const struct kube_change *)a)->obj, *pb = ((const struct kube_change *)b)->obj;
	return strcmp(pa->uid, pb->uid);
}

/* A list (sorted here by UID): the pods it does not have are gone (told);
 * it is then applied as changes. */
static void relist(struct kubepods *kp, struct kube_batch *b, const struct teller *t)
{
	size_t i = 0;
	qsort(b->v, b->n, sizeof b->v[0], by_uid);
	while (i < kp->n) {
		struct kube_change key = {KUBE_ADDED, kp->v[i]};
		struct podmeta *old = kp->v[i];
		if (bsearch(&key, b->v, b->n, sizeof b->v[0], by_uid)) {
			i++;
			continue;
		}
		memmove(&kp->v[i], &kp->v[i + 1], (kp->n - i - 1) * sizeof kp->v[0]);
		kp->n--;
		tell(kp, t, old->uid, old, NULL);
		free(old);
	}
	kp->dropped = b->dropped; /* what this list left out */
}

int kubepods_drain(struct kubepods *kp,
		   void (*changed)(void *arg, const char *uid, const struct podmeta *old, const struct podmeta *new_), void *arg)
{
	struct teller t = {changed, arg};
	struct kube_batch *b, *next;
	int first = 0;
	size_t i;
	if (!kp->kw)
		return 0;
	for (b = kubewatch_take(kp->kw); b; b = next) {
		next = b->next;
		if (b->kind == KUBE_BATCH_LIST) {
			relist(kp, b, &t);
			first |= !kp->synced;
			kp->synced = 1;
		}
		for (i = 0; i < b->n; i++)
			apply(kp, &b->v[i], &t);
		kube_batch_free(b);
	}
	return first;
}

static void forget(struct kubepods *kp)
{
	size_t i;
	for (i = 0; i < kp->n; i++)
		free(kp->v[i]);
	kp->n = 0;
}

int kube_watch_cfg(struct kubewatch_cfg *kc, const struct node_cfg *cfg, int wake_fd, char *err, size_t errlen)
{
	int in_cluster = !strcmp(cfg->kube_api, "in-cluster"), r;
	memset(kc, 0, sizeof *kc);
	if (in_cluster && (r = kubewatch_in_cluster_url(kc->url, sizeof kc->url, err, errlen)) < 0)
		return r;
	if (!in_cluster)
		snprintf(kc->url, sizeof kc->url, "%s", cfg->kube_api);
	if (kubewatch_url_check(kc->url, err, errlen) < 0)
		return -EINVAL;
	snprintf(kc->token_file, sizeof kc->token_file, "%s",
		 cfg->kube_token_file[0] || !in_cluster ? cfg->kube_token_file : SA_DIR "token");
	snprintf(kc->ca_file, sizeof kc->ca_file, "%s", cfg->kube_ca_file[0] || !in_cluster ? cfg->kube_ca_file : SA_DIR "ca.crt");
	kc->watch_s = cfg->kube_watch_s;
	kc->page_bytes_max = cfg->kube_page_bytes_max;
	kc->event_bytes_max = cfg->kube_event_bytes_max;
	kc->wake_fd = wake_fd;
	return 0;
}

int kubepods_open(struct kubepods *kp, const struct node_cfg *cfg, int wake_fd, char *err, size_t errlen)
{
	struct kubewatch_cfg kc;
	int r;
	memset(kp, 0, sizeof *kp);
	if (!cfg->kube_api[0])
		return 0;
	if ((r = kube_watch_cfg(&kc, cfg, wake_fd, err, errlen)) < 0)
		return r;
	if (!cfg->kube_node[0] || !labelsel_subdomain_valid(cfg->kube_node, strlen(cfg->kube_node))) {
		snprintf(err, errlen, "kubernetes_node: the node's name (a DNS subdomain), needed with kubernetes_api");
		return -EINVAL;
	}
	/* The pods of the node that may run (a finished pod, Succeeded or
	 * Failed, runs nothing: a node keeps thousands of them until the pod
	 * GC removes them); a watch sees a pod that finishes DELETED (the API
	 * server's selection of it ends). The node's name, a DNS subdomain,
	 * needs no escaping. */
	kc.kind = &podmeta_kind;
	snprintf(kc.path, sizeof kc.path,
		 "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s%%2Cstatus.phase%%21%%3DSucceeded%%2Cstatus.phase%%21%%3DFailed",
		 cfg->kube_node);
	kc.max = cfg->kube_pods_max;
	if (!(kp->v = calloc(cfg->kube_pods_max, sizeof kp->v[0]))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	kp->max = cfg->kube_pods_max;
	if (!(kp->kw = kubewatch_start(&kc, err, errlen))) {
		free(kp->v);
		kp->v = NULL;
		return -EINVAL;
	}
	node_log(PROCCTL_LOG_INFO, "kube_watching", "api=%s node=%s", kc.url, cfg->kube_node);
	return 0;
}

void kubepods_close(struct kubepods *kp)
{
	kubewatch_stop(kp->kw);
	kp->kw = NULL;
	forget(kp);
	free(kp->v);
	kp->v = NULL;
}
