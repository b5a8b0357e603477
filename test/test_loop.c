/* SPDX-License-Identifier: Apache-2.0 */
/* procctl-node's loop, its parts on their own (server/node/node_int.h): a
 * Selector of the API taken as a filter, the processes a filter matches
 * and their order, /metrics rendered from a fixed state, and waits ended
 * by their timers (wait_ms, or the call's deadline first). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node/node_int.h"
#include "sys/prom.h"
#include "th.h"

static void selectors(void **state)
{
	PbSelector s = PROCCTL__V1__SELECTOR__INIT;
	struct selector k;
	const char *why = NULL;
	(void)state;
	assert_int_equal(selector_from_pb(NULL, &k, &why), NODE_OK); /* none: matches anything */
	assert_int_equal(k.pid, 0);
	s.consumer = "echo";
	s.schema_version = 2;
	s.pod_uid = "8c9b4f3e-1a2b-4c5d-9e8f-0a1b2c3d4e5f";
	s.container_id = "abc123";
	assert_int_equal(selector_from_pb(&s, &k, &why), NODE_OK);
	assert_string_equal(k.consumer, "echo");
	assert_int_equal(k.version, 2);
	s.consumer = "Echo";
	assert_int_equal(selector_from_pb(&s, &k, &why), NODE_INVALID_ARGUMENT);
	assert_non_null(strstr(why, "selector.consumer"));
	s.consumer = "echo";
	s.pod_uid = "My-Pod";
	assert_int_equal(selector_from_pb(&s, &k, &why), NODE_INVALID_ARGUMENT);
	assert_non_null(strstr(why, "selector.pod_uid"));
	s.pod_uid = "";
	s.container_id = "XYZ";
	assert_int_equal(selector_from_pb(&s, &k, &why), NODE_INVALID_ARGUMENT);
	assert_non_null(strstr(why, "selector.container_id"));
}

static struct proc *proc(pid_t pid, uint64_t instance, const char *consumer, const char *pod)
{
	struct proc *p = calloc(1, sizeof *p);
	assert_non_null(p);
	p->key.pid = pid;
	p->key.version = 1;
	snprintf(p->key.consumer, sizeof p->key.consumer, "%s", consumer);
	snprintf(p->key.pod_uid, sizeof p->key.pod_uid, "%s", pod);
	p->instance = instance;
	return p;
}

static void matching_in_pid_order(void **state)
{
	struct node *n = calloc(1, sizeof *n);
	struct proc *table[5], **v = NULL;
	struct selector f;
	ssize_t c;
	size_t i;
	(void)state;
	assert_non_null(n);
	table[0] = proc(30, 1, "echo", "");
	table[1] = proc(10, 9, "echo", "aa");
	table[2] = proc(20, 1, "token", "");
	table[3] = proc(10, 2, "echo", "");
	table[4] = proc(5, 1, "echo", "aa");
	n->procs = table;
	n->nprocs = 5;
	memset(&f, 0, sizeof f);
	snprintf(f.consumer, sizeof f.consumer, "echo");
	c = procs_matching(n, &f, NULL, &v);
	assert_int_equal(c, 4); /* pid, then instance */
	assert_ptr_equal(v[0], table[4]);
	assert_ptr_equal(v[1], table[3]);
	assert_ptr_equal(v[2], table[1]);
	assert_ptr_equal(v[3], table[0]);
	free(v);
	snprintf(f.pod_uid, sizeof f.pod_uid, "aa");
	c = procs_matching(n, &f, NULL, &v);
	assert_int_equal(c, 2);
	assert_ptr_equal(v[0], table[4]);
	assert_ptr_equal(v[1], table[1]);
	free(v);
	for (i = 0; i < 5; i++)
		free(table[i]);
	free(n);
}

/* One line of text, whole. */
static void has_line(const char *text, const char *line)
{
	char want[256];
	snprintf(want, sizeof want, "\n%s\n", line);
	if (!strstr(text, want))
		fail_msg("no line \"%s\" in:\n%s", line, text);
}

