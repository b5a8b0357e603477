/* SPDX-License-Identifier: Apache-2.0 */
/* kubewatch.c - the objects of one kind, listed and watched (kubewatch.h). */
#define _GNU_SOURCE 1
#include "kubewatch.h"

#include <curl/curl.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "kubehttp.h"
#include "sys/log.h"

#define QUEUE_MAX 1024      /* changes queued for the loop (a list's objects count too) */
#define QUEUE_COST_MAX (64u << 20) /* ... and their cost (a kind's: a ProcessConfig's payload) */
#define BATCH_COST_MAX (QUEUE_COST_MAX / 4) /* a batch of events goes to the queue at this cost */
#define LIMIT 100           /* objects a page of a list, at first */
#define BATCH_MAX 64        /* changes in one batch of events */
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 30000
#define RETRY_AFTER_MAX_S 300 /* a Retry-After heeded up to this */
#define PAGES_MAX 10000     /* pages of one list (a selector's pages may be sparse, even empty) */
#define ROOM_RELIST_NS 10000000000ll /* a list for room (objects dropped, one deleted), at most this often */
#define LIST_S 60           /* one page of a list */
#define STATUS_MAX 4096     /* an error's body, kept for its message */
#define BUF_KEEP (1u << 20) /* kw->buf's room kept between requests */
#define TRIM_BYTES (1u << 20) /* after parsing this much at once, jansson's tree goes back to the system */
#define BRIEF_NS 1000000000ll
#define REJECT_RELIST_NS 60000000000ll /* a list for an unreadable event, at most this often */

enum mode { CACHE, PAGE, WATCH }; /* a list's one answer from the cache, a page of one, a watch */

struct kubewatch {
	struct kubewatch_cfg cfg;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;         /* stop, or room in the queue */
	int stop;                  /* atomic */
	struct kube_batch *head, **tail; /* under mu */
	size_t queued;             /* under mu: changes in the queue */
	size_t queued_cost;        /* under mu: and their cost */
	struct kubewatch_stats st; /* under mu */

	/* The thread's own. */
	CURL *h;
	enum mode mode;
	long code;                 /* the response's status (0: not known yet) */
	char *buf;                 /* a page, a watch's line so far, or an error's body */
	size_t len, cap;
	struct kube_batch *b;      /* being filled */
	int relist;                /* the watch must end in a list: 410 Gone (gone), or an event refused */
	int gone;
	int relist_again;          /* ... and so did the watch before it, right after its list */
	int consistent;            /* the next list is a consistent read (after a 410), not the cache's */
	int paged;                 /* lists are paged reads: the cache's one answer was over page_bytes_max */
	int whole;                 /* this list is one consistent answer: a continue token expired */
	unsigned limit;            /* objects a page: LIMIT, less after a page over page_bytes_max */
	uint64_t dropped;          /* the last list's objects past max */
	int room;                  /* a kept object was deleted while some were dropped: list again */
	int for_room;              /* the watch ended for that list */
	int64_t room_at;           /* the last list for room */
	int64_t t0;                /* the request's start */
	int up;                    /* the watch runs: an event or a bookmark came, or a second open */
	int failing;               /* the last request failed (kube_api_recovered is said at the next that works) */
	uint32_t backoff;          /* ms; 0: no request failed since a watch last ran */
	uint32_t retry_after_s;    /* the failed request's Retry-After (429, 503); 0: none */
	int64_t rejected_at;       /* the last list for an event refused whose object could not be told */
	char rv[KUBE_RV_MAX + 1];  /* where the next watch starts; "": list */
	char seen_rv[KUBE_RV_MAX + 1]; /* the latest version seen (a list's, an event's): a list is not older */
	int len_over;              /* the body was over its bound (page_bytes_max) */
	struct kube_event ev;      /* ev.obj: obj */
	void *obj;                 /* the kind's: the object an event or a list's item is parsed into */
	struct kube_page pg;
	char curl_err[CURL_ERROR_SIZE];
	char why[600];             /* why the last request failed */
};

