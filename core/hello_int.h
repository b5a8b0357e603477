/* SPDX-License-Identifier: Apache-2.0 */
/* hello_int.h - the procctl:hello probe's state, shared by hello.c (the
 * records, the files' lives, the rechecks) and hello_probe.c (a mapped
 * file's reading and its uprobes). Internal to libprocctl-agent. */
#ifndef PROCCTL_HELLO_INT_H
#define PROCCTL_HELLO_INT_H

/* This file's globals carry the library's prefix in its symbols (a program
 * linking libprocctl-agent.a may have a hello_file_close of its own). */
#define hello_file_close procctl__hello_file_close
#define hello_file_find procctl__hello_file_find
#define hello_key_eq procctl__hello_key_eq
#define hello_key_slot procctl__hello_key_slot
#define hello_mapped procctl__hello_mapped
#define hello_pid_add procctl__hello_pid_add
#define hello_recheck procctl__hello_recheck
#define hello_recheck_stages procctl__hello_recheck_stages
#define hello_arm procctl__hello_arm
#define hello_cool procctl__hello_cool
#define hello_count procctl__hello_count
#define hello_retry procctl__hello_retry
#define hello_unpause procctl__hello_unpause

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hellofile.h"
#include "hellorings.h"
#include "procctl_agent.h"

#define HELLO_FILES_MAX 1024
#define HELLO_FILES_PER_OWNER 32 /* probed files owned by one uid but root's */
#define HELLO_OTHERS_FILES_MAX 64 /* probed files of every owner but root, together (and a quarter of the fds) */
#define HELLO_COOL_NS 60000000000ll /* an owner but root gets no probes this long after a rewrite of one */
#define HELLO_COOL_MAX 64 /* owners cooling at once; past that, every owner but root cools */
#define HELLO_DEFER_MAX 16 /* root's files waiting for the close in flight */
#define HELLO_SITES_MAX 16
#define HELLO_PIDS_MAX 65536
#define HELLO_SEEN_SLOTS 4096 /* power of two */
#define HELLO_DELAYED_MAX 4096
#define HELLO_TASKS_MAX 1024 /* forks and exits of one drain, handled after its mappings */
#define HELLO_RECHECK_NS 20000000ll
#define HELLO_STAGES 5 /* rechecks of a mapping without uprobes: 20 ms, 100 ms, 500 ms, 2 s, 10 s */
#define HELLO_FORK_RECHECK_NS 1000000000ll /* children forked this soon after the probes: checked too */
#define HELLO_RING_PAGES 16
#define HELLO_IDLE_NS 30000000000ll
#define HELLO_BATCH_NS 20000000ll
#define HELLO_BATCH_MAX_NS 1000000000ll /* a busy host's batches grow to this */

struct file {
	struct hello_key k;
	int nsites;
	int wd;      /* inotify watch on its inode: a rewrite drops the probes */
	int *probes; /* ncpu * nsites perf fds */
	pid_t *pids;
	size_t npids, cap;
	int sticky;       /* more than HELLO_PIDS_MAX pids: kept */
	int64_t idle_since; /* no pid maps it since then; 0: mapped */
	int64_t probed_ns;  /* when its uprobes were placed */
	uid_t owner;        /* the file's */
	int counted;        /* its nsites * ncpu fds are counted in probes and taken from fds_left */
	struct file *next;
};

struct delayed {
	pid_t pid;
	int64_t due;
};

/* A mapping of a file of root's, to probe once the close in flight ends. */
struct deferred {
	pid_t pid;
	uint64_t start, end;
	struct hello_key k;
	int live; /* hello_mapped's */
	char path[512];
};

/* Rechecks of one delay, in the order they are due. */
struct delayq {
	struct delayed d[HELLO_DELAYED_MAX];
	size_t head, len;
};

struct procctl_hello {
	struct procctl_hello_opts o;
	char proc[256];
	int epfd, tfd, ifd, uprobe_type;
	struct hello_rings rings;
	int64_t batch_ns, quiet_due; /* records muted until quiet_due; 0: not muted */
	int64_t batch_cur, batch_max_ns; /* this batch's length: batch_ns .. batch_max_ns */
	int64_t unmuted_ns;              /* when the rings were last unmuted */
	pid_t self; /* the agent's own pid: its mappings are not probed */
	struct file *files;
	size_t nfiles;
	struct hello_key seen[HELLO_SEEN_SLOTS];
	struct delayq q[HELLO_STAGES]; /* q[i]: rechecks stage_ns[i] after a mapping */
	int uprobes_denied; /* placing a uprobe was refused: mappings alone, at every stage */
	int64_t armed; /* the timer's due time, 0: disarmed */
	int64_t idle_ns;
	size_t nidle;     /* files with idle_since set */
	int lost;         /* records were lost in this dispatch */
	struct task { pid_t pid, parent; } tasks[HELLO_TASKS_MAX]; /* parent 0: an exit */
	size_t ntasks;
	long fds_left;    /* perf fds the probes may still use (a share of RLIMIT_NOFILE) */
	long fds_max;     /* ... and all they may use */
	long others_fds;  /* perf fds of files owned by others than root */
	size_t others_files;
	struct cooling { uid_t uid; int64_t until; } cool[HELLO_COOL_MAX]; /* owners who rewrote a probed file */
	int64_t all_cool_until; /* cool[] was full: every owner but root cools until then */
	struct deferred defer[HELLO_DEFER_MAX];
	size_t ndefer;
	int64_t defer_due; /* their next try */
	int paused;   /* this probe holds a procctl_close_pause */
	int retrying; /* in hello_retry */
	struct procctl_hello_stats st;
};

uint32_t hello_key_slot(const struct hello_key *k);
int hello_key_eq(const struct hello_key *a, const struct hello_key *b);
/* The probed file k, or NULL. */
struct file *hello_file_find(struct procctl_hello *h, const struct hello_key *k);
void hello_pid_add(struct procctl_hello *h, struct file *f, pid_t pid);
/* Forget f; its uprobes are closed off this thread (fdclose.h). */
void hello_file_close(struct procctl_hello *h, struct file *f);
/* on_pid(pid) at the first stages stages after now. */
void hello_recheck_stages(struct procctl_hello *h, pid_t pid, int stages);
/* on_pid(pid) after HELLO_RECHECK_NS; without uprobes, at every stage. */
void hello_recheck(struct procctl_hello *h, pid_t pid);
/* The timer at the first thing due (idle_due: the next idle drop, or 0). */
void hello_arm(struct procctl_hello *h, int64_t idle_due);
/* f's uprobes (nsites on every CPU) counted as placed, or not: the probes,
 * the fds left, and others' fds when f is not root's. */
void hello_count(struct procctl_hello *h, struct file *f, int placed);
/* uid's files get no probes for HELLO_COOL_NS: it rewrote a probed one. */
void hello_cool(struct procctl_hello *h, uid_t uid);
/* Probe the deferred files of root's when no close is in flight (the
 * closer paused for it); resume the closer when none waits. 1: some still
 * wait (the timer is wanted). */
int hello_retry(struct procctl_hello *h);
/* Let the closer go on, if this probe paused it. */
void hello_unpause(struct procctl_hello *h);
/* pid maps [start, end) of file k (path as the process named it); live:
 * a record of now, not the first scan's. */
void hello_mapped(struct procctl_hello *h, pid_t pid, uint64_t start, uint64_t end, const struct hello_key *k,
		  const char *path, int live);

#endif
