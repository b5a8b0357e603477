/* SPDX-License-Identifier: Apache-2.0 */
/* procctl_agent.h - libprocctl-agent, the agent side of procctl.
 *
 * Calls return 0, a count or a generation on success and a negative errno
 * on failure; pointer returns are NULL with errno set. The library never
 * prints. SPEC.md is the contract this implements.
 *
 * Options structs (procctl_*_opts) begin with size_t sz: set it to
 * sizeof the struct, and zero what you do not set (a designated
 * initializer does). A program built against an older header passes a
 * smaller sz: the fields it lacks count as 0. One built against a newer
 * header passes a larger one: it is refused (EINVAL) when a field this
 * library does not know is set, not silently ignored. sz under
 * sizeof(size_t) or over 4096 is refused too.
 *
 * Structs the library fills (info, stats, state, snapshots) go the other
 * way: pass sizeof yours beside it (sz). The library fills what it has of
 * the first sz bytes; a field it does not have (yours is newer) reads 0.
 * Events carry sz, the size of the struct the library filled: a field
 * past it is not there.
 *
 *   Scan      find regions in /proc (procctl_scan, procctl_scan_pid)
 *   Client    one attached region: info, write, clear, read_state,
 *             wait_ack (procctl_client_*)
 *   Registry  discovery, attach, exit and exec detection, node locks,
 *             ownership, heartbeats, hand-off (procctl_registry_*)
 *   Hello     fast discovery: the procctl:hello uprobe and executable
 *             mappings tell which process to scan now (procctl_hello_*)
 *   Logging   procctl_set_log
 */
#ifndef PROCCTL_AGENT_H
#define PROCCTL_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "procctl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why a region or a state block was refused. Every refusal has one, with
 * a stable name (procctl_reject_name) for logs and metrics. */
enum procctl_reject {
	PROCCTL_REJECT_NONE = 0,
	PROCCTL_REJECT_BAD_MAGIC,      /* not a procctl header */
	PROCCTL_REJECT_BAD_VERSION,    /* unknown major version */
	PROCCTL_REJECT_BAD_HEADER_CRC, /* header bytes do not match their CRC */
	PROCCTL_REJECT_BAD_SIZE,       /* region size wrong, or over the hard limit */
	PROCCTL_REJECT_BAD_LAYOUT,     /* offsets or capacities outside the file or limits */
	PROCCTL_REJECT_BAD_FIELD,      /* a field outside its SPEC.md range */
	PROCCTL_REJECT_STATE_MAGIC,    /* state block: not a PROCSTAT block */
	PROCCTL_REJECT_STATE_LAYOUT,   /* state block: sizes disagree with the header */
	PROCCTL_REJECT_STATE_INSTANCE, /* state block: another instance's */
	PROCCTL_REJECT_STATE_WRITER,   /* state block: written by another pid (a forked child's) */
	PROCCTL_REJECT_STATE_CRC,      /* state block: bytes do not match their CRC */
	PROCCTL_REJECT_STATE_CANARY,   /* fork canary differs: not the creator's memory */
	PROCCTL_REJECT_NOT_MEMFD,      /* the fd is not a sealable tmpfs memfd */
	PROCCTL_REJECT_HUGETLB,        /* a hugetlbfs memfd: its creator could SIGBUS the agent */
	PROCCTL_REJECT_UNSEALED,       /* SHRINK, GROW or SEAL missing */
	PROCCTL_REJECT_WRONG_SEALS,    /* WRITE or FUTURE_WRITE set: the agent could not write */
	PROCCTL_REJECT_FD_SWAPPED,     /* the fd fetched is not the one the scan saw */
	PROCCTL_REJECT_CONSUMER_MISMATCH, /* the name and the header disagree */
	PROCCTL_REJECT_NOT_CREATOR,    /* header pid is not the process's: an inherited fd */
	PROCCTL_REJECT_LIMIT,          /* over the regions allowed per process (max_per_process) */
	PROCCTL_REJECT_CONSUMER_LIMIT, /* a consumer more than the agent keeps locks for */
	PROCCTL_REJECT_REGION_LIMIT,   /* over the regions allowed in all (max_regions) */
	PROCCTL_REJECT__COUNT
};

const char *procctl_reject_name(enum procctl_reject why);

/* ---- Scan (SPEC.md 2.4) ---------------------------------------------- */

/* One region found: fd in pid's table names "procctl:<consumer>-v<N>". */
struct procctl_scan_entry {
	pid_t pid;
	int fd;
	char consumer[32];
	uint32_t schema_version;
	dev_t dev; /* the memfd's identity as the scan saw it; 0 and 0 when the link is */
	ino_t ino; /* not on the memfd mount (or gone): attach then fetches nothing */
};

