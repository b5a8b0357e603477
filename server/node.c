/* SPDX-License-Identifier: Apache-2.0 */
/* node.c - procctl-node's event loop (node.h).
 *
 * The loop owns everything of libprocctl-agent: one registry per
 * configured consumer (one for all when none is named), an arbiter per
 * configured kind, and the table of attached processes with what the
 * daemon knows of each: its pod identity, the last ack it read, a hash of
 * its state block. Requests arrive from the gRPC thread on a queue and
 * an eventfd; a request that waits for acks becomes a wait the loop
 * finishes when the acks are read or its deadline passes, so no request
 * ever blocks the loop longer than one state read. */
#include "node.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "desired.h"
#include "grpc_server.h"
#include "podid.h"
#include "procctl/v1/node.pb-c.h"
#include "procctl_arbiter.h"

#define MS 1000000ll
#define STATE_READ_NS (20 * MS)    /* one state read may hold the loop this long */
#define READSTATE_NS (200 * MS)    /* ReadState's own bound when the call has none */
#define POLL_WAITING_NS (2 * MS)   /* a process with a wait on it and no doorbell */
#define POLL_RUNG_NS (20 * MS)     /* ... with a doorbell (a wake can be lost) */
#define POLL_IDLE_NS (1000 * MS)   /* state changes of processes without a doorbell */
#define POLL_QUIET_NS (10000 * MS) /* ... with one */
#define TICK_NS (5 * MS)           /* arbiters */
#define HEXID_LEN 17               /* an id as 16 hex digits */

typedef Procctl__V1__Process PbProcess;
typedef Procctl__V1__ProcessRef PbRef;
typedef Procctl__V1__Selector PbSelector;
typedef Procctl__V1__PublishResult PbResult;
typedef Procctl__V1__WatchEventsResponse PbEvent;

/* ---- logging ----------------------------------------------------------- */

static enum procctl_log_level log_max = PROCCTL_LOG_INFO;

void node_log_level(enum procctl_log_level max)
{
	log_max = max;
}

void node_log(enum procctl_log_level level, const char *event, const char *fmt, ...)
{
	static const char *names[] = {"error", "warn", "info", "debug"};
	char fields[1024], ts[32];
	struct timespec t;
	struct tm tm;
	va_list ap;
	if (level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(fields, sizeof fields, fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_REALTIME, &t);
	gmtime_r(&t.tv_sec, &tm);
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "ts=%s.%03ldZ level=%s event=%s%s%s\n", ts, t.tv_nsec / 1000000, names[level], event,
		fields[0] ? " " : "", fields);
}

/* ---- state ------------------------------------------------------------- */

struct proc {
	procctl_client_t *c;
	procctl_registry_t *reg;
	struct ev_key key; /* pid, consumer, version, pod, container */
	uint64_t instance;
	enum procctl_qos qos;
	int nspid_count;
	pid_t nspid[PROCCTL_NSPID_MAX];
	uint32_t payload_cap;
	int have_state;       /* a state block was read */
	uint64_t acked_gen;   /* from the last read */
	int32_t ack_status;
	uint32_t state_hash;  /* of its resources and bytes */
	int waiting;          /* waits name it: poll it often */
	int rings;            /* its doorbell was heard: it need not be polled as often */
	uint64_t written_gen; /* the last config written, and when: its ack's latency */
	int64_t written_ns;
	int64_t next_poll_ns;
};

/* One result of a wait: a process a Publish, Clear or WaitAck named. */
struct wait_item {
	struct proc *p; /* NULL once it left */
	pid_t pid;
	uint64_t instance;
	uint64_t gen;   /* written, or waited for; 0: nothing written */
	Procctl__V1__PublishStatus status;
	int32_t pstatus;
	char error[192];
	int done;
};

struct wait {
	struct node_job *job;
	int64_t deadline_ns;
	struct desired desired; /* SetDesiredConfig: the config as stored (payload owned) */
	int call_deadline;      /* the call's deadline ends it, not wait_ms */
	size_t n;
	struct wait *next;
	struct wait_item item[];
};

struct arb {
	procctl_arbiter_t *a;
	struct procctl_arbiter_source src;
	const struct node_arbiter_cfg *cfg;
	size_t nsnap;
	struct procctl_arbiter_snapshot snap[PROCCTL_ARB_MAX_RESOURCES]; /* as of the last tick */
};

/* Publish-to-ack latency buckets, seconds (Prometheus "le"). */
static const double ack_buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
				     0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5, 5, 10};
#define NBUCKETS (sizeof ack_buckets / sizeof ack_buckets[0])

/* The loop's own counters, for /metrics. */
struct node_stats {
	uint64_t writes;           /* configs written or cleared (Publish, Clear, desired configs) */
	uint64_t acks_applied, acks_rejected;
	uint64_t ack_hist[NBUCKETS + 1]; /* the last: over every bucket */
	double ack_sum;
	uint64_t ack_count;
	uint64_t ownership_changes;
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
	procctl_hello_t *hello; /* NULL: off, or unavailable */
	int released;           /* node_release done: the hand-off (or uninstall) */
	uint64_t rev_at_start;  /* the desired store's revision as this daemon found it */
	int cfg_ifd;            /* inotify on the config file's directories; -1: not followed */
	int64_t cfg_due;        /* reload then (events settle first); 0: none pending */
	int64_t cfg_first;      /* the first change not reloaded yet; 0: none */
	const char *cfg_path;
	int (*cfg_build)(struct node_cfg *c, char *err, size_t errlen, void *arg);
	void *cfg_arg;
	struct arb arb[NODE_ARBITERS_MAX];
	size_t narb;
	struct proc **procs;
	size_t nprocs, cap_procs;
	struct wait *waits;
	struct events *ev;
	struct desired_store desired;
	struct node_stats stats;
	uint64_t incarnation;
	struct grpc_srv *srv;
	int kick;             /* events appended or readiness changed since the last kick */
	int ready;            /* atomic */

	pthread_mutex_t mu;   /* the job queue */
	struct node_job *head, **tail;
	int closed;           /* under mu: no more jobs */
	int efd;              /* eventfd: jobs queued, or stop */
	volatile int stop;

	struct procctl_state st; /* scratch for state reads (64 KiB of bytes) */
};

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000ll + t.tv_nsec;
}

/* ---- replies: messages built in an arena, freed after packing ---------- */

struct arena {
	void **blk;
	size_t n, cap;
	int failed;
};

static void *ar_alloc(struct arena *a, size_t size)
{
	void *p;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;
		void **blk = realloc(a->blk, cap * sizeof *blk);
		if (!blk) {
			a->failed = 1;
			return NULL;
		}
		a->blk = blk;
		a->cap = cap;
	}
	p = calloc(1, size ? size : 1);
	if (!p) {
		a->failed = 1;
		return NULL;
	}
	a->blk[a->n++] = p;
	return p;
}

static char *ar_str(struct arena *a, const char *s)
{
	size_t n = strlen(s);
	char *p = ar_alloc(a, n + 1);
	if (p)
		memcpy(p, s, n);
	return p ? p : (char *)"";
}

static void ar_free(struct arena *a)
{
	size_t i;
	for (i = 0; i < a->n; i++)
		free(a->blk[i]);
	free(a->blk);
	memset(a, 0, sizeof *a);
}

/* Answer a job and free it. */
static void finish(struct node_job *job, enum node_code code, const char *msg, const ProtobufCMessage *resp)
{
	job->ops->reply(job, code, msg, code == NODE_OK ? resp : NULL);
	if (job->req)
		protobuf_c_message_free_unpacked(job->req, NULL);
	free(job->text);
	free(job);
}

static void finish_arena(struct node_job *job, struct arena *a, const ProtobufCMessage *resp)
{
	if (a->failed)
		finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
	else
		finish(job, NODE_OK, NULL, resp);
	ar_free(a);
}

/* An instance or grant id as the API and the logs show it: 16 lowercase
 * hex digits; 0 (none): empty. */
static char *hexid(char buf[HEXID_LEN], uint64_t v)
{
	if (v)
		snprintf(buf, HEXID_LEN, "%016llx", (unsigned long long)v);
	else
		buf[0] = 0;
	return buf;
}

/* An id from a request: empty (none, 0) or 16 hex digits; 0 or -1. */
static int hexid_parse(const char *s, uint64_t *v)
{
	size_t i;
	*v = 0;
	if (!s || !*s)
		return 0;
	for (i = 0; i < 16; i++) {
		int d = s[i] >= '0' && s[i] <= '9'   ? s[i] - '0'
			: s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10
			: s[i] >= 'A' && s[i] <= 'F' ? s[i] - 'A' + 10
						     : -1;
		if (d < 0)
			return -1;
		*v = *v << 4 | (uint64_t)d;
	}
	return s[16] ? -1 : 0;
}

static char *ar_hexid(struct arena *a, uint64_t v)
{
	char buf[HEXID_LEN];
	return ar_str(a, hexid(buf, v));
}

/* A resource kind as people read it: its [arbiter NAME], or its number. */
static const char *kind_name(const struct node *n, uint32_t kind, char buf[16])
{
	size_t i;
	for (i = 0; i < n->cfg.narbiters; i++)
		if (n->cfg.arbiters[i].kind == kind)
			return n->cfg.arbiters[i].name;
	snprintf(buf, 16, "%u", kind);
	return buf;
}

static PbRef *mk_ref(struct arena *a, pid_t pid, uint64_t instance)
{
	PbRef *r = ar_alloc(a, sizeof *r);
	if (!r)
		return NULL;
	procctl__v1__process_ref__init(r);
	r->pid = pid;
	r->instance_id = ar_hexid(a, instance);
	return r;
}

static Procctl__V1__AckResult ack_result(const struct proc *p)
{
	if (!p->have_state || !p->acked_gen)
		return PROCCTL__V1__ACK_RESULT__ACK_RESULT_UNSPECIFIED;
	return p->ack_status ? PROCCTL__V1__ACK_RESULT__ACK_RESULT_REJECTED : PROCCTL__V1__ACK_RESULT__ACK_RESULT_APPLIED;
}

static PbProcess *mk_process(struct arena *a, const struct proc *p)
{
	PbProcess *m = ar_alloc(a, sizeof *m);
	int i;
	if (!m)
		return NULL;
	procctl__v1__process__init(m);
	m->ref = mk_ref(a, p->key.pid, p->instance);
	m->nspid = ar_alloc(a, sizeof(int32_t) * (size_t)(p->nspid_count ? p->nspid_count : 1));
	if (m->nspid) {
		for (i = 0; i < p->nspid_count; i++)
			m->nspid[i] = p->nspid[i];
		m->n_nspid = (size_t)p->nspid_count;
	}
	m->consumer = ar_str(a, p->key.consumer);
	m->schema_version = p->key.version;
	m->pod_uid = ar_str(a, p->key.pod_uid);
	m->container_id = ar_str(a, p->key.container_id);
	m->qos_class = (Procctl__V1__QosClass)p->qos; /* the same order */
	m->lease_state = procctl_registry_owner(p->reg, p->key.consumer) ? PROCCTL__V1__LEASE_STATE__LEASE_STATE_LIVE
									  : PROCCTL__V1__LEASE_STATE__LEASE_STATE_NOT_OWNED;
	m->generation = procctl_client_config_gen(p->c);
	m->acked_generation = p->acked_gen;
	m->ack_result = ack_result(p);
	m->ack_status = p->ack_status;
	return m;
}