static void metrics_of_a_fixed_state(void **state)
{
	struct node *n = calloc(1, sizeof *n);
	struct node_arbiter_cfg *ac;
	struct procctl_arbiter_snapshot *sn;
	struct prom *p;
	size_t len = 0;
	char *text, why[160];
	(void)state;
	assert_non_null(n);
	assert_non_null(n->ev = events_new(16));
	ac = &n->cfg.arbiters[0];
	snprintf(ac->name, sizeof ac->name, "gpu");
	ac->kind = 1;
	n->cfg.narbiters = 1;
	n->narb = 1;
	n->arb[0].cfg = ac;
	n->arb[0].nsnap = 1;
	sn = &n->arb[0].snap[0];
	sn->res.kind = 1;
	sn->res.id[0] = 0x5a;
	sn->res.id[15] = 0x6c;
	sn->hold_ns_total = 1500000000;
	sn->blocked_ns = 250000000;
	sn->handoffs = 4;
	sn->holder_pid = 42;
	sn->waiters = 2;
	n->stats.writes = 3;
	n->stats.acks_applied = 2;
	n->stats.acks_rejected = 1;
	n->stats.ack_hist[0] = 1; /* <= 100 us */
	n->stats.ack_hist[3] = 1; /* <= 1 ms */
	n->stats.ack_hist[NBUCKETS] = 1; /* over 10 s */
	n->stats.ack_sum = 12.5;
	n->stats.turn_hist[1] = 5; /* <= 100 us */
	n->stats.turn_hist[NTURN_BUCKETS] = 1; /* over 5 s */
	n->stats.turn_sum = 6.25;
	n->stats.slow_turns = 1;
	n->cfg.slow_turn_ms = 50;
	assert_non_null(p = prom_new());
	node_render_metrics(n, p);
	assert_int_equal(prom_finish(p, &text, &len, why, sizeof why), 0);
	assert_int_equal(strlen(text), len);
	has_line(text, "procctl_resource_hold_seconds_total{kind=\"gpu\",resource=\"5a000000-0000-0000-0000-00000000006c\"} "
		       "1.500000000");
	has_line(text, "procctl_resource_blocked_seconds_total{kind=\"gpu\",resource=\"5a000000-0000-0000-0000-00000000006c\"} "
		       "0.250000000");
	has_line(text, "procctl_resource_handoffs_total{kind=\"gpu\",resource=\"5a000000-0000-0000-0000-00000000006c\"} 4");
	has_line(text, "procctl_resource_holder{kind=\"gpu\",resource=\"5a000000-0000-0000-0000-00000000006c\"} 1");
	has_line(text, "procctl_resource_waiters{kind=\"gpu\",resource=\"5a000000-0000-0000-0000-00000000006c\"} 2");
	has_line(text, "procctl_publishes_total 3");
	has_line(text, "procctl_acks_total{result=\"rejected\"} 1");
	has_line(text, "procctl_publish_ack_seconds_bucket{le=\"0.0001\"} 1"); /* cumulative */
	has_line(text, "procctl_publish_ack_seconds_bucket{le=\"0.0005\"} 1");
	has_line(text, "procctl_publish_ack_seconds_bucket{le=\"0.001\"} 2");
	has_line(text, "procctl_publish_ack_seconds_bucket{le=\"10\"} 2");
	has_line(text, "procctl_publish_ack_seconds_bucket{le=\"+Inf\"} 3");
	has_line(text, "procctl_publish_ack_seconds_count 3");
	has_line(text, "procctl_publish_ack_seconds_sum 12.500000000");
	has_line(text, "# TYPE procctl_loop_turn_seconds histogram");
	has_line(text, "procctl_loop_turn_seconds_bucket{le=\"1e-05\"} 0");
	has_line(text, "procctl_loop_turn_seconds_bucket{le=\"0.0001\"} 5");
	has_line(text, "procctl_loop_turn_seconds_bucket{le=\"5\"} 5");
	has_line(text, "procctl_loop_turn_seconds_bucket{le=\"+Inf\"} 6");
	has_line(text, "procctl_loop_turn_seconds_count 6");
	has_line(text, "procctl_loop_slow_turns_total 1");
	has_line(text, "procctl_hello_available 0");
	has_line(text, "procctl_watch_events_total 0");
	has_line(text, "procctl_watch_history_bytes 0");
	has_line(text, "# TYPE procctl_resource_holder gauge");
	free(text);
	events_free(n->ev);
	free(n);
}

