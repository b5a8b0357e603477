/* SPDX-License-Identifier: Apache-2.0 */
/* The seed README's "Using the C side" block, verbatim: its first three
 * lines (c_side_top.inc) open this file, the rest (c_side.inc) is the
 * body of main. Run without an agent it must find nothing new, the lease
 * expired (so use_defaults ran once) and no grant usable: exit 0 when all
 * of that held. The names the block leaves to the application (apply,
 * use_defaults, status, status_len) are defined here. */
#include "c_side_top.inc"

#include <errno.h>
#include <stdio.h>

static int defaults, applied;
static const char status[] = "status";
static const size_t status_len = sizeof status - 1;

static void apply(const char *b, int n)
{
	(void)b;
	(void)n;
	applied++;
}

static void use_defaults(void)
{
	defaults++;
}

int main(void)
{
#include "c_side.inc"
	procctl_grant_t g;
	(void)gen;
	if (n != 0 || applied || defaults != 1) {
		fprintf(stderr, "seed c side: poll %d, applied %d, defaults %d (want 0, 0, 1)\n", n, applied, defaults);
		return 1;
	}
	/* A literal 0 is the all-zero id. */
	if (procctl_grant_get(&ctx, 1, 0, &g) != 0 || procctl_grant_usable(&ctx, &g, 0)) {
		fprintf(stderr, "seed c side: a grant without an agent\n");
		return 1;
	}
	puts("seed c side: nothing new, lease expired, no grant usable");
	return 0;
}
