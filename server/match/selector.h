/* SPDX-License-Identifier: Apache-2.0 */
/* selector.h - what selects processes: a Selector of the API (a pid, a
 * consumer and its schema version, a pod, a container) as the daemon
 * keeps it, in filters, event keys, desired configs and the config file's
 * [desired] sections. */
#ifndef PROCCTL_NODE_SELECTOR_H
#define PROCCTL_NODE_SELECTOR_H

#include <stdint.h>
#include <sys/types.h>

#include "kube/labelsel.h"
#include "sys/podid.h"
#include "procctl.h"

/* What selects a process: a Selector's fields, a process's identity.
 * Empty or zero fields of a filter match anything. */
struct selector {
	pid_t pid;
	uint64_t pid_start; /* a process's start time (procstat.h); a pid selector bound to one
	                     * matches that process only (0: unbound, or unknown) */
	uint64_t pid_image; /* the image it runs (procstat.h); bound to one, only while it runs
	                     * that image (0: unknown, or from a store older than format 3) */
	uint32_t version;
	char consumer[PROCCTL_CONSUMER_MAX + 1];
	char pod_uid[PROCCTL_POD_UID_MAX + 1];
	char container_id[PROCCTL_CONTAINER_ID_MAX + 1];
	int always; /* the event matches every filter (ownership changes) */
};

int selector_match(const struct selector *filter, const struct selector *k);
/* The same selector: every field equal (always aside). */
int selector_same(const struct selector *a, const struct selector *b);

/* 0 when k's fields are well formed (a pid >= 0, a consumer name, a pod
 * UID of lowercase hex and dashes, a container ID of lowercase hex; empty
 * ones are fine); else -EINVAL and why names the field. */
int selector_valid(const struct selector *k, const char **why);

/* A Selector's fields from a request or the config file as a key,
 * checked like selector_valid (also: too long for the key), and a pod UID
 * must be one (procctl_pod_uid_parse: either case, kept lowercase with
 * dashes): one that names no pod would match nothing, silently. 0 or
 * -EINVAL and why. */
int selector_from(struct selector *k, int32_t pid, const char *consumer, uint32_t version, const char *pod_uid,
		const char *container_id, const char **why);
/* The same for a record an older procctl-node stored, whose pod UIDs it
 * checked as selector_valid does: kept as written. */
int selector_from_stored(struct selector *k, int32_t pid, const char *consumer, uint32_t version,
		       const char *pod_uid, const char *container_id, const char **why);

/* What selects processes by their pod as the Kubernetes API server sees
 * it (procctl-node's kubernetes_api): the pod's namespace and a label
 * selector (labelsel.h; kept in its canonical form). Empty: it narrows
 * nothing. Not empty: a process whose pod is not known (no pod, the API
 * server not told of it yet, or no API server followed) is not selected. */
#define PODSEL_NS_MAX 63
struct podsel {
	char ns[PODSEL_NS_MAX + 1];
	char labels[LABELSEL_MAX + 1];
	char container[64]; /* the pod's container of that name ("": any; a ProcessConfig's spec.container) */
};

struct podmeta;

/* ns (a namespace: a DNS label, or empty) and labels (kubectl -l's
 * syntax, or empty) into ps, checked: 0, or -EINVAL and why in err
 * ("selector.namespace: ...", "selector.label_selector: ..."). */
int podsel_from(struct podsel *ps, const char *ns, const char *labels, char *err, size_t errlen);
int podsel_empty(const struct podsel *ps);
int podsel_same(const struct podsel *a, const struct podsel *b);
/* 1 when the process of container container_id (its ID, "": none) of the
 * pod m (NULL: not known) is one ps selects. */
int podsel_match(const struct podsel *ps, const struct podmeta *m, const char *container_id);
/* How many requirements its label selector has (0: none). */
size_t podsel_requirements(const struct podsel *ps);

#endif
