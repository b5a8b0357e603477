/* SPDX-License-Identifier: Apache-2.0 */
/* log.h - procctl-node's log: one structured line per event on stderr,
 * "ts=... level=... event=... k=v ...". Any thread. */
#ifndef PROCCTL_NODE_LOG_H
#define PROCCTL_NODE_LOG_H

#include "procctl_agent.h" /* enum procctl_log_level */

void node_log(enum procctl_log_level level, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Lines above max are dropped (default: info). */
void node_log_level(enum procctl_log_level max);

#endif
