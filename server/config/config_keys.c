/* SPDX-License-Identifier: Apache-2.0 */
/* config_keys.c - procctl-node's config keys as one table per section:
 * where each value goes, its parser, its default and what --help says.
 * The same table sets defaults, the file's lines (config.c) and the
 * flags (node_cfg_set), and prints --help. */
#define _GNU_SOURCE 1
#include "config.h"
#include "config_int.h"
#include "desired/desired.h"
#include "kube/kubewatch.h"
#include "kube/labelsel.h"
#include "base64.h"
#include "procctl_arbiter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procctl_agent.h"


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
	{"grpc_max_streams", set_u32, NUM(struct node_cfg, grpc_max_streams, 1, 65536), "32", "N",
	 "streams open on one gRPC connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS); a connection with more "
	 "than ten times that is shut down; at 8 KiB a stream, grpc_max_connections of them must fit in "
	 "grpc_memory_bytes"},
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
	{"kubernetes_processconfigs", set_bool, NUM(struct node_cfg, kube_pconfigs, 0, 1), "false", "BOOL",
	 "with kubernetes_api: watch the ProcessConfig objects of every namespace (procctl.io/v1alpha1; the "
	 "CRD is deploy/helm/procctl-node/files/processconfig-crd.yaml) and give each one's config to this "
	 "node's processes of the pods it selects"},
	{"kubernetes_processconfigs_max", set_u32, NUM(struct node_cfg, kube_pconfigs_max, 1, 65536), "1024", "N",
	 "ProcessConfig objects kept (more are counted: procctl_kube_processconfigs_dropped)"},
	{"kubernetes_processconfigs_bytes_max", set_u32, NUM(struct node_cfg, kube_pconfigs_bytes_max, 1 << 20, 256 << 20),
	 "33554432", "N", "... and their payloads' bytes, in all: one that would pass it is refused (said on the object)"},
	{"kubernetes_processconfigs_namespace_max", set_u32, NUM(struct node_cfg, kube_pconfigs_ns_max, 1, 65536), "64", "N",
	 "... applied of one namespace: one more is refused (said on the object), and the other namespaces' "
	 "apply"},
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

static const struct {
	const struct key *keys;
	size_t n;
} keysets[] = {
	[KEYS_GLOBAL] = {global_keys, NKEYS(global_keys)},
	[KEYS_ARBITER] = {arbiter_keys, NKEYS(arbiter_keys)},
	[KEYS_DESIRED] = {desired_keys, NKEYS(desired_keys)},
};

void cfg_defaults(enum keyset s, void *obj)
{
	apply_defaults(keysets[s].keys, keysets[s].n, obj);
}

int cfg_set_key(enum keyset s, const char *section, void *obj, const struct where *w, const char *key, const char *v)
{
	return set_key(keysets[s].keys, keysets[s].n, section, obj, w, key, v);
}

void node_cfg_defaults(struct node_cfg *c)
{
	memset(c, 0, sizeof *c);
	apply_defaults(global_keys, NKEYS(global_keys), c);
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
