/* SPDX-License-Identifier: Apache-2.0 */
/* fdlimit.h - the descriptors network connections may take: all but a
 * reserve kept for the daemon's own work (the Unix socket's callers, scans,
 * attaches, state reads, the config file), so that a flood of TCP or HTTP
 * connections never leaves it without one. */
#ifndef PROCCTL_NODE_FDLIMIT_H
#define PROCCTL_NODE_FDLIMIT_H

#define FD_RESERVE_MIN 32
#define FD_RESERVE_MAX 1024

/* Descriptor numbers past which connections are closed as they come.
 * Descriptors are handed out lowest first, so a connection given one at
 * or above its ceiling means fewer than what is kept above it are free. */
struct fd_budget {
	int base;  /* open when it was worked out (the daemon's own) */
	int tcp;   /* gRPC's TCP listeners: three quarters of the room */
	int http;  /* HTTP: the last quarter; above it, the reserve */
	int room;  /* between base and the reserve: what connections share */
};

/* The budget, worked out at the first call (after the limit was raised,
 * before the listeners take connections) from the soft limit
 * (RLIMIT_NOFILE): the reserve is an eighth of it, FD_RESERVE_MIN to
 * FD_RESERVE_MAX, or half of what is left above base when that is less. */
const struct fd_budget *fd_budget(void);

#endif
