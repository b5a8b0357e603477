/* SPDX-License-Identifier: Apache-2.0 */
/* client.c - attach to one region and talk to it (SPEC.md 6, 7, 13.2). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "client.h"
#include "fdclose.h"
#include "log.h"
#include "opts.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif
#define TMPFS_MAGIC 0x01021994
#define HUGETLBFS_MAGIC 0x958458f6
#define SUSPECT_CLOSES_MAX 16u /* closes of fetched non-memfd fds under way at a time */

static unsigned suspect_kept; /* such fds kept open: SUSPECT_CLOSES_MAX were closing */

/* pidfd_getfd exists (Linux 5.6); probed once. */
static int have_getfd(void)
{
	static int cached; /* 0 unknown, 1 yes, 2 no */
	int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (!v) {
		v = (syscall(SYS_pidfd_getfd, -1, 0, 0) < 0 && errno == ENOSYS) ? 2 : 1;
		__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	}
	return v == 1;
}

int procctl_fdinfo_mnt_id(int dirfd, const char *fdinfo_path)
{
	char buf[512];
	const char *p;
	int fd = openat(dirfd, fdinfo_path, O_RDONLY | O_CLOEXEC), id = -1;
	ssize_t n;
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strstr(buf, "mnt_id:");
	if (p)
		id = atoi(p + 7);
	return id;
}

int procctl_memfd_mnt_id(void)
{
	/* id + 1, 0 unknown: memfds all live on one internal mount, whose id
	 * is often 0 itself. */
	static int cached;
	int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (!v) {
		char path[64];
		int probe = (int)syscall(SYS_memfd_create, "procctl-probe", MFD_CLOEXEC), id;
		if (probe < 0)
			return -1;
		snprintf(path, sizeof path, "/proc/self/fdinfo/%d", probe);
		id = procctl_fdinfo_mnt_id(AT_FDCWD, path);
		close(probe);
		if (id < 0)
			return -1;
		v = id + 1;
		__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	}
	return v - 1;
}

/* Without pidfd_getfd (SPEC.md 2.4): open the link with O_PATH, check it
 * lives on the same mount as a memfd of our own, reopen it through
 * /proc/self/fd. Never open() a path the process controls. */
static int fetch_fallback(const char *proc_root, pid_t pid, int fdnum)
{
	char path[PATH_MAX];
	int opath, ours, theirs, fd;

	if (snprintf(path, sizeof path, "%s/%d/fd/%d", proc_root, (int)pid, fdnum) >= (int)sizeof path)
		return -ENAMETOOLONG;
	opath = open(path, O_PATH | O_CLOEXEC);
	if (opath < 0) /* closed since the scan: swapped; no access: EPERM */
		return errno == ENOENT ? -EBADF : errno == EACCES ? -EPERM : -errno;
	ours = procctl_memfd_mnt_id();
	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", opath);
	theirs = procctl_fdinfo_mnt_id(AT_FDCWD, path);
	if (ours < 0 || theirs != ours) {
		close(opath);
		return -EPROTO;
	}
	/* The magic link of our own O_PATH fd: it names that file, whatever
	 * the process does to its fd table meanwhile. */
	snprintf(path, sizeof path, "/proc/self/fd/%d", opath);
	fd = open(path, O_RDWR | O_CLOEXEC);
	close(opath);
	return fd < 0 ? -errno : fd;
}

int procctl_read_nspid(const char *proc_root, pid_t pid, pid_t *out, int max)
{
	char path[PATH_MAX], buf[4096], *p;
	int fd, n = 0;
	ssize_t len;

	if (snprintf(path, sizeof path, "%s/%d/status", proc_root, (int)pid) >= (int)sizeof path)
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	len = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (len <= 0)
		return -ESRCH;
	buf[len] = 0;
	p = strstr(buf, "\nNSpid:");
	if (!p)
		return -ENOENT;
	p += 7;
	while (*p && *p != '\n') {
		char *end;
		long v;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\n' || !*p)
			break;
		v = strtol(p, &end, 10);
		if (end == p || v <= 0 || v > 0x3fffffff || n >= max)
			return -EINVAL;
		out[n++] = (pid_t)v;
		p = end;
	}
	return n ? n : -EINVAL;
}

int procctl_process_exited(int pidfd)
{
	struct pollfd p = {pidfd, POLLIN, 0};
	return poll(&p, 1, 0) > 0;
}

/* 1 when pid is in this process's pid namespace: its innermost NSpid is
 * then pid itself, and /proc/<pid>/status need not be read. */
