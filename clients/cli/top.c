/* SPDX-License-Identifier: Apache-2.0 */
/* top.c - procctl top: a live view of a node. The processes come from a
 * WatchEvents stream (its snapshot, then attached, detached and acked
 * events): no process is read for it. Each refresh asks ListArbiters once
 * for the resources' holders, times and waiters; the grants and releases
 * of the stream draw who held each resource over the last minute. A
 * frame fits the terminal's width (80 columns when it is not one); with
 * -o json each frame is one JSON line. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pb_grpc.h"
#include "pbjson.h"

#define HISTORY_MS 60000 /* the bar: the last minute, one cell a second */
#define CELLS (HISTORY_MS / 1000)
#define SEGS 128         /* hold segments kept per resource */

struct tproc {
	int32_t pid;
	char instance[17], consumer[32];
	uint64_t gen, acked;
	int ack_result;
};

struct seg {
	int32_t pid;
	int64_t from, to; /* ms (CLOCK_MONOTONIC); to 0: still held */
};

struct hist {
	char kind[32], id[40];
	struct seg seg[SEGS]; /* a ring: the last nseg, seg[(head - 1) % SEGS] the newest */
	unsigned head, nseg;
};

struct top {
	struct tproc *procs;
	size_t nprocs, cap;
	struct hist *hist;
	size_t nhist;
	Procctl__V1__ListArbitersResponse *arb; /* the last refresh's */
	int width, rows;
};

static void copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

/* ---- the processes, from the stream ---------------------------------- */

static struct tproc *proc_of(struct top *t, int32_t pid, int add)
{
	size_t i;
	for (i = 0; i < t->nprocs; i++)
		if (t->procs[i].pid == pid)
			return &t->procs[i];
	if (!add)
		return NULL;
	if (t->nprocs == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct tproc *p = realloc(t->procs, cap * sizeof *p);
		if (!p)
			return NULL;
		t->procs = p;
		t->cap = cap;
	}
	memset(&t->procs[t->nprocs], 0, sizeof *t->procs);
	t->procs[t->nprocs].pid = pid;
	return &t->procs[t->nprocs++];
}

static void proc_set(struct top *t, const Procctl__V1__Process *m)
{
	struct tproc *p;
	if (!m || !m->ref || !(p = proc_of(t, m->ref->pid, 1)))
		return;
	copy(p->instance, sizeof p->instance, m->ref->instance_id);
	copy(p->consumer, sizeof p->consumer, m->consumer);
	p->gen = m->generation;
	p->acked = m->acked_generation;
	p->ack_result = m->ack_result;
}

/* ---- who held what, from grants and releases -------------------------- */

static struct hist *hist_find(const struct top *t, const char *kind, const char *id)
{
	size_t i;
	for (i = 0; i < t->nhist; i++)
		if (!strcmp(t->hist[i].kind, kind) && !strcmp(t->hist[i].id, id))
			return &t->hist[i];
	return NULL;
}

static struct hist *hist_of(struct top *t, const char *kind, const char *id)
{
	struct hist *h = hist_find(t, kind, id);
	if (h)
		return h;
	if (t->nhist >= 4096 || !(h = realloc(t->hist, (t->nhist + 1) * sizeof *h))) /* 64 resources an arbiter */
		return NULL;
	t->hist = h;
	h = &t->hist[t->nhist++];
	memset(h, 0, sizeof *h);
	copy(h->kind, sizeof h->kind, kind);
	copy(h->id, sizeof h->id, id);
	return h;
}

static struct seg *newest(struct hist *h)
{
	return h->nseg ? &h->seg[(h->head + SEGS - 1) % SEGS] : NULL;
}

/* pid holds it from `from` on (0: nobody does from then). */
static void hist_hold(struct hist *h, int32_t pid, int64_t from)
{
	struct seg *s = newest(h);
	if (s && !s->to && s->pid == pid)
		return;
	if (s && !s->to)
		s->to = from;
	if (!pid)
		return;
	h->seg[h->head] = (struct seg){pid, from, 0};
	h->head = (h->head + 1) % SEGS;
	if (h->nseg < SEGS)
		h->nseg++;
}

