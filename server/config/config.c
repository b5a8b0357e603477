/* SPDX-License-Identifier: Apache-2.0 */
/* config.c - procctl-node's configuration file and flags.
 *
 * The file: one "key = value" a line; blank lines and lines starting with
 * '#' are skipped; "[arbiter NAME]" starts the settings of one arbiter.
 * A key given twice in one file is an error, except grpc_listen, which
 * adds a listener. Durations carry their unit in the key (_ms), lists are
 * comma-separated, booleans are true or false. */
#define _GNU_SOURCE 1
#include "config.h"
#include "config_int.h"
#include "desired/desired.h"
#include "kube/kubewatch.h"
#include "kube/labelsel.h"
#include "base64.h"
#include "procctl_arbiter.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procctl_agent.h"

#define FILE_MAX (1 << 20)

/* ---- the keys ------------------------------------------------------- */

/* One key of a section: where its value goes, how it is parsed, its
 * default (node_cfg_defaults and a new section apply it through the same
 * parser), and what --help says of it. */
struct key {
	const char *name;
	int (*set)(const struct key *k, void *obj, const struct where *w, const char *v);
	size_t off;       /* of the value in the section's struct */
	uint64_t lo, hi;  /* numbers: bounds (milliseconds: in ms); strings: hi is the buffer size */
	const char *def;  /* NULL: none */
	const char *form; /* the value in --help */
	const char *help;
};

#define AT(obj, k, type) ((type *)((char *)(obj) + (k)->off))

static int set_bool(const struct key *k, void *obj, const struct where *w, const char *v)
{
	return cfg_boolean(w, v, AT(obj, k, int));
}

static int set_u32(const struct key *k, void *obj, const struct where *w, const char *v)
{
	return cfg_u32(w, v, (uint32_t)k->lo, (uint32_t)k->hi, AT(obj, k, uint32_t));
}

static int set_ms(const struct key *k, void *obj, const struct where *w, const char *v)
{
	return cfg_millis(w, v, k->lo * MS, k->hi * MS, AT(obj, k, uint64_t));
}

static int set_str(const struct key *k, void *obj, const struct where *w, const char *v)
{
	return cfg_copy(w, AT(obj, k, char), (size_t)k->hi, v);
}

static int set_abspath(const struct key *k, void *obj, const struct where *w, const char *v)
{
	return *v == '/' ? set_str(k, obj, w, v) : cfg_fail(w, "'%s' is not an absolute path", v);
}

static int set_optpath(const struct key *k, void *obj, const struct where *w, const char *v)
{
	return *v ? set_abspath(k, obj, w, v) : set_str(k, obj, w, v);
}

