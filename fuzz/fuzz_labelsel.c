/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_labelsel - a Kubernetes label selector, as a client or a config
 * file gives it. Accepted: its canonical form is printable, within the
 * bound, accepted again as itself, and matches exactly the label sets the
 * selector as given matches. Refused: the reason is printable. */
#define _GNU_SOURCE 1
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kube/labelsel.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct label a[] = {{"app", "web"}, {"tier", "a"}, {"n", "5"}};
	static const struct label b[] = {{"x", ""}, {"in", "in"}, {"k00", "v"}, {"s", "-3"}, {"example.com/t", "A.b"}};
	static const struct label c[] = {{"app", "db"}, {"n", "99999999999999999999"}, {"canary", "true"}};
	const struct {
		const struct label *l;
		size_t n;
	} sets[] = {{NULL, 0}, {a, 3}, {b, 5}, {c, 3}};
	static char sel[LABELSEL_MAX + 1], canon[LABELSEL_MAX + 1], again[LABELSEL_MAX + 1], err[512];
	size_t i;

	err[0] = 0;
	if (labelsel_check((const char *)data, size, canon, sizeof canon, err, sizeof err) < 0) {
		if (!err[0])
			abort();
		fuzz_printable(err);
		return 0;
	}
	if (size > LABELSEL_MAX || memchr(data, 0, size) || strlen(canon) > LABELSEL_MAX)
		abort();
	fuzz_printable(canon);
	if (labelsel_check(canon, strlen(canon), again, sizeof again, err, sizeof err) < 0 || strcmp(canon, again))
		abort();
	memcpy(sel, data, size);
	sel[size] = 0;
	for (i = 0; i < sizeof sets / sizeof sets[0]; i++)
		if (labelsel_match(sel, sets[i].l, sets[i].n) != labelsel_match(canon, sets[i].l, sets[i].n))
			abort();
	return 0;
}
