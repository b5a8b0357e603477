/* SPDX-License-Identifier: Apache-2.0 */
/* log.h - the library's one logging hook (procctl_set_log). Internal. */
#ifndef PROCCTL_LOG_H
#define PROCCTL_LOG_H

#include "procctl_agent.h"

/* Format "key=value ..." fields and hand them to the hook, if any. */
void procctl_log(enum procctl_log_level level, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
