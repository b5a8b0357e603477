/* SPDX-License-Identifier: Apache-2.0 */
/* desired_int.h - what desired.c (the store in memory) and desired_file.c
 * (its file) share. Internal to procctl-node's desired configs. The file
 * calls the store; the store saves through s->save, which the file sets. */
#ifndef PROCCTL_NODE_DESIRED_INT_H
#define PROCCTL_NODE_DESIRED_INT_H

#include "desired.h"

#define REVISION_MAX (1ull << 62) /* a billion changes a second for a century: never reached */

/* A config's precedence: its selector's most specific field. */
enum desired_level desired_level_of(const struct selector *k, const struct podsel *ps);
/* Add a config of revision rev (and created rev): 0, or -ENOMEM. */
int desired_append(struct desired_store *s, const struct selector *sel, const struct podsel *pod, const void *payload,
		   size_t len, uint64_t rev, const char *source);
/* Forget every config (the store stays open): the API's and the file's;
 * the ProcessConfigs'. */
void desired_forget(struct desired_store *s);
void desired_kube_forget(struct desired_store *s);

#endif