static void on_event(struct top *t, const Procctl__V1__WatchEventsResponse *e)
{
	size_t i;
	struct hist *h;
	switch (e->event_case) {
	case PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_SNAPSHOT:
		t->nprocs = 0;
		for (i = 0; i < e->snapshot->n_processes; i++)
			proc_set(t, e->snapshot->processes[i]);
		break;
	case PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_ATTACHED:
		proc_set(t, e->attached->process);
		break;
	case PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_DETACHED:
		if (e->detached->process) {
			struct tproc *p = proc_of(t, e->detached->process->pid, 0);
			if (p)
				*p = t->procs[--t->nprocs];
		}
		break;
	case PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_ACKED:
		if (e->acked->process) {
			struct tproc *p = proc_of(t, e->acked->process->pid, 0);
			if (p) {
				p->acked = e->acked->generation;
				p->gen = p->gen > p->acked ? p->gen : p->acked;
				p->ack_result = e->acked->result;
			}
		}
		break;
	case PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_RESOURCE_GRANTED:
		if ((h = hist_of(t, e->resource_granted->kind, e->resource_granted->id)))
			hist_hold(h, e->resource_granted->holder ? e->resource_granted->holder->pid : 0, cli_now_ms());
		break;
	case PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_RESOURCE_RELEASED:
		if ((h = hist_of(t, e->resource_released->kind, e->resource_released->id)) && newest(h) &&
		    e->resource_released->holder && newest(h)->pid == e->resource_released->holder->pid)
			hist_hold(h, 0, cli_now_ms());
		break;
	default:
		break;
	}
}

/* The arbiters now; a holder the stream has not told of (its grant came
 * before the stream began) starts its segment when the arbiter says. */
static void refresh_arbiters(struct top *t)
{
	grpc_status_code st;
	char *details = NULL;
	Procctl__V1__ListArbitersRequest rq = PROCCTL__V1__LIST_ARBITERS_REQUEST__INIT;
	Procctl__V1__ListArbitersResponse *r = (void *)call_for("/procctl.v1.NodeService/ListArbiters", &rq.base,
								 &procctl__v1__list_arbiters_response__descriptor,
								 cli_timeout_ms, &st, &details);
	size_t i, j;
	gpr_free(details);
	if (!r)
		return; /* the last one stays: a daemon without arbiters answers too */
	if (t->arb)
		protobuf_c_message_free_unpacked(&t->arb->base, NULL);
	t->arb = r;
	for (i = 0; i < r->n_arbiters; i++)
		for (j = 0; j < r->arbiters[i]->n_resources; j++) {
			const Procctl__V1__ArbiterResource *x = r->arbiters[i]->resources[j];
			struct hist *h = hist_of(t, x->kind, x->id);
			int32_t pid = x->holder ? x->holder->pid : 0;
			struct seg *s = h ? newest(h) : NULL;
			if (h && pid && !(s && !s->to && s->pid == pid))
				hist_hold(h, pid, cli_now_ms() - (int64_t)(x->held_ns / 1000000));
			else if (h && !pid && s && !s->to)
				hist_hold(h, 0, cli_now_ms());
		}
}

/* ---- a frame ---------------------------------------------------------- */

/* One line, cut to the width. */
static void line(const struct top *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(const struct top *t, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if ((int)strlen(buf) > t->width)
		buf[t->width] = 0;
	printf("%s\n", buf);
}

/* The holder's letter in the bar: by first appearance in the window. */
static char letter(int32_t *seen, int *nseen, int32_t pid)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	int i;
	for (i = 0; i < *nseen; i++)
		if (seen[i] == pid)
			break;
	if (i == *nseen && *nseen < (int)sizeof abc - 1)
		seen[(*nseen)++] = pid;
	return i < (int)sizeof abc - 1 ? abc[i] : '*';
}

/* The last minute of h, a cell a second: who held it most of that second. */
static void bar(const struct hist *h, int64_t now, char cells[CELLS + 1], int32_t *seen, int *nseen)
{
	int c;
	unsigned k;
	for (c = 0; c < CELLS; c++) {
		int64_t lo = now - HISTORY_MS + (int64_t)c * 1000, hi = lo + 1000, most = 0;
		int32_t who = 0;
		for (k = 0; k < h->nseg; k++) {
			const struct seg *s = &h->seg[(h->head + SEGS - 1 - k) % SEGS];
			int64_t a = s->from > lo ? s->from : lo, b = (s->to ? s->to : now) < hi ? (s->to ? s->to : now) : hi;
			if (b - a > most) {
				most = b - a;
				who = s->pid;
			}
		}
		cells[c] = who ? letter(seen, nseen, who) : '.';
	}
	cells[CELLS] = 0;
}

