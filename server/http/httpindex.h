/* SPDX-License-Identifier: Apache-2.0 */
/* httpindex.h - the landing page at / of procctl-node's HTTP side (as
 * node_exporter has one): the version and links to what the listener
 * serves; nothing secret (no key, no paths). */
#ifndef PROCCTL_NODE_HTTPINDEX_H
#define PROCCTL_NODE_HTTPINDEX_H

#include <stddef.h>

/* The page (malloc'd, *len bytes), linking the JSON views when views
 * (this listener serves them); NULL when out of memory. */
char *http_index_page(int views, size_t *len);

#endif
