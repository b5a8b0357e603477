/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_conns.h - procctl-node's gRPC connections, each known by who is
 * at its other end, and bounded: in number, per peer, and in the calls
 * open on them.
 *
 * gRPC 1.51 (Debian 12's) bounds none of that: it has no connection
 * limit (GRPC_ARG_MAX_ALLOWED_INCOMING_CONNECTIONS came later), a TCP
 * listener stops for good at its first accept error (EMFILE: "Failed
 * accept4: Too many open files"), and a client may open any number of
 * streams before it acknowledges SETTINGS_MAX_CONCURRENT_STREAMS (100,000
 * header-only streams on one connection held 1.2 GB). So:
 *  - the Unix listeners are ours: accepted on a thread of this file, the
 *    peer's credentials read (SO_PEERCRED), then handed to gRPC
 *    (grpc_server_add_channel_from_fd; its calls' peer is "fd:N");
 *  - the TCP listeners stay gRPC's (mTLS needs its handshake), and their
 *    accepts go through this program's accept4, which libgrpc's calls
 *    resolve to (checked when the first TCP listener is added);
 *  - each call names its connection (conns_call_begin): one that has
 *    more than ten times grpc_max_streams calls open is shut down.
 * A connection's end is seen when its socket's is: each is known by its
 * socket cookie (SO_COOKIE), which no other socket ever has, so a closed
 * descriptor's number taken again is never taken for it. */
#ifndef PROCCTL_NODE_GRPC_CONNS_H
#define PROCCTL_NODE_GRPC_CONNS_H

#include <netinet/in.h>
#include <stdint.h>

#include <grpc/grpc.h>

#include "config/config.h"

struct grpc_conns;

/* Who is at a connection's other end. */
struct conn_peer {
	int is_unix;
	uint32_t uid, pid;              /* the Unix socket's: SO_PEERCRED at connect */
	char addr[INET6_ADDRSTRLEN];    /* TCP: the remote address, without its port */
};

/* A call's hold on its connection and on the calls open, given back
 * with conns_call_end. */
struct conn_ticket {
	size_t slot;
	uint64_t serial; /* 0: no connection was found (counted in all only) */
	int counted;
	int reader;      /* counted among the read-only callers' too */
	int closed;      /* its stream is closed: no longer counted on its connection */
};

/* A table for cfg's limits (grpc_max_connections of each transport,
 * grpc_max_connections_per_peer, grpc_max_streams, grpc_max_calls). One
 * per process: this program's accept4 consults it. 0 or -ENOMEM. */
int conns_new(const struct node_cfg *cfg, struct grpc_conns **out);
/* After the server is destroyed (no accept4 of its can run). */
void conns_free(struct grpc_conns *t);

/* Count the accepts of the TCP listener gRPC bound on port from now on.
 * 0, or -ENOSYS with err set when this program's accept4 is not the one
 * libgrpc calls (a static build). */
int conns_watch_tcp(struct grpc_conns *t, int port, char *err, size_t errlen);
/* Bind and listen on a Unix socket at path (0660 from its first moment,
 * of group gid before it listens unless gid is (gid_t)-1; the path is
 * free, grpc_server.c saw to it). 0, or -errno and err. */
int conns_listen_unix(struct grpc_conns *t, const char *path, gid_t gid, char *err, size_t errlen);
/* Accept on the Unix listeners, for server (started), on a thread of
 * ours (procctl-accept), which also gives the memory of a cut
 * connection's calls back to the system a second after the cut
 * (malloc_trim). 0 or -errno. */
int conns_serve(struct grpc_conns *t, grpc_server *server);
/* Stop accepting on them, and close the TCP connections gRPC accepts
 * from now on (before the server shuts down). */
void conns_stop(struct grpc_conns *t);
/* After conns_stop, before the server shuts down: wait (wait_ms at most)
 * until no call is open, then shut every connection down. gRPC 1.51's
 * shutdown cancels a call that comes meanwhile (CANCELLED, which clients
 * do not retry); on a connection shut down, a call fails UNAVAILABLE,
 * which they do. */
void conns_drain(struct grpc_conns *t, unsigned wait_ms);

/* A new call, on the connection gRPC names peer ("fd:N", "ipv4:A:P",
 * "ipv6:[A]:P"), from a read-only caller or not: who is filled (all
 * zero, not Unix, when the connection is not known), *tk set. -EAGAIN:
 * grpc_max_calls are open (a Unix root caller may use the last eighth,
 * nobody else; read-only callers a quarter at most), the caller answers
 * RESOURCE_EXHAUSTED; *tk needs no conns_call_end then. A connection with
 * more than ten times grpc_max_streams calls open is shut down (its calls end
 * with it). */
int conns_call_begin(struct grpc_conns *t, const char *peer, int reader, struct conn_peer *who,
		     struct conn_ticket *tk);
/* Its stream is closed (RECV_CLOSE_ON_SERVER: the call ended, or its
 * client cancelled it): it no longer counts on its connection, where a
 * client that heeds grpc_max_streams opens the next at once, while the
 * call itself counts in all until conns_call_end (its memory is held
 * until then). Once; any thread. */
void conns_call_closed(struct grpc_conns *t, struct conn_ticket *tk);
void conns_call_end(struct grpc_conns *t, struct conn_ticket *tk);

/* Its Prometheus metrics: connections open and refused, connections cut,
 * calls open, and the limits. Any thread. */
struct prom;
void conns_metrics(struct grpc_conns *t, struct prom *p);

/* The TCP connections: how many, with no call yet (pending), and what
 * was done to those past the limits. */
struct conns_tcp {
	uint32_t open, max, pending, pending_max;
	uint64_t refused, evicted;
};
/* 1 and *out when TCP listeners are watched, else 0. Any thread. */
int conns_tcp_state(struct grpc_conns *t, struct conns_tcp *out);

#endif
