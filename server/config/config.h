/* SPDX-License-Identifier: Apache-2.0 */
/* config.h - procctl-node's configuration: the embedded defaults, a
 * config file (server/config/procctl-node.conf is the commented example) and
 * flags, each later source overriding the earlier. Errors name the file,
 * the line and the key. */
#ifndef PROCCTL_NODE_CONFIG_H
#define PROCCTL_NODE_CONFIG_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "match/admission.h"
#include "match/selector.h"
#include "procctl.h"

#define NODE_LISTEN_MAX 8
#define NODE_CONSUMERS_MAX 32
#define NODE_ARBITERS_MAX 8
#define NODE_RESOURCES_MAX 16
#define NODE_PATH_MAX 256
#define NODE_DESIRED_MAX 64
#define NODE_DESIRED_DATA_MAX 3000
#define NODE_DEFAULT_SOCKET "/run/procctl/node.sock"
#define NODE_KIND_NAME_MAX 15 /* a resource kind's name: [a-z0-9_.-]{1,15} */

/* An [arbiter NAME] section: the resource kind NAME (for people: the API,
 * metrics, the CLI), whose number (the wire's) is kind. */
struct node_arbiter_cfg {
	char name[NODE_KIND_NAME_MAX + 1];
	uint32_t kind;
	char consumer[PROCCTL_CONSUMER_MAX + 1]; /* whose processes it grants to */
	uint64_t hold_ns;
	int process_bound;
	procctl_resource_t resources[NODE_RESOURCES_MAX]; /* known up front; others are learned */
	size_t nresources;
	uint32_t learn_max;        /* resources one process may add by asking */
	struct admission admit;    /* who it grants to */
};

/* A [desired NAME] section: a desired config kept in the file (a
 * ConfigMap), for a consumer, narrowed by a pod, a container, a namespace
 * or a label selector. */
struct node_desired_cfg {
	char name[PROCCTL_CONSUMER_MAX + 1];
	struct selector sel;
	struct podsel pod;
	size_t len;
	int has_data;
	uint8_t data[NODE_DESIRED_DATA_MAX];
};

/* What one open gRPC stream may cost, for grpc_max_connections times
 * grpc_max_streams of them to fit in grpc_memory_bytes (node_cfg_check):
 * 256 connections each keeping 100 calls asked cost 4 to 5.3 KiB a
 * stream (the gRPC core's call and transport state, 1.51). */
#define GRPC_STREAM_BYTES 8192u

