/* SPDX-License-Identifier: Apache-2.0 */
/* pconfigs.h - the loop's view of the cluster's ProcessConfig objects
 * (kubernetes_processconfigs): what a kubewatch.h thread lists and watches
 * (procctl.io/v1alpha1 processconfigs of every namespace), each object
 * that holds taken into the desired store as a config of its own
 * (desired_kube_set), and given to the node's processes it is for now;
 * one that goes, or stops holding, withdrawn from them as a deleted
 * config is. What this node did with each is written to the object's
 * status (pconfig_status.c). Loop-only. Bounded: at most
 * kubernetes_processconfigs_max objects (more are counted), their
 * payloads kubernetes_processconfigs_bytes_max bytes in all, and
 * kubernetes_processconfigs_namespace_max of one namespace applied (one
 * past them is refused alone; a list refuses them in its order, a watch
 * as they come: kube_budget). */
#ifndef PROCCTL_NODE_PCONFIGS_H
#define PROCCTL_NODE_PCONFIGS_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "kube/kubewatch.h"
#include "kube/kubewrite.h"
#include "kube/pconfig.h"
#include "timer.h"

#define PCONFIG_STATUS_MS 1000     /* each object's entry looked at this often */
#define PCONFIG_STATUS_MIN_MS 2000 /* ... and written at most this often */
#define PCONFIG_EVENT_MS 60000     /* an Event of one reason about an object, at most this often */

/* One object known: kept (its config in the store), or refused (why). */
struct pcrec {
	char uid[37];
	char ns[64];
	char name[254];
	int64_t generation;
	char why[PCONFIG_WHY_MAX]; /* "": kept; else why it is not applied */
	int written;               /* status.nodes has this node's entry: sent */
	struct pconfig_entry sent; /* ... as sent (or as found there) */
	int64_t event_ns;          /* the last Event about it, and its reason */
	char event_reason[PCONFIG_REASON_MAX];
};

struct pconfigs {
	struct kubewatch *kw; /* NULL: off */
	struct kubewrite *wr; /* its status and Events */
	struct kube_kind kind; /* pconfig_kind, with the node's name */
	char node[254];
	struct pcrec *rec;    /* every object known, in no order */
	size_t n, max;        /* ... and at most (kubernetes_processconfigs_max) */
	size_t ns_max;        /* applied of one namespace at most */
	size_t bytes, bytes_max; /* the payload bytes kept, and at most */
	uint64_t dropped;     /* objects not kept now: the table was full (the last list's and those added since) */
	uint64_t refused;     /* objects (or changes of one) refused: a spec that does not hold, or no room */
	int synced;           /* the first list was applied */
	struct timer t_status;
};

struct node;

/* Start watching as cfg says (kubernetes_processconfigs; off: 0 and
 * nothing started), waking the loop through wake_fd. 0, or -errno and
 * why in err. */
int pconfigs_open(struct pconfigs *pc, const struct node_cfg *cfg, int wake_fd, char *err, size_t errlen);
/* Apply what the watcher queued to n's desired store and processes. 1
 * when the first list was applied in this call, else 0. */
int pconfigs_drain(struct node *n);
/* Stop the watcher and the writer (the configs stay in the store until
 * it is freed). */
void pconfigs_close(struct pconfigs *pc);

/* pconfig_status.c: every second, each object's entry of status.nodes
 * for this node, written when it changed (server-side apply, field
 * manager procctl-node/NODE), or withdrawn when the node has nothing of
 * it; an Event when it turns to a failure. Arms itself. */
void pconfig_status_tick(struct node *n);

#endif
