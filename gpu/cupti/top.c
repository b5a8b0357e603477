/* SPDX-License-Identifier: Apache-2.0 */
/* top.c - samples by function (inject.h): TOP_TRACK names counted apart,
 * found by hash, the samples of any name past those counted as other. A
 * name is its first PCSAMPLING_NAME - 1 bytes. */
#include <string.h>

#include "inject.h"

#define SLOTS (2 * TOP_TRACK)

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

void top_add(struct top *t, const char *function, uint64_t samples)
{
	char name[PCSAMPLING_NAME];
	uint32_t i;
	strncpy(name, function && *function ? function : "(unknown)", sizeof name - 1);
	name[sizeof name - 1] = 0;
	for (i = hash(name) % SLOTS;; i = (i + 1) % SLOTS) {
		struct top_fn *f;
		if (!t->slot[i]) {
			if (t->n == TOP_TRACK) {
				t->other += samples;
				return;
			}
			f = &t->fn[t->n];
			memcpy(f->name, name, sizeof name);
			f->samples = samples;
			t->slot[i] = (uint16_t)++t->n;
			return;
		}
		f = &t->fn[t->slot[i] - 1];
		if (!strcmp(f->name, name)) {
			f->samples += samples;
			return;
		}
	}
}

unsigned top_best(const struct top *t, struct pcsampling_function *out, unsigned n)
{
	unsigned k, i;
	uint8_t taken[TOP_TRACK] = {0};
	for (k = 0; k < n; k++) {
		int best = -1;
		for (i = 0; i < t->n; i++)
			if (!taken[i] && (best < 0 || t->fn[i].samples > t->fn[best].samples))
				best = (int)i;
		if (best < 0)
			break;
		taken[best] = 1;
		memset(&out[k], 0, sizeof out[k]);
		out[k].samples = t->fn[best].samples;
		memcpy(out[k].name, t->fn[best].name, sizeof out[k].name);
	}
	return k;
}
