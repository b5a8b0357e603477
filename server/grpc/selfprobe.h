/* SPDX-License-Identifier: Apache-2.0 */
/* selfprobe.h - the daemon asks itself whether its gRPC API answers: a
 * thread that calls grpc.health.v1.Health/Check on the daemon's own Unix
 * socket when asked (selfprobe_kick: /healthz, the systemd watchdog's
 * tick), at most once a period, each call with that period as its
 * deadline. Any answer counts (NOT_SERVING too: the API answered); a call
 * that fails or runs out of time does not. /healthz and the watchdog's
 * ping follow it, so a process whose API is dead stops calling itself
 * alive and is restarted. Asked by nobody, it costs nothing: an idle
 * daemon does not wake for it. */
#ifndef PROCCTL_NODE_SELFPROBE_H
#define PROCCTL_NODE_SELFPROBE_H

#include <stdint.h>

#define SELFPROBE_MISSES 3 /* probes in a row without an answer: the API is dead */

struct selfprobe;

/* Start the thread that probes target ("unix:PATH") when kicked, at
 * most once every every_ns: 0 and *out, or -errno. */
int selfprobe_start(const char *target, int64_t every_ns, struct selfprobe **out);
/* Ask for a probe (one is made unless one started within every_ns).
 * Any thread; p NULL: nothing. */
void selfprobe_kick(struct selfprobe *p);
/* 1 while the API answered one of the last SELFPROBE_MISSES probes (or
 * fewer were made); 0 when none of them did. p NULL: 1. Any thread. */
int selfprobe_alive(const struct selfprobe *p);
/* Probes made, and probes not answered (for /metrics). Any thread. */
void selfprobe_counts(const struct selfprobe *p, uint64_t *probes, uint64_t *misses);
/* Stop (within one deadline) and free. NULL: nothing. */
void selfprobe_stop(struct selfprobe *p);

#endif
