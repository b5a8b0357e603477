/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_server.c - procctl-node's gRPC side (grpc_server.h), on the gRPC C
 * core and protobuf-c.
 *
 * One completion queue, one thread draining it. Every call is a struct
 * rpc whose tags are its own fields (a tag is a function and its rpc);
 * a reference count covers each batch in flight, the loop while it holds
 * the call, and the watcher list. The C core allows one operation of each
 * type in flight per call, so a stream has at most one message send out:
 * the next is taken from the event history when it completes (pump), and
 * a stream's status waits for its last send. RECV_CLOSE_ON_SERVER is
 * posted when a stream starts, so a client that cancels or dies is seen
 * at once. Requests are decoded when taken (grpc_request.c); NodeService
 * calls go to the loop, health and reflection are answered on this side
 * (grpc_call.c). This file: the server and its thread; the methods
 * served are grpc_methods.c's. */
#define _GNU_SOURCE 1
#include "grpc_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <grpc/grpc_security.h>
#include <grpc/support/log.h>

#include "grpc/health/v1/health.pb-c.h"
#include "grpc_conns.h"
#include "pb_grpc.h"
#include "procctl/v1/node.pb-c.h"
#include "procctl_agent.h"
#include "sys/prom.h"
#include "reflect.h"

extern const unsigned char node_descriptors[];
extern const size_t node_descriptors_len;

/* ---- metrics ----------------------------------------------------------- */

int grpcsrv_tcp_state(struct grpc_srv *s, struct conns_tcp *out)
{
	return conns_tcp_state(s->conns, out);
}

void grpcsrv_metrics(struct grpc_srv *s, struct prom *p)
{
	const struct {
		const char *key;
		uint32_t v;
	} limits[] = {
		{"grpc_max_streams", s->cfg->grpc_max_streams},
		{"grpc_max_calls", s->cfg->grpc_max_calls},
		{"grpc_max_connections", s->cfg->grpc_max_connections},
		{"grpc_max_connections_per_peer", s->cfg->grpc_max_connections_per_peer},
		{"grpc_handshake_ms", s->cfg->grpc_handshake_ms},
		{"grpc_memory_bytes", s->cfg->grpc_memory_bytes},
		{"max_message_bytes", s->cfg->max_message_bytes},
	};
	size_t m, k;
	prom_family(p, &(const struct prom_family){"procctl_grpc_calls_total", PROM_COUNTER, NULL,
						  "gRPC calls answered, by method and status code."});
	for (m = 0; m <= NMETHODS; m++)
		for (k = 0; k < NCODES; k++) {
			uint64_t v = __atomic_load_n(&s->calls[m][k], __ATOMIC_RELAXED);
			if (v)
				prom_int(p, PROM_LABELS({"method", m < NMETHODS ? methods[m].path + 1 : "unknown"},
							{"code", rpc_status_name((unsigned)k)}), v);
		}
	prom_family(p, &(const struct prom_family){"procctl_grpc_streams", PROM_GAUGE, NULL,
						  "Streams open (WatchEvents, health Watch, reflection)."});
	prom_int(p, PROM_NOLABELS, (uint64_t)__atomic_load_n(&s->nwatch, __ATOMIC_RELAXED));
	conns_metrics(s->conns, p);
	prom_family(p, &(const struct prom_family){"procctl_grpc_limit", PROM_GAUGE, NULL,
						  "The gRPC server's limits, by configuration key."});
	for (k = 0; k < sizeof limits / sizeof limits[0]; k++)
		prom_int(p, PROM_LABELS({"key", limits[k].key}), limits[k].v);
}

/* ---- the server ---------------------------------------------------------- */

static void *cq_thread(void *arg)
{
	struct grpc_srv *s = arg;
	pthread_setname_np(pthread_self(), "procctl-grpc-cq");
	for (;;) {
		grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		struct tag *t;
		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type != GRPC_OP_COMPLETE)
			continue;
		t = ev.tag;
		if (t == &s->t_shutdown) {
			pthread_mutex_lock(&s->smu);
			s->shutdown_done = 1;
			pthread_cond_signal(&s->scond);
			pthread_mutex_unlock(&s->smu);
			continue;
		}
		__atomic_load_n(&t->fn, __ATOMIC_ACQUIRE)(t->c, ev.success);
	}
	return NULL;
}

