/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_kubelist - one page of a Kubernetes API server's list of pods, the
 * API server as a hostile peer. Accepted: its version and continue token
 * printable and bounded, every pod given as fuzz_pod.h checks, the counts
 * right; refused: the reason is printable. */
#define _GNU_SOURCE 1
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_pod.h"

static void item(void *arg, const void *obj)
{
	(*(size_t *)arg)++;
	fuzz_pod(obj);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct kube_page pg;
	static struct podmeta m;
	static char err[512];
	size_t n = 0;

	err[0] = 0;
	if (kube_list_parse(&podmeta_kind, &m, (const char *)data, size, 2048, &pg, item, &n, err, sizeof err) < 0) {
		if (!err[0] || n)
			abort();
		fuzz_printable(err);
		return 0;
	}
	if (!pg.rv[0] || strlen(pg.rv) > KUBE_RV_MAX || strlen(pg.cont) > KUBE_CONTINUE_MAX || n != pg.items ||
	    (pg.rejected && !pg.rejected_why[0]))
		abort();
	fuzz_printable(pg.rv);
	fuzz_printable(pg.cont);
	fuzz_printable(pg.rejected_why);
	return 0;
}
