/* SPDX-License-Identifier: Apache-2.0 */
/* opts.c - options structs of any version (opts.h). */
#include "opts.h"

#include <errno.h>
#include <string.h>

int procctl_out_give(void *out, size_t sz, const void *mine, size_t msz)
{
	if (!out || !sz)
		return -EINVAL;
	memcpy(out, mine, sz < msz ? sz : msz);
	if (sz > msz)
		memset((char *)out + msz, 0, sz - msz);
	return 0;
}

int procctl_opts_take(void *o, size_t osz, const void *opts)
{
	const unsigned char *p = opts;
	size_t sz, i;

	memset(o, 0, osz);
	if (!opts)
		return 0;
	memcpy(&sz, opts, sizeof sz);
	if (sz < sizeof sz || sz > PROCCTL_OPTS_MAX)
		return -EINVAL;
	for (i = osz; i < sz; i++)
		if (p[i])
			return -EINVAL;
	memcpy(o, opts, sz < osz ? sz : osz);
	return 0;
}
