/* SPDX-License-Identifier: Apache-2.0 */
/* procctl-node - the node daemon: finds the procctl processes of this
 * node, owns their leases and grants, and serves procctl.v1.NodeService
 * over gRPC (proto/procctl/v1/node.proto).
 *
 * Usage: procctl-node [--config FILE] [--KEY VALUE]... [--uninstall]
 *                     [--check-config] [--version] [--help] [--completion SHELL]
 *
 * With no arguments it runs on the embedded defaults (server/config/config.h).
 * Exit status: 0 stopped cleanly, 1 failed while running, 2 bad usage or
 * configuration (nothing was started). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/cmdline.h"
#include "config/config.h"
#include "kube/kubewatch.h"
#include "grpc/grpc_conns.h"
#include "grpc/grpc_server.h"
#include "http/http.h"
#include "http/httpbody.h"
#include "node/node.h"
#include "sys/nodelock.h"
#include "procctl_agent.h"
#include "sys/procself.h"
#include "sys/prom.h"
#include "grpc/selfprobe.h"
#include "sys/sdnotify.h"

#define GRACE_MS 2000 /* calls in flight at shutdown get this long */

static struct node *volatile the_node; /* while serving: the signal handler stops it */

static volatile sig_atomic_t stopping;
static sigset_t wait_mask; /* the main thread's while it sleeps (signals_catch) */

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
	if (the_node)
		node_stop(the_node);
}

static void on_hup(int sig)
{
	(void)sig;
	if (the_node)
		node_reload(the_node); /* on standby there is nothing to read it for yet */
}

static void on_lib_log(enum procctl_log_level level, const char *event, const char *fields, void *arg)
{
	(void)arg;
	node_log(level, event, "%s", fields);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: procctl-node [--config FILE] [--KEY VALUE]... [--uninstall] [--check-config]\n"
		"                    [--version] [--help] [--completion bash|zsh]\n"
		"\n"
		"The procctl node daemon: attaches to every procctl process on this node, owns\n"
		"their leases and exclusive-resource grants, and serves procctl.v1.NodeService\n"
		"(plus grpc.health.v1 and server reflection) over gRPC.\n"
		"\n"
		"  --config FILE        a config file (procctl-node(8)); the flags override it, wherever they stand\n"
		"  --uninstall          on exit revert every process (default: hand off, so a\n"
		"                       successor daemon takes over with no change in the processes)\n"
		"  --check-config       validate the configuration (as root: its directories too), and exit (0: valid)\n"
		"  --version            print the version and exit\n"
		"  --help               this text\n"
		"  --completion SHELL   the completion script of bash or zsh for these flags, and exit\n"
		"Every flag takes its value as --FLAG VALUE or --FLAG=VALUE.\n"
		"\n");
	node_cfg_usage(f);
	fprintf(f, "\n"
		   "With no configuration it runs on the defaults above. A second procctl-node\n"
		   "started on the same node waits on standby (binding nothing) and takes over\n"
		   "when the first stops. SIGTERM or SIGINT stops it; SIGHUP reads --config again.\n");
}

/* The loop's hook, to the gRPC side: it wakes its watchers when events
 * come. */
static void grpc_changed(void *arg)
{
	grpcsrv_kick(arg);
}

/* Tell systemd (Type=notify, sd_notify(3)); without $NOTIFY_SOCKET,
 * nothing. A failure is said, not fatal: the daemon serves regardless. */
static void notify(const char *state)
{
	int r = sdnotify(state);
	if (r < 0)
		node_log_limited(PROCCTL_LOG_WARN, "notify_failed", "socket=%s error=\"%s\"", getenv("NOTIFY_SOCKET"),
				 strerror(-r));
}

/* The loop's hooks, to systemd: serving (the sockets listen, the first
 * scans are done), and alive (WatchdogSec's ping, from the loop). */
static void notify_ready(void *arg)
{
	(void)arg;
	notify("READY=1\nSTATUS=serving");
}

/* The self-probe of the gRPC API (NULL: none): the watchdog's ping and
 * /healthz follow it. Set before the serving side starts, cleared after. */
