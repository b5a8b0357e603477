/* SPDX-License-Identifier: Apache-2.0 */
/* jsonscan.h - JSON text (RFC 8259) checked for its grammar and
 * measured without building a tree: where a document's parts are and how
 * many values each holds, so that a peer's document is parsed (jansson)
 * one bounded part at a time. A tree costs tens of bytes a value: a list
 * page of 16 MiB of small values took 1.2 GB as one. Strings are checked
 * for their escapes, not for UTF-8 (jansson checks the parts it parses);
 * nesting deeper than JSONSCAN_DEPTH_MAX is refused. Pure: no allocation. */
#ifndef PROCCTL_NODE_JSONSCAN_H
#define PROCCTL_NODE_JSONSCAN_H

#include <stddef.h>

#define JSONSCAN_DEPTH_MAX 256

struct jsonscan {
	const char *p, *end; /* what is left */
	size_t values;       /* values scanned so far, those inside others included */
};

/* Blanks skipped: 1 and c taken when it comes next, else 0. */
int jsonscan_take(struct jsonscan *s, char c);
/* Blanks skipped: 1 at the end, else 0. */
int jsonscan_end(struct jsonscan *s);
/* One value (blanks before it skipped): 0, *at where it starts and s->p
 * after it; -EINVAL it is none (s->p somewhere in it). */
int jsonscan_value(struct jsonscan *s, const char **at);
/* An object member's key and its colon: 0 and the key's text between its
 * quotes (escapes as written) in *key, *len; -EINVAL none. */
int jsonscan_key(struct jsonscan *s, const char **key, size_t *len);

#endif