static int same_pidns(const char *root, pid_t pid)
{
	static dev_t dev;
	static ino_t ino; /* ours, probed once (a registry never setns()) */
	struct stat st;
	char path[PATH_MAX];
	if (!__atomic_load_n(&ino, __ATOMIC_ACQUIRE)) {
		if (stat("/proc/self/ns/pid", &st) < 0)
			return 0;
		__atomic_store_n(&dev, st.st_dev, __ATOMIC_RELAXED);
		__atomic_store_n(&ino, st.st_ino, __ATOMIC_RELEASE);
	}
	if (snprintf(path, sizeof path, "%s/%d/ns/pid", root, (int)pid) >= (int)sizeof path)
		return 0;
	return stat(path, &st) == 0 && st.st_ino == __atomic_load_n(&ino, __ATOMIC_ACQUIRE) &&
	       st.st_dev == __atomic_load_n(&dev, __ATOMIC_RELAXED);
}

/* Check the fetched fd (SPEC.md 13.2): F_GET_SEALS is the first syscall,
 * and only files that can carry seals (shmem, hugetlbfs) get further; then
 * the filesystem, whether it is the fd the scan saw, its seals and size. */
static enum procctl_reject check_fd(int fd, const struct procctl_scan_entry *e, struct stat *st)
{
	struct statfs sfs;
	int seals = fcntl(fd, F_GET_SEALS);
	const int need = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

	/* No seals, no memfd: stop before anything (fstat of a FUSE file
	 * could wait forever on its daemon). */
	if (seals < 0 || fstatfs(fd, &sfs) < 0)
		return PROCCTL_REJECT_NOT_MEMFD;
	if ((unsigned long)sfs.f_type == HUGETLBFS_MAGIC)
		return PROCCTL_REJECT_HUGETLB;
	if ((unsigned long)sfs.f_type != TMPFS_MAGIC || fstat(fd, st) < 0 || !S_ISREG(st->st_mode))
		return PROCCTL_REJECT_NOT_MEMFD;
	if (st->st_dev != e->dev || st->st_ino != e->ino)
		return PROCCTL_REJECT_FD_SWAPPED;
	if (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE))
		return PROCCTL_REJECT_WRONG_SEALS;
	if ((seals & need) != need)
		return PROCCTL_REJECT_UNSEALED;
	if (st->st_size > PROCCTL_REGION_MAX || st->st_size < (off_t)sizeof(struct procctl_hdr))
		return PROCCTL_REJECT_BAD_SIZE;
	return PROCCTL_REJECT_NONE;
}

/* Close a fetched fd. Only shmem and hugetlbfs files answer F_GET_SEALS;
 * anything else may be a FUSE file swapped in after the scan, whose every
 * close sends FUSE_FLUSH and waits, uninterruptibly, for a server the
 * process may run: that close is not the caller's (an event loop's) to
 * wait for. At most SUSPECT_CLOSES_MAX wait at a time; past that, such
 * an fd is kept open and counted (an fd is cheaper than a thread stuck for
 * good, and than the loop). */
static void close_fetched(int fd)
{
	if (fcntl(fd, F_GET_SEALS) >= 0) {
		close(fd);
	} else if (procctl_close_suspect(fd, SUSPECT_CLOSES_MAX) < 0) {
		unsigned n = __atomic_add_fetch(&suspect_kept, 1u, __ATOMIC_RELAXED);
		procctl_log_limited(PROCCTL_LOG_WARN, "fd_kept", "fd=%d kept=%u reason=\"%u closes of fetched files that "
				    "cannot carry seals have not returned (a FUSE server not answering?)\"",
				    fd, n, SUSPECT_CLOSES_MAX);
	}
}

/* The process's event socket (SPEC.md 6.6, 13.2), fetched once: kept
 * only when it is an AF_UNIX SOCK_SEQPACKET socket whose peer is the
 * process itself (a socketpair it made; such a socket cannot be connected
 * elsewhere), so a send reaches nobody else. Else none is used, said
 * once; the region is attached all the same. */
static void event_fetch(procctl_client_t *c, int getfd)
{
	struct ucred cr;
	socklen_t len = sizeof(int), crlen = sizeof cr;
	int fd, domain = 0, type = 0, listening = 1;
	const char *why;
	if (!getfd) { /* a socket is not opened through /proc */
		why = "no pidfd_getfd";
		goto refused;
	}
	if ((fd = (int)syscall(SYS_pidfd_getfd, c->remote->pidfd, c->r.hdr.event_fd, 0)) < 0) {
		why = "not fetched";
		goto refused;
	}
	/* First a socket-only call: no filesystem is asked (a FUSE file
	 * named here would wait on its server). */
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0) {
		close_fetched(fd);
		why = "not a socket";
		goto refused;
	}
	len = sizeof type;
	if (domain != AF_UNIX || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET)
		why = "not an AF_UNIX SOCK_SEQPACKET socket";
	else if ((len = sizeof listening, getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0) || listening)
		why = "a listening socket";
	else if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 || cr.pid != c->info.pid)
		why = "its peer is not the process";
	else {
		c->r.event_fd = fd;
		return;
	}
	close(fd);
