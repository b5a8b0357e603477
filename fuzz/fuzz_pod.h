/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_pod.h - what the fuzz targets of the Kubernetes API server's bytes
 * (a watch's events, a list's pages) check of every pod they accept. */
#ifndef PROCCTL_FUZZ_POD_H
#define PROCCTL_FUZZ_POD_H

#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kube/labelsel.h"
#include "kube/podmeta.h"

/* Abort unless m is what podmeta.h promises: every name as Kubernetes
 * validates it (a UID, DNS names), every label a valid key and value that
 * labelsel can match, the bounds held, the strings printable; and its copy
 * (podmeta_dup) the same. */
static inline void fuzz_pod(const struct podmeta *m)
{
	static struct label ls[PODMETA_LABELS_MAX];
	struct podmeta *d;
	size_t i, n;

	fuzz_printable(m->rv);
	if (strlen(m->uid) != 36 || !labelsel_subdomain_valid(m->ns, strlen(m->ns)) ||
	    !labelsel_subdomain_valid(m->name, strlen(m->name)))
		abort();
	if (m->nlabels > PODMETA_LABELS_MAX || m->ncontainers > PODMETA_CONTAINERS_MAX || m->used > PODMETA_TEXT_MAX ||
	    (m->labels_over && m->nlabels))
		abort();
	n = podmeta_labels(m, ls);
	for (i = 0; i < n; i++) {
		if (!labelsel_key_valid(ls[i].key, strlen(ls[i].key)) || !labelsel_value_valid(ls[i].value, strlen(ls[i].value)))
			abort();
		if (!labelsel_match("", ls, n))
			abort();
	}
	for (i = 0; i < m->ncontainers; i++)
		fuzz_printable(m->text + m->containers[i]);
	if (m->nstatuses > PODMETA_CONTAINERS_MAX)
		abort();
	for (i = 0; i < m->nstatuses; i++) {
		const char *id = m->text + m->statuses[i].id;
		if (!id[0] || strlen(id) > 64 || strspn(id, "0123456789abcdef") != strlen(id) ||
		    strcmp(podmeta_container(m, id) ? podmeta_container(m, id) : "", "") == 0)
			abort();
		fuzz_printable(m->text + m->statuses[i].name);
	}
	if (!(d = podmeta_dup(m)))
		abort();
	if (strcmp(d->uid, m->uid) || d->used != m->used || memcmp(d->text, m->text, m->used))
		abort();
	free(d);
}

#endif