struct node_cfg {
	char grpc_listen[NODE_LISTEN_MAX][NODE_PATH_MAX]; /* "unix:PATH" or "HOST:PORT" */
	size_t ngrpc_listen;
	char http_listen[NODE_PATH_MAX]; /* "HOST:PORT" (default 127.0.0.1:9464); "" off */
	int http_writes;        /* POST /v1/processes/{pid}/config served */
	char http_api_key_file[NODE_PATH_MAX]; /* the JSON views' key ("": the views are off) */
	int hello;              /* fast discovery with the procctl:hello probe (default on) */
	uint32_t tls_refresh_s; /* how often the TLS files are read again (default 60) */
	char consumers[NODE_CONSUMERS_MAX][PROCCTL_CONSUMER_MAX + 1]; /* none: every consumer */
	size_t nconsumers;
	uint64_t lease_ns, rescan_ns;
	char socket_group[33];   /* the Unix sockets' group, a name or a gid ("": the daemon's) */
	char lock_dir[NODE_PATH_MAX];
	char state_dir[NODE_PATH_MAX]; /* desired configs are kept here */
	char tls_cert[NODE_PATH_MAX], tls_key[NODE_PATH_MAX], tls_client_ca[NODE_PATH_MAX];
	int insecure_tcp;        /* plain TCP listeners allowed (read-only) */
	int insecure_tcp_writes; /* ... and mutating calls on them */
	uint32_t max_regions, max_per_process, max_consumers;
	uint32_t max_message_bytes;
	uint32_t grpc_max_streams;      /* per connection (SETTINGS_MAX_CONCURRENT_STREAMS) */
	uint32_t grpc_max_calls;        /* open at once, in all */
	uint32_t grpc_max_connections;  /* of each transport */
	uint32_t grpc_max_connections_per_peer; /* per TCP address, per Unix uid (root: none) */
	uint32_t grpc_handshake_ms;     /* a TCP connection's TLS and HTTP/2 handshakes */
	uint32_t grpc_memory_bytes;     /* the gRPC core's memory quota */
	uint32_t max_watchers, max_watchers_per_peer; /* streams open, in all and per caller */
	uint32_t watch_history; /* events kept for resumes; a watcher that far behind is cut off */
	uint32_t max_waits, max_waits_per_peer; /* calls waiting for acks, in all and per caller */
	uint32_t max_wait_ms;                   /* the longest wait_ms asked for */
	uint32_t desired_max, desired_bytes_max; /* desired configs kept, and their payload bytes, in all */
	char kube_api[NODE_PATH_MAX];  /* "": off; "in-cluster"; or the API server's URL */
	char kube_node[254];           /* spec.nodeName of this node's pods */
	char kube_token_file[NODE_PATH_MAX], kube_ca_file[NODE_PATH_MAX]; /* "": in-cluster's, or none */
	uint32_t kube_watch_s, kube_pods_max;
	uint32_t kube_page_bytes_max;  /* a list's page, refused unparsed past it */
	uint32_t kube_event_bytes_max; /* a watch event, refused unparsed past it */
	int kube_pconfigs;             /* watch ProcessConfigs (every namespace's) and apply them */
	uint32_t kube_pconfigs_max, kube_pconfigs_bytes_max; /* ProcessConfigs kept, and their payload bytes */
	uint32_t kube_pconfigs_ns_max; /* ... applied of one namespace */
	uint32_t metrics_namespaces; /* per-resource time by namespace, at most this many a resource (0: off) */
	uint32_t slow_turn_ms;       /* a turn of the loop longer is counted and logged (slow_turn) */
	uint32_t health_probe_ms;    /* the self-probe's period on the Unix socket (0: off) */
	int log_debug;
	struct node_arbiter_cfg arbiters[NODE_ARBITERS_MAX];
	size_t narbiters;
	struct node_desired_cfg desired[NODE_DESIRED_MAX];
	size_t ndesired;
	int grpc_listen_src; /* private: the source that set grpc_listen last */
};

/* The embedded defaults: gRPC on unix:/run/procctl/node.sock, HTTP on
 * 127.0.0.1:9464, every consumer, lease 10 s, rescan 60 s. */
void node_cfg_defaults(struct node_cfg *c);

/* Apply a config file's text (name is used in errors). 0, or -EINVAL with
 * "NAME:LINE: KEY: what is wrong" in err. */
int node_cfg_parse(struct node_cfg *c, const char *text, size_t len, const char *name, char *err, size_t errlen);

/* The same for a file: also -errno when it cannot be read (said in err). */
int node_cfg_load(struct node_cfg *c, const char *path, char *err, size_t errlen);

/* Set one key of the file's global part from a flag (--lease-ms 5000 is
 * key "lease_ms"; --grpc-listen is repeatable and its first replaces the
 * file's listeners): 0, or -EINVAL with "--flag: what is wrong" in err
 * ("no such flag"; "needs a value" when value is NULL). */
int node_cfg_set(struct node_cfg *c, const char *key, const char *value, char *err, size_t errlen);

/* The i-th key of the file's global part (each is a flag too, '-' for
 * '_'): its name, with the form of its value in *form (NULL: a key that
 * was removed, refused with the reason); NULL past the last. */
const char *node_cfg_key(size_t i, const char **form);

/* Every key, with its form, its default and a line on it (--help): the
 * flags, then the keys of [arbiter] and [desired] sections. */
void node_cfg_usage(FILE *f);

/* A HOST:PORT listen address (a grpc_listen or http_listen) as bound to
 * port, into buf: the port the kernel picked for PORT 0 is said as the
 * address's. buf. */
char *node_cfg_bound_addr(const char *addr, unsigned port, char *buf, size_t len);

/* socket_group's gid in *gid ((gid_t)-1 when it is empty: the daemon's
 * own). 0, or -errno with "socket_group NAME: why" in err (-ENOENT: no
 * such group). */
int node_cfg_socket_gid(const struct node_cfg *c, gid_t *gid, char *err, size_t errlen);

/* What only the whole configuration can show (TLS files all or none, TCP
 * listeners without TLS or the insecure flag, what kubernetes_api is
 * needed for; config_check.c): 0, or -EINVAL and err. */
int node_cfg_check(const struct node_cfg *c, char *err, size_t errlen);

#endif
