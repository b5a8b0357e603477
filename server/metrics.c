/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c - the Prometheus text exposition of the loop's state: its
 * processes, acks, arbiters and the fast-discovery probe. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_int.h"

const double ack_buckets[NBUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
				      0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};

static void metric_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A metric of one sample, without labels. */
static void metric_one(FILE *f, const char *name, const char *type, const char *help, unsigned long long v)
{
	metric_head(f, name, type, help);
	fprintf(f, "%s %llu\n", name, v);
}

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
static void processes(FILE *f, const struct node *n)
{
	static const char *const names[] = {"passive", "owned", "conflict", "broken"};
	struct own_key *k = malloc((n->nprocs ? n->nprocs : 1) * sizeof *k);
	size_t i, j, c;
	metric_head(f, "procctl_processes", "gauge",
		    "Attached processes (regions), by consumer and ownership (owned, passive, conflict, broken).");
	for (i = 0; k && i < n->nprocs; i++)
		k[i] = (struct own_key){n->procs[i]->key.consumer, (int)procctl_client_ownership(n->procs[i]->c)};
	if (k)
		qsort(k, n->nprocs, sizeof *k, own_cmp);
	for (i = 0; k && i < n->nprocs; i = j) {
		for (j = i + 1; j < n->nprocs && !own_cmp(&k[i], &k[j]); j++)
			;
		fprintf(f, "procctl_processes{consumer=\"%s\",ownership=\"%s\"} %zu\n", k[i].consumer,
			names[(unsigned)k[i].own < 4 ? k[i].own : 0], j - i);
	}
	/* A consumer named in the config with none: 0, not a missing series. */
	for (c = 0; c < n->cfg.nconsumers; c++) {
		for (i = 0; i < n->nprocs && strcmp(n->procs[i]->key.consumer, n->cfg.consumers[c]); i++)
			;
		for (j = 0; i == n->nprocs && j < 4; j++)
			fprintf(f, "procctl_processes{consumer=\"%s\",ownership=\"%s\"} 0\n", n->cfg.consumers[c], names[j]);
	}
	free(k);
	metric_head(f, "procctl_arbiter_refused_processes", "gauge",
		    "Attached processes an arbiter's admission refuses (its admit_ keys), by kind.");
	for (i = 0; i < n->narb; i++) {
		for (j = 0, c = 0; j < n->nprocs; j++)
			c += (n->procs[j]->refused & n->arb[i].bit) != 0;
		fprintf(f, "procctl_arbiter_refused_processes{kind=\"%s\"} %zu\n", n->arb[i].cfg->name, c);
	}
	metric_head(f, "procctl_processes_stalled", "gauge",
		    "Attached processes a read of whose state block is stuck (not read again until it returns).");
	for (i = j = 0; i < n->nprocs; i++)
		j += n->procs[i]->stalled != 0;
	fprintf(f, "procctl_processes_stalled %zu\n", j);
}

/* A counter summed over the registries' stats (a field of them, by offset). */
static void reg_counter(FILE *f, const struct procctl_registry_stats *rs, size_t nreg, const char *name,
			const char *help, size_t off, double scale)
{
	uint64_t sum = 0;
	size_t i;
	for (i = 0; i < nreg; i++)
		sum += *(const uint64_t *)(const void *)((const char *)&rs[i] + off);
	metric_head(f, name, "counter", help);
	if (scale == 1)
		fprintf(f, "%s %llu\n", name, (unsigned long long)sum);
	else
		fprintf(f, "%s %.9f\n", name, (double)sum * scale);
}

