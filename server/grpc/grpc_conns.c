/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_conns.c - procctl-node's gRPC connections (grpc_conns.h): the
 * table and its limits, the Unix listeners' thread, and each call's hold
 * on its connection (this program's accept4, for gRPC's TCP listeners,
 * is grpc_accept.c's).
 *
 * One mutex over the table. A slot is a connection: its descriptor,
 * socket cookie, peer, and calls open; a serial tells a slot's
 * connections apart, so a call's ticket never touches the next one's.
 * Slots of connections gRPC closed are found when a count matters (a
 * limit is near, or /metrics asks) and their descriptor no longer holds
 * their socket. */
#define _GNU_SOURCE 1
#include "grpc_conns_int.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <grpc/grpc_posix.h>
#include <grpc/grpc_security.h>

#include "sys/fdlimit.h"
#include "sys/log.h"
#include "sys/prom.h"

static const char *const limit_names[LIMITS] = {"grpc_max_connections", "grpc_max_connections_per_peer", "fd_reserve",
						"pending", "pending_per_peer"};

/* A connection is cut past CUT_FACTOR * grpc_max_streams calls open on
 * it. A client that heeds the limit never has more streams open, but a
 * call is counted from when this side sees it to when it sees it closed,
 * and a client that cancels hundreds of queued streams at once has its
 * next ones seen before the cancels: 600 cancelled reflection streams
 * counted over 200 on one connection. */
#define CUT_FACTOR 10
#define SWEEP_NS 50000000ll /* 50 ms */
/* TCP connections on which no call has begun (pending: a handshake not
 * finished, or a client that never calls) are bounded apart, as a client's
 * handshake takes milliseconds: unauthenticated connections from 8
 * addresses held all 256 slots for as long as the handshake timeout, and
 * again. One address may have an eighth of grpc_max_connections_per_peer
 * pending (max_peer_pending): its next is closed as it comes. All may
 * have a quarter of grpc_max_connections (max_pending): past that, or when
 * every slot is taken, a new one takes the slot of the oldest pending, if
 * that is EVICT_AGE_NS old, else it is closed as it comes. A connection
 * closed as it comes costs nothing; one gRPC took costs its handshake's
 * memory: at most max_pending of those a second. */
#define EVICT_AGE_NS 1000000000ll
#define TRIM_DELAY_NS 1000000000ll /* a cut connection's calls end by then */

/* ---- this program's accept4's helpers (grpc_accept.c) ------------------- */

/* The table this program's accept4 consults (grpc_accept.c). */
static struct grpc_conns *the_conns;

static void conns_hook(struct grpc_conns *t)
{
	__atomic_store_n(&the_conns, t, __ATOMIC_RELEASE);
}

struct grpc_conns *conns_hooked(void)
{
	return __atomic_load_n(&the_conns, __ATOMIC_ACQUIRE);
}

/* dlsym's function as one (POSIX: a function pointer is a void *'s bytes). */
static accept4_fn sym(void *handle, const char *name)
{
	void *p = dlsym(handle, name);
	accept4_fn f;
	memcpy(&f, &p, sizeof f);
	return f;
}

/* The accept4 this program's would have been: a sanitizer's, when the
 * program has one (its runtime, linked in, names it apart; its own
 * "accept4" is what this program's replaced, and the sanitizer must see
 * every descriptor made), else the next (the C library's, or a
 * sanitizer's library in front of it). */
accept4_fn conns_next_accept4(void)
{
	static accept4_fn fn;
	accept4_fn f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
	if (!f) {
		f = sym(RTLD_DEFAULT, "___interceptor_accept4"); /* LLVM 17 on */
		if (!f)
			f = sym(RTLD_DEFAULT, "__interceptor_accept4");
		if (!f)
			f = sym(RTLD_NEXT, "accept4");
		__atomic_store_n(&fn, f, __ATOMIC_RELEASE);
	}
	return f;
}

/* ss's address as text, an IPv4-mapped IPv6 one as IPv4 (as gRPC names it). */
void conns_addr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	const struct sockaddr_in6 *s6 = (const void *)ss;
	buf[0] = 0;
	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, buf, (socklen_t)len);
	else if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], buf, (socklen_t)len);
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &s6->sin6_addr, buf, (socklen_t)len);
}