static Procctl__V1__DesiredConfig *mk_desired(struct arena *a, const struct desired *d)
{
	const struct ev_key *sel = &d->sel;
	const uint8_t *payload = d->payload;
	size_t len = d->len;
	Procctl__V1__DesiredConfig *m = ar_alloc(a, sizeof *m);
	PbSelector *s = ar_alloc(a, sizeof *s);
	if (!m || !s)
		return NULL;
	procctl__v1__desired_config__init(m);
	procctl__v1__selector__init(s);
	s->pid = sel->pid;
	s->consumer = ar_str(a, sel->consumer);
	s->schema_version = sel->version;
	s->pod_uid = ar_str(a, sel->pod_uid);
	s->container_id = ar_str(a, sel->container_id);
	m->selector = s;
	m->revision = d->revision;
	m->source = ar_str(a, d->source);
	if ((m->payload.data = ar_alloc(a, len))) {
		memcpy(m->payload.data, payload, len);
		m->payload.len = len;
	}
	return m;
}

/* A config write (or clear) that made generation g of p. */
static void wrote(struct node *n, struct proc *p, int64_t g)
{
	if (g <= 0)
		return;
	n->stats.writes++;
	p->written_gen = (uint64_t)g;
	p->written_ns = now_ns();
}

/* Give p, just attached, the desired config it should have: if it has
 * none yet, or if the config was set since this daemon started (a process
 * found by a successor has what the store said then; a config changed at
 * this start, by the file, or since, is news to it). */
static void desired_apply(struct node *n, struct proc *p)
{
	const struct desired *d = desired_match(&n->desired, &p->key);
	int64_t g;
	if (!d || (procctl_client_config_gen(p->c) && d->revision <= n->rev_at_start) ||
	    !procctl_registry_owner(p->reg, p->key.consumer))
		return;
	if (d->len > p->payload_cap) {
		node_log(PROCCTL_LOG_WARN, "desired_too_big", "pid=%d revision=%llu bytes=%zu capacity=%u", (int)p->key.pid,
			 (unsigned long long)d->revision, d->len, p->payload_cap);
		return;
	}
	g = procctl_client_write(p->c, d->payload, d->len);
	wrote(n, p, g);
	node_log(g > 0 ? PROCCTL_LOG_INFO : PROCCTL_LOG_WARN, "desired_applied", "pid=%d revision=%llu generation=%lld%s%s",
		 (int)p->key.pid, (unsigned long long)d->revision, (long long)(g > 0 ? g : 0), g > 0 ? "" : " error=",
		 g > 0 ? "" : strerror((int)-g));
}

/* ---- events ------------------------------------------------------------ */

/* Number, pack and keep one event (ev's oneof set by the caller). */
static void emit(struct node *n, const struct ev_key *k, PbEvent *ev)
{
	char token[48];
	uint8_t stack[512], *buf = stack;
	size_t len;
	uint64_t seq = events_last(n->ev) + 1;
	ev->sequence = seq;
	snprintf(token, sizeof token, "%016llx.%llu", (unsigned long long)n->incarnation, (unsigned long long)seq);
	ev->resume_token = token;
	len = protobuf_c_message_get_packed_size(&ev->base);
	if (len > sizeof stack && !(buf = malloc(len))) {
		node_log(PROCCTL_LOG_ERROR, "event_lost", "seq=%llu error=ENOMEM", (unsigned long long)seq);
		return;
	}
	protobuf_c_message_pack(&ev->base, buf);
	if (events_append(n->ev, k, buf, len) < 0)
		node_log(PROCCTL_LOG_ERROR, "event_lost", "seq=%llu error=ENOMEM", (unsigned long long)seq);
	if (buf != stack)
		free(buf);
	n->kick = 1;
}

static void emit_acked(struct node *n, const struct proc *p)
{
	struct arena a = {0};
	Procctl__V1__Acked m = PROCCTL__V1__ACKED__INIT;
	PbEvent ev = PROCCTL__V1__WATCH_EVENTS_RESPONSE__INIT;
	m.process = mk_ref(&a, p->key.pid, p->instance);
	m.generation = p->acked_gen;
	m.result = ack_result(p);
	m.status = p->ack_status;
	ev.event_case = PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_ACKED;
	ev.acked = &m;
	if (!a.failed)
		emit(n, &p->key, &ev);
	ar_free(&a);
}

static void emit_state_changed(struct node *n, const struct proc *p)
{
	char idbuf[HEXID_LEN];
	PbRef ref = PROCCTL__V1__PROCESS_REF__INIT;
	Procctl__V1__StateChanged m = PROCCTL__V1__STATE_CHANGED__INIT;
	PbEvent ev = PROCCTL__V1__WATCH_EVENTS_RESPONSE__INIT;
	ref.pid = p->key.pid;
	ref.instance_id = hexid(idbuf, p->instance);
	m.process = &ref;
	ev.event_case = PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_STATE_CHANGED;
	ev.state_changed = &m;
	emit(n, &p->key, &ev);
}

/* ---- the process table ------------------------------------------------- */

static struct proc *find_client(struct node *n, const procctl_client_t *c, size_t *at)
{
	size_t i;
	for (i = 0; i < n->nprocs; i++)
		if (n->procs[i]->c == c) {
			if (at)
				*at = i;
			return n->procs[i];
		}
	return NULL;
}

static void waits_update(struct node *n, struct proc *p, const struct procctl_state *st);

/* Read p's state block: note a new ack (Acked) and a changed block
 * (StateChanged), and settle the waits on p. */
static void read_state(struct node *n, struct proc *p, int quiet)
{
	struct procctl_state *st = &n->st;
	uint32_t h;
	int first, r = procctl_client_read_state(p->c, st, now_ns() + STATE_READ_NS);
	if (r < 0) {
		if (r != -ESRCH && r != -ESTALE)
			node_log(PROCCTL_LOG_DEBUG, "state_unreadable", "pid=%d error=%s reason=%s", (int)p->key.pid,
				 strerror(-r), r == -EPROTO ? procctl_reject_name(st->why) : "-");
		return;
	}
	first = !p->have_state;
	h = procctl_crc32c(0, &st->nres, sizeof st->nres);
	h = procctl_crc32c(h, st->res, st->nres * sizeof st->res[0]);
	h = procctl_crc32c(h, &st->data_len, sizeof st->data_len);
	h = procctl_crc32c(h, st->data, st->data_len);
	p->have_state = 1;
	if (first || st->acked_gen != p->acked_gen || st->ack_status != p->ack_status) {
		p->acked_gen = st->acked_gen;
		p->ack_status = st->ack_status;
		if (!first && !quiet) {
			emit_acked(n, p);
			if (st->ack_status)
				n->stats.acks_rejected++;
			else
				n->stats.acks_applied++;
		}
	}
	if (p->written_ns && p->acked_gen >= p->written_gen) {
		double sec = (double)(now_ns() - p->written_ns) / 1e9;
		size_t b = 0;
		while (b < NBUCKETS && sec > ack_buckets[b])
			b++;
		n->stats.ack_hist[b]++;
		n->stats.ack_sum += sec;
		n->stats.ack_count++;
		p->written_ns = 0;
	}
	if (!first && h != p->state_hash && !quiet)
		emit_state_changed(n, p);
	p->state_hash = h;
	waits_update(n, p, st);
}

static void on_attached(struct node *n, const struct procctl_event *e, procctl_registry_t *reg)
{
	struct procctl_client_info info;
	struct procctl_podid pod;
	struct proc *p;
	struct arena a = {0};
	Procctl__V1__ProcessAttached m = PROCCTL__V1__PROCESS_ATTACHED__INIT;
	PbEvent ev = PROCCTL__V1__WATCH_EVENTS_RESPONSE__INIT;
	int r;

	if (n->nprocs == n->cap_procs) {
		size_t cap = n->cap_procs ? n->cap_procs * 2 : 64;
		struct proc **v = realloc(n->procs, cap * sizeof *v);
		if (!v)
			goto nomem;
		n->procs = v;
		n->cap_procs = cap;
	}
	if (!(p = calloc(1, sizeof *p)))
		goto nomem;
	procctl_client_info(e->client, &info);
	p->c = procctl_client_ref(e->client);
	p->reg = reg;
	p->key.pid = info.pid;
	p->key.version = info.hdr.schema_version;
	memcpy(p->key.consumer, info.hdr.consumer, PROCCTL_CONSUMER_MAX);
	p->instance = info.hdr.instance_id;
	p->payload_cap = info.hdr.payload_cap;
	p->nspid_count = info.nspid_count;
	memcpy(p->nspid, info.nspid, sizeof p->nspid);
	r = procctl_podid_read(NULL, info.pid, &pod);
	if (r == 0) {
		memcpy(p->key.pod_uid, pod.pod_uid, sizeof p->key.pod_uid);
		memcpy(p->key.container_id, pod.container_id, sizeof p->key.container_id);
		p->qos = pod.qos;
	} else if (r != -ENOENT && r != -ESRCH) {
		node_log(PROCCTL_LOG_WARN, "podid_unreadable", "pid=%d error=%s", (int)info.pid, strerror(-r));
	}
	n->procs[n->nprocs++] = p;
	read_state(n, p, 1); /* the ack it holds now is part of what Attached says */
	desired_apply(n, p);
	node_log(PROCCTL_LOG_INFO, "process_identity", "pid=%d consumer=%s version=%u instance=%016llx pod=%s container=%.12s",
		 (int)p->key.pid, p->key.consumer, p->key.version, (unsigned long long)p->instance,
		 p->key.pod_uid[0] ? p->key.pod_uid : "-", p->key.container_id[0] ? p->key.container_id : "-");
	m.process = mk_process(&a, p);
	ev.event_case = PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_ATTACHED;
	ev.attached = &m;
	if (!a.failed)
		emit(n, &p->key, &ev);
	ar_free(&a);
	return;
nomem:
	node_log(PROCCTL_LOG_ERROR, "attach_untracked", "pid=%d error=ENOMEM", (int)e->pid);
}

static void on_detached(struct node *n, const struct procctl_event *e)
{
	Procctl__V1__ProcessDetached m = PROCCTL__V1__PROCESS_DETACHED__INIT;
	PbEvent ev = PROCCTL__V1__WATCH_EVENTS_RESPONSE__INIT;
	PbRef ref = PROCCTL__V1__PROCESS_REF__INIT;
	char idbuf[HEXID_LEN];
	struct wait *w;
	struct proc *p;
	size_t at, i;

	if (!(p = find_client(n, e->client, &at)))
		return;
	for (w = n->waits; w; w = w->next)
		for (i = 0; i < w->n; i++)
			if (w->item[i].p == p) {
				w->item[i].p = NULL;
				if (!w->item[i].done) {
					w->item[i].status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_GONE;
					w->item[i].done = 1;
				}
			}
	ref.pid = p->key.pid;
	ref.instance_id = hexid(idbuf, p->instance);
	m.process = &ref;
	m.reason = e->reason == -ESRCH    ? PROCCTL__V1__DETACH_REASON__DETACH_REASON_EXITED
		   : e->reason == -ESTALE ? PROCCTL__V1__DETACH_REASON__DETACH_REASON_EXECED
					  : PROCCTL__V1__DETACH_REASON__DETACH_REASON_CLOSED;
	ev.event_case = PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_DETACHED;
	ev.detached = &m;
	emit(n, &p->key, &ev); /* the registry logged it */
	n->procs[at] = n->procs[--n->nprocs];
	procctl_client_close(p->c);
	free(p);
}

