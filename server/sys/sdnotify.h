/* SPDX-License-Identifier: Apache-2.0 */
/* sdnotify.h - systemd's service notifications (sd_notify(3)), written
 * directly as the protocol is: one datagram to the AF_UNIX socket named
 * by $NOTIFY_SOCKET (a path, or "@name" in the abstract namespace). No
 * libsystemd: the daemon links nothing for two messages. */
#ifndef PROCCTL_NODE_SDNOTIFY_H
#define PROCCTL_NODE_SDNOTIFY_H

#include <stdint.h>

/* Send state ("READY=1", "WATCHDOG=1", lines joined by '\n') to the
 * service manager. 1 sent; 0 nothing to send it to (no $NOTIFY_SOCKET);
 * -errno: a $NOTIFY_SOCKET that is not an absolute path or "@name"
 * (-EINVAL), or the send failed (-EAGAIN: the manager's queue is full;
 * it never blocks the caller, the event loop). Any thread. */
int sdnotify(const char *state);

/* The watchdog's period asked of this process: $WATCHDOG_USEC in
 * nanoseconds when set and $WATCHDOG_PID is unset or this pid; else 0.
 * WATCHDOG=1 is due at least this often (sd_watchdog_enabled(3) advises
 * every half of it). */
int64_t sdnotify_watchdog_ns(void);

#endif
