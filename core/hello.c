/* SPDX-License-Identifier: Apache-2.0 */
/* hello.c - fast discovery: the procctl:hello probe.
 *
 * On every CPU a software dummy perf event reports executable mappings
 * (MMAP2), forks, exits and execs into a ring (hellorings.h): that is the
 * whole host's churn, so after a wake that read some, those rings are
 * muted for a batch (batch_ns, 20 ms, doubling to 1 s while the host keeps
 * at it) and read together at its end; 1,000 execs woke procctl-node
 * 4,860 times without this, 46 with it, and /bin/true run 20 times a
 * second woke it 60 times a second with fixed 20 ms batches, once with
 * growing ones (bench_forks). A file mapped for the first
 * time (by device and inode) is opened through /proc/<pid>/map_files (the
 * exact mapping, in any mount namespace; /proc/<pid>/root/<path>, checked
 * against the record's device and inode, when that is refused) and its
 * .note.stapsdt read (elfnote.c). A file with procctl:hello sites gets a
 * uprobe per site and CPU, whose samples go to that CPU's hit ring, never
 * muted: each hit is one on_pid(pid) at once, a targeted scan of the
 * process that just said hello.
 * A process that maps a probed file is also handed to on_pid shortly
 * after the mapping (HELLO_RECHECK_NS), so one that initialised before
 * its uprobe existed is found as well; so is a child forked within a
 * second of the probes' placing (a program that forks its workers at
 * once: they may say hello before the probes are there).
 *
 * A probed file keeps the pids that map it (from MMAP2, inherited on
 * fork, dropped on exit and exec); when none has been left for idle_ns
 * (30 s by default: a program started again and again keeps its probe,
 * and its processes do not race its installation) its uprobes are closed;
 * when the file is written in place (inotify), at once: a uprobe keeps a
 * copy of the instruction it replaced. Those closes run on the closer
 * thread (fdclose.h): each waits in the kernel for RCU grace periods,
 * holding its event_mutex, which placing a uprobe needs too, and those
 * fds count as used. A file of root's is probed while closes are pending:
 * the closer pauses between two closes (after the one in flight: the file
 * waits for it on a 20 ms tick). Another owner's file gets none while any
 * is pending, nor for HELLO_COOL_NS after its owner rewrote a probed
 * file: its processes are rechecked at every stage instead, and the file
 * is read again at its next mapping (hello_probe.c).
 * The agent's own mappings are not probed (it does not discover itself). Files without sites are remembered
 * in a direct-mapped cache so they are read once, mostly. Everything is
 * bounded: HELLO_FILES_MAX probed files (of the owners but root,
 * HELLO_OTHERS_FILES_MAX and a quarter of the fds together,
 * HELLO_FILES_PER_OWNER each), HELLO_SITES_MAX sites each, HELLO_PIDS_MAX
 * pids each (a file with more is kept until the agent stops),
 * HELLO_DELAYED_MAX pending rechecks (more: on_pid at once),
 * HELLO_DEFER_MAX deferred files, HELLO_COOL_MAX cooling owners (more:
 * every owner but root cools).
 *
 * Lost records (a full ring) are reported as on_pid(0): scan everything.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "fdclose.h"
#include "hello_int.h"
#include "opts.h"

static const int64_t stage_ns[HELLO_STAGES] = {HELLO_RECHECK_NS, 100000000ll, 500000000ll, 2000000000ll,
					      10000000000ll};

uint32_t hello_key_slot(const struct hello_key *k)
{
	uint64_t h = (k->ino ^ ((uint64_t)k->maj << 40) ^ ((uint64_t)k->min << 20)) * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 52) & (HELLO_SEEN_SLOTS - 1);
}

int hello_key_eq(const struct hello_key *a, const struct hello_key *b)
{
	return a->ino == b->ino && a->maj == b->maj && a->min == b->min;
}

struct file *hello_file_find(struct procctl_hello *h, const struct hello_key *k)
{
	struct file *f;
	for (f = h->files; f; f = f->next)
		if (hello_key_eq(&f->k, k))
			return f;
	return NULL;
}

static int pid_index(const struct file *f, pid_t pid)
{
	size_t i;
	for (i = 0; i < f->npids; i++)
		if (f->pids[i] == pid)
			return (int)i;
	return -1;
}

void hello_pid_add(struct procctl_hello *h, struct file *f, pid_t pid)
{
	if (f->idle_since) {
		f->idle_since = 0;
		h->nidle--;
	}
	if (f->sticky || pid_index(f, pid) >= 0)
		return;
	if (f->npids == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 8;
		pid_t *p;
		if (cap > HELLO_PIDS_MAX || !(p = realloc(f->pids, cap * sizeof *p))) {
			f->sticky = 1; /* cannot follow them all: keep the probe */
			return;
		}
		f->pids = p;
		f->cap = cap;
	}
	f->pids[f->npids++] = pid;
}

