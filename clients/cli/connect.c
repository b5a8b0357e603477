/* SPDX-License-Identifier: Apache-2.0 */
/* connect.c - the channel to the daemon: its Unix socket (whose listener
 * must be root, this user or --socket-uid before anything is sent), or TCP
 * with TLS (mTLS with a client certificate; a server name to verify other
 * than the address dialed, as a controller dialing a pod IP needs), or
 * plain TCP when asked for by name. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/log.h>

#include "cli.h"

#define PEM_MAX (1u << 20) /* a CA bundle is a few hundred KiB at most */

struct cli_target cli_to;
grpc_channel *cli_ch;
grpc_completion_queue *cli_cq;

int read_all(int fd, size_t max, uint8_t **out, size_t *len)
{
	size_t cap = 4096;
	ssize_t n = 0;
	*len = 0;
	*out = malloc(cap + 1);
	while (*out && (n = read(fd, *out + *len, cap - *len)) > 0) {
		*len += (size_t)n;
		if (*len == cap) {
			uint8_t *more = cap < max ? realloc(*out, cap * 2 + 1) : NULL;
			if (!more) {
				free(*out);
				*out = NULL;
				return -EFBIG;
			}
			*out = more;
			cap *= 2;
		}
	}
	if (!*out)
		return -ENOMEM;
	if (n < 0) {
		int e = -errno;
		free(*out);
		*out = NULL;
		return e;
	}
	(*out)[*len] = 0;
	return 0;
}

/* The file of option opt, NUL-terminated, malloc'd; NULL after saying why. */
static char *read_pem(const char *opt, const char *path)
{
	uint8_t *b = NULL;
	size_t len;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;
	if (fd < 0) {
		fprintf(stderr, "procctl: %s %s: %s\n", opt, path, strerror(errno));
		return NULL;
	}
	r = read_all(fd, PEM_MAX, &b, &len);
	close(fd);
	if (r < 0)
		fprintf(stderr, "procctl: %s %s: %s\n", opt, path,
			r == -EFBIG ? "over 1 MiB: not a PEM file" : strerror(-r));
	else if (!len || memchr(b, 0, len))
		fprintf(stderr, "procctl: %s %s: %s\n", opt, path, len ? "not a PEM file (a NUL byte)" : "empty");
	else
		return (char *)b;
	free(b);
	return NULL;
}

/* 1 when s is HOST:PORT (HOST a name, an IPv4 address or [IPv6]). */
static int host_port(const char *s)
{
	const char *c = strrchr(s, ':');
	long port;
	if (!c || c == s || (s[0] == '[' && c[-1] != ']') || parse_int(c + 1, 1, 65535, &port) < 0)
		return 0;
	return s[0] == '[' || !memchr(s, ':', (size_t)(c - s)); /* a bare IPv6 address needs brackets */
}

int target_check(void)
{
	const struct cli_target *t = &cli_to;
	const char *tls = t->ca ? "--tls-ca" : t->cert ? "--tls-cert" : t->key ? "--tls-key" :
			  t->server_name ? "--tls-server-name" : NULL;
	if (t->server && t->socket)
		return bad_usage("--server", "give one of --socket (the node's Unix socket) and --server (TCP)");
	if (t->server && !host_port(t->server))
		return bad_usage(t->server, "--server takes HOST:PORT (an IPv6 address in brackets: [::1]:9443)");
	if (!t->server && (tls || t->plaintext))
		return bad_usage(tls ? tls : "--plaintext", "goes with --server (the Unix socket has no TLS)");
	if (t->plaintext && tls)
		return bad_usage(tls, "--plaintext is TCP without TLS: give one of them");
	if (!t->cert != !t->key)
		return bad_usage(t->cert ? "--tls-cert" : "--tls-key", "the client certificate takes both --tls-cert and --tls-key");
	return 0;
}