int conns_port_num(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? ntohs(((const struct sockaddr_in *)ss)->sin_port)
					: ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

/* Out of descriptors: close the next connection waiting on listener fd,
 * with the spare descriptor given up for it meanwhile. Left there, it
 * would wait for one, and every connection behind it too (gRPC tries
 * again only when another comes); closed, its peer knows and may retry.
 * 0, or -1 when there was none (or no spare). */
int conns_refuse_one(struct grpc_conns *t, int fd, int flags)
{
	int c = -1;
	pthread_mutex_lock(&t->mu);
	if (t->spare >= 0) {
		close(t->spare);
		if ((c = conns_next_accept4()(fd, NULL, NULL, flags)) >= 0)
			close(c);
		t->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	pthread_mutex_unlock(&t->mu);
	return c >= 0 ? 0 : -1;
}

/* ---- the table ----------------------------------------------------------- */

static uint64_t cookie_of(int fd)
{
	uint64_t c = 0;
	socklen_t l = sizeof c;
	return getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c, &l) == 0 ? c : 0;
}

/* Does slot e's descriptor still hold its socket? */
static int alive(const struct conn *e)
{
	return e->serial && cookie_of(e->fd) == e->cookie;
}

static int transport_of(const struct conn *e)
{
	return e->peer.is_unix ? UNIX_ : TCP;
}

/* Free the slots of connections gRPC closed: a descriptor each to ask,
 * so at most once per SWEEP_NS (a connection closed meanwhile is seen at
 * the next), else a flood of refused connections would ask for every
 * slot each. Under mu. */
static void sweep(struct grpc_conns *t)
{
	int64_t now = procctl_now_ns();
	size_t i;
	if (now - t->swept_ns < SWEEP_NS)
		return;
	t->swept_ns = now;
	for (i = 0; i < 2 * t->cap; i++) {
		struct conn *e = &t->tab[i];
		if (e->serial && !alive(e)) {
			t->open[transport_of(e)]--;
			e->serial = 0;
		}
	}
}

static int same_peer(const struct conn_peer *a, const struct conn_peer *b)
{
	return a->is_unix == b->is_unix && (a->is_unix ? a->uid == b->uid : !strcmp(a->addr, b->addr));
}

/* The limit p's new connection meets: 0 none, L_CONNS, L_PEER (a Unix
 * root caller has none), L_RESERVE. Under mu. */
static int limit_met(const struct grpc_conns *t, int fd, const struct conn_peer *p)
{
	uint32_t mine = 0;
	size_t i;
	if (!p->is_unix && fd >= t->fd_ceiling)
		return L_RESERVE; /* the Unix socket's callers may take it */
	if (t->open[p->is_unix ? UNIX_ : TCP] >= t->max_conns)
		return L_CONNS;
	if (p->is_unix && p->uid == 0)
		return 0;
	for (i = 0; i < 2 * t->cap; i++)
		mine += t->tab[i].serial && same_peer(&t->tab[i].peer, p);
	return mine >= t->max_per_peer ? L_PEER : 0;
}

static int pending(const struct conn *e)
{
	return e->serial && !e->peer.is_unix && !e->called;
}

/* Room for a TCP connection from p among the pending (see EVICT_AGE_NS):
 * 0, the oldest shut down and its slot freed when one had to go; else
 * the limit met (L_PEER_PENDING, L_PENDING). Under mu. */
static int evict(struct grpc_conns *t, const struct conn_peer *p)
{
	struct conn *oldest = NULL;
	uint32_t all = 0, mine = 0;
	int64_t now = procctl_now_ns();
	size_t i;
	for (i = 0; i < 2 * t->cap; i++) {
		struct conn *e = &t->tab[i];
		if (!pending(e))
			continue;
		all++;
		mine += same_peer(&e->peer, p);
		if (!oldest || e->since < oldest->since)
			oldest = e;
	}
	if (mine >= t->max_peer_pending)
		return L_PEER_PENDING;
	if (all < t->max_pending && t->open[TCP] < t->max_conns)
		return 0;
	if (!oldest)
		return 0; /* every slot has a caller: limit_met says */
	if (now - oldest->since < EVICT_AGE_NS)
		return L_PENDING;
	if (alive(oldest))
		shutdown(oldest->fd, SHUT_RDWR); /* gRPC closes it; its slot is free now */
	node_log_limited(PROCCTL_LOG_WARN, "connection_evicted", "transport=tcp addr=%s ms=%lld "
			 "reason=\"no call yet, and its slot wanted\"", oldest->peer.addr,
			 (long long)((now - oldest->since) / 1000000));
	oldest->serial = 0;
	t->open[TCP]--;
	t->evicted++;
	return 0;
}

/* Take a slot for fd's connection from p, or say why not: 0, or the
 * limit met (limit_met's). */
int conns_admit(struct grpc_conns *t, int fd, const struct conn_peer *p, const struct sockaddr_storage *sa)
{
	int tr = p->is_unix ? UNIX_ : TCP, why;
	size_t i;
	pthread_mutex_lock(&t->mu);
	if (!p->is_unix && fd < t->fd_ceiling) {
		sweep(t);
		why = evict(t, p);
	} else {
		why = 0;
	}
	if (!why && (why = limit_met(t, fd, p))) {
		sweep(t);
		why = limit_met(t, fd, p);
	}
	if (why) {
		t->refused[tr][why - 1]++;
		pthread_mutex_unlock(&t->mu);
		return why;
	}
	for (i = 0; t->tab[i].serial; i++) /* open[] < max_conns of each: a slot is free */
		;
	t->tab[i] = (struct conn){.serial = ++t->next_serial, .cookie = cookie_of(fd), .fd = fd, .since = procctl_now_ns(),
				  .peer = *p};
	if (sa)
		t->tab[i].sa = *sa;
	t->open[tr]++;
	pthread_mutex_unlock(&t->mu);
	return 0;
}

void conns_say_refused(const struct conn_peer *p, int why)
{
	const char *limit = limit_names[why - 1];
	if (p->is_unix)
		node_log_limited(PROCCTL_LOG_WARN, "connection_refused", "transport=unix uid=%u pid=%u limit=%s", p->uid,
				 p->pid, limit);
	else
		node_log_limited(PROCCTL_LOG_WARN, "connection_refused", "transport=tcp addr=%s limit=%s", p->addr, limit);
}

/* ---- Unix: our listeners, handed to gRPC --------------------------------- */

int conns_listen_unix(struct grpc_conns *t, const char *path, gid_t gid, char *err, size_t errlen)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	mode_t old;
	int fd, r;
	if (t->nlfd == NODE_LISTEN_MAX || strlen(path) >= sizeof a.sun_path) {
		snprintf(err, errlen, "unix:%s: too many listeners, or too long", path);
		return -ENAMETOOLONG;
	}
	memcpy(a.sun_path, path, strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	old = umask(0117); /* bind makes the socket: 0660 from its first moment, whatever our umask */
	r = bind(fd, (struct sockaddr *)&a, sizeof a);
	umask(old);
	if (r == 0 && gid != (gid_t)-1 && fchownat(AT_FDCWD, path, (uid_t)-1, gid, AT_SYMLINK_NOFOLLOW) < 0) {
		r = -errno;
		snprintf(err, errlen, "grpc_listen unix:%s: socket_group %u: %s%s", path, (unsigned)gid, strerror(-r),
			 r == -EPERM ? " (the daemon must be in the group, SupplementaryGroups= in its unit, or have "
				       "CAP_CHOWN)" : "");
		close(fd);
		unlink(path);
		return r;
	}
	if (r < 0 || listen(fd, SOMAXCONN) < 0) {
		r = -errno;
		snprintf(err, errlen, "grpc_listen unix:%s: %s", path, strerror(errno));
		close(fd);
		return r;
	}
	t->lfd[t->nlfd++] = fd;
	return 0;
}

/* Every connection waiting on listener lfd: admitted ones go to gRPC.
 * Out of descriptors, the waiting ones are closed (conns_refuse_one): left
 * there, the listener stays readable and the thread would spin on it;
 * without even the spare, the thread rests 100 ms. */
static void unix_accept_all(struct grpc_conns *t, int lfd)
{
	int refused = 0;
	for (;;) {
		struct ucred cr;
		socklen_t l = sizeof cr;
		struct conn_peer p = {.is_unix = 1};
		int c = conns_next_accept4()(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), why;
		if (c < 0) {
			int e = errno;
			if (e == EAGAIN || e == EINTR)
				return;
			__atomic_add_fetch(&t->accept_errors, 1, __ATOMIC_RELAXED);
			node_log_limited(PROCCTL_LOG_WARN, "accept_failed", "transport=unix error=%s", strerror(e));
			if ((e == EMFILE || e == ENFILE) && refused++ < REFUSE_BURST &&
			    conns_refuse_one(t, lfd, SOCK_NONBLOCK | SOCK_CLOEXEC) == 0)
				continue;
			poll(NULL, 0, 100);
			return;
		}
		if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &l) < 0) {
			close(c);
			continue;
		}
		p.uid = cr.uid;
		p.pid = (uint32_t)cr.pid;
		if ((why = conns_admit(t, c, &p, NULL))) {
			conns_say_refused(&p, why);
			close(c);
			continue;
		}
		grpc_server_add_channel_from_fd(t->server, c, t->insecure); /* gRPC's now: closed with its transport */
	}
}