void hello_count(struct procctl_hello *h, struct file *f, int placed)
{
	long fds = (long)f->nsites * h->rings.n;
	if (!placed == !f->counted)
		return;
	f->counted = placed;
	if (!placed)
		fds = -fds;
	h->st.probes += (uint64_t)(placed ? f->nsites : -f->nsites);
	h->fds_left -= fds;
	if (f->owner)
		h->others_fds += fds;
}

/* Forget f; its uprobes (ncpu * nsites fds, malloc'd) are the caller's to
 * close. */
static int *file_forget(struct procctl_hello *h, struct file *f)
{
	int *probes = f->probes;
	if (f->wd >= 0)
		inotify_rm_watch(h->ifd, f->wd);
	hello_count(h, f, 0);
	free(f->pids);
	free(f);
	return probes;
}

/* Forget f; its uprobes are closed off this thread (each close waits for
 * RCU grace periods in the kernel: the loop must not). */
void hello_file_close(struct procctl_hello *h, struct file *f)
{
	size_t n = (size_t)(h->rings.n * f->nsites);
	procctl_close_detached(file_forget(h, f), n);
}

/* pid left every file it mapped (exit, exec): a file left by all is idle. */
static void pid_gone(struct procctl_hello *h, pid_t pid)
{
	struct file *f;
	for (f = h->files; f; f = f->next) {
		int i = pid_index(f, pid);
		if (i < 0)
			continue;
		f->pids[i] = f->pids[--f->npids];
		if (!f->npids && !f->sticky && !f->idle_since) {
			f->idle_since = procctl_now_ns();
			h->nidle++;
		}
	}
}

/* Unprobe the file *pp links and unlink it (it is read again at its next
 * mapping). */
static void unprobe(struct procctl_hello *h, struct file **pp)
{
	struct file *f = *pp;
	*pp = f->next;
	if (f->idle_since)
		h->nidle--;
	h->seen[hello_key_slot(&f->k)] = (struct hello_key){0, 0, 0};
	h->others_files -= f->owner != 0;
	hello_file_close(h, f);
	h->nfiles--;
	h->st.files_dropped++;
}

/* Files written in place: their probes go. */
static void rewritten(struct procctl_hello *h)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;
	while ((n = read(h->ifd, buf, sizeof buf)) > 0) {
		ssize_t at = 0;
		while (at + (ssize_t)sizeof(struct inotify_event) <= n) {
			const struct inotify_event *ev = (const struct inotify_event *)(buf + at);
			struct file **pp;
			for (pp = &h->files; *pp && (*pp)->wd != ev->wd; pp = &(*pp)->next)
				;
			if (*pp && (ev->mask & IN_MODIFY)) {
				h->st.files_rewritten++;
				if ((*pp)->owner && (*pp)->counted)
					hello_cool(h, (*pp)->owner); /* each rewrite a close: not again for a while */
				unprobe(h, pp);
			}
			at += (ssize_t)sizeof *ev + ev->len;
		}
	}
}