/* The history's memory grows as its slots are written, to cap of them,
 * and not after: a ring full of events the size of those it drops holds
 * what it held. */
static void history_bytes_bounded(void **state)
{
	struct events *ev;
	struct selector k;
	char bytes[64] = "";
	size_t one, full;
	int i;
	(void)state;
	memset(&k, 0, sizeof k);
	assert_non_null(ev = events_new(4));
	assert_int_equal(events_bytes(ev), 0);
	assert_true(events_append(ev, &k, bytes, 10) == 1);
	one = events_bytes(ev);
	assert_true(one > 10); /* the slot besides the event's allocation */
	for (i = 2; i <= 4; i++)
		assert_true(events_append(ev, &k, bytes, 10) == i);
	full = events_bytes(ev);
	assert_int_equal(full, 4 * one);
	for (i = 5; i <= 40; i++)
		assert_true(events_append(ev, &k, bytes, 10) == i);
	assert_int_equal(events_bytes(ev), full);
	assert_true(events_append(ev, &k, bytes, 60) == 41); /* in the place of one of 10 */
	assert_true(events_bytes(ev) >= full + 50 - 16); /* malloc's rounding: at most 15 bytes more each */
	for (i = 42; i <= 44; i++)
		assert_true(events_append(ev, &k, bytes, 10) == i);
	assert_true(events_append(ev, &k, bytes, 10) == 45); /* the one of 60 dropped */
	assert_int_equal(events_bytes(ev), full);
	events_free(ev);
}

struct answer {
	int got;
	enum node_code code;
	char msg[128];
	Procctl__V1__PublishStatus status[4];
	size_t n;
};

static void on_reply(struct node_job *job, enum node_code code, const char *msg, const ProtobufCMessage *resp)
{
	struct answer *a = job->ctx;
	const Procctl__V1__PublishResponse *r = (const void *)resp;
	size_t i;
	a->got++;
	a->code = code;
	snprintf(a->msg, sizeof a->msg, "%s", msg ? msg : "");
	for (i = 0; r && i < r->n_results && i < 4; i++)
		a->status[i] = r->results[i]->status;
	a->n = r ? r->n_results : 0;
}

static const struct node_reply_ops answer_ops = {on_reply, NULL};

static struct node_job *publish_job(struct answer *a, int64_t call_deadline, const char *peer, uint64_t id)
{
	struct node_job *job = calloc(1, sizeof *job);
	assert_non_null(job);
	job->method = NODE_PUBLISH;
	job->deadline_ns = call_deadline;
	job->ops = &answer_ops;
	job->ctx = a;
	job->id = id;
	snprintf(job->peer, sizeof job->peer, "%s", peer);
	return job;
}

static struct wait *publish_wait(struct node *n, struct answer *a, int64_t call_deadline, uint32_t wait_ms)
{
	struct wait *w = wait_new(n, publish_job(a, call_deadline, "", 0), 2, wait_ms);
	assert_non_null(w);
	/* Item 0 waits on a generation; item 1 was answered at once. */
	w->item[0].gen = 7;
	w->item[0].status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_PENDING;
	w->item[1].status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_GONE;
	w->item[1].done = 1;
	w->open--;
	wait_start(n, w);
	return w;
}