/* The hello probe: pid said hello (0: records were lost). Every
 * registry looks: each attaches only its consumer's regions. */
static void on_hello(pid_t pid, void *arg)
{
	struct node *n = arg;
	size_t i;
	for (i = 0; i < n->nreg; i++) {
		if (pid)
			procctl_registry_notify(n->reg[i], pid);
		else
			procctl_registry_rescan(n->reg[i]);
	}
}

static void on_event(const struct procctl_event *e, void *arg)
{
	struct node *n = ((struct reg_arg *)arg)->n;
	struct proc *p;
	switch (e->type) {
	case PROCCTL_EV_ATTACHED:
		on_attached(n, e, ((struct reg_arg *)arg)->reg);
		break;
	case PROCCTL_EV_DETACHED:
		on_detached(n, e);
		break;
	case PROCCTL_EV_DOORBELL:
		if ((p = find_client(n, e->client, NULL))) {
			p->rings = 1;
			read_state(n, p, 0);
		}
		break;
	case PROCCTL_EV_OWNERSHIP: {
		Procctl__V1__OwnershipChanged m = PROCCTL__V1__OWNERSHIP_CHANGED__INIT;
		PbEvent ev = PROCCTL__V1__WATCH_EVENTS_RESPONSE__INIT;
		struct ev_key k = {.always = 1};
		m.consumer = (char *)e->consumer;
		m.owner = e->held != 0;
		ev.event_case = PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_OWNERSHIP_CHANGED;
		ev.ownership_changed = &m;
		snprintf(k.consumer, sizeof k.consumer, "%s", e->consumer);
		emit(n, &k, &ev);
		node_log(PROCCTL_LOG_INFO, "ownership", "consumer=%s owner=%d", e->consumer, e->held);
		n->stats.ownership_changes++;
		if (e->held) {
			size_t i;
			for (i = 0; i < n->nprocs; i++)
				if (!strcmp(n->procs[i]->key.consumer, e->consumer))
					desired_apply(n, n->procs[i]);
		}
		break;
	}
	}
}

/* ---- waits ------------------------------------------------------------- */

/* Settle one item from what p acked: 1 when it is done. */
/* A refusal in words: the errno's name and text, and the status the
 * process reported with it when that is text (st: the state block read
 * with the ack, or NULL). */
static void rejected_why(char *buf, size_t len, int32_t status, const struct procctl_state *st)
{
	const char *name = status < 0 && status > -4096 ? strerrorname_np((int)-status) : NULL;
	size_t i, o;
	if (name)
		o = (size_t)snprintf(buf, len, "%s (%s)", name, strerror((int)-status));
	else
		o = (size_t)snprintf(buf, len, "status %d", (int)status);
	if (!st || !st->data_len || o >= len)
		return;
	for (i = 0; i < st->data_len; i++)
		if (st->data[i] < 0x20 || st->data[i] > 0x7e)
			return;
	snprintf(buf + o, len - o, ": %.*s", (int)st->data_len, (const char *)st->data);
}

/* Settle one item from what p acked (the library's decision, SPEC.md
 * 7.3: an ack above what was published is none): 1 when it is done. */
static int wait_settle(struct wait_item *it, const struct proc *p, const struct procctl_state *st)
{
	int kind;
	if (it->done)
		return 1;
	if (!p->have_state ||
	    !(kind = procctl_ack_decide(it->gen, procctl_client_published_max(p->c), p->acked_gen, p->ack_status)))
		return 0;
	switch (kind) {
	case PROCCTL_ACK_SUPERSEDED:
		it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_SUPERSEDED;
		break;
	case PROCCTL_ACK_REJECTED:
		it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_REJECTED;
		it->pstatus = p->ack_status;
		rejected_why(it->error, sizeof it->error, p->ack_status, st);
		break;
	default:
		it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_APPLIED;
	}
	it->done = 1;
	return 1;
}

static void waits_update(struct node *n, struct proc *p, const struct procctl_state *st)
{
	struct wait *w;
	size_t i;
	for (w = n->waits; w; w = w->next)
		for (i = 0; i < w->n; i++)
			if (w->item[i].p == p)
				wait_settle(&w->item[i], p, st);
}

static void wait_reply(struct wait *w)
{
	struct arena a = {0};
	PbResult **rs = ar_alloc(&a, sizeof *rs * (w->n ? w->n : 1));
	size_t i;
	for (i = 0; rs && i < w->n; i++) {
		const struct wait_item *it = &w->item[i];
		PbResult *r = ar_alloc(&a, sizeof *r);
		if (!r)
			break;
		procctl__v1__publish_result__init(r);
		r->process = mk_ref(&a, it->pid, it->instance);
		r->generation = it->gen;
		r->status = it->done || !it->gen ? it->status : PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_PENDING;
		r->process_status = it->pstatus;
		r->error = ar_str(&a, it->error);
		rs[i] = r;
	}
	switch (w->job->method) {
	case NODE_PUBLISH: {
		Procctl__V1__PublishResponse m = PROCCTL__V1__PUBLISH_RESPONSE__INIT;
		m.n_results = w->n;
		m.results = rs;
		finish_arena(w->job, &a, &m.base);
		break;
	}
	case NODE_CLEAR: {
		Procctl__V1__ClearResponse m = PROCCTL__V1__CLEAR_RESPONSE__INIT;
		m.n_results = w->n;
		m.results = rs;
		finish_arena(w->job, &a, &m.base);
		break;
	}
	case NODE_SET_DESIRED: {
		Procctl__V1__SetDesiredConfigResponse m = PROCCTL__V1__SET_DESIRED_CONFIG_RESPONSE__INIT;
		m.config = mk_desired(&a, &w->desired);
		m.n_results = w->n;
		m.results = rs;
		free(w->desired.payload);
		finish_arena(w->job, &a, &m.base);
		break;
	}
	default: {
		Procctl__V1__WaitAckResponse m = PROCCTL__V1__WAIT_ACK_RESPONSE__INIT;
		m.result = rs ? rs[0] : NULL;
		finish_arena(w->job, &a, &m.base);
		break;
	}
	}
}

/* Answer the waits that are settled or past their deadline; mark the
 * processes the rest wait on. */
static void waits_sweep(struct node *n, int64_t now, int all)
{
	struct wait **pw = &n->waits, *w;
	size_t i, k;
	for (k = 0; k < n->nprocs; k++)
		n->procs[k]->waiting = 0;
	while ((w = *pw)) {
		int open = 0;
		for (i = 0; i < w->n; i++)
			if (!w->item[i].done && w->item[i].gen)
				open = 1;
		if (!open || all || now >= w->deadline_ns) {
			*pw = w->next;
			if (open && !all && w->call_deadline) {
				/* The call is over: what gRPC's own timer says too, whichever is first. */
				free(w->desired.payload);
				finish(w->job, NODE_DEADLINE_EXCEEDED, "the call's deadline came before the acks", NULL);
			} else {
				wait_reply(w);
			}
			free(w);
			continue;
		}
		for (i = 0; i < w->n; i++)
			if (w->item[i].p && !w->item[i].done)
				w->item[i].p->waiting = 1;
		pw = &w->next;
	}
}

/* ---- requests ---------------------------------------------------------- */

/* A Selector as a filter: 0, or INVALID_ARGUMENT and a reason. */
static enum node_code selector_key(const PbSelector *s, struct ev_key *k, const char **why)
{
	memset(k, 0, sizeof *k);
	if (s && ev_key_from(k, s->pid, s->consumer, s->schema_version, s->pod_uid, s->container_id, why) < 0)
		return NODE_INVALID_ARGUMENT;
	return NODE_OK;
}

static int by_ref(const void *a, const void *b)
{
	const struct proc *x = *(struct proc *const *)a, *y = *(struct proc *const *)b;
	if (x->key.pid != y->key.pid)
		return x->key.pid < y->key.pid ? -1 : 1;
	return x->instance < y->instance ? -1 : x->instance > y->instance;
}

/* The processes that match f, in (pid, instance) order: their count (the
 * array is malloc'd), or -ENOMEM. */
static ssize_t matching(struct node *n, const struct ev_key *f, struct proc ***out)
{
	struct proc **v = malloc(sizeof *v * (n->nprocs ? n->nprocs : 1));
	size_t i, c = 0;
	if (!v)
		return -ENOMEM;
	for (i = 0; i < n->nprocs; i++)
		if (ev_key_match(f, &n->procs[i]->key))
			v[c++] = n->procs[i];
	qsort(v, c, sizeof *v, by_ref);
	*out = v;
	return (ssize_t)c;
}

/* The process a ProcessRef names. */
static enum node_code resolve_ref(struct node *n, const PbRef *r, struct proc **out, const char **why)
{
	struct proc *hit = NULL;
	size_t i, found = 0;
	uint64_t instance;
	if (!r || r->pid <= 0) {
		*why = "process.pid: required (a pid in the daemon's namespace)";
		return NODE_INVALID_ARGUMENT;
	}
	if (hexid_parse(r->instance_id, &instance) < 0) {
		*why = "process.instance_id: 16 hex digits, or empty for the pid's only region";
		return NODE_INVALID_ARGUMENT;
	}
	for (i = 0; i < n->nprocs; i++) {
		struct proc *p = n->procs[i];
		if (p->key.pid == r->pid && (!instance || instance == p->instance)) {
			hit = p;
			found++;
		}
	}
	if (!found) {
		*why = "no such process attached";
		return NODE_NOT_FOUND;
	}
	if (found > 1) {
		*why = "the pid has several regions: name one by process.instance_id";
		return NODE_INVALID_ARGUMENT;
	}
	*out = hit;
	return NODE_OK;
}

static void do_list(struct node *n, struct node_job *job)
{
	Procctl__V1__ListProcessesRequest *rq = (void *)job->req;
	Procctl__V1__ListProcessesResponse m = PROCCTL__V1__LIST_PROCESSES_RESPONSE__INIT;
	struct arena a = {0};
	struct proc **v;
	struct ev_key f;
	const char *why = NULL;
	enum node_code code = selector_key(rq->filter, &f, &why);
	ssize_t c, i;
	if (code)
		return finish(job, code, why, NULL);
	if ((c = matching(n, &f, &v)) < 0)
		return finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
	m.processes = ar_alloc(&a, sizeof *m.processes * (size_t)(c ? c : 1));
	for (i = 0; m.processes && i < c; i++)
		m.processes[m.n_processes++] = mk_process(&a, v[i]);
	free(v);
	finish_arena(job, &a, &m.base);
}

static void do_get(struct node *n, struct node_job *job)
{
	Procctl__V1__GetProcessRequest *rq = (void *)job->req;
	Procctl__V1__GetProcessResponse m = PROCCTL__V1__GET_PROCESS_RESPONSE__INIT;
	struct arena a = {0};
	struct proc *p;
	const char *why = NULL;
	enum node_code code = resolve_ref(n, rq->process, &p, &why);
	if (code)
		return finish(job, code, why, NULL);
	m.process = mk_process(&a, p);
	finish_arena(job, &a, &m.base);
}

