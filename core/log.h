/* SPDX-License-Identifier: Apache-2.0 */
/* log.h - the library's one logging hook (procctl_set_log). Internal. */
#ifndef PROCCTL_LOG_H
#define PROCCTL_LOG_H

#include "procctl_agent.h"

/* Format "key=value ..." fields and hand them to the hook, if any. */
void procctl_log(enum procctl_log_level level, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* procctl_log for a line a peer can cause: one a second per call site,
 * the next with "suppressed=N". */
#define procctl_log_limited(level, event, ...)                                      \
	do {                                                                        \
		static struct procctl_ratelimit procctl_log_rl_;                     \
		procctl_log_limit(&procctl_log_rl_, level, event, __VA_ARGS__);      \
	} while (0)
void procctl_log_limit(struct procctl_ratelimit *rl, enum procctl_log_level level, const char *event, const char *fmt,
		       ...) __attribute__((format(printf, 4, 5)));

#endif
