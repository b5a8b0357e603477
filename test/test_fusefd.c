/* SPDX-License-Identifier: Apache-2.0 */
/* A FUSE file named like a region ("/memfd:procctl:test-v1 (deleted)",
 * seen from a chroot, served by this test) cannot make the agent wait on
 * its server. Every close of a FUSE file sends FUSE_FLUSH and waits for
 * the answer, uninterruptibly; a hostile server never answers. The scan
 * takes no identity for a link off the memfd mount, so attach fetches
 * nothing; an fd fetched after a swap (the scan saw a memfd, the fetch got
 * the FUSE file) is closed on another thread; and with 16 such closes
 * waiting, the next such fd is kept open (SPEC.md 13.2).
 *
 * The server is a process of its own, so nothing here can wait on a
 * server that is gone: killed, it takes the mount's connection with it. It
 * answers a FLUSH once the attach under test has returned (and it is not
 * told to hold them), or after 5 s: a FLUSH sent from inside the attach is
 * seen waiting, and fails the test. */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "th.h"

#define NAME "memfd:procctl:test-v1 (deleted)"
#define SKIP 77
#define CLOSES_MAX 16 /* SPEC.md 13.2: such closes waiting at a time */
#define SWAPS 20

/* Between this test and its server, in memory both share. */
struct shared {
	int returned; /* the attach under test has returned */
	int hold;     /* keep every FLUSH unanswered */
	int flushes;  /* FLUSH requests answered */
	int waiting;  /* FLUSH requests not answered yet */
	int blocked;  /* a FLUSH waited 5 s with the attach not returned */
};

static struct shared *sh;

static int get(const int *v)
{
	return __atomic_load_n(v, __ATOMIC_ACQUIRE);
}

static void set(int *v, int x)
{
	__atomic_store_n(v, x, __ATOMIC_RELEASE);
}

/* ---- the server ------------------------------------------------------ */

static void reply(int fd, uint64_t unique, int err, const void *p, size_t n)
{
	char buf[sizeof(struct fuse_out_header) + 256];
	struct fuse_out_header *o = (struct fuse_out_header *)(void *)buf;

	o->len = (uint32_t)(sizeof *o + n);
	o->error = err;
	o->unique = unique;
	if (n)
		memcpy(buf + sizeof *o, p, n);
	(void)!write(fd, buf, o->len); /* ENOENT: the request was interrupted */
}

static void attr(struct fuse_attr *a, uint64_t ino)
{
	memset(a, 0, sizeof *a);
	a->ino = ino;
	a->mode = ino == FUSE_ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0600;
	a->nlink = 1;
	a->size = ino == FUSE_ROOT_ID ? 0 : 16384;
	a->blksize = 4096;
}

/* The FLUSHes waiting: each answered when its attach has returned and
 * none are held, or after 5 s (then the attach was waiting on it). */
struct held {
	uint64_t unique[64], since[64];
	int n;
};

static void flush_due(int fd, struct held *h)
{
	uint64_t now = th_now_ns();
	int i = 0;
	while (i < h->n) {
		int ret = get(&sh->returned);
		if ((ret && !get(&sh->hold)) || (!ret && now - h->since[i] > 5000000000ull)) {
			if (!ret)
				set(&sh->blocked, 1);
			reply(fd, h->unique[i], 0, NULL, 0);
			__atomic_add_fetch(&sh->flushes, 1, __ATOMIC_ACQ_REL);
			h->n--;
			h->unique[i] = h->unique[h->n];
			h->since[i] = h->since[h->n];
		} else {
			i++;
		}
	}
	set(&sh->waiting, h->n);
}