static void do_read_state(struct node *n, struct node_job *job)
{
	Procctl__V1__ReadStateRequest *rq = (void *)job->req;
	Procctl__V1__ReadStateResponse m = PROCCTL__V1__READ_STATE_RESPONSE__INIT;
	struct procctl_state *st = &n->st;
	struct arena a = {0};
	struct proc *p;
	const char *why = NULL;
	char msg[96];
	int64_t dl = now_ns() + READSTATE_NS;
	enum node_code code = resolve_ref(n, rq->process, &p, &why);
	uint32_t i;
	int r;
	if (code)
		return finish(job, code, why, NULL);
	r = procctl_client_read_state(p->c, st, job->deadline_ns < dl ? job->deadline_ns : dl);
	switch (r) {
	case 0:
		break;
	case -ESRCH:
	case -ESTALE:
		return finish(job, NODE_NOT_FOUND, "the process exited or exec'd", NULL);
	case -ETIMEDOUT:
		return finish(job, NODE_DEADLINE_EXCEEDED, "the state read did not finish (a stalled page)", NULL);
	case -EAGAIN:
		return finish(job, NODE_UNAVAILABLE, "the state block is being written, or no reader is free", NULL);
	case -EPROTO:
		snprintf(msg, sizeof msg, "state block refused: %s", procctl_reject_name(st->why));
		return finish(job, NODE_FAILED_PRECONDITION, msg, NULL);
	default:
		snprintf(msg, sizeof msg, "state block unreadable: %s", strerror(-r));
		return finish(job, NODE_FAILED_PRECONDITION, msg, NULL);
	}
	m.acked_generation = st->acked_gen;
	m.ack_result = !st->acked_gen    ? PROCCTL__V1__ACK_RESULT__ACK_RESULT_UNSPECIFIED
		       : st->ack_status ? PROCCTL__V1__ACK_RESULT__ACK_RESULT_REJECTED
					: PROCCTL__V1__ACK_RESULT__ACK_RESULT_APPLIED;
	m.ack_status = st->ack_status;
	m.resources = ar_alloc(&a, sizeof *m.resources * (st->nres ? st->nres : 1));
	for (i = 0; m.resources && i < st->nres; i++) {
		const struct procctl_res_entry *e = &st->res[i];
		Procctl__V1__ResourceReport *rr;
		char kind[16];
		if (!e->kind)
			continue; /* an unused entry: no resource */
		if (!(rr = ar_alloc(&a, sizeof *rr)))
			break;
		procctl__v1__resource_report__init(rr);
		rr->kind = ar_str(&a, kind_name(n, e->kind, kind));
		rr->kind_number = e->kind;
		rr->id.data = ar_alloc(&a, sizeof e->id);
		if (rr->id.data) {
			memcpy(rr->id.data, e->id, sizeof e->id);
			rr->id.len = sizeof e->id;
		}
		rr->grant_id = ar_hexid(&a, e->grant_id);
		rr->seen_generation = e->seen_gen;
		rr->state = e->state <= PROCCTL_RES_RELEASED ? (Procctl__V1__ResourceState)(e->state + 1)
							     : PROCCTL__V1__RESOURCE_STATE__RESOURCE_STATE_UNSPECIFIED;
		rr->wants = (e->flags & PROCCTL_RES_F_WANT) != 0;
		m.resources[m.n_resources++] = rr;
	}
	m.data.data = ar_alloc(&a, st->data_len);
	if (m.data.data) {
		memcpy(m.data.data, st->data, st->data_len);
		m.data.len = st->data_len;
	}
	finish_arena(job, &a, &m.base);
}

/* Give d to the processes it is the config for now (those of this
 * daemon's regions); no one waits for their acks. */
static void desired_push(struct node *n, const struct desired *d)
{
	struct proc **v = NULL;
	ssize_t c, i;
	if ((c = matching(n, &d->sel, &v)) < 0)
		return;
	for (i = 0; i < c; i++) {
		struct proc *p = v[i];
		int64_t g;
		if (!desired_effective(&n->desired, d, &p->key) || !procctl_registry_owner(p->reg, p->key.consumer))
			continue;
		if (d->len > p->payload_cap) {
			node_log(PROCCTL_LOG_WARN, "desired_too_big", "pid=%d revision=%llu bytes=%zu capacity=%u",
				 (int)p->key.pid, (unsigned long long)d->revision, d->len, p->payload_cap);
			continue;
		}
		g = procctl_client_write(p->c, d->payload, d->len);
		wrote(n, p, g);
	}
	free(v);
}

/* The [desired] sections of the config file (at start, and at each
 * reload): each is set, with the section's name as its source, unless the
 * store has it already byte for byte from that section, and then given to
 * its processes; a config of the store whose source section cfg has not
 * (any more, even across restarts: the store keeps the source) is
 * deleted, its processes keeping what they have, as after
 * DeleteDesiredConfig. A section that cannot be set (it overlaps a config
 * of the same precedence set through the API, or the store cannot be
 * written) is logged by name and tried again at the next reload. */
static void file_desired(struct node *n, const struct node_cfg *cfg)
{
	char err[400];
	size_t i, j;
	for (i = 0; i < n->desired.n;) {
		const struct desired *d = &n->desired.v[i];
		struct ev_key sel = d->sel;
		char source[sizeof d->source];
		for (j = 0; j < cfg->ndesired && !(ev_key_same(&cfg->desired[j].sel, &d->sel) &&
						   !strcmp(cfg->desired[j].name, d->source));
		     j++)
			;
		if (!d->source[0] || j < cfg->ndesired) {
			i++;
			continue;
		}
		memcpy(source, d->source, sizeof source);
		if (desired_delete(&n->desired, &sel, err, sizeof err) < 0) {
			node_log(PROCCTL_LOG_ERROR, "desired_file_failed", "section=%s error=\"%s\"", source, err);
			i++;
			continue;
		}
		node_log(PROCCTL_LOG_INFO, "desired_deleted", "section=%s consumer=%s version=%u pod=%s container=%.12s", source,
			 sel.consumer, sel.version, sel.pod_uid[0] ? sel.pod_uid : "-",
			 sel.container_id[0] ? sel.container_id : "-");
	}
	for (i = 0; i < cfg->ndesired; i++) {
		const struct node_desired_cfg *f = &cfg->desired[i];
		const struct desired *d = desired_find(&n->desired, &f->sel), *other = NULL;
		const char *why = NULL;
		int r;
		if (d && d->len == f->len && !memcmp(d->payload, f->data, f->len) && !strcmp(d->source, f->name))
			continue; /* as the store has it */
		r = desired_set(&n->desired, &f->sel, f->data, f->len, f->name, &d, &other, &why, err, sizeof err);
		if (r == -EEXIST)
			snprintf(err, sizeof err, "overlaps the desired config (revision %llu) of the same precedence for "
				 "consumer=%s version=%u pid=%d pod=%s container=%s",
				 (unsigned long long)other->revision, other->sel.consumer, other->sel.version,
				 (int)other->sel.pid, other->sel.pod_uid, other->sel.container_id);
		else if (r == -EINVAL)
			snprintf(err, sizeof err, "%s", why);
		else if (r < 0 && r != -EIO)
			snprintf(err, sizeof err, "%s", strerror(-r));
		if (r < 0) {
			node_log(PROCCTL_LOG_ERROR, "desired_file_failed", "section=%s error=\"%s\"", f->name, err);
			continue;
		}
		node_log(PROCCTL_LOG_INFO, "desired_set", "section=%s revision=%llu consumer=%s version=%u pod=%s container=%.12s bytes=%zu",
			 f->name, (unsigned long long)d->revision, d->sel.consumer, d->sel.version,
			 d->sel.pod_uid[0] ? d->sel.pod_uid : "-", d->sel.container_id[0] ? d->sel.container_id : "-", d->len);
		desired_push(n, d);
	}
}

/* Write payload (NULL: clear) to each of v, as one wait of job's: its
 * results, in v's order. NULL when out of memory (job answered). */
static struct wait *write_all(struct node *n, struct node_job *job, struct proc **v, size_t c,
			      const ProtobufCBinaryData *payload, uint32_t wait_ms)
{
	struct wait *w = calloc(1, sizeof *w + sizeof w->item[0] * c);
	size_t i;
	if (!w) {
		finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
		return NULL;
	}
	w->job = job;
	w->n = c;
	w->deadline_ns = now_ns() + (int64_t)wait_ms * MS;
	if (w->deadline_ns >= job->deadline_ns) {
		w->deadline_ns = job->deadline_ns;
		w->call_deadline = 1;
	}
	for (i = 0; i < c; i++) {
		struct wait_item *it = &w->item[i];
		struct proc *p = v[i];
		int64_t g;
		it->p = p;
		it->pid = p->key.pid;
		it->instance = p->instance;
		if (payload && payload->len > p->payload_cap) {
			snprintf(it->error, sizeof it->error, "payload over the process's capacity of %u bytes",
				 p->payload_cap);
			it->done = 1;
			continue;
		}
		g = payload ? procctl_client_write(p->c, payload->data, payload->len) : procctl_client_clear(p->c);
		wrote(n, p, g);
		if (g > 0) {
			it->gen = (uint64_t)g;
			it->status = wait_ms ? PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_PENDING
					     : PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_WRITTEN;
			it->done = !wait_ms;
			continue;
		}
		it->done = 1;
		if (g == -EPERM) {
			it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_NOT_OWNER;
			snprintf(it->error, sizeof it->error, "this daemon does not own %s's regions", p->key.consumer);
		} else if (g == -ESRCH || g == -ESTALE) {
			it->status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_GONE;
		} else {
			snprintf(it->error, sizeof it->error, "write refused: %s", strerror((int)-g));
		}
	}
	return w;
}

/* A generation just written has no ack yet: its doorbell, or a poll,
 * brings it. */
static void wait_start(struct node *n, struct wait *w)
{
	w->next = n->waits;
	n->waits = w;
}

/* Publish and Clear: write to the selected processes, then wait. */
static void do_write(struct node *n, struct node_job *job)
{
	const PbSelector *sel;
	const ProtobufCBinaryData *payload = NULL;
	uint32_t wait_ms;
	struct ev_key f;
	struct proc **v = NULL;
	struct wait *w;
	const char *why = NULL;
	enum node_code code;
	ssize_t c, i;

	if (job->method == NODE_PUBLISH) {
		Procctl__V1__PublishRequest *rq = (void *)job->req;
		sel = rq->selector;
		payload = &rq->payload;
		wait_ms = rq->wait_ms;
		if (!payload->len)
			return finish(job, NODE_INVALID_ARGUMENT, "payload: empty (Clear withdraws a config)", NULL);
	} else {
		Procctl__V1__ClearRequest *rq = (void *)job->req;
		sel = rq->selector;
		wait_ms = rq->wait_ms;
	}
	if ((code = selector_key(sel, &f, &why)))
		return finish(job, code, why, NULL);
	if (!f.pid && (!f.consumer[0] || !f.version))
		return finish(job, NODE_INVALID_ARGUMENT,
			      "selector: name a pid, or a consumer and its schema_version", NULL);
	if ((c = matching(n, &f, &v)) < 0)
		return finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
	if (f.pid && !c) {
		free(v);
		return finish(job, NODE_NOT_FOUND, "no such process attached", NULL);
	}
	for (i = 1; i < c; i++)
		if (strcmp(v[i]->key.consumer, v[0]->key.consumer) || v[i]->key.version != v[0]->key.version) {
			free(v);
			return finish(job, NODE_INVALID_ARGUMENT,
				      "selector: the processes are of several consumers or schema versions: name one",
				      NULL);
		}
	if (f.pid && payload)
		for (i = 0; i < c; i++)
			if (payload->len > v[i]->payload_cap) {
				char msg[96];
				snprintf(msg, sizeof msg, "payload: %zu bytes, over the process's capacity of %u",
					 payload->len, v[i]->payload_cap);
				free(v);
				return finish(job, NODE_INVALID_ARGUMENT, msg, NULL);
			}
	w = write_all(n, job, v, (size_t)c, payload, wait_ms);
	free(v);
	if (!w)
		return;
	node_log(PROCCTL_LOG_DEBUG, job->method == NODE_PUBLISH ? "publish" : "clear", "processes=%zd bytes=%zu wait_ms=%u",
		 c, payload ? payload->len : 0, wait_ms);
	/* A single pid its daemon does not own: FAILED_PRECONDITION. */
	if (f.pid && c == 1 && w->item[0].status == PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_NOT_OWNER) {
		free(w);
		return finish(job, NODE_FAILED_PRECONDITION, "this daemon does not own the process's region", NULL);
	}
	wait_start(n, w);
}

