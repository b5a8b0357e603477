/* SPDX-License-Identifier: Apache-2.0 */
/* registry_int.h - what the registry's files share: its state, its
 * entries and lock records, and the calls between registry.c (discovery,
 * attach, detach, the loop, the lifecycle), registry_locks.c (node locks
 * and ownership), registry_threads.c (the heartbeat thread) and
 * registry_bells.c (the doorbells). Internal to libprocctl-agent. */
#ifndef PROCCTL_REGISTRY_INT_H
#define PROCCTL_REGISTRY_INT_H

/* This file's globals carry the library's prefix in its symbols (a program
 * linking libprocctl-agent.a may have a reg_bells_attach of its own). */
#define reg_bells_attach procctl__reg_bells_attach
#define reg_bells_detach procctl__reg_bells_detach
#define reg_bells_due procctl__reg_bells_due
#define reg_bells_flush procctl__reg_bells_flush
#define reg_bells_start procctl__reg_bells_start
#define reg_bells_stop procctl__reg_bells_stop
#define reg_bells_tick procctl__reg_bells_tick
#define reg_by_client procctl__reg_by_client
#define reg_by_region procctl__reg_by_region
#define reg_by_id procctl__reg_by_id
#define reg_by_pid procctl__reg_by_pid
#define reg_claim procctl__reg_claim
#define reg_emit procctl__reg_emit
#define reg_emit_doorbell procctl__reg_emit_doorbell
#define reg_emit_entry procctl__reg_emit_entry
#define reg_emit_ownership procctl__reg_emit_ownership
#define reg_emit_ready procctl__reg_emit_ready
#define reg_hb_claimed procctl__reg_hb_claimed
#define reg_hb_main procctl__reg_hb_main
#define reg_index_add procctl__reg_index_add
#define reg_index_del procctl__reg_index_del
#define reg_kick procctl__reg_kick
#define reg_lock_check procctl__reg_lock_check
#define reg_lock_find procctl__reg_lock_find
#define reg_lock_for procctl__reg_lock_for
#define reg_lock_put procctl__reg_lock_put
#define reg_lock_try procctl__reg_lock_try
#define reg_lock_watch procctl__reg_lock_watch
#define reg_on_found procctl__reg_on_found
#define reg_probe_unsealed procctl__reg_probe_unsealed
#define reg_rejected_add procctl__reg_rejected_add
#define reg_rejected_forget procctl__reg_rejected_forget
#define reg_rejected_was procctl__reg_rejected_was
#define reg_ring_dispatch procctl__reg_ring_dispatch
#define reg_sibling procctl__reg_sibling

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "bellring.h"
#include "client.h"
#include "doorbell.h"
#include "procctl_agent.h"

#define DEFAULT_LEASE_NS 10000000000ull
#define DEFAULT_RESCAN_NS 60000000000ull
#define TICK_NS 20000000ull   /* probes of a region found unsealed */
#define LOCK_RETRY_NS 1000000000ll /* a lock not taken: a holder's close is heard at once (inotify) */
#define SWEEP_BATCH 64        /* clients an exec sweep looks at a dispatch (one sweep a rescan) */
#define NOTIFY_BATCH 16       /* notified pids scanned a dispatch (the rest at the next) */
#define NOTIFY_LINKS 256      /* fd links their scans read a dispatch (~1 ms; the rest at the next) */
#define FULL_SCAN_SHARE 10    /* asked-for full scans start at most every 10x a scan's time */
#define SCAN_STEP_PIDS 16     /* processes a full scan looks at in one dispatch, 256 fd links (~1 ms) */
#define SCAN_LATE_NS 1000000ll /* a loop back to a rescan's next step later than this (and a step): busy */
#define SCAN_STEP_SHARE 10    /* a paced rescan's next step waits 9x the last one's time: a tenth of the loop */
#define NOTIFY_MAX 4096   /* pids waiting for a targeted scan (more at once: a full scan) */
#define NOTIFY_SLOTS 8192 /* queued[]: a power of two */
#define REJECTED_MAX 256
#define UNSEALED_MAX 64
#define UNSEALED_TICKS 50 /* a region found mid-init is probed again for 1 s */
#define DEFAULT_PER_PROCESS 16
#define DEFAULT_REGIONS 8192
#define DEFAULT_CONSUMERS 256
#define BELL_WINDOW_NS 1000000000ull
#define BELL_LIMIT 1000 /* rings a process may make per window */
#define BELL_SETTLE_NS 20000000ull  /* a returned watcher's wait is looked for this often, its slice swept once it is queued */
#define BELL_SWEEP_NS 1000000000ull /* a slice is swept at most once in this */
#define REG_BUCKET_BITS 12   /* 4,096 chains by id, as many by pid: ~2 entries a chain at 10,000 */