/* Milliseconds until the trim that a cut asked for is due (0: now); -1:
 * none asked for. */
static int trim_in_ms(struct grpc_conns *t)
{
	int64_t due = __atomic_load_n(&t->trim_due_ns, __ATOMIC_RELAXED), now = procctl_now_ns();
	if (!due)
		return -1;
	return due <= now ? 0 : (int)((due - now) / 1000000 + 1);
}

/* The memory a cut connection's calls held, freed, back to the system:
 * the C library keeps it otherwise (after 25 s of floods: 127 MB
 * resident, 19 MB once trimmed; 1 MB of it in use). */
static void trim(struct grpc_conns *t)
{
	__atomic_store_n(&t->trim_due_ns, 0, __ATOMIC_RELAXED);
	malloc_trim(0);
}

/* The Unix listeners' accepts, and the trims a cut asks for, until
 * conns_stop. */
static void *accept_thread(void *arg)
{
	struct grpc_conns *t = arg;
	struct pollfd pf[NODE_LISTEN_MAX + 1];
	size_t i;
	pthread_setname_np(pthread_self(), "procctl-accept");
	for (i = 0; i < t->nlfd; i++)
		pf[i] = (struct pollfd){.fd = t->lfd[i], .events = POLLIN};
	pf[t->nlfd] = (struct pollfd){.fd = t->wake, .events = POLLIN};
	for (;;) {
		uint64_t n;
		if (poll(pf, t->nlfd + 1, trim_in_ms(t)) < 0 && errno != EINTR)
			break;
		if (pf[t->nlfd].revents && read(t->wake, &n, sizeof n) == sizeof n &&
		    __atomic_load_n(&t->stopping, __ATOMIC_ACQUIRE))
			break;
		if (trim_in_ms(t) == 0)
			trim(t);
		for (i = 0; i < t->nlfd; i++)
			if (pf[i].revents)
				unix_accept_all(t, t->lfd[i]);
	}
	return NULL;
}

