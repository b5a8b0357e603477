/* SPDX-License-Identifier: Apache-2.0 */
/* reads.c - state reads off the loop: a read of a process's state block
 * runs on libprocctl-agent's workers (procctl_client_read_start), one per
 * process at a time, and its result comes back through a queue the loop
 * drains. The loop never waits on a process's memory: a read that is
 * still out after STATE_READ_NS is late, which makes its process stalled
 * (SPEC.md 7.2; said once, counted) until it returns. What a read finds
 * answers the ReadState calls that waited for it, and goes to the sink
 * the loop gave reads_open (procs.c's: Acked and StateChanged events,
 * waits settled), which this file does not call by name. Each process's
 * poll, a read by a timer, is here too. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "node_int.h"

/* Reads done, for the loop. Its own allocation: a worker may finish a
 * read after the daemon let go of it (a stuck read returns when its
 * process dies), so the last of the node and its reads frees it. */
struct read_q {
	pthread_mutex_t mu;
	struct proc_read *done; /* under mu */
	int efd;                /* the loop's wake; -1 once the node is gone */
	struct read_sink sink;  /* where what a read found goes */
	int refs;               /* under mu: the node's, and each read's */
};

struct proc_read {
	struct read_q *q;
	struct proc *p; /* NULL once the process left the table */
	procctl_read_t *rd;
	int quiet;      /* the first read at attach: no events */
	struct proc_read *next;
};

static void q_put(struct read_q *q)
{
	int last;
	pthread_mutex_lock(&q->mu);
	last = --q->refs == 0;
	pthread_mutex_unlock(&q->mu);
	if (last) {
		pthread_mutex_destroy(&q->mu);
		free(q);
	}
}

int reads_open(struct node *n, const struct read_sink *sink)
{
	struct read_q *q = calloc(1, sizeof *q);
	if (!q)
		return -ENOMEM;
	pthread_mutex_init(&q->mu, NULL);
	q->efd = n->efd;
	q->sink = *sink;
	q->refs = 1;
	n->reads = q;
	return 0;
}

/* The node goes: reads that finish later are dropped where they finish. */
void reads_close(struct node *n)
{
	struct read_q *q = n->reads;
	struct proc_read *pr, *next;
	if (!q)
		return;
	pthread_mutex_lock(&q->mu);
	q->efd = -1;
	pr = q->done;
	q->done = NULL;
	pthread_mutex_unlock(&q->mu);
	for (; pr; pr = next) {
		next = pr->next;
		procctl_read_finish(pr->rd, NULL, 0);
		free(pr);
		q_put(q);
	}
	n->reads = NULL;
	q_put(q);
}

/* On the worker that did the read. */
static void read_done(void *arg)
{
	struct proc_read *pr = arg;
	struct read_q *q = pr->q;
	uint64_t one = 1;
	int live;
	pthread_mutex_lock(&q->mu);
	if ((live = q->efd >= 0)) {
		pr->next = q->done;
		q->done = pr;
		if (write(q->efd, &one, sizeof one) < 0) {
			/* full: the loop is awake anyway */
		}
	}
	pthread_mutex_unlock(&q->mu);
	if (!live) {
		procctl_read_finish(pr->rd, NULL, 0);
		free(pr);
		q_put(q);
	}
}

/* Logged at a rate (a spawn storm stalls many at once); its end only when
 * its start was. */
static void stalled(struct proc *p, int yes)
{
	static struct procctl_ratelimit rl;
	if (yes == p->stalled)
		return;
	p->stalled = yes;
	if (yes)
		p->stall_said = node_log_limit(&rl, PROCCTL_LOG_WARN, "state_stalled", "pid=%d consumer=%s instance=%016llx",
					       (int)p->key.pid, p->key.consumer, (unsigned long long)p->instance);
	else if (p->stall_said)
		node_log(PROCCTL_LOG_INFO, "state_unstalled", "pid=%d consumer=%s instance=%016llx", (int)p->key.pid,
			 p->key.consumer, (unsigned long long)p->instance);
}

/* The ReadState calls that waited on p, answered with r (n->st). */
static void answer(struct node *n, struct proc *p, int r)
{
	struct node_job *j = p->state_jobs, *next;
	p->state_jobs = NULL;
	for (; j; j = next) {
		next = j->next;
		state_reply(n, j, r);
	}
}

/* What a read of p found (r, and n->st). */
static void result(struct node *n, struct proc *p, int r, int quiet)
{
	stalled(p, r == -ETIMEDOUT);
	if (r == 0)
		n->reads->sink.seen(n, p, &n->st, quiet);
	else if (r != -ESRCH && r != -ESTALE && r != -ETIMEDOUT)
		node_log(PROCCTL_LOG_DEBUG, "state_unreadable", "pid=%d error=%s reason=%s", (int)p->key.pid,
			 strerror(-r), r == -EPROTO ? procctl_reject_name(n->st.why) : "-");
	answer(n, p, r);
	if (!p->announced)
		n->reads->sink.announce(n, p);
}