/* Unprobe the files idle for idle_ns; when one is, the next wake. */
static int64_t drop_idle(struct procctl_hello *h, int64_t now)
{
	struct file **pp = &h->files, *f;
	int64_t next = 0;
	if (!h->nidle)
		return 0;
	while ((f = *pp)) {
		if (f->idle_since && now - f->idle_since >= h->idle_ns) {
			unprobe(h, pp);
			continue;
		}
		if (f->idle_since && (!next || f->idle_since + h->idle_ns < next))
			next = f->idle_since + h->idle_ns;
		pp = &f->next;
	}
	return next;
}

/* A child of a process that maps a probed file maps it too. One forked
 * around the time the probes were placed may have said hello before
 * them (a program that forks its workers at once): it is checked after
 * HELLO_RECHECK_NS, as a process that maps the file is. */
static void pid_forked(struct procctl_hello *h, pid_t parent, pid_t child)
{
	int64_t now = procctl_now_ns();
	struct file *f;
	int again = 0;
	if (kill(child, 0) < 0 && errno == ESRCH)
		return; /* its exit, on another CPU's ring, came first */
	for (f = h->files; f; f = f->next)
		if (pid_index(f, parent) >= 0) {
			hello_pid_add(h, f, child);
			/* without uprobes, any child may be one that calls
			 * procctl_reinit: nothing else would say so */
			again |= h->uprobes_denied || now - f->probed_ns < HELLO_FORK_RECHECK_NS;
		}
	if (again)
		hello_recheck(h, child);
}

/* The timer at the first of: the next recheck, the next idle drop, the
 * end of a batch, the next try of deferred files. */
void hello_arm(struct procctl_hello *h, int64_t idle_due)
{
	struct itimerspec its;
	int64_t due = 0;
	int i;
	for (i = 0; i < HELLO_STAGES; i++)
		if (h->q[i].len && (!due || h->q[i].d[h->q[i].head].due < due))
			due = h->q[i].d[h->q[i].head].due;
	if (idle_due && (!due || idle_due < due))
		due = idle_due;
	if (h->quiet_due && (!due || h->quiet_due < due))
		due = h->quiet_due;
	if (h->ndefer && (!due || h->defer_due < due))
		due = h->defer_due;
	if (due == h->armed)
		return;
	memset(&its, 0, sizeof its);
	if (due) {
		its.it_value.tv_sec = due / 1000000000;
		its.it_value.tv_nsec = due % 1000000000;
	}
	timerfd_settime(h->tfd, TFD_TIMER_ABSTIME, &its, NULL);
	h->armed = due;
}

static void say(struct procctl_hello *h, pid_t pid)
{
	h->st.notifies++;
	h->o.on_pid(pid, h->o.arg);
}

/* on_pid(pid) at the first stages stages after now. */
void hello_recheck_stages(struct procctl_hello *h, pid_t pid, int stages)
{
	int64_t now = procctl_now_ns();
	int i, armed = 0;
	for (i = 0; i < stages; i++) {
		struct delayq *q = &h->q[i];
		if (q->len == HELLO_DELAYED_MAX) {
			if (!i)
				say(h, pid);
			continue;
		}
		q->d[(q->head + q->len++) % HELLO_DELAYED_MAX] = (struct delayed){pid, now + stage_ns[i]};
		armed |= q->len == 1;
	}
	if (armed)
		hello_arm(h, 0);
}

/* on_pid(pid) after HELLO_RECHECK_NS; without uprobes, at every stage
 * (a process may call procctl_init long after it mapped the file). */
void hello_recheck(struct procctl_hello *h, pid_t pid)
{
	hello_recheck_stages(h, pid, h->uprobes_denied ? HELLO_STAGES : 1);
}

/* Field access in a record of len bytes. */
#define REC_NEED(n) \
	do { \
		if (len < (size_t)(n)) \
			return; \
	} while (0)

/* The forks and exits a drain read, in their order, after all of its
 * mappings: a parent's mapping of a probed file may sit on another CPU's
 * ring, read after its forks'. */
static void tasks_done(struct procctl_hello *h)
{
	size_t i;
	for (i = 0; i < h->ntasks; i++)
		if (h->tasks[i].parent)
			pid_forked(h, h->tasks[i].parent, h->tasks[i].pid);
		else
			pid_gone(h, h->tasks[i].pid);
	h->ntasks = 0;
}