static void frame_arbiters(const struct top *t, int64_t now, int *used)
{
	size_t i, j, k;
	for (i = 0; t->arb && i < t->arb->n_arbiters; i++) {
		const Procctl__V1__Arbiter *a = t->arb->arbiters[i];
		for (j = 0; j < a->n_resources; j++) {
			const Procctl__V1__ArbiterResource *x = a->resources[j];
			const struct hist *h = hist_find(t, x->kind, x->id);
			char cells[CELLS + 1], waiting[256], legend[256];
			int32_t seen[52];
			int nseen = 0, n;
			line(t, "%s %s  hold %.1fs  handoffs %llu", a->kind, x->id, (double)a->hold_ns / 1e9,
			     (unsigned long long)x->handoffs);
			for (k = 0, n = 0; k < x->n_waiting && n < (int)sizeof waiting - 16; k++)
				n += snprintf(waiting + n, sizeof waiting - (size_t)n, " %d", x->waiting[k]->pid);
			if (x->waiters > x->n_waiting)
				snprintf(waiting + n, sizeof waiting - (size_t)n, " +%u", x->waiters - (unsigned)x->n_waiting);
			if (!x->waiters)
				snprintf(waiting, sizeof waiting, " -");
			if (x->holder && x->holder->pid)
				line(t, "  holder %d for %.1fs  blocked %.1fs  waiting%s", x->holder->pid,
				     (double)x->held_ns / 1e9, (double)x->blocked_ns_total / 1e9, waiting);
			else
				line(t, "  free  blocked %.1fs  waiting%s", (double)x->blocked_ns_total / 1e9, waiting);
			if (h) {
				bar(h, now, cells, seen, &nseen);
				line(t, "  |%s| last 60s", cells);
				for (k = 0, n = 0; (int)k < nseen && n < (int)sizeof legend - 16; k++)
					n += snprintf(legend + n, sizeof legend - (size_t)n, "%s%c=%d", k ? " " : "",
						      letter(seen, &nseen, seen[k]), seen[k]);
				legend[n] = 0;
				if (nseen)
					line(t, "   %s", legend);
				*used += 1 + (nseen > 0);
			}
			*used += 2;
		}
	}
}

static void frame_table(const struct top *t, int64_t now)
{
	char when[16];
	time_t wall = time(NULL);
	int used = 2, room;
	size_t i;
	strftime(when, sizeof when, "%H:%M:%S", localtime(&wall));
	if (isatty(STDOUT_FILENO)) {
		fflush(stdout);
		if (write(STDOUT_FILENO, "\033[H\033[2J", 7) < 0)
			return; /* the terminal went away */
	}
	line(t, "procctl top  %s  processes %zu  arbiters %zu  %s", when, t->nprocs, t->arb ? t->arb->n_arbiters : 0,
	     target_name());
	line(t, "%s", "");
	frame_arbiters(t, now, &used);
	line(t, "%-8s %-20s %8s %8s %-8s", "PID", "CONSUMER", "GEN", "ACKED", "ACK");
	room = t->rows ? t->rows - used - 2 : (int)t->nprocs;
	for (i = 0; i < t->nprocs && (int)i < room; i++) {
		const struct tproc *p = &t->procs[i];
		line(t, "%-8d %-20s %8llu %8llu %-8s", p->pid, p->consumer, (unsigned long long)p->gen,
		     (unsigned long long)p->acked,
		     p->ack_result ? short_enum(&procctl__v1__ack_result__descriptor, p->ack_result, "ACK_RESULT_") : "-");
	}
	if (i < t->nprocs)
		line(t, "... %zu more", t->nprocs - i);
	if (!isatty(STDOUT_FILENO))
		printf("\n");
	fflush(stdout);
}

/* A frame as one JSON line: the processes, the arbiters as the API gives
 * them, and each resource's holds over the last minute. */
