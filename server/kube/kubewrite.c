/* SPDX-License-Identifier: Apache-2.0 */
/* kubewrite.c - writes to the Kubernetes API server (kubewrite.h). */
#define _GNU_SOURCE 1
#include "kubewrite.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "kubehttp.h"
#include "sys/log.h"

#define ANSWER_MAX 4096 /* an answer's body, kept for its message */
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 30000
#define RETRY_AFTER_MAX_S 300
#define REQUEST_S 30
#define MS 1000000ll

struct req {
	struct req *next;
	char key[KUBEWRITE_KEY_MAX + 1];
	char method[16], ctype[64];
	char path[KUBEWRITE_PATH_MAX];
	char *body;     /* NULL: none waits (the key was sent at sent_ns) */
	size_t len;
	int64_t due_ns; /* not sent before */
	int64_t sent_ns;
	uint32_t backoff_ms;
	int sending;    /* the thread sends it now: not to be pruned */
};

struct kubewrite {
	struct kubewrite_cfg cfg;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* stop, or a request put */
	int stop;          /* under mu */
	struct req *reqs;  /* under mu: every key held */
	size_t n;
	struct kubewrite_stats st; /* under mu */

	/* The thread's own. */
	CURL *h;
	char answer[ANSWER_MAX + 1];
	size_t alen;
	char curl_err[CURL_ERROR_SIZE];
};

static int64_t now(void)
{
	return procctl_now_ns();
}

/* Keys sent over min_ms ago, with nothing waiting, go (under mu). */
static void prune(struct kubewrite *kw, int64_t t)
{
	struct req **pp = &kw->reqs, *r;
	while ((r = *pp))
		if (!r->body && !r->sending && t - r->sent_ns >= (int64_t)kw->cfg.min_ms * MS) {
			*pp = r->next;
			free(r);
			kw->n--;
		} else {
			pp = &r->next;
		}
}

int kubewrite_put(struct kubewrite *kw, const char *key, const char *method, const char *path, const char *ctype,
		  const char *body, size_t len)
{
	struct req *r;
	char *b;
	int64_t t = now();
	if (strlen(key) > KUBEWRITE_KEY_MAX || strlen(method) >= sizeof r->method || strlen(path) >= sizeof r->path ||
	    strlen(ctype) >= sizeof r->ctype)
		return -EINVAL;
	if (!(b = malloc(len + 1)))
		return -ENOMEM;
	memcpy(b, body, len);
	b[len] = 0;
	pthread_mutex_lock(&kw->mu);
	prune(kw, t);
	for (r = kw->reqs; r && strcmp(r->key, key); r = r->next)
		;
	if (!r && (kw->n >= kw->cfg.max || !(r = calloc(1, sizeof *r)))) {
		kw->st.refused += kw->n >= kw->cfg.max;
		pthread_mutex_unlock(&kw->mu);
		free(b);
		return kw->n >= kw->cfg.max ? -ENOSPC : -ENOMEM;
	}
	if (!r->key[0]) { /* new */
		memcpy(r->key, key, strlen(key) + 1);
		r->next = kw->reqs;
		kw->reqs = r;
		kw->n++;
		r->due_ns = t;
	} else if (!r->body) { /* sent a while ago: paced */
		r->due_ns = r->sent_ns + (int64_t)kw->cfg.min_ms * MS;
		r->backoff_ms = 0;
	}
	free(r->body);
	r->body = b;
	r->len = len;
	snprintf(r->method, sizeof r->method, "%s", method);
	snprintf(r->path, sizeof r->path, "%s", path);
	snprintf(r->ctype, sizeof r->ctype, "%s", ctype);
	pthread_cond_signal(&kw->cv);
	pthread_mutex_unlock(&kw->mu);
	return 0;
}

