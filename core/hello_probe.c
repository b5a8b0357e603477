/* SPDX-License-Identifier: Apache-2.0 */
/* hello_probe.c - a mapped file's reading and its uprobes, for the
 * procctl:hello probe (hello.c, hello_int.h): its sites from the ELF
 * note, the limits on files and fds, and when probes may go in while
 * earlier ones are still closing (root's files ahead of the rest in both). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fdclose.h"
#include "hello_int.h"
#include "log.h"

static int perf_open(struct perf_event_attr *a, int cpu)
{
	return (int)syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Uprobes on every site of the file open as fd, on every CPU, into its hit ring. */
static int probe(struct procctl_hello *h, struct file *f, int fd, const uint64_t *off)
{
	char path[64];
	int c, s;
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd); /* the inode, whatever its namespace */
	for (c = 0; c < h->rings.n; c++)
		for (s = 0; s < f->nsites; s++) {
			struct perf_event_attr a;
			int pfd;
			memset(&a, 0, sizeof a);
			a.size = sizeof a;
			a.type = (uint32_t)h->uprobe_type;
			a.config1 = (uint64_t)(uintptr_t)path; /* uprobe_path */
			a.config2 = off[s];                    /* probe_offset */
			a.sample_period = 1;
			a.sample_type = PERF_SAMPLE_TID;
			a.sample_id_all = 1; /* every record of the shared ring alike */
			a.disabled = 1;
			if ((pfd = perf_open(&a, h->rings.hit[c].cpu)) < 0)
				return -errno;
			f->probes[c * f->nsites + s] = pfd;
			if (ioctl(pfd, PERF_EVENT_IOC_SET_OUTPUT, h->rings.hit[c].fd) < 0 ||
			    ioctl(pfd, PERF_EVENT_IOC_ENABLE, 0) < 0)
				return -errno;
		}
	return 0;
}

/* Sorted, without repeats (a hostile file may name one site many times):
 * the new count. */
static int dedupe(uint64_t *off, int n)
{
	int i, j, m = 0;
	for (i = 0; i < n; i++) {
		for (j = 0; j < m && off[j] != off[i]; j++)
			;
		if (j == m)
			off[m++] = off[i];
	}
	return n < 0 ? n : m;
}

/* Room for a file of n sites owned by uid: HELLO_FILES_MAX files and the
 * fds left (those still closing count as used) for all; for the owners
 * but root together, HELLO_OTHERS_FILES_MAX files and a quarter of the
 * fds (root's files, the node's own programs and libraries, keep the rest
 * whatever users map); HELLO_FILES_PER_OWNER of one owner's (a user's
 * copies of a library with sites would take them all). */
static int room(struct procctl_hello *h, int n, uid_t uid)
{
	long fds = (long)n * h->rings.n;
	const struct file *f;
	int mine = 0;
	if (h->nfiles >= HELLO_FILES_MAX || fds > h->fds_left - procctl_close_pending()) {
		h->st.skipped_all++;
		return 0;
	}
	if (!uid)
		return 1;
	if (h->others_files >= HELLO_OTHERS_FILES_MAX || h->others_fds + fds > h->fds_max / 4) {
		h->st.skipped_others++;
		return 0;
	}
	for (f = h->files; f; f = f->next)
		mine += f->owner == uid;
	if (mine >= HELLO_FILES_PER_OWNER) {
		h->st.skipped_owner++;
		return 0;
	}
	return 1;
}

static int cooling(const struct procctl_hello *h, uid_t uid, int64_t now)
{
	size_t i;
	if (now < h->all_cool_until)
		return 1;
	for (i = 0; i < HELLO_COOL_MAX; i++)
		if (h->cool[i].until > now && h->cool[i].uid == uid)
			return 1;
	return 0;
}

void hello_cool(struct procctl_hello *h, uid_t uid)
{
	int64_t now = procctl_now_ns();
	size_t i, slot = HELLO_COOL_MAX;
	h->st.owners_cooled++;
	for (i = 0; i < HELLO_COOL_MAX; i++) {
		if (h->cool[i].until > now && h->cool[i].uid == uid)
			break;
		if (h->cool[i].until <= now && slot == HELLO_COOL_MAX)
			slot = i;
	}
	if (i == HELLO_COOL_MAX)
		i = slot;
	if (i < HELLO_COOL_MAX)
		h->cool[i] = (struct cooling){uid, now + HELLO_COOL_NS};
	else
		h->all_cool_until = now + HELLO_COOL_NS; /* more churning owners than are kept: all of them */
}