/* An I/O thread: it polls the connections (the transports run here),
 * and never gets an event of its own. The calls' events go to s->cq,
 * which does no I/O: so cq_thread sees a call while the transport may
 * still be reading more, and can count it on its connection in time
 * (grpc_conns.c shuts down one that opens streams past the limit; with
 * one thread for both, a burst of 30,000 streams was all read first).
 * IO_THREADS of them poll the one queue: gRPC hands a ready connection
 * to one poller at a time, and the others go on with the rest. */
static void *io_thread(void *arg)
{
	struct grpc_srv *s = arg;
	pthread_setname_np(pthread_self(), "procctl-grpc-io");
	while (grpc_completion_queue_next(s->io_cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN)
		;
	return NULL;
}

/* The calls' completion queue: no pollset, events only. */
static grpc_completion_queue *events_cq(void)
{
	grpc_completion_queue_attributes a = {1, GRPC_CQ_NEXT, GRPC_CQ_NON_POLLING, NULL};
	return grpc_completion_queue_create(grpc_completion_queue_factory_lookup(&a), &a, NULL);
}

/* gRPC's own lines, at most one a second from each place in its code (a
 * few places share a limit): a peer makes some as often as it likes (a
 * handshake that failed or timed out: 25 a second under a spray). */
static void on_grpc_log(gpr_log_func_args *a)
{
	static struct procctl_ratelimit rl[64];
	enum procctl_log_level l = a->severity == GPR_LOG_SEVERITY_ERROR ? PROCCTL_LOG_ERROR
				   : a->severity == GPR_LOG_SEVERITY_INFO ? PROCCTL_LOG_INFO
									 : PROCCTL_LOG_DEBUG;
	uint32_t h = (uint32_t)a->line;
	const char *c;
	char q[512];
	for (c = a->file; c && *c; c++)
		h = h * 31 + (unsigned char)*c;
	node_log_limit(&rl[h % 64], l, "grpc", "file=%s line=%d msg=\"%s\"", a->file, a->line,
		       node_log_quote(q, sizeof q, a->message));
}

static char *slurp(const char *key, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;
	if (!f) {
		snprintf(err, errlen, "%s %s: %s", key, path, strerror(errno));
		return NULL;
	}
	buf = calloc(1, 1 << 20);
	n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	if (!buf || !n) {
		snprintf(err, errlen, "%s %s: %s", key, path, buf ? "empty" : "out of memory");
		free(buf);
		return NULL;
	}
	return buf;
}

/* Make a Unix socket's directory (an absolute path's), one nobody else
 * can write: whoever may connect has the daemon's write authority, so a
 * socket of another's there would be served as ours. Sticky is not
 * enough (as /tmp): there another user can make the socket's name first,
 * listen on it and take the clients' calls for the daemon's (the daemon
 * then refuses to start, but a client does not know). */
static int unix_dir(const char *path, char *err, size_t errlen)
{
	char dir[NODE_PATH_MAX], why[NODE_PATH_MAX + 128];
	char *slash;
	int fd;

	snprintf(dir, sizeof dir, "%s", path);
	if (dir[0] != '/' || !(slash = strrchr(dir, '/')))
		return 0; /* relative: the working directory, the operator's */
	slash[slash == dir] = 0; /* "/x.sock": "/" */
	if ((fd = procctl_trusted_dir(dir, why, sizeof why)) < 0) {
		snprintf(err, errlen, "unix:%s: %s (the socket's directory must be this daemon's user's and "
				      "writable by nobody else, not even when sticky: another user could make the "
				      "socket's name there first and answer its clients)", path, why);
		return fd;
	}
	close(fd);
	return 0;
}

/* Make a Unix socket's path ready: its directory, and no stale socket. */
static int unix_prepare(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un a;
	struct stat st;
	int fd, r;
	if (strlen(path) >= sizeof a.sun_path) {
		snprintf(err, errlen, "unix:%s: longer than %zu bytes", path, sizeof a.sun_path - 1);
		return -ENAMETOOLONG;
	}
	if ((r = unix_dir(path, err, errlen)) < 0)
		return r;
	if (lstat(path, &st) < 0)
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "unix:%s: exists and is not a socket", path);
		return -EEXIST;
	}
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	memcpy(a.sun_path, path, strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	r = connect(fd, (struct sockaddr *)&a, sizeof a);
	close(fd);
	if (r == 0) {
		snprintf(err, errlen, "unix:%s: another server is listening there", path);
		return -EADDRINUSE;
	}
	node_log(PROCCTL_LOG_INFO, "stale_socket_replaced", "path=%s", path);
	unlink(path);
	return 0;
}