/* Called for each region found; a negative return stops the scan and is
 * returned by it. */
typedef int (*procctl_scan_cb)(const struct procctl_scan_entry *e, void *arg);

/* Walk <proc_root>/<pid>/fd (proc_root NULL: "/proc") for regions of
 * consumer (NULL: every consumer). Returns how many were found, or the
 * callback's error; processes that vanish or cannot be read are skipped.
 * -EINVAL: no cb, or consumer not a consumer name (SPEC.md 2.1). */
int procctl_scan(const char *proc_root, const char *consumer, procctl_scan_cb cb, void *arg);

/* The same walk in steps, for a loop that must not stop for all of /proc
 * at once: begin (NULL with errno), then step until it says 0 (done; 1:
 * more to come; or the callback's error), then end. A step looks at up to
 * max_pids processes and reads up to 16 fd links for each: a process with
 * more fds than a step has left (any process may open a million) is taken
 * up where it stopped at the next step. Process skip (0: none) is passed
 * over unread (an agent's own fd table, two fds a region it attached, is
 * the largest). */
typedef struct procctl_scan_iter procctl_scan_iter_t;
procctl_scan_iter_t *procctl_scan_begin(const char *proc_root, pid_t skip);
int procctl_scan_step(procctl_scan_iter_t *it, const char *consumer, unsigned max_pids, procctl_scan_cb cb, void *arg);
void procctl_scan_end(procctl_scan_iter_t *it);
/* Processes so far whose fd table the scan was refused (EACCES, EPERM on
 * the directory or its links: no ptrace access to them, CAP_SYS_PTRACE,
 * or an LSM). */
unsigned procctl_scan_denied(const procctl_scan_iter_t *it);

/* The same for one process (-EINVAL as above, or pid <= 0): -ESRCH when it has no fd directory, -EACCES
 * (or the directory's -errno) when its fds may not be read. */
int procctl_scan_pid(const char *proc_root, pid_t pid, const char *consumer, procctl_scan_cb cb, void *arg);

/* Parse a /proc fd link "/memfd:procctl:<consumer>-v<N> (deleted)" of len
 * bytes (not NUL terminated): 0 and the consumer (NUL padded to 32 bytes)
 * and N, or -EINVAL. The name is the process's: untrusted. */
int procctl_scan_parse_link(const char *link, size_t len, char consumer[32], uint32_t *version);

/* ---- Client: one attached region ----------------------------------- */

typedef struct procctl_client procctl_client_t;

#define PROCCTL_NSPID_MAX 32 /* pid namespaces nest at most 32 deep */

struct procctl_client_info {
	pid_t pid;                      /* in the agent's pid namespace */
	int nspid_count;                /* entries in nspid */
	pid_t nspid[PROCCTL_NSPID_MAX]; /* /proc/<pid>/status NSpid: outermost first, the last is the process's own */
	dev_t dev;                      /* with hdr.instance_id, the region's identity */
	ino_t ino;
	struct procctl_hdr hdr;         /* the validated private copy */
	int event_socket;               /* 1: the process's event socket (hdr.flags PROCCTL_HDR_EVENT_FD) is
					   used, a message sent after each write (SPEC.md 6.6); 0: none, or
					   refused (logged: event_fd_refused) */
};

#define PROCCTL_ATTACH_NO_GETFD 0x1u /* use the O_PATH fallback, not pidfd_getfd */

struct procctl_attach_opts {
	size_t sz;             /* sizeof(struct procctl_attach_opts): see the top */
	const char *proc_root; /* NULL: "/proc" */
	unsigned flags;        /* PROCCTL_ATTACH_* */
	procctl_client_t *sibling; /* optional: a client of the same process; while that process
				    * runs (not exited, not exec'd) the new client shares its pidfd
				    * and /proc/<pid>/mem instead of opening its own (two fds a
				    * process, not a region) */
};

/* Attach to the region a scan found (SPEC.md 13.2): pin the process with
 * pidfd_open, fetch the fd, check seals, filesystem, size and identity,
 * copy and check the header, make sure the process is its creator, map it
 * read/write. NULL with errno: EINVAL bad opts (an unknown flag, or a
 * newer header's field this library does not know set: opts.h's rules,
 * as for every opts struct here), EPROTO refused (*why says why), ESRCH gone,
 * EPERM no ptrace-level access, or a syscall's errno. opts may be NULL.
 * The caller holds the one reference. */
procctl_client_t *procctl_client_attach(const struct procctl_scan_entry *e, const struct procctl_attach_opts *opts,
					enum procctl_reject *why);
/* Clients are reference counted and every client call may be made from
 * any thread. ref takes a reference (e.g. in an ATTACHED handler, to use
 * the client on another thread); close drops one: the last unmaps and
 * frees (never writing the region). */