static struct selfprobe *the_probe;

static void notify_alive(void *arg)
{
	(void)arg;
	selfprobe_kick(the_probe); /* its answer counts at the next tick */
	if (selfprobe_alive(the_probe)) /* a dead API: no ping, and systemd restarts the daemon */
		notify("WATCHDOG=1");
}

#define LOOP_STUCK_NS (30 * 1000000000ll) /* a turn this long: the loop hangs */

/* /healthz: the loop is not stuck in one turn, and the gRPC API answers
 * its own health checks. */
static int api_alive(void *arg, char *why, size_t whylen)
{
	int64_t busy = node_busy_ns(arg);
	selfprobe_kick(the_probe); /* answered from the probes before; this one counts at the next */
	if (busy > LOOP_STUCK_NS) {
		snprintf(why, whylen, "the event loop has been in one turn for %lld s", (long long)(busy / 1000000000));
		return 0;
	}
	if (!selfprobe_alive(the_probe)) {
		snprintf(why, whylen, "the gRPC API did not answer its last %d health checks on its Unix socket",
			 SELFPROBE_MISSES);
		return 0;
	}
	return 1;
}

/* The self-probe's figures, for /metrics. */
static void probe_metrics(struct prom *p, void *arg)
{
	uint64_t probes, misses;
	(void)arg;
	selfprobe_counts(the_probe, &probes, &misses);
	prom_one(p, &(const struct prom_family){"procctl_api_alive", PROM_GAUGE, NULL,
						"1 while the gRPC API answers the daemon's own health checks (health_probe_ms; "
						"1 without them)."},
		 (uint64_t)selfprobe_alive(the_probe));
	prom_one(p, &(const struct prom_family){"procctl_api_probes_total", PROM_COUNTER, NULL,
						"Health checks the daemon made of its own gRPC API (its Unix socket)."},
		 probes);
	prom_one(p, &(const struct prom_family){"procctl_api_probe_misses_total", PROM_COUNTER, NULL,
						"Of them, those not answered within health_probe_ms."},
		 misses);
}

/* The log's figures, for /metrics. */
static void log_metrics(struct prom *p, void *arg)
{
	(void)arg;
	prom_one(p, &(const struct prom_family){"procctl_log_lines_dropped_total", PROM_COUNTER, NULL,
						"Log lines dropped because stderr was not read as fast as they came (each "
						"time said by a log_lines_dropped line)."},
		 node_log_dropped());
}

/* /healthz's report of the gRPC TCP listeners. */
static int tcp_state(void *arg, struct http_tcp_state *st)
{
	struct conns_tcp c;
	if (!grpcsrv_tcp_state(arg, &c))
		return 0;
	*st = (struct http_tcp_state){c.open, c.max, c.pending, c.pending_max, c.refused, c.evicted};
	return 1;
}

/* The probe on the first Unix listener, when health_probe_ms asks for one. */
static void probe_start(const struct node_cfg *cfg)
{
	size_t i;
	int r;
	for (i = 0; cfg->health_probe_ms && i < cfg->ngrpc_listen; i++) {
		if (strncmp(cfg->grpc_listen[i], "unix:", 5))
			continue;
		if ((r = selfprobe_start(cfg->grpc_listen[i], (int64_t)cfg->health_probe_ms * 1000000, &the_probe)) < 0)
			node_log(PROCCTL_LOG_WARN, "health_probe_failed", "error=%s reason=\"/healthz tells of the loop alone\"",
				 strerror(-r));
		return;
	}
}

/* WATCHDOG=1 while the loop does not run: handing off, and standing by
 * for NODE.lock (its wait is by design, not a hang: systemd's watchdog
 * stays armed once READY=1 came). The loop pings from its own timers. */
static struct {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int64_t every_ns;
	int on;
} pinger = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *pinger_run(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pinger.mu);
	while (pinger.on) {
		struct timespec until;
		int64_t due = procctl_now_ns() + pinger.every_ns;
		pthread_mutex_unlock(&pinger.mu);
		notify("WATCHDOG=1");
		pthread_mutex_lock(&pinger.mu);
		until.tv_sec = (time_t)(due / 1000000000);
		until.tv_nsec = (long)(due % 1000000000);
		while (pinger.on && pthread_cond_timedwait(&pinger.cv, &pinger.mu, &until) == 0)
			;
	}
	pthread_mutex_unlock(&pinger.mu);
	return NULL;
}