static void task_seen(struct procctl_hello *h, pid_t pid, pid_t parent)
{
	if (h->ntasks == HELLO_TASKS_MAX)
		tasks_done(h);
	h->tasks[h->ntasks++] = (struct task){pid, parent};
}

static void record(struct procctl_hello *h, const unsigned char *r, size_t len)
{
	struct perf_event_header hd;
	uint32_t a[4];
	memcpy(&hd, r, sizeof hd);
	r += sizeof hd;
	len -= sizeof hd;
	switch (hd.type) {
	case PERF_RECORD_SAMPLE: /* a uprobe hit: PERF_SAMPLE_TID */
		REC_NEED(8);
		memcpy(a, r, 8);
		if (!a[0])
			break; /* a process outside the agent's pid namespace */
		h->st.hits++;
		say(h, (pid_t)a[0]);
		break;
	case PERF_RECORD_MMAP2: {
		uint64_t v[3], ino;
		struct hello_key k;
		const char *name;
		REC_NEED(8 + 24 + 8 + 8 + 8 + 8 + 1);
		memcpy(a, r, 8);
		memcpy(v, r + 8, 24); /* addr, len, pgoff */
		memcpy(&k.maj, r + 32, 4);
		memcpy(&k.min, r + 36, 4);
		memcpy(&ino, r + 40, 8);
		k.ino = ino;
		name = (const char *)r + 64;
		if (!memchr(name, 0, len - 64))
			return;
		if ((hd.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) || !a[0])
			return; /* not asked for; outside the agent's pid namespace */
		hello_mapped(h, (pid_t)a[0], v[0], v[0] + v[1], &k, name, 1);
		break;
	}
	case PERF_RECORD_FORK: /* pid, ppid, tid, ptid */
		REC_NEED(16);
		memcpy(a, r, 16);
		if (a[0] == a[2] && a[0] != a[1])
			task_seen(h, (pid_t)a[0], (pid_t)a[1]);
		break;
	case PERF_RECORD_EXIT:
		REC_NEED(16);
		memcpy(a, r, 16);
		if (a[0] == a[2])
			task_seen(h, (pid_t)a[0], 0);
		break;
	case PERF_RECORD_COMM:
		REC_NEED(8);
		memcpy(a, r, 8);
		if (hd.misc & PERF_RECORD_MISC_COMM_EXEC) {
			pid_gone(h, (pid_t)a[0]); /* a new image: its mappings follow */
			if (h->o.on_exec && a[0]) /* 0: outside the agent's pid namespace */
				h->o.on_exec((pid_t)a[0], h->o.arg);
		}
		break;
	case PERF_RECORD_LOST:
		h->st.lost++;
		h->lost = 1; /* one full scan per dispatch, however many */
		break;
	default:
		break;
	}
}

static void on_mapping(void *arg, pid_t pid, uint64_t start, uint64_t end, const struct hello_key *k, const char *path)
{
	hello_mapped(arg, pid, start, end, k, path, 0);
}

static int read_int(const char *path, int *v)
{
	FILE *f = fopen(path, "re");
	int ok;
	if (!f)
		return -errno;
	ok = fscanf(f, "%d", v) == 1;
	fclose(f);
	return ok ? 0 : -EINVAL;
}

const char *procctl_hello_error(int err)
{
	switch (err) {
	case -EACCES:
	case -EPERM:
		return "no permission for system-wide perf events (CAP_PERFMON, or perf_event_paranoid <= 0; in a "
		       "container, also a seccomp profile that allows perf_event_open with CAP_PERFMON)";
	case -ENOENT:
		return "no uprobe PMU (/sys/bus/event_source/devices/uprobe)";
	case -ENOSYS:
		return "no perf_event_open in this kernel";
	case -EDQUOT:
		return "the perf rings could not be locked in memory (past perf_event_mlock_kb and RLIMIT_MEMLOCK: "
		       "CAP_IPC_LOCK, or raise them)";
	case -ENOMEM:
		return "out of memory";
	default:
		return "perf_event_open failed";
	}
}