int conns_serve(struct grpc_conns *t, grpc_server *server)
{
	int r;
	t->server = server;
	t->insecure = grpc_insecure_server_credentials_create();
	if ((r = pthread_create(&t->thread, NULL, accept_thread, t)))
		return -r;
	t->serving = 1;
	return 0;
}

void conns_stop(struct grpc_conns *t)
{
	uint64_t one = 1;
	size_t i;
	__atomic_store_n(&t->stopping, 1, __ATOMIC_RELEASE);
	if (t->serving && write(t->wake, &one, sizeof one) == sizeof one)
		pthread_join(t->thread, NULL);
	t->serving = 0;
	for (i = 0; i < t->nlfd; i++)
		close(t->lfd[i]);
	t->nlfd = 0;
}

void conns_drain(struct grpc_conns *t, unsigned wait_ms)
{
	int64_t until = procctl_now_ns() + (int64_t)wait_ms * 1000000;
	size_t i;
	pthread_mutex_lock(&t->mu);
	while (t->calls && procctl_now_ns() < until) {
		pthread_mutex_unlock(&t->mu);
		nanosleep(&(struct timespec){0, 1000000}, NULL);
		pthread_mutex_lock(&t->mu);
	}
	for (i = 0; i < 2 * t->cap; i++)
		if (alive(&t->tab[i]))
			shutdown(t->tab[i].fd, SHUT_RDWR);
	pthread_mutex_unlock(&t->mu);
}

