/* SPDX-License-Identifier: Apache-2.0 */
/* kubehttp.c - a request to the Kubernetes API server (kubehttp.h). */
#define _GNU_SOURCE 1
#include "kubehttp.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int kubehttp_init(void)
{
	pthread_once(&curl_once, curl_init);
	return curl_init_rc == CURLE_OK ? 0 : -EIO;
}

void kubehttp_setup(CURL *h, const char *ca_file, char *errbuf)
{
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)KUBEHTTP_CONNECT_MS);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "procctl-node");
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	if (ca_file[0])
		curl_easy_setopt(h, CURLOPT_CAINFO, ca_file);
}

/* The token file's token into tok (cap bytes): 0, or -EIO and why. */
static int token(const char *file, char *tok, size_t cap, char *why, size_t whylen)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	ssize_t n;
	size_t i;
	if (fd < 0 || (n = read(fd, tok, cap - 1)) < 0) {
		snprintf(why, whylen, "token file %s: %s", file, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	close(fd);
	while (n > 0 && strchr(" \t\r\n", tok[n - 1]))
		n--;
	tok[n] = 0;
	for (i = 0; i < (size_t)n; i++)
		if (tok[i] < 0x21 || tok[i] > 0x7e) {
			snprintf(why, whylen, "token file %s: not a token (a byte that is not printable, or a blank)", file);
			return -EIO;
		}
	if (!n || (size_t)n == cap - 1) {
		snprintf(why, whylen, "token file %s: empty, or over %zu bytes", file, cap - 2);
		return -EIO;
	}
	return 0;
}

int kubehttp_headers(const char *token_file, const char *const *more, struct curl_slist **out, char *why, size_t whylen)
{
	char tok[KUBEHTTP_TOKEN_MAX], auth[KUBEHTTP_TOKEN_MAX + 32];
	struct curl_slist *hdr = NULL, *h2;
	*out = NULL;
	if (token_file[0]) {
		if (token(token_file, tok, sizeof tok, why, whylen) < 0)
			return -EIO;
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
		hdr = curl_slist_append(hdr, auth);
		explicit_bzero(tok, sizeof tok);
		explicit_bzero(auth, sizeof auth);
		if (!hdr)
			goto nomem;
	}
	for (; more && *more; more++) {
		if (!(h2 = curl_slist_append(hdr, *more)))
			goto nomem;
		hdr = h2;
	}
	*out = hdr;
	return 0;
nomem:
	curl_slist_free_all(hdr);
	snprintf(why, whylen, "out of memory");
	return -EIO;
}
