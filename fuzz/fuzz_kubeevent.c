/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_kubeevent - one line of a Kubernetes API server's watch of pods,
 * the API server as a hostile peer. Accepted: every name is as
 * Kubernetes validates it (a UID, DNS names), every label a valid key and
 * value that labelsel can match, the bounds held, the strings printable;
 * refused: the reason is printable. */
#define _GNU_SOURCE 1
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "labelsel.h"
#include "podmeta.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct kube_event ev;
	static struct label ls[PODMETA_LABELS_MAX];
	static char err[512];
	size_t i, n;

	err[0] = 0;
	if (kube_event_parse((const char *)data, size, &ev, err, sizeof err) < 0) {
		if (!err[0])
			abort();
		fuzz_printable(err);
		return 0;
	}
	fuzz_printable(ev.rv);
	fuzz_printable(ev.reason);
	if (ev.type == KUBE_ERROR || ev.type == KUBE_BOOKMARK)
		return 0;
	if (strlen(ev.pod.uid) != 36 || !labelsel_subdomain_valid(ev.pod.ns, strlen(ev.pod.ns)) ||
	    !labelsel_subdomain_valid(ev.pod.name, strlen(ev.pod.name)) || strcmp(ev.rv, ev.pod.rv))
		abort();
	if (ev.pod.nlabels > PODMETA_LABELS_MAX || ev.pod.ncontainers > PODMETA_CONTAINERS_MAX ||
	    ev.pod.used > PODMETA_TEXT_MAX || (ev.pod.labels_over && ev.pod.nlabels))
		abort();
	n = podmeta_labels(&ev.pod, ls);
	for (i = 0; i < n; i++) {
		if (!labelsel_key_valid(ls[i].key, strlen(ls[i].key)) || !labelsel_value_valid(ls[i].value, strlen(ls[i].value)))
			abort();
		if (!labelsel_match("", ls, n))
			abort();
	}
	for (i = 0; i < ev.pod.ncontainers; i++)
		fuzz_printable(ev.pod.text + ev.pod.containers[i]);
	return 0;
}
