/* SPDX-License-Identifier: Apache-2.0 */
/* kubehttp.h - what every request to the Kubernetes API server shares
 * (kubewatch.h's lists and watches, kubewrite.h's writes): libcurl set up
 * once, a handle's options (no signals, http and https only, no
 * redirects, a connect timeout, the CA of the server's certificate), and
 * the bearer token, read again for each request (a projected token is
 * rotated in place) and never left in memory after it. */
#ifndef PROCCTL_NODE_KUBEHTTP_H
#define PROCCTL_NODE_KUBEHTTP_H

#include <stddef.h>

#include <curl/curl.h>

#define KUBEHTTP_CONNECT_MS 10000
#define KUBEHTTP_TOKEN_MAX 16384

/* libcurl's global setup, once for the process: 0, or -EIO. */
int kubehttp_init(void);
/* h's options for the API server whose CA is ca_file ("": the system's),
 * errors into errbuf (CURL_ERROR_SIZE bytes). */
void kubehttp_setup(CURL *h, const char *ca_file, char *errbuf);
/* A request's headers: Authorization with token_file's token ("": none)
 * and then each of more (NULL-ended). 0 and *out (the caller's:
 * curl_slist_free_all), or -EIO and why in why (the file, and what is
 * wrong with it). */
int kubehttp_headers(const char *token_file, const char *const *more, struct curl_slist **out, char *why, size_t whylen);

#endif
