/* SPDX-License-Identifier: Apache-2.0 */
/* httpindex.c - the landing page at / (httpindex.h). */
#include <stdio.h>
#include <stdlib.h>

#include "httpindex.h"
#include "procctl.h"

char *http_index_page(int views, size_t *len)
{
	char *page = NULL;
	int n = asprintf(&page,
			 "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>procctl-node</title></head><body>\n"
			 "<h1>procctl-node</h1>\n<p>version %s, API procctl.v1, wire %u.%u</p>\n<ul>\n"
			 "<li><a href=\"/metrics\">/metrics</a>: Prometheus metrics</li>\n"
			 "<li><a href=\"/healthz\">/healthz</a>: alive</li>\n"
			 "<li><a href=\"/readyz\">/readyz</a>: ready (its first scan of /proc done)</li>\n<li>%s</li>\n"
			 "</ul>\n</body></html>\n",
			 PROCCTL_NODE_VERSION, (unsigned)PROCCTL_VERSION_MAJOR, (unsigned)PROCCTL_VERSION_MINOR,
			 views ? "<a href=\"/v1/processes\">/v1/processes</a>, <a href=\"/v1/arbiters\">/v1/arbiters</a>: "
				 "the API's views as JSON, with the key (Authorization: Bearer)"
			       : "the JSON views (/v1/processes, /v1/arbiters) are off here: a loopback listener with "
				 "http_api_key_file serves them");
	if (n < 0)
		return NULL;
	*len = (size_t)n;
	return page;
}