void kubewrite_stats(struct kubewrite *kw, struct kubewrite_stats *st)
{
	pthread_mutex_lock(&kw->mu);
	*st = kw->st;
	pthread_mutex_unlock(&kw->mu);
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct kubewrite *kw = arg;
	size_t n = size * nmemb, k = n < ANSWER_MAX - kw->alen ? n : ANSWER_MAX - kw->alen;
	memcpy(kw->answer + kw->alen, p, k);
	kw->alen += k;
	kw->answer[kw->alen] = 0;
	return n;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct kubewrite *kw = arg;
	int stop;
	(void)dt, (void)dn, (void)ut, (void)un;
	pthread_mutex_lock(&kw->mu);
	stop = kw->stop;
	pthread_mutex_unlock(&kw->mu);
	return stop;
}

void kubewrite_why(const char *body, size_t len, long code, char *why, size_t whylen)
{
	json_t *st = json_loadb(body, len, 0, NULL);
	const char *msg = json_string_value(json_object_get(st, "message"));
	int n = snprintf(why, whylen, "HTTP %ld: ", code);
	if (n > 0 && (size_t)n < whylen)
		snprintf(why + n, whylen - (size_t)n, "%s", msg ? msg : body);
	json_decref(st);
}

/* Send what r says (a copy, made under mu): the HTTP status (0: no
 * answer), and a Retry-After's seconds in *retry_s. */
