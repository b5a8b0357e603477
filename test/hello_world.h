/* SPDX-License-Identifier: Apache-2.0 */
/* hello_world.h - the world test_hello and test_hello_limits run the
 * procctl:hello probe in: a registry and a probe in this process, a lock
 * directory of the test's own, the children it starts (real programs,
 * libraries copied and mapped), and the conditions a test waits for while
 * both are dispatched (hello_world.c). */
#ifndef PROCCTL_TEST_HELLO_WORLD_H
#define PROCCTL_TEST_HELLO_WORLD_H

#include <stdint.h>
#include <sys/types.h>

#include "procctl_agent.h"

#define MS 1000000ull
#define HOUR (3600ull * 1000 * MS)

extern char lockdir[64], consumer[32]; /* the test's own, made by setup */
extern pid_t children[16];              /* started by the test, killed by teardown */
extern int nchildren;

struct world {
	procctl_registry_t *r;
	procctl_hello_t *h;
	pid_t attached[16];
	pid_t execd[4096]; /* the last execs on the host (on_exec hears them all): a ring */
	int nattached, nexecd, rescans;
};

/* The world's on_pid: pid to its registry (0: a rescan, counted). */
void on_pid(pid_t pid, void *arg);

/* cmocka's per-test setup and teardown: the lock directory and consumer;
 * the children killed, the directory removed. */
int setup(void **state);
int teardown(void **state);

/* argv as a child (stdout to /dev/null); the echo client of the test's
 * consumer; a copy of it in lockdir (a file no other process maps). */
pid_t spawn(char *const argv[]);
pid_t echo_client(void);
pid_t echo_client_copy(void);
/* argv[0] started once *go is written to (forked now, before the caller
 * has probes to close). */
pid_t spawn_later(char *const argv[], int *go);
void end_child(pid_t pid);

/* A registry (rescans rescan_ns apart) and a probe (sysfs_root NULL: the
 * real one; idle_ns, batch_ns 0: the defaults), once earlier probes are
 * closed; world_start: idle probes dropped after 50 ms. */
void world_open(struct world *w, uint64_t rescan_ns, const char *sysfs_root, uint64_t idle_ns, uint64_t batch_ns);
void world_start(struct world *w, uint64_t rescan_ns, const char *sysfs_root);
void world_stop(struct world *w);
int was_attached(const struct world *w, pid_t pid);
/* Dispatch both until cond(w, arg) or 30 s; its last value. */
int pump(struct world *w, int (*cond)(struct world *, long), long arg);
int attached_cond(struct world *w, long pid);
int ready_cond(struct world *w, long unused);
int files_cond(struct world *w, long want);      /* st.files == want */
int rewritten_cond(struct world *w, long before); /* st.files_rewritten > before */
int probed_cond(struct world *w, long want);     /* st.files_probed >= want */
int time_cond(struct world *w, long until_ns);
int closed_cond(struct world *w, long unused);   /* no close pending */
/* Dispatch until every probe this process closed is closed (60 s at most). */
int closes_done(struct world *w);

/* Copies [from, from + n) of libhellolib.so in lockdir, owned by uid; a
 * child that maps copies [from, from + n) and waits; a world and such a
 * child of n copies owned by uid, once want are probed (*st0: the stats
 * before). */
void lib_copies(int from, int n, uid_t uid);
pid_t lib_mapper(int from, int n);
pid_t libs_mapped(struct world *w, struct procctl_hello_stats *st0, int n, uid_t uid, int want);

#endif