refused:
	procctl_log_limited(PROCCTL_LOG_WARN, "event_fd_refused", "pid=%d fd=%d reason=\"%s\"", (int)c->info.pid,
			    (int)c->r.hdr.event_fd, why);
}

void procctl_remote_put(struct procctl_remote *rm)
{
	if (__atomic_sub_fetch(&rm->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		if (rm->mem_fd >= 0)
			close(rm->mem_fd);
		if (rm->pidfd >= 0)
			close(rm->pidfd);
		free(rm->mem_path);
		free(rm);
	}
}

/* sib's remote, shared (a reference taken), when sib is a client of pid
 * and its process still runs the image it had: else NULL. */
static struct procctl_remote *remote_shared(const procctl_client_t *sib, pid_t pid)
{
	if (!sib || sib->info.pid != pid || procctl_remote_alive(sib->remote) < 0)
		return NULL;
	__atomic_add_fetch(&sib->remote->refs, 1, __ATOMIC_ACQ_REL);
	return sib->remote;
}

/* A remote of its own for c: pid pinned, /proc/<pid>/mem open (before
 * the fd is fetched: opened on the mm that created the region; an exec
 * before this closes the memfd, and the fetch fails). 0 or an errno. */
static int remote_open(procctl_client_t *c, const char *root, pid_t pid)
{
	char path[PATH_MAX];
	if (!(c->remote = calloc(1, sizeof *c->remote)))
		return ENOMEM;
	c->remote->refs = 1;
	c->remote->mem_fd = -1;
	c->remote->pid = pid;
	c->remote->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (c->remote->pidfd < 0)
		return errno;
	if (snprintf(path, sizeof path, "%s/%d/mem", root, (int)pid) >= (int)sizeof path)
		return ENAMETOOLONG;
	c->remote->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c->remote->mem_fd < 0)
		return errno == ENOENT ? ESRCH : errno == EACCES ? EPERM : errno;
	if (!(c->remote->mem_path = strdup(path)))
		return ENOMEM;
	return 0;
}

static procctl_client_t *attach_fail(procctl_client_t *c, int err)
{
	procctl_client_close(c);
	errno = err;
	return NULL;
}

/* The region's fd, fetched from e's process (pidfd_getfd where the kernel
 * has it and o allows it, else through /proc under root), checked and
 * mapped into c->r; st is the fd's. 0 or an errno (*why says what was
 * refused). */
static int region_fetch(procctl_client_t *c, const struct procctl_scan_entry *e, const struct procctl_attach_opts *o,
			const char *root, struct stat *st, enum procctl_reject *why)
{
	int fd, err;

	/* Not on the memfd mount when the scan looked (or gone): a link's
	 * name proves nothing, and a fetched FUSE file's close waits on its
	 * server. */
	if (!e->ino) {
		*why = PROCCTL_REJECT_NOT_MEMFD;
		return EPROTO;
	}
	if (have_getfd() && !(o->flags & PROCCTL_ATTACH_NO_GETFD))
		fd = (int)syscall(SYS_pidfd_getfd, c->remote->pidfd, e->fd, 0);
	else
		fd = fetch_fallback(root, e->pid, e->fd);
	if (fd < 0) {
		err = fd == -1 ? errno : -fd;
		if (err == EPROTO || err == EBADF)
			*why = err == EPROTO ? PROCCTL_REJECT_NOT_MEMFD : PROCCTL_REJECT_FD_SWAPPED;
		return err == EBADF ? EPROTO : err;
	}
	*why = check_fd(fd, e, st);
	if (*why == PROCCTL_REJECT_NONE) {
		err = procctl_region_map(&c->r, fd, (uint64_t)st->st_size, why);
	} else {
		err = -EPROTO;
	}
	close_fetched(fd);
	return -err;
}

/* The mapped region is the one the scan named (consumer, schema), made by
 * the pinned process itself (c->info.nspid filled on the way), which has
 * not exited: 0 or an errno (*why says what was refused). */
static int creator_check(procctl_client_t *c, const struct procctl_scan_entry *e, const char *root,
			 enum procctl_reject *why)
{
	int n;