/* ---- desired configs --------------------------------------------------- */

static void do_set_desired(struct node *n, struct node_job *job)
{
	Procctl__V1__SetDesiredConfigRequest *rq = (void *)job->req;
	const struct desired *d = NULL, *other = NULL;
	struct ev_key f;
	struct proc **v = NULL, **eff;
	struct wait *w;
	const char *why = NULL;
	char err[400];
	ssize_t c, i, k = 0;
	enum node_code code;
	int r;
	if (!rq->config)
		return finish(job, NODE_INVALID_ARGUMENT, "config: required", NULL);
	if ((code = selector_key(rq->config->selector, &f, &why)))
		return finish(job, code, why, NULL);
	r = desired_set(&n->desired, &f, rq->config->payload.data, rq->config->payload.len, NULL, &d, &other, &why, err,
			sizeof err);
	if (r == -EINVAL)
		return finish(job, NODE_INVALID_ARGUMENT, why, NULL);
	if (r == -EEXIST) {
		snprintf(err, sizeof err,
			 "overlaps the desired config of the same precedence for pid=%d consumer=%s schema_version=%u "
			 "pod_uid=%s container_id=%s (revision %llu): delete it first",
			 (int)other->sel.pid, other->sel.consumer, other->sel.version, other->sel.pod_uid,
			 other->sel.container_id, (unsigned long long)other->revision);
		return finish(job, NODE_ALREADY_EXISTS, err, NULL);
	}
	if (r == -EIO) {
		char msg[480];
		snprintf(msg, sizeof msg, "could not keep it on the host (%s): nothing changed", err);
		return finish(job, NODE_UNAVAILABLE, msg, NULL);
	}
	if (r < 0)
		return finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
	node_log(PROCCTL_LOG_INFO, "desired_set", "revision=%llu consumer=%s version=%u pid=%d pod=%s container=%.12s bytes=%zu",
		 (unsigned long long)d->revision, d->sel.consumer, d->sel.version, (int)d->sel.pid,
		 d->sel.pod_uid[0] ? d->sel.pod_uid : "-", d->sel.container_id[0] ? d->sel.container_id : "-", d->len);
	/* The processes it is the config for now get it. */
	if ((c = matching(n, &f, &v)) < 0)
		c = 0;
	eff = v;
	for (i = 0; i < c; i++)
		if (desired_effective(&n->desired, d, &v[i]->key))
			eff[k++] = v[i];
	{
		ProtobufCBinaryData payload = {d->len, d->payload};
		w = write_all(n, job, eff, (size_t)k, &payload, rq->wait_ms);
	}
	free(v);
	if (!w)
		return;
	w->desired = *d;
	if (!(w->desired.payload = malloc(d->len))) {
		free(w);
		return finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
	}
	memcpy(w->desired.payload, d->payload, d->len);
	wait_start(n, w);
}

static void do_delete_desired(struct node *n, struct node_job *job)
{
	Procctl__V1__DeleteDesiredConfigRequest *rq = (void *)job->req;
	Procctl__V1__DeleteDesiredConfigResponse m = PROCCTL__V1__DELETE_DESIRED_CONFIG_RESPONSE__INIT;
	struct ev_key f;
	const char *why = NULL;
	char err[400], msg[480];
	enum node_code code;
	int r;
	if ((code = selector_key(rq->selector, &f, &why)))
		return finish(job, code, why, NULL);
	if (desired_check(&f, &why) < 0)
		return finish(job, NODE_INVALID_ARGUMENT, why, NULL);
	r = desired_delete(&n->desired, &f, err, sizeof err);
	if (r == -ENOENT)
		return finish(job, NODE_NOT_FOUND, "no desired config for that selector", NULL);
	if (r < 0) {
		snprintf(msg, sizeof msg, "could not keep the change on the host (%s): nothing changed", err);
		return finish(job, NODE_UNAVAILABLE, msg, NULL);
	}
	node_log(PROCCTL_LOG_INFO, "desired_deleted", "consumer=%s version=%u pid=%d pod=%s container=%.12s", f.consumer,
		 f.version, (int)f.pid, f.pod_uid[0] ? f.pod_uid : "-", f.container_id[0] ? f.container_id : "-");
	finish(job, NODE_OK, NULL, &m.base);
}

static int by_precedence(const void *a, const void *b)
{
	const struct desired *x = *(const struct desired *const *)a, *y = *(const struct desired *const *)b;
	if (x->level != y->level)
		return x->level > y->level ? -1 : 1;
	return x->revision < y->revision ? -1 : x->revision > y->revision;
}

static void do_list_desired(struct node *n, struct node_job *job)
{
	Procctl__V1__ListDesiredConfigsResponse m = PROCCTL__V1__LIST_DESIRED_CONFIGS_RESPONSE__INIT;
	struct arena a = {0};
	const struct desired **v = ar_alloc(&a, sizeof *v * (n->desired.n ? n->desired.n : 1));
	size_t i;
	m.revision = n->desired.revision;
	m.configs = ar_alloc(&a, sizeof *m.configs * (n->desired.n ? n->desired.n : 1));
	if (v && m.configs) {
		for (i = 0; i < n->desired.n; i++)
			v[i] = &n->desired.v[i];
		qsort(v, n->desired.n, sizeof *v, by_precedence);
		for (i = 0; i < n->desired.n; i++)
			m.configs[m.n_configs++] = mk_desired(&a, v[i]);
	}
	finish_arena(job, &a, &m.base);
}

static void do_wait_ack(struct node *n, struct node_job *job)
{
	Procctl__V1__WaitAckRequest *rq = (void *)job->req;
	struct proc *p;
	struct wait *w;
	const char *why = NULL;
	enum node_code code = resolve_ref(n, rq->process, &p, &why);
	if (code)
		return finish(job, code, why, NULL);
	if (!rq->generation || rq->generation > procctl_client_config_gen(p->c))
		return finish(job, NODE_INVALID_ARGUMENT, "generation: not one published to this process", NULL);
	if (!(w = calloc(1, sizeof *w + sizeof w->item[0])))
		return finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
	w->job = job;
	w->n = 1;
	w->deadline_ns = now_ns() + (int64_t)rq->wait_ms * MS;
	if (w->deadline_ns >= job->deadline_ns) {
		w->deadline_ns = job->deadline_ns;
		w->call_deadline = 1;
	}
	w->item[0].p = p;
	w->item[0].pid = p->key.pid;
	w->item[0].instance = p->instance;
	w->item[0].gen = rq->generation;
	w->item[0].status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_PENDING;
	w->next = n->waits;
	n->waits = w;
	read_state(n, p, 0);
}

static void fill_arbiter(struct arena *a, const struct arb *ab, Procctl__V1__Arbiter *m, int64_t now)
{
	size_t i;
	procctl__v1__arbiter__init(m);
	m->kind = ar_str(a, ab->cfg->name);
	m->kind_number = ab->cfg->kind;
	m->hold_ns = ab->cfg->hold_ns;
	m->resources = ar_alloc(a, sizeof *m->resources * (ab->nsnap ? ab->nsnap : 1));
	for (i = 0; m->resources && i < ab->nsnap; i++) {
		const struct procctl_arbiter_snapshot *s = &ab->snap[i];
		Procctl__V1__ArbiterResource *r = ar_alloc(a, sizeof *r);
		if (!r)
			return;
		procctl__v1__arbiter_resource__init(r);
		r->kind = ar_str(a, ab->cfg->name);
		r->id.data = ar_alloc(a, sizeof s->res.id);
		if (r->id.data) {
			memcpy(r->id.data, s->res.id, sizeof s->res.id);
			r->id.len = sizeof s->res.id;
		}
		r->holder = mk_ref(a, s->holder_pid, s->holder_instance);
		r->grant_id = ar_hexid(a, s->grant_id);
		r->held_ns = s->held_ns;
		r->pending_ns = s->pending_since_ns && now > (int64_t)s->pending_since_ns
					? (uint64_t)now - s->pending_since_ns
					: 0;
		r->hold_ns_total = s->hold_ns_total;
		r->pending_ns_total = s->pending_ns;
		r->blocked_ns_total = s->blocked_ns;
		r->handoffs = s->handoffs;
		r->waiters = s->waiters;
		m->resources[m->n_resources++] = r;
	}
}

static void do_arbiters(struct node *n, struct node_job *job)
{
	struct arena a = {0};
	int64_t now = now_ns();
	size_t i;
	if (job->method == NODE_LIST_ARBITERS) {
		Procctl__V1__ListArbitersResponse m = PROCCTL__V1__LIST_ARBITERS_RESPONSE__INIT;
		m.arbiters = ar_alloc(&a, sizeof *m.arbiters * (n->narb ? n->narb : 1));
		for (i = 0; m.arbiters && i < n->narb; i++) {
			Procctl__V1__Arbiter *x = ar_alloc(&a, sizeof *x);
			if (!x)
				break;
			fill_arbiter(&a, &n->arb[i], x, now);
			m.arbiters[m.n_arbiters++] = x;
		}
		return finish_arena(job, &a, &m.base);
	} else {
		Procctl__V1__GetArbiterRequest *rq = (void *)job->req;
		Procctl__V1__GetArbiterResponse m = PROCCTL__V1__GET_ARBITER_RESPONSE__INIT;
		Procctl__V1__Arbiter x;
		for (i = 0; i < n->narb; i++) {
			char num[16];
			snprintf(num, sizeof num, "%u", n->arb[i].cfg->kind);
			if (!strcmp(n->arb[i].cfg->name, rq->kind) || !strcmp(num, rq->kind))
				break; /* by its name, or its number */
		}
		if (i == n->narb)
			return finish(job, NODE_NOT_FOUND, "no arbiter for that kind", NULL);
		fill_arbiter(&a, &n->arb[i], &x, now);
		m.arbiter = &x;
		return finish_arena(job, &a, &m.base);
	}
}