void procctl_hello_free(procctl_hello_t *h)
{
	if (!h)
		return;
	/* Here, not detached: a stopping agent's uprobes are gone when it
	 * returns. Its caller hands off first (procctl-node does). */
	hello_unpause(h);
	while (h->files) {
		struct file *f = h->files;
		size_t k = (size_t)(h->rings.n * f->nsites);
		int *probes;
		h->files = f->next;
		probes = file_forget(h, f);
		procctl_close_all(probes, k);
		free(probes);
	}
	hello_rings_close(&h->rings);
	if (h->tfd >= 0)
		close(h->tfd);
	if (h->ifd >= 0)
		close(h->ifd);
	if (h->epfd >= 0)
		close(h->epfd);
	free(h);
}

_Static_assert(sizeof(struct procctl_hello_opts) == PROCCTL_OPTS_END(struct procctl_hello_opts, batch_ns),
	       "no trailing padding (opts.h)");

procctl_hello_t *procctl_hello_new(const struct procctl_hello_opts *opts)
{
	struct procctl_hello_opts mine, *o = &mine;
	procctl_hello_t *h;
	char p[320];
	long ncpu = hello_possible_cpus();
	unsigned pages;
	int err = 0;

	if (procctl_opts_take(o, sizeof *o, opts) < 0 || !o->on_pid || (o->ring_pages & (o->ring_pages - 1)) ||
	    o->idle_ns > INT64_MAX / 2 || o->batch_ns > INT64_MAX / 2 || ncpu < 1) {
		errno = EINVAL;
		return NULL;
	}
	if (!(h = calloc(1, sizeof *h))) {
		errno = ENOMEM;
		return NULL;
	}
	h->o = *o;
	h->epfd = h->tfd = h->ifd = h->rings.rfd = -1;
	h->batch_ns = h->o.batch_ns ? (int64_t)h->o.batch_ns : HELLO_BATCH_NS;
	h->batch_max_ns = h->batch_ns > HELLO_BATCH_MAX_NS ? h->batch_ns : HELLO_BATCH_MAX_NS;
	h->batch_cur = h->batch_ns;
	h->idle_ns = o->idle_ns ? (int64_t)o->idle_ns : HELLO_IDLE_NS;
	{
		struct rlimit rl;
		/* Probes use at most half of the fds the agent may open. */
		h->fds_left = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)(rl.rlim_cur / 2)
											      : 65536;
		h->fds_max = h->fds_left;
	}
	snprintf(h->proc, sizeof h->proc, "%s", o->proc_root ? o->proc_root : "/proc");
	h->self = getpid();
	pages = o->ring_pages ? o->ring_pages : HELLO_RING_PAGES;
	snprintf(p, sizeof p, "%s/bus/event_source/devices/uprobe/type", o->sysfs_root ? o->sysfs_root : "/sys");
	if ((err = read_int(p, &h->uprobe_type)) < 0) {
		err = -ENOENT;
		goto fail;
	}
	if ((h->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    (h->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) < 0 ||
	    (h->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
		err = -errno;
		goto fail;
	}
	{
		struct epoll_event ee = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
		struct epoll_event ie = {.events = EPOLLIN, .data.u32 = UINT32_MAX - 1};
		if (epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->tfd, &ee) < 0 || epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->ifd, &ie) < 0) {
			err = -errno;
			goto fail;
		}
	}
	if ((err = hello_rings_open(&h->rings, h->epfd, ncpu, pages)) < 0)
		goto fail;
	hello_sweep(h->proc, on_mapping, h);
	/* Not paused between calls outside a dispatch: a file of root's the
	 * sweep deferred is tried at the first dispatch (its timer is set). */
	hello_unpause(h);
	if (h->ndefer)
		hello_arm(h, 0);
	return h;
fail:
	procctl_hello_free(h);
	errno = -err;
	return NULL;
}

int procctl_hello_fd(const procctl_hello_t *h)
{
	return h->epfd;
}

static void on_record(void *arg, const unsigned char *r, size_t len)
{
	record(arg, r, len);
}