procctl_client_t *procctl_client_ref(procctl_client_t *c);
void procctl_client_close(procctl_client_t *c);

/* 0, or -EINVAL (out NULL, sz 0). */
int procctl_client_info(const procctl_client_t *c, struct procctl_client_info *out, size_t sz);
/* The generation of the config now in the region, by the agent's own
 * copy: the last write or clear, or what it adopted when it claimed the
 * region (0: none published). */
uint64_t procctl_client_config_gen(procctl_client_t *c);
/* The generation of the config the region holds, read from the region
 * itself now (another agent's writes too: what a passive agent reports);
 * 0 when none, or while a writer keeps it busy. */
uint64_t procctl_client_region_config_gen(procctl_client_t *c);
/* 1 when the config now in the region (the agent's own copy, as for
 * procctl_client_config_gen) is exactly len bytes at payload; 0 when it is
 * another, or none (a clear, nothing published). */
int procctl_client_config_is(procctl_client_t *c, const void *payload, size_t len);
/* The highest config generation this agent published to c's region (its
 * writes and clears, and what it adopted): acks above it are ignored. */
uint64_t procctl_client_published_max(const procctl_client_t *c);
/* A pidfd for c's process: readable once it exits. */
int procctl_client_pidfd(const procctl_client_t *c);
/* The caller's own pointer for c (NULL until set): what an application
 * keeps of a client, found from an event's client without a search.
 * One pointer for every holder of c: set it where the clients are
 * owned (the registry's user), not in a library beside it. */
void procctl_client_set_data(procctl_client_t *c, void *data);
void *procctl_client_data(const procctl_client_t *c);
/* 0 while the process that created the region runs it (an exit under
 * way included: it may still hold files); -ESRCH once it exited (its
 * pidfd says so); -ESTALE once it exec'd (the instance is gone). */
int procctl_client_alive(procctl_client_t *c);

/* How this agent stands with c's region. */
enum procctl_ownership {
	PROCCTL_OWN_PASSIVE = 0, /* not claimed (no node lock; or released, or the lock lost): reads only */
	PROCCTL_OWN_OWNED,       /* claimed: writes allowed */
	PROCCTL_OWN_CONFLICT,    /* its owner word names another lock domain (SPEC.md 8.2): reads only */
	PROCCTL_OWN_BROKEN,      /* not as this agent left it (its seq moved: another writer, or the
	                          * process wrote it) or it could not be claimed: reads only */
};
enum procctl_ownership procctl_client_ownership(const procctl_client_t *c);

/* Publish a config of len bytes (1 .. payload_cap) / clear it: a write
 * section that wakes the process. Returns the generation. -EPERM: this
 * agent does not own the region (no node lock: passive). -EBUSY: the
 * region's seq is not where this agent left it (another writer, or the
 * process punched it): the client is unusable for writes. */
int64_t procctl_client_write(procctl_client_t *c, const void *payload, size_t len);
int64_t procctl_client_clear(procctl_client_t *c);

/* Grants (SPEC.md section 9), owner-gated like writes: grant writes a
 * grant entry for res (grant_id: the arbiter's id, nonzero), revoke asks
 * the holder to give it back (again: the first revoke's generation), drop
 * removes the entry. The generation, or -EPERM, -EBUSY as for writes;
 * -EINVAL no kind or grant_id 0; -ENOSPC the region's grant_cap entries
 * are in use; -ENOENT (revoke, drop) no grant of res. Arbiters (procctl_arbiter.h) make these calls; an agent making
 * them by hand owns the one-holder rule itself. */
int64_t procctl_client_grant(procctl_client_t *c, const procctl_resource_t *res, uint64_t grant_id);
int64_t procctl_client_revoke(procctl_client_t *c, const procctl_resource_t *res);
int64_t procctl_client_drop(procctl_client_t *c, const procctl_resource_t *res);
/* The agent's own copies of the grant entries in c's region: the count
 * (at most max copied). */
int procctl_client_grants(procctl_client_t *c, struct procctl_grant_entry *out, uint32_t max);

/* A validated copy of a process's state block. */
struct procctl_state {
	uint64_t acked_gen;
	int32_t ack_status; /* 0 applied, -errno rejected */
	uint32_t nres;
	struct procctl_res_entry res[PROCCTL_RES_MAX];
	uint32_t data_len;
	unsigned char data[PROCCTL_STATE_DATA_MAX];
	enum procctl_reject why; /* on -EPROTO */
};