/* "<incarnation hex>.<seq>": 0 and the seq, or -1. */
static int parse_token(const struct node *n, const char *t, uint64_t *seq)
{
	char *end;
	unsigned long long inc, s;
	if (strlen(t) < 18 || t[16] != '.')
		return -1;
	errno = 0;
	inc = strtoull(t, &end, 16);
	if (errno || end != t + 16 || inc != n->incarnation || t[17] < '0' || t[17] > '9')
		return -1;
	s = strtoull(t + 17, &end, 10);
	if (errno || *end)
		return -1;
	*seq = s;
	return 0;
}

static void do_watch(struct node *n, struct node_job *job)
{
	Procctl__V1__WatchEventsRequest *rq = (void *)job->req;
	struct ev_key f;
	const char *why = NULL;
	enum node_code code = selector_key(rq->filter, &f, &why);
	uint64_t seq;
	if (code)
		return finish(job, code, why, NULL);
	if (rq->resume_token[0]) {
		if (parse_token(n, rq->resume_token, &seq) < 0 || !events_resumable(n->ev, seq))
			return finish(job, NODE_OUT_OF_RANGE,
				      "resume_token: unknown, of another daemon incarnation, or too old: watch without "
				      "one (a snapshot) and relist",
				      NULL);
		job->ops->watch(job, NULL, seq, &f);
	} else {
		struct arena a = {0};
		Procctl__V1__Snapshot snap = PROCCTL__V1__SNAPSHOT__INIT;
		PbEvent ev = PROCCTL__V1__WATCH_EVENTS_RESPONSE__INIT;
		char token[48];
		struct proc **v;
		ssize_t c, i;
		if ((c = matching(n, &f, &v)) < 0)
			return finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
		snap.processes = ar_alloc(&a, sizeof *snap.processes * (size_t)(c ? c : 1));
		for (i = 0; snap.processes && i < c; i++)
			snap.processes[snap.n_processes++] = mk_process(&a, v[i]);
		free(v);
		if (a.failed) {
			ar_free(&a);
			return finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
		}
		seq = events_last(n->ev);
		snprintf(token, sizeof token, "%016llx.%llu", (unsigned long long)n->incarnation,
			 (unsigned long long)seq);
		ev.sequence = seq;
		ev.resume_token = token;
		ev.event_case = PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_SNAPSHOT;
		ev.snapshot = &snap;
		job->ops->watch(job, &ev.base, seq, &f);
		ar_free(&a);
	}
	protobuf_c_message_free_unpacked(job->req, NULL);
	free(job);
}

/* ---- metrics ----------------------------------------------------------- */