	if (strncmp(c->r.hdr.consumer, e->consumer, sizeof c->r.hdr.consumer) ||
	    c->r.hdr.schema_version != e->schema_version) {
		*why = PROCCTL_REJECT_CONSUMER_MISMATCH;
		return EPROTO;
	}
	/* Only through the creator: a forked child holds the same fd. */
	if (same_pidns(root, e->pid)) {
		c->info.nspid[0] = e->pid;
		n = 1;
	} else {
		n = procctl_read_nspid(root, e->pid, c->info.nspid, PROCCTL_NSPID_MAX);
		if (n < 0)
			return -n;
	}
	c->info.nspid_count = n;
	if (c->info.nspid[n - 1] != c->r.hdr.creator_pid) {
		*why = PROCCTL_REJECT_NOT_CREATOR;
		return EPROTO;
	}
	/* The pid read through /proc was the pinned process only if it has
	 * not exited meanwhile. */
	if (procctl_process_exited(c->remote->pidfd))
		return ESRCH;
	return 0;
}

_Static_assert(sizeof(struct procctl_attach_opts) == PROCCTL_OPTS_END(struct procctl_attach_opts, sibling),
	       "no trailing padding (opts.h)");

procctl_client_t *procctl_client_attach(const struct procctl_scan_entry *e, const struct procctl_attach_opts *opts,
					enum procctl_reject *why)
{
	struct procctl_attach_opts o;
	const char *root;
	procctl_client_t *c;
	struct stat st;
	int err;

	*why = PROCCTL_REJECT_NONE;
	if (procctl_opts_take(&o, sizeof o, opts) < 0 || (o.flags & ~PROCCTL_ATTACH_NO_GETFD)) {
		errno = EINVAL;
		return NULL;
	}
	root = o.proc_root ? o.proc_root : "/proc";
	c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->refs = 1;
	pthread_mutex_init(&c->wlock, NULL);
	c->info.pid = e->pid;
	if (!(c->remote = remote_shared(o.sibling, e->pid)) && (err = remote_open(c, root, e->pid)))
		return attach_fail(c, err);
	if ((err = region_fetch(c, e, &o, root, &st, why)) || (err = creator_check(c, e, root, why)))
		return attach_fail(c, err);
	if (c->r.hdr.flags & PROCCTL_HDR_EVENT_FD)
		event_fetch(c, have_getfd() && !(o.flags & PROCCTL_ATTACH_NO_GETFD));
	c->info.dev = st.st_dev;
	c->info.ino = st.st_ino;
	c->info.hdr = c->r.hdr;
	c->info.event_socket = c->r.event_fd >= 0;
	return c;
}

procctl_client_t *procctl_client_ref(procctl_client_t *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
	return c;
}

void procctl_client_close(procctl_client_t *c)
{
	if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	if (c->r.map)
		procctl_region_unmap(&c->r);
	if (c->remote)
		procctl_remote_put(c->remote);
	pthread_mutex_destroy(&c->wlock);
	free(c);
}

int procctl_client_info(const procctl_client_t *c, struct procctl_client_info *out, size_t sz)
{
	return procctl_out_give(out, sz, &c->info, sizeof c->info);
}

uint64_t procctl_client_published_max(const procctl_client_t *c)
{
	return __atomic_load_n(&c->published_max, __ATOMIC_ACQUIRE);
}

uint64_t procctl_client_config_gen(procctl_client_t *c)
{
	uint64_t g;
	pthread_mutex_lock(&c->wlock);
	g = c->r.config_gen;
	pthread_mutex_unlock(&c->wlock);
	return g;
}

uint64_t procctl_client_region_config_gen(procctl_client_t *c)
{
	return procctl_region_peek_config_gen(&c->r);
}

int procctl_client_config_is(procctl_client_t *c, const void *payload, size_t len)
{
	int same;
	pthread_mutex_lock(&c->wlock);
	same = c->r.config_gen && c->r.length && c->r.length == len && !memcmp(c->r.payload, payload, len);
	pthread_mutex_unlock(&c->wlock);
	return same;
}

int procctl_client_pidfd(const procctl_client_t *c)
{
	return c->remote->pidfd;
}

void procctl_client_set_data(procctl_client_t *c, void *data)
{
	__atomic_store_n(&c->data, data, __ATOMIC_RELEASE);
}

void *procctl_client_data(const procctl_client_t *c)
{
	return __atomic_load_n(&c->data, __ATOMIC_ACQUIRE);
}


/* ---- writes --------------------------------------------------------- */

enum procctl_ownership procctl_client_ownership(const procctl_client_t *c)
{
	return (enum procctl_ownership)__atomic_load_n(&c->own, __ATOMIC_RELAXED);
}