/* WatchdogSec's pings every half of it, at least 10 ms apart; none
 * without a watchdog. */
static void pinger_init(void)
{
	pthread_condattr_t ca;
	if ((pinger.every_ns = sdnotify_watchdog_ns() / 2) && pinger.every_ns < 10000000)
		pinger.every_ns = 10000000;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* procctl_now_ns's clock */
	pthread_cond_init(&pinger.cv, &ca);
	pthread_condattr_destroy(&ca);
}

/* Start pinging (nothing without a watchdog, or when pinging already). */
static void pinger_start(void)
{
	if (!pinger.every_ns || pinger.on)
		return;
	pinger.on = 1;
	if (pthread_create(&pinger.thread, NULL, pinger_run, NULL)) {
		pinger.on = 0;
		node_log(PROCCTL_LOG_WARN, "pinger_failed", "reason=\"no thread: a standby longer than WatchdogSec is "
			 "restarted\"");
	}
}

static void pinger_stop(void)
{
	if (!pinger.on)
		return;
	pthread_mutex_lock(&pinger.mu);
	pinger.on = 0;
	pthread_cond_signal(&pinger.cv);
	pthread_mutex_unlock(&pinger.mu);
	pthread_join(pinger.thread, NULL);
}

/* The gRPC side's metrics, for HTTP's /metrics. */
static void grpc_metrics(struct prom *p, void *arg)
{
	grpcsrv_metrics(arg, p);
}

/* Each process with regions attached holds two descriptors (its pidfd
 * and /proc/<pid>/mem, shared by its regions; another while a state read
 * is out), and each region its event socket (PROCCTL_EVENT_FD): take
 * every descriptor the hard limit allows, and say when even that is short
 * of max_regions at one region a process, each with a socket (the worst). */
static void raise_fd_limit(const struct node_cfg *cfg)
{
	struct rlimit rl;
	unsigned long long need = 3ull * cfg->max_regions + 1024;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		unsigned long long was = (unsigned long long)rl.rlim_cur;
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
			node_log(PROCCTL_LOG_INFO, "fd_limit", "from=%llu to=%llu", was, (unsigned long long)rl.rlim_cur);
		else
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur != RLIM_INFINITY && (unsigned long long)rl.rlim_cur < need)
		node_log(PROCCTL_LOG_WARN, "fd_limit_low", "limit=%llu max_regions=%u needs=%llu reason=\"regions past the "
			 "limit are not attached (raise the hard limit, or lower max_regions)\"",
			 (unsigned long long)rl.rlim_cur, cfg->max_regions, need);
}

/* The command line, read once: the configuration is built again from it
 * on a reload. */
static struct cmdline cl;

/* The whole configuration: the defaults, the file (--config, wherever it
 * stands), then every flag in order. 0, or -EINVAL (err says what,
 * naming the file and line or the flag). */
static int build_cfg(struct node_cfg *cfg, char *err, size_t errlen)
{
	size_t i;
	node_cfg_defaults(cfg);
	if (cl.config && node_cfg_load(cfg, cl.config, err, errlen) < 0)
		return -EINVAL;
	for (i = 0; i < cl.nkeys; i++)
		if (node_cfg_set(cfg, cl.keys[i].key, cl.keys[i].value, err, errlen) < 0)
			return -EINVAL;
	return node_cfg_check(cfg, err, errlen) < 0 ? -EINVAL : 0;
}

/* --check-config: dir as far as it exists (nothing is made), judged as
 * the daemon would (strict: its own, writable by nobody else; else as a
 * parent); the missing part would be made by the daemon, so its nearest
 * existing ancestor is judged as a parent. */
