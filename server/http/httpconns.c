/* SPDX-License-Identifier: Apache-2.0 */
/* httpconns.c - the HTTP side's connections (http_int.h): each one's
 * wait for its request, oldest first, cut when late (HTTP_REQUEST_S) or
 * evicted for a newcomer past the spare room; and this side's metrics. */
#include "http_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "sys/log.h"
#include "sys/prom.h"

void hconn_wait_end(struct hconn *c)
{
	if (!c->next)
		return;
	c->prev->next = c->next;
	c->next->prev = c->prev;
	c->prev = c->next = NULL;
}

/* c waits for its next request from now: last on the list, which so
 * stays in the order of since_ns. */
void hconn_wait_start(struct httpsrv *h, struct hconn *c)
{
	hconn_wait_end(c);
	c->since_ns = procctl_now_ns();
	c->prev = h->waiting.prev;
	c->next = &h->waiting;
	c->prev->next = c;
	h->waiting.prev = c;
}

/* Close conn: libmicrohttpd has no call for it, but it reads the end of
 * a shut socket on its next turn, and closes the connection then. */
static void shut(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (i)
		shutdown(i->connect_fd, SHUT_RDWR);
}

static void cut(struct httpsrv *h, struct hconn *c, int why)
{
	hconn_wait_end(c);
	shut(c->conn);
	__atomic_add_fetch(&h->cut[why], 1, __ATOMIC_RELAXED);
	node_log_limited(PROCCTL_LOG_WARN, "http_cut", "reason=%s open=%zu", why == HTTP_CUT_LATE ? "late" : "evicted",
			 __atomic_load_n(&h->conns, __ATOMIC_RELAXED));
}

/* A connection accepted (it waits for its request; past the spare room,
 * the longest waiting one, perhaps itself, is evicted) or closed. */
void hconn_notify(void *cls, struct MHD_Connection *conn, void **ctx, enum MHD_ConnectionNotificationCode code)
{
	struct httpsrv *h = cls;
	struct hconn *c = *ctx;
	size_t n = __atomic_load_n(&h->conns, __ATOMIC_RELAXED); /* only this thread writes it */
	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (c) {
			hconn_wait_end(c);
			free(c);
			__atomic_store_n(&h->conns, n - 1, __ATOMIC_RELAXED);
		}
		*ctx = NULL;
		return;
	}
	if (!(c = calloc(1, sizeof *c))) {
		shut(conn); /* untracked, it could trickle unbounded */
		return;
	}
	c->conn = conn;
	*ctx = c;
	__atomic_store_n(&h->conns, n + 1, __ATOMIC_RELAXED);
	hconn_wait_start(h, c);
	if (n + 1 > h->max_conns - HTTP_SPARE_CONNECTIONS)
		cut(h, h->waiting.next, HTTP_CUT_EVICTED);
}

/* Cut each connection whose request has not all arrived within
 * HTTP_REQUEST_S. The milliseconds until the next is due; -1: none waits. */
int hconn_cut_late(struct httpsrv *h)
{
	int64_t now = procctl_now_ns();
	while (h->waiting.next != &h->waiting) {
		int64_t due = h->waiting.next->since_ns + HTTP_REQUEST_S * 1000000000ll;
		if (due > now)
			return (int)((due - now + 999999) / 1000000);
		cut(h, h->waiting.next, HTTP_CUT_LATE);
	}
	return -1;
}

/* This side's own metrics. */
void httpsrv_metrics(const struct httpsrv *h, struct prom *p)
{
	char help[200], code_s[8];
	size_t code;
	prom_family(p, &(const struct prom_family){"procctl_http_responses_total", PROM_COUNTER, NULL,
						  "HTTP responses sent, by status."});
	for (code = 100; code < 600; code++) {
		uint64_t v = __atomic_load_n(&h->responses[code], __ATOMIC_RELAXED);
		snprintf(code_s, sizeof code_s, "%zu", code);
		if (v)
			prom_int(p, PROM_LABELS({"code", code_s}), v);
	}
	snprintf(help, sizeof help, "Bytes of request bodies held (their buffers' sizes): the writes' (at most %u).", HTTP_MAX_BODIES);
	prom_family(p, &(const struct prom_family){"procctl_http_body_bytes", PROM_GAUGE, "bytes", help});
	prom_int(p, PROM_NOLABELS, __atomic_load_n(&h->body_bytes, __ATOMIC_RELAXED));
	snprintf(help, sizeof help, "HTTP connections open (at most %u).", h->max_conns);
	prom_family(p, &(const struct prom_family){"procctl_http_connections", PROM_GAUGE, NULL, help});
	prom_int(p, PROM_NOLABELS, __atomic_load_n(&h->conns, __ATOMIC_RELAXED));
	snprintf(help, sizeof help,
		 "HTTP connections closed before their request had all arrived: late (not within %d s), evicted (the "
		 "longest waiting, for a newcomer, past %u open).",
		 HTTP_REQUEST_S, h->max_conns - HTTP_SPARE_CONNECTIONS);
	prom_family(p, &(const struct prom_family){"procctl_http_cut_total", PROM_COUNTER, NULL, help});
	prom_int(p, PROM_LABELS({"reason", "late"}), __atomic_load_n(&h->cut[HTTP_CUT_LATE], __ATOMIC_RELAXED));
	prom_int(p, PROM_LABELS({"reason", "evicted"}), __atomic_load_n(&h->cut[HTTP_CUT_EVICTED], __ATOMIC_RELAXED));
}