static void request(int fd, const struct fuse_in_header *in, struct held *h)
{
	const void *body = in + 1;

	if (in->opcode == FUSE_INIT) {
		const struct fuse_init_in *ii = body;
		struct fuse_init_out o = {.major = FUSE_KERNEL_VERSION, .max_write = 65536};
		o.minor = ii->minor < FUSE_KERNEL_MINOR_VERSION ? ii->minor : FUSE_KERNEL_MINOR_VERSION;
		o.max_readahead = ii->max_readahead;
		reply(fd, in->unique, 0, &o, sizeof o);
	} else if (in->opcode == FUSE_LOOKUP) {
		struct fuse_entry_out e = {.nodeid = 2, .attr_valid = 1000, .entry_valid = 1000};
		attr(&e.attr, 2);
		if (strcmp(body, "f"))
			reply(fd, in->unique, -ENOENT, NULL, 0);
		else
			reply(fd, in->unique, 0, &e, sizeof e);
	} else if (in->opcode == FUSE_GETATTR) {
		struct fuse_attr_out a = {.attr_valid = 1000};
		attr(&a.attr, in->nodeid);
		reply(fd, in->unique, 0, &a, sizeof a);
	} else if (in->opcode == FUSE_OPEN || in->opcode == FUSE_OPENDIR) {
		struct fuse_open_out o = {.fh = 1};
		reply(fd, in->unique, 0, &o, sizeof o);
	} else if (in->opcode == FUSE_FLUSH && h->n < 64) {
		h->unique[h->n] = in->unique;
		h->since[h->n++] = th_now_ns();
		set(&sh->waiting, h->n);
	} else if (in->opcode == FUSE_FLUSH || in->opcode == FUSE_RELEASE || in->opcode == FUSE_RELEASEDIR) {
		reply(fd, in->unique, 0, NULL, 0);
	} else if (in->opcode != FUSE_FORGET && in->opcode != FUSE_BATCH_FORGET && in->opcode != FUSE_INTERRUPT) {
		reply(fd, in->unique, -ENOSYS, NULL, 0);
	}
}

/* One directory holding one file "f"; every other request ENOSYS. Until
 * the mount's connection goes. */
static void serve(int fd)
{
	static char buf[(1 << 20) + 8192];
	struct held h = {{0}, {0}, 0};

	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		int n = poll(&p, 1, 10);
		ssize_t len;
		flush_due(fd, &h);
		if (n <= 0)
			continue;
		if ((len = read(fd, buf, sizeof buf)) < 0 && (errno == EINTR || errno == ENOENT))
			continue;
		if (len < (ssize_t)sizeof(struct fuse_in_header))
			return;
		request(fd, (const struct fuse_in_header *)(const void *)buf, &h);
	}
}

/* ---- the agent's side ------------------------------------------------ */

/* This process in a mount namespace of its own, chrooted into dir: a
 * tmpfs holding NAME, a file of the server's (started as *server), and
 * /proc. */
static int fuse_root(const char *dir, pid_t *server)
{
	char path[128], opts[128];
	pid_t self = getpid();
	int fuse, fd;

	if (unshare(CLONE_NEWNS) < 0)
		return errno == EPERM ? SKIP : 10;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 || mount("tmpfs", dir, "tmpfs", 0, "size=1m") < 0)
		return 10;
	snprintf(path, sizeof path, "%s/fz", dir);
	if (mkdir(path, 0755) < 0)
		return 11;
	if ((fuse = open("/dev/fuse", O_RDWR | O_CLOEXEC)) < 0)
		return SKIP;
	snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0", fuse);
	if (mount("procctl-test", path, "fuse", MS_NOSUID | MS_NODEV, opts) < 0)
		return errno == ENODEV || errno == EPERM ? SKIP : 12;
	if ((*server = fork()) < 0)
		return 13;
	if (*server == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == self)
			serve(fuse);
		_exit(0);
	}
	close(fuse); /* the server's alone: when it dies, the connection goes */
	snprintf(path, sizeof path, "%s/" NAME, dir);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0 || close(fd) < 0)
		return 14;
	snprintf(opts, sizeof opts, "%s/fz/f", dir);
	if (mount(opts, path, NULL, MS_BIND, NULL) < 0)
		return 15;
	snprintf(path, sizeof path, "%s/proc", dir);
	if (mkdir(path, 0755) < 0 || mount("/proc", path, NULL, MS_BIND | MS_REC, NULL) < 0)
		return 16;
	if (chroot(dir) < 0 || chdir("/") < 0)
		return 17;
	return 0;
}

/* Attach e (an fd of this process's own): 0 when refused as not_memfd,
 * with no FLUSH waited on inside it. */
