/* SPDX-License-Identifier: Apache-2.0 */
/* desired.h - desired configs: the config a selector's processes should
 * have, stated once by a controller. A process that matches several gets
 * the most specific: pid over container over pod over a label selector
 * over a namespace over consumer (a selector's most specific field sets
 * its precedence). Two configs of the same precedence that could match one
 * process are refused, but for label selectors, which cannot be told
 * apart before a pod has labels: of those, the one with a namespace wins,
 * then the one with more requirements, then the one set first (its
 * selector's first set: a new payload for it keeps its place). The set is kept in <state_dir>/desired.store, replaced
 * atomically on every change, so a successor daemon keeps it. Pure: no
 * gRPC, no registry.
 *
 * A pid config is bound to its process (the pid and its start time) and
 * the image it runs (procstat.h): it matches that process only, while it
 * runs that image, and goes when the process exits or execs.
 *
 * desired.store, format 5 (little-endian; the daemon's own, not an API
 * message, so the API can change without changing it):
 *   "PCDSTORE"  u32 format (5)  u32 count  u64 revision (the store's counter)
 *   count configs, each:
 *     u64 revision  u64 created  s32 pid  u64 pid_start  u64 pid_image  u32 schema_version  u32 payload_len
 *     u8 consumer_len  u8 pod_uid_len  u8 container_id_len  u8 source_len
 *     u8 namespace_len  u16 label_selector_len
 *     consumer  pod_uid  container_id  source  namespace  label_selector   (no NULs)
 *     payload
 *   u32 CRC32C (procctl_crc32c) of every byte before it.
 * Format 4 had no created (its configs' is their revision); format 3 no
 * namespace and label selector either.
 * Format 2 had no pid_image: its pid configs are bound, at the daemon's
 * start, to the image their process runs then. Format 1 had no pid_start:
 * its pid configs, bound to no process, are dropped when it is read
 * (s->unbound_dropped), as are format 0's.
 * Format 0 was <state_dir>/desired.pb, a serialized
 * procctl.v1.ListDesiredConfigsResponse: when there is no desired.store,
 * it is read once, saved in the current format and renamed desired.pb.converted. */
#ifndef PROCCTL_NODE_DESIRED_H
#define PROCCTL_NODE_DESIRED_H

#include <stddef.h>
#include <stdint.h>

#include "match/selector.h"

#define DESIRED_PATH_MAX 300

enum desired_level { DESIRED_CONSUMER, DESIRED_NAMESPACE, DESIRED_LABELS, DESIRED_POD, DESIRED_CONTAINER, DESIRED_PID };

/* The ProcessConfig object (of the Kubernetes API) a config is of. */
struct desired_kube {
	char uid[37];
	char ns[64];
	char name[254];
	int64_t created;    /* its creationTimestamp (seconds): the order of ties, alike on every node */
	int64_t generation; /* its spec's, as the API server counts them */
};

struct desired {
	struct selector sel; /* consumer and version always set */
	struct podsel pod;   /* its pod's namespace, labels and container name (empty: any) */
	enum desired_level level;
	uint64_t revision;
	uint64_t created;  /* the revision it was first set at (a replace keeps it): the order of ties */
	char source[32]; /* the config file's [desired NAME] section; "": the API's */
	struct desired_kube *kube; /* a ProcessConfig's (in kv), else NULL */
	size_t len;
	uint8_t *payload;
};

struct nodelock;

struct desired_store {
	struct desired *v;
	size_t n, cap;
	struct desired *kv; /* ProcessConfigs' configs (desired_kube_set): in memory only */
	size_t kn, kcap;
	uint64_t revision; /* the last assigned; kept in the file, so it only grows */
	uint64_t changes;  /* counts the changes of v (sets, deletes, loads): what is cached on it is stale */
	size_t max_n, max_bytes; /* limits on sets (desired_limits); 0: none */
	char path[DESIRED_PATH_MAX]; /* "" : not kept (no state_dir) */
	/* Writes the whole store to where it is kept: desired_file.c's, set by
	 * desired_load with a path (NULL: kept nowhere). 0, or -errno and err. */
	int (*save)(const struct desired_store *s, char *err, size_t errlen);
	int dirfd;         /* with path: the state directory (procctl_trusted_dir) */
	const struct nodelock *fence; /* written only while this is current (NULL: always) */
	int converted;     /* desired_load converted a desired.pb (format 0) */
	size_t unbound_dropped; /* pid configs of an older store, bound to no process: dropped at load */
	char set_aside[DESIRED_PATH_MAX + 32]; /* desired_load set a damaged file aside here; "": none */
	char set_aside_why[400];
};

/* Load the store kept under dir (dir NULL or "": none kept), making dir
 * (0700) when missing; dir must be one the daemon can trust (its own,
 * writable by nobody else, and nobody else's above it: -EPERM else), and
 * its files are never opened through a symlink. A format-0 file is
 * converted (s->converted). A missing
 * file is an empty store; so is one that does not parse or is too large:
 * it is renamed FILE.bad-SECONDS (s->set_aside, and s->set_aside_why),
 * never deleted, and the daemon serves. 0, or -errno with what is wrong
 * in err (-ENAMETOOLONG: dir is too long; -EIO: a file could not be read,
 * set aside, or converted). */