/* Read the state block (SPEC.md 7.2) off the caller's path, waiting until
 * deadline_ns (CLOCK_MONOTONIC). 0; -EAGAIN still being written, or no
 * worker free (all stuck on stalled reads); -EPROTO refused (out->why);
 * -ETIMEDOUT the read did not finish (a stalled page: further reads of
 * that process fail at once until it does); -ESRCH exited; -ESTALE exec'd;
 * -EFAULT unreadable; -EINVAL out NULL, or sz under today's
 * sizeof(struct procctl_state) (no smaller one was ever released).
 *
 * The read runs on a worker thread because nothing else can bound it: a
 * remote read of a page behind userfaultfd or a stalled FUSE file blocks
 * in the kernel, and no signal short of SIGKILL ends it. The handoff costs
 * two thread wakeups. A caller that accepts blocking for as long as the
 * process's memory does may pass deadline_ns < 0: the read then runs on
 * its own thread, at the cost of the syscalls alone. */
int procctl_client_read_state(procctl_client_t *c, struct procctl_state *out, size_t sz, int64_t deadline_ns);

/* The same read for an event loop, which waits for nothing: started on a
 * worker, and done(arg) is called on that worker when it returns (a read
 * stuck behind a page nobody serves returns when the process dies). Then
 * procctl_read_finish gives what procctl_client_read_state would have,
 * and frees it (call it once, after done; c may be closed by then; out
 * may be NULL, for a read no longer wanted; -EINVAL, the read freed, when
 * sz is refused as above). NULL
 * with errno: ETIMEDOUT a read of the process is stuck, ESRCH or ESTALE it
 * is gone, EAGAIN every worker is stuck, ENOMEM. A read the caller finds
 * late (its own deadline) is stuck: procctl_read_late, and until it
 * returns, reads of the process fail at once and its worker is not
 * counted free; 1 if it was still running. */
typedef struct procctl_read procctl_read_t;
procctl_read_t *procctl_client_read_start(procctl_client_t *c, void (*done)(void *arg), void *arg);
int procctl_read_late(procctl_read_t *rd);
int procctl_read_finish(procctl_read_t *rd, struct procctl_state *out, size_t sz);

enum procctl_ack_kind {
	PROCCTL_ACK_APPLIED = 1,    /* acked_gen == gen, status 0 */
	PROCCTL_ACK_REJECTED = 2,   /* acked_gen == gen, status < 0 */
	PROCCTL_ACK_SUPERSEDED = 3, /* acked_gen > gen */
};

struct procctl_ack {
	enum procctl_ack_kind kind;
	uint64_t acked_gen;
	int32_t status;
};

/* The ack decision (SPEC.md 7.3), the one the library's wait_ack and
 * procctl-node both use: what a state block's acked_gen and ack_status say
 * of generation gen, when the agent published up to published_max. 0: no
 * ack of gen yet (acked_gen below gen, or above published_max: a bogus ack
 * is ignored), else a procctl_ack_kind. */
int procctl_ack_decide(uint64_t gen, uint64_t published_max, uint64_t acked_gen, int32_t ack_status);

/* Wait until the process acks generation gen (SPEC.md 7.3) or
 * deadline_ns: 0 and *out; -ETIMEDOUT; -EINVAL gen was not published
 * through c, or no out; the errors of procctl_client_read_state. Woken by the ack
 * doorbell, with a bounded backoff between reads. */
int procctl_client_wait_ack(procctl_client_t *c, uint64_t gen, int64_t deadline_ns, struct procctl_ack *out);

/* ---- Registry ------------------------------------------------------- */

typedef struct procctl_registry procctl_registry_t;

enum procctl_event_type {
	PROCCTL_EV_ATTACHED = 1, /* a region was attached: client valid until DETACHED */
	PROCCTL_EV_DETACHED,     /* the process exited (-ESRCH), exec'd (-ESTALE) or the registry closed (0) */
	PROCCTL_EV_OWNERSHIP,    /* this agent took (held 1) or gave up or lost (0) a consumer's node lock */
	PROCCTL_EV_DOORBELL,     /* with PROCCTL_REGISTRY_DOORBELLS: a process rang its ack doorbell (it
	                          * acked or reported); coalesced, one event may stand for several */
	PROCCTL_EV_READY,        /* consumer's lock, held, became ready (procctl_registry_ready: a
	                          * full scan begun after it was taken finished); once a taking */
};

struct procctl_event {
	size_t sz;                /* sizeof the struct the library filled: a field past it is not there */
	enum procctl_event_type type;
	procctl_client_t *client; /* ATTACHED, DETACHED, DOORBELL */
	pid_t pid;
	uint64_t instance_id;
	const char *consumer;
	int reason;               /* DETACHED: see above */
	int held;                 /* OWNERSHIP; READY: 1 */
};

typedef void (*procctl_event_cb)(const struct procctl_event *ev, void *arg);

