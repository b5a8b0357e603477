/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - libraries never print: one hook, set by the program. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"

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

static void vlog(enum procctl_log_level level, const char *event, uint64_t suppressed, const char *fmt, va_list ap)
{
	struct hook *h = __atomic_load_n(&hook, __ATOMIC_ACQUIRE);
	char fields[512];
	size_t len;
	if (!h)
		return;
	vsnprintf(fields, sizeof fields, fmt, ap);
	len = strlen(fields);
	if (suppressed && len < sizeof fields)
		snprintf(fields + len, sizeof fields - len, " suppressed=%llu", (unsigned long long)suppressed);
	h->fn(level, event, fields, h->arg);
}

void procctl_log(enum procctl_log_level level, const char *event, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(level, event, 0, fmt, ap);
	va_end(ap);
}

int procctl_ratelimit(struct procctl_ratelimit *rl, int64_t interval_ns, uint64_t *suppressed)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	int64_t now = procctl_now_ns();
	int pass;
	pthread_mutex_lock(&mu);
	pass = now >= rl->next_ns;
	if (pass) {
		*suppressed = rl->suppressed;
		rl->suppressed = 0;
		rl->next_ns = now + interval_ns;
	} else {
		rl->suppressed++;
	}
	pthread_mutex_unlock(&mu);
	return pass;
}

void procctl_log_limit(struct procctl_ratelimit *rl, enum procctl_log_level level, const char *event, const char *fmt,
		       ...)
{
	uint64_t suppressed;
	va_list ap;
	if (!__atomic_load_n(&hook, __ATOMIC_ACQUIRE) || !procctl_ratelimit(rl, 1000000000, &suppressed))
		return;
	va_start(ap, fmt);
	vlog(level, event, suppressed, fmt, ap);
	va_end(ap);
}

int64_t procctl_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
