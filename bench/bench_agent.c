/* SPDX-License-Identifier: Apache-2.0 */
/* bench_agent - the agent core against floors measured in the same run.
 * Prints one JSON object per line: {"name", "value", "unit", "floor",
 * "ratio"}; values and floors are medians.
 *
 *   attach      procctl_client_attach + close     floor: pidfd_open, pidfd_getfd,
 *                                                 fstat, fstatfs, F_GET_SEALS,
 *                                                 mmap, munmap, close, close
 *   wake        publish of 4 KiB -> the process   floor: a raw cross-process
 *               returns from procctl_wait         FUTEX_WAKE -> FUTEX_WAIT return
 *   ack         publish -> ack observed by the    floor: a cross-process futex
 *               agent (procctl_client_wait_ack)   round trip
 *   read_state  procctl_client_read_state, 4 KiB, floor: one process_vm_readv
 *               with a deadline (a worker thread)  of the same size
 *   read_state_inline   the same without deadline, on the caller's thread
 *   scan        procctl_scan, 1000 processes      floor: readdir + readlink of
 *               holding a region each             the same /proc tree
 *
 * All child processes are forked before the first thread starts.
 */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "client.h"

#define NPROC 1000
#define STATE_CAP 3900 /* a 4 KiB state block with 2 resources */

struct shared {       /* one page shared with the children */
	uint32_t floor_word; /* futex floors */
	uint32_t back_word;
	uint32_t ready;       /* the child is about to sleep */
	uint32_t pad;
	int64_t woke_ns;      /* when the child returned from its wait */
	int fd;               /* the child's region fd */
};

static long futex(uint32_t *w, int op, uint32_t v)
{
	return syscall(SYS_futex, w, op, v, NULL, NULL, 0);
}

static int region(procctl_t *ctx, void *storage, const char *consumer)
{
	procctl_config_t cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.consumer = consumer;
	cfg.schema_version = 1;
	cfg.payload_capacity = 4096;
	cfg.state_capacity = STATE_CAP;
	cfg.resource_capacity = 2;
	cfg.state_storage = storage;
	return procctl_init(ctx, &cfg);
}

/* ---- children -------------------------------------------------------- */

/* mode 0: idle holder; 1: wake loop (wait, poll, stamp); 2: ack loop;
 * 3: futex floor loop (wait on floor_word, stamp; or echo back). */
static void child_main(struct shared *sh, int mode, const char *consumer)
{
	static unsigned char storage[PROCCTL_STATE_STORAGE(2, STATE_CAP)];
	static char buf[4096];
	procctl_t ctx;
	uint64_t gen;
	if (mode < 3 && region(&ctx, storage, consumer) < 0)
		_exit(1);
	if (mode < 3) {
		procctl_state_set(&ctx, buf, STATE_CAP, 0); /* a full 4 KiB block */
		__atomic_store_n(&sh->fd, procctl_fd(&ctx), __ATOMIC_RELEASE);
	}
	for (;;) {
		if (mode == 0) {
			pause();
		} else if (mode == 1 || mode == 2) {
			__atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
			procctl_wait(&ctx, -1);
			if (mode == 1)
				__atomic_store_n(&sh->woke_ns, bench_now_ns(), __ATOMIC_RELEASE);
			if (procctl_poll(&ctx, buf, sizeof buf, &gen) > 0 && mode == 2)
				procctl_ack(&ctx, gen, 0);
		} else {
			uint32_t v = __atomic_load_n(&sh->floor_word, __ATOMIC_ACQUIRE);
			__atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
			futex(&sh->floor_word, FUTEX_WAIT, v);
			if (__atomic_load_n(&sh->floor_word, __ATOMIC_ACQUIRE) == v)
				continue;
			__atomic_store_n(&sh->woke_ns, bench_now_ns(), __ATOMIC_RELEASE);
			__atomic_add_fetch(&sh->back_word, 1, __ATOMIC_ACQ_REL); /* round trip */
			futex(&sh->back_word, FUTEX_WAKE, 1);
		}
	}
}

static pid_t spawn(struct shared *sh, int mode, const char *consumer)
{
	pid_t pid = fork();
	if (pid == 0)
		child_main(sh, mode, consumer);
	return pid;
}

static struct shared *shared_page(void)
{
	struct shared *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		abort();
	return sh;
}

static procctl_client_t *attach_to(pid_t pid, const char *consumer, struct procctl_scan_entry *out);