static int dir_checked(const char *key, const char *dir, int strict, char *err, size_t errlen)
{
	char path[NODE_PATH_MAX], why[NODE_PATH_MAX + 128];
	struct stat st;
	char *slash;
	int fd;

	snprintf(path, sizeof path, "%s", dir);
	while (stat(path, &st) < 0) {
		if (errno != ENOENT || !(slash = strrchr(path, '/')))
			break; /* judged below, for its error */
		strict = 0;
		slash[slash == path] = 0; /* "/x": "/" */
	}
	fd = strict ? procctl_trusted_dir(path, why, sizeof why) : procctl_trusted_parent(path, why, sizeof why);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", key, why);
		return fd;
	}
	close(fd);
	return 0;
}

/* --check-config: the directories the daemon would refuse at its start. */
static int dirs_checked(const struct node_cfg *cfg, char *err, size_t errlen)
{
	char dir[NODE_PATH_MAX];
	size_t i;
	int r;

	if ((r = dir_checked("lock_dir", cfg->lock_dir, 1, err, errlen)) < 0 ||
	    (r = dir_checked("state_dir", cfg->state_dir, 1, err, errlen)) < 0)
		return r;
	for (i = 0; i < cfg->ngrpc_listen; i++) {
		char *slash;
		if (strncmp(cfg->grpc_listen[i], "unix:", 5))
			continue;
		snprintf(dir, sizeof dir, "%s", cfg->grpc_listen[i] + 5);
		if ((slash = strrchr(dir, '/')))
			slash[slash == dir] = 0;
		if ((r = dir_checked("grpc_listen", dir, 1, err, errlen)) < 0)
			return r;
	}
	return 0;
}

/* --check-config: the files the daemon reads at its start (the HTTP key
 * as it loads it, the TLS files readable), named by their keys. One that
 * is not here is said on stderr, not failed: the config may be for where
 * it is mounted (the chart's is checked before its pod exists). */
static int files_checked(const struct node_cfg *cfg, char *err, size_t errlen)
{
	const char *keys[] = {"http_api_key_file", "tls_cert", "tls_key", "tls_client_ca"};
	const char *paths[] = {cfg->http_api_key_file, cfg->tls_cert, cfg->tls_key, cfg->tls_client_ca};
	char key[HTTP_KEY_MAX + 2];
	size_t i, len;
	int fd, r;
	for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		if (!paths[i][0])
			continue;
		struct stat st;
		if ((fd = open(paths[i], O_RDONLY | O_CLOEXEC)) < 0) {
			r = -errno;
			if (r == -ENOENT) {
				fprintf(stderr, "procctl-node: note: %s %s: not here (the start reads it)\n", keys[i], paths[i]);
				continue;
			}
			snprintf(err, errlen, "%s %s: %s", keys[i], paths[i], strerror(-r));
			return r;
		}
		r = fstat(fd, &st) < 0 || !st.st_size ? -EINVAL : 0;
		close(fd);
		if (r < 0) {
			snprintf(err, errlen, "%s %s: empty", keys[i], paths[i]);
			return r;
		}
		if (!i && (r = http_key_load(paths[i], key, sizeof key, &len, err, errlen)) < 0)
			return r; /* its message names the key */
	}
	return 0;
}

/* node_watch_config's builder: the same, again. */
static int rebuild_cfg(struct node_cfg *cfg, char *err, size_t errlen, void *arg)
{
	(void)arg;
	return build_cfg(cfg, err, errlen);
}

/* serve's config: 0, or 2 (logged) when the file no longer builds one. */
static int serve_cfg(struct node_cfg *cfg, char *err, size_t errlen)
{
	char q[2100];

	/* The file may have changed while this daemon stood by: read it again
	 * (the lock directory stays the one it waited on). */
	if (cl.config) {
		static struct node_cfg now;
		char lock_dir[sizeof cfg->lock_dir];
		memcpy(lock_dir, cfg->lock_dir, sizeof lock_dir);
		if (rebuild_cfg(&now, err, errlen, NULL) < 0) {
			node_log(PROCCTL_LOG_ERROR, "start_failed", "error=\"%s\"", node_log_quote(q, sizeof q, err));
			return 2;
		}
		*cfg = now;
		memcpy(cfg->lock_dir, lock_dir, sizeof lock_dir);
	}
	return 0;
}