/* What the registries count: scans, attaches, rejections, heartbeats. */
static void registries(FILE *f, const struct node *n)
{
	struct procctl_registry_stats rs[NODE_CONSUMERS_MAX];
	size_t i, k;
	for (i = 0; i < n->nreg; i++)
		procctl_registry_stats(n->reg[i], &rs[i], sizeof rs[i]);
	reg_counter(f, rs, n->nreg, "procctl_scans_total", "Full scans of /proc.",
		    offsetof(struct procctl_registry_stats, scans), 1);
	reg_counter(f, rs, n->nreg, "procctl_scan_seconds_total", "Time spent in full scans of /proc.",
		    offsetof(struct procctl_registry_stats, scan_ns), 1e-9);
	reg_counter(f, rs, n->nreg, "procctl_targeted_scans_total",
		    "Scans of one process (the hello probe, a new mapping of a probed file).",
		    offsetof(struct procctl_registry_stats, targeted_scans), 1);
	reg_counter(f, rs, n->nreg, "procctl_attach_attempts_total", "Regions found and attach attempted.",
		    offsetof(struct procctl_registry_stats, attach_attempts), 1);
	metric_head(f, "procctl_attach_rejections_total", "counter", "Regions refused, by reason.");
	for (k = 1; k < PROCCTL_REJECT__COUNT; k++) {
		uint64_t sum = 0;
		for (i = 0; i < n->nreg; i++)
			sum += rs[i].rejects[k];
		fprintf(f, "procctl_attach_rejections_total{reason=\"%s\"} %llu\n", procctl_reject_name((enum procctl_reject)k),
			(unsigned long long)sum);
	}
	metric_head(f, "procctl_regions_over_cap", "gauge",
		    "Regions the last full scan left unattached for a cap (max_per_process, max_regions).");
	{
		uint64_t sum = 0;
		for (i = 0; i < n->nreg; i++)
			sum += rs[i].over_cap;
		fprintf(f, "procctl_regions_over_cap %llu\n", (unsigned long long)sum);
	}
	metric_head(f, "procctl_scan_denied", "gauge",
		    "Processes whose fd table the last full scan was refused (no CAP_SYS_PTRACE over them, or an LSM "
		    "such as AppArmor): their regions are not seen.");
	{
		uint32_t most = 0; /* each registry scans the same /proc */
		for (i = 0; i < n->nreg; i++)
			most = rs[i].scan_denied > most ? rs[i].scan_denied : most;
		fprintf(f, "procctl_scan_denied %u\n", most);
	}
	reg_counter(f, rs, n->nreg, "procctl_attach_denied_total",
		    "Attaches the kernel refused (pidfd_getfd, /proc/PID/mem): no CAP_SYS_PTRACE, or an LSM.",
		    offsetof(struct procctl_registry_stats, attach_denied), 1);
	reg_counter(f, rs, n->nreg, "procctl_links_held_elsewhere_total",
		    "Links found to a region attached through its creator, in another process (a forked child that "
		    "kept the fd, an agent that keeps fetched fds): skipped, not fetched.",
		    offsetof(struct procctl_registry_stats, held_elsewhere), 1);
	reg_counter(f, rs, n->nreg, "procctl_heartbeats_total", "Lease heartbeats written.",
		    offsetof(struct procctl_registry_stats, heartbeats), 1);
	reg_counter(f, rs, n->nreg, "procctl_lease_lapses_total",
		    "Heartbeats that came more than a lease after the one before: the processes may have seen their "
		    "lease expire.",
		    offsetof(struct procctl_registry_stats, lease_lapses), 1);
}