/* ---- calls ----------------------------------------------------------------- */

/* gRPC's "ipv4:A:P" or "ipv6:[A]:P" (brackets perhaps as %5B %5D) into ss. */
static int parse_tcp_peer(const char *peer, struct sockaddr_storage *ss)
{
	char host[INET6_ADDRSTRLEN + 8], *colon;
	const char *h = peer + 5;
	size_t n;
	int v6 = !strncmp(peer, "ipv6:", 5);
	if (!v6 && strncmp(peer, "ipv4:", 5))
		return -EINVAL;
	h += !strncmp(h, "%5B", 3) ? 3 : *h == '[';
	snprintf(host, sizeof host, "%s", h);
	if (!(colon = strrchr(host, ':')))
		return -EINVAL;
	*colon = 0;
	n = strlen(host);
	if (n >= 3 && !strcmp(host + n - 3, "%5D"))
		host[n - 3] = 0;
	else if (n && host[n - 1] == ']')
		host[n - 1] = 0;
	memset(ss, 0, sizeof *ss);
	if (v6) {
		struct sockaddr_in6 *s6 = (void *)ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)atoi(colon + 1));
		return inet_pton(AF_INET6, host, &s6->sin6_addr) == 1 ? 0 : -EINVAL;
	}
	((struct sockaddr_in *)ss)->sin_family = AF_INET;
	((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)atoi(colon + 1));
	return inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1 ? 0 : -EINVAL;
}

/* The live slot of the connection gRPC names peer, or NULL. Under mu. */
static struct conn *find(struct grpc_conns *t, const char *peer)
{
	struct sockaddr_storage ss;
	char want[INET6_ADDRSTRLEN];
	size_t i;
	if (!strncmp(peer, "fd:", 3)) {
		int fd = atoi(peer + 3);
		for (i = 0; i < 2 * t->cap; i++)
			if (t->tab[i].serial && t->tab[i].peer.is_unix && t->tab[i].fd == fd && alive(&t->tab[i]))
				return &t->tab[i];
		return NULL;
	}
	if (parse_tcp_peer(peer, &ss) < 0)
		return NULL;
	conns_addr_text(&ss, want, sizeof want);
	for (i = 0; i < 2 * t->cap; i++) {
		struct conn *e = &t->tab[i];
		if (e->serial && !e->peer.is_unix && conns_port_num(&e->sa) == conns_port_num(&ss) && !strcmp(e->peer.addr, want) &&
		    alive(e))
			return e;
	}
	return NULL;
}

/* Shut e's connection down: it opened more calls than a client that
 * heeds grpc_max_streams can. Under mu. */