int desired_load(struct desired_store *s, const char *dir, char *err, size_t errlen);
/* Parse a store file's bytes (format 1) into an empty store: 0 or
 * -EINVAL (err says why; the store left empty). The bytes are the
 * daemon's own, but are checked like a request's. */
int desired_parse(struct desired_store *s, const uint8_t *buf, size_t len, char *err, size_t errlen);
/* The same for format 0 (a serialized ListDesiredConfigsResponse). */
int desired_parse_v0(struct desired_store *s, const uint8_t *buf, size_t len, char *err, size_t errlen);
/* The store in format 1: 0 and *out (malloc'd) of *len bytes, or -ENOMEM. */
int desired_encode(const struct desired_store *s, uint8_t **out, size_t *len);
/* Free the configs and close the directory. */
void desired_free(struct desired_store *s);

/* Check a selector for a desired config: 0, or -EINVAL and why. */
int desired_check(const struct selector *sel, const char **why);

/* Set sel's config (replacing sel's own) with the next revision, from
 * source (a config file section's name, or NULL: the API): 0 and
 * *out the stored entry; -EINVAL (why) a bad selector or payload; -EEXIST
 * *other is a config of the same precedence that overlaps; -ENOSPC over
 * desired_limits (err says which); -ENOMEM; -EIO not kept on disk (the
 * store is unchanged; err says which path, why). */
int desired_set(struct desired_store *s, const struct selector *sel, const struct podsel *pod, const void *payload,
		size_t len, const char *source, const struct desired **out, const struct desired **other, const char **why,
		char *err, size_t errlen);
/* Limit what desired_set adds: at most max_n configs and max_bytes of
 * payload in all (0: no limit). A store loaded over them is kept; only
 * growth is refused. */
void desired_limits(struct desired_store *s, size_t max_n, size_t max_bytes);
/* The payload bytes of every config. */
size_t desired_bytes(const struct desired_store *s);
/* Forget sel's (and pod's) config: 0; -ENOENT none; -EIO as above. */
int desired_delete(struct desired_store *s, const struct selector *sel, const struct podsel *pod, char *err,
		   size_t errlen);
/* The process (pid, start: its start time; 0 any) is gone: forget every
 * pid config bound to it. How many went, or -EIO (gone from memory; the
 * file keeps them until the next save, and a start drops them again). */
int desired_forget_process(struct desired_store *s, pid_t pid, uint64_t start, char *err, size_t errlen);
/* Bind config i, a pid's bound to no image (a format-2 store's), to image
 * (its process's now), and save: 0, -EINVAL, or save's error (unbound
 * still). */
int desired_bind_image(struct desired_store *s, size_t i, uint64_t image, char *err, size_t errlen);

/* 1 when configs for (a, pa) and (b, pb) could not both be set: the same
 * precedence, other than a label selector's, and one process could match
 * both (the same selector included). */
int desired_conflict(const struct selector *a, const struct podsel *pa, const struct selector *b,
		     const struct podsel *pb);

/* 1 when a config selects by a pod's namespace or labels. */
int desired_by_pod(const struct desired_store *s);

/* The config of that very selector, or NULL. */
const struct desired *desired_find(const struct desired_store *s, const struct selector *sel, const struct podsel *pod);

/* ProcessConfigs (the Kubernetes API's objects, kubernetes_processconfigs)
 * are configs of their own: kept in memory only (the API server keeps
 * them), never in desired.store, in kv, apart from the API's and the
 * config file's, which no call above changes or finds. Each is a label
 * selector's config in its namespace, whatever its selector (an empty
 * one too); of those of one namespace that match a process, the one
 * with a container name, then more requirements, then the node's own
 * (the API's, the file's), then the older ProcessConfig (creationTimestamp,
 * then namespace and name: every node decides alike) wins.
 *
 * Set the config of ProcessConfig k (known by its UID) to sel (consumer
 * and version), pod (k's namespace, the labels and container) and the
 * payload: 0 and *out. A new payload or selector takes the next revision;
 * the same ones keep it (an object changed in its status, or its labels,
 * changes nothing). -EINVAL (why) a bad selector or payload; -ENOMEM. */
int desired_kube_set(struct desired_store *s, const struct desired_kube *k, const struct selector *sel,
		     const struct podsel *pod, const void *payload, size_t len, const struct desired **out,
		     const char **why);
/* Forget ProcessConfig uid's config: 0, or -ENOENT. */
int desired_kube_delete(struct desired_store *s, const char *uid);
const struct desired *desired_kube_find(const struct desired_store *s, const char *uid);

/* The config process k, of pod m (NULL: none, or not known), should
 * have, or NULL. */
const struct desired *desired_match(const struct desired_store *s, const struct selector *k, const struct podmeta *m);

/* 1 when d is the config for k (it matches and nothing more specific does). */
int desired_effective(const struct desired_store *s, const struct desired *d, const struct selector *k,
		      const struct podmeta *m);

#endif
