/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_jsonscan - JSON text from a hostile peer (the API server), its
 * grammar scanned without a tree, against jansson's parse of the same
 * bytes: what jansson takes (any value, NULs in strings) the scan takes,
 * unless it nests deeper than JSONSCAN_DEPTH_MAX; what the scan takes
 * jansson takes, unless jansson refuses it for what the scan leaves to it
 * (UTF-8, a \u escape's surrogates, a NUL in a key, numbers too large
 * for it), and jansson ends the text at a NUL byte where the scan refuses
 * one. Never past the end, and the values counted as jansson's tree holds
 * them (where no key is there twice: jansson keeps the last). */
#define _GNU_SOURCE 1
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kube/jsonscan.h"

static size_t count(const json_t *v, size_t depth, size_t *deepest)
{
	const char *k;
	json_t *x;
	size_t i, n = 1;
	if (depth > *deepest)
		*deepest = depth;
	if (json_is_object(v))
		json_object_foreach((json_t *)v, k, x) n += count(x, depth + 1, deepest);
	else if (json_is_array(v))
		json_array_foreach(v, i, x) n += count(x, depth + 1, deepest);
	return n;
}

static int leaves_to_jansson(const char *why)
{
	return strstr(why, "unable to decode byte") || strstr(why, "Unicode") || strstr(why, "NUL byte in object key") ||
	       strstr(why, "maximum parsing depth") || strstr(why, "too big") || strstr(why, "overflow");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jsonscan s = {(const char *)data, (const char *)data + size, 0};
	const char *at;
	json_error_t je;
	json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	int ok = jsonscan_value(&s, &at) == 0 && jsonscan_end(&s);
	size_t deepest = 0;
	if (s.p < (const char *)data || s.p > (const char *)data + size)
		abort();
	if (v) {
		size_t n = count(v, 1, &deepest);
		if (!ok && deepest <= JSONSCAN_DEPTH_MAX && !memchr(data, 0, size))
			abort(); /* jansson's JSON, refused */
		json_t *strict = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES,
					    NULL);
		if (ok && strict && n != s.values)
			abort();
		json_decref(strict);
	} else if (ok && !leaves_to_jansson(je.text)) {
		abort(); /* no JSON, taken */
	}
	json_decref(v);
	return 0;
}
