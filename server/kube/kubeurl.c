/* SPDX-License-Identifier: Apache-2.0 */
/* kubeurl.c - the API server's URL: checked, and in-cluster's (kubeurl.h). */
#include "kubeurl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kubewatch_url_check(const char *u, char *err, size_t errlen)
{
	size_t n = strlen(u), i;
	const char *host = !strncmp(u, "https://", 8) ? u + 8 : !strncmp(u, "http://", 7) ? u + 7 : NULL;
	for (i = 0; i < n && u[i] > 0x20 && u[i] < 0x7f && !strchr("?#@\"\\", u[i]); i++)
		;
	if (!host || !*host || *host == '/' || i < n || n >= KUBEWATCH_URL_MAX) {
		snprintf(err, errlen, "not a URL http(s)://HOST[:PORT] of at most %d bytes, or in-cluster",
			 KUBEWATCH_URL_MAX - 1);
		return -EINVAL;
	}
	return 0;
}

int kubewatch_in_cluster_url(char *url, size_t cap, char *err, size_t errlen)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
	int n;
	if (!host || !*host || !port || !*port) {
		snprintf(err, errlen, "kubernetes_api = in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are "
				      "not set (not in a pod?): give the API server's URL instead");
		return -ENOENT;
	}
	n = snprintf(url, cap, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
	if (n < 0 || (size_t)n >= cap) {
		snprintf(err, errlen, "kubernetes_api = in-cluster: KUBERNETES_SERVICE_HOST too long");
		return -ENAMETOOLONG;
	}
	return kubewatch_url_check(url, err, errlen) < 0 ? -EINVAL : 0;
}