static void frame_json(const struct top *t, int64_t now)
{
	json_t *o = json_object(), *ps = json_array(), *hs = json_array();
	size_t i;
	unsigned k;
	char *s;
	for (i = 0; i < t->nprocs; i++) {
		const struct tproc *p = &t->procs[i];
		json_array_append_new(ps, json_pack("{s:i,s:s,s:s,s:I,s:I,s:s}", "pid", (int)p->pid, "instanceId",
						    p->instance, "consumer", p->consumer, "generation", (json_int_t)p->gen,
						    "ackedGeneration", (json_int_t)p->acked, "ackResult",
						    p->ack_result ? short_enum(&procctl__v1__ack_result__descriptor,
									       p->ack_result, "ACK_RESULT_")
								  : "UNSPECIFIED"));
	}
	for (i = 0; i < t->nhist; i++) {
		const struct hist *h = &t->hist[i];
		json_t *segs = json_array();
		for (k = h->nseg; k-- > 0;) {
			const struct seg *s = &h->seg[(h->head + SEGS - 1 - k) % SEGS];
			int64_t to = s->to ? s->to : now;
			if (to > now - HISTORY_MS)
				json_array_append_new(segs, json_pack("{s:i,s:I,s:I}", "pid", (int)s->pid, "fromMs",
								      (json_int_t)(s->from - now), "toMs",
								      (json_int_t)(to - now)));
		}
		json_array_append_new(hs, json_pack("{s:s,s:s,s:o}", "kind", h->kind, "id", h->id, "holds", segs));
	}
	json_object_set_new(o, "processes", ps);
	if (t->arb) {
		json_t *a = pbjson_from(&t->arb->base);
		json_object_set(o, "arbiters", a ? json_object_get(a, "arbiters") : NULL);
		json_decref(a);
	} else {
		json_object_set_new(o, "arbiters", json_array());
	}
	json_object_set_new(o, "holds", hs);
	if ((s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII))) {
		printf("%s\n", s);
		free(s);
	}
	json_decref(o);
	fflush(stdout);
}

int cmd_top(const struct opts *o)
{
	Procctl__V1__WatchEventsRequest rq = PROCCTL__V1__WATCH_EVENTS_REQUEST__INIT;
	struct top t;
	struct pb_stream s;
	struct winsize ws;
	int64_t end = o->for_ms ? cli_now_ms() + o->for_ms : 0, next;
	long frames = 0;
	int r = 0, rc = 0;

	if (no_operands(o))
		return 2;
	memset(&t, 0, sizeof t);
	t.width = 80;
	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) {
		t.width = ws.ws_col;
		t.rows = ws.ws_row;
	}
	if (connected() < 0)
		return 1;
	rq.filter = (Procctl__V1__Selector *)&o->sel;
	if (pb_stream_start(&s, cli_ch, cli_cq, "/procctl.v1.NodeService/WatchEvents", gpr_inf_future(GPR_CLOCK_REALTIME),
			    &rq.base) < 0) {
		fprintf(stderr, "procctl: WatchEvents: the call could not start\n");
		return 1;
	}
	/* The first frame shows the processes: wait for the snapshot, at
	 * most --timeout. */
	{
		ProtobufCMessage *m;
		r = pb_stream_wait(&s, &procctl__v1__watch_events_response__descriptor,
				   gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(cli_timeout_ms, GPR_TIMESPAN)),
				   &m);
		if (r == 1 && m) {
			on_event(&t, (const Procctl__V1__WatchEventsResponse *)m);
			protobuf_c_message_free_unpacked(m, NULL);
		}
	}
	for (next = cli_now_ms(); r >= 0;) {
		ProtobufCMessage *m;
		if (cli_now_ms() >= next) {
			refresh_arbiters(&t);
			if (cli_json)
				frame_json(&t, cli_now_ms());
			else
				frame_table(&t, cli_now_ms());
			next += o->interval_ms;
			if ((o->count && ++frames >= o->count) || (end && cli_now_ms() >= end))
				break;
		}
		r = pb_stream_wait(&s, &procctl__v1__watch_events_response__descriptor,
				   gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
						gpr_time_from_millis(next - cli_now_ms() > 0 ? next - cli_now_ms() : 0, GPR_TIMESPAN)),
				   &m);
		if (r == 1 && m) {
			on_event(&t, (const Procctl__V1__WatchEventsResponse *)m);
			protobuf_c_message_free_unpacked(m, NULL);
		}
	}
	if (r < 0) {
		char *details = NULL;
		grpc_status_code st = pb_stream_end(&s, 0, &details);
		if (st == GRPC_STATUS_OK)
			fprintf(stderr, "procctl: the daemon ended the stream\n");
		else
			say_failure(st, details);
		gpr_free(details);
		rc = 1;
	} else {
		pb_stream_end(&s, 1, NULL);
	}
	if (t.arb)
		protobuf_c_message_free_unpacked(&t.arb->base, NULL);
	free(t.procs);
	free(t.hist);
	return rc;
}