static int pick(const struct procctl_scan_entry *e, void *arg)
{
	*(struct procctl_scan_entry *)arg = *e;
	return 0;
}

static procctl_client_t *attach_to(pid_t pid, const char *consumer, struct procctl_scan_entry *out)
{
	enum procctl_reject why;
	procctl_client_t *c;
	while (procctl_scan_pid(NULL, pid, consumer, pick, out) < 1)
		usleep(1000);
	c = procctl_client_attach(out, NULL, &why);
	if (!c)
		abort();
	return c;
}

/* Wait until the child said it is about to sleep, then give it time to
 * get into the kernel. */
static void child_asleep(struct shared *sh)
{
	while (!__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE))
		;
	usleep(300);
	__atomic_store_n(&sh->ready, 0, __ATOMIC_RELEASE);
}

#define ROUNDS 400

static void bench_attach(pid_t target, const struct procctl_scan_entry *e)
{
	double v[ROUNDS], f[ROUNDS];
	int i;
	for (i = 0; i < ROUNDS; i++) {
		enum procctl_reject why;
		int64_t t0 = bench_now_ns();
		int pfd = (int)syscall(SYS_pidfd_open, target, 0);
		int fd = (int)syscall(SYS_pidfd_getfd, pfd, e->fd, 0);
		struct stat st;
		struct statfs sfs;
		void *m;
		procctl_client_t *c;
		fstat(fd, &st);
		fstatfs(fd, &sfs);
		fcntl(fd, F_GET_SEALS);
		m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		munmap(m, (size_t)st.st_size);
		close(fd);
		close(pfd);
		f[i] = bench_now_ns() - t0;
		t0 = bench_now_ns();
		c = procctl_client_attach(e, NULL, &why);
		procctl_client_close(c);
		v[i] = bench_now_ns() - t0;
		if (!c)
			abort();
	}
	bench_report("attach", "ns", bench_median(v, ROUNDS), bench_median(f, ROUNDS));
}

static void bench_wake(struct shared *sh, struct shared *fl, procctl_client_t *c)
{
	static char payload[4096];
	double v[ROUNDS], f[ROUNDS];
	int i;
	for (i = 0; i < ROUNDS; i++) {
		int64_t t0;
		child_asleep(fl);
		__atomic_store_n(&fl->woke_ns, 0, __ATOMIC_RELEASE);
		t0 = bench_now_ns();
		__atomic_add_fetch(&fl->floor_word, 1, __ATOMIC_ACQ_REL);
		futex(&fl->floor_word, FUTEX_WAKE, INT_MAX);
		while (!__atomic_load_n(&fl->woke_ns, __ATOMIC_ACQUIRE))
			;
		f[i] = fl->woke_ns - t0;
		while (__atomic_load_n(&fl->back_word, __ATOMIC_ACQUIRE) != (uint32_t)i + 1) /* its echo */
			;

		child_asleep(sh);
		__atomic_store_n(&sh->woke_ns, 0, __ATOMIC_RELEASE);
		payload[0] = (char)i;
		t0 = bench_now_ns();
		if (procctl_client_write(c, payload, sizeof payload) < 0)
			abort();
		while (!__atomic_load_n(&sh->woke_ns, __ATOMIC_ACQUIRE))
			;
		v[i] = sh->woke_ns - t0;
	}
	bench_report("wake", "ns", bench_median(v, ROUNDS), bench_median(f, ROUNDS));
}

static void bench_ack(struct shared *fl, struct shared *ash, procctl_client_t *c)
{
	static char payload[64];
	double v[ROUNDS], f[ROUNDS];
	uint32_t back = __atomic_load_n(&fl->back_word, __ATOMIC_ACQUIRE);
	int i;
	for (i = 0; i < ROUNDS; i++) {
		struct procctl_ack ack;
		int64_t t0, g;
		child_asleep(fl);
		t0 = bench_now_ns();
		__atomic_add_fetch(&fl->floor_word, 1, __ATOMIC_ACQ_REL);
		futex(&fl->floor_word, FUTEX_WAKE, INT_MAX);
		back++;
		while (__atomic_load_n(&fl->back_word, __ATOMIC_ACQUIRE) != back)
			futex(&fl->back_word, FUTEX_WAIT, back - 1);
		f[i] = bench_now_ns() - t0;

		child_asleep(ash);
		payload[0] = (char)i;
		t0 = bench_now_ns();
		g = procctl_client_write(c, payload, sizeof payload);
		if (g < 0 || procctl_client_wait_ack(c, (uint64_t)g, bench_now_ns() + 1000000000, &ack) < 0)
			abort();
		v[i] = bench_now_ns() - t0;
	}
	bench_report("ack", "ns", bench_median(v, ROUNDS), bench_median(f, ROUNDS));
}