/* epoll tags; a client's is its entry id, TAG_FIRST_ID and up (never a
 * pointer: a freed entry's address can come back in the same batch). */
enum { TAG_EVENT = 1, TAG_RESCAN, TAG_TICK, TAG_LOCKS, TAG_BELLS, TAG_FIRST_ID };

struct lock_rec {
	char consumer[32];
	uint32_t nentries; /* regions attached under it */
	struct entry *ents; /* those regions (entry.lk_next), under mu */
	int fd;
	int held;
	uint32_t epoch;
	uint64_t ready_scan; /* ready once scan number ready_scan has finished */
	struct lock_rec *next;
};

struct entry {
	procctl_client_t *c;
	struct lock_rec *lk;
	uint64_t id;
	struct entry *next, **pprev;         /* r->entries */
	struct entry *lk_next, **lk_pprev;   /* lk->ents: its consumer's */
	struct entry *id_next, *pid_next, *region_next; /* registry_index.c's chains */
	/* its doorbell, under mu (the watchers' or, with the ring, the loop's) */
	uint64_t bell_window, bell_muted_until;
	uint32_t bell_count;
	int bell_bad;
	int bell_watched; /* the ring's: its wait armed */
	int bell_armed;   /* the ring's: a wait in flight */
	int bell_rang;    /* rang since procctl_registry_doorbell_rang last asked */
	size_t bell_slot; /* the watchers': its place in bell_set, SIZE_MAX none (muted, written) */
	struct entry *bell_ev_next, **bell_ev_pprev; /* r->bell_events: rang since the last DOORBELL event */
	struct entry *bell_emit_next;                /* the loop's: the events it emits now */
};

struct rejected {
	pid_t pid;
	dev_t dev;
	ino_t ino;
};

struct procctl_registry {
	struct procctl_registry_opts o;
	char consumer[32], lock_dir[256], proc_root[256];
	int epfd, evfd, rescan_fd, tick_fd;
	int lock_ifd;    /* inotify on the lock directory: a holder's close, a file replaced */
	int64_t tick_due; /* tick_fd's expiry; 0 disarmed */
	uint32_t domain;
	int have_domain, domain_logged;
	uint32_t scan_over_cap; /* regions the full scan under way left out for a cap */
	int in_full_step;       /* on_found runs for a full scan's step, not a targeted scan */
	int lock_dirfd; /* procctl_trusted_dir(lock_dir); -1 passive */
	struct lock_rec *locks;
	uint32_t nlocks;
	int closing; /* locks go with the registry, not one by one */
	uint64_t scans_started, scans_done, next_id;
	uint32_t sweep_pos; /* the exec sweep's place in the entries */
	int sweeping;       /* one under way (from the last rescan) */
	int first_scan_done, stop;

