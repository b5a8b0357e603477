/* SPDX-License-Identifier: Apache-2.0 */
/* client_reads.c - a client's reads of its process (SPEC.md 7, 13.2): is
 * it still the process attached (exit, exec), its state block read off
 * the caller's thread with a deadline, and waiting for an ack. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "offpath.h"
#include "state.h"

#define FAR_ADDRESS 0x7ffffffffffff000ll

/* Does the process at /proc/<pid>/mem (still ours: its pidfd has not
 * said it exited) have an mm now? An exec gives it a new one; an exit
 * leaves none, and a fresh open of its mem then reads 0 bytes. */
static int has_mm(const char *mem_path)
{
	unsigned char b;
	int fd = open(mem_path, O_RDONLY | O_CLOEXEC), r;
	if (fd < 0)
		return errno == EACCES || errno == EPERM; /* an mm we may not read: a setuid exec */
	r = pread(fd, &b, 1, (off_t)FAR_ADDRESS) != 0;
	close(fd);
	return r;
}

int procctl_remote_alive(const struct procctl_remote *rm)
{
	unsigned char b;
	if (procctl_process_exited(rm->pidfd))
		return -ESRCH;
	/* A /proc/<pid>/mem fd reads 0 bytes once the mm it was opened on is
	 * gone: exec (SPEC.md 10.2), or an exit under way (the mm goes before
	 * the files, and before the pidfd says so). Probe an address no process
	 * can map (above any user address space): EIO while the mm lives, and
	 * never a page the process could make block. */
	if (pread(rm->mem_fd, &b, 1, (off_t)FAR_ADDRESS) != 0)
		return 0;
	if (procctl_process_exited(rm->pidfd))
		return -ESRCH;
	/* Exiting, not exec'ing, when it has no mm at all now: still 0 until the
	 * pidfd says it exited, for until then it may hold what it held (its
	 * files close after its mm goes): an arbiter must not give it away. */
	return has_mm(rm->mem_path) ? -ESTALE : 0;
}

int procctl_client_alive(procctl_client_t *c)
{
	return procctl_remote_alive(c->remote);
}

/* ---- reads ------------------------------------------------------------ */

struct read_job {
	struct procctl_job job;
	struct procctl_remote *remote;
	void (*done)(void *arg); /* procctl_client_read_start's */
	void *arg;
	struct procctl_hdr hdr;
	struct procctl_state_view view;
	enum procctl_reject why;
	int noted; /* abandoned, and its pid is in the blocked set */
	uint64_t buf[]; /* state_size bytes */
};

/* Processes with a read stuck off-path: every read of any of their
 * regions fails at once, so one process holds one worker at most. The
 * set grows with them (the pool bounds how many can be stuck; if it
 * cannot grow, the pool's bound is the only one). */
static pthread_mutex_t blocked_mu = PTHREAD_MUTEX_INITIALIZER;
static struct blocked {
	pid_t pid;
	int n;
} *blocked;
static size_t nblocked, blocked_cap;

static struct blocked *blocked_find(pid_t pid)
{
	size_t i;
	for (i = 0; i < nblocked; i++)
		if (blocked[i].pid == pid)
			return &blocked[i];
	return NULL;
}

/* Note one more stuck read of pid; -ENOMEM if the set cannot grow. */
static int blocked_add(pid_t pid)
{
	struct blocked *b;
	int r = 0;
	pthread_mutex_lock(&blocked_mu);
	if ((b = blocked_find(pid))) {
		b->n++;
	} else if (nblocked == blocked_cap &&
		   !(b = realloc(blocked, (blocked_cap ? 2 * blocked_cap : 64) * sizeof *blocked))) {
		r = -ENOMEM;
	} else {
		if (nblocked == blocked_cap) {
			blocked = b;
			blocked_cap = blocked_cap ? 2 * blocked_cap : 64;
		}
		blocked[nblocked].pid = pid;
		blocked[nblocked++].n = 1;
	}
	pthread_mutex_unlock(&blocked_mu);
	return r;
}