static int stopping(struct kubewatch *kw)
{
	return __atomic_load_n(&kw->stop, __ATOMIC_ACQUIRE);
}

static uint32_t rnd(void)
{
	uint32_t v = 0;
	if (getrandom(&v, sizeof v, GRND_NONBLOCK) != sizeof v)
		v = (uint32_t)procctl_now_ns();
	return v;
}

void kube_batch_free(struct kube_batch *b)
{
	size_t i;
	if (!b)
		return;
	for (i = 0; i < b->n; i++)
		free(b->v[i].obj);
	free(b);
}

/* ---- the queue ------------------------------------------------------- */

/* Hand b to the loop, waiting while the queue is full (unless stopping:
 * then b goes). */
static void deliver(struct kubewatch *kw, struct kube_batch *b)
{
	uint64_t one = 1;
	pthread_mutex_lock(&kw->mu);
	while (!kw->stop && kw->queued && (kw->queued + b->n > QUEUE_MAX || kw->queued_cost + b->cost > QUEUE_COST_MAX))
		pthread_cond_wait(&kw->cv, &kw->mu);
	if (kw->stop) {
		pthread_mutex_unlock(&kw->mu);
		kube_batch_free(b);
		return;
	}
	b->next = NULL;
	*kw->tail = b;
	kw->tail = &b->next;
	kw->queued += b->n;
	kw->queued_cost += b->cost;
	if (b->kind == KUBE_BATCH_LIST)
		kw->st.lists++, kw->st.synced = 1;
	pthread_mutex_unlock(&kw->mu);
	if (write(kw->cfg.wake_fd, &one, sizeof one) < 0) {
		/* full: the loop is awake anyway */
	}
}

struct kube_batch *kubewatch_take(struct kubewatch *kw)
{
	struct kube_batch *b;
	pthread_mutex_lock(&kw->mu);
	b = kw->head;
	kw->head = NULL;
	kw->tail = &kw->head;
	kw->queued = kw->queued_cost = 0;
	pthread_cond_broadcast(&kw->cv);
	pthread_mutex_unlock(&kw->mu);
	return b;
}

void kubewatch_stats(struct kubewatch *kw, struct kubewatch_stats *st)
{
	pthread_mutex_lock(&kw->mu);
	*st = kw->st;
	pthread_mutex_unlock(&kw->mu);
}

static void count(struct kubewatch *kw, uint64_t *field, uint64_t by)
{
	pthread_mutex_lock(&kw->mu);
	*field += by;
	pthread_mutex_unlock(&kw->mu);
}

/* A request worked: the API answers again (kube_api_recovered, once),
 * and the objects are followed (synced, once listed). Only a watch that runs
 * ends the backoff: a server that lists but cannot be watched is not
 * listed again and again. */
static void working(struct kubewatch *kw, const char *what, int watch_runs)
{
	if (kw->failing)
		node_log(PROCCTL_LOG_INFO, "kube_api_recovered", "what=%s", what);
	kw->failing = 0;
	if (watch_runs)
		kw->backoff = 0;
	pthread_mutex_lock(&kw->mu);
	kw->st.synced = kw->st.lists > 0;
	pthread_mutex_unlock(&kw->mu);
}

/* A change (a list's item: KUBE_ADDED) into kw->b (a new batch of kind
 * when there is none); a full batch of events goes to the loop. -ENOMEM. */
static int add(struct kubewatch *kw, enum kube_batch_kind kind, enum kube_event_type type, const void *obj)
{
	struct kube_batch *b = kw->b;
	if (!b || b->n == b->cap) {
		size_t cap = b ? b->cap * 2 : kind == KUBE_BATCH_LIST ? 64 : BATCH_MAX;
		if (b && kind == KUBE_BATCH_EVENTS) {
			deliver(kw, b);
			kw->b = b = NULL;
			cap = BATCH_MAX;
		}
		if (!(b = realloc(b, sizeof *b + cap * sizeof b->v[0])))
			return -ENOMEM;
		if (!kw->b)
			*b = (struct kube_batch){.kind = kind};
		b->cap = cap;
		kw->b = b;
	}
	if (!(b->v[b->n].obj = kw->cfg.kind->dup(obj)))
		return -ENOMEM;
	b->cost += kw->cfg.kind->cost ? kw->cfg.kind->cost(obj) : 0;
	b->v[b->n++].type = type;
	if (kind == KUBE_BATCH_EVENTS && b->cost >= BATCH_COST_MAX) { /* not a whole batch of large ones held here */
		deliver(kw, b);
		kw->b = NULL;
	}
	return 0;
}