/* HTTP's key file judged before anything starts (HTTP loads it again as
 * it starts): 0, or 2 (logged), a configuration no restart mends. */
static int serve_key(const struct node_cfg *cfg, char *err, size_t errlen)
{
	char key[HTTP_KEY_MAX + 2], q[2100];
	size_t len;
	if (!cfg->http_listen[0] || !cfg->http_api_key_file[0] ||
	    http_key_load(cfg->http_api_key_file, key, sizeof key, &len, err, errlen) >= 0)
		return 0;
	node_log(PROCCTL_LOG_ERROR, "start_failed", "error=\"%s\"", node_log_quote(q, sizeof q, err));
	return 2;
}

/* The loop made, for the signal handlers, its config file followed.
 * NULL: it could not be (logged). */
static struct node *serve_node(struct node_cfg *cfg, const struct nodelock *lock, char *err, size_t errlen)
{
	char q[2100];
	struct node *n;
	int r;
	if (!(n = node_new(cfg, lock, err, errlen))) {
		node_log(PROCCTL_LOG_ERROR, "start_failed", "error=\"%s\"", node_log_quote(q, sizeof q, err));
		return NULL;
	}
	node_set_sigmask(n, &wait_mask);
	the_node = n;
	if (cl.config && (r = node_watch_config(n, cl.config, rebuild_cfg, NULL)) < 0)
		node_log(PROCCTL_LOG_WARN, "config_not_watched", "file=%s error=%s reason=\"changes need a restart\"",
			 cl.config, strerror(-r));
	if (stopping)
		node_stop(n);
	return n;
}

/* gRPC started for n, and n's hooks set (gRPC's kick, systemd's READY
 * and watchdog). 0, or the exit status (logged, n closed). */
static int serve_grpc(struct node_cfg *cfg, struct node *n, struct grpc_srv **srv, char *err, size_t errlen)
{
	char q[2100];
	int r;
	if ((r = grpcsrv_start(cfg, n, srv, err, errlen)) < 0) {
		gid_t gid;
		char why[256];
		node_log(PROCCTL_LOG_ERROR, "start_failed", "error=\"%s\"", node_log_quote(q, sizeof q, err));
		the_node = NULL;
		node_close(n, 0);
		/* socket_group's group missing, or not the daemon's to give: a
		 * configuration no restart mends (RestartPreventExitStatus=2) */
		return node_cfg_socket_gid(cfg, &gid, why, sizeof why) < 0 || (r == -EPERM && cfg->socket_group[0]) ? 2 : 1;
	}
	{
		struct node_hooks hooks = {.changed = grpc_changed, .ready = notify_ready, .alive = notify_alive,
					   .alive_ns = pinger.every_ns, .arg = *srv};
		node_set_hooks(n, &hooks);
	}
	return 0;
}

/* HTTP, when configured. 1 when it could not start (logged, n stopped),
 * else 0. */
static int serve_http(struct node_cfg *cfg, struct node *n, struct grpc_srv *srv, struct httpsrv **http, char *err,
		      size_t errlen)
{
	char q[2100];
	if (cfg->http_listen[0] &&
	    httpsrv_start(cfg, n,
			  (const struct metrics_source[]){{grpc_metrics, srv}, {procself_metrics, NULL}, {probe_metrics, NULL},
							  {log_metrics, NULL}},
			  4, &(struct http_liveness){api_alive, n, tcp_state, srv}, http, err, errlen) < 0) {
		node_log(PROCCTL_LOG_ERROR, "start_failed", "error=\"%s\"", node_log_quote(q, sizeof q, err));
		node_stop(n); /* the loop answers what came meanwhile, then all is undone */
		return 1;
	}
	return 0;
}

/* The loop ended (r): gRPC and HTTP stopped, the processes handed off
 * (or uninstalled), NODE.lock released, the rest freed. */