/* The fast-discovery probe. */
static void hello(FILE *f, const struct node *n)
{
	struct procctl_hello_stats hs;
	memset(&hs, 0, sizeof hs);
	if (n->hello)
		procctl_hello_stats(n->hello, &hs, sizeof hs);
	metric_one(f, "procctl_hello_available", "gauge",
		   "1 when the procctl:hello probe runs; 0 when it is off or not allowed here (new processes "
		   "are found at rescans).", n->hello != NULL);
	metric_one(f, "procctl_hello_uprobes_denied", "gauge",
		   "1 when the kernel refuses the probe's uprobes (they need CAP_SYS_ADMIN since Linux 6.16): "
		   "processes that map a file with the probe are scanned 5 times in their first 10 s instead.",
		   hs.uprobes_denied);
	metric_one(f, "procctl_hello_hits_total", "counter", "procctl:hello probes heard.", hs.hits);
	metric_one(f, "procctl_hello_files", "gauge", "Files (programs, libraries) with the probe, watched now.", hs.files);
	metric_one(f, "procctl_hello_uprobes", "gauge",
		   "Uprobe perf events open (probe sites times CPUs); each is closed at exit, slowly.", hs.uprobes);
	metric_one(f, "procctl_hello_files_read_total", "counter", "Executable files read for the probe's notes.", hs.files_read);
	metric_one(f, "procctl_hello_open_failures_total", "counter",
		   "Mapped files the probe could not open to read (no CAP_CHECKPOINT_RESTORE for a deleted or "
		   "unreachable file, no CAP_DAC_READ_SEARCH for one its owner alone may read).", hs.open_failures);
	metric_one(f, "procctl_hello_lost_total", "counter",
		   "Times perf records were lost (a full ring): a full scan followed.", hs.lost);
}