#define PROCCTL_REGISTRY_PASSIVE 0x1u /* never take a node lock: read-only */
/* The registry waits on the ack doorbell of every attached region and
 * the loop emits PROCCTL_EV_DOORBELL: react to reports at once, not at
 * the next poll. The waits are futex waits in one io_uring, read by the
 * loop (Linux 6.7+; no thread, no cost while nothing rings); where
 * io_uring has no futex waits or is refused (a seccomp policy), watcher
 * threads in futex_waitv (Linux 5.16; registry_new fails with ENOSYS
 * without it), 127 regions each, 64 of them at most (8,128 regions heard;
 * the rest are not, and say so). A watcher hears one ring a wake and
 * none until it waits again, so after each wake its 127 regions all get
 * a DOORBELL event, 20 ms later and at most once a second: there a ring
 * that came at the wrong moment is heard within a second, and one event
 * may stand for none. A process ringing more than 1000 times a second is
 * not listened to for the rest of that second; one that writes its
 * doorbell word is never listened to again. */
#define PROCCTL_REGISTRY_DOORBELLS 0x2u
/* With DOORBELLS: the watcher threads even where io_uring would do. */
#define PROCCTL_REGISTRY_BELL_THREADS 0x4u

#define PROCCTL_LOCK_DIR_DEFAULT "/run/procctl/locks"

/* Open dir (made with its missing parents, mode 0755, when missing) as a
 * directory the caller can trust with its files (SPEC.md 8.1): every
 * component, symlinks resolved first, a directory owned by root or the
 * caller and writable by nobody else unless sticky (/tmp); dir itself the
 * caller's and writable by nobody else. An O_DIRECTORY fd; or -errno
 * (-EPERM an owner or a mode, -ENOTDIR, ...) with why set to the path and
 * what is wrong with it. procctl_registry_new opens its lock_dir so. */
int procctl_trusted_dir(const char *dir, char *why, size_t whylen);
/* The same, dir itself judged as the components above it are (root's or
 * the caller's; writable by others only when sticky): where the caller
 * makes a file of its own that nobody else may remove or replace (a Unix
 * socket), not where it keeps files others must not add to. */
int procctl_trusted_parent(const char *dir, char *why, size_t whylen);

struct procctl_registry_opts {
	size_t sz;                /* sizeof(struct procctl_registry_opts): see the top */
	const char *consumer;     /* NULL: every consumer */
	uint64_t lease_ns;        /* 0: 10 s */
	uint64_t rescan_ns;       /* 0: 60 s */
	const char *lock_dir;     /* NULL: PROCCTL_LOCK_DIR_DEFAULT */
	const char *proc_root;    /* NULL: /proc */
	procctl_event_cb on_event;
	void *arg;
	unsigned flags;           /* PROCCTL_REGISTRY_* */
	uint32_t max_per_process; /* regions attached per process; 0: 16 */
	uint32_t max_regions;     /* regions attached in all; 0: 8192 */
	uint32_t max_consumers;   /* distinct consumers with regions attached (each holds a
	                           * lock file and an fd while it has any); 0: 256 */
};

struct procctl_registry_stats {
	uint64_t scans;           /* full scans */
	uint64_t scan_ns;         /* their total duration */
	uint64_t targeted_scans;  /* notify(pid) */
	uint64_t attach_attempts;
	uint64_t attached;        /* total */
	uint64_t detached;        /* total */
	uint64_t rejects[PROCCTL_REJECT__COUNT];
	uint64_t conflicts;       /* owner words naming another lock domain */
	uint64_t heartbeats;
	uint64_t lease_lapses;    /* heartbeats that came more than a lease after the one before:
	                           * owned processes may have seen their lease expire */
	uint64_t doorbells;       /* rings heard (PROCCTL_REGISTRY_DOORBELLS) */
	uint64_t doorbells_muted; /* times a process rang too often and was muted */
	uint64_t doorbells_bad;   /* regions whose doorbell word was written: never heard again */
	uint32_t clients;         /* attached now */
	uint32_t owned;           /* of which this agent owns */
	uint32_t over_cap;        /* regions the last full scan left unattached for a cap
	                           * (max_per_process, max_regions): warned when it turns nonzero */
	uint32_t scan_denied;     /* processes whose fd table the last full scan was refused (no
	                           * CAP_SYS_PTRACE over them, or an LSM such as AppArmor): their
	                           * regions cannot be seen; warned when it turns nonzero */
	uint64_t attach_denied;   /* attaches the kernel refused (pidfd_getfd, /proc/PID/mem:
	                           * EPERM or EACCES), for the same reasons */
	uint64_t held_elsewhere;  /* links a scan found to a region attached through its creator,
	                           * in another process (a forked child that kept the fd, an
	                           * agent that keeps the fds it fetched): skipped, not fetched */
	uint64_t event_fd_refused; /* regions attached without the event socket their header names
	                            * (PROCCTL_HDR_EVENT_FD): refused or not fetched (SPEC.md 13.2;
	                            * logged: event_fd_refused) */
};