static void serve_end(struct node *n, struct grpc_srv *srv, struct httpsrv *http, struct nodelock *lock, int uninstall,
		      int lost, int r)
{
	double t0;
	t0 = ((double)procctl_now_ns() / 1e6);
	node_log(PROCCTL_LOG_INFO, "stopping", "mode=%s", uninstall ? "uninstall" : "hand-off");
	notify(lost ? "STATUS=NODE.lock lost: handing off, then standing by" : "STOPPING=1\nSTATUS=handing off");
	httpsrv_stop(http);
	grpcsrv_stop(srv, GRACE_MS);
	/* The hand-off first: RELEASED, every lock dropped, and NODE.lock
	 * with them, so that a successor on standby serves from here. Freeing
	 * the rest is nobody's wait but this process's: the hello probe's
	 * uprobes above all (the kernel takes a grace period, tens of ms, to
	 * take each away, one at a time: the probes of one user's 8 files
	 * held a successor off for minutes while NODE.lock waited for them). */
	node_release(n, uninstall ? PROCCTL_CLOSE_UNINSTALL : 0);
	selfprobe_stop(the_probe); /* the loop and HTTP, which kick it, are gone */
	the_probe = NULL;
	nodelock_release(lock);
	node_log(PROCCTL_LOG_INFO, "handed_off", "mode=%s ms=%.1f", uninstall ? "uninstall" : "hand-off",
		 ((double)procctl_now_ns() / 1e6) - t0);
	the_node = NULL;
	node_close(n, 0);
	node_log(PROCCTL_LOG_INFO, "stopped", "error=%s ms=%.1f", r < 0 ? strerror(-r) : "none",
		 ((double)procctl_now_ns() / 1e6) - t0);
}

/* Serve the node while holding lock: the loop, gRPC, HTTP; then hand
 * off (or uninstall). *lost: it stopped because NODE.lock was deleted or
 * replaced (another daemon may serve now): it handed off and the caller
 * stands by again. The exit status. */
static int serve(struct node_cfg *cfg, struct nodelock *lock, int uninstall, int *lost)
{
	char err[512];
	struct grpc_srv *srv = NULL;
	struct httpsrv *http = NULL;
	struct node *n;
	int failed, r;

	if ((r = serve_cfg(cfg, err, sizeof err)) || (r = serve_key(cfg, err, sizeof err)))
		return r;
	if (!(n = serve_node(cfg, lock, err, sizeof err)))
		return 1;
	if ((r = serve_grpc(cfg, n, &srv, err, sizeof err)))
		return r;
	probe_start(cfg);
	failed = serve_http(cfg, n, srv, &http, err, sizeof err);
	r = node_run(n);
	*lost = node_lock_lost(n);
	if (*lost)
		pinger_start(); /* through the hand-off and the standby after it (a stop's STOPPING=1 ends the watchdog) */
	if (*lost)
		uninstall = 0; /* the processes may have another daemon now: hand them off */
	serve_end(n, srv, http, lock, uninstall, *lost, r);
	return r < 0 || failed ? 1 : 0;
}

/* --help, --version, --completion and --check-config, done here: the
 * exit status; -1 for a run. */
static int one_shot(const struct node_cfg *cfg, char *err, size_t errlen)
{
	switch (cl.action) {
	case CMDLINE_HELP:
		usage(stdout);
		return 0;
	case CMDLINE_VERSION:
		printf("procctl-node %s (API procctl.v1, wire %u.%u)\n", PROCCTL_NODE_VERSION,
		       (unsigned)PROCCTL_VERSION_MAJOR, (unsigned)PROCCTL_VERSION_MINOR);
		return 0;
	case CMDLINE_COMPLETION:
		return cmdline_completion(stdout, cl.shell) < 0 || fflush(stdout) ? 1 : 0;
	case CMDLINE_RUN:
		break;
	}
	if (cl.check) {
		gid_t gid;
		/* Judged for whoever runs this: as root, as the daemon runs
		 * (another user's view of root's directories says nothing). */
		if (node_cfg_socket_gid(cfg, &gid, err, errlen) < 0 ||
		    (geteuid() == 0 && (dirs_checked(cfg, err, errlen) < 0 || files_checked(cfg, err, errlen) < 0))) {
			fprintf(stderr, "procctl-node: %s\n", err);
			return 2;
		}
		printf("procctl-node: configuration valid\n");
		return 0;
	}
	return -1;
}

