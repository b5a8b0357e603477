/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - procctl-node's log (log.h). */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum procctl_log_level log_max = PROCCTL_LOG_INFO;

void node_log_level(enum procctl_log_level max)
{
	log_max = max;
}

static void line(enum procctl_log_level level, const char *event, const char *fields)
{
	static const char *names[] = {"error", "warn", "info", "debug"};
	char ts[32];
	struct timespec t;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &t);
	gmtime_r(&t.tv_sec, &tm);
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "ts=%s.%03ldZ level=%s event=%s%s%s\n", ts, t.tv_nsec / 1000000, names[level], event,
		fields[0] ? " " : "", fields);
}

void node_log(enum procctl_log_level level, const char *event, const char *fmt, ...)
{
	char fields[1024];
	va_list ap;
	if (level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(fields, sizeof fields, fmt, ap);
	va_end(ap);
	line(level, event, fields);
}

void node_log_limit(struct node_log_limit *l, enum procctl_log_level level, const char *event, const char *fmt, ...)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	unsigned long long suppressed;
	long long now = procctl_now_ns();
	char fields[1024];
	size_t len;
	va_list ap;
	if (level > log_max)
		return;
	pthread_mutex_lock(&mu);
	if (now < l->next_ns) {
		l->suppressed++;
		pthread_mutex_unlock(&mu);
		return;
	}
	suppressed = l->suppressed;
	l->suppressed = 0;
	l->next_ns = now + 1000000000ll;
	pthread_mutex_unlock(&mu);
	va_start(ap, fmt);
	vsnprintf(fields, sizeof fields, fmt, ap);
	va_end(ap);
	len = strlen(fields);
	if (suppressed && len < sizeof fields)
		snprintf(fields + len, sizeof fields - len, " suppressed=%llu", suppressed);
	line(level, event, fields);
}