static long send_one(struct kubewrite *kw, const struct req *r, uint32_t *retry_s, char *why, size_t whylen)
{
	char url[KUBEWATCH_URL_MAX + KUBEWRITE_PATH_MAX], ct[96];
	const char *more[] = {"Accept: application/json", ct, NULL};
	struct curl_slist *hdr;
	curl_off_t ra = 0;
	long code = 0;
	CURLcode rc;
	*retry_s = 0;
	snprintf(ct, sizeof ct, "Content-Type: %s", r->ctype);
	snprintf(url, sizeof url, "%s%s", kw->cfg.url, r->path);
	if (kubehttp_headers(kw->cfg.token_file, more, &hdr, why, whylen) < 0)
		return 0;
	kw->alen = 0;
	kw->answer[0] = kw->curl_err[0] = 0;
	curl_easy_setopt(kw->h, CURLOPT_URL, url);
	curl_easy_setopt(kw->h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(kw->h, CURLOPT_CUSTOMREQUEST, r->method);
	curl_easy_setopt(kw->h, CURLOPT_POSTFIELDS, r->body);
	curl_easy_setopt(kw->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
	rc = curl_easy_perform(kw->h);
	curl_easy_setopt(kw->h, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdr);
	if (rc != CURLE_OK) {
		snprintf(why, whylen, "%s", kw->curl_err[0] ? kw->curl_err : curl_easy_strerror(rc));
		return 0;
	}
	curl_easy_getinfo(kw->h, CURLINFO_RESPONSE_CODE, &code);
	if ((code == 429 || code == 503) && curl_easy_getinfo(kw->h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
		*retry_s = ra > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : (uint32_t)ra;
	kubewrite_why(kw->answer, kw->alen, code, why, whylen);
	return code;
}

/* The request due first (under mu), or NULL; *wake_ns when the next is. */
static struct req *next_due(struct kubewrite *kw, int64_t t, int64_t *wake_ns)
{
	struct req *r, *best = NULL;
	for (r = kw->reqs; r; r = r->next)
		if (r->body && (!best || r->due_ns < best->due_ns))
			best = r;
	*wake_ns = best ? best->due_ns : t + 1000 * MS;
	return best && best->due_ns <= t ? best : NULL;
}

static void wait_until(struct kubewrite *kw, int64_t wake_ns)
{
	struct timespec ts;
	int64_t d = wake_ns - now();
	if (d <= 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += d / 1000000000;
	ts.tv_nsec += d % 1000000000;
	if (ts.tv_nsec >= 1000000000)
		ts.tv_sec++, ts.tv_nsec -= 1000000000;
	pthread_cond_timedwait(&kw->cv, &kw->mu, &ts);
}

/* r (under mu) was sent as copy says, and answered code. */
static void answered(struct kubewrite *kw, struct req *r, const struct req *copy, long code, uint32_t retry_s,
		     const char *why)
{
	char q[600];
	int again = !code || code == 429 || code >= 500;
	r->sending = 0;
	if (code >= 200 && code < 300)
		kw->st.sent++;
	else if (again)
		kw->st.retried++;
	else
		kw->st.failed++;
	if (!(code >= 200 && code < 300))
		node_log_limited(again ? PROCCTL_LOG_INFO : PROCCTL_LOG_WARN, "kube_write_failed",
				 "key=%s method=%s action=%s error=\"%s\"", copy->key, copy->method, again ? "retry" : "dropped",
				 node_log_quote(q, sizeof q, why));
	r->sent_ns = now();
	if (r->body) /* a later one came meanwhile: it goes, paced */
		r->due_ns = r->sent_ns + (int64_t)kw->cfg.min_ms * MS;
	else if (again) { /* this one again */
		r->backoff_ms = r->backoff_ms ? (r->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : r->backoff_ms * 2)
					      : BACKOFF_MIN_MS;
		r->body = copy->body;
		r->len = copy->len;
		r->due_ns = r->sent_ns + (retry_s ? (int64_t)retry_s * 1000 : r->backoff_ms) * MS;
		return;
	}
	free(copy->body);
}

static void *run(void *arg)
{
	struct kubewrite *kw = arg;
	struct req *r, copy;
	int64_t wake;
	char why[600];
	pthread_setname_np(pthread_self(), "procctl-kubewr");
	pthread_mutex_lock(&kw->mu);
	while (!kw->stop) {
		uint32_t retry_s;
		long code;
		if (!(r = next_due(kw, now(), &wake))) {
			wait_until(kw, wake);
			continue;
		}
		copy = *r; /* the body is the copy's now */
		r->body = NULL;
		r->sending = 1;
		pthread_mutex_unlock(&kw->mu);
		code = send_one(kw, &copy, &retry_s, why, sizeof why);
		pthread_mutex_lock(&kw->mu);
		answered(kw, r, &copy, code, retry_s, why);
	}
	pthread_mutex_unlock(&kw->mu);
	return NULL;
}

struct kubewrite *kubewrite_start(const struct kubewrite_cfg *cfg, char *err, size_t errlen)
{
	struct kubewrite *kw = NULL;
	pthread_condattr_t ca;
	int r;
	if (kubewatch_url_check(cfg->url, err, errlen) < 0)
		return NULL;
	if (kubehttp_init() < 0 || !(kw = calloc(1, sizeof *kw)) || !(kw->h = curl_easy_init())) {
		if (kw)
			free(kw);
		snprintf(err, errlen, "kubernetes_api: setting up libcurl failed, or out of memory");
		return NULL;
	}
	kw->cfg = *cfg;
	kubehttp_setup(kw->h, kw->cfg.ca_file, kw->curl_err);
	curl_easy_setopt(kw->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(kw->h, CURLOPT_WRITEDATA, kw);
	curl_easy_setopt(kw->h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(kw->h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(kw->h, CURLOPT_XFERINFODATA, kw);
	curl_easy_setopt(kw->h, CURLOPT_TIMEOUT, (long)REQUEST_S);
	pthread_mutex_init(&kw->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&kw->cv, &ca);
	pthread_condattr_destroy(&ca);
	if ((r = pthread_create(&kw->th, NULL, run, kw))) {
		snprintf(err, errlen, "kubernetes_api: the writer's thread: %s", strerror(r));
		curl_easy_cleanup(kw->h);
		pthread_cond_destroy(&kw->cv);
		pthread_mutex_destroy(&kw->mu);
		free(kw);
		return NULL;
	}
	return kw;
}

void kubewrite_stop(struct kubewrite *kw)
{
	struct req *r, *next;
	if (!kw)
		return;
	pthread_mutex_lock(&kw->mu);
	kw->stop = 1;
	pthread_cond_broadcast(&kw->cv);
	pthread_mutex_unlock(&kw->mu);
	pthread_join(kw->th, NULL);
	for (r = kw->reqs; r; r = next) {
		next = r->next;
		free(r->body);
		free(r);
	}
	curl_easy_cleanup(kw->h);
	pthread_cond_destroy(&kw->cv);
	pthread_mutex_destroy(&kw->mu);
	free(kw);
}
