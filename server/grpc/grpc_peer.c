/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_peer.c - who is calling (grpc_int.h): a call's connection and its
 * count (grpc_conns.c), the caller's identity for the limits each caller
 * has (waits, streams), what it may do, and how the log names it.
 *
 * A caller is the Unix socket's uid ("uid:N"), the subject of a verified
 * client certificate ("x509:SUBJECT"), or a plain TCP client's address
 * ("addr:A"): what one client cannot multiply by opening connections. */
#include "grpc_int.h"

#include <stdio.h>
#include <string.h>

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>

/* The value of property name in ctx, into buf ("" when none). */
static void property(grpc_auth_context *ctx, const char *name, char *buf, size_t len)
{
	grpc_auth_property_iterator it = grpc_auth_context_find_properties_by_name(ctx, name);
	const grpc_auth_property *p = grpc_auth_property_iterator_next(&it);
	snprintf(buf, len, "%.*s", p ? (int)p->value_length : 0, p ? p->value : "");
}

/* Did call come over TLS with a client certificate the listener
 * verified (it requires one)? 1, with its CN and subject; else 0. */
static int tls_client(grpc_call *call, char *cn, size_t cnlen, char *subject, size_t sublen)
{
	grpc_auth_context *ctx = grpc_call_auth_context(call);
	char type[32];
	int tls = 0;
	cn[0] = subject[0] = 0;
	if (!ctx)
		return 0;
	property(ctx, GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME, type, sizeof type);
	if (!strcmp(type, GRPC_TLS_TRANSPORT_SECURITY_TYPE) || !strcmp(type, GRPC_SSL_TRANSPORT_SECURITY_TYPE))
		tls = grpc_auth_context_peer_is_authenticated(ctx);
	if (tls) {
		property(ctx, GRPC_X509_CN_PROPERTY_NAME, cn, cnlen);
		property(ctx, GRPC_X509_SUBJECT_PROPERTY_NAME, subject, sublen);
	}
	grpc_auth_context_release(ctx);
	return tls;
}

/* "x509:SUBJECT" into c->ident: a subject too long for it keeps its
 * start and a hash of the whole (FNV-1a), so two never share one. */
static void ident_x509(struct rpc *c, const char *subject)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const char *s;
	if (strlen(subject) + 5 < sizeof c->ident) {
		snprintf(c->ident, sizeof c->ident, "x509:%.*s", (int)(sizeof c->ident - 6), subject);
		return;
	}
	for (s = subject; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	snprintf(c->ident, sizeof c->ident, "x509:%.40s#%016llx", subject, (unsigned long long)h);
}

int call_admit(struct rpc *c)
{
	char *peer = grpc_call_get_peer(c->call), cn[128], subject[512];
	int tls = tls_client(c->call, cn, sizeof cn, subject, sizeof subject);
	int tcp = peer && strncmp(peer, "fd:", 3); /* "fd:N": a Unix socket's, handed over by grpc_conns.c */
	int reader = tcp && !tls && !c->s->cfg->insecure_tcp_writes;
	int r = conns_call_begin(c->s->conns, peer ? peer : "", reader, &c->who, &c->ticket);
	gpr_free(peer);
	if (r < 0) {
		node_log_limited(PROCCTL_LOG_WARN, "call_refused", "reason=grpc_max_calls");
		rpc_send_status(c, NODE_RESOURCE_EXHAUSTED, "too many calls open (grpc_max_calls)", NULL);
		rpc_unref(c);
		return -1;
	}
	if (c->who.is_unix) {
		snprintf(c->ident, sizeof c->ident, "uid:%u", c->who.uid);
		c->klass = c->who.uid ? NODE_PEER_WRITER : NODE_PEER_ROOT;
	} else if (tls) {
		ident_x509(c, subject);
		c->klass = NODE_PEER_WRITER;
	} else {
		snprintf(c->ident, sizeof c->ident, "addr:%s", c->who.addr[0] ? c->who.addr : "?");
		c->klass = reader ? NODE_PEER_READER : NODE_PEER_WRITER;
	}
	return 0;
}

void call_describe(struct rpc *c, char *buf, size_t len)
{
	char *peer, cn[128], subject[512];
	size_t n;
	if (c->who.is_unix) {
		snprintf(buf, len, "peer=unix uid=%u pid=%u", c->who.uid, c->who.pid);
		return;
	}
	peer = grpc_call_get_peer(c->call);
	snprintf(buf, len, "peer=%s", peer ? peer : "?");
	gpr_free(peer);
	n = strlen(buf);
	if (tls_client(c->call, cn, sizeof cn, subject, sizeof subject))
		snprintf(buf + n, len - n, " cn=%s", cn);
}
