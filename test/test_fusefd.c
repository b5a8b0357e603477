/* SPDX-License-Identifier: Apache-2.0 */
/* A FUSE file named like a region ("/memfd:procctl:test-v1 (deleted)",
 * seen from a chroot, served by this test) cannot make the agent wait on
 * its server. Every close of a FUSE file sends FUSE_FLUSH and waits for
 * the answer, uninterruptibly; a hostile server never answers. The scan
 * takes no identity for a link off the memfd mount, so attach fetches
 * nothing; and an fd fetched after a swap (the scan saw a memfd, the
 * fetch got the FUSE file) is closed on another thread (SPEC.md 13.2).
 *
 * The server here answers a FLUSH only once the attach has returned, or
 * after 5 s: a FLUSH sent from inside the attach is seen waiting, and
 * fails the test. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "th.h"

#define NAME "memfd:procctl:test-v1 (deleted)"
#define SKIP 77

static int fuse_fd = -1;
static char abort_path[64]; /* fusectl's abort file for the mount, seen from the chroot */
static int returned; /* the attach under test has returned */
static int flushes;  /* FLUSH requests answered */
static int blocked;  /* a FLUSH waited 5 s with the attach not returned */

static void reply(uint64_t unique, int err, const void *p, size_t n)
{
	char buf[sizeof(struct fuse_out_header) + 256];
	struct fuse_out_header *o = (struct fuse_out_header *)(void *)buf;

	o->len = (uint32_t)(sizeof *o + n);
	o->error = err;
	o->unique = unique;
	memcpy(buf + sizeof *o, p, n);
	if (write(fuse_fd, buf, o->len) < 0 && errno != ENOENT) /* ENOENT: the request was interrupted */
		_exit(20);
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

static void flush_when_returned(uint64_t unique)
{
	int i;
	for (i = 0; i < 500 && !__atomic_load_n(&returned, __ATOMIC_ACQUIRE); i++)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	if (!__atomic_load_n(&returned, __ATOMIC_ACQUIRE))
		__atomic_store_n(&blocked, 1, __ATOMIC_RELEASE);
	reply(unique, 0, NULL, 0);
	__atomic_add_fetch(&flushes, 1, __ATOMIC_ACQ_REL);
}

/* One directory holding one file "f"; every other request ENOSYS. */
static void *serve(void *arg)
{
	static char buf[(1 << 20) + 8192];
	(void)arg;
	for (;;) {
		const struct fuse_in_header *in = (const void *)buf;
		const void *body = buf + sizeof *in;
		ssize_t n = read(fuse_fd, buf, sizeof buf);
		if (n < 0 && (errno == EINTR || errno == ENOENT))
			continue;
		if (n < (ssize_t)sizeof *in)
			return NULL; /* the mount is gone */
		if (in->opcode == FUSE_INIT) {
			const struct fuse_init_in *ii = body;
			struct fuse_init_out o = {.major = FUSE_KERNEL_VERSION, .max_write = 65536};
			o.minor = ii->minor < FUSE_KERNEL_MINOR_VERSION ? ii->minor : FUSE_KERNEL_MINOR_VERSION;
			o.max_readahead = ii->max_readahead;
			reply(in->unique, 0, &o, sizeof o);
		} else if (in->opcode == FUSE_LOOKUP) {
			struct fuse_entry_out e = {.nodeid = 2, .attr_valid = 1000, .entry_valid = 1000};
			attr(&e.attr, 2);
			if (strcmp(body, "f"))
				reply(in->unique, -ENOENT, NULL, 0);
			else
				reply(in->unique, 0, &e, sizeof e);
		} else if (in->opcode == FUSE_GETATTR) {
			struct fuse_attr_out a = {.attr_valid = 1000};
			attr(&a.attr, in->nodeid);
			reply(in->unique, 0, &a, sizeof a);
		} else if (in->opcode == FUSE_OPEN || in->opcode == FUSE_OPENDIR) {
			struct fuse_open_out o = {.fh = 1};
			reply(in->unique, 0, &o, sizeof o);
		} else if (in->opcode == FUSE_FLUSH) {
			flush_when_returned(in->unique);
		} else if (in->opcode == FUSE_RELEASE || in->opcode == FUSE_RELEASEDIR) {
			reply(in->unique, 0, NULL, 0);
		} else if (in->opcode != FUSE_FORGET && in->opcode != FUSE_BATCH_FORGET && in->opcode != FUSE_INTERRUPT) {
			reply(in->unique, -ENOSYS, NULL, 0);
		}
	}
}

/* A private mount namespace whose root holds NAME, a file of this test's
 * FUSE server, /proc and fusectl; this process chrooted into it. */
static int fuse_root(void)
{
	char dir[] = "/tmp/procctl-fusefd.XXXXXX", path[128], opts[128];
	struct stat st;
	pthread_t t;
	int fd;

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 || !mkdtemp(dir) ||
	    mount("tmpfs", dir, "tmpfs", 0, "size=1m") < 0)
		return 10;
	snprintf(path, sizeof path, "%s/fz", dir);
	if (mkdir(path, 0755) < 0)
		return 11;
	if ((fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC)) < 0)
		return SKIP;
	snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0", fuse_fd);
	if (mount("procctl-test", path, "fuse", MS_NOSUID | MS_NODEV, opts) < 0)
		return errno == ENODEV ? SKIP : 12;
	if (pthread_create(&t, NULL, serve, NULL) != 0 || stat(path, &st) < 0)
		return 13;
	snprintf(path, sizeof path, "%s/fusectl", dir);
	if (mkdir(path, 0755) < 0)
		return 13;
	if (mount("fusectl", path, "fusectl", 0, NULL) < 0)
		return SKIP;
	snprintf(abort_path, sizeof abort_path, "/fusectl/%u/abort", minor(st.st_dev));
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

