/* SPDX-License-Identifier: Apache-2.0 */
/* config_check.c - what only procctl-node's whole configuration can show
 * (config.h's node_cfg_check): keys that go together, or need another. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config.h"

int node_cfg_check(const struct node_cfg *c, char *err, size_t errlen)
{
	int tls = !!c->tls_cert[0] + !!c->tls_key[0] + !!c->tls_client_ca[0];
	size_t i;
	if (tls && tls != 3) {
		snprintf(err, errlen, "tls_cert, tls_key and tls_client_ca go together (mTLS): %d of 3 given", tls);
		return -EINVAL;
	}
	if (c->http_writes && !c->http_api_key_file[0]) {
		snprintf(err, errlen, "http_writes needs http_api_key_file (writes are a JSON view)");
		return -EINVAL;
	}
	if (c->insecure_tcp_writes && !c->insecure_tcp) {
		snprintf(err, errlen, "insecure_tcp_writes needs insecure_tcp");
		return -EINVAL;
	}
	if (c->kube_api[0] && !c->kube_node[0]) {
		snprintf(err, errlen, "kubernetes_api needs kubernetes_node (whose pods to watch)");
		return -EINVAL;
	}
	for (i = 0; i < c->ndesired && !c->kube_api[0]; i++)
		if (!podsel_empty(&c->desired[i].pod)) {
			snprintf(err, errlen, "[desired %s]: namespace and label_selector need kubernetes_api (the pods' "
					      "namespaces and labels come from the Kubernetes API server)", c->desired[i].name);
			return -EINVAL;
		}
	if (c->kube_pconfigs && !c->kube_api[0]) {
		snprintf(err, errlen, "kubernetes_processconfigs needs kubernetes_api (the objects come from it)");
		return -EINVAL;
	}
	if (c->metrics_namespaces && !c->kube_api[0]) {
		snprintf(err, errlen, "metrics_namespaces needs kubernetes_api (the pods' namespaces come from the "
				      "Kubernetes API server)");
		return -EINVAL;
	}
	if (!strncmp(c->kube_api, "http://", 7) && c->kube_token_file[0]) {
		snprintf(err, errlen, "kubernetes_token_file: a token is sent over https only, not to %s", c->kube_api);
		return -EINVAL;
	}
	if (!c->ngrpc_listen) {
		snprintf(err, errlen, "grpc_listen: no listener");
		return -EINVAL;
	}
	if ((uint64_t)c->grpc_max_connections * c->grpc_max_streams * GRPC_STREAM_BYTES > c->grpc_memory_bytes) {
		snprintf(err, errlen, "grpc_max_connections (%u) times grpc_max_streams (%u) streams, at %u KiB each, "
				      "need %llu MiB: more than grpc_memory_bytes (%u MiB) bounds; lower one of the two or "
				      "raise grpc_memory_bytes",
			 c->grpc_max_connections, c->grpc_max_streams, GRPC_STREAM_BYTES / 1024,
			 (unsigned long long)(((uint64_t)c->grpc_max_connections * c->grpc_max_streams * GRPC_STREAM_BYTES +
					       (1u << 20) - 1) >> 20),
			 c->grpc_memory_bytes >> 20);
		return -EINVAL;
	}
	if (c->health_probe_ms && c->health_probe_ms < 100) {
		snprintf(err, errlen, "health_probe_ms: 0 (off) or at least 100, not %u", c->health_probe_ms);
		return -EINVAL;
	}
	for (i = 0; i < c->narbiters; i++) {
		const struct node_arbiter_cfg *a = &c->arbiters[i];
		size_t j;
		for (j = 0; j < c->nconsumers && strcmp(c->consumers[j], a->consumer); j++)
			;
		if (c->nconsumers && j == c->nconsumers) {
			snprintf(err, errlen, "[arbiter %s]: consumer %s is not one of consumers", a->name, a->consumer);
			return -EINVAL;
		}
	}
	for (i = 0; i < c->ngrpc_listen; i++)
		if (strncmp(c->grpc_listen[i], "unix:", 5) && !tls && !c->insecure_tcp) {
			snprintf(err, errlen, "grpc_listen %s: TCP needs tls_cert, tls_key and tls_client_ca, or insecure_tcp = true",
				 c->grpc_listen[i]);
			return -EINVAL;
		}
	return 0;
}
