/* SPDX-License-Identifier: Apache-2.0 */
/* procs.c - the processes' lives: a registry's attach and detach, what
 * their state reads found (acks and state changes), the desired config
 * each is given, and the events they emit. The table's lookups, which the
 * services call, are table.c's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_int.h"
#include "sys/prom.h"
#include "sys/procstat.h"

/* Give p, just attached, the desired config it should have: if it has
 * none yet, or if the config was set since this daemon started (a process
 * found by a successor was given what the store said then, and what it has
 * now, that or a Publish over it, stays; a config changed at this start,
 * by the file, or since, is news to it). Its rollout state is noted. */
static void desired_apply(struct node *n, struct proc *p)
{
	const struct desired *d;
	uint64_t found = procctl_client_config_gen(p->c);
	int64_t g;
	d = proc_desired(n, p);
	if (!node_pods_known(n) && p->key.pod_uid[0] && (desired_by_pod(&n->desired) || n->pconfigs.kw) &&
	    (!d || d->level <= DESIRED_LABELS)) {
		p->apply_deferred = 1; /* its pod's namespace and labels may choose its config: one by its pod, container
					* or pid is above them all */
		return;
	}
	if (!d || !procctl_registry_owner(p->reg, p->key.consumer) ||
	    (p->desired_rev == d->revision && p->desired_gen))
		return;
	if (found && d->kube && procctl_client_config_is(p->c, d->payload, d->len)) {
		p->desired_gen = found; /* a predecessor gave it this ProcessConfig's (numbered anew here) */
		p->desired_rev = d->revision;
		return;
	}
	if (found && d->revision <= n->rev_at_start) { /* the store said so then: a predecessor's to write */
		p->desired_gen = found;
		if (procctl_client_config_is(p->c, d->payload, d->len))
			p->desired_rev = d->revision;
		else /* another config: a Publish or Clear over it, kept; not this one's */
			p->write_rev = n->rev_at_start;
		return;
	}
	if (d->len > p->payload_cap) {
		node_log(PROCCTL_LOG_WARN, "desired_too_big", "pid=%d revision=%llu bytes=%zu capacity=%u", (int)p->key.pid,
			 (unsigned long long)d->revision, d->len, p->payload_cap);
		p->too_big_rev = d->revision;
		return;
	}
	g = procctl_client_write(p->c, d->payload, d->len);
	proc_wrote(n, p, g, d->revision);
	node_log(g > 0 ? PROCCTL_LOG_INFO : PROCCTL_LOG_WARN, "desired_applied", "pid=%d revision=%llu generation=%lld%s%s",
		 (int)p->key.pid, (unsigned long long)d->revision, (long long)(g > 0 ? g : 0), g > 0 ? "" : " error=",
		 g > 0 ? "" : strerror((int)-g));
}

void desired_pods_synced(struct node *n)
{
	size_t i, k = 0;
	for (i = 0; i < n->nprocs; i++)
		if (n->procs[i]->apply_deferred) {
			n->procs[i]->apply_deferred = 0;
			desired_apply(n, n->procs[i]);
			k++;
		}
	node_log(PROCCTL_LOG_INFO, "desired_pods_known", "processes=%zu pods=%zu", k, n->kube.n);
}

static void emit_acked(struct node *n, const struct proc *p)
{
	struct arena a = {0};
	Procctl__V1__Acked m = PROCCTL__V1__ACKED__INIT;
	PbEvent ev = PROCCTL__V1__WATCH_EVENTS_RESPONSE__INIT;
	m.process = mk_ref(&a, p->key.pid, p->instance);
	m.generation = p->acked_gen;
	m.result = proc_ack_result(p);
	m.status = p->ack_status;
	ev.event_case = PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_ACKED;
	ev.acked = &m;
	if (!a.failed)
		node_emit(n, &p->key, &ev);
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
	node_emit(n, &p->key, &ev);
}

static struct proc *find_client(const procctl_client_t *c)
{
	return procctl_client_data(c);
}

/* What a read of p found: a new ack (Acked) and a changed block
 * (StateChanged, unless quiet), and the waits on p settled. */
