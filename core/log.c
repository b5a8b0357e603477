/* log.c - libraries never print: one hook, set by the program. */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

static procctl_log_fn log_fn;
static void *log_arg;

void procctl_set_log(procctl_log_fn fn, void *arg)
{
	__atomic_store_n(&log_arg, arg, __ATOMIC_RELAXED);
	__atomic_store_n(&log_fn, fn, __ATOMIC_RELEASE);
}

void procctl_log(enum procctl_log_level level, const char *event, const char *fmt, ...)
{
	procctl_log_fn fn = __atomic_load_n(&log_fn, __ATOMIC_ACQUIRE);
	char fields[512];
	va_list ap;

	if (!fn)
		return;
	va_start(ap, fmt);
	vsnprintf(fields, sizeof fields, fmt, ap);
	va_end(ap);
	fn(level, event, fields, __atomic_load_n(&log_arg, __ATOMIC_RELAXED));
}