/* A registry: no thread runs its loop; call procctl_registry_run, or poll
 * procctl_registry_fd in your own loop and call procctl_registry_dispatch
 * when it is readable; a dispatch does a bounded amount (a full scan of
 * /proc takes many, 16 processes each, and passes over the agent's own
 * process; on a busy loop a rescan's steps are paced, each nine times its
 * length after the last, so it takes at most a tenth of the loop). It
 * starts one heartbeat thread, which only stores to mapped memory, and a
 * doorbell watcher per 127 regions (DOORBELLS); the library's threads
 * block every signal, so the program's go to its own threads. Idle, it
 * sleeps: its fd is readable for a rescan (rescan_ns), a process that
 * exited, a notify or exec, a lock file that changed, and, only while
 * something waits for time (a region found unsealed, a lock not taken, a
 * deferred scan), a timer. Exec'd processes are found by
 * procctl_registry_exec, else at the next rescan (a sweep of every
 * client in steps of 64). All registry calls but notify, exec, stop and stats belong
 * to the loop's thread, and on_event must not call registry functions
 * that change it (dispatch, run, close). Clients handed out hold until
 * DETACHED returns; take a reference (procctl_client_ref) to keep one
 * longer or to use it on another thread. A client call that waits
 * (read_state, wait_ack) made on the loop's thread holds the loop up to
 * its deadline. */
procctl_registry_t *procctl_registry_new(const struct procctl_registry_opts *opts);
int procctl_registry_fd(const procctl_registry_t *r);
/* Handle what is pending, without blocking: 0 or -errno. */
int procctl_registry_dispatch(procctl_registry_t *r);
/* Dispatch until procctl_registry_stop. */
int procctl_registry_run(procctl_registry_t *r);
/* Any thread, and async-signal-safe: make run return. */
void procctl_registry_stop(procctl_registry_t *r);
/* Any thread: scan pid soon (the hello probe's fast path). */
int procctl_registry_notify(procctl_registry_t *r, pid_t pid);
/* Any thread: pid exec'd (procctl_hello's on_exec). Its regions, if it
 * has any here, are checked soon and go (DETACHED, -ESTALE); a pid this
 * registry has nothing of costs a lookup. 0, or -EINVAL. */
int procctl_registry_exec(procctl_registry_t *r, pid_t pid);
/* Any thread: a full scan now (as at a rescan). 0. */
int procctl_registry_rescan(procctl_registry_t *r);
/* 1 once the first full scan finished. */
int procctl_registry_first_scan_done(const procctl_registry_t *r);
/* 1 when this agent holds consumer's node lock and a full scan begun
 * after it took the lock has finished (SPEC.md 9.2). The scan is the
 * asking's: 0 asks for one (a lock taken for a consumer nobody asks about,
 * a made-up name, costs no scan of /proc). */
int procctl_registry_ready(procctl_registry_t *r, const char *consumer);
int procctl_registry_owner(const procctl_registry_t *r, const char *consumer);
/* The attached clients (at most max): their count. */
size_t procctl_registry_clients(const procctl_registry_t *r, procctl_client_t **out, size_t max);
/* The same of consumer's clients alone, without a walk of the others
 * (an arbiter's targets on a node with thousands of other regions). */
size_t procctl_registry_clients_of(const procctl_registry_t *r, const char *consumer, procctl_client_t **out,
				   size_t max);
/* The client attached for pid (the first, if it has several), or NULL. */
procctl_client_t *procctl_registry_find(const procctl_registry_t *r, pid_t pid);
/* With PROCCTL_REGISTRY_DOORBELLS: 1 when c's doorbell rang since the
 * last call for c (which forgets it), 0 when it did not; -ENOTSUP when c's
 * doorbell is not listened to (no DOORBELLS, not attached, muted, written,
 * no watcher for it): read its state block anyway. A wake can be lost
 * (a hint only, SPEC.md 6.5), so 0 is no proof that nothing changed. */
int procctl_registry_doorbell_rang(procctl_registry_t *r, const procctl_client_t *c);
/* With PROCCTL_REGISTRY_DOORBELLS: 1 while c's doorbell is heard (a write
 * to its state block rings a DOORBELL event), 0 while it is not (muted for
 * ringing too often, written, no watcher for it yet): poll it meanwhile.
 * Turning unheard rings one more DOORBELL event. -ENOTSUP: no DOORBELLS,
 * or c is not attached. */
