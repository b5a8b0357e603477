/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - procctl-node's log (log.h). */
#include "log.h"

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

int node_log_limit(struct procctl_ratelimit *rl, enum procctl_log_level level, const char *event, const char *fmt, ...)
{
	uint64_t suppressed;
	char fields[1024];
	size_t len;
	va_list ap;
	if (level > log_max || !procctl_ratelimit(rl, 1000000000, &suppressed))
		return 0;
	va_start(ap, fmt);
	vsnprintf(fields, sizeof fields, fmt, ap);
	va_end(ap);
	len = strlen(fields);
	if (suppressed && len < sizeof fields)
		snprintf(fields + len, sizeof fields - len, " suppressed=%llu", (unsigned long long)suppressed);
	line(level, event, fields);
	return 1;
}

const char *node_log_quote(char *buf, size_t len, const char *s)
{
	size_t o = 0;
	for (; *s && o + 5 < len; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)c;
		} else if (c < 0x20 || c > 0x7e) {
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
		} else {
			buf[o++] = (char)c;
		}
	}
	buf[o] = 0;
	return buf;
}