/* Writes, acks and their latency. */
static void acks(FILE *f, const struct node *n)
{
	uint64_t cum = 0;
	size_t k;
	metric_head(f, "procctl_publishes_total", "counter", "Configs written or cleared.");
	fprintf(f, "procctl_publishes_total %llu\n", (unsigned long long)n->stats.writes);
	metric_head(f, "procctl_acks_total", "counter", "Acks seen, by result.");
	fprintf(f, "procctl_acks_total{result=\"applied\"} %llu\n", (unsigned long long)n->stats.acks_applied);
	fprintf(f, "procctl_acks_total{result=\"rejected\"} %llu\n", (unsigned long long)n->stats.acks_rejected);
	metric_head(f, "procctl_publish_ack_seconds", "histogram", "From a config written to its ack seen.");
	for (k = 0; k < NBUCKETS; k++) {
		cum += n->stats.ack_hist[k];
		fprintf(f, "procctl_publish_ack_seconds_bucket{le=\"%g\"} %llu\n", ack_buckets[k], (unsigned long long)cum);
	}
	cum += n->stats.ack_hist[NBUCKETS];
	fprintf(f, "procctl_publish_ack_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
	fprintf(f, "procctl_publish_ack_seconds_sum %.9f\n", n->stats.ack_sum);
	fprintf(f, "procctl_publish_ack_seconds_count %llu\n", (unsigned long long)n->stats.ack_count);
}

/* One line per resource of every arbiter: value(snapshot) as fmt. */
static void per_resource(FILE *f, const struct node *n, const char *name, const char *type, const char *help,
			 double (*value)(const struct procctl_arbiter_snapshot *, int64_t now), const char *fmt)
{
	int64_t now = procctl_now_ns();
	char label[37];
	size_t i, j;
	metric_head(f, name, type, help);
	for (i = 0; i < n->narb; i++)
		for (j = 0; j < n->arb[i].nsnap; j++) {
			procctl_resource_id_format(n->arb[i].snap[j].res.id, label); /* GPU ids are UUIDs; the CLI shows every id so */
			fprintf(f, "%s{kind=\"%s\",resource=\"%s\"} ", name, n->arb[i].cfg->name, label);
			fprintf(f, fmt, value(&n->arb[i].snap[j], now));
			fputc('\n', f);
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
static void by_namespace(FILE *f, const struct node *n)
{
	static const char *const names[2] = {"procctl_resource_namespace_hold_seconds_total",
					     "procctl_resource_namespace_blocked_seconds_total"};
	static const char *const helps[2] = {
		"Time the resource was held under a live grant, by the namespace of the holder's pod (\"\": none known; "
		"past metrics_namespaces of them a resource, _other).",
		"Time the resource could not move while processes of the namespace wanted it (each waiting namespace "
		"counts the whole time: the sum over namespaces can pass procctl_resource_blocked_seconds_total)."};
	char label[37];
	size_t w, i, j;
	for (w = 0; w < 2; w++) {
		metric_head(f, names[w], "counter", helps[w]);
		for (i = 0; i < n->narb; i++)
			for (j = 0; j < n->arb[i].nnst; j++) {
				const struct ns_time *t = &n->arb[i].nst[j];
				procctl_resource_id_format(t->res.id, label);
				fprintf(f, "%s{kind=\"%s\",resource=\"%s\",namespace=\"%s\"} %.9f\n", names[w], n->arb[i].cfg->name,
					label, t->ns, (double)(w ? t->blocked_ns : t->hold_ns) / 1e9);
			}
	}
}

static void resources(FILE *f, const struct node *n)
{
	size_t i;
	metric_head(f, "procctl_arbiter_hold_seconds", "gauge", "The hold time (turn) an arbiter gives a holder, by kind.");
	for (i = 0; i < n->narb; i++)
		fprintf(f, "procctl_arbiter_hold_seconds{kind=\"%s\"} %.9f\n", n->arb[i].cfg->name,
			(double)n->arb[i].cfg->hold_ns / 1e9);
	per_resource(f, n, "procctl_resource_hold_seconds_total", "counter",
		     "Time the resource was held under a live grant.", hold_s, "%.9f");
	per_resource(f, n, "procctl_resource_blocked_seconds_total", "counter",
		     "Time someone wanted the resource while it could not move (PSI style).", blocked_s, "%.9f");
	per_resource(f, n, "procctl_resource_pending_release_seconds_total", "counter",
		     "Time revocations of the resource waited for their confirmation.", pending_s, "%.9f");
	per_resource(f, n, "procctl_resource_release_pending_age_seconds", "gauge",
		     "How long the revocation under way has waited for its confirmation; 0: none.", pending_age_s, "%.9f");
	per_resource(f, n, "procctl_resource_handoffs_total", "counter",
		     "Grants to a process other than the last holder.", handoffs, "%.0f");
	if (n->cfg.metrics_namespaces)
		by_namespace(f, n);
	per_resource(f, n, "procctl_resource_holder", "gauge", "1 while a process holds the resource.", held, "%.0f");
	per_resource(f, n, "procctl_resource_waiters", "gauge", "Processes that want the resource, the holder excluded.",
		     waiters, "%.0f");
}

/* The Prometheus text exposition (0.0.4) of everything the loop knows,
 * then what the hooks add (gRPC's calls and streams). */
static void waits(FILE *f, const struct node *n)
{
	const struct wait *w;
	size_t count = 0;
	for (w = n->waits; w; w = w->next)
		count++;
	metric_head(f, "procctl_waits", "gauge", "Calls waiting for acks (max_waits is the most).");
	fprintf(f, "procctl_waits %zu\n", count);
}

static void rollout_lines(FILE *f, const char *name, const struct desired_rollout *r)
{
	static const char *const state[] = {"applied", "rejected", "pending", "superseded", "not_owned"};
	const uint32_t count[] = {r->applied, r->rejected, r->pending, r->superseded, r->not_owned};
	size_t k;
	for (k = 0; k < sizeof count / sizeof count[0]; k++)
		fprintf(f, "procctl_desired_processes{desired=\"%s\",state=\"%s\"} %u\n", name, state[k], count[k]);
}

/* Per [desired NAME] section (names are [a-z0-9_.-]: nothing to escape),
 * and the configs set through the API summed under desired="" (one per
 * pod or process: unbounded, so never a series each). */
static void rollout(FILE *f, const struct node *n)
{
	struct desired_rollout *r = calloc(n->desired.n ? n->desired.n : 1, sizeof *r), api = {0, 0, 0, 0, 0};
	size_t i, apis = 0;
	if (!r)
		return;
	rollout_count(n, r);
	metric_head(f, "procctl_desired_processes", "gauge",
		    "Processes a desired config is the config for, by how far it got to them: applied, rejected, "
		    "pending, superseded (by a Publish or Clear) or not_owned (not this daemon's to write); "
		    "desired: its config file section, \"\" for those set through the API, summed.");
	for (i = 0; i < n->desired.n; i++) {
		if (n->desired.v[i].source[0]) {
			rollout_lines(f, n->desired.v[i].source, &r[i]);
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
		rollout_lines(f, "", &api);
	free(r);
}

/* The pods of the node the API server told of (kubernetes_api; none when off). */
static void kube(FILE *f, const struct node *n)
{
	struct kubewatch_stats st;
	if (!n->kube.kw)
		return;
	kubewatch_stats(n->kube.kw, &st);
	metric_one(f, "procctl_kube_synced", "gauge", "1 once the node's pods were listed from the Kubernetes API.",
		   (unsigned long long)st.synced);
	metric_one(f, "procctl_kube_pods", "gauge", "Pods of this node known from the Kubernetes API.", n->kube.n);
	metric_one(f, "procctl_kube_pods_dropped", "gauge",
		   "Pods of this node not kept: kubernetes_pods_max were (a later list keeps them when there is room).",
		   n->kube.dropped);
	metric_one(f, "procctl_kube_lists_total", "counter", "Lists of the node's pods (at the start, and after a 410 Gone).",
		   st.lists);
	metric_one(f, "procctl_kube_watch_events_total", "counter",
		   "Watch events of the node's pods (added, modified, deleted).", st.events);
	metric_one(f, "procctl_kube_gone_total", "counter",
		   "Watches the API server answered 410 Gone (the resourceVersion was too old): listed again.", st.gone);
	metric_one(f, "procctl_kube_api_errors_total", "counter",
		   "Requests to the Kubernetes API that failed (no connection, an HTTP error, a body that did not parse).",
		   st.errors);
	metric_one(f, "procctl_kube_rejected_total", "counter",
		   "Objects from the Kubernetes API that were no valid Pod (skipped).", st.rejected);
}

char *node_render_metrics(struct node *n, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	metric_head(f, "procctl_build_info", "gauge", "procctl-node's version and API; always 1.");
	fprintf(f, "procctl_build_info{version=\"%s\",api=\"procctl.v1\",wire=\"%u.%u\"} 1\n", PROCCTL_NODE_VERSION,
		(unsigned)PROCCTL_VERSION_MAJOR, (unsigned)PROCCTL_VERSION_MINOR);
	metric_head(f, "procctl_ready", "gauge", "1 once every registry finished its first full scan.");
	fprintf(f, "procctl_ready %d\n", node_ready(n));
	processes(f, n);
	registries(f, n);
	hello(f, n);
	metric_head(f, "procctl_ownership_changes_total", "counter",
		    "Node locks taken or given up (hand-offs between daemons).");
	fprintf(f, "procctl_ownership_changes_total %llu\n", (unsigned long long)n->stats.ownership_changes);
	acks(f, n);
	resources(f, n);
	waits(f, n);
	metric_head(f, "procctl_desired_configs", "gauge", "Desired configs kept (desired_max is the most).");
	fprintf(f, "procctl_desired_configs %zu\n", n->desired.n);
	metric_head(f, "procctl_desired_bytes", "gauge", "Their payload bytes (desired_bytes_max is the most).");
	fprintf(f, "procctl_desired_bytes %zu\n", desired_bytes(&n->desired));
	rollout(f, n);
	kube(f, n);
	metric_head(f, "procctl_watch_events_total", "counter", "Events numbered for WatchEvents.");
	fprintf(f, "procctl_watch_events_total %llu\n", (unsigned long long)events_last(n->ev));
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