int procctl_registry_doorbell_heard(procctl_registry_t *r, const procctl_client_t *c);
/* 0, or -EINVAL (out NULL, sz 0). */
int procctl_registry_stats(procctl_registry_t *r, struct procctl_registry_stats *out, size_t sz);

#define PROCCTL_CLOSE_UNINSTALL 0x1u /* release leases: uninstall every owned region */

/* Stop heartbeats; hand off every owned region (RELEASED, written last) or
 * uninstall it; drop the node locks (OWNERSHIP held 0); detach everything;
 * free. */
void procctl_registry_close(procctl_registry_t *r, unsigned flags);

/* ---- Hello: fast discovery ------------------------------------------ */

/* Watches the node for procctl:hello (procctl.h fires it in procctl_init
 * and procctl_reinit) and calls on_pid(pid) for the process that said it,
 * so a registry's procctl_registry_notify attaches it within a
 * millisecond instead of at the next rescan. How: perf events on every
 * CPU report executable mappings; a file mapped for the first time is
 * read for procctl:hello notes (procctl_elf_hello_sites) and, when it has
 * some, gets a uprobe on each; a process that maps such a file is also
 * handed to on_pid 20 ms later (it may have said hello before the uprobe
 * existed). on_pid(0): records were lost, scan everything
 * (procctl_registry_rescan). Probes of files no process has mapped for
 * idle_ns are closed; memory is bounded, and probes use at most half of
 * RLIMIT_NOFILE. A mapped file is opened O_PATH (its mapping, else its
 * path resolved inside the process's root with no magic links), checked
 * to be the record's regular file and not on FUSE, and only then read.
 *
 * Like a registry it runs in the caller's loop: poll procctl_hello_fd and
 * call procctl_hello_dispatch when it is readable (on_pid runs there). All
 * calls on one hello from one thread at a time.
 *
 * Its readiness is used up by the first poll that reports it: the fd is an
 * epoll set of perf rings, and a perf ring's readiness is cleared by the
 * poll that reads it (the kernel's perf_poll), whoever asks: poll, select,
 * or an epoll_wait of a set that holds the fd (or holds a set that does).
 * A second poll, with no new record in between, says nothing is ready. So
 * call procctl_hello_dispatch once for every wake that reported the fd,
 * and do not poll it again first to learn whether it was the one (an
 * epoll_wait with timeout 0 after a poll of the same fds is told none). A
 * dispatch reads every ring, whatever readiness said, and costs little
 * when nothing waits: a loop that cannot tell which of its fds woke it may
 * dispatch on every wake. Its timers (rechecks, the end of a batch) are a
 * timerfd in that set: readable until dispatched.
 *
 * Needs system-wide perf events (CAP_PERFMON or CAP_SYS_ADMIN, or
 * perf_event_paranoid <= 0) and the uprobe PMU; without them new returns
 * NULL with errno (EACCES or EPERM: no permission; ENOENT: no uprobe
 * PMU; EDQUOT: the rings could not be locked in memory, CAP_IPC_LOCK),
 * procctl_hello_error(-errno) says it in words, and a registry
 * still finds every process at its rescans. */
typedef struct procctl_hello procctl_hello_t;

struct procctl_hello_opts {
	size_t sz;                            /* sizeof(struct procctl_hello_opts): see the top */
	void (*on_pid)(pid_t pid, void *arg); /* a process to scan now; 0: every process */
	void *arg;
	const char *proc_root;                /* NULL: "/proc" */
	const char *sysfs_root;               /* NULL: "/sys" (the uprobe PMU's type is read there) */
	unsigned ring_pages;                  /* per CPU, a power of two; 0: 16 */
	uint64_t idle_ns;                     /* a probed file no process maps keeps its uprobes this
						 long (a program started again is heard); 0: 30 s */
	void (*on_exec)(pid_t pid, void *arg); /* optional: pid exec'd (any process: pass it to
						  procctl_registry_exec, which ignores the rest) */
	uint64_t batch_ns;                    /* the host's execs, mappings, forks and exits wake the
						 caller once this long at most (read together then),
						 doubling while they keep coming, to 1 s (or batch_ns
						 when longer); a hello is heard at once; 0: 20 ms */
};

