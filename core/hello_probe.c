/* SPDX-License-Identifier: Apache-2.0 */
/* hello_probe.c - a mapped file's reading and its uprobes, for the
 * procctl:hello probe (hello.c, hello_int.h): its sites from the ELF
 * note, the limits on files and fds, and no probe while earlier ones are
 * still closing. */
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

/* Room for a file of n sites owned by uid: HELLO_FILES_MAX files, the fds
 * left (those still closing count as used), and HELLO_FILES_PER_OWNER of
 * one owner's but root's (a user's copies of a library with sites would
 * take them all). */
static int room(const struct procctl_hello *h, int n, uid_t uid)
{
	const struct file *f;
	int mine = 0;
	if (h->nfiles >= HELLO_FILES_MAX || (long)n * h->rings.n > h->fds_left - procctl_close_pending())
		return 0;
	for (f = h->files; f && uid; f = f->next)
		mine += f->owner == uid;
	return mine < HELLO_FILES_PER_OWNER;
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
	h->st.probes -= (uint64_t)f->nsites;
	h->fds_left += (long)f->nsites * h->rings.n;
	f->counted = 0;
	h->uprobes_denied = 1;
	h->st.uprobes_denied = 1;
	procctl_log(PROCCTL_LOG_WARN, "hello_uprobes_denied",
		    "error=\"%s\" reason=\"uprobes need CAP_SYS_ADMIN (Linux 6.16 and the stable kernels since mid-2025): "
		    "a process that maps a program or library with the probe is scanned %d times in its first 10 s, "
		    "one that says hello later is found at a rescan\"",
		    strerror(-err), HELLO_STAGES);
}

/* pid maps [start, end) of file k (path as the process named it). */
void hello_mapped(struct procctl_hello *h, pid_t pid, uint64_t start, uint64_t end, const struct hello_key *k,
		   const char *path, int live)
{
	uint64_t off[HELLO_SITES_MAX];
	struct stat sb;
	struct file *f;
	uint32_t slot = hello_key_slot(k);
	int fd, n, i, err;
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
	if (n > 0 && (fstat(fd, &sb) < 0 || !room(h, n, sb.st_uid))) {
		h->st.files_skipped++; /* over the limits: not remembered, tried again when mapped again */
		close(fd);
		return;
	}
	if (n > 0 && !h->uprobes_denied && procctl_close_pending() > 0) {
		/* Earlier probes are still closing, each holding the kernel's
		 * event_mutex for grace periods, which perf_event_open waits
		 * for too: no probe now (the loop would wait with it). The
		 * process is rechecked at every stage; the file is read again
		 * at its next mapping. */
		h->st.files_skipped++;
		close(fd);
		if (live)
			hello_recheck_stages(h, pid, HELLO_STAGES);
		return;
	}
	if (n <= 0) {
		if (n == 0 || n == -ENOEXEC || n == -EFBIG)
			h->seen[slot] = *k; /* what it is will not change: not read again */
		close(fd);
		return;
	}
	if (!(f = calloc(1, sizeof *f)) || !(f->probes = malloc((size_t)(h->rings.n * n) * sizeof *f->probes))) {
		free(f);
		close(fd);
		return;
	}
	f->k = *k;
	f->nsites = n;
	f->owner = sb.st_uid;
	f->wd = -1;
	for (i = 0; i < h->rings.n * n; i++)
		f->probes[i] = -1;
	if (!h->uprobes_denied) {
		h->st.probes += (uint64_t)n;
		h->fds_left -= (long)n * h->rings.n;
		f->counted = 1;
		if ((err = probe(h, f, fd, off)) == -EACCES || err == -EPERM) {
			denied(h, f, err); /* watched by its mappings alone, as every file after it */
		} else if (err < 0) {
			h->st.probe_failures++;
			h->seen[slot] = *k; /* not again and again */
			hello_file_close(h, f);
			close(fd);
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
	close(fd);
	f->next = h->files;
	f->probed_ns = procctl_now_ns();
	h->files = f;
	h->nfiles++;
	h->st.files_probed++;
	hello_pid_add(h, f, pid);
	if (live)
		hello_recheck(h, pid);
}
