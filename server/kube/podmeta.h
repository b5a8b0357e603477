/* SPDX-License-Identifier: Apache-2.0 */
/* podmeta.h - a Pod as the Kubernetes API server gives it (a list's item,
 * a watch event's object), kept as procctl-node needs it: UID, namespace,
 * name, labels, container names and resourceVersion. The API server is a
 * peer like any: every field is checked as Kubernetes itself validates it
 * (a UID, DNS names, label keys and values), and what one pod may hold is
 * bounded; a pod with more labels than that is kept without them
 * (labels_over: no label selector matches it, and it is counted). A NUL
 * (\u0000) in a string the daemon reads refuses its pod alone; one in
 * any other (an annotation, an argument: the API server keeps them) is
 * no reason to refuse it, nor the page it is on. */
#ifndef PROCCTL_NODE_PODMETA_H
#define PROCCTL_NODE_PODMETA_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kubeobj.h"
#include "labelsel.h"

#define PODMETA_LABELS_MAX 64
#define PODMETA_CONTAINERS_MAX 32
#define PODMETA_TEXT_MAX 8192 /* its labels' and containers' bytes, NULs included */

struct podmeta {
	char uid[37];   /* 8-4-4-4-12, lowercase hex; a mirror pod's: its static pod's, as its cgroup names it
			 * (annotation kubernetes.io/config.mirror: 32 hex, or 8-4-4-4-12) */
	char ns[64];    /* a DNS label */
	char name[254]; /* a DNS subdomain */
	char rv[KUBE_RV_MAX + 1];
	int labels_over;      /* more labels (or bytes) than kept: none were */
	int containers_over;  /* more containers than kept: the first were */
	size_t nlabels, ncontainers, used;
	struct {
		uint16_t key, value; /* offsets into text */
	} labels[PODMETA_LABELS_MAX];
	uint16_t containers[PODMETA_CONTAINERS_MAX]; /* offsets into text: spec's containers, init, then ephemeral ones */
	size_t nstatuses;     /* containers the kubelet runs (status), whose ID is known */
	struct {
		uint16_t name, id; /* offsets into text; id: the runtime's, lowercase hex (its "containerd://" cut) */
	} statuses[PODMETA_CONTAINERS_MAX];
	char text[PODMETA_TEXT_MAX];
};

/* pod, a Pod object: 0 and m filled, or -EINVAL and why in err (the field
 * at fault, its value escaped). */
int podmeta_parse(const json_t *pod, struct podmeta *m, char *err, size_t errlen);

/* A copy of m in as few bytes as its text needs (malloc'd: never copied
 * whole, as a struct), or NULL. */
struct podmeta *podmeta_dup(const struct podmeta *m);

/* The name of m's container whose ID (lowercase hex, as a cgroup names
 * it) is id, as the pod's status gives it; NULL: not known. */
const char *podmeta_container(const struct podmeta *m, const char *id);

/* m's labels as labelsel_match takes them (at most PODMETA_LABELS_MAX in
 * out): their count. */
size_t podmeta_labels(const struct podmeta *m, struct label *out);

/* 1 when m's labels satisfy sel (a selector labelsel_check accepted);
 * for a pod whose labels were not kept (labels_over), only the empty
 * selector: not even `x!=y` or `!x`, which hold for a pod without labels. */
int podmeta_match(const struct podmeta *m, const char *sel);

/* Pods, as a list or a watch gives them (kubeobj.h): a struct podmeta
 * each; a refused line's pod is told by its UID (a mirror pod's: its
 * static pod's). */
extern const struct kube_kind podmeta_kind;

#endif