static void cut(struct grpc_conns *t, struct conn *e)
{
	uint64_t one = 1;
	e->cut = 1;
	t->cut++;
	shutdown(e->fd, SHUT_RDWR); /* alive(e) was checked: the descriptor is still its socket */
	/* its calls end within the second: then trim (the accept thread) */
	__atomic_store_n(&t->trim_due_ns, procctl_now_ns() + TRIM_DELAY_NS, __ATOMIC_RELAXED);
	if (write(t->wake, &one, sizeof one) < 0)
		node_log_limited(PROCCTL_LOG_WARN, "trim_not_asked", "error=%s", strerror(errno));
	if (e->peer.is_unix)
		node_log_limited(PROCCTL_LOG_WARN, "connection_cut", "transport=unix uid=%u pid=%u calls=%u "
				 "reason=\"more streams than ten times grpc_max_streams\"", e->peer.uid, e->peer.pid, e->calls);
	else
		node_log_limited(PROCCTL_LOG_WARN, "connection_cut", "transport=tcp addr=%s calls=%u "
				 "reason=\"more streams than ten times grpc_max_streams\"", e->peer.addr, e->calls);
}

int conns_call_begin(struct grpc_conns *t, const char *peer, int reader, struct conn_peer *who,
		     struct conn_ticket *tk)
{
	struct conn *e;
	int root;
	pthread_mutex_lock(&t->mu);
	e = find(t, peer);
	if (e)
		e->called = 1; /* refused or not: its handshake is done */
	*who = e ? e->peer : (struct conn_peer){0};
	*tk = (struct conn_ticket){0};
	root = who->is_unix && who->uid == 0;
	if (t->calls >= t->max_calls || (!root && t->calls >= t->max_calls - t->max_calls / 8) ||
	    (reader && t->reader_calls >= t->max_calls / 4)) {
		t->calls_refused++;
		pthread_mutex_unlock(&t->mu);
		return -EAGAIN;
	}
	t->calls++;
	t->reader_calls += !!reader;
	tk->counted = 1;
	tk->reader = !!reader;
	if (e) {
		tk->slot = (size_t)(e - t->tab);
		tk->serial = e->serial;
		if (++e->calls > CUT_FACTOR * t->max_streams && !e->cut)
			cut(t, e);
	}
	pthread_mutex_unlock(&t->mu);
	return 0;
}

/* Take tk's call off its connection's count, once. Under mu. */
static void off_connection(struct grpc_conns *t, struct conn_ticket *tk)
{
	if (!tk->closed && tk->serial && t->tab[tk->slot].serial == tk->serial)
		t->tab[tk->slot].calls--;
	tk->closed = 1;
}

void conns_call_closed(struct grpc_conns *t, struct conn_ticket *tk)
{
	pthread_mutex_lock(&t->mu);
	off_connection(t, tk);
	pthread_mutex_unlock(&t->mu);
}

void conns_call_end(struct grpc_conns *t, struct conn_ticket *tk)
{
	if (!tk->counted)
		return;
	pthread_mutex_lock(&t->mu);
	t->calls--;
	t->reader_calls -= (uint32_t)tk->reader;
	off_connection(t, tk);
	pthread_mutex_unlock(&t->mu);
}

/* ---- the table's life, its metrics ---------------------------------------- */

