/* SPDX-License-Identifier: Apache-2.0 */
/* The design's rules that no other test shows, each against the real
 * kernel: F_GET_SEALS is the first call on a fetched fd; an EXEC-sealed
 * memfd (memfd_noexec) is accepted; the O_PATH fallback refuses a file
 * that is not a memfd by its mount; the header is never read again after
 * attach; state reads fall back to /proc/<pid>/mem; grant ids are random
 * and not reused across agent restarts; hard limits never shrink. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "procctl_arbiter.h"
#include "th.h"

#ifndef FIXTURES
#error "FIXTURES must name test/fixtures"
#endif

#define S_NS 1000000000ll
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020 /* Linux 6.3; older libc headers lack it */
#endif

/* ---- the calls this program's library makes on fds (-Wl,--wrap) ---- */

enum op { OP_CLOSE, OP_FCNTL, OP_FSTAT, OP_FSTATFS, OP_PREAD, OP_MMAP };
static struct {
	int fd, op, arg;
} calls[256];
static int ncalls, logging;

static void note(int fd, enum op op, int arg)
{
	if (logging && ncalls < 256) {
		calls[ncalls].fd = fd;
		calls[ncalls].op = op;
		calls[ncalls++].arg = arg;
	}
}

int __real_close(int fd);
int __real_fcntl(int fd, int cmd, ...);
int __real_fstat(int fd, struct stat *st);
int __real_fstatfs(int fd, struct statfs *st);
ssize_t __real_pread(int fd, void *buf, size_t n, off_t off);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);

int __wrap_close(int fd)
{
	note(fd, OP_CLOSE, 0);
	return __real_close(fd);
}

int __wrap_fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;
	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	note(fd, OP_FCNTL, cmd);
	return __real_fcntl(fd, cmd, arg);
}

int __wrap_fstat(int fd, struct stat *st)
{
	note(fd, OP_FSTAT, 0);
	return __real_fstat(fd, st);
}

int __wrap_fstatfs(int fd, struct statfs *st)
{
	note(fd, OP_FSTATFS, 0);
	return __real_fstatfs(fd, st);
}

ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off)
{
	note(fd, OP_PREAD, 0);
	return __real_pread(fd, buf, n, off);
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	note(fd, OP_MMAP, 0);
	return __real_mmap(addr, len, prot, flags, fd, off);
}

/* ---- helpers ---------------------------------------------------------- */

static int64_t in_ns(int64_t ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * S_NS + ts.tv_nsec + ns;
}

/* pid's region fd (or any, -1) of consumer, as a scan sees it. */
static struct procctl_scan_entry find(pid_t pid, int fd, const char *consumer)
{
	struct procctl_scan_entry e;
	assert_true(th_region(pid, fd, consumer, &e));
	return e;
}

static procctl_client_t *attach(pid_t pid, int fd, unsigned flags)
{
	struct procctl_attach_opts o = {sizeof o, NULL, flags, NULL};
	struct procctl_scan_entry e = find(pid, fd, "test");
	enum procctl_reject why;
	procctl_client_t *c = procctl_client_attach(&e, &o, &why);
	if (!c)
		fail_msg("attach: %s (%s)", strerror(errno), procctl_reject_name(why));
	return c;
}