static void proc_state_seen(struct node *n, struct proc *p, const struct procctl_state *st, int quiet)
{
	uint32_t h;
	int first = !p->have_state;
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
		n->stats.ack_hist[prom_bucket(ack_buckets, NBUCKETS, sec)]++;
		n->stats.ack_sum += sec;
		p->written_ns = 0;
	}
	if (!first && h != p->state_hash && !quiet)
		emit_state_changed(n, p);
	if (h != p->state_hash) /* its reports may have changed: read whether it rang or not */
		arbiters_kick(n, p->key.consumer);
	p->state_hash = h;
	waits_update(n, p, st);
}

static void emit_attached(struct node *n, struct proc *p)
{
	struct arena a = {0};
	Procctl__V1__ProcessAttached m = PROCCTL__V1__PROCESS_ATTACHED__INIT;
	PbEvent ev = PROCCTL__V1__WATCH_EVENTS_RESPONSE__INIT;
	p->announced = 1;
	m.process = mk_process(&a, p);
	ev.event_case = PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_ATTACHED;
	ev.attached = &m;
	if (!a.failed)
		node_emit(n, &p->key, &ev);
	ar_free(&a);
}

/* After p's first read: its desired config, its identity, Attached. */
static void proc_announce(struct node *n, struct proc *p)
{
	desired_apply(n, p);
	node_log(PROCCTL_LOG_INFO, "process_identity", "pid=%d consumer=%s version=%u instance=%016llx pod=%s container=%.12s",
		 (int)p->key.pid, p->key.consumer, p->key.version, (unsigned long long)p->instance,
		 p->key.pod_uid[0] ? p->key.pod_uid : "-", p->key.container_id[0] ? p->key.container_id : "-");
	emit_attached(n, p);
}

const struct read_sink procs_read_sink = {proc_state_seen, proc_announce};

static void on_attached(struct node *n, const struct procctl_event *e, procctl_registry_t *reg)
{
	struct procctl_client_info info;
	struct procctl_podid pod;
	struct proc *p;
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
	p->n = n;
	proc_reads_init(p);
	if (timer_arm(&n->timers, &p->t_poll, now_ns() + POLL_IDLE_NS) < 0) {
		free(p);
		goto nomem;
	}
	procctl_client_info(e->client, &info, sizeof info);
	p->c = procctl_client_ref(e->client);
	p->reg = reg;
	p->key.pid = info.pid;
	p->key.version = info.hdr.schema_version;
	memcpy(p->key.consumer, info.hdr.consumer, PROCCTL_CONSUMER_MAX);
	p->instance = info.hdr.instance_id;
	p->payload_cap = info.hdr.payload_cap;
	p->nspid_count = info.nspid_count;
	memcpy(p->nspid, info.nspid, sizeof p->nspid);
	/* Its start time, read while it still runs (its pidfd says so after):
	 * the pid is not another's yet. */
	if (procstat_ident(NULL, info.pid, &p->key.pid_start, &p->key.pid_image) < 0 || procctl_client_alive(p->c) < 0)
		p->key.pid_start = p->key.pid_image = 0;
	if ((r = procstat_who(NULL, info.pid, &p->uid, &p->gid, p->cgroup, sizeof p->cgroup)) < 0 || procctl_client_alive(p->c) < 0) {
		p->uid = (uid_t)-1; /* unknown: nobody's, admitted by no list */
		p->gid = (gid_t)-1;
		p->cgroup[0] = 0;
	}
	r = procctl_podid_read(NULL, info.pid, &pod);
	if (r == 0) {
		memcpy(p->key.pod_uid, pod.pod_uid, sizeof p->key.pod_uid);
		memcpy(p->key.container_id, pod.container_id, sizeof p->key.container_id);
		p->qos = pod.qos;
	} else if (r != -ENOENT && r != -ESRCH) {
		node_log(PROCCTL_LOG_WARN, "podid_unreadable", "pid=%d error=%s", (int)info.pid, strerror(-r));
	}
	p->first_gen = procctl_client_config_gen(p->c); /* a predecessor's config, or 0 */
	p->at = n->nprocs;
	n->procs[n->nprocs++] = p;
	procctl_client_set_data(p->c, p);
	/* The ack it holds now is part of what Attached says: said when its
	 * first read returns (or is late, and the process stalled). */
	proc_read_state(n, p, 1);
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
	struct proc *p;

	if (!(p = find_client(e->client)))
		return;
	if (!p->announced) /* gone before its first read returned: Attached first */
		emit_attached(n, p);
	proc_reads_gone(n, p, -ESRCH);
	waits_gone(n, p);
	ref.pid = p->key.pid;
	ref.instance_id = hexid(idbuf, p->instance);
	m.process = &ref;
	m.reason = e->reason == -ESRCH    ? PROCCTL__V1__DETACH_REASON__DETACH_REASON_EXITED
		   : e->reason == -ESTALE ? PROCCTL__V1__DETACH_REASON__DETACH_REASON_EXECED
					  : PROCCTL__V1__DETACH_REASON__DETACH_REASON_CLOSED;
	ev.event_case = PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_DETACHED;
	ev.detached = &m;
	node_emit(n, &p->key, &ev); /* the registry logged it */
	if (e->reason == -ESRCH || e->reason == -ESTALE)
		desired_process_gone(n, p->key.pid, p->key.pid_start);
	n->procs[p->at] = n->procs[--n->nprocs];
	n->procs[p->at]->at = p->at;
	procctl_client_set_data(p->c, NULL);
	timer_disarm(&n->timers, &p->t_poll);
	procctl_client_close(p->c);
	free(p);
}

