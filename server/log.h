/* SPDX-License-Identifier: Apache-2.0 */
/* log.h - procctl-node's log: one structured line per event on stderr,
 * "ts=... level=... event=... k=v ...". Any thread. */
#ifndef PROCCTL_NODE_LOG_H
#define PROCCTL_NODE_LOG_H

#include "procctl_agent.h" /* enum procctl_log_level */

void node_log(enum procctl_log_level level, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A line a peer can make us write as often as it likes: at most one a
 * second per call site, the next saying how many were suppressed
 * between ("suppressed=N"). Any thread. */
#define node_log_limited(level, event, ...)                                      \
	do {                                                                     \
		static struct node_log_limit node_log_limit_;                    \
		node_log_limit(&node_log_limit_, level, event, __VA_ARGS__);     \
	} while (0)
struct node_log_limit {
	long long next_ns;   /* the next line may go out then */
	unsigned long long suppressed;
};
void node_log_limit(struct node_log_limit *l, enum procctl_log_level level, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Lines above max are dropped (default: info). */
void node_log_level(enum procctl_log_level max);

#endif
