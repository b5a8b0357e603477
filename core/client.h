/* SPDX-License-Identifier: Apache-2.0 */
/* client.h - the parts of a client the registry (and the arbiter) use.
 * Internal to libprocctl-agent. */
#ifndef PROCCTL_CLIENT_H
#define PROCCTL_CLIENT_H

#include <pthread.h>

#include "procctl_agent.h"
#include "region.h"

/* What a client shares with its remote reads, which may outlive it when
 * abandoned at a deadline: freed (and mem_fd closed) by whichever lets go
 * last. */
struct procctl_remote {
	int refs;
	pid_t pid;
	int pidfd;   /* pins the process: readable once it exits */
	int mem_fd;  /* /proc/<pid>/mem, opened at attach: 0 bytes after exec */
	char *mem_path; /* its path, to tell an exec from an exit (malloc'd) */
};

struct procctl_client {
	int refs;                /* procctl_client_ref / procctl_client_close */
	pthread_mutex_t wlock;   /* region writes: callers and the heartbeat thread */
	struct procctl_region r; /* mapping and the agent's own copies */
	struct procctl_client_info info;
	int own;                 /* enum procctl_ownership: OWNED allows writes.
	                          * Written under wlock; read anywhere with atomics */
	struct procctl_remote *remote;
	uint64_t published_max;  /* highest config generation this agent published; atomic */
	void *data;              /* procctl_client_set_data; atomic */
};

/* The NSpid list of pid from <proc_root>/<pid>/status, outermost first:
 * the count, or -ESRCH, -ENOENT (no NSpid line), -EINVAL (malformed or
 * more than max entries). */
int procctl_read_nspid(const char *proc_root, pid_t pid, pid_t *out, int max);

/* The mount id in an fdinfo file (dirfd-relative path): -1 unknown. */
int procctl_fdinfo_mnt_id(int dirfd, const char *fdinfo_path);
/* The mount id every memfd has (probed once with one of our own). */
int procctl_memfd_mnt_id(void);

/* Claim c for (domain, epoch) with lease_ns (the caller holds the node
 * lock): see procctl_region_claim. Writes are allowed afterwards. */
int64_t procctl_client_claim(procctl_client_t *c, uint32_t domain, uint32_t epoch, uint64_t lease_ns);
void procctl_client_heartbeat(procctl_client_t *c);
int procctl_client_set_lease(procctl_client_t *c, uint64_t lease_ns);

/* The process behind pidfd exited (its pidfd is readable). */
int procctl_process_exited(int pidfd);
/* 0 while rm is still the process attached; -ESRCH it exited; -ESTALE it
 * exec'd (client_reads.c). */
int procctl_remote_alive(const struct procctl_remote *rm);
/* Let go of a reference to rm (the last frees it). */
void procctl_remote_put(struct procctl_remote *rm);

/* Hand-off (RELEASED) or uninstall; writes are refused afterwards. */
int procctl_client_release(procctl_client_t *c);
int64_t procctl_client_uninstall(procctl_client_t *c);

#endif