/* The hello probe: pid said hello (0: records were lost). Every
 * registry looks: each attaches only its consumer's regions. */
void node_on_hello(pid_t pid, void *arg)
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

/* The hello probe: pid exec'd. A registry with regions of it drops them. */
void node_on_exec(pid_t pid, void *arg)
{
	struct node *n = arg;
	size_t i;
	for (i = 0; i < n->nreg; i++)
		procctl_registry_exec(n->reg[i], pid);
}

static void on_event(const struct procctl_event *e, void *arg)
{
	struct node *n = ((struct reg_arg *)arg)->n;
	struct proc *p;
	if (e->consumer)
		arbiters_kick(n, e->consumer); /* a target came, went, rang, or the lock moved */
	switch (e->type) {
	case PROCCTL_EV_ATTACHED:
		on_attached(n, e, ((struct reg_arg *)arg)->reg);
		break;
	case PROCCTL_EV_DETACHED:
		on_detached(n, e);
		break;
	case PROCCTL_EV_DOORBELL:
		if ((p = find_client(e->client))) {
			p->rings = 1;
			proc_read_state(n, p, 0);
			proc_poll_soon(n, p, now_ns()); /* unheard now (muted, written): polled */
		}
		break;
	case PROCCTL_EV_OWNERSHIP: {
		Procctl__V1__OwnershipChanged m = PROCCTL__V1__OWNERSHIP_CHANGED__INIT;
		PbEvent ev = PROCCTL__V1__WATCH_EVENTS_RESPONSE__INIT;
		struct selector k = {.always = 1};
		m.consumer = (char *)e->consumer;
		m.owner = e->held != 0;
		ev.event_case = PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_OWNERSHIP_CHANGED;
		ev.ownership_changed = &m;
		snprintf(k.consumer, sizeof k.consumer, "%s", e->consumer);
		node_emit(n, &k, &ev);
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
	case PROCCTL_EV_READY: /* its arbiters, kicked above, may grant now */
		break;
	}
}

/* Every event of a registry: handled, its time counted for the turn's
 * slow line (node.c's step_registries). */
void node_on_event(const struct procctl_event *e, void *arg)
{
	static const char *const names[] = {"", "attached", "detached", "ownership", "doorbell", "ready"};
	struct node *n = ((struct reg_arg *)arg)->n;
	int64_t start = now_ns(), ns;
	on_event(e, arg);
	ns = now_ns() - start;
	n->on_events++;
	n->on_events_ns += ns;
	if (ns >= n->on_event_worst_ns) {
		n->on_event_worst_ns = ns;
		n->on_event_worst = (unsigned)e->type < sizeof names / sizeof names[0] ? names[e->type] : "?";
		n->on_event_worst_pid = e->pid;
	}
}