/* Attach e to this process's own fd; 0 when refused as why wanted, with
 * no FLUSH waited on inside it. */
static int attach_refused(const struct procctl_scan_entry *e, enum procctl_reject want)
{
	enum procctl_reject why = PROCCTL_REJECT_NONE;
	procctl_client_t *c;

	__atomic_store_n(&returned, 0, __ATOMIC_RELEASE);
	c = procctl_client_attach(e, NULL, &why);
	__atomic_store_n(&returned, 1, __ATOMIC_RELEASE);
	if (c || why != want) {
		fprintf(stderr, "attach: %s, wanted %s\n", c ? "attached" : procctl_reject_name(why),
			procctl_reject_name(want));
		return 1;
	}
	return __atomic_load_n(&blocked, __ATOMIC_ACQUIRE);
}

static int hostile_fuse_file(void)
{
	struct procctl_scan_entry e;
	int fd, r, i;

	if ((r = fuse_root()) != 0)
		return r;
	if ((fd = open("/" NAME, O_RDWR | O_CLOEXEC)) < 0)
		return 30;
	if (!th_region(getpid(), fd, "test", &e) || e.ino != 0)
		return 31; /* named like a region: found, with no identity (not on the memfd mount) */
	if (attach_refused(&e, PROCCTL_REJECT_NOT_MEMFD))
		return 32; /* nothing fetched */
	/* As if the scan had seen a memfd at that fd, swapped for the FUSE
	 * file before the fetch: fetched, refused by its seals, closed on
	 * another thread. */
	e.dev = makedev(0, 1);
	e.ino = 1;
	if (attach_refused(&e, PROCCTL_REJECT_NOT_MEMFD))
		return 33;
	for (i = 0; i < 1000 && !__atomic_load_n(&flushes, __ATOMIC_ACQUIRE); i++)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	if (!__atomic_load_n(&flushes, __ATOMIC_ACQUIRE))
		return 34; /* the fetched fd was never closed */
	if (close(fd) < 0 || __atomic_load_n(&blocked, __ATOMIC_ACQUIRE))
		return 35;
	return 0;
}

static void fuse_file_never_waited_on(void **state)
{
	pid_t pid;
	int st;
	(void)state;

	pid = fork();
	if (pid == 0) {
		int r = hostile_fuse_file(), fd;
		/* Whatever failed, nothing may wait on the server at exit (its
		 * thread is gone by the time the fds close): abort the mount. */
		if (abort_path[0] && (fd = open(abort_path, O_WRONLY | O_CLOEXEC)) >= 0) {
			if (write(fd, "1", 1) != 1 && !r)
				r = 40;
			close(fd);
		}
		_exit(r);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == SKIP)
		TH_SKIP_OR_FAIL("FUSE (/dev/fuse, the fuse filesystem) not available here");
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fuse_file_never_waited_on),
	};
	return TH_RUN(tests);
}