static void on_late(struct timer *t, int64_t now)
{
	struct proc *p = container_of(t, struct proc, t_late);
	if (!p->rd)
		return;
	if (!procctl_read_late(p->rd->rd)) { /* not started yet (the pool is busy), or just done */
		if (timer_arm(&p->n->timers, t, now + STATE_READ_NS) < 0)
			node_log(PROCCTL_LOG_ERROR, "timer_failed", "pid=%d error=ENOMEM (a stuck read goes unnoticed)",
				 (int)p->key.pid);
		return;
	}
	stalled(p, 1);
	answer(p->n, p, -ETIMEDOUT);
	if (!p->announced)
		p->n->reads->sink.announce(p->n, p);
}


/* How often p's state is polled: often while waits name it (a doorbell
 * is a hint: a wake can be lost), each second while its doorbell is not
 * heard, never otherwise (SPEC.md 6.5: every write to its state block
 * rings, so an idle node reads nobody). */
static int64_t poll_every(const struct proc *p)
{
	if (p->waiting)
		return p->rings ? POLL_RUNG_NS : POLL_WAITING_NS;
	return procctl_registry_doorbell_heard(p->reg, p->c) > 0 ? 0 : POLL_IDLE_NS;
}

static void on_poll(struct timer *t, int64_t now)
{
	struct proc *p = container_of(t, struct proc, t_poll);
	int64_t every;
	proc_read_state(p->n, p, 0);
	/* Re-armed in the slot it just left: the heap has room. */
	if ((every = poll_every(p)))
		timer_arm(&p->n->timers, t, now + every);
}

void proc_poll_soon(struct node *n, struct proc *p, int64_t now)
{
	int64_t every = poll_every(p);
	if (every)
		timer_arm_by(&n->timers, &p->t_poll, now + every); /* -ENOMEM: left to its doorbell */
}

void proc_reads_init(struct proc *p)
{
	p->t_poll = TIMER_INIT(on_poll);
	p->t_late = TIMER_INIT(on_late);
}

/* Read p's state block: now, or when the read out now returns (a stalled
 * process is not read again until then). */
void proc_read_state(struct node *n, struct proc *p, int quiet)
{
	struct proc_read *pr;
	if (p->rd) {
		p->reread = 1;
		return;
	}
	if (!(pr = calloc(1, sizeof *pr))) {
		result(n, p, -ENOMEM, quiet);
		return;
	}
	pr->q = n->reads;
	pr->p = p;
	pr->quiet = quiet;
	pthread_mutex_lock(&pr->q->mu);
	pr->q->refs++;
	pthread_mutex_unlock(&pr->q->mu);
	if (!(pr->rd = procctl_client_read_start(p->c, read_done, pr))) {
		int r = -errno;
		q_put(pr->q);
		free(pr);
		result(n, p, r, quiet);
		return;
	}
	p->rd = pr;
	if (timer_arm(&n->timers, &p->t_late, now_ns() + STATE_READ_NS) < 0)
		node_log(PROCCTL_LOG_ERROR, "timer_failed", "pid=%d error=ENOMEM (a stuck read goes unnoticed)",
			 (int)p->key.pid);
}

/* On the loop: what the reads done since the last call found. */
void node_reads_done(struct node *n)
{
	struct read_q *q = n->reads;
	struct proc_read *pr, *next;
	pthread_mutex_lock(&q->mu);
	pr = q->done;
	q->done = NULL;
	pthread_mutex_unlock(&q->mu);
	for (; pr; pr = next) {
		struct proc *p = pr->p;
		int r = procctl_read_finish(pr->rd, &n->st, sizeof n->st);
		next = pr->next;
		if (p) {
			p->rd = NULL;
			timer_disarm(&n->timers, &p->t_late);
			result(n, p, r, pr->quiet);
			if (p->reread) {
				p->reread = 0;
				proc_read_state(n, p, 0);
			}
		}
		free(pr);
		q_put(q);
	}
}

/* p leaves the table: its read in flight finishes without it, and the
 * calls that waited on it are answered (r: why). */
void proc_reads_gone(struct node *n, struct proc *p, int r)
{
	if (p->rd)
		p->rd->p = NULL;
	p->rd = NULL;
	timer_disarm(&n->timers, &p->t_late);
	answer(n, p, r);
}

/* A ReadState call: answered by p's next read (stalled: at once). */
void proc_read_for(struct node *n, struct proc *p, struct node_job *job)
{
	if (p->stalled) {
		state_reply(n, job, -ETIMEDOUT);
		return;
	}
	job->next = p->state_jobs;
	p->state_jobs = job;
	proc_read_state(n, p, 0);
}
