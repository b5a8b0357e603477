/* SPDX-License-Identifier: Apache-2.0 */
/* kubewrite.h - writes to the Kubernetes API server, on a thread of their
 * own (the loop never waits on the API): each a request (method, path,
 * content type, body) known by a key, for example one object's status.
 *   the latest wins: a request put while one of its key waits replaces
 *          it (a status applied twice is sent once, as it is now);
 *   paced:  a key is sent at most every min_ms (a status that changes
 *          every turn costs the API server one write in min_ms);
 *   retried: an answer of 429 or 5xx, or none, sends it again after a
 *          backoff that doubles from 1 s to 30 s (or as a Retry-After
 *          says), unless a later one of its key came;
 *   dropped: any other answer (404: the object is gone; 409, 422) ends
 *          it, counted, and logged at most once a second;
 *   bounded: at most max keys are held (waiting, or sent within
 *          min_ms); a request of another key is refused past that.
 * The bearer token is read again for each request (kubehttp.h). */
#ifndef PROCCTL_NODE_KUBEWRITE_H
#define PROCCTL_NODE_KUBEWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "kubeurl.h"

#define KUBEWRITE_KEY_MAX 400
#define KUBEWRITE_PATH_MAX 1024

struct kubewrite_cfg {
	char url[KUBEWATCH_URL_MAX]; /* https://HOST[:PORT] or http://HOST[:PORT], as kubewatch_cfg's */
	char token_file[256];
	char ca_file[256];
	uint32_t min_ms; /* a key's requests, at most one this often */
	uint32_t max;    /* keys held */
};

struct kubewrite_stats {
	uint64_t sent;    /* answered 2xx */
	uint64_t retried; /* answered 429 or 5xx, or not at all: sent again */
	uint64_t failed;  /* answered otherwise: dropped */
	uint64_t refused; /* put while max keys were held */
};

struct kubewrite;

/* Start the thread: NULL and why in err. */
struct kubewrite *kubewrite_start(const struct kubewrite_cfg *cfg, char *err, size_t errlen);
/* Queue method (PATCH, POST, ...) of path (after the URL, URL-escaped)
 * with body (len bytes of content type ctype; copied) as key's request:
 * 0, -ENOSPC (max keys held), -EINVAL (a key, method, path or type too
 * long), or -ENOMEM. */
int kubewrite_put(struct kubewrite *kw, const char *key, const char *method, const char *path, const char *ctype,
		  const char *body, size_t len);
void kubewrite_stats(struct kubewrite *kw, struct kubewrite_stats *st);
/* What the API server's answer of code says, for the log: "HTTP code: "
 * and its Status's message, else the body itself (to its first NUL), cut
 * to fit whylen (at least 1). body is len bytes of the server's, with a
 * NUL after them. */
void kubewrite_why(const char *body, size_t len, long code, char *why, size_t whylen);
/* Stop the thread (a request in flight is cut within about a second;
 * what waits is not sent), and free kw. NULL: nothing. */
void kubewrite_stop(struct kubewrite *kw);

#endif