/* A child's exit status: 0 is what it checked held. */
static int child_status(pid_t pid)
{
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- the rules -------------------------------------------------------- */

/* With process_vm_readv refused (seccomp: EPERM, as under a policy that
 * denies it), state reads go through /proc/<pid>/mem and see the ack. Run
 * first: the child forks from a process with no threads yet. */
static void mem_fallback(void **state)
{
	struct th_agent p;
	procctl_client_t *c;
	int64_t g;
	pid_t pid;
	(void)state;

	th_procsim_start(&p);
	c = attach(p.pid, atoi(th_agent_ok(&p, "init test")), 0);
	assert_true(procctl_client_claim(c, 1, 1, 10 * S_NS) > 0);
	g = procctl_client_write(c, "memfallback", 11);
	assert_true(g > 0);
	assert_int_equal(th_agent_ok(&p, "poll")[0], '1');
	th_agent_ok(&p, "ack %lld", (long long)g);
	pid = fork();
	if (pid == 0) {
		static struct procctl_state st;
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = {sizeof f / sizeof f[0], f};
		char b;
		struct iovec lo = {&b, 1}, ro = {&b, 1};
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
			_exit(10);
		if (process_vm_readv(getppid(), &lo, 1, &ro, 1, 0) >= 0 || errno != EPERM)
			_exit(11); /* the filter did not take */
		/* On this thread (deadline < 0): the pool's threads are the parent's. */
		if (procctl_client_read_state(c, &st, sizeof st, -1) != 0)
			_exit(12);
		_exit(st.acked_gen == (uint64_t)g && st.ack_status == 0 ? 0 : 13);
	}
	assert_int_equal(child_status(pid), 0);
	procctl_client_close(c);
	th_agent_kill(&p);
}

/* The first call on the fd pidfd_getfd fetched is F_GET_SEALS: nothing
 * that could block on a FUSE file (fstat, fstatfs, reads) comes first. */
static void seals_first(void **state)
{
	struct th_agent p;
	struct procctl_scan_entry e;
	enum procctl_reject why;
	procctl_client_t *c;
	int i, at = -1, first = -1;
	(void)state;

	th_procsim_start(&p);
	e = find(p.pid, atoi(th_agent_ok(&p, "init test")), "test");
	ncalls = 0;
	logging = 1;
	c = procctl_client_attach(&e, NULL, &why);
	logging = 0;
	assert_non_null(c);
	for (i = 0; i < ncalls && at < 0; i++) /* the fd checks start with fstatfs on it */
		if (calls[i].op == OP_FSTATFS)
			at = i;
	assert_true(at >= 0);
	for (i = at; i >= 0 && !(calls[i].fd == calls[at].fd && calls[i].op == OP_CLOSE); i--)
		if (calls[i].fd == calls[at].fd)
			first = i;
	assert_int_equal(calls[first].op, OP_FCNTL);
	assert_int_equal(calls[first].arg, F_GET_SEALS);
	procctl_client_close(c);
	th_agent_kill(&p);
}

/* A memfd made under vm.memfd_noexec = 1 (its pid namespace's: set in a
 * new one) carries F_SEAL_EXEC too: accepted and written like any. */
static void exec_sealed(void **state)
{
	/* Two pipes: the outer child says the inner's pid on pk, the inner
	 * says its fd and seals on pv (one pipe let the two writes come in
	 * either order). */
	int pk[2], pv[2], fd = -1, seals = 0;
	pid_t inner = 0, outer;
	procctl_client_t *c;
	(void)state;

	assert_int_equal(pipe(pk), 0);
	assert_int_equal(pipe(pv), 0);
	outer = fork();
	if (outer == 0) {
		pid_t k;
		if (unshare(CLONE_NEWPID) < 0)
			_exit(10);
		k = fork();
		if (k == 0) { /* pid 1 of the new namespace */
			static unsigned char storage[4096] __attribute__((aligned(64)));
			procctl_config_t cfg;
			procctl_t ctx;
			int sysctl = open("/proc/sys/vm/memfd_noexec", O_WRONLY);
			int v[2];
			if (sysctl < 0 || write(sysctl, "1", 1) != 1)
				_exit(20);
			memset(&cfg, 0, sizeof cfg);
			cfg.consumer = "test";
			cfg.schema_version = 1;
			cfg.payload_capacity = 4096;
			cfg.state_capacity = 256;
			cfg.resource_capacity = 4;
			cfg.state_storage = storage;
			if (procctl_init(&ctx, &cfg) != 0)
				_exit(21);
			v[0] = procctl_fd(&ctx);
			v[1] = fcntl(v[0], F_GET_SEALS);
			if (write(pv[1], v, sizeof v) != sizeof v)
				_exit(22);
			pause();
			_exit(0);
		}
		if (k < 0 || write(pk[1], &k, sizeof k) != sizeof k)
			_exit(11);
		_exit(child_status(k) == 128 + SIGKILL ? 0 : 12);
	}
	close(pk[1]);
	close(pv[1]);
	if (read(pk[0], &inner, sizeof inner) != sizeof inner) {
		close(pk[0]);
		close(pv[0]);
		assert_int_equal(child_status(outer), 0);
		TH_SKIP_OR_FAIL("no pid namespace");
	}
	{
		int v[2];
		if (read(pv[0], v, sizeof v) == sizeof v) {
			fd = v[0];
			seals = v[1];
		}
	}
	close(pk[0]);
	close(pv[0]);
	if (fd < 0) {
		kill(inner, SIGKILL);
		child_status(outer);
		TH_SKIP_OR_FAIL("vm.memfd_noexec not settable in a pid namespace (kernel before 6.3)");
	}
	assert_true(seals & F_SEAL_EXEC);
	c = attach(inner, fd, 0);
	assert_true(procctl_client_claim(c, 1, 1, 10 * S_NS) > 0);
	assert_true(procctl_client_write(c, "noexec", 6) > 0);
	procctl_client_close(c);
	/* The region is fine to fetch by the fallback too. */
	c = attach(inner, fd, PROCCTL_ATTACH_NO_GETFD);
	procctl_client_close(c);
	kill(inner, SIGKILL);
	assert_int_equal(child_status(outer), 0);
}

/* A tmpfs file named like a region ("/memfd:procctl:test-v1 (deleted)",
 * seen from a chroot) is found by the scan, but not on the memfd mount:
 * both ways of fetching refuse it before they fetch or open it. */
static void fallback_checks_mount(void **state)
{
	char dir[] = "/tmp/procctl-rules.XXXXXX"; /* the chroot: made here, removed here once the child is gone */
	pid_t pid;
	(void)state;

	assert_non_null(mkdtemp(dir));
	pid = fork();
	if (pid == 0) {
		char procdir[64];
		struct procctl_attach_opts fb = {sizeof fb, NULL, PROCCTL_ATTACH_NO_GETFD, NULL};
		struct procctl_scan_entry e;
		enum procctl_reject why = PROCCTL_REJECT_NONE;
		procctl_client_t *c;
		int fd;
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", dir, "tmpfs", 0, "size=1m") < 0)
			_exit(10);
		snprintf(procdir, sizeof procdir, "%s/proc", dir);
		if (mkdir(procdir, 0755) < 0 || mount("/proc", procdir, NULL, MS_BIND | MS_REC, NULL) < 0 ||
		    chroot(dir) < 0 || chdir("/") < 0)
			_exit(11);
		fd = open("/memfd:procctl:test-v1", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0 || ftruncate(fd, 16384) < 0 || unlink("/memfd:procctl:test-v1") < 0)
			_exit(12);
		if (!th_region(getpid(), fd, "test", &e))
			_exit(13); /* named like a region: the scan finds it */
		c = procctl_client_attach(&e, &fb, &why);
		if (c || why != PROCCTL_REJECT_NOT_MEMFD)
			_exit(14);
		c = procctl_client_attach(&e, NULL, &why); /* through pidfd_getfd */
		if (c || why != PROCCTL_REJECT_NOT_MEMFD)
			_exit(15);
		_exit(0);
	}
	assert_int_equal(child_status(pid), 0);
	assert_int_equal(rmdir(dir), 0); /* its tmpfs went with the child's mount namespace */
}

/* Page 0 rewritten after attach (the process can: it has the fd) changes
 * nothing: the agent keeps the header it checked, writes land, state
 * reads work; only a new attach sees the damage. */
static void header_not_reread(void **state)
{
	static struct procctl_state st;
	struct procctl_client_info before, after;
	struct procctl_scan_entry e;
	enum procctl_reject why;
	struct th_agent p;
	procctl_client_t *c;
	int fd;
	(void)state;

	th_procsim_start(&p);
	fd = atoi(th_agent_ok(&p, "init test"));
	c = attach(p.pid, fd, 0);
	procctl_client_info(c, &before, sizeof before);
	assert_true(procctl_client_claim(c, 1, 1, 10 * S_NS) > 0);
	th_agent_ok(&p, "scribble");
	assert_true(procctl_client_write(c, "unmoved", 7) > 0);
	assert_string_equal(strchr(strchr(th_agent_ok(&p, "poll"), ' ') + 1, ' ') + 1, "unmoved");
	assert_int_equal(procctl_client_read_state(c, &st, sizeof st, in_ns(S_NS)), 0);
	procctl_client_info(c, &after, sizeof after);
	assert_memory_equal(&before.hdr, &after.hdr, sizeof before.hdr);
	e = find(p.pid, fd, "test");
	assert_null(procctl_client_attach(&e, NULL, &why));
	assert_int_equal(why, PROCCTL_REJECT_BAD_MAGIC);
	procctl_client_close(c);
	th_agent_kill(&p);
}

/* Grant ids from the real source, in two agent processes one after the
 * other (a restart): nonzero, none shared, and random bits (a counter
 * restarting would repeat the first agent's). Run second: its children
 * start threads (a registry's). */
static void grant_ids_random(void **state)
{
	enum { N = 1000 };
	static uint64_t ids[2][N];
	char lockdir[] = "/tmp/procctl-rules-locks.XXXXXX";
	double flips = 0;
	int run, i, j;
	(void)state;

	assert_non_null(mkdtemp(lockdir));
	for (run = 0; run < 2; run++) {
		int pfd[2];
		pid_t pid;
		assert_int_equal(pipe(pfd), 0);
		pid = fork();
		if (pid == 0) {
			struct procctl_registry_opts o;
			struct procctl_arbiter_source src;
			procctl_registry_t *r;
			uint64_t v[N];
			memset(&o, 0, sizeof o);
			o.sz = sizeof o;
			o.consumer = "test";
			o.lock_dir = lockdir;
			o.flags = PROCCTL_REGISTRY_PASSIVE;
			if (!(r = procctl_registry_new(&o)) || procctl_arbiter_registry_source(&src, r, "test", S_NS / 50))
				_exit(10);
			for (i = 0; i < N; i++)
				v[i] = src.random_id(src.ctx);
			_exit(write(pfd[1], v, sizeof v) == (ssize_t)sizeof v ? 0 : 11);
		}
		close(pfd[1]);
		for (i = 0; i < (int)sizeof ids[run];) {
			ssize_t n = read(pfd[0], (char *)ids[run] + i, sizeof ids[run] - (size_t)i);
			assert_true(n > 0);
			i += (int)n;
		}
		close(pfd[0]);
		assert_int_equal(child_status(pid), 0);
	}
	rmdir(lockdir);
	for (run = 0; run < 2; run++)
		for (i = 0; i < N; i++) {
			assert_true(ids[run][i] != 0);
			for (j = 0; j < N; j++)
				assert_true(ids[0][j] != ids[1][i] || run == 1);
			if (i)
				flips += __builtin_popcountll(ids[run][i] ^ ids[run][i - 1]);
		}
	/* 64 random bits: 32 flip between neighbours on average (the mean of
	 * 1998 has a standard deviation of 0.09); a counter flips ~2. */
	flips /= 2.0 * (N - 1);
	assert_true(flips > 30 && flips < 34);
}

/* SPEC.md 12: every limit of every released wire version still holds
 * (a maximum at least, a floor at most what it was); the version built
 * is one of those recorded. */
static void hard_limits_never_shrink(void **state)
{
	static const struct {
		const char *name;
		unsigned long long v;
	} now[] = {
		{"PROCCTL_CONSUMER_MAX", PROCCTL_CONSUMER_MAX},
		{"PROCCTL_PAYLOAD_MAX", PROCCTL_PAYLOAD_MAX},
		{"PROCCTL_GRANT_MAX", PROCCTL_GRANT_MAX},
		{"PROCCTL_RES_MAX", PROCCTL_RES_MAX},
		{"PROCCTL_STATE_DATA_MAX", PROCCTL_STATE_DATA_MAX},
		{"PROCCTL_REGION_MAX", PROCCTL_REGION_MAX},
		{"PROCCTL_LEASE_CEIL_NS", PROCCTL_LEASE_CEIL_NS},
		{"PROCCTL_LEASE_FLOOR_NS", PROCCTL_LEASE_FLOOR_NS},
		{"PROCCTL_GEN_MAX", PROCCTL_GEN_MAX},
	};
	char line[256], ver[16], kind[8], name[64], self[16];
	unsigned long long v;
	int rows = 0, mine = 0;
	size_t i;
	FILE *f = fopen(FIXTURES "/hard-limits.txt", "r");
	(void)state;

	assert_non_null(f);
	snprintf(self, sizeof self, "%u.%u", (unsigned)PROCCTL_VERSION_MAJOR, (unsigned)PROCCTL_VERSION_MINOR);
	while (fgets(line, sizeof line, f)) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		assert_int_equal(sscanf(line, "%15s %7s %63s %llu", ver, kind, name, &v), 4);
		for (i = 0; i < sizeof now / sizeof now[0] && strcmp(now[i].name, name); i++)
			;
		if (i == sizeof now / sizeof now[0])
			fail_msg("%s %s: a limit this version no longer has", ver, name);
		if (!strcmp(kind, "max") ? now[i].v < v : now[i].v > v)
			fail_msg("%s shrank: %llu now, %llu in %s", name, now[i].v, v, ver);
		rows++;
		mine += !strcmp(ver, self);
	}
	fclose(f);
	assert_true(rows > 0);
	if (mine != (int)(sizeof now / sizeof now[0]))
		fail_msg("record version %s's limits in hard-limits.txt (%d of %zu there)", self, mine,
			 sizeof now / sizeof now[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mem_fallback), /* these two fork before any thread exists */
		cmocka_unit_test(grant_ids_random),
		cmocka_unit_test(seals_first),
		cmocka_unit_test(exec_sealed),
		cmocka_unit_test(fallback_checks_mount),
		cmocka_unit_test(header_not_reread),
		cmocka_unit_test(hard_limits_never_shrink),
	};
	return TH_RUN(tests);
}