static int refused(const struct procctl_scan_entry *e)
{
	enum procctl_reject why = PROCCTL_REJECT_NONE;
	procctl_client_t *c;

	set(&sh->returned, 0);
	c = procctl_client_attach(e, NULL, &why);
	set(&sh->returned, 1);
	if (c || why != PROCCTL_REJECT_NOT_MEMFD) {
		fprintf(stderr, "attach: %s, wanted not_memfd\n", c ? "attached" : procctl_reject_name(why));
		return 1;
	}
	return get(&sh->blocked);
}

/* Until the server has answered want FLUSHes (10 s at most): 0, or 1. */
static int flushed(int want)
{
	int i;
	for (i = 0; i < 1000 && get(&sh->flushes) < want; i++)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	return get(&sh->flushes) != want;
}

/* This process's fds open on NAME. */
static int open_on_name(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	char link[128];
	int n = 0;
	ssize_t len;

	while (d && (de = readdir(d)))
		if ((len = readlinkat(dirfd(d), de->d_name, link, sizeof link - 1)) > 0) {
			link[len] = 0;
			n += !strcmp(link, "/" NAME);
		}
	if (d)
		closedir(d);
	return n;
}

/* This process's threads closing a suspect fd (procctl-close): one whose
 * FLUSH the server answered may not have returned yet, and holds its
 * slot until it has. */
static int closers(void)
{
	char path[300], comm[32];
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	while (d && (de = readdir(d))) {
		FILE *f;
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
		if (de->d_name[0] == '.' || !(f = fopen(path, "re")))
			continue;
		n += fgets(comm, sizeof comm, f) && !strcmp(comm, "procctl-close\n");
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

static int hostile_fuse_file(void)
{
	struct procctl_scan_entry e;
	int fd, i;

	if ((fd = open("/" NAME, O_RDWR | O_CLOEXEC)) < 0)
		return 30;
	if (!th_region(getpid(), fd, "test", &e) || e.ino != 0)
		return 31; /* named like a region: found, with no identity (not on the memfd mount) */
	if (refused(&e))
		return 32;
	nanosleep(&(struct timespec){0, 200000000}, NULL);
	if (get(&sh->flushes))
		return 33; /* it was fetched (and closed) after all */
	/* As if the scan had seen a memfd at that fd, swapped for the FUSE
	 * file before the fetch: fetched, refused by its seals, closed on
	 * another thread. */
	e.dev = makedev(0, 1);
	e.ino = 1;
	if (refused(&e) || flushed(1))
		return 34;
	for (i = 0; i < 6000 && closers(); i++) /* its close returned: its slot free (60 s at most) */
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	/* A server that answers no FLUSH: 16 closes wait, and the fds past
	 * them stay open here. */
	set(&sh->hold, 1);
	for (i = 0; i < SWAPS; i++)
		if (refused(&e))
			return 35;
	for (i = 0; i < 6000 && get(&sh->waiting) < CLOSES_MAX; i++) /* 60 s: 10 were not always enough under load */
		nanosleep(&(struct timespec){0, 10000000}, NULL); /* the closes reach the server */
	if ((i = open_on_name()) != 1 + SWAPS - CLOSES_MAX) {
		fprintf(stderr, "%d fds open on the file, wanted %d\n", i, 1 + SWAPS - CLOSES_MAX);
		return 36;
	}
	set(&sh->hold, 0);
	if (flushed(1 + CLOSES_MAX) || close(fd) < 0 || get(&sh->blocked))
		return 37;
	return 0;
}

static int in_fuse_root(const char *dir)
{
	pid_t server = -1;
	int r = fuse_root(dir, &server);

	if (!r)
		r = hostile_fuse_file();
	if (server > 0) { /* its connection goes with it: nothing can wait on it after */
		kill(server, SIGKILL);
		waitpid(server, NULL, 0);
	}
	return r;
}

static void fuse_file_never_waited_on(void **state)
{
	char dir[] = "/tmp/procctl-fusefd.XXXXXX";
	pid_t pid;
	int st;
	(void)state;

	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(sh != MAP_FAILED);
	assert_non_null(mkdtemp(dir));
	pid = fork();
	if (pid == 0)
		_exit(in_fuse_root(dir));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	rmdir(dir);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == SKIP)
		TH_SKIP_OR_FAIL("FUSE (/dev/fuse, the fuse filesystem, mount namespaces) not available here");
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fuse_file_never_waited_on),
	};
	return TH_RUN(tests);
}