static void waits_end_by_their_timers(void **state)
{
	struct node *n = calloc(1, sizeof *n);
	struct answer a = {0}, b = {0};
	struct wait *w;
	int64_t now = procctl_now_ns();
	(void)state;
	assert_non_null(n);
	n->cfg.max_wait_ms = 60000;
	n->cfg.max_waits = n->cfg.max_waits_per_peer = 100;
	/* wait_ms first: answered with what it has, the open item PENDING. */
	w = publish_wait(n, &a, INT64_MAX, 50);
	assert_int_equal(w->call_deadline, 0);
	assert_true(timers_next(&n->timers) <= now + 50 * MS + 10 * MS);
	waits_sweep(n, 0);
	assert_int_equal(a.got, 0); /* open, and its time is not up */
	assert_int_equal(timers_run(&n->timers, w->deadline_ns - 1), 0);
	assert_int_equal(timers_run(&n->timers, w->deadline_ns), 1);
	waits_sweep(n, 0);
	assert_int_equal(a.got, 1);
	assert_int_equal(a.code, NODE_OK);
	assert_int_equal(a.n, 2);
	assert_int_equal(a.status[0], PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_PENDING);
	assert_int_equal(a.status[1], PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_GONE);
	assert_null(n->waits);
	assert_int_equal(timers_next(&n->timers), INT64_MAX); /* its timer went with it */

	/* The call's deadline first: DEADLINE_EXCEEDED, not a partial answer. */
	w = publish_wait(n, &b, now + 10 * MS, 60000);
	assert_int_equal(w->call_deadline, 1);
	assert_int_equal(w->deadline_ns, now + 10 * MS);
	assert_int_equal(timers_run(&n->timers, now + 10 * MS), 1);
	waits_sweep(n, 0);
	assert_int_equal(b.got, 1);
	assert_int_equal(b.code, NODE_DEADLINE_EXCEEDED);
	assert_non_null(strstr(b.msg, "deadline"));

	/* Settled before its time: answered at once, its timer disarmed. */
	memset(&a, 0, sizeof a);
	w = publish_wait(n, &a, INT64_MAX, 60000);
	w->item[0].status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_APPLIED;
	w->item[0].done = 1;
	w->open--;
	waits_sweep(n, 0);
	assert_int_equal(a.got, 1);
	assert_int_equal(a.status[0], PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_APPLIED);
	assert_int_equal(timers_next(&n->timers), INT64_MAX);

	/* Shutting down: every wait answered. */
	memset(&a, 0, sizeof a);
	publish_wait(n, &a, INT64_MAX, 60000);
	waits_sweep(n, 1);
	assert_int_equal(a.got, 1);
	assert_int_equal(a.code, NODE_OK);
	timers_free(&n->timers);
	free(n);
}

/* A wait admitted for peer's job id, open (it waits for an ack). */
/* A wait of a caller of class k, started: NULL when it was refused. */
static struct wait *class_wait(struct node *n, struct answer *a, const char *peer, enum node_peer_class k, uint64_t id)
{
	struct node_job *job = publish_job(a, INT64_MAX, peer, id);
	struct wait *w;
	job->peer_class = k;
	if (!(w = wait_new(n, job, 1, 1000)))
		return NULL;
	w->item[0].gen = 7;
	wait_start(n, w);
	return w;
}

static void open_wait(struct node *n, struct answer *a, const char *peer, uint64_t id)
{
	assert_non_null(class_wait(n, a, peer, NODE_PEER_WRITER, id));
}

/* A node for waits alone: max_wait_ms 1000, max_waits and its per peer. */
static struct node *wait_node(uint32_t max, uint32_t per_peer)
{
	struct node *n = calloc(1, sizeof *n);
	assert_non_null(n);
	n->cfg.max_wait_ms = 1000;
	n->cfg.max_waits = max;
	n->cfg.max_waits_per_peer = per_peer;
	return n;
}

/* Room others may not take: read-only callers hold a quarter of
 * max_waits at most, whatever their addresses, and the last eighth is
 * root's. */
static void waits_keep_room_for_writers_and_root(void **state)
{
	struct node *n = wait_node(16, 100);
	struct answer a[20];
	char peer[32];
	uint64_t i;
	(void)state;
	memset(a, 0, sizeof a);
	for (i = 0; i < 4; i++) {
		snprintf(peer, sizeof peer, "addr:10.0.0.%u", (unsigned)i);
		assert_non_null(class_wait(n, &a[i], peer, NODE_PEER_READER, i + 1));
	}
	assert_null(class_wait(n, &a[4], "addr:10.0.0.9", NODE_PEER_READER, 5));
	assert_int_equal(a[4].code, NODE_RESOURCE_EXHAUSTED);
	assert_non_null(strstr(a[4].msg, "read-only"));
	/* writers take 14 in all (16 less its eighth) */
	for (i = 5; i < 15; i++)
		assert_non_null(class_wait(n, &a[i], "uid:1000", NODE_PEER_WRITER, i + 1));
	assert_null(class_wait(n, &a[15], "x509:CN=other", NODE_PEER_WRITER, 16));
	assert_non_null(strstr(a[15].msg, "max_waits:"));
	/* root the last two */
	assert_non_null(class_wait(n, &a[16], "uid:0", NODE_PEER_ROOT, 17));
	assert_non_null(class_wait(n, &a[17], "uid:0", NODE_PEER_ROOT, 18));
	assert_null(class_wait(n, &a[18], "uid:0", NODE_PEER_ROOT, 19));
	assert_non_null(strstr(a[18].msg, "max_waits:"));
	waits_sweep(n, 1);
	timers_free(&n->timers);
	free(n);
}