/* A group: a gid, or a name as useradd(8) takes one. */
static int set_group(const struct key *k, void *obj, const struct where *w, const char *v)
{
	size_t i;
	if (*v && !v[strspn(v, "0123456789")]) {
		errno = 0;
		if (strtoull(v, NULL, 10) >= (gid_t)-1 || errno)
			return cfg_fail(w, "%s is not a gid", v);
		return set_str(k, obj, w, v);
	}
	for (i = 0; v[i]; i++) {
		char ch = v[i];
		int ok = ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			 (i && ((ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || (ch == '$' && !v[i + 1])));
		if (!ok)
			return cfg_fail(w, "'%s' is not a group name or a gid (a name of another form: give its gid)", v);
	}
	return set_str(k, obj, w, v);
}

char *node_cfg_bound_addr(const char *addr, unsigned port, char *buf, size_t len)
{
	const char *colon = strrchr(addr, ':');
	snprintf(buf, len, "%.*s:%u", colon ? (int)(colon - addr) : (int)strlen(addr), addr, port);
	return buf;
}

int node_cfg_socket_gid(const struct node_cfg *c, gid_t *gid, char *err, size_t errlen)
{
	const char *g = c->socket_group;
	struct group gr, *found = NULL;
	size_t len = 16384;
	char *buf = NULL, *more;
	int r;
	*gid = (gid_t)-1;
	if (!g[0])
		return 0;
	if (!g[strspn(g, "0123456789")]) {
		*gid = (gid_t)strtoul(g, NULL, 10);
		return 0;
	}
	/* A directory's group (LDAP, sssd) may list thousands of members:
	 * the buffer grows until its entry fits, to 16 MiB. */
	do {
		if (!(more = realloc(buf, len))) {
			r = ENOMEM;
			break;
		}
		buf = more;
		r = getgrnam_r(g, &gr, buf, len, &found);
		len *= 2;
	} while (r == ERANGE && len <= (16u << 20));
	if (!r && found)
		*gid = gr.gr_gid;
	free(buf);
	if (r || !found) {
		snprintf(err, errlen, "socket_group %s: %s", g, r ? strerror(r) : "no such group");
		return r ? -r : -ENOENT;
	}
	return 0;
}

/* kubernetes_api: "", in-cluster, or the API server's URL. */
static int set_kube_api(const struct key *k, void *obj, const struct where *w, const char *v)
{
	char why[160];
	if (*v && strcmp(v, "in-cluster") && kubewatch_url_check(v, why, sizeof why) < 0)
		return cfg_fail(w, "'%s': %s", v, why);
	return set_str(k, obj, w, v);
}

static int set_kube_node(const struct key *k, void *obj, const struct where *w, const char *v)
{
	if (*v && !labelsel_subdomain_valid(v, strlen(v)))
		return cfg_fail(w, "'%s' is not a node's name (a DNS subdomain: lowercase letters, digits, '-' and '.')", v);
	return set_str(k, obj, w, v);
}

static int set_removed(const struct key *k, void *obj, const struct where *w, const char *v)
{
	(void)obj;
	(void)v;
	return cfg_fail(w, "%s", k->help);
}

static int set_consumer(const struct key *k, void *obj, const struct where *w, const char *v)
{
	if (procctl_name_valid(v, PROCCTL_CONSUMER_MAX) < 0)
		return cfg_fail(w, "'%s' is not a consumer name ([a-z0-9_.-], 1 to %u)", v, PROCCTL_CONSUMER_MAX);
	return set_str(k, obj, w, v);
}

static int set_grpc_listen(const struct key *k, void *obj, const struct where *w, const char *v)
{
	struct node_cfg *c = obj;
	(void)k;
	if (cfg_listen_addr(w, v))
		return -EINVAL;
	if (c->grpc_listen_src != (int)w->src) { /* a source's first replaces the earlier ones */
		c->ngrpc_listen = 0;
		c->grpc_listen_src = (int)w->src;
	}
	if (c->ngrpc_listen == NODE_LISTEN_MAX)
		return cfg_fail(w, "more than %d listeners", NODE_LISTEN_MAX);
	return cfg_copy(w, c->grpc_listen[c->ngrpc_listen++], NODE_PATH_MAX, v);
}

static int set_http_listen(const struct key *k, void *obj, const struct where *w, const char *v)
{
	char lo[32];
	if (*v && strspn(v, "0123456789") == strlen(v)) { /* a port alone: loopback */
		snprintf(lo, sizeof lo, "127.0.0.1:%.8s", v);
		v = lo;
	}
	if (!strncmp(v, "unix:", 5))
		return cfg_fail(w, "'%s': HTTP listens on HOST:PORT (a PORT alone: 127.0.0.1)", v);
	return *v && cfg_listen_addr(w, v) ? -EINVAL : set_str(k, obj, w, v);
}

static int set_consumers(const struct key *k, void *obj, const struct where *w, const char *v)
{
	struct node_cfg *c = obj;
	(void)k;
	c->nconsumers = 0;
	return *v ? cfg_each_item(w, v, cfg_add_consumer, c) : 0;
}

static int set_log_level(const struct key *k, void *obj, const struct where *w, const char *v)
{
	if (strcmp(v, "info") && strcmp(v, "debug"))
		return cfg_fail(w, "'%s' is not info or debug", v);
	*AT(obj, k, int) = !strcmp(v, "debug");
	return 0;
}

static int set_resources(const struct key *k, void *obj, const struct where *w, const char *v)
{
	struct node_arbiter_cfg *a = obj;
	(void)k;
	a->nresources = 0;
	return cfg_each_item(w, v, cfg_add_resource, a);
}

static int set_admit_default(const struct key *k, void *obj, const struct where *w, const char *v)
{
	struct node_arbiter_cfg *a = obj;
	(void)k;
	if (strcmp(v, "allow") && strcmp(v, "deny"))
		return cfg_fail(w, "'%s': allow or deny", v);
	a->admit.deny = !strcmp(v, "deny");
	return 0;
}

struct admit_arg {
	struct admission *a;
	enum admit_list l;
};

static int add_admit(const struct where *w, void *arg, const char *item)
{
	struct admit_arg *x = arg;
	const char *why = NULL;
	return admission_add(x->a, x->l, item, &why) < 0 ? cfg_fail(w, "'%s': %s", item, why) : 0;
}

/* admit_uids, admit_gids, admit_pods, admit_cgroups (by the key's name). */
static int set_admit_list(const struct key *k, void *obj, const struct where *w, const char *v)
{
	struct node_arbiter_cfg *a = obj;
	struct admit_arg x = {&a->admit, k->name[6] == 'u' ? ADMIT_UIDS : k->name[6] == 'g' ? ADMIT_GIDS
					 : k->name[6] == 'p' ? ADMIT_PODS : ADMIT_CGROUPS};
	return cfg_each_item(w, v, add_admit, &x);
}

static int set_policy(const struct key *k, void *obj, const struct where *w, const char *v)
{
	(void)k;
	(void)obj;
	return strcmp(v, "round_robin") ? cfg_fail(w, "'%s': the one policy is round_robin", v) : 0;
}

/* data (text) or data_base64 (any bytes): once. */
static int set_data(const struct key *k, void *obj, const struct where *w, const char *v)
{
	struct node_desired_cfg *d = obj;
	size_t n = strlen(v);
	ssize_t len;
	if (d->has_data)
		return cfg_fail(w, "give the config once: data or data_base64");
	if (k->name[4]) {
		if ((len = base64_decode(v, n, d->data, sizeof d->data)) < 0)
			return cfg_fail(w, "not base64 of at most %d bytes", NODE_DESIRED_DATA_MAX);
	} else {
		if (n > sizeof d->data)
			return cfg_fail(w, "over %d bytes (data_base64 for more, or for bytes that are not text)",
				    NODE_DESIRED_DATA_MAX);
		memcpy(d->data, v, n);
		len = (ssize_t)n;
	}
	if (!len)
		return cfg_fail(w, "empty: a desired config has 1 to %d bytes", NODE_DESIRED_DATA_MAX);
	d->len = (size_t)len;
	d->has_data = 1;
	return 0;
}

#define STR(type, field) offsetof(type, field), 0, sizeof(((type *)0)->field)
#define NUM(type, field, lo, hi) offsetof(type, field), lo, hi
#define NONE 0, 0, 0

/* The file's global part; each is also a flag (--KEY, '-' for '_'). */
static const struct key global_keys[] = {
	{"grpc_listen", set_grpc_listen, NONE, "unix:" NODE_DEFAULT_SOCKET, "ADDR",
	 "gRPC listener, unix:/PATH or HOST:PORT (PORT 0: one the kernel picks, named in the listening line); repeatable"},
	{"http_listen", set_http_listen, STR(struct node_cfg, http_listen), "127.0.0.1:9464", "ADDR",
	 "HTTP (health, /metrics, JSON): HOST:PORT, PORT (loopback) or empty: off; PORT 0: one the kernel picks"},
	{"http_api_key_file", set_optpath, STR(struct node_cfg, http_api_key_file), "", "FILE",
	 "the JSON views (/v1/...) need this file's key (Authorization: Bearer KEY), on loopback only; "
	 "none: they are off"},
	{"http_writes", set_bool, NUM(struct node_cfg, http_writes, 0, 1), "false", "BOOL",
	 "serve POST /v1/processes/PID/config (a JSON view)"},
	{"http_writes_remote", set_removed, NONE, NULL, "BOOL",
	 "removed: off loopback HTTP serves health and /metrics alone (use gRPC over mTLS)"},
	{"consumers", set_consumers, NONE, NULL, "LIST", "the consumers to serve, comma-separated (default: all)"},
	{"lease_ms", set_ms, NUM(struct node_cfg, lease_ns, PROCCTL_LEASE_FLOOR_NS / MS, PROCCTL_LEASE_CEIL_NS / MS),
	 "10000", "MS", "the lease given to processes"},
	{"rescan_ms", set_ms, NUM(struct node_cfg, rescan_ns, 100, 86400000), "60000", "MS",
	 "how often /proc is walked again"},
	{"hello", set_bool, NUM(struct node_cfg, hello, 0, 1), "true", "BOOL",
	 "fast discovery with the procctl:hello probe (perf uprobes)"},
	{"socket_group", set_group, STR(struct node_cfg, socket_group), "", "GROUP",
	 "the group of the Unix sockets (mode 0660), a name or a gid: its members may call the API; empty: "
	 "the daemon's own"},
	{"lock_dir", set_abspath, STR(struct node_cfg, lock_dir), PROCCTL_LOCK_DIR_DEFAULT, "DIR",
	 "the node locks (one per consumer, and NODE.lock)"},
	{"state_dir", set_abspath, STR(struct node_cfg, state_dir), "/var/lib/procctl", "DIR",
	 "where desired configs are kept"},
	{"tls_cert", set_str, STR(struct node_cfg, tls_cert), NULL, "FILE", "mTLS for TCP listeners: the server certificate"},
	{"tls_key", set_str, STR(struct node_cfg, tls_key), NULL, "FILE", "... its key"},
	{"tls_client_ca", set_str, STR(struct node_cfg, tls_client_ca), NULL, "FILE", "... the CA of client certificates"},
	{"tls_refresh_s", set_u32, NUM(struct node_cfg, tls_refresh_s, 1, 86400), "60", "S",
	 "how often the TLS files are read again"},
	{"insecure_tcp", set_bool, NUM(struct node_cfg, insecure_tcp, 0, 1), "false", "BOOL",
	 "plain TCP listeners allowed (read-only)"},
	{"insecure_tcp_writes", set_bool, NUM(struct node_cfg, insecure_tcp_writes, 0, 1), "false", "BOOL",
	 "... and mutating calls on them"},
	{"max_regions", set_u32, NUM(struct node_cfg, max_regions, 1, 1 << 20), "8192", "N", "regions attached, in all"},
	{"max_consumers", set_u32, NUM(struct node_cfg, max_consumers, 1, 65536), "256", "N",
	 "distinct consumers with regions attached (a lock file and an fd each)"},
	{"max_per_process", set_u32, NUM(struct node_cfg, max_per_process, 1, 512), "16", "N",
	 "regions attached, per process"},
	{"max_message_bytes", set_u32, NUM(struct node_cfg, max_message_bytes, 4096, 64 << 20), "4194304", "N",
	 "the largest gRPC message"},
	{"grpc_max_streams", set_u32, NUM(struct node_cfg, grpc_max_streams, 1, 65536), "100", "N",
	 "streams open on one gRPC connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS); a connection with more "
	 "than ten times that is shut down"},
	{"grpc_max_calls", set_u32, NUM(struct node_cfg, grpc_max_calls, 64, 1 << 20), "4096", "N",
	 "gRPC calls open at once, in all (more: RESOURCE_EXHAUSTED); the last eighth is for root on the Unix socket"},
	{"grpc_max_connections", set_u32, NUM(struct node_cfg, grpc_max_connections, 1, 65536), "256", "N",
	 "gRPC connections open on TCP, and on the Unix sockets (each); past it a new one is closed at once"},
	{"grpc_max_connections_per_peer", set_u32, NUM(struct node_cfg, grpc_max_connections_per_peer, 1, 65536), "32", "N",
	 "... per remote address (TCP) or uid (the Unix sockets; root has no such limit)"},
	{"grpc_handshake_ms", set_u32, NUM(struct node_cfg, grpc_handshake_ms, 100, 120000), "10000", "MS",
	 "how long a TCP connection may take over its TLS and HTTP/2 handshakes"},
	{"grpc_memory_bytes", set_u32, NUM(struct node_cfg, grpc_memory_bytes, 16 << 20, 1u << 31), "67108864", "N",
	 "the gRPC core's memory quota: near it, idle connections are closed and buffers refused"},
	{"max_watchers", set_u32, NUM(struct node_cfg, max_watchers, 1, 1 << 20), "4096", "N",
	 "concurrent gRPC streams (WatchEvents, health Watch, reflection)"},
	{"max_watchers_per_peer", set_u32, NUM(struct node_cfg, max_watchers_per_peer, 1, 1 << 20), "1024", "N",
	 "... per caller (a uid on the Unix socket, root excepted; a certificate's subject; a plain TCP address)"},
	{"watch_history", set_u32, NUM(struct node_cfg, watch_history, 64, 1 << 20), "65536", "N",
	 "events kept for resumes; a watcher that far behind is cut off"},
	{"max_waits", set_u32, NUM(struct node_cfg, max_waits, 1, 1 << 20), "16384", "N",
	 "calls waiting for acks (Publish, Clear, WaitAck, SetDesiredConfig with wait_ms), in all; the last eighth "
	 "is root's on the Unix socket, read-only callers hold a quarter at most"},
	{"max_waits_per_peer", set_u32, NUM(struct node_cfg, max_waits_per_peer, 1, 1 << 20), "1024", "N",
	 "... per caller (a uid on the Unix socket, root excepted; a certificate's subject; a plain TCP address)"},
	{"max_wait_ms", set_u32, NUM(struct node_cfg, max_wait_ms, 1000, 86400000), "300000", "MS",
	 "the longest wait_ms a call may ask for (more: INVALID_ARGUMENT)"},
	{"desired_max", set_u32, NUM(struct node_cfg, desired_max, 1, 65536), "1024", "N",
	 "desired configs kept, in all (more: RESOURCE_EXHAUSTED)"},
	{"desired_bytes_max", set_u32, NUM(struct node_cfg, desired_bytes_max, 1 << 20, 64 << 20), "33554432", "N",
	 "... and their payload bytes, in all"},
	{"kubernetes_api", set_kube_api, STR(struct node_cfg, kube_api), "", "URL",
	 "the Kubernetes API server whose view of this node's pods (namespace, name, labels) the daemon "
	 "watches: in-cluster (its pod's service account), https://HOST:PORT, http://127.0.0.1:PORT (kubectl "
	 "proxy); empty: off"},
	{"kubernetes_node", set_kube_node, STR(struct node_cfg, kube_node), "", "NAME",
	 "this node's name in the cluster (spec.nodeName; the chart gives the downward API's); needed with "
	 "kubernetes_api"},
	{"kubernetes_token_file", set_optpath, STR(struct node_cfg, kube_token_file), "", "FILE",
	 "a bearer token for the API server, read again for each request (https only; in-cluster: the service "
	 "account's)"},
	{"kubernetes_ca_file", set_optpath, STR(struct node_cfg, kube_ca_file), "", "FILE",
	 "the CA of the API server's certificate (in-cluster: the service account's; else the system's)"},
	{"kubernetes_watch_s", set_u32, NUM(struct node_cfg, kube_watch_s, 1, 3600), "300", "S",
	 "a watch of the pods lasts from this to twice this (timeoutSeconds), then is made again"},
	{"kubernetes_pods_max", set_u32, NUM(struct node_cfg, kube_pods_max, 1, 65536), "1024", "N",
	 "pods of this node kept (more are counted: procctl_kube_pods_dropped)"},
	{"kubernetes_page_bytes_max", set_u32, NUM(struct node_cfg, kube_page_bytes_max, 2 << 20, 64 << 20), "4194304",
	 "N", "a page of the list of pods larger than this is refused before it is parsed, and the next list asks "
	 "for pages of a quarter as many pods (at least one: a Pod is 1.5 MiB at most)"},
	{"kubernetes_event_bytes_max", set_u32, NUM(struct node_cfg, kube_event_bytes_max, 64 << 10, 16 << 20),
	 "2097152", "N", "a watch event larger than this is refused before it is parsed, and the watch made "
	 "again after a backoff (a Pod is 1.5 MiB at most)"},
	{"metrics_namespaces", set_u32, NUM(struct node_cfg, metrics_namespaces, 0, 64), "0", "N",
	 "with kubernetes_api: /metrics has each resource's hold and blocked time by the namespace of the "
	 "processes' pods, at most N namespaces a resource (the rest as namespace=\"_other\"); 0: off"},
	{"slow_turn_ms", set_u32, NUM(struct node_cfg, slow_turn_ms, 1, 60000), "50", "MS",
	 "a turn of the event loop longer than this is counted (procctl_loop_slow_turns_total) and logged as "
	 "slow_turn, naming its longest step"},
	{"health_probe_ms", set_u32, NUM(struct node_cfg, health_probe_ms, 0, 60000), "5000", "MS",
	 "when /healthz or the watchdog's tick asks, at most this often, the daemon calls its own Unix socket's "
	 "gRPC health service, with this as the deadline; 3 unanswered in a row fail /healthz and stop the "
	 "watchdog's ping until one is answered (0: off; at least 100)"},
	{"log_level", set_log_level, NUM(struct node_cfg, log_debug, 0, 1), "info", "LEVEL", "info or debug"},
};

/* An [arbiter NAME] section. */
static const struct key arbiter_keys[] = {
	{"kind", set_u32, NUM(struct node_arbiter_cfg, kind, 1, UINT32_MAX), NULL, "N",
	 "the kind's number, as processes and grants carry it (required)"},
	{"consumer", set_consumer, STR(struct node_arbiter_cfg, consumer), NULL, "NAME",
	 "whose processes it grants to (required)"},
	{"policy", set_policy, NONE, "round_robin", "POLICY", "round_robin: one holder at a time, in turn"},
	{"hold_ms", set_ms, NUM(struct node_arbiter_cfg, hold_ns, 1, 86400000), "1000", "MS",
	 "how long a holder keeps it while others wait"},
	{"process_bound", set_bool, NUM(struct node_arbiter_cfg, process_bound, 0, 1), "false", "BOOL",
	 "the resource dies with the process image: an exec releases it"},
	{"resources", set_resources, NONE, NULL, "IDS", "ids known up front (UUIDs or 32 hex), comma-separated"},
	{"learn_max", set_u32, NUM(struct node_arbiter_cfg, learn_max, 1, PROCCTL_ARB_MAX_RESOURCES), "8", "N",
	 "resources one process may add to the table by asking for them"},
	{"admit_default", set_admit_default, NONE, "allow", "allow|deny",
	 "deny: grant only to processes an admit_ list names"},
	{"admit_uids", set_admit_list, NONE, NULL, "LIST", "effective uids admitted, comma-separated"},
	{"admit_gids", set_admit_list, NONE, NULL, "LIST", "effective gids admitted"},
	{"admit_pods", set_admit_list, NONE, NULL, "LIST", "pod UIDs admitted"},
	{"admit_cgroups", set_admit_list, NONE, NULL, "LIST", "cgroup v2 paths admitted, with what is below them"},
};

/* A [desired NAME] section. */
static const struct key desired_keys[] = {
	{"consumer", set_consumer, STR(struct node_desired_cfg, sel.consumer), NULL, "NAME", "whose config (required)"},
	{"schema", set_u32, NUM(struct node_desired_cfg, sel.version, 1, UINT32_MAX), "1", "N", "its schema version"},
	{"pod", set_str, STR(struct node_desired_cfg, sel.pod_uid), NULL, "UID", "only this pod's processes"},
	{"container", set_str, STR(struct node_desired_cfg, sel.container_id), NULL, "ID",
	 "only this container's processes"},
	{"namespace", set_str, STR(struct node_desired_cfg, pod.ns), NULL, "NAME",
	 "only the processes of pods of this namespace (needs kubernetes_api)"},
	{"label_selector", set_str, STR(struct node_desired_cfg, pod.labels), NULL, "SELECTOR",
	 "only the processes of pods whose labels it selects, as kubectl -l takes it: app=web,tier in (a,b),!canary "
	 "(needs kubernetes_api)"},
	{"data", set_data, NONE, NULL, "TEXT", "the config, as text (this or data_base64)"},
	{"data_base64", set_data, NONE, NULL, "BASE64", "the config, any bytes (at most 3000)"},
};

#define NKEYS(t) (sizeof(t) / sizeof((t)[0]))

static const struct key *find_key(const struct key *keys, size_t n, const char *name)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (!strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

/* Each key's default into obj, through its parser. */
static void apply_defaults(const struct key *keys, size_t n, void *obj)
{
	char err[256];
	size_t i;
	for (i = 0; i < n; i++) {
		struct where w = {SRC_DEFAULT, err, sizeof err, keys[i].name};
		if (keys[i].def && keys[i].set(&keys[i], obj, &w, keys[i].def) < 0)
			abort(); /* a default its own parser refuses: a bug, caught by test_config */
	}
}

/* A key's default as --help says it: a number's with the range it takes
 * ("4096; 64 to 1048576"). */
static void key_default(const struct key *k, char *buf, size_t len)
{
	if (k->def && (k->set == set_u32 || k->set == set_ms))
		snprintf(buf, len, "%s; %llu to %llu", k->def, (unsigned long long)k->lo, (unsigned long long)k->hi);
	else
		snprintf(buf, len, "%s", k->def ? k->def : "");
}

static void usage_keys(FILE *f, const struct key *keys, size_t n, int flags)
{
	size_t i, k;
	for (i = 0; i < n; i++) {
		char head[64], def[64];
		if (keys[i].set == set_removed) /* refused with its reason, not offered */
			continue;
		if (flags) {
			snprintf(head, sizeof head, "--%s %s", keys[i].name, keys[i].form);
			for (k = 2; head[k] != ' '; k++)
				if (head[k] == '_')
					head[k] = '-';
		} else {
			snprintf(head, sizeof head, "%s = %s", keys[i].name, keys[i].form);
		}
		/* one line, or two when the default does not fit on the first */
		key_default(&keys[i], def, sizeof def);
		if (!keys[i].def)
			fprintf(f, "  %-26s %s\n", head, keys[i].help);
		else if (29 + strlen(keys[i].help) + strlen(def) + 12 <= 100)
			fprintf(f, "  %-26s %s (default: %s)\n", head, keys[i].help, def);
		else
			fprintf(f, "  %-26s %s\n  %-26s (default: %s)\n", head, keys[i].help, "", def);
	}
}

const char *node_cfg_key(size_t i, const char **form)
{
	if (i >= NKEYS(global_keys))
		return NULL;
	*form = global_keys[i].set == set_removed ? NULL : global_keys[i].form;
	return global_keys[i].name;
}

void node_cfg_usage(FILE *f)
{
	fprintf(f, "Every key of the config file is a flag too ('-' for '_'), over the file's value:\n");
	usage_keys(f, global_keys, NKEYS(global_keys), 1);
	fprintf(f, "\nIn the config file only: one [arbiter NAME] section per exclusive-resource kind (NAME its name for people, kind its number):\n");
	usage_keys(f, arbiter_keys, NKEYS(arbiter_keys), 0);
	fprintf(f, "\n... and one [desired NAME] section per desired config:\n");
	usage_keys(f, desired_keys, NKEYS(desired_keys), 0);
}

static int set_key(const struct key *keys, size_t n, const char *section, void *obj, const struct where *w,
		   const char *key, const char *v)
{
	const struct key *k = find_key(keys, n, key);
	if (k)
		return k->set(k, obj, w, v);
	if (w->src == SRC_FLAG)
		return cfg_fail(w, "no such flag");
	if (!section)
		return cfg_fail(w, "no such key");
	{
		char names[256];
		size_t i, o = 0;
		for (i = 0; i < n; i++)
			o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "", keys[i].name);
		return cfg_fail(w, "no such key in %s section (%s)", section, names);
	}
}

/* What a section must have, once it has ended (at is "FILE:LINE" of its
 * header): 0, or -EINVAL. An arbiter's resources get its kind then. */
static int arbiter_done(struct node_cfg *c, struct node_arbiter_cfg *a, const char *at, char *err, size_t errlen)
{
	size_t i;
	if (!a)
		return 0;
	if (!a->kind) {
		snprintf(err, errlen, "%s: [arbiter %s]: kind: missing (the kind's number, as processes report it)", at,
			 a->name);
		return -EINVAL;
	}
	if (!a->consumer[0]) {
		snprintf(err, errlen, "%s: [arbiter %s]: consumer: missing (whose processes it grants to)", at, a->name);
		return -EINVAL;
	}
	for (i = 0; &c->arbiters[i] != a; i++)
		if (c->arbiters[i].kind == a->kind) {
			snprintf(err, errlen, "%s: [arbiter %s]: kind %u is [arbiter %s]'s already", at, a->name, a->kind,
				 c->arbiters[i].name);
			return -EINVAL;
		}
	if (admission_listed(&a->admit) && !a->admit.deny) {
		snprintf(err, errlen, "%s: [arbiter %s]: admit_ lists take effect with admit_default = deny", at, a->name);
		return -EINVAL;
	}
	if (a->admit.deny && !admission_listed(&a->admit)) {
		snprintf(err, errlen, "%s: [arbiter %s]: admit_default = deny with no admit_uids, admit_gids, admit_pods "
			 "or admit_cgroups admits nobody: name who may hold it", at, a->name);
		return -EINVAL;
	}
	for (i = 0; i < a->nresources; i++)
		a->resources[i].kind = a->kind;
	return 0;
}

static int desired_done(const struct node_cfg *c, struct node_desired_cfg *d, const char *at, char *err,
			size_t errlen)
{
	struct selector k;
	struct podsel ps;
	char perr[400];
	const char *why = NULL;
	size_t i;
	if (!d)
		return 0;
	if (!d->sel.consumer[0]) {
		snprintf(err, errlen, "%s: [desired %s]: consumer: required", at, d->name);
		return -EINVAL;
	}
	if (!d->has_data) {
		snprintf(err, errlen, "%s: [desired %s]: data or data_base64: missing", at, d->name);
		return -EINVAL;
	}
	if (selector_from(&k, 0, d->sel.consumer, d->sel.version, d->sel.pod_uid, d->sel.container_id, &why) < 0 ||
	    desired_check(&k, &why) < 0) {
		snprintf(err, errlen, "%s: [desired %s]: %s", at, d->name, why ? why : "a bad selector");
		return -EINVAL;
	}
	memcpy(d->sel.pod_uid, k.pod_uid, sizeof k.pod_uid); /* as the API writes it */
	if (podsel_from(&ps, d->pod.ns, d->pod.labels, perr, sizeof perr) < 0) { /* the text, kept canonical */
		snprintf(err, errlen, "%s: [desired %s]: %s", at, d->name,
			 perr + (strncmp(perr, "selector.", 9) ? 0 : 9)); /* the key's name, as the file has it */
		return -EINVAL;
	}
	d->pod = ps;
	for (i = 0; &c->desired[i] != d; i++)
		if (desired_conflict(&c->desired[i].sel, &c->desired[i].pod, &d->sel, &d->pod)) {
			int same = selector_same(&c->desired[i].sel, &d->sel) && podsel_same(&c->desired[i].pod, &d->pod);
			snprintf(err, errlen,
				 "%s: [desired %s]: %s [desired %s] (one process would match both, at the same precedence)",
				 at, d->name, same ? "the same selector as" : "overlaps", c->desired[i].name);
			return -EINVAL;
		}
	return 0;
}

static int section_done(struct node_cfg *c, struct node_arbiter_cfg *a, struct node_desired_cfg *d,
			const char *at, char *err, size_t errlen)
{
	int r = arbiter_done(c, a, at, err, errlen);
	return r ? r : desired_done(c, d, at, err, errlen);
}

void node_cfg_defaults(struct node_cfg *c)
{
	memset(c, 0, sizeof *c);
	apply_defaults(global_keys, NKEYS(global_keys), c);
}

/* Where node_cfg_parse is in a file. */
struct parse {
	struct node_cfg *c;
	struct node_arbiter_cfg *arb; /* the section being read, if any */
	struct node_desired_cfg *des;
	char section_at[NODE_PATH_MAX + 32];
	char seen[64][40];            /* keys given in this section */
	size_t nseen;
};

static int desired_section(struct parse *ps, const struct where *w, const char *name)
{
	struct node_cfg *c = ps->c;
	size_t i;
	if (procctl_name_valid(name, PROCCTL_CONSUMER_MAX) < 0)
		return cfg_fail(w, "'%s' is not a name for a desired config ([a-z0-9_.-], 1 to %u)", name, PROCCTL_CONSUMER_MAX);
	for (i = 0; i < c->ndesired; i++)
		if (!strcmp(c->desired[i].name, name))
			return cfg_fail(w, "[desired %s] twice", name);
	if (c->ndesired == NODE_DESIRED_MAX)
		return cfg_fail(w, "more than %d desired configs", NODE_DESIRED_MAX);
	ps->des = &c->desired[c->ndesired++];
	memset(ps->des, 0, sizeof *ps->des);
	strcpy(ps->des->name, name);
	apply_defaults(desired_keys, NKEYS(desired_keys), ps->des);
	return 0;
}

static int arbiter_section(struct parse *ps, const struct where *w, const char *kind)
{
	struct node_cfg *c = ps->c;
	size_t i;
	if (procctl_name_valid(kind, NODE_KIND_NAME_MAX) < 0 || kind[0] < 'a' || kind[0] > 'z')
		return cfg_fail(w, "'%s' is not a name for a resource kind (a letter, then [a-z0-9_.-]; 1 to %u)", kind,
			    NODE_KIND_NAME_MAX);
	for (i = 0; i < c->narbiters; i++)
		if (!strcmp(c->arbiters[i].name, kind))
			return cfg_fail(w, "[arbiter %s] twice", kind);
	if (c->narbiters == NODE_ARBITERS_MAX)
		return cfg_fail(w, "more than %d arbiters", NODE_ARBITERS_MAX);
	ps->arb = &c->arbiters[c->narbiters++];
	memset(ps->arb, 0, sizeof *ps->arb);
	strcpy(ps->arb->name, kind);
	apply_defaults(arbiter_keys, NKEYS(arbiter_keys), ps->arb);
	return 0;
}

/* "[arbiter NAME]" or "[desired NAME]" (s trimmed), at where. The
 * section before it is checked whole first. */
static int section(struct parse *ps, const struct where *w, char *s, const char *at)
{
	size_t sl = strlen(s);
	char *in;
	int is_desired, r;
	if (s[sl - 1] != ']')
		return cfg_fail(w, "'%s' is not a section ([arbiter NAME] or [desired NAME])", s);
	s[sl - 1] = 0;
	in = cfg_trim(s + 1);
	is_desired = !strncmp(in, "desired", 7) && (in[7] == ' ' || in[7] == '\t');
	if (!is_desired && (strncmp(in, "arbiter", 7) || (in[7] != ' ' && in[7] != '\t')))
		return cfg_fail(w, "'[%s]' is not a section ([arbiter NAME] or [desired NAME])", in);
	if ((r = section_done(ps->c, ps->arb, ps->des, ps->section_at, w->err, w->errlen)) < 0)
		return r;
	snprintf(ps->section_at, sizeof ps->section_at, "%s", at);
	ps->arb = NULL;
	ps->des = NULL;
	ps->nseen = 0; /* keys are per section */
	return is_desired ? desired_section(ps, w, cfg_trim(in + 8)) : arbiter_section(ps, w, cfg_trim(in + 8));
}

/* "key = value" (s trimmed) in the section being read; where becomes
 * "FILE:LINE: KEY" for its errors. */
static int key_line(struct parse *ps, struct where *w, char *s, char *where, size_t wherelen, const char *at)
{
	char *eq = strchr(s, '='), *key, *val;
	size_t i;
	if (!eq)
		return cfg_fail(w, "'%s' is not key = value", s);
	*eq = 0;
	key = cfg_trim(s);
	val = cfg_trim(eq + 1);
	snprintf(where, wherelen, "%s: %s", at, key);
	if (!*key)
		return cfg_fail(w, "a value without a key");
	if (strcmp(key, "grpc_listen")) {
		for (i = 0; i < ps->nseen; i++)
			if (!strcmp(ps->seen[i], key))
				return cfg_fail(w, "given twice");
		if (ps->nseen < sizeof ps->seen / sizeof ps->seen[0])
			snprintf(ps->seen[ps->nseen++], sizeof ps->seen[0], "%s", key);
	}
	if (ps->arb)
		return set_key(arbiter_keys, NKEYS(arbiter_keys), "an [arbiter]", ps->arb, w, key, val);
	if (ps->des)
		return set_key(desired_keys, NKEYS(desired_keys), "a [desired]", ps->des, w, key, val);
	return set_key(global_keys, NKEYS(global_keys), NULL, ps->c, w, key, val);
}

int node_cfg_parse(struct node_cfg *c, const char *text, size_t len, const char *name, char *err, size_t errlen)
{
	char line[LINE_MAX_], at[NODE_PATH_MAX + 32], where[LINE_MAX_ + NODE_PATH_MAX + 64];
	struct parse ps = {.c = c};
	const char *p = text, *end = text + len;
	int lineno = 0, r;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		struct where w = {SRC_FILE, err, errlen, where};
		char *s;

		lineno++;
		snprintf(at, sizeof at, "%.*s:%d", NODE_PATH_MAX, name, lineno);
		snprintf(where, sizeof where, "%s", at);
		if (n >= sizeof line)
			return cfg_fail(&w, "a line over %zu bytes", sizeof line - 1);
		memcpy(line, p, n);
		line[n] = 0;
		p += n + 1;
		if (memchr(line, 0, n))
			return cfg_fail(&w, "a NUL byte");
		s = cfg_trim(line);
		if (!*s || *s == '#')
			continue;
		r = *s == '[' ? section(&ps, &w, s, at) : key_line(&ps, &w, s, where, sizeof where, at);
		if (r)
			return r;
	}
	return section_done(c, ps.arb, ps.des, ps.section_at, err, errlen);
}