/* SIGTERM and SIGINT stop, SIGHUP reloads, SIGPIPE is ignored. The
 * three are blocked here, before any thread is made, so that every
 * thread inherits the block, and let through only where the main thread
 * sleeps: in the loop's ppoll and the standby's (wait_mask). A handler
 * run on another thread would interrupt a library's call there (EINTR),
 * and under ThreadSanitizer waits for that thread to wake: a SIGTERM
 * taken by a gRPC thread asleep on a futex was never handled. */
static void signals_catch(void)
{
	struct sigaction sa;
	sigset_t handled;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_hup; /* not the default (exit, with no hand-off): read the config file again */
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&handled);
	sigaddset(&handled, SIGTERM);
	sigaddset(&handled, SIGINT);
	sigaddset(&handled, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &handled, &wait_mask);
	sigdelset(&wait_mask, SIGTERM); /* also when the parent left them blocked */
	sigdelset(&wait_mask, SIGINT);
	sigdelset(&wait_mask, SIGHUP);
}

/* NODE.lock taken (standing by while another daemon holds it), then the
 * node served; again when it lost the lock, unless stopping. The exit
 * status. */
static int serve_locked(struct node_cfg *cfg, char *err, size_t errlen)
{
	char q[2100];
	int r;
	for (;;) {
		struct nodelock lock;
		int lost = 0;
		notify("STATUS=taking NODE.lock (another procctl-node may hold it)");
		pinger_start();
		r = nodelock_take(&lock, cfg->lock_dir, &stopping, &wait_mask, err, errlen);
		pinger_stop();
		if (r != 0) {
			if (r > 0)
				return 0;
			node_log(PROCCTL_LOG_ERROR, "lock_failed", "dir=%s error=\"%s\"", cfg->lock_dir,
				 node_log_quote(q, sizeof q, err));
			return 1;
		}
		r = serve(cfg, &lock, cl.uninstall, &lost);
		nodelock_release(&lock);
		if (!lost || stopping) {
			pinger_stop();
			return r;
		}
	}
}

int main(int argc, char **argv)
{
	static struct node_cfg cfg;
	char err[512] = "";
	int r;

	if ((r = cmdline_parse(&cl, argc, argv, err, sizeof err)) == 0 && cl.action == CMDLINE_RUN)
		r = build_cfg(&cfg, err, sizeof err);
	if (r < 0) {
		fprintf(stderr, "procctl-node: %s\n", r == -ENOMEM ? strerror(ENOMEM) : err);
		if (strstr(err, "no such flag") || strstr(err, "not a flag") || strstr(err, "needs a value") ||
		    strstr(err, "ambiguous") || strstr(err, "takes no value"))
			fprintf(stderr, "procctl-node --help lists every flag\n");
		return 2;
	}
	if ((r = one_shot(&cfg, err, sizeof err)) >= 0)
		return r;
	if (!strcmp(cfg.kube_api, "in-cluster")) { /* not judged by --check-config: it runs outside the pod */
		char url[KUBEWATCH_URL_MAX];
		if (kubewatch_in_cluster_url(url, sizeof url, err, sizeof err) < 0) {
			fprintf(stderr, "procctl-node: %s\n", err);
			return 2;
		}
	}
	node_log_level(cfg.log_debug ? PROCCTL_LOG_DEBUG : PROCCTL_LOG_INFO);
	procctl_set_log(on_lib_log, NULL);
	signals_catch();

	if ((r = node_log_start()) < 0) /* lines are then written by their callers */
		fprintf(stderr, "procctl-node: the log's thread: %s\n", strerror(-r));
	node_log(PROCCTL_LOG_INFO, "starting", "version=%s pid=%d", PROCCTL_NODE_VERSION, (int)getpid());
	pinger_init();
	raise_fd_limit(&cfg);
	r = serve_locked(&cfg, err, sizeof err);
	node_log_stop();
	return r;
}
