/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c - the Prometheus text exposition of the loop's state: its
 * processes, acks, arbiters and the fast-discovery probe. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_int.h"
#include "hellothread.h"
#include "sys/prom.h"

const double ack_buckets[NBUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
				      0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
const double turn_buckets[NTURN_BUCKETS] = {0.00001, 0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5};

#define COUNTER(name, unit, help) (&(const struct prom_family){name, PROM_COUNTER, unit, help})
#define GAUGE(name, unit, help) (&(const struct prom_family){name, PROM_GAUGE, unit, help})

struct own_key {
	const char *consumer;
	int own; /* enum procctl_ownership */
};

static int own_cmp(const void *a, const void *b)
{
	const struct own_key *x = a, *y = b;
	int c = strcmp(x->consumer, y->consumer);
	return c ? c : x->own - y->own;
}

/* Processes by consumer and how this daemon stands with each region:
 * sorted, then counted in runs. */
static void processes(struct prom *p, const struct node *n)
{
	static const char *const names[] = {"passive", "owned", "conflict", "broken"};
	struct own_key *k = malloc((n->nprocs ? n->nprocs : 1) * sizeof *k);
	size_t i, j, c;
	prom_family(p, GAUGE("procctl_processes", NULL,
			     "Attached processes (regions), by consumer and ownership (owned, passive, conflict, broken)."));
	for (i = 0; k && i < n->nprocs; i++)
		k[i] = (struct own_key){n->procs[i]->key.consumer, (int)procctl_client_ownership(n->procs[i]->c)};
	if (k)
		qsort(k, n->nprocs, sizeof *k, own_cmp);
	for (i = 0; k && i < n->nprocs; i = j) {
		for (j = i + 1; j < n->nprocs && !own_cmp(&k[i], &k[j]); j++)
			;
		prom_int(p, PROM_LABELS({"consumer", k[i].consumer}, {"ownership", names[(unsigned)k[i].own < 4 ? k[i].own : 0]}),
			 j - i);
	}
	/* A consumer named in the config with none: 0, not a missing series. */
	for (c = 0; c < n->cfg.nconsumers; c++) {
		for (i = 0; i < n->nprocs && strcmp(n->procs[i]->key.consumer, n->cfg.consumers[c]); i++)
			;
		for (j = 0; i == n->nprocs && j < 4; j++)
			prom_int(p, PROM_LABELS({"consumer", n->cfg.consumers[c]}, {"ownership", names[j]}), 0);
	}
	free(k);
	prom_family(p, GAUGE("procctl_arbiter_refused_processes", NULL,
			     "Attached processes an arbiter's admission refuses (its admit_ keys), by kind."));
	for (i = 0; i < n->narb; i++) {
		for (j = 0, c = 0; j < n->nprocs; j++)
			c += (n->procs[j]->refused & n->arb[i].bit) != 0;
		prom_int(p, PROM_LABELS({"kind", n->arb[i].cfg->name}), c);
	}
	for (i = j = 0; i < n->nprocs; i++)
		j += n->procs[i]->stalled != 0;
	prom_one(p, GAUGE("procctl_processes_stalled", NULL,
		     "Attached processes a read of whose state block is stuck (not read again until it returns)."),
	    j);
	for (i = j = 0; i < n->nprocs; i++)
		j += timer_armed(&n->procs[i]->t_poll) || n->procs[i]->rd;
	prom_one(p, GAUGE("procctl_processes_polled", NULL,
		     "Attached processes whose state block is read on a timer, not on their doorbell (the first "
		     "read after attach, a waiting call's, a doorbell not heard: each second), or is being read: 0 "
		     "on an idle node."),
	    j);
}

/* A counter summed over the registries' stats (a field of them, by
 * offset): an integer, or nanoseconds as seconds (unit "seconds"). */
static void reg_counter(struct prom *p, const struct procctl_registry_stats *rs, size_t nreg, const char *name,
			const char *unit, const char *help, size_t off)
{
	uint64_t sum = 0;
	size_t i;
	for (i = 0; i < nreg; i++)
		sum += *(const uint64_t *)(const void *)((const char *)&rs[i] + off);
	prom_family(p, COUNTER(name, unit, help));
	if (unit)
		prom_real(p, PROM_NOLABELS, (double)sum * 1e-9);
	else
		prom_int(p, PROM_NOLABELS, sum);
}

#define REG_FIELD(f) offsetof(struct procctl_registry_stats, f)

/* What the registries count: scans, attaches, rejections, heartbeats. */
static void registries(struct prom *p, const struct node *n)
{
	struct procctl_registry_stats rs[NODE_CONSUMERS_MAX];
	uint64_t sum;
	uint32_t most;
	size_t i, k;
	for (i = 0; i < n->nreg; i++)
		procctl_registry_stats(n->reg[i], &rs[i], sizeof rs[i]);
	reg_counter(p, rs, n->nreg, "procctl_scans_total", NULL, "Full scans of /proc.", REG_FIELD(scans));
	reg_counter(p, rs, n->nreg, "procctl_scan_seconds_total", "seconds", "Time spent in full scans of /proc.",
		    REG_FIELD(scan_ns));
	reg_counter(p, rs, n->nreg, "procctl_targeted_scans_total", NULL,
		    "Scans of one process (the hello probe, a new mapping of a probed file).", REG_FIELD(targeted_scans));
	reg_counter(p, rs, n->nreg, "procctl_attach_attempts_total", NULL, "Regions found and attach attempted.",
		    REG_FIELD(attach_attempts));
	prom_family(p, COUNTER("procctl_attach_rejections_total", NULL, "Regions refused, by reason."));
	for (k = 1; k < PROCCTL_REJECT__COUNT; k++) {
		for (i = 0, sum = 0; i < n->nreg; i++)
			sum += rs[i].rejects[k];
		prom_int(p, PROM_LABELS({"reason", procctl_reject_name((enum procctl_reject)k)}), sum);
	}
	for (i = 0, sum = 0; i < n->nreg; i++)
		sum += rs[i].over_cap;
	prom_one(p, GAUGE("procctl_regions_over_cap", NULL,
		     "Regions the last full scan left unattached for a cap (max_per_process, max_regions)."),
	    sum);
	for (i = 0, most = 0; i < n->nreg; i++) /* each registry scans the same /proc */
		most = rs[i].scan_denied > most ? rs[i].scan_denied : most;
	prom_one(p, GAUGE("procctl_scan_denied", NULL,
		     "Processes whose fd table the last full scan was refused (no CAP_SYS_PTRACE over them, or an LSM "
		     "such as AppArmor): their regions are not seen."),
	    most);
	reg_counter(p, rs, n->nreg, "procctl_attach_denied_total", NULL,
		    "Attaches the kernel refused (pidfd_getfd, /proc/PID/mem): no CAP_SYS_PTRACE, or an LSM.",
		    REG_FIELD(attach_denied));
	reg_counter(p, rs, n->nreg, "procctl_links_held_elsewhere_total", NULL,
		    "Links found to a region attached through its creator, in another process (a forked child that "
		    "kept the fd, an agent that keeps fetched fds): skipped, not fetched.",
		    REG_FIELD(held_elsewhere));
	reg_counter(p, rs, n->nreg, "procctl_event_sockets_refused_total", NULL,
		    "Regions attached without the event socket their header names (not an AF_UNIX SOCK_SEQPACKET "
		    "socket of the process, or not fetched): their programs' event loops get no wake (logged: "
		    "event_fd_refused).",
		    REG_FIELD(event_fd_refused));
	reg_counter(p, rs, n->nreg, "procctl_heartbeats_total", NULL, "Lease heartbeats written.", REG_FIELD(heartbeats));
	reg_counter(p, rs, n->nreg, "procctl_lease_lapses_total", NULL,
		    "Heartbeats that came more than a lease after the one before: the processes may have seen their "
		    "lease expire.",
		    REG_FIELD(lease_lapses));
}

/* The fast-discovery probe. */
static void hello(struct prom *p, const struct node *n)
{
	struct procctl_hello_stats hs;
	memset(&hs, 0, sizeof hs);
	if (n->hello)
		hellothread_stats(n->hello, &hs);
	prom_one(p, GAUGE("procctl_hello_available", NULL,
		     "1 when the procctl:hello probe runs; 0 when it is off or not allowed here (new processes "
		     "are found at rescans)."),
	    n->hello != NULL);
	prom_one(p, GAUGE("procctl_hello_uprobes_denied", NULL,
		     "1 when the kernel refuses the probe's uprobes (they need CAP_SYS_ADMIN since Linux 6.16): "
		     "processes that map a file with the probe are scanned 5 times in their first 10 s instead."),
	    hs.uprobes_denied);
	prom_one(p, COUNTER("procctl_hello_hits_total", NULL, "procctl:hello probes heard."), hs.hits);
	prom_one(p, GAUGE("procctl_hello_files", NULL, "Files (programs, libraries) with the probe, watched now."), hs.files);
	prom_one(p, GAUGE("procctl_hello_uprobes", NULL,
		     "Uprobe perf events open (probe sites times CPUs); each is closed at exit, slowly."),
	    hs.uprobes);
	prom_one(p, COUNTER("procctl_hello_files_read_total", NULL, "Executable files read for the probe's notes."),
	    hs.files_read);
	prom_one(p, COUNTER("procctl_hello_open_failures_total", NULL,
		       "Mapped files the probe could not open to read (no CAP_CHECKPOINT_RESTORE for a deleted or "
		       "unreachable file, no CAP_DAC_READ_SEARCH for one its owner alone may read)."),
	    hs.open_failures);
	prom_one(p, COUNTER("procctl_hello_lost_total", NULL, "Times perf records were lost (a full ring): a full scan followed."),
	    hs.lost);
	prom_family(p, COUNTER("procctl_hello_files_refused_total", NULL,
			       "Mappings of files with the probe that got none, by the bound reached: all (1,024 files or "
			       "the probe fds, half the fd limit), others (the owners but root together: 64 files or a "
			       "quarter of the fds), owner (32 files of one owner but root), closing (while probes were "
			       "closing: not root's, unless 16 of root's wait already), churn (its owner rewrote a probed file in the last minute). Their "
			       "processes are found by rechecks (5 in 10 s) and rescans."));
	prom_int(p, PROM_LABELS({"limit", "all"}), hs.skipped_all);
	prom_int(p, PROM_LABELS({"limit", "others"}), hs.skipped_others);
	prom_int(p, PROM_LABELS({"limit", "owner"}), hs.skipped_owner);
	prom_int(p, PROM_LABELS({"limit", "closing"}), hs.skipped_closing);
	prom_int(p, PROM_LABELS({"limit", "churn"}), hs.skipped_churn);
	prom_one(p, GAUGE("procctl_hello_owners_cooling", NULL,
		     "Owners (uids but root) whose files get no probe for a minute: they rewrote a probed file "
		     "(each rewrite costs a close of its probes, and closes hold the kernel's event_mutex)."),
	    hs.owners_cooling);
}

/* Writes, acks and their latency. */
static void acks(struct prom *p, const struct node *n)
{
	prom_one(p, COUNTER("procctl_publishes_total", NULL, "Configs written or cleared."), n->stats.writes);
	prom_family(p, COUNTER("procctl_acks_total", NULL, "Acks seen, by result."));
	prom_int(p, PROM_LABELS({"result", "applied"}), n->stats.acks_applied);
	prom_int(p, PROM_LABELS({"result", "rejected"}), n->stats.acks_rejected);
	prom_family(p, &(const struct prom_family){"procctl_publish_ack_seconds", PROM_HISTOGRAM, "seconds",
						  "From a config written to its ack seen."});
	prom_histogram(p, PROM_NOLABELS, ack_buckets, NBUCKETS, n->stats.ack_hist, n->stats.ack_sum);
}

/* The loop's turns: from poll's return to its next call. */
static void turns(struct prom *p, const struct node *n)
{
	char help[200];
	prom_family(p, &(const struct prom_family){"procctl_loop_turn_seconds", PROM_HISTOGRAM, "seconds",
						  "The event loop's turns, from its wake to its next wait: the time "
						  "every request and event waits behind."});
	prom_histogram(p, PROM_NOLABELS, turn_buckets, NTURN_BUCKETS, n->stats.turn_hist, n->stats.turn_sum);
	snprintf(help, sizeof help, "Turns of the event loop over slow_turn_ms (%u ms); each is logged as slow_turn "
		 "(at most one line a second).", n->cfg.slow_turn_ms);
	prom_one(p, COUNTER("procctl_loop_slow_turns_total", NULL, help), n->stats.slow_turns);
}

/* One series per resource of every arbiter: value(snapshot). */
static void per_resource(struct prom *p, const struct node *n, const struct prom_family *f,
			 double (*value)(const struct procctl_arbiter_snapshot *, int64_t now))
{
	int64_t now = procctl_now_ns();
	char label[37];
	size_t i, j;
	prom_family(p, f);
	for (i = 0; i < n->narb; i++)
		for (j = 0; j < n->arb[i].nsnap; j++) {
			const struct prom_label l[] = {{"kind", n->arb[i].cfg->name}, {"resource", label}};
			double v = value(&n->arb[i].snap[j], now);
			procctl_resource_id_format(n->arb[i].snap[j].res.id, label); /* GPU ids are UUIDs; the CLI shows every id so */
			if (f->unit)
				prom_real(p, l, 2, v);
			else
				prom_int(p, l, 2, (uint64_t)v);
		}
}
static double hold_s(const struct procctl_arbiter_snapshot *s, int64_t now)
{
	(void)now;
	return (double)s->hold_ns_total / 1e9;
}

static double blocked_s(const struct procctl_arbiter_snapshot *s, int64_t now)
{
	(void)now;
	return (double)s->blocked_ns / 1e9;
}

static double pending_s(const struct procctl_arbiter_snapshot *s, int64_t now)
{
	(void)now;
	return (double)s->pending_ns / 1e9;
}

static double handoffs(const struct procctl_arbiter_snapshot *s, int64_t now)
{
	(void)now;
	return (double)s->handoffs;
}

static double held(const struct procctl_arbiter_snapshot *s, int64_t now)
{
	(void)now;
	return s->holder_pid != 0;
}

static double waiters(const struct procctl_arbiter_snapshot *s, int64_t now)
{
	(void)now;
	return s->waiters;
}

/* How long the revocation under way has waited for its confirmation. */
static double pending_age_s(const struct procctl_arbiter_snapshot *s, int64_t now)
{
	return s->pending_since_ns && now > (int64_t)s->pending_since_ns ? (double)(now - (int64_t)s->pending_since_ns) / 1e9
									  : 0;
}

/* metrics_namespaces: hold and blocked time by namespace (bounded: so
 * many a resource, and _other). */
static void by_namespace(struct prom *p, const struct node *n)
{
	static const struct prom_family f[2] = {
		{"procctl_resource_namespace_hold_seconds_total", PROM_COUNTER, "seconds",
		 "Time the resource was held under a live grant, by the namespace of the holder's pod (\"\": none known; "
		 "past metrics_namespaces of them a resource, _other)."},
		{"procctl_resource_namespace_blocked_seconds_total", PROM_COUNTER, "seconds",
		 "Time the resource could not move while processes of the namespace wanted it (each waiting namespace "
		 "counts the whole time: the sum over namespaces can pass procctl_resource_blocked_seconds_total)."}};
	char label[37];
	size_t w, i, j;
	for (w = 0; w < 2; w++) {
		prom_family(p, &f[w]);
		for (i = 0; i < n->narb; i++)
			for (j = 0; j < n->arb[i].nnst; j++) {
				const struct ns_time *t = &n->arb[i].nst[j];
				procctl_resource_id_format(t->res.id, label);
				prom_real(p, PROM_LABELS({"kind", n->arb[i].cfg->name}, {"resource", label}, {"namespace", t->ns}),
					  (double)(w ? t->blocked_ns : t->hold_ns) / 1e9);
			}
	}
}

static void resources(struct prom *p, const struct node *n)
{
	size_t i;
	prom_family(p, GAUGE("procctl_arbiter_hold_seconds", "seconds",
			     "The hold time (turn) an arbiter gives a holder, by kind."));
	for (i = 0; i < n->narb; i++)
		prom_real(p, PROM_LABELS({"kind", n->arb[i].cfg->name}), (double)n->arb[i].cfg->hold_ns / 1e9);
	per_resource(p, n, COUNTER("procctl_resource_hold_seconds_total", "seconds",
				   "Time the resource was held under a live grant."), hold_s);
	per_resource(p, n, COUNTER("procctl_resource_blocked_seconds_total", "seconds",
				   "Time someone wanted the resource while it could not move (PSI style)."), blocked_s);
	per_resource(p, n, COUNTER("procctl_resource_pending_release_seconds_total", "seconds",
				   "Time revocations of the resource waited for their confirmation."), pending_s);
	per_resource(p, n, GAUGE("procctl_resource_release_pending_age_seconds", "seconds",
				 "How long the revocation under way has waited for its confirmation; 0: none."),
		     pending_age_s);
	per_resource(p, n, COUNTER("procctl_resource_handoffs_total", NULL,
				   "Grants to a process other than the last holder."), handoffs);
	if (n->cfg.metrics_namespaces)
		by_namespace(p, n);
	per_resource(p, n, GAUGE("procctl_resource_holder", NULL, "1 while a process holds the resource."), held);
	per_resource(p, n, GAUGE("procctl_resource_waiters", NULL, "Processes that want the resource, the holder excluded."),
		     waiters);
}

static void waits(struct prom *p, const struct node *n)
{
	const struct wait *w;
	size_t count = 0;
	for (w = n->waits; w; w = w->next)
		count++;
	prom_one(p, GAUGE("procctl_waits", NULL, "Calls waiting for acks (max_waits is the most)."), count);
}

static void rollout_lines(struct prom *p, const char *name, const struct desired_rollout *r)
{
	static const char *const state[] = {"applied", "rejected", "pending", "superseded", "not_owned"};
	const uint32_t count[] = {r->applied, r->rejected, r->pending, r->superseded, r->not_owned};
	size_t k;
	for (k = 0; k < sizeof count / sizeof count[0]; k++)
		prom_int(p, PROM_LABELS({"desired", name}, {"state", state[k]}), count[k]);
}

/* Per [desired NAME] section, and the configs set through the API summed
 * under desired="" (one per pod or process: unbounded, so never a series
 * each). */
static void rollout(struct prom *p, const struct node *n)
{
	struct desired_rollout *r = calloc(n->desired.n ? n->desired.n : 1, sizeof *r), api;
	size_t i, apis = 0;
	memset(&api, 0, sizeof api);
	prom_family(p, GAUGE("procctl_desired_processes", NULL,
			     "Processes a desired config is the config for, by how far it got to them: applied, rejected, "
			     "pending, superseded (by a Publish or Clear) or not_owned (not this daemon's to write); "
			     "desired: its config file section, \"\" for those set through the API, summed."));
	if (!r)
		return;
	rollout_count(n, r);
	for (i = 0; i < n->desired.n; i++) {
		if (n->desired.v[i].source[0]) {
			rollout_lines(p, n->desired.v[i].source, &r[i]);
			continue;
		}
		api.applied += r[i].applied;
		api.rejected += r[i].rejected;
		api.pending += r[i].pending;
		api.superseded += r[i].superseded;
		api.not_owned += r[i].not_owned;
		apis++;
	}
	if (apis)
		rollout_lines(p, "", &api);
	free(r);
}

/* The pods of the node the API server told of (kubernetes_api; none when off). */
static void kube(struct prom *p, const struct node *n)
{
	struct kubewatch_stats st;
	if (!n->kube.kw)
		return;
	kubewatch_stats(n->kube.kw, &st);
	prom_one(p, GAUGE("procctl_kube_synced", NULL,
			 "1 while the node's pods are listed and followed; 0 before the first list is in the table, and "
			 "from a failed request to the Kubernetes API until a list or a watch works again."),
	    st.synced && n->kube.synced); /* the watch's word, and the loop's: the list may still be on its way */
	prom_one(p, GAUGE("procctl_kube_pods", NULL, "Pods of this node known from the Kubernetes API."), n->kube.n);
	prom_one(p, GAUGE("procctl_kube_pods_dropped", NULL,
		     "Pods of this node not kept: kubernetes_pods_max were (a later list keeps them when there is room)."),
	    n->kube.dropped);
	prom_one(p, COUNTER("procctl_kube_lists_total", NULL,
			   "Lists of the node's pods (at the start, after a 410 Gone, and for room past kubernetes_pods_max)."),
	    st.lists);
	prom_one(p, COUNTER("procctl_kube_watch_events_total", NULL, "Watch events of the node's pods (added, modified, deleted)."),
	    st.events);
	prom_one(p, COUNTER("procctl_kube_gone_total", NULL,
		       "Watches the API server answered 410 Gone (the resourceVersion was too old): listed again."),
	    st.gone);
	prom_one(p, COUNTER("procctl_kube_api_errors_total", NULL,
		       "Requests to the Kubernetes API that failed (no connection, an HTTP error, a body that did not parse)."),
	    st.errors);
	prom_one(p, COUNTER("procctl_kube_rejected_total", NULL, "Objects from the Kubernetes API that were no valid Pod (skipped)."),
	    st.rejected);
}

/* The cluster's ProcessConfigs (kubernetes_processconfigs; none when off). */
static void pconfigs(struct prom *p, const struct node *n)
{
	struct kubewatch_stats st;
	struct kubewrite_stats ws;
	if (!n->pconfigs.kw)
		return;
	kubewatch_stats(n->pconfigs.kw, &st);
	prom_one(p, GAUGE("procctl_kube_processconfigs_synced", NULL,
			 "1 while the ProcessConfigs are listed and followed; 0 before the first list is taken in, and "
			 "from a failed request until a list or a watch works again."),
	    st.synced && n->pconfigs.synced);
	prom_one(p, GAUGE("procctl_kube_processconfigs", NULL, "ProcessConfig objects whose config is kept (in every namespace)."),
	    n->desired.kn);
	prom_one(p, GAUGE("procctl_kube_processconfigs_bytes", NULL, "Their payloads' bytes."), n->pconfigs.bytes);
	prom_one(p, GAUGE("procctl_kube_processconfigs_dropped", NULL,
		     "ProcessConfig objects not kept: kubernetes_processconfigs_max were (a later list keeps them when there "
		     "is room)."),
	    n->pconfigs.dropped);
	prom_one(p, COUNTER("procctl_kube_processconfigs_refused_total", NULL,
			   "ProcessConfig objects (or changes of one) refused: a spec that does not hold, or no room for "
			   "its payload under kubernetes_processconfigs_bytes_max."),
	    n->pconfigs.refused);
	prom_one(p, COUNTER("procctl_kube_processconfigs_lists_total", NULL, "Lists of the ProcessConfigs."), st.lists);
	prom_one(p, COUNTER("procctl_kube_processconfigs_api_errors_total", NULL,
			   "Requests for the ProcessConfigs that failed (no connection, an HTTP error, a body that did not "
			   "parse; 404: the CRD is not installed)."),
	    st.errors);
	kubewrite_stats(n->pconfigs.wr, &ws);
	prom_family(p, COUNTER("procctl_kube_writes_total", NULL,
			       "Writes to the Kubernetes API (each ProcessConfig's status entry of this node, and Events), by "
			       "result: sent; retried (429, 5xx, no answer: sent again); failed (another answer: dropped); "
			       "refused (too many waiting)."));
	prom_int(p, PROM_LABELS({"result", "sent"}), ws.sent);
	prom_int(p, PROM_LABELS({"result", "retried"}), ws.retried);
	prom_int(p, PROM_LABELS({"result", "failed"}), ws.failed);
	prom_int(p, PROM_LABELS({"result", "refused"}), ws.refused);
}

void node_render_metrics(struct node *n, struct prom *p)
{
	char version[32];
	snprintf(version, sizeof version, "%u.%u", (unsigned)PROCCTL_VERSION_MAJOR, (unsigned)PROCCTL_VERSION_MINOR);
	prom_family(p, GAUGE("procctl_build_info", NULL, "procctl-node's version and API; always 1."));
	prom_int(p, PROM_LABELS({"version", PROCCTL_NODE_VERSION}, {"api", "procctl.v1"}, {"wire", version}), 1);
	/* n->ready as node_ready reads it: the loop (node.c) calls this file, not the other way. */
	prom_one(p, GAUGE("procctl_ready", NULL, "1 once every registry finished its first full scan."),
		 (uint64_t)__atomic_load_n(&n->ready, __ATOMIC_ACQUIRE));
	processes(p, n);
	registries(p, n);
	hello(p, n);
	prom_one(p, COUNTER("procctl_ownership_changes_total", NULL, "Node locks taken or given up (hand-offs between daemons)."),
	    n->stats.ownership_changes);
	acks(p, n);
	turns(p, n);
	resources(p, n);
	waits(p, n);
	prom_one(p, GAUGE("procctl_desired_configs", NULL, "Desired configs kept (desired_max is the most)."), n->desired.n);
	prom_one(p, GAUGE("procctl_desired_bytes", "bytes", "Their payload bytes (desired_bytes_max is the most)."),
	    desired_bytes(&n->desired));
	rollout(p, n);
	kube(p, n);
	pconfigs(p, n);
	prom_one(p, COUNTER("procctl_watch_events_total", NULL, "Events numbered for WatchEvents."), events_last(n->ev));
	prom_one(p, GAUGE("procctl_watch_history_bytes", "bytes",
			  "Memory the event history holds (watch_history events at most): the slots written and their "
			  "packed events' allocations."),
		 events_bytes(n->ev));
	prom_family(p, COUNTER("procctl_watch_snapshots_total", NULL,
			       "WatchEvents' snapshots: built, or shared (the one built for the watch just before, with the "
			       "same filter and nothing between them)."));
	prom_int(p, PROM_LABELS({"how", "built"}), n->stats.snapshots_built);
	prom_int(p, PROM_LABELS({"how", "shared"}), n->stats.snapshots_shared);
}