/* The TLS credentials of the options, or NULL after saying why. */
static grpc_channel_credentials *tls_credentials(void)
{
	grpc_ssl_pem_key_cert_pair pair = {NULL, NULL};
	grpc_channel_credentials *cr = NULL;
	char *ca = cli_to.ca ? read_pem("--tls-ca", cli_to.ca) : NULL;
	char *cert = cli_to.cert ? read_pem("--tls-cert", cli_to.cert) : NULL;
	char *key = cli_to.key ? read_pem("--tls-key", cli_to.key) : NULL;
	if ((!cli_to.ca || ca) && (!cli_to.cert || cert) && (!cli_to.key || key)) {
		pair.private_key = key;
		pair.cert_chain = cert;
		cr = grpc_ssl_credentials_create(ca, cert ? &pair : NULL, NULL, NULL); /* ca NULL: the system's roots */
		if (!cr)
			fprintf(stderr, "procctl: the TLS files were refused (--tls-ca, --tls-cert, --tls-key)\n");
	}
	free(ca);
	free(cert);
	free(key);
	return cr;
}

/* Why the Unix socket at path takes no call (connected to again, as
 * gRPC did): 1 with why set, or 0 when a connection goes through. */
static int socket_why(const char *path, char *why, size_t len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd, e;
	if (stat(path, &st) < 0) {
		e = errno;
		snprintf(why, len, "%s%s", strerror(e), e == ENOENT ? " (is procctl-node running? --socket or "
			 "$PROCCTL_SOCKET name another)" : e == EACCES ? " (its directory is closed to this user)" : "");
		return 1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(why, len, "not a socket");
		return 1;
	}
	if (strlen(path) >= sizeof sa.sun_path || (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return 0;
	memcpy(sa.sun_path, path, strlen(path));
	e = connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ? errno : 0;
	close(fd);
	if (e == ECONNREFUSED) {
		snprintf(why, len, "no daemon listens there (a socket left by a procctl-node that stopped?)");
	} else if (e == EACCES) {
		struct passwd *pw = getpwuid(st.st_uid);
		struct group *gr = getgrgid(st.st_gid);
		char u[32], g[32];
		snprintf(u, sizeof u, "%u", (unsigned)st.st_uid);
		snprintf(g, sizeof g, "%u", (unsigned)st.st_gid);
		snprintf(why, len, "permission denied: the socket is mode %04o, of user %s and group %s: run as "
			 "root%s%s", (unsigned)(st.st_mode & 07777), pw ? pw->pw_name : u, gr ? gr->gr_name : g,
			 st.st_mode & 0060 ? ", or as a member of group " : "", st.st_mode & 0060 ? (gr ? gr->gr_name : g) : "");
	} else {
		return e ? (snprintf(why, len, "%s", strerror(e)), 1) : 0;
	}
	return 1;
}

#define BUSY                                                                                          \
	"; or it had no connection free for one more not yet authenticated, and closed this one as it " \
	"came (procctl_grpc_connections_refused_total): try again"

/* What TLS's details of an UNAVAILABLE say about the options, or NULL. */
static const char *tls_hint(const char *details)
{
	if (!details)
		return NULL;
	if (strstr(details, "not in peer certificate"))
		return cli_to.server_name ? "the daemon's certificate does not carry --tls-server-name"
					  : "the daemon's certificate does not carry the address dialed: "
					    "--tls-server-name NAME names a name it does carry";
	if (strstr(details, "certificate verify failed"))
		return cli_to.ca ? "the daemon's certificate is not of --tls-ca" : "the daemon's certificate is not of "
										  "a CA the system trusts: --tls-ca FILE";
	if (strstr(details, "wrong version number"))
		return "the TLS handshake got no TLS back: a listener without TLS (--plaintext, where the "
		       "daemon has insecure_tcp), or not the daemon's gRPC port";
	/* A refused certificate and a connection the daemon had no slot for
	 * read the same here (a close, no alert): both are said. */
	if (strstr(details, "Socket closed") || strstr(details, "Connection reset"))
		return cli_to.plaintext ? "the daemon closed the connection: it wants TLS (no --plaintext)" BUSY
		       : cli_to.cert    ? "the daemon closed the connection during the handshake: it refused this "
					  "client certificate, which must be of its tls_client_ca and for client "
					  "authentication (extendedKeyUsage clientAuth)" BUSY
					: "the daemon closed the connection during the handshake: it wants a client "
					  "certificate of its tls_client_ca (--tls-cert, --tls-key)" BUSY;
	return NULL;
}

int unavailable_why(const char *details, char *why, size_t len)
{
	const char *h;
	if (!cli_to.server)
		return socket_why(cli_to.socket, why, len);
	if (!(h = tls_hint(details)))
		return 0;
	snprintf(why, len, "%s (%s)", h, details);
	return 1;
}

const char *target_name(void)
{
	return cli_to.server ? cli_to.server : cli_to.socket;
}

static void quiet(gpr_log_func_args *args)
{
	(void)args;
}

/* The daemon's Unix socket, connected, its listener's uid checked before
 * a byte goes to it: root, this user, or --socket-uid. In a directory
 * others may write (sticky or not, as /tmp) anyone can listen at the
 * daemon's path before it does. The fd; -2 no connection (not said);
 * -1 refused (said). */
static int socket_checked(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct ucred cr;
	socklen_t crlen = sizeof cr;
	struct passwd *pw;
	int64_t end = cli_now_ms() + cli_timeout_ms;
	int fd;
	if (strlen(cli_to.socket) >= sizeof sa.sun_path) {
		fprintf(stderr, "procctl: %s: longer than a Unix socket's path (%zu bytes)\n", cli_to.socket,
			sizeof sa.sun_path - 1);
		return -1;
	}
	memcpy(sa.sun_path, cli_to.socket, strlen(cli_to.socket));
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
		return -2;
	/* A listener whose backlog is full (a squatter's, or a stopped
	 * daemon's) makes a blocking connect wait for ever: EAGAIN is tried
	 * again until --timeout. */
	while (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (errno != EAGAIN || cli_now_ms() >= end) {
			close(fd);
			return -2;
		}
		usleep(10000);
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0) {
		close(fd);
		return -2;
	}
	if (cr.uid == 0 || cr.uid == geteuid() || (cli_to.socket_uid >= 0 && cr.uid == (uid_t)cli_to.socket_uid))
		return fd;
	close(fd);
	pw = getpwuid(cr.uid);
	fprintf(stderr, "procctl: %s: the process listening there (pid %d) runs as uid %u%s%s%s, neither root nor "
		"this user: not procctl-node, or one run by that user (anyone who can write the socket's "
		"directory, sticky or not, can listen at its path); nothing was sent. A daemon of that user's: "
		"--socket-uid %u (or PROCCTL_SOCKET_UID=%u)\n", cli_to.socket, (int)cr.pid, (unsigned)cr.uid,
		pw ? " (" : "", pw ? pw->pw_name : "", pw ? ")" : "", (unsigned)cr.uid, (unsigned)cr.uid);
	return -1;
}

void connect_reset(void)
{
	if (cli_ch && !cli_to.server) {
		grpc_channel_destroy(cli_ch);
		cli_ch = NULL;
		grpc_completion_queue_shutdown(cli_cq);
		grpc_completion_queue_destroy(cli_cq);
		cli_cq = NULL;
		grpc_shutdown_blocking();
	}
}

/* The Unix socket, before gRPC's channel to it: there, and its listener
 * checked (socket_checked). 0, or what connect_once returns: -1 refused
 * (said), -2 no connection (not said). Nothing to do over TCP. */
static int socket_first(void)
{
	int fd = -1;
	if (!cli_to.server && access(cli_to.socket, F_OK) < 0) {
		char why[256];
		if (!socket_why(cli_to.socket, why, sizeof why))
			snprintf(why, sizeof why, "%s", strerror(ENOENT));
		fprintf(stderr, "procctl: %s: %s\n", cli_to.socket, why);
		return -1;
	}
	/* The listener checked on a connection of its own, just before
	 * gRPC's: in a directory nobody else may write (procctl-node's
	 * rule) nobody can put another in its place between the two. Not
	 * gRPC's channel on this very fd (grpc_channel_create_from_fd): its
	 * transport ignores the memory quota below, and a reply of 2 GiB
	 * was taken in whole. */
	if (!cli_to.server) {
		if ((fd = socket_checked()) < 0)
			return fd;
		close(fd);
	}
	return 0;
}

/* The channel's arguments, into args (arg: room for 5): the reply's
 * limits, the reconnect backoff and the server name to verify. The
 * memory quota is returned, for the caller to let go once the channel
 * holds it. */
static grpc_resource_quota *channel_args(grpc_channel_args *args, grpc_arg *arg)
{
	grpc_resource_quota *q;
	/* No reply larger than the daemon may send (its max_message_bytes is
	 * at most 64 MiB). gRPC checks that only once a message is whole, and
	 * takes it all in first (a reply that says 2 GiB grew procctl to
	 * 1.8 GB before it was refused): a memory quota bounds what the
	 * transport buffers, so such a reply ends RESOURCE_EXHAUSTED at about
	 * 100 MB, while a legitimate 64 MiB one still fits. */
	arg[0].type = GRPC_ARG_INTEGER;
	arg[0].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
	arg[0].value.integer = CLI_REPLY_MAX;
	q = grpc_resource_quota_create("procctl");
	grpc_resource_quota_resize(q, CLI_REPLY_MAX + (32 << 20));
	arg[1].type = GRPC_ARG_POINTER;
	arg[1].key = (char *)GRPC_ARG_RESOURCE_QUOTA;
	arg[1].value.pointer.p = q;
	arg[1].value.pointer.vtable = grpc_resource_quota_arg_vtable();
	/* Reconnect soon: a daemon restarted serves again within about a
	 * second, and `health --wait` must not sit out gRPC's default backoff
	 * (1 s, growing to 120 s) meanwhile: over TCP 250 ms at first, at
	 * most 5 s apart; on the Unix socket 100 ms, at most 1 s (health
	 * --wait makes a new channel, checked again, after each failed
	 * question). (Not
	 * GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: the C core takes it as the
	 * time a connection has to come up, and 100 ms cut connections that
	 * had just been accepted.) */
	arg[2].type = arg[3].type = GRPC_ARG_INTEGER;
	arg[2].key = (char *)GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS;
	arg[2].value.integer = cli_to.server ? 250 : 100;
	arg[3].key = (char *)GRPC_ARG_MAX_RECONNECT_BACKOFF_MS;
	arg[3].value.integer = cli_to.server ? 5000 : 1000;
	if (cli_to.server_name) { /* the name the server's certificate must carry, not the address's */
		arg[4].type = GRPC_ARG_STRING;
		arg[4].key = (char *)GRPC_SSL_TARGET_NAME_OVERRIDE_ARG;
		arg[4].value.string = (char *)cli_to.server_name;
		args->num_args = 5;
	}
	return q;
}

int connect_once(void)
{
	char target[300];
	grpc_channel_credentials *cr;
	grpc_arg arg[5];
	grpc_channel_args args = {4, arg};
	grpc_resource_quota *q;
	int err;
	if (cli_ch)
		return 0;
	if ((err = socket_first()) < 0)
		return err;
	if ((size_t)snprintf(target, sizeof target, "%s%s", cli_to.server ? "dns:///" : "unix:", target_name()) >=
	    sizeof target) {
		fprintf(stderr, "procctl: %s: too long\n", target_name());
		return -1;
	}
	gpr_set_log_verbosity(GPR_LOG_SEVERITY_ERROR);
	if (!getenv("GRPC_VERBOSITY"))
		gpr_set_log_function(quiet); /* a failure's status says what its log line would */
	grpc_init();
	cr = cli_to.server && !cli_to.plaintext ? tls_credentials() : grpc_insecure_credentials_create();
	if (!cr) {
		grpc_shutdown_blocking();
		return -1;
	}
	q = channel_args(&args, arg);
	cli_ch = grpc_channel_create(target, cr, &args);
	grpc_resource_quota_unref(q); /* the channel holds its own */
	grpc_channel_credentials_release(cr);
	cli_cq = grpc_completion_queue_create_for_pluck(NULL);
	return 0;
}