int conns_new(const struct node_cfg *cfg, struct grpc_conns **out)
{
	struct grpc_conns *t = calloc(1, sizeof *t);
	if (!t || !(t->tab = calloc(2 * (size_t)cfg->grpc_max_connections, sizeof *t->tab))) {
		free(t);
		return -ENOMEM;
	}
	if ((t->wake = eventfd(0, EFD_CLOEXEC)) < 0 || (t->spare = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		int r = -errno;
		if (t->wake >= 0)
			close(t->wake);
		free(t->tab);
		free(t);
		return r;
	}
	t->cap = cfg->grpc_max_connections;
	t->max_conns = cfg->grpc_max_connections;
	t->max_per_peer = cfg->grpc_max_connections_per_peer;
	t->max_streams = cfg->grpc_max_streams;
	t->max_calls = cfg->grpc_max_calls;
	t->max_pending = t->max_conns / 4 ? t->max_conns / 4 : 1;
	t->max_peer_pending = t->max_per_peer / 8 ? t->max_per_peer / 8 : 1;
	t->fd_ceiling = fd_budget()->tcp;
	t->http_ceiling = fd_budget()->http;
	pthread_mutex_init(&t->mu, NULL);
	conns_hook(t);
	*out = t;
	return 0;
}

void conns_free(struct grpc_conns *t)
{
	if (!t)
		return;
	conns_stop(t);
	conns_hook(NULL);
	if (t->insecure)
		grpc_server_credentials_release(t->insecure);
	close(t->wake);
	if (t->spare >= 0)
		close(t->spare);
	pthread_mutex_destroy(&t->mu);
	free(t->tab);
	free(t);
}

int conns_tcp_state(struct grpc_conns *t, struct conns_tcp *out)
{
	size_t i;
	if (!__atomic_load_n(&t->nports, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&t->mu);
	sweep(t);
	*out = (struct conns_tcp){.open = t->open[TCP], .max = t->max_conns, .pending_max = t->max_pending,
				  .evicted = t->evicted};
	for (i = 0; i < 2 * t->cap; i++)
		out->pending += (uint32_t)pending(&t->tab[i]);
	for (i = 0; i < LIMITS; i++)
		out->refused += t->refused[TCP][i];
	pthread_mutex_unlock(&t->mu);
	return 1;
}

#define ONE(p, type, name, help, v) prom_one(p, &(const struct prom_family){name, type, NULL, help}, v)

void conns_metrics(struct grpc_conns *t, struct prom *p)
{
	static const char *const tr[2] = {"tcp", "unix"};
	size_t i, k;
	pthread_mutex_lock(&t->mu);
	sweep(t);
	prom_family(p, &(const struct prom_family){"procctl_grpc_connections", PROM_GAUGE, NULL,
						  "gRPC connections open, by transport."});
	for (i = 0; i < 2; i++)
		prom_int(p, PROM_LABELS({"transport", tr[i]}), t->open[i]);
	prom_family(p, &(const struct prom_family){"procctl_grpc_connections_refused_total", PROM_COUNTER, NULL,
						  "gRPC connections closed as they came, by transport and the limit they met."});
	for (i = 0; i < 2; i++)
		for (k = 0; k < (i == TCP ? LIMITS : L_PEER); k++) /* the reserve and pending are TCP's */
			prom_int(p, PROM_LABELS({"transport", tr[i]}, {"limit", limit_names[k]}), t->refused[i][k]);
	ONE(p, PROM_COUNTER, "procctl_grpc_connections_evicted_total",
	    "TCP connections on which no call had begun (a handshake not finished) shut down for a new one's slot.",
	    t->evicted);
	ONE(p, PROM_COUNTER, "procctl_grpc_connections_cut_total",
	    "gRPC connections shut down for opening more than ten times grpc_max_streams streams.", t->cut);
	ONE(p, PROM_COUNTER, "procctl_grpc_accept_errors_total",
	    "Failed accepts on the gRPC listeners (EMFILE, ...), each retried.",
	    __atomic_load_n(&t->accept_errors, __ATOMIC_RELAXED));
	ONE(p, PROM_GAUGE, "procctl_grpc_calls_open", "gRPC calls open (grpc_max_calls is the most).", t->calls);
	ONE(p, PROM_COUNTER, "procctl_http_connections_refused_total",
	    "HTTP connections closed as they came: the descriptors kept for the daemon's own work (its Unix socket, "
	    "scans, attaches) were all that was left.",
	    __atomic_load_n(&t->http_refused, __ATOMIC_RELAXED));
	ONE(p, PROM_COUNTER, "procctl_grpc_calls_refused_total", "gRPC calls refused at grpc_max_calls.", t->calls_refused);
	pthread_mutex_unlock(&t->mu);
}