static void bench_read_state(pid_t pid, procctl_client_t *c, int inline_read)
{
	static struct procctl_state st;
	static uint64_t buf[4096 / 8 + 64];
	double v[ROUNDS * 4], f[ROUNDS * 4];
	int i;
	for (i = 0; i < ROUNDS * 4; i++) {
		struct iovec lo = {buf, c->r.hdr.state_size}, ro = {(void *)(uintptr_t)c->r.hdr.state_addr, c->r.hdr.state_size};
		int64_t t0 = bench_now_ns();
		if (process_vm_readv(pid, &lo, 1, &ro, 1, 0) != (ssize_t)c->r.hdr.state_size)
			abort();
		f[i] = bench_now_ns() - t0;
		t0 = bench_now_ns();
		if (procctl_client_read_state(c, &st, sizeof st, inline_read ? -1 : bench_now_ns() + 1000000000) != 0)
			abort();
		v[i] = bench_now_ns() - t0;
	}
	bench_report(inline_read ? "read_state_inline" : "read_state", "ns", bench_median(v, ROUNDS * 4), bench_median(f, ROUNDS * 4));
}

static int count(const struct procctl_scan_entry *e, void *arg)
{
	(void)e;
	++*(int *)arg;
	return 0;
}

/* The floor: the same /proc walk, readdir and readlink only. */
static int walk(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d))) {
		char path[300], link[300];
		DIR *fdd;
		struct dirent *fe;
		int fddir;
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "%s/fd", de->d_name);
		fddir = openat(dirfd(d), path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fddir < 0 || !(fdd = fdopendir(fddir)))
			continue;
		while ((fe = readdir(fdd)))
			if (fe->d_name[0] != '.' && readlinkat(dirfd(fdd), fe->d_name, link, sizeof link) > 0)
				n++;
		closedir(fdd);
	}
	closedir(d);
	return n;
}

static void bench_scan(void)
{
	double v[9], f[9];
	int i;
	for (i = 0; i < 9; i++) {
		int n = 0;
		int64_t t0 = bench_now_ns();
		if (walk() < NPROC)
			abort();
		f[i] = bench_now_ns() - t0;
		t0 = bench_now_ns();
		procctl_scan(NULL, "benchscan", count, &n);
		v[i] = bench_now_ns() - t0;
		if (n < NPROC)
			abort();
	}
	bench_report("scan_1000", "ns", bench_median(v, 9), bench_median(f, 9));
}

int main(void)
{
	struct shared *wsh = shared_page(), *ash = shared_page(), *fl = shared_page(), *idle = shared_page();
	pid_t kids[NPROC + 4], w, a, fp;
	struct procctl_scan_entry ew, ea;
	procctl_client_t *cw, *ca;
	int i, n = 0, st;

	/* Every process first: no thread exists yet. */
	w = kids[n++] = spawn(wsh, 1, "benchwake");
	a = kids[n++] = spawn(ash, 2, "benchack");
	fp = kids[n++] = spawn(fl, 3, NULL);
	for (i = 0; i < NPROC; i++)
		kids[n++] = spawn(idle, 0, "benchscan");
	(void)fp;

	cw = attach_to(w, "benchwake", &ew);
	ca = attach_to(a, "benchack", &ea);
	if (procctl_client_claim(cw, 1, 1, 60000000000ull) < 0 || procctl_client_claim(ca, 1, 1, 60000000000ull) < 0)
		abort();
	bench_attach(w, &ew);
	bench_read_state(w, cw, 0);
	bench_read_state(w, cw, 1);
	bench_wake(wsh, fl, cw);
	bench_ack(fl, ash, ca);
	for (i = 0; i < 200 && procctl_scan(NULL, "benchscan", count, &st) < NPROC; i++)
		usleep(10000);
	bench_scan();

	procctl_client_close(cw);
	procctl_client_close(ca);
	for (i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	for (i = 0; i < n; i++)
		waitpid(kids[i], &st, 0);
	return 0;
}