	pthread_mutex_t mu; /* entries, notify queue, stats: shared with the heartbeat thread */
	struct entry *entries;
	struct entry *by_id[1u << REG_BUCKET_BITS], *by_pid[1u << REG_BUCKET_BITS], *by_region[1u << REG_BUCKET_BITS];
	/* pids to scan (notify, exec): a ring, nq of them from nq_head. A
	 * pid's slot in queued[] (pid % NOTIFY_SLOTS) holds it while it waits,
	 * so one said twice (its fork's recheck, then its hello) is scanned
	 * once; two pids of a slot are both queued. */
	pid_t notify_q[NOTIFY_MAX];
	unsigned nq_head, nq;
	pid_t queued[NOTIFY_SLOTS];
	int notify_all;
	int64_t full_start, full_ns; /* the last full scan: when it began, its steps' time */
	int64_t step_due, step_end;   /* a rescan's next step: not before; the last one's end */
	int paced;                    /* this rescan's steps wait (full_scan_step) */
	procctl_scan_iter_t *scan_it; /* a full scan under way */
	procctl_scan_iter_t *pid_it;  /* a targeted scan under way: a fd table larger than a dispatch's links */
	uint64_t scan_no;             /* its number (scans_started then) */
	struct procctl_registry_stats stats;

	struct rejected rejected[REJECTED_MAX];
	unsigned nrejected;
	struct {
		pid_t pid;
		int fd;         /* the region's in pid, probed alone */
		unsigned ticks; /* probes left */
		dev_t dev;      /* the region */
		ino_t ino;
		char consumer[PROCCTL_CONSUMER_MAX + 1];
	} unsealed[UNSEALED_MAX];
	int reprobing; /* inside probe_unsealed: its refusals are not new */

	pthread_t hb;
	pthread_cond_t hb_cv;   /* wakes the beat: a shorter period (hb_every_ns), or the stop */
	uint64_t hb_every_ns;   /* under mu: the beat's period, a quarter of the shortest lease applied */
	uint64_t hb_last_ns;    /* under mu: the last beat of owned regions, or a claim when none was; 0 none */
	int hb_stop, hb_started;

	struct procctl_doorbells bells; /* PROCCTL_REGISTRY_DOORBELLS without the ring */
	/* The watchers' words, under mu: the heard entries, dense (watcher k
	 * waits on bell_set[127k .. 127k + 126]); and per slice its sweep's
	 * time and its last sweep (0: none). */
	struct entry **bell_set;
	size_t bell_n, bell_cap;
	uint64_t sweep_due[PROCCTL_WATCHERS_MAX], swept_at[PROCCTL_WATCHERS_MAX];
	uint64_t sweep_next;        /* the first sweep_due */
	struct entry *bell_events;  /* under mu: entries with a DOORBELL event due */
	struct procctl_bellring ring;   /* PROCCTL_REGISTRY_DOORBELLS where io_uring has futex waits */
	int ring_on, ring_dirty;        /* in use; waits queued, not yet submitted */
	uint64_t mute_due;              /* under mu: the first muted region's second ends: heard again then */
};

/* registry.c */
/* Make the loop's fd readable: it has work. */
void reg_kick(procctl_registry_t *r);
void reg_emit(procctl_registry_t *r, struct procctl_event *ev);
void reg_emit_entry(procctl_registry_t *r, const struct entry *e, enum procctl_event_type type, int reason);

/* registry_index.c: entries by id and by pid (changed under mu, by the loop) */
void reg_index_add(procctl_registry_t *r, struct entry *e);
void reg_index_del(procctl_registry_t *r, struct entry *e);
struct entry *reg_by_id(const procctl_registry_t *r, uint64_t id);
/* pid's first entry (after NULL), or the one after `after`; NULL: no more. */
struct entry *reg_by_pid(const procctl_registry_t *r, pid_t pid, struct entry *after);
struct entry *reg_by_client(const procctl_registry_t *r, const procctl_client_t *c);
/* The entry of region (dev, ino), whichever process it was attached
 * through (its creator), or NULL. */
struct entry *reg_by_region(const procctl_registry_t *r, dev_t dev, ino_t ino);
/* Another region of e's process that shares its pidfd (attach's sibling:
 * one pidfd a process, watched under one of their ids), or NULL. */
