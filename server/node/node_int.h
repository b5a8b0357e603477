/* SPDX-License-Identifier: Apache-2.0 */
/* node_int.h - what the parts of procctl-node's loop share (node.h is
 * what the rest of the daemon sees): the loop's state and the calls one
 * part makes into another. node.c: the loop itself; the others below. */
#ifndef PROCCTL_NODE_INT_H
#define PROCCTL_NODE_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "match/admission.h"
#include "desired/desired.h"
#include "kubepods.h"
#include "pconfigs.h"
#include "jobq.h"
#include "node.h"
#include "sys/podid.h"
#include "procctl/v1/node.pb-c.h"
#include "procctl_arbiter.h"
#include "timer.h"

struct hellothread; /* hellothread.h */

#define MS 1000000ll
#define STATE_READ_NS (20 * MS)    /* a state read out longer is late: its process is stalled
                                    * (and an arbiter's read holds its tick this long at most) */
#define POLL_WAITING_NS (2 * MS)   /* a process with a wait on it and no doorbell */
#define POLL_RUNG_NS (20 * MS)     /* ... with a doorbell (a wake can be lost) */
#define POLL_IDLE_NS (1000 * MS)   /* state changes of processes whose doorbell is not heard */
#define HEXID_LEN 17               /* an id as 16 hex digits */

typedef Procctl__V1__Process PbProcess;
typedef Procctl__V1__ProcessRef PbRef;
typedef Procctl__V1__Selector PbSelector;
typedef Procctl__V1__PublishResult PbResult;
typedef Procctl__V1__WatchEventsResponse PbEvent;

struct proc {
	procctl_client_t *c;
	procctl_registry_t *reg;
	struct selector key; /* pid, consumer, version, pod, container */
	uint64_t instance;
	enum procctl_qos qos;
	int nspid_count;
	pid_t nspid[PROCCTL_NSPID_MAX];
	uint32_t payload_cap;
	int have_state;       /* a state block was read */
	int stalled;          /* a read of it is stuck: none starts until it returns */
	int stall_said;       /* the stall was logged (its end is too) */
	int announced;        /* Attached said (after its first read, or its lateness) */
	struct proc_read *rd; /* the read out now (reads.c), or NULL */
	int reread;           /* asked for again while one was out */
	struct timer t_late;  /* the read out is late then: stalled */
	struct node_job *state_jobs; /* ReadState calls waiting for the next read */
	uint64_t first_gen;   /* the first config generation known here (found at attach, or this
	                       * daemon's first write): WaitAck takes none below it */
	uint64_t acked_gen;   /* from the last read */
	int32_t ack_status;
	uint32_t state_hash;  /* of its resources and bytes */
	int waiting;          /* items of waits expecting its ack: poll it often */
	struct wait_item *items; /* every wait item naming it */
	int rings;            /* its doorbell was heard: it need not be polled as often */
	uid_t uid;            /* effective, at attach: admission */
	gid_t gid;
	char cgroup[ADMIT_PATH_MAX]; /* its cgroup v2 path; "": unknown */
	unsigned refused;     /* bit i: arbiter i's admission refuses it */
	unsigned refusal_said; /* bit i: logged */
	uint64_t written_gen; /* the last config written, and when: its ack's latency */
	int64_t written_ns;
	/* Where its config comes from (rollout.c): the desired config's
	 * revision the last write carried (0: a Publish or Clear; or one
	 * found on it at attach, then desired_gen is the generation found),
	 * the store's revision at that write, and a desired config's revision
	 * too large for it (0: none). */
	uint64_t desired_rev, desired_gen, write_rev, too_big_rev;
	const struct desired *config; /* its desired config (rollout.c), while config_at is current */
	int apply_deferred;   /* attached before the node's pods were first listed: its desired config waits
			       * for them (desired_pods_synced) */
	uint64_t config_at;
	struct node *n;
	size_t at;            /* its index in n->procs */
	struct timer t_poll;  /* its next state poll (reads.c) */
};

/* How far a desired config got (rollout.c counts it). */
struct desired_rollout {
	uint32_t applied, rejected, pending, superseded, not_owned;
	uint32_t too_big; /* of those rejected: a region too small for it */
};

/* What a wait's item writes, when its items write different things: a
 * config (a desired config's payload, and its revision) or a clear. */
struct wait_src {
	uint64_t rev;     /* the desired config's revision (0: a clear) */
	uint8_t *payload; /* owned; NULL: a clear */
	size_t len;
};

/* One result of a wait: a process a Publish, Clear or WaitAck named. */
struct wait_item {
	struct wait *w;
	struct proc *p; /* NULL once it left */
	struct wait_item *pnext, **pprev; /* on p->items while p is set */
	pid_t pid;
	uint64_t instance;
	uint64_t gen;   /* written, or waited for; 0: nothing written */
	Procctl__V1__PublishStatus status;
	int32_t pstatus;
	char error[192];
	int done;
	size_t src;     /* with w->srcs: what it writes */
};

/* A call that writes and waits. Its writes go out a slice a loop turn,
 * in the order the calls came (n->writing), so requests keep being served
 * during a write to thousands and a later call's write to a process is
 * never overtaken by an earlier one's. */
struct wait {
	struct node_job *job;
	int64_t deadline_ns;
	struct timer t_deadline;
	int expired;            /* t_deadline fired */
	int cancelled;          /* the call went while its writes were still out */
	int single;             /* a pid's Publish or Clear: a refused write is the call's error */
	struct desired desired; /* SetDesiredConfig: the config as stored (payload owned) */
	int call_deadline;      /* the call's deadline ends it, not wait_ms */
	uint32_t wait_ms;
	uint8_t *payload;       /* what is written (owned); NULL: a clear */
	size_t len;
	struct wait_src *srcs;  /* else, when set: what item i writes is srcs[item[i].src] (owned) */
	size_t nsrcs;
	struct desired_rollout rollout; /* DeleteDesiredConfig: the deleted config's, in w->desired */
	size_t written;         /* items [0, written) had their turn to be written */
	size_t open;            /* items not done */
	struct wait *next;      /* n->waits */
	struct wait *wnext;     /* n->writing, while items are unwritten */
	size_t n;
	struct wait_item item[];
};

/* A resource's hold and blocked time by the namespace of the processes'
 * pods (metrics_namespaces), "" for processes of no known pod. */
struct ns_time {
	procctl_resource_t res;
	char ns[PODSEL_NS_MAX + 1]; /* NS_OTHER: past metrics_namespaces of them */
	uint64_t hold_ns, blocked_ns;
};
#define NS_OTHER "_other" /* no namespace's name: a DNS label has no '_' */

struct arb {
	procctl_arbiter_t *a;
	struct procctl_arbiter_source src;
	const struct node_arbiter_cfg *cfg;
	unsigned bit;       /* its bit in a proc's refused mask */
	size_t nsnap;
	struct procctl_arbiter_snapshot snap[PROCCTL_ARB_MAX_RESOURCES]; /* as of the last tick */
	struct ns_time *nst; /* with metrics_namespaces: at most that many (and NS_OTHER) a resource */
	size_t nnst;
};

/* Publish-to-ack latency buckets, and the loop's turn time's, seconds
 * (Prometheus "le"): metrics.c. */
#define NBUCKETS 16
extern const double ack_buckets[NBUCKETS];
#define NTURN_BUCKETS 11
extern const double turn_buckets[NTURN_BUCKETS];

/* The loop's own counters, for /metrics. */
struct node_stats {
	uint64_t writes;           /* configs written or cleared (Publish, Clear, desired configs) */
	uint64_t acks_applied, acks_rejected;
	uint64_t ack_hist[NBUCKETS + 1]; /* the last: over every bucket */
	double ack_sum;
	uint64_t ownership_changes;
	uint64_t turn_hist[NTURN_BUCKETS + 1]; /* the loop's turns (node.c) */
	double turn_sum;
	uint64_t slow_turns; /* over slow_turn_ms */
	uint64_t snapshots_built, snapshots_shared; /* WatchEvents' (watch.c) */
};

/* What a registry's on_event gets. */
struct reg_arg {
	struct node *n;
	procctl_registry_t *reg;
};

struct node {
	struct node_cfg cfg;
	procctl_registry_t *reg[NODE_CONSUMERS_MAX];
	struct reg_arg args[NODE_CONSUMERS_MAX];
	size_t nreg;
	struct hellothread *hello; /* NULL: off, or unavailable (hellothread.h) */
	int released;           /* node_release done: the hand-off (or uninstall) */
	uint64_t rev_at_start;  /* the desired store's revision as this daemon found it */
	const struct nodelock *lock; /* NODE.lock, held; NULL: none */
	int lock_ifd;           /* inotify on it (its link count, a rename); -1: none */
	int lock_lost;          /* it was deleted or replaced: the loop stopped */
	int cfg_ifd;            /* inotify on the config file's directories; -1: not followed */
	struct timer t_cfg;     /* a reload (events settle first) */
	int64_t cfg_first;      /* the first change not reloaded yet; 0: none */
	const char *cfg_path;
	int (*cfg_build)(struct node_cfg *c, char *err, size_t errlen, void *arg);
	void *cfg_arg;
	struct arb arb[NODE_ARBITERS_MAX];
	size_t narb;
	struct proc **procs;
	size_t nprocs, cap_procs;
	struct wait *waits;
	struct wait *writing, **writing_tail; /* waits with writes still to go, oldest first */
	struct timers timers;   /* the state polls, waits' deadlines, arbiters' ticks, config reloads */
	struct timer t_tick;    /* the arbiters' */
	struct events *ev;
	struct {                /* the last snapshot packed, while the next watch may share it (watch.c) */
		struct node_packed *msg; /* NULL: none */
		struct selector filter;
		uint64_t seq;
	} snap;
	struct desired_store desired;
	struct kubepods kube;   /* the node's pods, as the API server sees them (kubernetes_api) */
	struct pconfigs pconfigs; /* the cluster's ProcessConfigs (kubernetes_processconfigs) */
	struct node_stats stats;
	uint64_t incarnation;
	struct node_hooks hooks;
	int serving;          /* atomic: hooks set (the serving side is up) */
	int kick;             /* events appended or readiness changed since the last kick */
	int ready;            /* atomic */
	int64_t busy_since;   /* atomic: the present turn's start; 0 while the loop waits */
	unsigned on_events;   /* a registry's dispatch: the events it gave node_on_event, */
	int64_t on_events_ns; /* their time there (the slow-turn line), */
	const char *on_event_worst; /* and the slowest's: its type, time and pid */
	int64_t on_event_worst_ns;
	pid_t on_event_worst_pid;
	int ready_said;       /* hooks.ready was called */
	struct timer t_alive; /* hooks.alive's */

	pthread_mutex_t mu;   /* the job queue */
	struct jobq jobs;
	int closed;           /* under mu: no more jobs */
	int efd;              /* eventfd: jobs queued, or stop */
	volatile int stop;
	sigset_t sigmask;     /* the loop sleeps with it (has_sigmask; node_set_sigmask) */
	int has_sigmask;
	int reload_asked;          /* node_reload (an atomic): read the config file at the next turn */

	struct procctl_state st; /* scratch for state reads (64 KiB of bytes) */
	struct read_q *reads;    /* reads done, for the loop (reads.c) */
};

#define now_ns procctl_now_ns /* the loop's clock is the library's */
#define container_of(p, type, member) ((type *)(void *)((char *)(p)-offsetof(type, member)))

/* Messages of one answer, freed together after packing. */
struct arena {
	void **blk;
	size_t n, cap;
	int failed;
};

/* arena.c: answers built in an arena, the API's forms of ids */
void *ar_alloc(struct arena *a, size_t size);
char *ar_str(struct arena *a, const char *s);
void ar_free(struct arena *a);
void job_finish(struct node_job *job, enum node_code code, const char *msg, const ProtobufCMessage *resp);
void job_finish_arena(struct node_job *job, struct arena *a, const ProtobufCMessage *resp);
char *hexid(char buf[HEXID_LEN], uint64_t v);
int hexid_parse(const char *s, uint64_t *v);
char *ar_hexid(struct arena *a, uint64_t v);
/* A resource id in the UUID form (procctl_resource_id_format), in a. */
char *ar_resid(struct arena *a, const uint8_t id[16]);
PbRef *mk_ref(struct arena *a, pid_t pid, uint64_t instance);
/* reply.c: the API's forms of processes, desired configs, state blocks */
const char *node_kind_name(const struct node *n, uint32_t kind, char buf[16]);
Procctl__V1__AckResult proc_ack_result(const struct proc *p);
PbProcess *mk_process(struct arena *a, const struct proc *p);
Procctl__V1__DesiredConfig *mk_desired(struct arena *a, const struct desired *d);

/* rollout.c: the counts of n->desired.v[i] in out[i] (n->desired.n of them), over
 * the attached processes (those of regions not this daemon's to write
 * counted not_owned). Each process's config is found once per change of the
 * store (cached on it). */
void rollout_count(const struct node *n, struct desired_rollout *out);
/* The same for the ProcessConfigs' configs, n->desired.kv. */
void rollout_count_kube(const struct node *n, struct desired_rollout *out);
/* reply.c: a rollout as the API says it */
Procctl__V1__DesiredRollout *mk_rollout(struct arena *a, const struct desired_rollout *r);

/* table.c: the process table as the services see it.
 * proc_wrote: generation g (<= 0: the write failed) was written to p,
 * carrying desired config revision rev (0: a Publish or Clear). */
void proc_wrote(struct node *n, struct proc *p, int64_t g, uint64_t rev);
/* The pod p is in, as the Kubernetes API server sees it (NULL: none, not
 * known, or kubernetes_api off), and the desired config p should have. */
const struct podmeta *proc_pod(const struct node *n, const struct proc *p);
const struct desired *proc_desired(const struct node *n, const struct proc *p);
/* 1 when what may choose a process's config by its pod is known: the
 * node's pods listed (kubernetes_api) and the ProcessConfigs
 * (kubernetes_processconfigs), or followed not at all. */
int node_pods_known(const struct node *n);
void node_emit(struct node *n, const struct selector *k, PbEvent *ev);
enum node_code selector_from_pb(const PbSelector *s, struct selector *k, const char **why);
/* A Selector as a filter, with its namespace and label selector: OK,
 * INVALID_ARGUMENT, or FAILED_PRECONDITION (those two without
 * kubernetes_api), with why in err. */
enum node_code filter_from_pb(const struct node *n, const PbSelector *s, struct selector *k, struct podsel *ps, char *err,
			      size_t errlen);
/* The processes that match f and ps (NULL: any pod), in (pid, instance)
 * order: their count (*out malloc'd), or -ENOMEM. */
ssize_t procs_matching(struct node *n, const struct selector *f, const struct podsel *ps, struct proc ***out);
/* The start time of the attached process pid (any of its regions), and
 * its image in *image; 0 none attached, or unknown. */
uint64_t procs_start_of(const struct node *n, pid_t pid, uint64_t *image);

/* procs.c: the processes' lives (a registry's attach and detach, what
 * their state reads found) and the events they emit. */
/* The node's pods were listed for the first time, and the ProcessConfigs
 * (when followed): each process of a pod gets its desired config now, as
 * at attach (a config by namespace or labels can only be told then; a
 * successor finds what its predecessor wrote, and keeps it). */
void desired_pods_synced(struct node *n);
void node_on_hello(pid_t pid, void *arg);
void node_on_exec(pid_t pid, void *arg);
void node_on_event(const struct procctl_event *e, void *arg);
/* What a state read found goes to the processes' lives (procs.c), which
 * reads.c does not call: the loop hands this table to reads_open. */
struct read_sink {
	/* A read of p returned st (quiet: the first, at attach: no events). */
	void (*seen)(struct node *n, struct proc *p, const struct procctl_state *st, int quiet);
	/* p's first read returned, or is late: p is announced (Attached). */
	void (*announce)(struct node *n, struct proc *p);
};
extern const struct read_sink procs_read_sink;

/* reads.c: state reads off the loop, and the polls that start them */
int reads_open(struct node *n, const struct read_sink *sink);
void reads_close(struct node *n);
void node_reads_done(struct node *n);
void proc_reads_init(struct proc *p);
void proc_read_state(struct node *n, struct proc *p, int quiet);
void proc_read_for(struct node *n, struct proc *p, struct node_job *job);
void proc_reads_gone(struct node *n, struct proc *p, int r);
/* Poll p's state by its interval from now, unless a poll is due sooner. */
void proc_poll_soon(struct node *n, struct proc *p, int64_t now);
/* reply.c: a ReadState call's answer from a read's result (n->st) */
void state_reply(struct node *n, struct node_job *job, int r);

/* waits.c: writes that wait for acks, settled as the acks are read */
void waits_update(struct node *n, struct proc *p, const struct procctl_state *st);
/* p left the table: its open items are GONE. */
void waits_gone(struct node *n, struct proc *p);
void waits_sweep(struct node *n, int all);
/* Write the next slice of the queued writes: 1 while some are left. */
int waits_write(struct node *n);
/* A wait of c items for job, until wait_ms or the call's deadline: its
 * deadline armed. NULL when out of memory (job answered). */
/* May job wait wait_ms more? 0, or the job answered and -1. Bounded: the
 * time, the waits in all and per peer (a client that leaves its calls
 * behind, or loops over them, holds only so much). wait_new asks it; a
 * call that changes state before it waits asks first, so that a refusal
 * changes nothing. */
int wait_admit(struct node *n, struct node_job *job, uint32_t wait_ms);
struct wait *wait_new(struct node *n, struct node_job *job, size_t c, uint32_t wait_ms);
void wait_free(struct node *n, struct wait *w);
/* The call of job id is gone: its wait, if it has one, is answered
 * CANCELLED and freed (once its writes are out: a write is not cut in
 * half by its caller leaving). */
void waits_cancel(struct node *n, uint64_t id);
/* Write payload (NULL: clear) to each of v, as one wait of job's: its
 * results in v's order, the wait started. single: a pid's call (a refused
 * write answers the call FAILED_PRECONDITION). NULL: job answered. */
struct wait *wait_write_all(struct node *n, struct node_job *job, struct proc **v, size_t c,
			    const ProtobufCBinaryData *payload, uint32_t wait_ms, int single);
/* Item i of w waits for p's ack of gen. */
void wait_item_pending(struct node *n, struct wait *w, size_t i, struct proc *p, uint64_t gen);
void wait_start(struct node *n, struct wait *w);

/* service.c: the NodeService requests */
void node_handle(struct node *n, struct node_job *job);

/* watch.c: WatchEvents' start */
void do_watch(struct node *n, struct node_job *job);
/* The snapshot kept for the next watch goes: before a request that may
 * change what it holds, and when the turn's requests are done. */
void watch_share_end(struct node *n);

/* service_desired.c: desired configs (the API's and the config file's) */
/* Write d (NULL: a clear) to p, when its region is this daemon's to
 * write and d fits; no one waits for the ack. The generation written, or
 * 0. */
int64_t desired_give(struct node *n, struct proc *p, const struct desired *d);
void desired_from_file(struct node *n, const struct node_cfg *cfg);
/* The pod uid's namespace or labels changed, or it came or went
 * (kubepods_drain's callback, arg the node; old and new_ its metadata
 * before and after, NULL: not known): each of its processes whose desired
 * config is another now gets it, as a new process would, and one that
 * held a config that applies no longer is cleared, as a deleted config's
 * processes are. A change that leaves the config as it was writes
 * nothing (a Publish over it stays). */
void desired_pod_changed(void *arg, const char *uid, const struct podmeta *old, const struct podmeta *new_);
/* The process (pid, start) is gone or exec'd: its pid configs go. */
void desired_process_gone(struct node *n, pid_t pid, uint64_t start);
/* At start: pid configs whose process no longer runs go. */
void desired_prune(struct node *n);
void do_set_desired(struct node *n, struct node_job *job);
void do_delete_desired(struct node *n, struct node_job *job);
void do_list_desired(struct node *n, struct node_job *job);

/* metrics.c: the Prometheus exposition of the loop's state */
struct prom;
void node_render_metrics(struct node *n, struct prom *p);

/* arbiters.c: the arbiters, their ticks and their events */
int arbiters_new(struct node *n, char *err, size_t errlen); /* 0, or -1 and a message */
/* Tick every arbiter, and arm the next tick for when one needs it. */
void arbiters_tick(struct node *n);
/* Something of consumer's processes changed (attached, detached, rang,
 * a report seen changed): its arbiter, if any, ticks at once. */
void arbiters_kick(struct node *n, const char *consumer);
/* 1 when arbiter i's admission refuses p, and why (who it is). */
int arbiter_refusal(const struct node *n, const struct proc *p, size_t i, char *why, size_t len);

/* cfgwatch.c: following the config file */
void cfg_events(struct node *n, int64_t now);
int cfg_reload(struct node *n); /* 1 changed, 0 not, -1 not read */
void cfg_asked(struct node *n); /* node_reload: read it again now */
void cfg_on_due(struct timer *t, int64_t now); /* t_cfg's function */

#endif