int64_t procctl_client_claim(procctl_client_t *c, uint32_t domain, uint32_t epoch, uint64_t lease_ns)
{
	int64_t g;
	pthread_mutex_lock(&c->wlock);
	g = procctl_region_claim(&c->r, domain, epoch, lease_ns);
	__atomic_store_n(&c->own,
			 g > 0 ? PROCCTL_OWN_OWNED : g == -EEXIST ? PROCCTL_OWN_CONFLICT : g < 0 ? PROCCTL_OWN_BROKEN
			       : PROCCTL_OWN_PASSIVE,
			 __ATOMIC_RELAXED);
	if (g > 0 && c->r.config_gen > c->published_max)
		__atomic_store_n(&c->published_max, c->r.config_gen, __ATOMIC_RELAXED); /* adopted */
	pthread_mutex_unlock(&c->wlock);
	return g;
}

void procctl_client_heartbeat(procctl_client_t *c)
{
	pthread_mutex_lock(&c->wlock);
	if (c->own == PROCCTL_OWN_OWNED)
		procctl_region_heartbeat(&c->r);
	pthread_mutex_unlock(&c->wlock);
}

/* Run one owner write under the lock; -EPERM unless owned. */
#define OWNED_WRITE(c, expr)                          \
	do {                                          \
		int64_t g_ = -EPERM;                  \
		pthread_mutex_lock(&(c)->wlock);      \
		if ((c)->own == PROCCTL_OWN_OWNED)    \
			g_ = (expr);                  \
		if (g_ == -EBUSY)                     \
			procctl__store_relaxed(&(c)->own, PROCCTL_OWN_BROKEN); \
		pthread_mutex_unlock(&(c)->wlock);    \
		return g_;                            \
	} while (0)

/* Under wlock; read anywhere with atomics. */
static void published(procctl_client_t *c, uint64_t gen)
{
	__atomic_store_n(&c->published_max, gen, __ATOMIC_RELEASE);
}

static int64_t publish_locked(procctl_client_t *c, const void *payload, size_t len)
{
	int64_t g;
	if (len == 0 || len > c->r.hdr.payload_cap)
		return -EINVAL;
	g = procctl_region_publish(&c->r, payload, (uint32_t)len);
	if (g > 0)
		published(c, (uint64_t)g);
	return g;
}

static int64_t clear_locked(procctl_client_t *c)
{
	int64_t g = procctl_region_clear(&c->r);
	if (g > 0)
		published(c, (uint64_t)g);
	return g;
}

int64_t procctl_client_write(procctl_client_t *c, const void *payload, size_t len)
{
	OWNED_WRITE(c, publish_locked(c, payload, len));
}

int64_t procctl_client_clear(procctl_client_t *c)
{
	OWNED_WRITE(c, clear_locked(c));
}

int64_t procctl_client_grant(procctl_client_t *c, const procctl_resource_t *res, uint64_t grant_id)
{
	OWNED_WRITE(c, procctl_region_grant(&c->r, res, grant_id));
}

int64_t procctl_client_revoke(procctl_client_t *c, const procctl_resource_t *res)
{
	OWNED_WRITE(c, procctl_region_revoke(&c->r, res));
}

int64_t procctl_client_drop(procctl_client_t *c, const procctl_resource_t *res)
{
	OWNED_WRITE(c, procctl_region_drop(&c->r, res));
}

int procctl_client_grants(procctl_client_t *c, struct procctl_grant_entry *out, uint32_t max)
{
	uint32_t n;
	pthread_mutex_lock(&c->wlock);
	n = c->r.ngrants;
	memcpy(out, c->r.grants, (size_t)(n < max ? n : max) * sizeof *out);
	pthread_mutex_unlock(&c->wlock);
	return (int)n;
}

int procctl_client_set_lease(procctl_client_t *c, uint64_t lease_ns)
{
	OWNED_WRITE(c, procctl_region_set_lease(&c->r, lease_ns));
}

int procctl_client_release(procctl_client_t *c)
{
	int r;
	pthread_mutex_lock(&c->wlock);
	r = c->own == PROCCTL_OWN_OWNED ? procctl_region_release(&c->r) : -EPERM;
	__atomic_store_n(&c->own, PROCCTL_OWN_PASSIVE, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->wlock);
	return r;
}

int64_t procctl_client_uninstall(procctl_client_t *c)
{
	int64_t g;
	pthread_mutex_lock(&c->wlock);
	g = c->own == PROCCTL_OWN_OWNED ? procctl_region_uninstall(&c->r) : -EPERM;
	__atomic_store_n(&c->own, PROCCTL_OWN_PASSIVE, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->wlock);
	return g;
}
