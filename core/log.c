/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - libraries never print: one hook, set by the program. */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

#include <time.h>

/* The hook and its argument change together: one pointer to a pair. */
struct hook {
	procctl_log_fn fn;
	void *arg;
};
static struct hook hooks[2];
static struct hook *hook;
static unsigned next;

void procctl_set_log(procctl_log_fn fn, void *arg)
{
	struct hook *h = &hooks[next++ & 1u]; /* "set it before starting registries" */
	h->fn = fn;
	h->arg = arg;
	__atomic_store_n(&hook, fn ? h : NULL, __ATOMIC_RELEASE);
}

void procctl_log(enum procctl_log_level level, const char *event, const char *fmt, ...)
{
	struct hook *h = __atomic_load_n(&hook, __ATOMIC_ACQUIRE);
	char fields[512];
	va_list ap;

	if (!h)
		return;
	va_start(ap, fmt);
	vsnprintf(fields, sizeof fields, fmt, ap);
	va_end(ap);
	h->fn(level, event, fields, h->arg);
}

int64_t procctl_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