/* The closer paused for this probe: 1 when no close is in flight. */
void hello_unpause(struct procctl_hello *h)
{
	if (h->paused) {
		procctl_close_resume();
		h->paused = 0;
	}
}

static int pause_closes(struct procctl_hello *h)
{
	if (h->paused)
		return procctl_close_quiet();
	h->paused = 1;
	return procctl_close_pause();
}

static int defer(struct procctl_hello *h, pid_t pid, uint64_t start, uint64_t end, const struct hello_key *k,
		 const char *path, int live)
{
	struct deferred *d = &h->defer[h->ndefer];
	if (h->retrying || h->ndefer == HELLO_DEFER_MAX || strlen(path) >= sizeof d->path)
		return 0;
	*d = (struct deferred){pid, start, end, *k, live, {0}};
	strcpy(d->path, path);
	if (!h->ndefer++) {
		h->defer_due = procctl_now_ns() + HELLO_RECHECK_NS;
		hello_arm(h, 0);
	}
	return 1;
}

/* May a file of uid's get probes now (1), later (-1: deferred), or not
 * (0: read again at its next mapping)? Each close of a probe holds the
 * kernel's event_mutex for grace periods (about 90 ms), and placing one
 * waits for it. A file of root's pauses the closer: its probes go in at
 * once when no close is in flight, else after it (deferred to the next
 * tick, 20 ms). Another owner's file waits until no close is pending at
 * all (its process is rechecked at every stage meanwhile, and the file
 * read again at its next mapping), and an owner who rewrote a probed file
 * gets none for HELLO_COOL_NS: a user who makes probes come and go keeps
 * the closer busy, never root's files waiting. */
static int may_probe(struct procctl_hello *h, uid_t uid, pid_t pid, uint64_t start, uint64_t end,
		     const struct hello_key *k, const char *path, int live)
{
	if (!uid) {
		if (!procctl_close_pending())
			return 1;
		if (pause_closes(h)) {
			h->st.placed_past_closes++;
			return 1;
		}
		if (defer(h, pid, start, end, k, path, live))
			return -1;
		h->st.skipped_closing++;
		return 0;
	}
	if (cooling(h, uid, procctl_now_ns())) {
		h->st.skipped_churn++;
		return 0;
	}
	if (procctl_close_pending() > 0) {
		h->st.skipped_closing++;
		return 0;
	}
	return 1;
}

int hello_retry(struct procctl_hello *h)
{
	size_t i;
	if (h->ndefer && pause_closes(h)) {
		h->retrying = 1;
		for (i = 0; i < h->ndefer; i++) {
			struct deferred *d = &h->defer[i];
			hello_mapped(h, d->pid, d->start, d->end, &d->k, d->path, d->live);
		}
		h->ndefer = 0;
		h->retrying = 0;
	}
	if (!h->ndefer)
		hello_unpause(h);
	return h->ndefer > 0;
}

/* The kernel refuses uprobes (err): since Linux 6.16, and the stable
 * kernels of mid-2025, they need CAP_SYS_ADMIN, not CAP_PERFMON. Files
 * with sites are still watched, without probes: whoever maps one is
 * scanned at each of the stages, and the rest is the rescans'. */
static void denied(struct procctl_hello *h, struct file *f, int err)
{
	int i;
	for (i = 0; i < h->rings.n * f->nsites; i++)
		if (f->probes[i] >= 0)
			close(f->probes[i]); /* none hit yet: quick to close */
	for (i = 0; i < h->rings.n * f->nsites; i++)
		f->probes[i] = -1;
	hello_count(h, f, 0);
	h->uprobes_denied = 1;
	h->st.uprobes_denied = 1;
	procctl_log(PROCCTL_LOG_WARN, "hello_uprobes_denied",
		    "error=\"%s\" reason=\"uprobes need CAP_SYS_ADMIN (Linux 6.16 and the stable kernels since mid-2025): "
		    "a process that maps a program or library with the probe is scanned %d times in its first 10 s, "
		    "one that says hello later is found at a rescan\"",
		    strerror(-err), HELLO_STAGES);
}