static void flush(struct kubewatch *kw)
{
	if (kw->b && kw->b->n)
		deliver(kw, kw->b);
	else
		free(kw->b);
	kw->b = NULL;
}

/* ---- one request ----------------------------------------------------- */

static int fail(struct kubewatch *kw, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct kubewatch *kw, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(kw->why, sizeof kw->why, fmt, ap);
	va_end(ap);
	return -EIO;
}

static int append(struct kubewatch *kw, const char *p, size_t n)
{
	if (kw->len + n + 1 > kw->cap) {
		size_t cap = kw->cap ? kw->cap : 4096;
		char *nb;
		while (cap < kw->len + n + 1)
			cap *= 2;
		if (!(nb = realloc(kw->buf, cap)))
			return -ENOMEM;
		kw->buf = nb;
		kw->cap = cap;
	}
	memcpy(kw->buf + kw->len, p, n);
	kw->len += n;
	kw->buf[kw->len] = 0;
	return 0;
}

/* One line of a watch. -1: the watch must end (kw->why, or kw->relist).
 * An event refused ends it in a list: what it said (an object deleted,
 * perhaps) is not lost. */
static int line(struct kubewatch *kw, const char *s, size_t n)
{
	char err[400], q[300];
	struct kube_event *ev = &kw->ev;
	int r;
	if (strspn(s, " \t\r") >= n)
		return 0;
	r = kube_event_parse(kw->cfg.kind, s, n, ev, err, sizeof err);
	if (n >= TRIM_BYTES)
		malloc_trim(0); /* the freed tree of a large event, not kept by this thread's arena */
	if (r < 0) {
		/* What a list would do: without it. An object that cannot be
		 * told: a list, at most once a minute. */
		int told = kw->cfg.kind->forget(s, n, kw->obj) == 0;
		int64_t now = procctl_now_ns();
		count(kw, &kw->st.rejected, 1);
		node_log_limited(PROCCTL_LOG_WARN, "kube_rejected", "what=watch_event reason=\"%s\" action=%s",
				 node_log_quote(q, sizeof q, err), told ? "forget" : "list");
		if (told)
			return add(kw, KUBE_BATCH_EVENTS, KUBE_DELETED, kw->obj) < 0 ? fail(kw, "out of memory"), -1 : 0;
		if (kw->rejected_at && now - kw->rejected_at < REJECT_RELIST_NS)
			return 0;
		kw->rejected_at = now;
		return kw->relist = 1, -1;
	}
	switch (ev->type) {
	case KUBE_ERROR:
		if (ev->code == 410)
			return kw->relist = kw->gone = 1, -1;
		fail(kw, "the watch ended with an error: code=%d reason=\"%s\"", ev->code, ev->reason);
		return -1;
	case KUBE_BOOKMARK:
		break;
	default:
		if (add(kw, KUBE_BATCH_EVENTS, ev->type, ev->obj) < 0) {
			fail(kw, "out of memory");
			return -1;
		}
		count(kw, &kw->st.events, 1);
		kw->room |= ev->type == KUBE_DELETED && kw->dropped;
	}
	memcpy(kw->rv, ev->rv, sizeof kw->rv);
	memcpy(kw->seen_rv, ev->rv, sizeof kw->seen_rv);
	if (!kw->up)
		kw->up = 1, working(kw, "watch", 1);
	if (kw->room && procctl_now_ns() - kw->room_at >= ROOM_RELIST_NS) /* those dropped: room for some now */
		return kw->room_at = procctl_now_ns(), kw->relist = kw->for_room = 1, -1;
	return 0;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct kubewatch *kw = arg;
	size_t n = size * nmemb, at = 0;
	if (!kw->code)
		curl_easy_getinfo(kw->h, CURLINFO_RESPONSE_CODE, &kw->code);
	if (kw->code != 200) /* a Status: what it says is kept for the log */
		return append(kw, p, kw->len + n > STATUS_MAX ? STATUS_MAX - kw->len : n) < 0 ? 0 : n;
	if (kw->mode == CACHE && kw->len + n > kw->cfg.page_bytes_max)
		return kw->len_over = 1, fail(kw, "over"), 0; /* list_page says why */
	if (kw->mode != WATCH) {
		if (kw->len + n > kw->cfg.page_bytes_max) {
			kw->limit = kw->limit > 4 ? kw->limit / 4 : 1; /* the next list asks for smaller pages */
			return fail(kw, "a page of the list over %u bytes (kubernetes_page_bytes_max; pages of %u %s from "
				    "now on)", kw->cfg.page_bytes_max, kw->limit, kw->cfg.kind->plural), 0;
		}
		return append(kw, p, n) < 0 ? fail(kw, "out of memory"), 0 : n;
	}
	while (at < n) {
		const char *nl = memchr(p + at, '\n', n - at);
		size_t take = nl ? (size_t)(nl - (p + at)) : n - at;
		if (kw->len + take > kw->cfg.event_bytes_max)
			return fail(kw, "a watch event over %u bytes (kubernetes_event_bytes_max)", kw->cfg.event_bytes_max), 0;
		if (append(kw, p + at, take) < 0)
			return fail(kw, "out of memory"), 0;
		at += take;
		if (nl) {
			at++;
			if (line(kw, kw->buf, kw->len) < 0)
				return 0;
			kw->len = 0;
		}
	}
	flush(kw);
	return n;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct kubewatch *kw = arg;
	long code = 0;
	(void)dt, (void)dn, (void)ut, (void)un;
	if (kw->mode == WATCH && !kw->up && !kw->relist && procctl_now_ns() - kw->t0 >= BRIEF_NS &&
	    curl_easy_getinfo(kw->h, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code == 200)
		kw->up = 1, working(kw, "watch", 1); /* open a second, quiet: it runs */
	return stopping(kw);
}

/* What an HTTP error says: its Status's message, else its body. */
static int http_error(struct kubewatch *kw)
{
	json_t *st = json_loadb(kw->buf ? kw->buf : "", kw->len, 0, NULL);
	const char *msg = json_string_value(json_object_get(st, "message"));
	char q[300];
	fail(kw, "HTTP %ld: \"%s\"", kw->code, node_log_quote(q, sizeof q, msg ? msg : kw->buf ? kw->buf : ""));
	json_decref(st);
	return -EIO;
}

/* GET url (the body goes to on_body, as mode says), for at most
 * timeout_s. 0 on a 200 read to its end; -ECANCELED stopping; -EIO
 * (kw->why) else, kw->code saying which HTTP status there was. */
static int get(struct kubewatch *kw, const char *url, enum mode mode, long timeout_s)
{
	static const char *const accept[] = {"Accept: application/json", NULL};
	struct curl_slist *hdr;
	CURLcode rc;

	kw->mode = mode;
	kw->code = 0;
	kw->len = 0;
	kw->relist = kw->gone = kw->up = kw->len_over = kw->for_room = 0;
	kw->retry_after_s = 0;
	kw->t0 = procctl_now_ns();
	kw->why[0] = kw->curl_err[0] = 0;
	if (kubehttp_headers(kw->cfg.token_file, accept, &hdr, kw->why, sizeof kw->why) < 0)
		return -EIO;
	curl_easy_setopt(kw->h, CURLOPT_URL, url);
	curl_easy_setopt(kw->h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(kw->h, CURLOPT_TIMEOUT, timeout_s);
	rc = curl_easy_perform(kw->h);
	curl_easy_setopt(kw->h, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdr);
	if (!kw->code)
		curl_easy_getinfo(kw->h, CURLINFO_RESPONSE_CODE, &kw->code);
	if (stopping(kw))
		return -ECANCELED;
	if (kw->relist)
		return -EIO;
	if (kw->why[0]) /* on_body's */
		return -EIO;
	if (kw->code && kw->code != 200) {
		curl_off_t ra = 0;
		if ((kw->code == 429 || kw->code == 503) && curl_easy_getinfo(kw->h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK &&
		    ra > 0)
			kw->retry_after_s = ra > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : (uint32_t)ra;
		return http_error(kw);
	}
	if (mode == WATCH && kw->code == 200) {
		/* However it ended (timeoutSeconds, the server's end, past it
		 * here, or cut mid-stream), a watch is made again at once, as
		 * client-go's reflector does: an end is no failure. */
		char q[300];
		if (rc != CURLE_OK && rc != CURLE_OPERATION_TIMEDOUT)
			node_log_limited(PROCCTL_LOG_INFO, "kube_watch_cut", "error=\"%s\" action=watch",
					 node_log_quote(q, sizeof q, kw->curl_err[0] ? kw->curl_err : curl_easy_strerror(rc)));
		return 0;
	}
	if (rc != CURLE_OK)
		return fail(kw, "%s", kw->curl_err[0] ? kw->curl_err : curl_easy_strerror(rc));
	return 0;
}

/* ---- list, watch ----------------------------------------------------- */

/* url (cap bytes): the collection (cfg.path), and then more (a query's
 * parameters). */
static int coll_url(struct kubewatch *kw, char *url, size_t cap, const char *more_fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int coll_url(struct kubewatch *kw, char *url, size_t cap, const char *more_fmt, ...)
{
	int n = snprintf(url, cap, "%s%s%c", kw->cfg.url, kw->cfg.path, strchr(kw->cfg.path, '?') ? '&' : '?'), m;
	va_list ap;
	va_start(ap, more_fmt);
	m = n < 0 || (size_t)n >= cap ? -1 : vsnprintf(url + n, cap - (size_t)n, more_fmt, ap);
	va_end(ap);
	if (m < 0 || (size_t)m >= cap - (size_t)n)
		return fail(kw, "a URL over %zu bytes", cap);
	return 0;
}

struct list_ctx {
	struct kubewatch *kw;
	uint64_t dropped;
	int nomem;
	size_t whole, slim; /* objects kept, and kept slimmed */
	struct kube_budget budget;
};

/* An object of the list: kept while fewer than max are (a kind with
 * groups: max whole and max slimmed, within the budget's bounds). */
static void list_item(void *arg, const void *obj)
{
	struct list_ctx *x = arg;
	enum kube_verdict v = kube_budget_take(&x->budget, (void *)obj); /* kw->obj: the list's scratch, ours to slim */
	size_t *n = v == KUBE_SLIM ? &x->slim : &x->whole;
	if (v == KUBE_DROP || *n >= x->kw->cfg.max) {
		x->dropped++;
		return;
	}
	if (add(x->kw, KUBE_BATCH_LIST, KUBE_ADDED, obj) < 0)
		x->nomem = 1;
	(*n)++;
}

/* The list's first request: the watch cache's one answer (version 0,
 * then not older than what was seen: client-go's reflector's, so that
 * nodes listing again together do not all read etcd); a consistent read,
 * paged, after a 410 or when the cache's answer was over page_bytes_max;
 * a consistent read at once (limit 0: none) after a continue token expired. */
static int list_url(struct kubewatch *kw, char *url, size_t cap, const char *cont)
{
	if (kw->whole)
		return coll_url(kw, url, cap, "limit=0");
	if (kw->consistent || kw->paged || cont)
		return coll_url(kw, url, cap, "limit=%u%s%s", kw->limit, cont ? "&continue=" : "", cont ? cont : "");
	if (!kw->seen_rv[0])
		return coll_url(kw, url, cap, "resourceVersion=0");
	char *rv = curl_easy_escape(kw->h, kw->seen_rv, 0);
	int r = rv ? coll_url(kw, url, cap, "resourceVersion=%s&resourceVersionMatch=NotOlderThan", rv)
		   : fail(kw, "out of memory");
	curl_free(rv);
	return r;
}

/* One page into x: 0, or -EIO (kw->why). */
static int list_page(struct kubewatch *kw, struct list_ctx *x, const char *cont)
{
	char url[KUBEWATCH_URL_MAX + KUBEWATCH_PATH_MAX + 200 + 3 * KUBE_CONTINUE_MAX], err[400], q[300];
	struct kube_page *pg = &kw->pg;
	int cache = !(kw->consistent || kw->paged || cont), r;
	if ((r = list_url(kw, url, sizeof url, cont)) < 0)
		return r;
	r = get(kw, url, cache || kw->whole ? CACHE : PAGE, LIST_S);
	if (r < 0 && kw->whole && kw->len_over)
		return fail(kw, "the list at once, after a continue token expired, over %u bytes (kubernetes_page_bytes_max)",
			    kw->cfg.page_bytes_max);
	if (r < 0 && cache && kw->len_over) {
		kw->paged = 1;
		return fail(kw, "the list from the API server's cache over %u bytes (kubernetes_page_bytes_max; paged lists "
			    "of %u %s from now on)", kw->cfg.page_bytes_max, kw->limit, kw->cfg.kind->plural);
	}
	if (!r && kube_list_parse(kw->cfg.kind, kw->obj, kw->buf ? kw->buf : "", kw->len, kw->cfg.event_bytes_max, pg,
				  list_item, x, err, sizeof err) < 0)
		r = fail(kw, "%s", err);
	if (kw->len >= TRIM_BYTES)
		malloc_trim(0); /* a large page's freed tree */
	if (!r && (x->nomem || x->budget.nomem))
		r = fail(kw, "out of memory");
	if (!r && pg->rejected) {
		count(kw, &kw->st.rejected, pg->rejected);
		node_log_limited(PROCCTL_LOG_WARN, "kube_rejected", "what=list_item count=%zu reason=\"%s\"", pg->rejected,
				 node_log_quote(q, sizeof q, pg->rejected_why));
	}
	return r;
}

/* A continue token expired (410: the list's version was compacted away
 * while it was paged): the pages read go, and the list is read again at
 * once, a consistent read, as client-go's pager falls back to (paging again
 * from the start never ends where every token expires). Bounded as the
 * cache's one answer is, by page_bytes_max. */
static int list_whole(struct kubewatch *kw, struct list_ctx *x)
{
	int r;
	node_log_limited(PROCCTL_LOG_INFO, "kube_continue_expired", "action=list_whole");
	kube_batch_free(kw->b);
	kw->b = NULL;
	x->dropped = 0;
	x->nomem = 0;
	x->whole = x->slim = 0;
	kube_budget_reset(&x->budget);
	kw->pg.cont[0] = 0;
	kw->whole = 1;
	r = list_page(kw, x, NULL);
	kw->whole = 0;
	return r;
}

/* The objects, every page read (those past max counted, not
 * kept), to the loop as one batch: 0, or -EIO (kw->why). */
static int list(struct kubewatch *kw)
{
	struct kube_page *pg = &kw->pg;
	struct list_ctx x = {.kw = kw,
			     .budget = {.k = kw->cfg.kind, .group_max = kw->cfg.group_max, .cost_max = kw->cfg.cost_max,
					.group_key = kw->cfg.group_key, .cost_key = kw->cfg.cost_key}};
	char *cont = NULL;
	size_t pages = 0;
	int r;

	pg->cont[0] = 0;
	do {
		if (++pages > PAGES_MAX)
			r = fail(kw, "a list of more than %d pages", PAGES_MAX);
		else if (pg->cont[0] && !(cont = curl_easy_escape(kw->h, pg->cont, 0)))
			r = fail(kw, "out of memory");
		else
			r = list_page(kw, &x, cont);
		if (r && cont && kw->code == 410)
			r = list_whole(kw, &x);
		curl_free(cont);
		cont = NULL;
	} while (!r && pg->cont[0]);
	kube_budget_free(&x.budget);
	if (r) {
		kube_batch_free(kw->b);
		kw->b = NULL;
		return r;
	}
	if (!kw->b && !(kw->b = calloc(1, sizeof *kw->b)))
		return fail(kw, "out of memory");
	kw->b->dropped = kw->dropped = x.dropped;
	kw->consistent = kw->room = 0;
	node_log(PROCCTL_LOG_INFO, "kube_listed", "%s=%zu dropped=%llu resource_version=%s pages=%zu", kw->cfg.kind->plural,
		 kw->b->n, (unsigned long long)x.dropped, pg->rv, pages);
	memcpy(kw->rv, pg->rv, sizeof kw->rv);
	memcpy(kw->seen_rv, pg->rv, sizeof kw->seen_rv);
	deliver(kw, kw->b);
	kw->b = NULL;
	working(kw, "list", 0);
	return 0;
}

/* Wait ms, or until stopped. */
static void nap(struct kubewatch *kw, uint32_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000)
		ts.tv_sec++, ts.tv_nsec -= 1000000000;
	pthread_mutex_lock(&kw->mu);
	while (!kw->stop && pthread_cond_timedwait(&kw->cv, &kw->mu, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&kw->mu);
}

/* One watch, to its end: 0 it ran its course (resume from kw->rv), 1 the
 * objects must be listed again (kw->rv ""), -ECANCELED stopping, -EIO a
 * failure (kw->why). */
static int watch(struct kubewatch *kw)
{
	char url[KUBEWATCH_URL_MAX + KUBEWATCH_PATH_MAX + 200 + 3 * KUBE_RV_MAX];
	uint32_t t = kw->cfg.watch_s + rnd() % kw->cfg.watch_s;
	char *rv = curl_easy_escape(kw->h, kw->rv, 0);
	int64_t t0 = procctl_now_ns();
	int r;
	if (!rv)
		return fail(kw, "out of memory");
	r = coll_url(kw, url, sizeof url, "watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%u", rv, t);
	curl_free(rv);
	if (!r)
		r = get(kw, url, WATCH, (long)t + 30);
	flush(kw);
	if (kw->for_room) /* no sign of a server that cannot be followed */
		return kw->rv[0] = 0, 1;
	if (kw->relist || (r && kw->code == 410)) {
		int again = kw->relist_again && procctl_now_ns() - t0 < BRIEF_NS; /* at once, after a list */
		if (kw->gone || kw->code == 410) {
			kw->consistent = 1; /* the cache's version is gone as well */
			count(kw, &kw->st.gone, 1);
			node_log_limited(PROCCTL_LOG_INFO, "kube_gone", "resource_version=%s action=list", kw->rv);
		}
		kw->rv[0] = 0;
		kw->relist_again = 1;
		/* Once is the API server's compaction (or one bad object): list
		 * at once. Again at once, from the version a list just gave, is
		 * a server that cannot be followed: back off. */
		return again ? fail(kw, "a list again (410 Gone, or an event refused), from the version the list before gave")
			     : 1;
	}
	kw->relist_again = 0;
	/* However it ended, a watch made again at once is a new connection:
	 * one that ends within a second with nothing in it is a failure
	 * (client-go's "very short watch"), and a server that ends each at
	 * once is followed no faster than once a second. */
	if (!r && procctl_now_ns() - t0 < BRIEF_NS) {
		if (!kw->up)
			return fail(kw, "the watch ended within a second, with nothing in it");
		nap(kw, (uint32_t)((BRIEF_NS - (procctl_now_ns() - t0)) / 1000000));
	}
	return r;
}

static void *run(void *arg)
{
	struct kubewatch *kw = arg;
	char q[4 * sizeof kw->why];
	pthread_setname_np(pthread_self(), "procctl-kube");
	while (!stopping(kw)) {
		const char *what = kw->rv[0] ? "watch" : "list";
		int r = kw->rv[0] ? watch(kw) : list(kw);
		uint32_t wait;
		if (kw->cap > BUF_KEEP) { /* a large page's room goes back */
			free(kw->buf);
			kw->buf = NULL;
			kw->len = kw->cap = 0;
		}
		if (r == -ECANCELED)
			break;
		if (r >= 0)
			continue; /* listed, a watch ended, or a list asked for: at once */
		pthread_mutex_lock(&kw->mu);
		kw->st.errors++;
		kw->st.synced = 0; /* not followed while the API fails */
		pthread_mutex_unlock(&kw->mu);
		kw->failing = 1;
		kw->backoff = kw->backoff ? (kw->backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : kw->backoff * 2)
					  : BACKOFF_MIN_MS;
		/* A Retry-After (429 Too Many Requests, 503) is the server's own
		 * word: heeded as it says, else the backoff's draw. */
		wait = kw->retry_after_s ? kw->retry_after_s * 1000 : kw->backoff / 2 + rnd() % (kw->backoff / 2 + 1);
		node_log_limited(PROCCTL_LOG_WARN, "kube_api_failed", "what=%s error=\"%s\" retry_ms=%u", what,
				 node_log_quote(q, sizeof q, kw->why), wait);
		nap(kw, wait);
	}
	return NULL;
}

/* ---- start, stop ----------------------------------------------------- */

static void setup(struct kubewatch *kw)
{
	CURL *h = kw->h;
	kubehttp_setup(h, kw->cfg.ca_file, kw->curl_err);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, kw);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, kw);
}

struct kubewatch *kubewatch_start(const struct kubewatch_cfg *cfg, char *err, size_t errlen)
{
	struct kubewatch *kw = NULL;
	size_t n;
	int r;
	if (kubewatch_url_check(cfg->url, err, errlen) < 0)
		return NULL;
	if (kubehttp_init() < 0 || !(kw = calloc(1, sizeof *kw)) || !(kw->obj = malloc(cfg->kind->size))) {
		snprintf(err, errlen, "kubernetes_api: setting up libcurl failed, or out of memory");
		free(kw);
		return NULL;
	}
	kw->cfg = *cfg;
	kw->ev.obj = kw->obj;
	kw->limit = LIMIT;
	if (!kw->cfg.watch_s)
		kw->cfg.watch_s = 300;
	if (!kw->cfg.page_bytes_max)
		kw->cfg.page_bytes_max = KUBEWATCH_PAGE_BYTES;
	if (!kw->cfg.event_bytes_max)
		kw->cfg.event_bytes_max = KUBEWATCH_EVENT_BYTES;
	n = strlen(kw->cfg.url);
	while (n && kw->cfg.url[n - 1] == '/')
		kw->cfg.url[--n] = 0;
	kw->tail = &kw->head;
	pthread_mutex_init(&kw->mu, NULL);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&kw->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (!(kw->h = curl_easy_init())) {
		snprintf(err, errlen, "kubernetes_api: setting up libcurl failed");
		goto fail;
	}
	setup(kw);
	if ((r = pthread_create(&kw->th, NULL, run, kw))) {
		snprintf(err, errlen, "kubernetes_api: its thread: %s", strerror(r));
		goto fail;
	}
	return kw;
fail:
	curl_easy_cleanup(kw->h);
	pthread_cond_destroy(&kw->cv);
	pthread_mutex_destroy(&kw->mu);
	free(kw->obj);
	free(kw);
	return NULL;
}

void kubewatch_stop(struct kubewatch *kw)
{
	struct kube_batch *b, *next;
	if (!kw)
		return;
	pthread_mutex_lock(&kw->mu);
	__atomic_store_n(&kw->stop, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&kw->cv);
	pthread_mutex_unlock(&kw->mu);
	pthread_join(kw->th, NULL);
	for (b = kubewatch_take(kw); b; b = next) {
		next = b->next;
		kube_batch_free(b);
	}
	kube_batch_free(kw->b);
	curl_easy_cleanup(kw->h);
	free(kw->buf);
	free(kw->obj);
	pthread_cond_destroy(&kw->cv);
	pthread_mutex_destroy(&kw->mu);
	free(kw);
}
