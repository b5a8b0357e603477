/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - procctl-node's log (log.h).
 *
 * Once node_log_start ran, a line is queued and a thread of its own
 * (procctl-log) writes it: stderr is a pipe or a socket to whoever keeps
 * the log (journald, a container runtime, a test), and a reader that
 * falls behind made write(2) block the caller, the event loop above all
 * (a soak's turn of 362 ms was one line). LOG_QUEUE bytes wait at most;
 * a line that does not fit is dropped and counted, and the writer says
 * how many went when it catches up. Before the start and after the stop,
 * lines are written at once. */
#define _GNU_SOURCE 1
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOG_QUEUE (256u << 10)

static enum procctl_log_level log_max = PROCCTL_LOG_INFO;

static struct {
	pthread_mutex_t mu;
	pthread_cond_t more;
	pthread_t thread;
	char *buf;         /* a ring of LOG_QUEUE bytes */
	size_t head, len;  /* under mu: the bytes not written yet */
	uint64_t dropped;  /* under mu: lines dropped since the writer said so */
	uint64_t dropped_total; /* atomic */
	int on;            /* under mu: the writer runs */
	int stopping;      /* under mu */
} q = {.mu = PTHREAD_MUTEX_INITIALIZER, .more = PTHREAD_COND_INITIALIZER};

void node_log_level(enum procctl_log_level max)
{
	log_max = max;
}

/* All of b on stderr, or as much as it takes (a closed reader: the rest
 * is lost, as it would be). */
static void write_all(const char *b, size_t n)
{
	while (n) {
		ssize_t w = write(STDERR_FILENO, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		b += w;
		n -= (size_t)w;
	}
}

static size_t stamp(char *out, size_t len, enum procctl_log_level level, const char *event)
{
	static const char *names[] = {"error", "warn", "info", "debug"};
	char ts[32];
	struct timespec t;
	struct tm tm;
	int n;
	clock_gettime(CLOCK_REALTIME, &t);
	gmtime_r(&t.tv_sec, &tm);
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	n = snprintf(out, len, "ts=%s.%03ldZ level=%s event=%s", ts, t.tv_nsec / 1000000, names[level], event);
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

/* The writer: the queue's bytes, as they come; then the lines dropped. */
static void *writer(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "procctl-log");
	pthread_mutex_lock(&q.mu);
	for (;;) {
		size_t n;
		uint64_t dropped;
		while (!q.len && !q.dropped && !q.stopping)
			pthread_cond_wait(&q.more, &q.mu);
		if (!q.len && !q.dropped)
			break; /* stopping, and all written */
		n = q.len < LOG_QUEUE - q.head ? q.len : LOG_QUEUE - q.head;
		dropped = q.len ? 0 : q.dropped; /* said once what was queued before is out */
		q.dropped -= dropped;
		pthread_mutex_unlock(&q.mu); /* producers append past head + len: these bytes stay */
		if (n) {
			write_all(q.buf + q.head, n);
		} else {
			char l[160];
			size_t k = stamp(l, sizeof l, PROCCTL_LOG_WARN, "log_lines_dropped");
			snprintf(l + k, sizeof l - k, " count=%llu reason=\"stderr was not read as fast as lines came\"\n",
				 (unsigned long long)dropped);
			write_all(l, strlen(l));
		}
		pthread_mutex_lock(&q.mu);
		q.head = (q.head + n) % LOG_QUEUE;
		q.len -= n;
	}
	pthread_mutex_unlock(&q.mu);
	return NULL;
}

int node_log_start(void)
{
	int r;
	pthread_mutex_lock(&q.mu);
	if (q.on) {
		pthread_mutex_unlock(&q.mu);
		return 0;
	}
	if (!(q.buf = malloc(LOG_QUEUE))) {
		pthread_mutex_unlock(&q.mu);
		return -ENOMEM;
	}
	q.head = q.len = 0;
	q.stopping = 0;
	if ((r = pthread_create(&q.thread, NULL, writer, NULL))) {
		free(q.buf);
		q.buf = NULL;
		pthread_mutex_unlock(&q.mu);
		return -r;
	}
	q.on = 1;
	pthread_mutex_unlock(&q.mu);
	return 0;
}

void node_log_stop(void)
{
	pthread_mutex_lock(&q.mu);
	if (!q.on) {
		pthread_mutex_unlock(&q.mu);
		return;
	}
	q.stopping = 1;
	pthread_cond_signal(&q.more);
	pthread_mutex_unlock(&q.mu);
	pthread_join(q.thread, NULL); /* what was queued is written first */
	pthread_mutex_lock(&q.mu);
	q.on = 0;
	free(q.buf);
	q.buf = NULL;
	pthread_mutex_unlock(&q.mu);
}

uint64_t node_log_dropped(void)
{
	return __atomic_load_n(&q.dropped_total, __ATOMIC_RELAXED);
}

/* One line: queued while the writer runs, else written now. */
static void line(enum procctl_log_level level, const char *event, const char *fields)
{
	char out[1200];
	size_t n = stamp(out, sizeof out, level, event), tail;
	n += (size_t)snprintf(out + n, sizeof out - n, "%s%s\n", fields[0] ? " " : "", fields);
	if (n >= sizeof out) { /* cut: the line still ends */
		n = sizeof out - 1;
		out[n - 1] = '\n';
	}
	pthread_mutex_lock(&q.mu);
	if (!q.on || q.stopping) {
		pthread_mutex_unlock(&q.mu);
		write_all(out, n);
		return;
	}
	if (LOG_QUEUE - q.len < n) {
		q.dropped++;
		__atomic_add_fetch(&q.dropped_total, 1, __ATOMIC_RELAXED);
	} else {
		size_t at = (q.head + q.len) % LOG_QUEUE;
		tail = LOG_QUEUE - at < n ? LOG_QUEUE - at : n;
		memcpy(q.buf + at, out, tail);
		memcpy(q.buf, out + tail, n - tail);
		q.len += n;
	}
	pthread_cond_signal(&q.more);
	pthread_mutex_unlock(&q.mu);
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
