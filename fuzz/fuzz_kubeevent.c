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

#include "fuzz_pod.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct podmeta pod;
	static struct kube_event ev = {.obj = &pod};
	static char err[512];

	err[0] = 0;
	if (kube_event_parse(&podmeta_kind, (const char *)data, size, &ev, err, sizeof err) < 0) {
		if (!err[0])
			abort();
		fuzz_printable(err);
		/* Its pod, to be forgotten: a UID (a static pod's hash) alone. */
		if (podmeta_kind.forget((const char *)data, size, &pod) == 0 &&
		    ((strlen(pod.uid) != 36 && strlen(pod.uid) != 32) || pod.ns[0] || pod.name[0] || pod.nlabels ||
		     pod.ncontainers || pod.nstatuses || pod.used))
			abort();
		return 0;
	}
	fuzz_printable(ev.rv);
	fuzz_printable(ev.reason);
	if (ev.type == KUBE_ERROR || ev.type == KUBE_BOOKMARK)
		return 0;
	if (strcmp(ev.rv, pod.rv))
		abort();
	fuzz_pod(&pod);
	return 0;
}
