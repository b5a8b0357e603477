/* SPDX-License-Identifier: Apache-2.0 */
/* kubepods.h - the loop's view of the node's pods: what kubewatch.h's
 * thread lists and watches, applied in order, pod UID to its metadata.
 * Loop-only. At most pods_max pods are kept (a node runs a few hundred at
 * most); one more is counted, not kept, until a later list has room. */
#ifndef PROCCTL_NODE_KUBEPODS_H
#define PROCCTL_NODE_KUBEPODS_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "kube/kubewatch.h"
#include "kube/podmeta.h"

struct kubepods {
	struct kubewatch *kw; /* NULL: off (no kubernetes_api) */
	struct podmeta **v;   /* podmeta_dup's, sorted by UID */
	size_t n, max;
	uint64_t dropped;     /* pods of the node not kept now (the table was full): the last list's, and
			       * those added since, less those deleted */
	uint64_t moves;       /* pods that came, went, or changed namespace or labels, in all: what
			       * selects processes by them (what is cached on it is stale) */
	int synced;           /* the first list was applied */
};

/* What every watch of the API server takes from cfg (kubernetes_api
 * on): where, with which token and CA, how long a watch, and its bounds,
 * waking the loop through wake_fd; the kind, path and max are the
 * caller's. 0, or -errno and why in err (in-cluster outside a pod, a bad
 * URL). */
int kube_watch_cfg(struct kubewatch_cfg *kc, const struct node_cfg *cfg, int wake_fd, char *err, size_t errlen);
/* Start watching as cfg says (kubernetes_api; off: 0 and nothing
 * started), waking the loop through wake_fd. 0, or -errno and why in err
 * (in-cluster outside a pod, a bad URL, no thread). */
int kubepods_open(struct kubepods *kp, const struct node_cfg *cfg, int wake_fd, char *err, size_t errlen);
/* Apply what the watcher queued; changed(arg, uid, old, new_) for each pod
 * whose namespace or labels changed, or that came (old NULL) or went
 * (new_ NULL): what selects its processes may have. 1 when the first
 * list was applied in this call (kp->synced from now on), else 0. */
int kubepods_drain(struct kubepods *kp,
		   void (*changed)(void *arg, const char *uid, const struct podmeta *old, const struct podmeta *new_), void *arg);
/* The pod of that UID, or NULL (unknown, or off). */
const struct podmeta *kubepods_find(const struct kubepods *kp, const char *uid);
/* Stop the watcher and forget every pod. */
void kubepods_close(struct kubepods *kp);

#endif