/* A file of n sites (off), open as fd, owned by uid: probed (or watched by
 * its mappings alone, when uprobes are refused), with pid mapping it. */
static void file_add(struct procctl_hello *h, int fd, const uint64_t *off, int n, uid_t uid, const struct hello_key *k,
		     pid_t pid, int live)
{
	struct file *f;
	int i, err;
	if (!(f = calloc(1, sizeof *f)) || !(f->probes = malloc((size_t)(h->rings.n * n) * sizeof *f->probes))) {
		free(f);
		return;
	}
	f->k = *k;
	f->nsites = n;
	f->owner = uid;
	f->wd = -1;
	for (i = 0; i < h->rings.n * n; i++)
		f->probes[i] = -1;
	if (!h->uprobes_denied) {
		hello_count(h, f, 1);
		if ((err = probe(h, f, fd, off)) == -EACCES || err == -EPERM) {
			denied(h, f, err); /* watched by its mappings alone, as every file after it */
		} else if (err < 0) {
			h->st.probe_failures++;
			h->seen[hello_key_slot(k)] = *k; /* not again and again */
			hello_file_close(h, f);
			return;
		}
	}
	{
		/* A probe keeps a copy of the instruction it replaced: when the
		 * file is written in place, the probes go before they are wrong. */
		char p[64];
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		f->wd = inotify_add_watch(h->ifd, p, IN_MODIFY);
	}
	f->next = h->files;
	f->probed_ns = procctl_now_ns();
	h->files = f;
	h->nfiles++;
	h->others_files += uid != 0;
	h->st.files_probed++;
	hello_pid_add(h, f, pid);
	if (live)
		hello_recheck(h, pid);
}

/* pid maps [start, end) of file k (path as the process named it). */
void hello_mapped(struct procctl_hello *h, pid_t pid, uint64_t start, uint64_t end, const struct hello_key *k,
		  const char *path, int live)
{
	uint64_t off[HELLO_SITES_MAX];
	struct stat sb;
	struct file *f;
	uint32_t slot = hello_key_slot(k);
	int fd, n, may;
	if (pid == h->self)
		return; /* the agent does not discover itself: a program linking the process side (its
			   helpers) would get probes nobody hits, each slow to close */

	if (!k->ino)
		return; /* anonymous: JIT code, the vdso */
	h->st.mmaps++;
	if ((f = hello_file_find(h, k))) {
		hello_pid_add(h, f, pid);
		if (live)
			hello_recheck(h, pid);
		return;
	}
	if (hello_key_eq(&h->seen[slot], k))
		return; /* read before: no probe in it */
	if ((fd = hello_open_mapped(h->proc, pid, start, end, k, path)) < 0) {
		h->st.open_failures++; /* gone already, or not ours to open: the next mapping tries again */
		return;
	}
	h->st.files_read++;
	n = procctl_elf_hello_sites(fd, off, HELLO_SITES_MAX);
	if (n < 0)
		h->st.elf_rejected++;
	n = dedupe(off, n);
	if (n <= 0) {
		if (n == 0 || n == -ENOEXEC || n == -EFBIG)
			h->seen[slot] = *k; /* what it is will not change: not read again */
	} else if (fstat(fd, &sb) < 0 || !room(h, n, sb.st_uid)) {
		h->st.files_skipped++; /* over the limits: not remembered, tried again when mapped again */
	} else if (!h->uprobes_denied && (may = may_probe(h, sb.st_uid, pid, start, end, k, path, live)) <= 0) {
		if (!may) {
			h->st.files_skipped++; /* read again at its next mapping */
			if (live)
				hello_recheck_stages(h, pid, HELLO_STAGES);
		} /* deferred: probed after the close in flight, its process rechecked then */
	} else {
		file_add(h, fd, off, n, sb.st_uid, k, pid, live);
	}
	close(fd);
}