/* The host's records (every exec, mapping, fork and exit) wake the loop
 * once a batch at most: after a drain that found any, the record rings
 * are muted until a drain finds none after quiet_due. A hello's hit is
 * heard at once, and read with whatever records wait. A batch starts at
 * batch_ns and doubles at each end that found records, up to
 * batch_max_ns: a host that forks and execs steadily then costs one wake
 * a batch, not three a fork (the first record, the batch's end with the
 * fork's last records, the end that found none). It halves instead when
 * a record ring was a quarter full (lost records cost a full scan), and
 * starts over after a quiet of batch_max_ns. */
/* A batch's end found records: the next batch is longer, unless a ring
 * filled a quarter (or lost records). */
static void batch_adapt(struct procctl_hello *h)
{
	if (h->rings.fill > 64 || h->lost)
		h->batch_cur = h->batch_cur / 2 > h->batch_ns ? h->batch_cur / 2 : h->batch_ns;
	else
		h->batch_cur = h->batch_cur * 2 < h->batch_max_ns ? h->batch_cur * 2 : h->batch_max_ns;
}

static int batch(struct procctl_hello *h, size_t records, int64_t now)
{
	size_t n;
	int err = 0;
	if (h->lost)
		h->batch_cur = h->batch_ns; /* a ring filled: batches short again */
	if (h->quiet_due && now < h->quiet_due)
		return 0; /* muted: what a hit's wake read is the batch's, which ends at quiet_due */
	if (records) {
		if (h->quiet_due)
			batch_adapt(h);
		else if (now - h->unmuted_ns > h->batch_max_ns)
			h->batch_cur = h->batch_ns; /* the first records after a quiet */
		h->quiet_due = now + h->batch_cur;
		return hello_rings_mute(&h->rings, 1);
	}
	if (!h->quiet_due)
		return 0;
	h->quiet_due = 0;
	if ((err = hello_rings_mute(&h->rings, 0)) < 0)
		return err;
	n = hello_rings_drain(&h->rings, on_record, h); /* came before the unmute */
	tasks_done(h);
	if (n) {
		batch_adapt(h);
		h->quiet_due = now + h->batch_cur;
		return hello_rings_mute(&h->rings, 1);
	}
	h->unmuted_ns = now;
	return 0;
}

int procctl_hello_dispatch(procctl_hello_t *h)
{
	int64_t now;
	uint64_t v;
	size_t n;
	int err, c;

	/* Consume the readiness, then drain every ring whatever it said:
	 * records are cheap to look for. */
	hello_epoll_consume(h->epfd);
	if (read(h->tfd, &v, sizeof v) < 0) {
		/* EAGAIN: the timer has not fired */
	}
	rewritten(h);
	n = hello_rings_drain(&h->rings, on_record, h);
	tasks_done(h);
	now = procctl_now_ns();
	err = batch(h, n, now);
	if (h->lost) {
		h->lost = 0;
		say(h, 0);
	}
	for (c = 0; c < HELLO_STAGES; c++) {
		struct delayq *q = &h->q[c];
		while (q->len && q->d[q->head].due <= now) {
			pid_t pid = q->d[q->head].pid;
			q->head = (q->head + 1) % HELLO_DELAYED_MAX;
			q->len--;
			say(h, pid);
		}
	}
	if (hello_retry(h))
		h->defer_due = now + HELLO_RECHECK_NS;
	h->armed = -1; /* the timer fired or was read: set it again */
	hello_arm(h, drop_idle(h, now));
	return err;
}

int procctl_hello_stats(const procctl_hello_t *h, struct procctl_hello_stats *out, size_t sz)
{
	struct procctl_hello_stats st = h->st;
	st.files = h->nfiles;
	st.uprobes = h->st.probes * (uint64_t)h->rings.n;
	st.owners_cooling = 0;
	{
		int64_t now = procctl_now_ns();
		size_t i;
		for (i = 0; i < HELLO_COOL_MAX; i++)
			st.owners_cooling += h->cool[i].until > now;
	}
	return procctl_out_give(out, sz, &st, sizeof st);
}
