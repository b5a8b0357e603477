/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_accept.c - this program's accept4 (grpc_conns_int.h): gRPC's TCP
 * listeners' accepts go through the connections' table (admitted, or
 * closed as they come), libmicrohttpd's past the HTTP ceiling are closed,
 * and EMFILE never stops a listener. */
#define _GNU_SOURCE 1
#include "grpc_conns_int.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "sys/log.h"

/* ---- TCP: gRPC's listeners, this program's accept4 ------------------------ */

static int port_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof ss;
	if (getsockname(fd, (struct sockaddr *)&ss, &l) < 0)
		return -1;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return -1;
}

static int watched(const struct grpc_conns *t, int fd)
{
	int port = port_of(fd);
	size_t i;
	for (i = 0; port >= 0 && i < t->nports; i++)
		if (t->ports[i] == port)
			return 1;
	return 0;
}

/* The next connection of a watched listener that its peer may open: the
 * others are closed as they come. gRPC 1.51 gives up a listener at any
 * error but EAGAIN and EINTR: every other is said once a second and
 * answered EAGAIN (the next connection tries again), after EMFILE and
 * ENFILE the waiting connections are closed (refuse_one), at most
 * REFUSE_BURST a call. */
static int tcp_accept(struct grpc_conns *t, int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	int refused = 0;
	for (;;) {
		struct sockaddr_storage ss;
		struct conn_peer p = {0};
		socklen_t sl = sizeof ss;
		int c = conns_next_accept4()(fd, (struct sockaddr *)&ss, &sl, flags), why;
		if (c < 0 && (errno == EAGAIN || errno == EINTR))
			return -1;
		if (c < 0) {
			int e = errno;
			__atomic_add_fetch(&t->accept_errors, 1, __ATOMIC_RELAXED);
			node_log_limited(PROCCTL_LOG_WARN, "accept_failed", "transport=tcp error=%s", strerror(e));
			if ((e == EMFILE || e == ENFILE) && refused++ < REFUSE_BURST && conns_refuse_one(t, fd, flags) == 0)
				continue;
			errno = EAGAIN;
			return -1;
		}
		if (__atomic_load_n(&t->stopping, __ATOMIC_ACQUIRE)) {
			close(c); /* draining (conns_drain): its calls would be cancelled */
			continue;
		}
		conns_addr_text(&ss, p.addr, sizeof p.addr);
		if (!(why = conns_admit(t, c, &p, &ss))) {
			if (addr && len) {
				memcpy(addr, &ss, *len < sl ? *len : sl);
				*len = sl;
			}
			return c;
		}
		conns_say_refused(&p, why);
		close(c);
	}
}

/* libmicrohttpd's accept: a connection past the HTTP ceiling is closed as
 * it comes, and so is one that meets EMFILE (with the spare): EAGAIN
 * instead, as libmicrohttpd, told of EMFILE while it holds no connection,
 * stops listening until one of its own closes, which is never. */
static int http_accept(struct grpc_conns *t, int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	int c = conns_next_accept4()(fd, addr, len, flags), e = errno;
	if (c >= t->http_ceiling) {
		close(c);
		e = EAGAIN;
		c = -1;
		__atomic_add_fetch(&t->http_refused, 1, __ATOMIC_RELAXED);
		node_log_limited(PROCCTL_LOG_WARN, "connection_refused", "transport=http limit=fd_reserve");
	} else if (c < 0 && (e == EMFILE || e == ENFILE)) {
		if (conns_refuse_one(t, fd, flags) == 0)
			__atomic_add_fetch(&t->http_refused, 1, __ATOMIC_RELAXED);
		node_log_limited(PROCCTL_LOG_WARN, "accept_failed", "transport=http error=%s", strerror(e));
		e = EAGAIN;
	}
	errno = e;
	return c;
}

/* This program's accept4 (declared as the C library's is): libgrpc's
 * calls come here, and so does every other (libmicrohttpd's). */
int accept4(int fd, __SOCKADDR_ARG addr, socklen_t *__restrict len, int flags)
{
	struct grpc_conns *t = conns_hooked();
	if (t && __atomic_load_n(&t->nports, __ATOMIC_ACQUIRE) && watched(t, fd))
		return tcp_accept(t, fd, addr.__sockaddr__, len, flags);
	if (t)
		return http_accept(t, fd, addr.__sockaddr__, len, flags);
	return conns_next_accept4()(fd, addr.__sockaddr__, len, flags);
}

int conns_watch_tcp(struct grpc_conns *t, int port, char *err, size_t errlen)
{
	int (*mine)(int, __SOCKADDR_ARG, socklen_t *__restrict, int) = accept4;
	void *theirs = dlsym(RTLD_DEFAULT, "accept4");
	if (sizeof theirs != sizeof mine || memcmp(&theirs, &mine, sizeof theirs)) {
		snprintf(err, errlen, "gRPC's accepts do not come through procctl-node's accept4 (a static build?): "
			 "TCP connections could not be bounded");
		return -ENOSYS;
	}
	if (t->nports < NODE_LISTEN_MAX) {
		t->ports[t->nports] = port;
		__atomic_store_n(&t->nports, t->nports + 1, __ATOMIC_RELEASE);
	}
	return 0;
}