static void blocked_del(pid_t pid)
{
	struct blocked *b;
	pthread_mutex_lock(&blocked_mu);
	if ((b = blocked_find(pid)) && --b->n == 0)
		*b = blocked[--nblocked];
	pthread_mutex_unlock(&blocked_mu);
}

static int blocked_has(pid_t pid)
{
	int hit;
	pthread_mutex_lock(&blocked_mu);
	hit = blocked_find(pid) != NULL;
	pthread_mutex_unlock(&blocked_mu);
	return hit;
}

/* On a worker: the read, then the pidfd (SPEC.md 7.2 step 5): only a read
 * of the process we pinned counts. */
static int read_fn(struct procctl_job *j)
{
	struct read_job *rj = (struct read_job *)j;
	int r = procctl_state_read(rj->remote->pid, rj->remote->mem_fd, &rj->hdr, rj->buf, &rj->view, &rj->why);
	return procctl_process_exited(rj->remote->pidfd) ? -ESRCH : r;
}

static void read_abandon(struct procctl_job *j)
{
	struct read_job *rj = (struct read_job *)j;
	rj->noted = blocked_add(rj->remote->pid) == 0;
}

static void read_release(struct procctl_job *j)
{
	struct read_job *rj = (struct read_job *)j;
	if (rj->noted)
		blocked_del(rj->remote->pid);
	procctl_remote_put(rj->remote);
}

/* A read job for c, or NULL: -ETIMEDOUT a read of the process is stuck
 * (one blocked read per process at most: the next fails at once, unless
 * the process is gone meanwhile), -ENOMEM. */
static struct read_job *read_job_new(procctl_client_t *c, int *err)
{
	struct read_job *rj;
	if (blocked_has(c->remote->pid)) {
		int alive = procctl_client_alive(c);
		*err = alive < 0 ? alive : -ETIMEDOUT;
		return NULL;
	}
	rj = (struct read_job *)procctl_job_new(sizeof *rj + c->r.hdr.state_size, read_fn);
	if (!rj) {
		*err = -ENOMEM;
		return NULL;
	}
	rj->hdr = c->r.hdr;
	rj->remote = c->remote;
	rj->job.abandon = read_abandon;
	rj->job.release = read_release;
	__atomic_add_fetch(&c->remote->refs, 1, __ATOMIC_ACQ_REL);
	return rj;
}

/* What a finished read found, into out; rj is freed. */
/* Is sz a size for struct procctl_state? Today's is the least: there was
 * never a smaller one. A newer caller's larger one gets its tail zeroed. */
static int state_size_ok(size_t sz)
{
	return sz >= sizeof(struct procctl_state);
}

static int read_result(struct read_job *rj, int r, struct procctl_state *out, size_t sz)
{
	int alive;
	/* A canary that no longer matches, or an address that no longer
	 * reads: the process may have exec'd. Say so. */
	if ((r == -EFAULT || (r == -EPROTO && rj->why == PROCCTL_REJECT_STATE_CANARY)) &&
	    (alive = procctl_remote_alive(rj->remote)) < 0)
		r = alive;
	if (r == 0 && out) {
		const struct procctl_state_view *v = &rj->view;
		out->acked_gen = v->acked_gen;
		out->ack_status = v->ack_status;
		out->nres = v->nres;
		memcpy(out->res, v->res, (size_t)v->nres * sizeof *v->res);
		out->data_len = v->data_len;
		memcpy(out->data, v->data, v->data_len);
	}
	if (out) {
		out->why = rj->why;
		memset((char *)out + sizeof *out, 0, sz - sizeof *out);
	}
	procctl_job_free(&rj->job);
	return r;
}