int node_cfg_load(struct node_cfg *c, const char *path, char *err, size_t errlen)
{
	char *buf;
	size_t len = 0;
	ssize_t n = 0;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), r; /* a FIFO would block */
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "%s: not a regular file", path);
		return -EINVAL;
	}
	buf = malloc(FILE_MAX + 1);
	if (!buf) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	while (len <= FILE_MAX && (n = read(fd, buf + len, FILE_MAX + 1 - len)) > 0)
		len += (size_t)n;
	r = n < 0 ? -errno : 0;
	close(fd);
	if (r)
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
	else if (len > FILE_MAX)
		r = -EFBIG, snprintf(err, errlen, "%s: over %d bytes", path, FILE_MAX);
	else
		r = node_cfg_parse(c, buf, len, path, err, errlen);
	free(buf);
	return r;
}

int node_cfg_set(struct node_cfg *c, const char *key, const char *value, char *err, size_t errlen)
{
	char flag[64];
	struct where w = {SRC_FLAG, err, errlen, flag};
	size_t i;
	snprintf(flag, sizeof flag, "--%s", key);
	for (i = 0; flag[i]; i++)
		if (flag[i] == '_')
			flag[i] = '-';
	if (value || !find_key(global_keys, NKEYS(global_keys), key))
		return set_key(global_keys, NKEYS(global_keys), NULL, c, &w, key, value);
	return cfg_fail(&w, "needs a value");
}