/* Waits are bounded (the time, in all, per peer) and end at once when
 * their call is cancelled. */
static void waits_bounded_and_cancelled(void **state)
{
	struct node *n = wait_node(4, 2);
	struct answer a[8];
	struct wait *w;
	int i;
	(void)state;
	memset(a, 0, sizeof a);
	/* over max_wait_ms: refused before anything is written */
	assert_null(wait_new(n, publish_job(&a[0], INT64_MAX, "ipv4:10.0.0.1:1", 1), 1, 1001));
	assert_int_equal(a[0].code, NODE_INVALID_ARGUMENT);
	assert_non_null(strstr(a[0].msg, "max_wait_ms"));
	/* two from one peer, the third refused; another peer still served */
	for (i = 1; i <= 2; i++)
		open_wait(n, &a[i], "ipv4:10.0.0.1:1", (uint64_t)i);
	assert_null(wait_new(n, publish_job(&a[3], INT64_MAX, "ipv4:10.0.0.1:1", 3), 1, 1000));
	assert_int_equal(a[3].code, NODE_RESOURCE_EXHAUSTED);
	assert_non_null(strstr(a[3].msg, "max_waits_per_peer"));
	for (i = 4; i <= 5; i++)
		open_wait(n, &a[i], "ipv4:10.0.0.2:1", (uint64_t)i);
	/* four in all: a fifth peer too is refused */
	assert_null(wait_new(n, publish_job(&a[6], INT64_MAX, "ipv4:10.0.0.3:1", 6), 1, 1000));
	assert_non_null(strstr(a[6].msg, "max_waits:"));
	/* no wait asked for (wait_ms 0): never refused */
	w = wait_new(n, publish_job(&a[7], INT64_MAX, "ipv4:10.0.0.3:1", 7), 1, 0);
	assert_non_null(w);
	w->item[0].status = PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_WRITTEN;
	w->item[0].done = 1;
	w->open--;
	wait_start(n, w);
	waits_sweep(n, 0);
	assert_int_equal(a[7].got, 1);
	/* the call of job 2 is gone: its wait ends at the sweep, CANCELLED;
	 * an unknown or zero id ends nothing */
	waits_cancel(n, 2);
	waits_sweep(n, 0);
	assert_int_equal(a[2].got, 1);
	assert_int_equal(a[2].code, NODE_CANCELLED);
	waits_cancel(n, 2);
	waits_cancel(n, 0);
	waits_cancel(n, 99);
	waits_sweep(n, 0);
	assert_int_equal(a[1].got + a[4].got + a[5].got, 0);
	/* room again for the first peer */
	open_wait(n, &a[3], "ipv4:10.0.0.1:1", 8);
	waits_sweep(n, 1);
	timers_free(&n->timers);
	free(n);
}

/* A log value's inside: quotes and backslashes escaped, other bytes as
 * \xNN, cut to fit without splitting an escape. */
static void log_values_escaped(void **state)
{
	char q[64], small[8];
	(void)state;
	assert_string_equal(node_log_quote(q, sizeof q, "plain"), "plain");
	assert_string_equal(node_log_quote(q, sizeof q, "a \"b\" c\\d\n\x01\xff"), "a \\\"b\\\" c\\\\d\\x0a\\x01\\xff");
	assert_string_equal(node_log_quote(small, sizeof small, "\x01\x02"), "\\x01");
	assert_string_equal(node_log_quote(small, sizeof small, "abcdefghij"), "abc");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(selectors),
		cmocka_unit_test(matching_in_pid_order),
		cmocka_unit_test(metrics_of_a_fixed_state),
		cmocka_unit_test(history_bytes_bounded),
		cmocka_unit_test(waits_end_by_their_timers),
		cmocka_unit_test(waits_bounded_and_cancelled),
		cmocka_unit_test(waits_keep_room_for_writers_and_root),
		cmocka_unit_test(log_values_escaped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