int procctl_client_read_state(procctl_client_t *c, struct procctl_state *out, size_t sz, int64_t deadline_ns)
{
	int r;
	struct read_job *rj;
	if (!out || !state_size_ok(sz))
		return -EINVAL;
	if (!(rj = read_job_new(c, &r)))
		return r;
	if (deadline_ns < 0) { /* on this thread, for callers that may block */
		r = read_fn(&rj->job);
	} else {
		r = procctl_job_run(&rj->job, deadline_ns);
		if (r == -ETIMEDOUT) /* abandoned: c is blocked until its worker returns */
			return r;
	}
	return read_result(rj, r, out, sz);
}

static void read_done(struct procctl_job *j)
{
	struct read_job *rj = (struct read_job *)j;
	rj->done(rj->arg);
}

procctl_read_t *procctl_client_read_start(procctl_client_t *c, void (*done)(void *arg), void *arg)
{
	int r;
	struct read_job *rj = read_job_new(c, &r);
	if (!rj) {
		errno = -r;
		return NULL;
	}
	rj->done = done;
	rj->arg = arg;
	rj->job.done = read_done;
	if ((r = procctl_job_start(&rj->job)) < 0) {
		procctl_job_free(&rj->job);
		errno = -r;
		return NULL;
	}
	return (procctl_read_t *)rj;
}

int procctl_read_late(procctl_read_t *rd)
{
	return procctl_job_late(&((struct read_job *)rd)->job);
}

int procctl_read_finish(procctl_read_t *rd, struct procctl_state *out, size_t sz)
{
	struct read_job *rj = (struct read_job *)rd;
	if (out && !state_size_ok(sz)) {
		read_result(rj, rj->job.result, NULL, 0);
		return -EINVAL;
	}
	return read_result(rj, rj->job.result, out, sz);
}

int procctl_ack_decide(uint64_t gen, uint64_t published_max, uint64_t acked_gen, int32_t ack_status)
{
	if (acked_gen < gen || acked_gen > published_max)
		return 0;
	if (acked_gen > gen)
		return PROCCTL_ACK_SUPERSEDED;
	return ack_status < 0 ? PROCCTL_ACK_REJECTED : PROCCTL_ACK_APPLIED;
}

int procctl_client_wait_ack(procctl_client_t *c, uint64_t gen, int64_t deadline_ns, struct procctl_ack *out)
{
	struct procctl_state *st;
	int64_t backoff = 10000; /* 10 us (a lost doorbell wake costs no more), doubling to 10 ms */
	uint64_t max = __atomic_load_n(&c->published_max, __ATOMIC_ACQUIRE);
	int r = 0, kind;

	if (gen == 0 || gen > max || !out)
		return -EINVAL;
	st = malloc(sizeof *st);
	if (!st)
		return -ENOMEM;
	for (;;) {
		int64_t left;
		struct timespec ts;
		/* Read first: a doorbell wake is not sticky, and the ack may
		 * already be there. */
		r = procctl_client_read_state(c, st, sizeof *st, deadline_ns);
		max = __atomic_load_n(&c->published_max, __ATOMIC_ACQUIRE);
		if (r == 0 && (kind = procctl_ack_decide(gen, max, st->acked_gen, st->ack_status))) {
			out->acked_gen = st->acked_gen;
			out->status = st->ack_status;
			out->kind = (enum procctl_ack_kind)kind;
			break;
		}
		if (r != 0 && r != -EAGAIN && !(r == -EPROTO && st->why == PROCCTL_REJECT_STATE_CRC))
			break;
		left = deadline_ns - procctl_now_ns();
		if (left <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		if (left > backoff)
			left = backoff;
		backoff = backoff * 2 > 10000000 ? 10000000 : backoff * 2;
		ts.tv_sec = (time_t)(left / 1000000000);
		ts.tv_nsec = (long)(left % 1000000000);
		/* The doorbell (SPEC.md 6.5): a hint; its word is never written,
		 * so a nonzero value (a process scribbling) just returns at once
		 * and the backoff bounds the rate. */
		if (syscall(SYS_futex, &c->r.ctrl->doorbell, FUTEX_WAIT, 0, &ts, NULL, 0) < 0 && errno == EAGAIN)
			nanosleep(&ts, NULL);
	}
	free(st);
	return r;
}
