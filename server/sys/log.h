/* SPDX-License-Identifier: Apache-2.0 */
/* log.h - procctl-node's log: one structured line per event on stderr,
 * "ts=... level=... event=... k=v ...", written by a thread of its own
 * once started, so that no caller waits for stderr's reader. Any thread. */
#ifndef PROCCTL_NODE_LOG_H
#define PROCCTL_NODE_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "procctl_agent.h" /* enum procctl_log_level */

void node_log(enum procctl_log_level level, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A line a peer can make us write as often as it likes: at most one a
 * second per call site, the next saying how many were suppressed
 * between ("suppressed=N"). Any thread. */
#define node_log_limited(level, event, ...)                                  \
	do {                                                                 \
		static struct procctl_ratelimit node_log_rl_;                \
		node_log_limit(&node_log_rl_, level, event, __VA_ARGS__);    \
	} while (0)
/* 1 when the line was written, 0 when dropped (the rate, or the level). */
int node_log_limit(struct procctl_ratelimit *rl, enum procctl_log_level level, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* s as a quoted log value's inside: '"' and '\\' escaped, bytes outside
 * printable ASCII as \xNN, cut to fit buf (len > 4). buf is returned. */
const char *node_log_quote(char *buf, size_t len, const char *s);
/* Lines above max are dropped (default: info). */
void node_log_level(enum procctl_log_level max);
/* The writer thread started: lines are queued from now on, and one that
 * finds the queue full is dropped (counted, and said by a
 * log_lines_dropped line once the writer catches up). 0, or -errno: lines
 * are written by their callers, as before the start. */
int node_log_start(void);
/* Every queued line written, the writer stopped; later lines are written
 * by their callers. */
void node_log_stop(void);
/* Lines dropped since the start of the process. */
uint64_t node_log_dropped(void);

#endif