struct procctl_hello_stats {
	uint64_t mmaps;          /* executable file mappings seen */
	uint64_t files_read;     /* files read for notes */
	uint64_t files_probed;   /* ... that had procctl:hello sites and got uprobes */
	uint64_t files_dropped;  /* probed files no process mapped any more, or rewritten */
	uint64_t files_rewritten; /* probed files written in place (their probes dropped at once) */
	uint64_t files_skipped;  /* probed files over the limit */
	uint64_t files;          /* probed now */
	uint64_t probes;         /* sites probed now (each on every CPU) */
	uint64_t probe_failures; /* perf refused a uprobe */
	uint64_t hits;           /* hellos heard */
	uint64_t notifies;       /* on_pid calls */
	uint64_t lost;           /* lost-record reports (a full ring) */
	uint64_t open_failures;  /* a mapped file that could not be opened */
	uint64_t elf_rejected;   /* files that are not (sane) 64-bit little-endian ELF */
	uint64_t uprobes;        /* uprobe perf events open now (probes times CPUs): each an fd, and a
				    wait in the kernel when closed (procctl_hello_free) */
	uint64_t uprobes_denied; /* 1: the kernel refused a uprobe (CAP_SYS_ADMIN since Linux 6.16):
				    files with the probe are watched by their mappings alone, and a
				    process that maps one is handed to on_pid 5 times in 10 s */
	/* Why files with the probe got none (each also in files_skipped): */
	uint64_t skipped_all;     /* all owners hold 1,024 files, or every probe fd (half of RLIMIT_NOFILE) */
	uint64_t skipped_owner;   /* its owner (not root) holds 32 */
	uint64_t skipped_closing; /* while earlier probes were closing: not root's (root's wait for the close in
				     flight, 16 at a time; past them, this) */
	uint64_t skipped_churn;   /* its owner rewrote a probed file in the last 60 s */
	uint64_t owners_cooled;   /* rewrites of probed files that put their owner off probes for 60 s */
	uint64_t owners_cooling;  /* owners off probes now (of the last 64 to rewrite one; past 64, all) */
	uint64_t placed_past_closes; /* root's files probed while others' probes were closing (the closer
					waited) */
	uint64_t skipped_others;  /* a file with the probe got none: the owners but root together hold 64
				     files, or a quarter of the probe fds */
};

procctl_hello_t *procctl_hello_new(const struct procctl_hello_opts *opts);
int procctl_hello_fd(const procctl_hello_t *h);
/* Handle what is pending, without blocking: 0 or -errno. */
int procctl_hello_dispatch(procctl_hello_t *h);
/* 0, or -EINVAL (out NULL, sz 0). */
int procctl_hello_stats(const procctl_hello_t *h, struct procctl_hello_stats *out, size_t sz);
void procctl_hello_free(procctl_hello_t *h);
/* Why procctl_hello_new failed (its -errno), in words. */
const char *procctl_hello_error(int err);

/* The file offsets of the procctl:hello sites in the ELF file open as fd
 * (where a uprobe goes): up to max of them in off, and their count, 0 for
 * a file without any. The file is read as hostile: -ENOEXEC for anything
 * but a sane 64-bit little-endian program or library of this machine's
 * architecture with section headers, -EFBIG for notes over 1 MiB in all;
 * -errno of a failed read. */
int procctl_elf_hello_sites(int fd, uint64_t *off, int max);

/* ---- Resource ids as text ------------------------------------------------ */

/* A resource id (procctl_resource_t.id) from text: a UUID (8-4-4-4-12
 * hex digits, nvidia-smi's "GPU-" prefix allowed) or 32 hex digits. 0,
 * or -EINVAL (id untouched). */
int procctl_resource_id_parse(const char *s, uint8_t id[16]);
/* id as a lowercase UUID: 36 characters and a NUL. */
void procctl_resource_id_format(const uint8_t id[16], char out[37]);

/* ---- Time ------------------------------------------------------------ */

/* CLOCK_MONOTONIC in ns: the clock of every deadline_ns and time in this
 * API. */
int64_t procctl_now_ns(void);

/* ---- Logging --------------------------------------------------------- */

enum procctl_log_level { PROCCTL_LOG_ERROR, PROCCTL_LOG_WARN, PROCCTL_LOG_INFO, PROCCTL_LOG_DEBUG };

/* event: a stable snake_case name; fields: "key=value key=value". */
typedef void (*procctl_log_fn)(enum procctl_log_level level, const char *event, const char *fields, void *arg);

/* The library never prints; it calls fn (NULL: silence). Set it before
 * starting registries. */
void procctl_set_log(procctl_log_fn fn, void *arg);

/* A rate limit for log lines a peer can cause as often as it likes (the
 * library's own such lines go through one per call site): at most one
 * line per interval. */
struct procctl_ratelimit {
	int64_t next_ns;     /* the next line may go out then */
	uint64_t suppressed; /* lines dropped since the last one out */
};

/* 1: write the line now, and *suppressed says how many were dropped
 * before it; 0: drop it. Any thread. */
int procctl_ratelimit(struct procctl_ratelimit *rl, int64_t interval_ns, uint64_t *suppressed);

#ifdef __cplusplus
}
#endif
#endif