/* mTLS credentials for the TCP listeners. The files are read once now,
 * so that a missing or unreadable one stops the start with its name; then
 * served through a file watcher, so a renewed certificate (cert-manager
 * rewriting its Secret) is used within tls_refresh_s, without a restart.
 * NULL and a message in err when refused. */
static grpc_server_credentials *tls_credentials(const struct node_cfg *cfg, char *err, size_t errlen)
{
	grpc_server_credentials *tls = NULL;
	char *ca_pem = slurp("tls_client_ca", cfg->tls_client_ca, err, errlen), *cert = NULL, *key = NULL;
	int readable = ca_pem && (cert = slurp("tls_cert", cfg->tls_cert, err, errlen)) &&
		       (key = slurp("tls_key", cfg->tls_key, err, errlen));
	free(ca_pem);
	free(cert);
	free(key);
	if (readable) {
		grpc_tls_certificate_provider *prov = grpc_tls_certificate_provider_file_watcher_create(
			cfg->tls_key, cfg->tls_cert, cfg->tls_client_ca, cfg->tls_refresh_s);
		grpc_tls_credentials_options *o = grpc_tls_credentials_options_create();
		grpc_tls_credentials_options_set_certificate_provider(o, prov);
		grpc_tls_credentials_options_watch_root_certs(o);
		grpc_tls_credentials_options_watch_identity_key_cert_pairs(o);
		grpc_tls_credentials_options_set_cert_request_type(o, GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
		tls = grpc_tls_server_credentials_create(o); /* takes o */
		grpc_tls_certificate_provider_release(prov); /* o holds its own reference */
	}
	if (!tls && !err[0])
		snprintf(err, errlen, "TLS: the certificate, key or CA were refused");
	return tls;
}

/* Add every grpc_listen address: Unix sockets and, with tls, TCP over
 * mTLS (plain TCP without). 0, or -errno and a message in err. */
static int listen_all(struct grpc_srv *s, grpc_server_credentials *tls, char *err, size_t errlen)
{
	const struct node_cfg *cfg = s->cfg;
	size_t i;
	gid_t gid;
	int r;
	if ((r = node_cfg_socket_gid(cfg, &gid, err, errlen)) < 0)
		return r;
	for (i = 0; i < cfg->ngrpc_listen; i++) {
		const char *a = cfg->grpc_listen[i];
		int is_unix = !strncmp(a, "unix:", 5);
		char bound[NODE_PATH_MAX + 8];
		grpc_server_credentials *cr;
		if (is_unix) {
			if ((r = unix_prepare(a + 5, err, errlen)) < 0 || (r = conns_listen_unix(s->conns, a + 5, gid, err, errlen)) < 0)
				return r;
			snprintf(s->unix_paths[s->nunix++], NODE_PATH_MAX, "%s", a + 5);
			node_log(PROCCTL_LOG_INFO, "listening", "addr=%s mode=0660%s%s", a,
				 cfg->socket_group[0] ? " group=" : "", cfg->socket_group);
			continue;
		}
		cr = tls ? tls : grpc_insecure_server_credentials_create();
		r = grpc_server_add_http2_port(s->server, a, cr);
		if (cr != tls)
			grpc_server_credentials_release(cr);
		if (!r) {
			snprintf(err, errlen, "grpc_listen %s: cannot listen there (in use, or not an address)", a);
			return -EADDRNOTAVAIL;
		}
		node_cfg_bound_addr(a, (unsigned)r, bound, sizeof bound); /* PORT 0: the one picked */
		if ((r = conns_watch_tcp(s->conns, r, err, errlen)) < 0)
			return r;
		node_log(PROCCTL_LOG_INFO, "listening", "addr=%s%s", bound, tls ? " tls=mtls" : " tls=none");
	}
	return 0;
}

/* After the server is destroyed: the I/O threads end, their queue goes. */
static void io_stop(struct grpc_srv *s)
{
	size_t i;
	grpc_completion_queue_shutdown(s->io_cq);
	for (i = 0; i < s->io_started; i++)
		pthread_join(s->io[i], NULL);
	if (!s->io_started)
		while (grpc_completion_queue_next(s->io_cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
		       GRPC_QUEUE_SHUTDOWN)
			;
	grpc_completion_queue_destroy(s->io_cq);
}

static grpc_arg int_arg(const char *key, uint32_t v)
{
	grpc_arg a = {.type = GRPC_ARG_INTEGER, .key = (char *)key};
	a.value.integer = v > INT32_MAX ? INT32_MAX : (int)v;
	return a;
}

/* The server's own limits, from cfg (grpc_conns.c adds what gRPC 1.51
 * has not): messages, streams per connection, the handshake's time, and a
 * memory quota (the core closes idle connections and refuses buffers near
 * it). The server holds its own reference to the quota. */
static grpc_server *server_new(const struct node_cfg *cfg)
{
	grpc_resource_quota *q = grpc_resource_quota_create("procctl-node");
	grpc_arg args[] = {
		int_arg(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, cfg->max_message_bytes),
		int_arg(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, cfg->max_message_bytes),
		int_arg(GRPC_ARG_MAX_CONCURRENT_STREAMS, cfg->grpc_max_streams),
		int_arg(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, cfg->grpc_handshake_ms),
		{.type = GRPC_ARG_POINTER, .key = (char *)GRPC_ARG_RESOURCE_QUOTA,
		 .value.pointer = {.p = q, .vtable = grpc_resource_quota_arg_vtable()}},
	};
	grpc_channel_args ca = {sizeof args / sizeof args[0], args};
	grpc_server *server;
	grpc_resource_quota_resize(q, cfg->grpc_memory_bytes);
	server = grpc_server_create(&ca, NULL);
	grpc_resource_quota_unref(q);
	return server;
}

/* gRPC's one initialisation that is never undone. gRPC 1.51 covers a
 * write that would block with a backup poller: a closure on its executor
 * that polls for up to 10 s, and that nothing wakes once the connections
 * are gone. The last grpc_shutdown joins the executor, so it waited for
 * that poll to run out: up to 10 s after the I/O threads left, before
 * NODE.lock was released (after a stop that cut streams with unsent
 * bytes). gRPC stays up until the process exits instead. */
static void grpc_hold(void)
{
	grpc_init();
}

/* gRPC started, and s's server made on it with its two queues: the
 * loop's (cq) and the I/O threads'. */
static void server_open(struct grpc_srv *s)
{
	static pthread_once_t held = PTHREAD_ONCE_INIT;
	gpr_set_log_function(on_grpc_log);
	pthread_once(&held, grpc_hold);
	grpc_init();
	s->server = server_new(s->cfg);
	s->cq = events_cq();
	s->io_cq = grpc_completion_queue_create_for_next(NULL);
	grpc_server_register_completion_queue(s->server, s->cq, NULL);
	grpc_server_register_completion_queue(s->server, s->io_cq, NULL);
}

/* The I/O threads, then the methods registered. 0, or -errno and a
 * message in err (the threads started are io_stop's). */
static int io_start(struct grpc_srv *s, char *err, size_t errlen)
{
	size_t i;
	int r;
	for (i = 0; i < IO_THREADS; i++) {
		if ((r = pthread_create(&s->io[i], NULL, io_thread, s))) {
			snprintf(err, errlen, "gRPC's I/O threads: %s", strerror(r));
			return -r;
		}
		s->io_started++;
	}
	for (i = 0; i < NMETHODS; i++)
		s->handle[i] = grpc_server_register_method(s->server, methods[i].path, NULL, GRPC_SRM_PAYLOAD_NONE, 0);
	return 0;
}

/* Every grpc_listen address added, TCP's with the TLS credentials when
 * configured (released here either way). 0, or -errno and a message. */
static int listen_start(struct grpc_srv *s, char *err, size_t errlen)
{
	const struct node_cfg *cfg = s->cfg;
	grpc_server_credentials *tls = NULL;
	int r;
	if (cfg->tls_cert[0] && !(tls = tls_credentials(cfg, err, errlen)))
		return -EINVAL;
	r = listen_all(s, tls, err, errlen);
	if (tls)
		grpc_server_credentials_release(tls);
	return r;
}

/* The accept thread and the gRPC thread, on the started server. 0, or
 * -errno and a message. */
static int threads_start(struct grpc_srv *s, char *err, size_t errlen)
{
	int r;
	if ((r = conns_serve(s->conns, s->server)) < 0) {
		snprintf(err, errlen, "the accept thread: %s", strerror(-r));
		return r;
	}
	if ((r = pthread_create(&s->thread, NULL, cq_thread, s))) {
		snprintf(err, errlen, "the gRPC thread: %s", strerror(r));
		return -r;
	}
	s->started = 1;
	return 0;
}

/* A start that failed once the server was made (and started: shutdown
 * wants a started server) is undone, s freed and gRPC shut down: r. */
static int start_undo(struct grpc_srv *s, int r)
{
	size_t i;
	conns_stop(s->conns);
	s->shutting_down = 1;
	grpc_server_shutdown_and_notify(s->server, s->cq, &s->t_shutdown);
	grpc_server_cancel_all_calls(s->server);
	rpc_cq_close(s);
	while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN)
		;
	rpc_fail_later(s);
	grpc_server_destroy(s->server);
	grpc_completion_queue_destroy(s->cq);
	io_stop(s);
	for (i = 0; i < s->nunix; i++)
		unlink(s->unix_paths[i]);
	conns_free(s->conns);
	reflect_free(s->reflect);
	free(s);
	grpc_shutdown_blocking();
	return r;
}

int grpcsrv_start(const struct node_cfg *cfg, struct node *n, struct grpc_srv **out, char *err, size_t errlen)
{
	struct grpc_srv *s = calloc(1, sizeof *s);
	size_t i;
	int r;

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->cfg = cfg;
	s->node = n;
	pthread_mutex_init(&s->wmu, NULL);
	pthread_mutex_init(&s->smu, NULL);
	pthread_cond_init(&s->scond, NULL);
	if ((r = reflect_new(&s->reflect, node_descriptors, node_descriptors_len)) < 0) {
		snprintf(err, errlen, "reflection: the embedded descriptors: %s", strerror(-r));
		free(s);
		return r;
	}
	if ((r = conns_new(cfg, &s->conns)) < 0) {
		snprintf(err, errlen, "the connection table: %s", strerror(-r));
		reflect_free(s->reflect);
		free(s);
		return r;
	}
	server_open(s);
	if ((r = io_start(s, err, errlen)) < 0 || (r = listen_start(s, err, errlen)) < 0) {
		grpc_server_start(s->server); /* shutdown wants a started server */
		return start_undo(s, r);
	}
	grpc_server_start(s->server);
	s->t_shutdown.c = NULL;
	if ((r = threads_start(s, err, errlen)) < 0)
		return start_undo(s, r);
	for (i = 0; i < NMETHODS; i++) {
		int k, slots = methods[i].nm == NODE_WATCH_EVENTS && methods[i].h == H_NODE ? WATCH_SLOTS : SLOTS;
		for (k = 0; k < slots; k++)
			grpcsrv_post(s, &methods[i]);
	}
	for (i = 0; i < SLOTS; i++)
		grpcsrv_post(s, NULL);
	*out = s;
	return 0;
}

void grpcsrv_stop(struct grpc_srv *s, unsigned grace_ms)
{
	struct timespec until;
	struct rpc *c;
	size_t i;
	int done;

	__atomic_store_n(&s->shutting_down, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&s->wmu);
	for (c = s->watchers; c; c = c->wnext) {
		pthread_mutex_lock(&c->mu);
		rpc_end_stream(c, NODE_UNAVAILABLE, "procctl-node is shutting down");
		pthread_mutex_unlock(&c->mu);
	}
	pthread_mutex_unlock(&s->wmu);
	conns_stop(s->conns); /* no new connections */
	conns_drain(s->conns, DRAIN_MS); /* the calls answered (UNAVAILABLE since the loop ended), the rest cut */
	grpc_server_shutdown_and_notify(s->server, s->cq, &s->t_shutdown);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += grace_ms / 1000;
	until.tv_nsec += (long)(grace_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&s->smu);
	while (!s->shutdown_done && pthread_cond_timedwait(&s->scond, &s->smu, &until) == 0)
		;
	done = s->shutdown_done;
	pthread_mutex_unlock(&s->smu);
	if (!done) {
		node_log(PROCCTL_LOG_WARN, "calls_cancelled", "reason=\"grace period over\" grace_ms=%u", grace_ms);
		grpc_server_cancel_all_calls(s->server);
		pthread_mutex_lock(&s->smu);
		while (!s->shutdown_done)
			pthread_cond_wait(&s->scond, &s->smu);
		pthread_mutex_unlock(&s->smu);
	}
	grpc_server_cancel_all_calls(s->server); /* streams still open */
	grpc_server_destroy(s->server);
	rpc_cq_close(s);
	pthread_join(s->thread, NULL);
	rpc_fail_later(s);
	grpc_completion_queue_destroy(s->cq);
	io_stop(s);
	for (i = 0; i < s->nunix; i++)
		unlink(s->unix_paths[i]);
	conns_free(s->conns);
	reflect_free(s->reflect);
	pthread_mutex_destroy(&s->wmu);
	pthread_mutex_destroy(&s->smu);
	pthread_cond_destroy(&s->scond);
	free(s);
	grpc_shutdown_blocking();
}

