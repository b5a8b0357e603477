/* SPDX-License-Identifier: Apache-2.0 */
/* procself.h - the daemon's own process metrics, the ones every
 * Prometheus client library exports (process_cpu_seconds_total,
 * process_resident_memory_bytes, ...), read from /proc/self as they do. */
#ifndef PROCCTL_NODE_PROCSELF_H
#define PROCCTL_NODE_PROCSELF_H

struct prom;

/* Write the process_* families to p (a metrics source's write: arg is
 * unused). A figure /proc does not give now (no fd left to open it with)
 * is left out; its family's HELP and TYPE stay. */
void procself_metrics(struct prom *p, void *arg);

#endif
