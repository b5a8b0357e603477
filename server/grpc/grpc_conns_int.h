/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_conns_int.h - what the connections' table (grpc_conns.c) gives
 * this program's accept4 (grpc_accept.c), which calls it and is called by
 * no file of it: the table, and its admission. Internal to server/grpc. */
#ifndef PROCCTL_NODE_GRPC_CONNS_INT_H
#define PROCCTL_NODE_GRPC_CONNS_INT_H

#include <pthread.h>
#include <sys/socket.h>

#include <grpc/grpc_security.h>

#include "grpc_conns.h"

enum { TCP, UNIX_ };

/* The limits a new connection may meet (limit_met's, evict's), less one. */
enum { L_CONNS = 1, L_PEER, L_RESERVE, L_PENDING, L_PEER_PENDING, LIMITS = L_PEER_PENDING };

#define REFUSE_BURST 1024 /* connections closed for want of descriptors, per accept4 */

struct conn {
	uint64_t serial; /* 0: free */
	uint64_t cookie;
	int fd;
	int cut;         /* shut down for its calls */
	int called;      /* a call began on it: not pending */
	int64_t since;   /* its accept, CLOCK_MONOTONIC */
	uint32_t calls;
	struct sockaddr_storage sa; /* TCP: the remote end */
	struct conn_peer peer;
};

struct grpc_conns {
	pthread_mutex_t mu;
	uint32_t max_conns, max_per_peer, max_streams, max_calls, max_pending, max_peer_pending;
	struct conn *tab;
	size_t cap;           /* max_conns of each transport */
	uint64_t next_serial;
	int64_t swept_ns;     /* the last sweep, CLOCK_MONOTONIC */
	uint32_t open[2];     /* slots in use, by transport */
	uint32_t calls;       /* calls open */
	uint32_t reader_calls; /* ... of read-only callers */
	int ports[NODE_LISTEN_MAX];
	size_t nports;
	int lfd[NODE_LISTEN_MAX]; /* the Unix listeners */
	size_t nlfd;
	int wake;             /* an eventfd: the accept thread looks again (stopping, trim_due_ns) */
	int stopping;         /* atomic */
	int64_t trim_due_ns;  /* atomic; 0: no trim asked for */
	int spare;            /* /dev/null, given up to close a connection at EMFILE */
	pthread_t thread;
	int serving;
	grpc_server *server;
	grpc_server_credentials *insecure;
	int fd_ceiling;       /* a TCP connection's descriptor must be under it (fdlimit.h) */
	int http_ceiling;     /* ... an HTTP connection's (every other accept4 is libmicrohttpd's) */
	uint64_t http_refused; /* atomic; HTTP connections closed as they came: the reserve, or no descriptor */
	uint64_t refused[2][LIMITS]; /* by transport and limit_names[] */
	uint64_t cut, calls_refused, accept_errors, evicted;
};

/* accept4, called with a struct sockaddr * (the C library declares it
 * with a transparent union of such pointers, passed as the pointer). */
typedef int (*accept4_fn)(int, struct sockaddr *, socklen_t *, int);

/* grpc_conns.c's, for grpc_accept.c. */
/* Take a slot for fd's connection from p, or say why not: 0, or the
 * limit met (L_*). */
int conns_admit(struct grpc_conns *t, int fd, const struct conn_peer *p, const struct sockaddr_storage *sa);
/* Log p's connection refused at limit why (rate-limited). */
void conns_say_refused(const struct conn_peer *p, int why);
/* The accept4 this program's stands in front of. */
accept4_fn conns_next_accept4(void);
/* Out of descriptors: close the next connection waiting on listener fd
 * (the spare descriptor given up for it meanwhile): 0, or -1 when there
 * was none (or no spare). */
int conns_refuse_one(struct grpc_conns *t, int fd, int flags);
/* The table this program's accept4 consults (NULL: none yet). */
struct grpc_conns *conns_hooked(void);
/* ss's address as text, an IPv4-mapped IPv6 one as IPv4 (as gRPC names
 * it); its port. */
void conns_addr_text(const struct sockaddr_storage *ss, char *buf, size_t len);
int conns_port_num(const struct sockaddr_storage *ss);

#endif
