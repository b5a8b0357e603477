/* SPDX-License-Identifier: Apache-2.0 */
/* kubeurl.h - the Kubernetes API server's URL as the daemon takes it:
 * checked (the config file's kubernetes_api), or in-cluster's, from the
 * pod's environment. Pure: no request made. */
#ifndef PROCCTL_NODE_KUBEURL_H
#define PROCCTL_NODE_KUBEURL_H

#include <stddef.h>

#define KUBEWATCH_URL_MAX 256

/* 0 when u is http(s)://HOST[:PORT][/PREFIX] (printable, no query,
 * fragment, user or quote); else -EINVAL and why in err. */
int kubewatch_url_check(const char *u, char *err, size_t errlen);

/* What kubernetes_api = in-cluster means: https://$KUBERNETES_SERVICE_HOST:
 * $KUBERNETES_SERVICE_PORT (an IPv6 address in brackets), into url (cap
 * bytes): 0, or -ENOENT and why in err (not in a pod). */
int kubewatch_in_cluster_url(char *url, size_t cap, char *err, size_t errlen);

#endif
