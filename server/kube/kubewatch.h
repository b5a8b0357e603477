/* SPDX-License-Identifier: Apache-2.0 */
/* kubewatch.h - the objects of one kind (kubeobj.h: the node's pods) as
 * the Kubernetes API server sees them, listed and watched on a thread of
 * its own, as a client of the API must (client-go's reflector and pager),
 * from the collection cfg.path names (for pods, those of the node that
 * may run: kubepods.h):
 *   LIST   from the watch cache, one answer (resourceVersion=0 at first,
 *          then resourceVersionMatch=NotOlderThan the latest version
 *          seen); after a 410, or when that answer was over page_bytes_max,
 *          a consistent read, limit=100 a page, page by page (continue;
 *          a page may be sparse, even empty), every page read: the
 *          objects all at once, a KUBE_BATCH_LIST, those past max counted
 *          (a page over page_bytes_max is refused unparsed and asks for a
 *          quarter as many from then on: jansson's tree of a page is
 *          many times its text);
 *   WATCH  from the list's resourceVersion (allowWatchBookmarks,
 *          timeoutSeconds), each change a KUBE_BATCH_EVENTS item; when it
 *          ends, however (its term, the server's end, a cut), at once
 *          (a second after it began at the soonest)
 *          again from the last resourceVersion seen (an event's or a
 *          bookmark's); an event over event_bytes_max is refused unparsed
 *          and ends the watch (a failure, below); a 410 Gone (the version
 *          is compacted away), an event whose object the kind refuses
 *          (what it said must not be lost; one whose object can be told
 *          is that object's DELETED), or a kept object deleted while
 *          some were dropped (room; at most every 10 s), lists again;
 *   a failure (no connection, an HTTP error, a body that does not parse,
 *          a watch that ends within a second with nothing in it) waits,
 *          with a backoff that doubles from 1 s to 30 s, each wait drawn
 *          from [backoff/2, backoff] (jitter: nodes restarted together do
 *          not knock together), or as long as a 429 or 503's Retry-After
 *          says, and resumes: a watch from its resourceVersion, else a
 *          list. The backoff ends when a watch runs again; synced is 0
 *          from a failure until a list or a watch works.
 * Nothing here waits on the loop: the batches queue here, and the loop
 * takes them when wake_fd (its eventfd) says so. The queue is bounded
 * (1,024 changes, and 64 MiB of the kind's cost: ProcessConfigs'
 * payloads; one batch past them alone; a batch of events goes at 16 MiB):
 * when the loop lags that far,
 * this thread stops reading (TCP pushes back on the API server) until it
 * catches up. The API server is a peer like
 * any: its objects are checked (the kind's parse), its lines and bodies bounded,
 * its errors escaped in the log. The bearer token is read again for each
 * request (a projected token is rotated in place). */
#ifndef PROCCTL_NODE_KUBEWATCH_H
#define PROCCTL_NODE_KUBEWATCH_H

#include <stddef.h>
#include <stdint.h>

#include "kubeobj.h"
#include "kubeurl.h"

#define KUBEWATCH_PAGE_BYTES (4u << 20)  /* page_bytes_max's default: 100 pods of 40 KiB */
#define KUBEWATCH_PATH_MAX 1024
#define KUBEWATCH_EVENT_BYTES (2u << 20) /* event_bytes_max's: a Pod of etcd's 1.5 MiB, and its event */

struct kubewatch_cfg {
	const struct kube_kind *kind;  /* of what */
	char url[KUBEWATCH_URL_MAX];   /* https://HOST[:PORT] or http://HOST[:PORT] (kubectl proxy) */
	char path[KUBEWATCH_PATH_MAX]; /* the collection, after url, with its query if any, URL-escaped:
					* "/api/v1/pods?fieldSelector=..." */
	char token_file[256];          /* a bearer token ("": none) */
	char ca_file[256];             /* the CA of the API server's certificate ("": the system's) */
	uint32_t watch_s;              /* a watch lasts [watch_s, 2 watch_s) (timeoutSeconds) */
	uint32_t max;                  /* a list keeps at most this many (a kind with group: this many whole,
					* and this many slimmed); the others are counted */
	uint32_t group_max;            /* a kind with group: a list keeps this many of a group whole, */
	size_t cost_max;               /* ... and this cost in all; the others slimmed (kube_budget) */
	const char *group_key, *cost_key; /* what names them (static strings) */
	uint32_t page_bytes_max;       /* one page of a list (100 objects; fewer after one over it) */
	uint32_t event_bytes_max;      /* one watch event: an object (etcd keeps them of 1.5 MiB at most) */
	int wake_fd;                   /* an eventfd: written when a batch is queued */
};

enum kube_batch_kind {
	KUBE_BATCH_LIST,   /* the objects, all of them: what was known before goes */
	KUBE_BATCH_EVENTS, /* changes, in order */
};

struct kube_change {
	enum kube_event_type type; /* KUBE_ADDED (a list's are), KUBE_MODIFIED or KUBE_DELETED */
	void *obj;                 /* the kind's dup: the batch's */
};

struct kube_batch {
	enum kube_batch_kind kind;
	size_t n, cap;
	uint64_t dropped; /* LIST: objects past max, not in it */
	size_t cost;      /* its objects' (the kind's cost: a ProcessConfig's payload bytes) */
	struct kube_batch *next;
	struct kube_change v[];
};

/* What the thread did, for /metrics. */
struct kubewatch_stats {
	uint64_t lists;     /* lists done (every page read) */
	uint64_t events;    /* watch events of objects taken */
	uint64_t gone;      /* 410 Gone: a resourceVersion too old, listed again */
	uint64_t errors;    /* requests that failed (no connection, HTTP error, bad body) */
	uint64_t rejected;  /* objects the kind refused (skipped) */
	int synced;         /* a list was done, and no request failed since the last that worked */
};

struct kubewatch;

/* Check cfg, and start the thread: NULL and why in err (a URL that is not
 * http(s)://HOST[:PORT], out of memory or threads). */
struct kubewatch *kubewatch_start(const struct kubewatch_cfg *cfg, char *err, size_t errlen);
/* The batches queued, oldest first (each the caller's: kube_batch_free):
 * the loop's. */
struct kube_batch *kubewatch_take(struct kubewatch *kw);
/* b and its objects (NULL: nothing). */
void kube_batch_free(struct kube_batch *b);
void kubewatch_stats(struct kubewatch *kw, struct kubewatch_stats *st);
/* Stop the thread (a request in flight is cut within about a second),
 * and free kw with what is queued. NULL: nothing. */
void kubewatch_stop(struct kubewatch *kw);


#endif
