/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - procctl-node's log (log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static enum procctl_log_level log_max = PROCCTL_LOG_INFO;

void node_log_level(enum procctl_log_level max)
{
	log_max = max;
}

void node_log(enum procctl_log_level level, const char *event, const char *fmt, ...)
{
	static const char *names[] = {"error", "warn", "info", "debug"};
	char fields[1024], ts[32];
	struct timespec t;
	struct tm tm;
	va_list ap;
	if (level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(fields, sizeof fields, fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_REALTIME, &t);
	gmtime_r(&t.tv_sec, &tm);
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "ts=%s.%03ldZ level=%s event=%s%s%s\n", ts, t.tv_nsec / 1000000, names[level], event,
		fields[0] ? " " : "", fields);
}