static void metric_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A resource id as a UUID (GPU ids are; the CLI shows every id so). */
static void resource_label(const procctl_resource_t *r, char *out, size_t cap)
{
	size_t i, o = 0;
	out[0] = 0;
	for (i = 0; i < sizeof r->id && o < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", r->id[i]);
}

/* The Prometheus text exposition (0.0.4) of everything the loop knows. */
static char *render_metrics(struct node *n, size_t *len)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} res_counters[] = {
		{"procctl_resource_hold_seconds_total", "Time the resource was held under a live grant.",
		 offsetof(struct procctl_arbiter_snapshot, hold_ns_total)},
		{"procctl_resource_blocked_seconds_total",
		 "Time someone wanted the resource while it could not move (PSI style).",
		 offsetof(struct procctl_arbiter_snapshot, blocked_ns)},
		{"procctl_resource_pending_release_seconds_total",
		 "Time revocations of the resource waited for their confirmation.",
		 offsetof(struct procctl_arbiter_snapshot, pending_ns)},
	};
	struct procctl_registry_stats rs[NODE_CONSUMERS_MAX];
	char *buf = NULL, label[40];
	size_t i, j, k;
	uint64_t cum;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	for (i = 0; i < n->nreg; i++)
		procctl_registry_stats(n->reg[i], &rs[i]);

	metric_head(f, "procctl_build_info", "gauge", "procctl-node's version and API; always 1.");
	fprintf(f, "procctl_build_info{version=\"%s\",api=\"procctl.v1\",wire=\"%u.%u\"} 1\n", PROCCTL_NODE_VERSION,
		(unsigned)PROCCTL_VERSION_MAJOR, (unsigned)PROCCTL_VERSION_MINOR);
	metric_head(f, "procctl_ready", "gauge", "1 once every registry finished its first full scan.");
	fprintf(f, "procctl_ready %d\n", node_ready(n));

	metric_head(f, "procctl_processes", "gauge", "Attached processes (regions), by consumer and ownership.");
	for (i = 0; i < n->nprocs; i++) { /* one line per (consumer, owned) seen, counted over the table */
		const struct proc *p = n->procs[i];
		int owned = procctl_registry_owner(p->reg, p->key.consumer), dup = 0;
		size_t c = 0;
		for (j = 0; j < i && !dup; j++)
			dup = !strcmp(n->procs[j]->key.consumer, p->key.consumer) &&
			      procctl_registry_owner(n->procs[j]->reg, p->key.consumer) == owned;
		if (dup)
			continue;
		for (j = i; j < n->nprocs; j++)
			c += !strcmp(n->procs[j]->key.consumer, p->key.consumer) &&
			     procctl_registry_owner(n->procs[j]->reg, p->key.consumer) == owned;
		fprintf(f, "procctl_processes{consumer=\"%s\",ownership=\"%s\"} %zu\n", p->key.consumer,
			owned ? "owned" : "passive", c);
	}

	metric_head(f, "procctl_scans_total", "counter", "Full scans of /proc.");
	for (i = 0, cum = 0; i < n->nreg; i++)
		cum += rs[i].scans;
	fprintf(f, "procctl_scans_total %llu\n", (unsigned long long)cum);
	metric_head(f, "procctl_scan_seconds_total", "counter", "Time spent in full scans of /proc.");
	for (i = 0, cum = 0; i < n->nreg; i++)
		cum += rs[i].scan_ns;
	fprintf(f, "procctl_scan_seconds_total %.9f\n", (double)cum / 1e9);
	metric_head(f, "procctl_targeted_scans_total", "counter",
		    "Scans of one process (the hello probe, a new mapping of a probed file).");
	for (i = 0, cum = 0; i < n->nreg; i++)
		cum += rs[i].targeted_scans;
	fprintf(f, "procctl_targeted_scans_total %llu\n", (unsigned long long)cum);
	{
		struct procctl_hello_stats hs;
		memset(&hs, 0, sizeof hs);
		if (n->hello)
			procctl_hello_stats(n->hello, &hs);
		metric_head(f, "procctl_hello_available", "gauge",
			    "1 when the procctl:hello probe runs; 0 when it is off or not allowed here (new processes "
			    "are found at rescans).");
		fprintf(f, "procctl_hello_available %d\n", n->hello != NULL);
		metric_head(f, "procctl_hello_hits_total", "counter", "procctl:hello probes heard.");
		fprintf(f, "procctl_hello_hits_total %llu\n", (unsigned long long)hs.hits);
		metric_head(f, "procctl_hello_files", "gauge", "Files (programs, libraries) with the probe, watched now.");
		fprintf(f, "procctl_hello_files %llu\n", (unsigned long long)hs.files);
		metric_head(f, "procctl_hello_uprobes", "gauge",
			    "Uprobe perf events open (probe sites times CPUs); each is closed at exit, slowly.");
		fprintf(f, "procctl_hello_uprobes %llu\n", (unsigned long long)hs.uprobes);
		metric_head(f, "procctl_hello_files_read_total", "counter", "Executable files read for the probe's notes.");
		fprintf(f, "procctl_hello_files_read_total %llu\n", (unsigned long long)hs.files_read);
		metric_head(f, "procctl_hello_lost_total", "counter",
			    "Times perf records were lost (a full ring): a full scan followed.");
		fprintf(f, "procctl_hello_lost_total %llu\n", (unsigned long long)hs.lost);
	}
	metric_head(f, "procctl_attach_attempts_total", "counter", "Regions found and attach attempted.");
	for (i = 0, cum = 0; i < n->nreg; i++)
		cum += rs[i].attach_attempts;
	fprintf(f, "procctl_attach_attempts_total %llu\n", (unsigned long long)cum);
	metric_head(f, "procctl_attach_rejections_total", "counter", "Regions refused, by reason.");
	for (k = 1; k < PROCCTL_REJECT__COUNT; k++) {
		for (i = 0, cum = 0; i < n->nreg; i++)
			cum += rs[i].rejects[k];
		fprintf(f, "procctl_attach_rejections_total{reason=\"%s\"} %llu\n", procctl_reject_name((enum procctl_reject)k),
			(unsigned long long)cum);
	}
	metric_head(f, "procctl_heartbeats_total", "counter", "Lease heartbeats written.");
	for (i = 0, cum = 0; i < n->nreg; i++)
		cum += rs[i].heartbeats;
	fprintf(f, "procctl_heartbeats_total %llu\n", (unsigned long long)cum);
	metric_head(f, "procctl_lease_lapses_total", "counter",
		    "Heartbeats that came more than a lease after the one before: the processes may have seen their "
		    "lease expire.");
	for (i = 0, cum = 0; i < n->nreg; i++)
		cum += rs[i].lease_lapses;
	fprintf(f, "procctl_lease_lapses_total %llu\n", (unsigned long long)cum);
	metric_head(f, "procctl_ownership_changes_total", "counter",
		    "Node locks taken or given up (hand-offs between daemons).");
	fprintf(f, "procctl_ownership_changes_total %llu\n", (unsigned long long)n->stats.ownership_changes);

	metric_head(f, "procctl_publishes_total", "counter", "Configs written or cleared.");
	fprintf(f, "procctl_publishes_total %llu\n", (unsigned long long)n->stats.writes);
	metric_head(f, "procctl_acks_total", "counter", "Acks seen, by result.");
	fprintf(f, "procctl_acks_total{result=\"applied\"} %llu\n", (unsigned long long)n->stats.acks_applied);
	fprintf(f, "procctl_acks_total{result=\"rejected\"} %llu\n", (unsigned long long)n->stats.acks_rejected);
	metric_head(f, "procctl_publish_ack_seconds", "histogram", "From a config written to its ack seen.");
	for (k = 0, cum = 0; k < NBUCKETS; k++) {
		cum += n->stats.ack_hist[k];
		fprintf(f, "procctl_publish_ack_seconds_bucket{le=\"%g\"} %llu\n", ack_buckets[k], (unsigned long long)cum);
	}
	cum += n->stats.ack_hist[NBUCKETS];
	fprintf(f, "procctl_publish_ack_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
	fprintf(f, "procctl_publish_ack_seconds_sum %.9f\n", n->stats.ack_sum);
	fprintf(f, "procctl_publish_ack_seconds_count %llu\n", (unsigned long long)n->stats.ack_count);

	for (k = 0; k < sizeof res_counters / sizeof res_counters[0]; k++) {
		metric_head(f, res_counters[k].name, "counter", res_counters[k].help);
		for (i = 0; i < n->narb; i++)
			for (j = 0; j < n->arb[i].nsnap; j++) {
				const struct procctl_arbiter_snapshot *sn = &n->arb[i].snap[j];
				resource_label(&sn->res, label, sizeof label);
				fprintf(f, "%s{kind=\"%s\",resource=\"%s\"} %.9f\n", res_counters[k].name, n->arb[i].cfg->name,
					label, (double)*(const uint64_t *)((const char *)sn + res_counters[k].off) / 1e9);
			}
	}
	metric_head(f, "procctl_resource_handoffs_total", "counter", "Grants to a process other than the last holder.");
	for (i = 0; i < n->narb; i++)
		for (j = 0; j < n->arb[i].nsnap; j++) {
			resource_label(&n->arb[i].snap[j].res, label, sizeof label);
			fprintf(f, "procctl_resource_handoffs_total{kind=\"%s\",resource=\"%s\"} %llu\n", n->arb[i].cfg->name, label,
				(unsigned long long)n->arb[i].snap[j].handoffs);
		}
	metric_head(f, "procctl_resource_holder", "gauge", "1 while a process holds the resource.");
	for (i = 0; i < n->narb; i++)
		for (j = 0; j < n->arb[i].nsnap; j++) {
			resource_label(&n->arb[i].snap[j].res, label, sizeof label);
			fprintf(f, "procctl_resource_holder{kind=\"%s\",resource=\"%s\"} %d\n", n->arb[i].cfg->name, label,
				n->arb[i].snap[j].holder_pid != 0);
		}
	metric_head(f, "procctl_resource_waiters", "gauge", "Processes that want the resource, the holder excluded.");
	for (i = 0; i < n->narb; i++)
		for (j = 0; j < n->arb[i].nsnap; j++) {
			resource_label(&n->arb[i].snap[j].res, label, sizeof label);
			fprintf(f, "procctl_resource_waiters{kind=\"%s\",resource=\"%s\"} %u\n", n->arb[i].cfg->name, label,
				n->arb[i].snap[j].waiters);
		}
	metric_head(f, "procctl_watch_events_total", "counter", "Events numbered for WatchEvents.");
	fprintf(f, "procctl_watch_events_total %llu\n", (unsigned long long)events_last(n->ev));
	if (n->srv)
		grpcsrv_metrics(n->srv, f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void do_metrics(struct node *n, struct node_job *job)
{
	if (!(job->text = render_metrics(n, &job->text_len)))
		return finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
	finish(job, NODE_OK, NULL, NULL);
}

static void handle(struct node *n, struct node_job *job)
{
	switch (job->method) {
	case NODE_LIST_PROCESSES:
		return do_list(n, job);
	case NODE_GET_PROCESS:
		return do_get(n, job);
	case NODE_WATCH_EVENTS:
		return do_watch(n, job);
	case NODE_PUBLISH:
	case NODE_CLEAR:
		return do_write(n, job);
	case NODE_WAIT_ACK:
		return do_wait_ack(n, job);
	case NODE_READ_STATE:
		return do_read_state(n, job);
	case NODE_LIST_ARBITERS:
	case NODE_GET_ARBITER:
		return do_arbiters(n, job);
	case NODE_SET_DESIRED:
		return do_set_desired(n, job);
	case NODE_DELETE_DESIRED:
		return do_delete_desired(n, job);
	case NODE_LIST_DESIRED:
		return do_list_desired(n, job);
	case NODE_METRICS:
		return do_metrics(n, job);
	}
	finish(job, NODE_UNIMPLEMENTED, "no such method", NULL);
}

/* ---- arbiters ---------------------------------------------------------- */

static void emit_grant(struct node *n, const struct node_arbiter_cfg *cfg, const struct procctl_arbiter_snapshot *s,
		       int released, int exited)
{
	PbEvent ev = PROCCTL__V1__WATCH_EVENTS_RESPONSE__INIT;
	PbRef ref = PROCCTL__V1__PROCESS_REF__INIT;
	char *kind = (char *)cfg->name; /* protobuf-c's strings are not const; not written */
	char idbuf[HEXID_LEN], grant[HEXID_LEN];
	struct ev_key k = {.pid = s->holder_pid};
	ProtobufCBinaryData id = {sizeof s->res.id, (uint8_t *)s->res.id};
	size_t i;
	ref.pid = s->holder_pid;
	ref.instance_id = hexid(idbuf, s->holder_instance);
	snprintf(k.consumer, sizeof k.consumer, "%s", cfg->consumer);
	for (i = 0; i < n->nprocs; i++)
		if (n->procs[i]->key.pid == s->holder_pid && n->procs[i]->instance == s->holder_instance)
			k = n->procs[i]->key;
	if (released) {
		Procctl__V1__ResourceReleased m = PROCCTL__V1__RESOURCE_RELEASED__INIT;
		m.kind = kind;
		m.id = id;
		m.holder = &ref;
		m.grant_id = hexid(grant, s->grant_id);
		m.reason = exited ? PROCCTL__V1__RELEASE_REASON__RELEASE_REASON_EXITED
				  : PROCCTL__V1__RELEASE_REASON__RELEASE_REASON_CONFIRMED;
		ev.event_case = PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_RESOURCE_RELEASED;
		ev.resource_released = &m;
		emit(n, &k, &ev);
	} else {
		Procctl__V1__ResourceGranted m = PROCCTL__V1__RESOURCE_GRANTED__INIT;
		m.kind = kind;
		m.id = id;
		m.holder = &ref;
		m.grant_id = hexid(grant, s->grant_id);
		ev.event_case = PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_RESOURCE_GRANTED;
		ev.resource_granted = &m;
		emit(n, &k, &ev);
	}
	node_log(PROCCTL_LOG_INFO, released ? "released" : "granted", "kind=%s pid=%d grant=%016llx%s", kind,
		 (int)s->holder_pid, (unsigned long long)s->grant_id, released ? (exited ? " reason=exited" : " reason=confirmed") : "");
}

/* 1 when a grant's holder is gone: detached, or exited or exec'd and not
 * detached yet (the arbiter can see the exit through the pidfd a tick
 * before the registry's DETACHED comes). A holder that confirmed its
 * release and exited within the same tick is reported as exited too. */
static int holder_gone(const struct node *n, pid_t pid, uint64_t instance)
{
	size_t i;
	for (i = 0; i < n->nprocs; i++)
		if (n->procs[i]->key.pid == pid && n->procs[i]->instance == instance)
			return procctl_client_alive(n->procs[i]->c) < 0;
	return 1;
}

/* Tick every arbiter; a grant that changed hands is a Released event (for
 * the old one) and a Granted event (for the new). */
static void arbiters_tick(struct node *n)
{
	static struct procctl_arbiter_snapshot now[PROCCTL_ARB_MAX_RESOURCES];
	size_t i, j, k, c;
	for (i = 0; i < n->narb; i++) {
		struct arb *ab = &n->arb[i];
		int r = procctl_arbiter_tick(ab->a);
		if (r < 0)
			node_log(PROCCTL_LOG_DEBUG, "arbiter_write_failed", "kind=%s error=%s", ab->cfg->name, strerror(-r));
		c = procctl_arbiter_snapshot(ab->a, now, PROCCTL_ARB_MAX_RESOURCES);
		for (j = 0; j < c; j++) {
			const struct procctl_arbiter_snapshot *old = NULL;
			for (k = 0; k < ab->nsnap; k++)
				if (!memcmp(&ab->snap[k].res, &now[j].res, sizeof now[j].res))
					old = &ab->snap[k];
			if (old && old->grant_id == now[j].grant_id)
				continue;
			if (old && old->grant_id)
				emit_grant(n, ab->cfg, old, 1, holder_gone(n, old->holder_pid, old->holder_instance));
			if (now[j].grant_id)
				emit_grant(n, ab->cfg, &now[j], 0, 0);
		}
		memcpy(ab->snap, now, c * sizeof now[0]);
		ab->nsnap = c;
	}
}

/* ---- the loop ---------------------------------------------------------- */

struct node *node_new(const struct node_cfg *cfg, char *err, size_t errlen)
{
	struct node *n = calloc(1, sizeof *n);
	size_t i, j;
	if (!n) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	n->cfg = *cfg;
	pthread_mutex_init(&n->mu, NULL);
	n->tail = &n->head;
	n->cfg_ifd = -1;
	n->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	n->ev = events_new(cfg->watch_history);
	if (n->efd < 0 || !n->ev || getrandom(&n->incarnation, sizeof n->incarnation, 0) != sizeof n->incarnation) {
		snprintf(err, errlen, "setting up the loop: %s", strerror(errno));
		goto fail;
	}
	if (desired_load(&n->desired, cfg->state_dir, err, errlen) < 0)
		goto fail;
	if (n->desired.n)
		node_log(PROCCTL_LOG_INFO, "desired_loaded", "configs=%zu revision=%llu", n->desired.n,
			 (unsigned long long)n->desired.revision);
	n->rev_at_start = n->desired.revision;
	file_desired(n, &n->cfg);
	n->nreg = cfg->nconsumers ? cfg->nconsumers : 1;
	for (i = 0; i < n->nreg; i++) {
		struct procctl_registry_opts o;
		memset(&o, 0, sizeof o);
		o.sz = sizeof o;
		o.consumer = cfg->nconsumers ? cfg->consumers[i] : NULL;
		o.lease_ns = cfg->lease_ns;
		o.rescan_ns = cfg->rescan_ns;
		o.lock_dir = cfg->lock_dir;
		o.on_event = on_event;
		o.arg = &n->args[i];
		o.flags = PROCCTL_REGISTRY_DOORBELLS;
		o.max_per_process = cfg->max_per_process;
		o.max_regions = cfg->max_regions;
		n->args[i].n = n;
		n->reg[i] = procctl_registry_new(&o);
		if (!n->reg[i] && errno == ENOSYS) {
			node_log(PROCCTL_LOG_WARN, "no_doorbells", "reason=\"no futex_waitv (Linux < 5.16)\"");
			o.flags = 0;
			n->reg[i] = procctl_registry_new(&o);
		}
		if (!n->reg[i]) {
			snprintf(err, errlen, "registry for %s: %s", o.consumer ? o.consumer : "every consumer",
				 strerror(errno));
			goto fail;
		}
		n->args[i].reg = n->reg[i];
	}
	if (cfg->hello) {
		struct procctl_hello_opts ho;
		memset(&ho, 0, sizeof ho);
		ho.sz = sizeof ho;
		ho.on_pid = on_hello;
		ho.arg = n;
		if (!(n->hello = procctl_hello_new(&ho)))
			node_log(PROCCTL_LOG_WARN, "hello_unavailable", "reason=\"%s\" error=\"%s\" rescan_ms=%llu",
				 procctl_hello_error(-errno), strerror(errno), (unsigned long long)(cfg->rescan_ns / MS));
	}
	for (i = 0; i < cfg->narbiters; i++) {
		const struct node_arbiter_cfg *ac = &cfg->arbiters[i];
		struct arb *ab = &n->arb[n->narb];
		struct procctl_arbiter_opts ao;
		procctl_registry_t *reg = n->reg[0];
		int r;
		for (j = 0; j < cfg->nconsumers; j++)
			if (!strcmp(cfg->consumers[j], ac->consumer))
				reg = n->reg[j];
		ab->cfg = &n->cfg.arbiters[i];
		if ((r = procctl_arbiter_registry_source(&ab->src, reg, ac->consumer, STATE_READ_NS)) < 0) {
			snprintf(err, errlen, "arbiter %s: %s", ac->name, strerror(-r));
			goto fail;
		}
		memset(&ao, 0, sizeof ao);
		ao.sz = sizeof ao;
		ao.kind = ac->kind;
		ao.hold_ns = ac->hold_ns;
		ao.flags = ac->process_bound ? PROCCTL_ARB_PROCESS_BOUND : 0;
		ao.resources = ac->resources;
		ao.nresources = ac->nresources;
		if (!(ab->a = procctl_arbiter_new(&ao, &ab->src))) {
			snprintf(err, errlen, "arbiter %s: %s", ac->name, strerror(errno));
			procctl_arbiter_registry_source_free(&ab->src);
			goto fail;
		}
		n->narb++;
	}
	return n;
fail:
	node_close(n, 0);
	return NULL;
}

void node_set_server(struct node *n, struct grpc_srv *s)
{
	__atomic_store_n(&n->srv, s, __ATOMIC_RELEASE);
}

struct events *node_events(struct node *n)
{
	return n->ev;
}

int node_ready(const struct node *n)
{
	return __atomic_load_n(&n->ready, __ATOMIC_ACQUIRE);
}

int node_serving(const struct node *n)
{
	return node_ready(n) && __atomic_load_n(&n->srv, __ATOMIC_ACQUIRE) && !n->stop;
}

void node_stop(struct node *n)
{
	uint64_t one = 1;
	n->stop = 1;
	if (write(n->efd, &one, sizeof one) < 0) {
		/* the counter is full: the loop is awake anyway */
	}
}

int node_submit(struct node *n, struct node_job *job)
{
	uint64_t one = 1;
	pthread_mutex_lock(&n->mu);
	if (n->closed) {
		pthread_mutex_unlock(&n->mu);
		return -ESHUTDOWN;
	}
	job->next = NULL;
	*n->tail = job;
	n->tail = &job->next;
	pthread_mutex_unlock(&n->mu);
	if (write(n->efd, &one, sizeof one) < 0) {
		/* full: the loop is awake anyway */
	}
	return 0;
}

static struct node_job *take_jobs(struct node *n, int close)
{
	struct node_job *j;
	pthread_mutex_lock(&n->mu);
	j = n->head;
	n->head = NULL;
	n->tail = &n->head;
	if (close)
		n->closed = 1;
	pthread_mutex_unlock(&n->mu);
	return j;
}

/* Poll the state of the processes due: those waited on often, the rest
 * now and then (a doorbell is a hint, and not every process is heard: a
 * process is polled as one without a doorbell until it first rang). */
static int64_t poll_states(struct node *n, int64_t now)
{
	int64_t next = now + POLL_IDLE_NS;
	size_t i;
	for (i = 0; i < n->nprocs; i++) {
		struct proc *p = n->procs[i];
		int64_t every = p->waiting ? (p->rings ? POLL_RUNG_NS : POLL_WAITING_NS)
					   : (p->rings ? POLL_QUIET_NS : POLL_IDLE_NS);
		if (p->next_poll_ns > now + every)
			p->next_poll_ns = now + every;
		if (p->next_poll_ns <= now) {
			read_state(n, p, 0);
			p->next_poll_ns = now + every;
		}
		if (p->next_poll_ns < next)
			next = p->next_poll_ns;
	}
	return next;
}

/* ---- the configuration file -------------------------------------------- */

#define RELOAD_SETTLE_NS (100 * MS) /* a file written in steps is read once it settled */
#define RELOAD_MAX_WAIT_NS (1000 * MS) /* ... or a second after the first change, in a busy directory */

/* Watch the directories of the path and of what it resolves to now (for
 * a ConfigMap: the volume's, where ..data is swapped, and the dated one).
 * 0, or -errno when the path's own directory cannot be watched. */
static int watch_dirs(struct node *n)
{
	char buf[PATH_MAX], *slash, *real;
	const uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB;
	snprintf(buf, sizeof buf, "%s", n->cfg_path);
	slash = strrchr(buf, '/');
	if (slash)
		*slash = slash == buf ? (slash[1] = 0, '/') : 0;
	if (inotify_add_watch(n->cfg_ifd, slash ? buf : ".", mask) < 0)
		return -errno;
	if ((real = realpath(n->cfg_path, NULL))) {
		slash = strrchr(real, '/');
		if (slash && slash != real) {
			*slash = 0;
			inotify_add_watch(n->cfg_ifd, real, mask);
		}
		free(real);
	}
	return 0;
}

/* Something changed near the file: reload once things settle. */
static void config_events(struct node *n, int64_t now)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int any = 0;
	while (read(n->cfg_ifd, buf, sizeof buf) > 0)
		any = 1;
	if (!any)
		return;
	if (!n->cfg_first)
		n->cfg_first = now;
	n->cfg_due = now + RELOAD_SETTLE_NS;
	if (n->cfg_due > n->cfg_first + RELOAD_MAX_WAIT_NS)
		n->cfg_due = n->cfg_first + RELOAD_MAX_WAIT_NS;
}

/* Build the configuration again and apply its [desired] sections. */
static void reload(struct node *n)
{
	struct node_cfg *c = malloc(sizeof *c);
	char err[512];
	int others, desired, r;
	if ((r = watch_dirs(n)) < 0) /* a swap made a new directory to follow */
		node_log(PROCCTL_LOG_WARN, "config_not_watched", "file=%s error=%s", n->cfg_path, strerror(-r));
	if (!c) {
		node_log(PROCCTL_LOG_ERROR, "config_reload_failed", "file=%s error=\"out of memory\"", n->cfg_path);
		return;
	}
	if (n->cfg_build(c, err, sizeof err, n->cfg_arg) < 0) {
		node_log(PROCCTL_LOG_ERROR, "config_reload_failed", "file=%s error=\"%s\" kept=running", n->cfg_path, err);
		free(c);
		return;
	}
	others = memcmp(c, &n->cfg, offsetof(struct node_cfg, desired)) != 0;
	desired = c->ndesired != n->cfg.ndesired || memcmp(c->desired, n->cfg.desired, sizeof c->desired) != 0;
	if (others)
		node_log(PROCCTL_LOG_WARN, "config_restart_needed", "file=%s reason=\"only [desired] sections apply while "
			 "running; the rest at the next start\"", n->cfg_path);
	file_desired(n, c); /* every time: a section refused before is tried again */
	if (desired) {
		memcpy(n->cfg.desired, c->desired, sizeof c->desired);
		n->cfg.ndesired = c->ndesired;
	}
	if (others || desired)
		node_log(PROCCTL_LOG_INFO, "config_reloaded", "file=%s desired=%zu", n->cfg_path, n->cfg.ndesired);
	free(c);
}

int node_watch_config(struct node *n, const char *path,
		      int (*build)(struct node_cfg *c, char *err, size_t errlen, void *arg), void *arg)
{
	int r;
	if ((n->cfg_ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
		return -errno;
	n->cfg_path = path;
	n->cfg_build = build;
	n->cfg_arg = arg;
	if ((r = watch_dirs(n)) < 0) {
		close(n->cfg_ifd);
		n->cfg_ifd = -1;
		return r;
	}
	n->cfg_due = now_ns() + RELOAD_SETTLE_NS; /* once more: a change just before the watch began */
	return 0;
}

int node_run(struct node *n)
{
	struct pollfd pfd[NODE_CONSUMERS_MAX + 3];
	int64_t next_tick = 0;
	int err = 0;
	size_t i;

	for (i = 0; i < n->nreg; i++)
		pfd[i] = (struct pollfd){procctl_registry_fd(n->reg[i]), POLLIN, 0};
	pfd[n->nreg] = (struct pollfd){n->efd, POLLIN, 0};
	pfd[n->nreg + 1] = (struct pollfd){n->hello ? procctl_hello_fd(n->hello) : -1, POLLIN, 0};
	pfd[n->nreg + 2] = (struct pollfd){n->cfg_ifd, POLLIN, 0};
	while (!n->stop) {
		struct node_job *j, *next;
		int64_t now = now_ns(), due, timeout;
		struct wait *w;
		uint64_t v;
		int ready = 1;

		for (j = take_jobs(n, 0); j; j = next) {
			next = j->next;
			handle(n, j);
		}
		if (n->hello && (err = procctl_hello_dispatch(n->hello)) < 0) {
			node_log(PROCCTL_LOG_ERROR, "hello_failed", "error=%s", strerror(-err));
			goto out;
		}
		for (i = 0; i < n->nreg; i++) {
			if ((err = procctl_registry_dispatch(n->reg[i])) < 0) {
				node_log(PROCCTL_LOG_ERROR, "registry_failed", "error=%s", strerror(-err));
				goto out;
			}
			ready &= procctl_registry_first_scan_done(n->reg[i]);
		}
		now = now_ns();
		if (n->narb && now >= next_tick) {
			arbiters_tick(n);
			next_tick = now + TICK_NS;
		}
		waits_sweep(n, now, 0);
		due = poll_states(n, now);
		waits_sweep(n, now_ns(), 0);
		if (ready != node_ready(n)) {
			__atomic_store_n(&n->ready, ready, __ATOMIC_RELEASE);
			node_log(PROCCTL_LOG_INFO, "ready", "processes=%zu", n->nprocs);
			n->kick = 1;
		}
		if (n->kick && n->srv) {
			n->kick = 0;
			grpcsrv_kick(n->srv);
		}
		if (n->narb && next_tick < due)
			due = next_tick;
		if (n->cfg_ifd >= 0)
			config_events(n, now_ns());
		if (n->cfg_due && n->cfg_due <= now_ns()) {
			n->cfg_due = n->cfg_first = 0;
			reload(n);
		}
		if (n->cfg_due && n->cfg_due < due)
			due = n->cfg_due;
		for (w = n->waits; w; w = w->next)
			if (w->deadline_ns < due)
				due = w->deadline_ns;
		now = now_ns();
		timeout = due <= now ? 0 : (due - now + MS - 1) / MS;
		if (poll(pfd, n->nreg + 3, (int)(timeout > 1000 ? 1000 : timeout)) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		if (pfd[n->nreg].revents & POLLIN) {
			if (read(n->efd, &v, sizeof v) < 0) {
				/* EAGAIN: another wake consumed it */
			}
		}
	}
out:
	/* Everything still held is answered: the daemon is going away. */
	waits_sweep(n, now_ns(), 1);
	{
		struct node_job *j, *next;
		for (j = take_jobs(n, 1); j; j = next) {
			next = j->next;
			finish(j, NODE_UNAVAILABLE, "procctl-node is shutting down", NULL);
		}
	}
	return err;
}

void node_release(struct node *n, unsigned flags)
{
	size_t i;
	if (!n || n->released)
		return;
	n->released = 1;
	for (i = 0; i < n->narb; i++) {
		procctl_arbiter_free(n->arb[i].a);
		procctl_arbiter_registry_source_free(&n->arb[i].src);
	}
	for (i = 0; i < n->nreg; i++)
		if (n->reg[i])
			procctl_registry_close(n->reg[i], flags); /* DETACHED for each: the table empties */
}

void node_close(struct node *n, unsigned flags)
{
	if (!n)
		return;
	node_release(n, flags);
	if (n->cfg_ifd >= 0)
		close(n->cfg_ifd);
	if (n->hello) {
		struct procctl_hello_stats hs;
		procctl_hello_stats(n->hello, &hs);
		if (hs.uprobes)
			node_log(PROCCTL_LOG_INFO, "closing_uprobes", "count=%llu", (unsigned long long)hs.uprobes);
		procctl_hello_free(n->hello);
	}
	free(n->procs);
	desired_free(&n->desired);
	events_free(n->ev);
	if (n->efd >= 0)
		close(n->efd);
	pthread_mutex_destroy(&n->mu);
	free(n);
}