struct entry *reg_sibling(const procctl_registry_t *r, const struct entry *e);
/* Regions refused for good (REJECTED_MAX remembered, the oldest
 * forgotten first), skipped by scans: add one, ask whether pid's region
 * (dev, ino) is one, forget pid's (a notify(pid) says it has something new). */
void reg_rejected_add(procctl_registry_t *r, pid_t pid, dev_t dev, ino_t ino);
int reg_rejected_was(const procctl_registry_t *r, pid_t pid, dev_t dev, ino_t ino);
void reg_rejected_forget(procctl_registry_t *r, pid_t pid);

/* registry_locks.c: node locks (SPEC.md 8.1) and the claims they allow */
struct lock_rec *reg_lock_find(const procctl_registry_t *r, const char *consumer);
/* Claim e's region for this agent (its consumer's lock is held). */
void reg_claim(procctl_registry_t *r, struct entry *e);
/* Try to take l's lock; on success claim every region of its consumer. */
void reg_lock_try(procctl_registry_t *r, struct lock_rec *l);
/* An inotify fd (nonblocking) on the lock directory: a lock file closed,
 * removed, renamed or replaced; -1 with errno. */
int reg_lock_watch(int dirfd);
/* Our lock file is no longer the one at the path: stop writing. */
void reg_lock_check(procctl_registry_t *r, struct lock_rec *l);
/* consumer's lock record, made (and its lock tried) when missing; NULL: out of memory. */
struct lock_rec *reg_lock_for(procctl_registry_t *r, const char *consumer);
/* l's consumer has no region left: its lock goes (unless named up front). */
void reg_lock_put(procctl_registry_t *r, struct lock_rec *l);
/* PROCCTL_EV_OWNERSHIP for l, as it stands. */
void reg_emit_ownership(procctl_registry_t *r, struct lock_rec *l);
/* PROCCTL_EV_READY for l, held, once its ready scan finished (logged too). */
void reg_emit_ready(procctl_registry_t *r, struct lock_rec *l);

/* registry_threads.c */
/* registry_attach.c: the scans' callback for each region found (always
 * 0: a refusal stops no scan); probe the regions found mid-init again. */
int reg_on_found(const struct procctl_scan_entry *s, void *arg);
void reg_probe_unsealed(procctl_registry_t *r);
void *reg_hb_main(void *arg); /* the heartbeat thread */
/* e was claimed (its claim beat it): the beat comes sooner if e's lease
 * is shorter than any it keeps; else the beat is not woken. */
void reg_hb_claimed(procctl_registry_t *r, const struct entry *e);

/* registry_bells.c: doorbells, in the ring or the watcher threads */
/* The ring, else the watcher threads (said in the log): 0 or -errno. */
int reg_bells_start(procctl_registry_t *r);
/* The loop's: e attached (its wait queued: submitted by the dispatch) /
 * about to detach (before its region is unmapped). */
void reg_bells_attach(procctl_registry_t *r, struct entry *e);
void reg_bells_detach(procctl_registry_t *r, struct entry *e);
void reg_ring_dispatch(procctl_registry_t *r); /* the ring's completions */
/* At the end of a dispatch: the waits its attaches queued submitted, the
 * watchers whose slices its attaches and detaches changed woken. */
void reg_bells_flush(procctl_registry_t *r);
/* At close, before the detaches: no doorbell is listened to any more. */
void reg_bells_stop(procctl_registry_t *r);
/* At the loop's tick: muted regions whose time is up, slices due a sweep. */
void reg_bells_tick(procctl_registry_t *r);
uint64_t reg_bells_due(procctl_registry_t *r); /* when the tick is next needed for them; 0 never */
/* Emit PROCCTL_EV_DOORBELL for every region that rang (the loop's thread). */
void reg_emit_doorbell(procctl_registry_t *r);

#endif
