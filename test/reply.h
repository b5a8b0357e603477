/* SPDX-License-Identifier: Apache-2.0 */
/* reply.h - the line protocol of the test helpers agentsim and procsim:
 * one reply line on stdout per command, flushed. */
#ifndef PROCCTL_REPLY_H
#define PROCCTL_REPLY_H

#include <stdarg.h>
#include <stdio.h>

static void reply(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static void reply(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

#endif
