/* SPDX-License-Identifier: Apache-2.0 */
/* pconfig.h - a ProcessConfig (procctl.io/v1alpha1, the CRD of
 * deploy/helm/procctl-node/files/processconfig-crd.yaml) as the
 * Kubernetes API server gives it, kept as procctl-node applies it: which
 * object it is (UID, namespace, name, resourceVersion, generation,
 * creationTimestamp), and its spec: the pods' label selector (in kubectl
 * -l's syntax, canonical), the container's name, the consumer, the schema
 * version and the payload's bytes (payload.data decoded, or payload.json
 * written compact). The API server is a peer like any, and the CRD's
 * schema may be older or newer than this daemon: an object that cannot
 * be told (its metadata) is refused; one whose spec is wrong is kept
 * without a payload, with why (the node reports it on the object). */
#ifndef PROCCTL_NODE_PCONFIG_H
#define PROCCTL_NODE_PCONFIG_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kubeobj.h"
#include "labelsel.h"
#include "procctl.h"

#define PCONFIG_WHY_MAX 256
#define PCONFIG_REASON_MAX 32
#define PCONFIG_MESSAGE_MAX 256

/* One node's entry in status.nodes: what it did with the object. */
struct pconfig_entry {
	int64_t generation; /* observedGeneration */
	uint32_t matched, applied, pending, failed;
	char reason[PCONFIG_REASON_MAX];   /* CamelCase, as a condition's */
	char message[PCONFIG_MESSAGE_MAX]; /* printable */
};

struct pconfig {
	char uid[37];                    /* 8-4-4-4-12, lowercase hex */
	char ns[64];                     /* a DNS label */
	char name[254];                  /* a DNS subdomain */
	char rv[KUBE_RV_MAX + 1];
	int64_t generation;              /* metadata.generation: the spec's changes (0: not said) */
	int64_t created;                 /* metadata.creationTimestamp, seconds since the epoch */
	char labels[LABELSEL_MAX + 1];   /* spec.selector as labelsel_check gives it ("": every pod) */
	char container[64];              /* spec.container ("": every container) */
	char consumer[PROCCTL_CONSUMER_MAX + 1];
	uint32_t version;                /* spec.schemaVersion */
	char why[PCONFIG_WHY_MAX];       /* "": the spec holds; else why not (no payload kept), printable */
	int has_mine;                    /* status.nodes has this node's entry (the kind's ctx: its name) */
	struct pconfig_entry mine;       /* ... as it is there (one that does not parse: zero, reason "") */
	size_t len;                      /* the payload's bytes (1 .. PROCCTL_PAYLOAD_MAX; 0 with why) */
	uint8_t payload[PROCCTL_PAYLOAD_MAX];
};

/* obj, a ProcessConfig: 0 and p filled (p->why says when its spec is not
 * one to apply; node's entry of its status, in p->mine: NULL none); or
 * -EINVAL and why in err: its metadata is not one's. */
int pconfig_parse(const json_t *obj, const char *node, struct pconfig *p, char *err, size_t errlen);

/* A copy of p in as few bytes as its payload needs (malloc'd: never
 * copied whole, as a struct), or NULL. */
struct pconfig *pconfig_dup(const struct pconfig *p);

/* The bytes pconfig_dup gives p: what keeping it costs. */
size_t pconfig_size(const struct pconfig *p);

/* ProcessConfigs, as a list or a watch gives them (kubeobj.h): a struct
 * pconfig each; a refused line's object is told by its UID. Its ctx: the
 * node's name (a const char *), whose status entry is read; NULL none. */
extern const struct kube_kind pconfig_kind;

#endif
