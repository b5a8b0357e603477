/* SPDX-License-Identifier: Apache-2.0 */
/* th.c - test helpers. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "region.h"
#include "th.h"

#if !defined(AGENTSIM_PATH) || !defined(PROCSIM_PATH)
#error "AGENTSIM_PATH and PROCSIM_PATH must name the helper binaries"
#endif

int th_skipped;

int th_result(int failed)
{
	return failed ? failed : th_skipped ? 77 : 0;
}

int th_in_ci(void)
{
	const char *ci = getenv("CI");
	return ci && (!strcmp(ci, "true") || !strcmp(ci, "1"));
}

uint64_t th_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void th_sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000u, (long)(ms % 1000u) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

pid_t th_farm_start(const char *path, int procs, int per, const char *consumer, int *in)
{
	char np[16], nr[16], line[128];
	int fds[2], ifds[2];
	pid_t pid;
	FILE *f;
	snprintf(np, sizeof np, "%d", procs);
	snprintf(nr, sizeof nr, "%d", per);
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(pipe(ifds), 0);
	if (!(pid = fork())) {
		dup2(fds[1], 1);
		dup2(ifds[0], 0);
		close(fds[0]);
		close(ifds[1]);
		execl(path, "farm", "--procs", np, "--regions", nr, "--consumer", consumer, "--ack", (char *)NULL);
		_exit(127);
	}
	assert_true(pid > 0);
	close(fds[1]);
	close(ifds[0]);
	*in = ifds[1];
	f = fdopen(fds[0], "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof line, f));
	assert_true(!strncmp(line, "ready ", 6));
	fclose(f);
	return pid;
}

void th_peer_start(struct th_agent *a, const char *path)
{
	int cmd[2], rep[2];
	assert_int_equal(pipe2(cmd, O_CLOEXEC), 0);
	assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
	a->pid = fork();
	assert_true(a->pid >= 0);
	if (a->pid == 0) {
		dup2(cmd[0], 0);
		dup2(rep[1], 1);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(cmd[0]);
	close(rep[1]);
	a->in = cmd[1];
	a->out = rep[0];
}

void th_agent_start(struct th_agent *a, pid_t target, int fd)
{
	th_peer_start(a, AGENTSIM_PATH);
	th_agent_ok(a, "attach %d %d", (int)target, fd);
}

void th_procsim_start(struct th_agent *a)
{
	th_peer_start(a, PROCSIM_PATH);
}

static void vsend(struct th_agent *a, const char *fmt, va_list ap)
{
	char line[70000];
	int len = vsnprintf(line, sizeof line - 1, fmt, ap);
	assert_true(len > 0 && (size_t)len < sizeof line - 1);
	line[len++] = '\n';
	assert_int_equal(write(a->in, line, (size_t)len), len);
}

const char *th_agent_reply(struct th_agent *a)
{
	size_t n = 0;
	for (;;) {
		char ch;
		ssize_t r = read(a->out, &ch, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			fail_msg("pid %d died before its reply", (int)a->pid);
		if (ch == '\n')
			break;
		if (n < sizeof a->reply - 1)
			a->reply[n++] = ch;
	}
	a->reply[n] = 0;
	return a->reply;
}

void th_agent_send(struct th_agent *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsend(a, fmt, ap);
	va_end(ap);
}

static const char *vcmd(struct th_agent *a, const char *fmt, va_list ap)
{
	vsend(a, fmt, ap);
	return th_agent_reply(a);
}

const char *th_agent_cmd(struct th_agent *a, const char *fmt, ...)
{
	va_list ap;
	const char *r;
	va_start(ap, fmt);
	r = vcmd(a, fmt, ap);
	va_end(ap);
	return r;
}

const char *th_agent_ok(struct th_agent *a, const char *fmt, ...)
{
	va_list ap;
	const char *r;
	va_start(ap, fmt);
	r = vcmd(a, fmt, ap);
	va_end(ap);
	if (strncmp(r, "ok", 2) != 0)
		fail_msg("agentsim: %s", r);
	return r[2] == ' ' ? r + 3 : r + 2;
}

int64_t th_agent_gen(struct th_agent *a, const char *fmt, ...)
{
	va_list ap;
	const char *r;
	va_start(ap, fmt);
	r = vcmd(a, fmt, ap);
	va_end(ap);
	if (strncmp(r, "ok ", 3) != 0)
		fail_msg("agentsim: %s", r);
	return strtoll(r + 3, NULL, 10);
}

void th_agent_kill(struct th_agent *a)
{
	int st;
	kill(a->pid, SIGKILL);
	waitpid(a->pid, &st, 0);
	close(a->in);
	close(a->out);
	a->pid = -1;
}

void th_agent_stop(struct th_agent *a)
{
	int st;
	close(a->in);
	waitpid(a->pid, &st, 0);
	close(a->out);
	a->pid = -1;
}

void th_wait_sleeping(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	for (;;) {
		FILE *f = fopen(path, "r");
		char *p;
		size_t n;
		assert_non_null(f);
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = 0;
		p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'S')
			return;
		th_sleep_ms(1);
	}
}

void th_proc_start(struct th_proc *p, uint64_t lease_min_ns, uint64_t lease_max_ns)
{
	procctl_config_t cfg;
	memset(p, 0, sizeof *p);
	memset(&cfg, 0, sizeof cfg);
	cfg.consumer = "test";
	cfg.schema_version = 1;
	cfg.payload_capacity = 4096;
	cfg.state_capacity = TH_DATA_CAP;
	cfg.state_storage = p->storage;
	cfg.resource_capacity = TH_NRES;
	cfg.lease_min_ns = lease_min_ns;
	cfg.lease_max_ns = lease_max_ns;
	assert_int_equal(procctl_init(&p->ctx, &cfg), 0);
	th_agent_start(&p->a, getpid(), procctl_fd(&p->ctx));
}

void th_proc_stop(struct th_proc *p)
{
	if (p->a.pid > 0)
		th_agent_stop(&p->a);
	procctl_close(&p->ctx);
}

struct procctl_state_hdr *th_state(struct th_proc *p)
{
	return (struct procctl_state_hdr *)(void *)(((uintptr_t)p->storage + 7u) & ~(uintptr_t)7u);
}

int th_setup_claimed(void **state)
{
	struct th_proc *p = calloc(1, sizeof *p);
	assert_non_null(p);
	th_proc_start(p, 0, 0);
	th_agent_gen(&p->a, "claim 1 1 %llu", TH_LEASE_NS);
	*state = p;
	return 0;
}

int th_teardown(void **state)
{
	th_proc_stop(*state);
	free(*state);
	return 0;
}

procctl_resource_t th_gpu(uint8_t id)
{
	procctl_resource_t r;
	memset(&r, 0, sizeof r);
	r.kind = TH_GPU;
	r.id[0] = id;
	return r;
}

void th_map_own(procctl_t *ctx, struct procctl_region *r)
{
	enum procctl_reject why;
	struct stat st;
	char path[64];
	int fd;
	snprintf(path, sizeof path, "/proc/self/fd/%d", procctl_fd(ctx));
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(procctl_region_map(r, fd, (uint64_t)st.st_size, &why), 0);
	close(fd);
}

struct th_found {
	int fd, hit;
	struct procctl_scan_entry *out;
};

/* Whether pid's fd is sealed as a region's creator leaves it: found
 * before, it is still being made (an attach would refuse it unsealed).
 * Opened through /proc: for memfds only (a FUSE file would ask its
 * server). */
static int th_sealed(pid_t pid, int fd)
{
	char path[64];
	int rfd, seals;
	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
	if ((rfd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	seals = fcntl(rfd, F_GET_SEALS);
	close(rfd);
	return seals >= 0 && (seals & F_SEAL_SEAL);
}

static int th_keep(const struct procctl_scan_entry *e, void *arg)
{
	struct th_found *f = arg;
	if (f->fd < 0 || e->fd == f->fd) {
		*f->out = *e;
		f->hit = 1;
	}
	return 0;
}

int th_region(pid_t pid, int fd, const char *consumer, struct procctl_scan_entry *out)
{
	struct th_found f = {fd, 0, out};
	procctl_scan_pid(NULL, pid, consumer, th_keep, &f);
	return f.hit;
}

int th_region_made(pid_t pid, int fd, const char *consumer, struct procctl_scan_entry *out)
{
	return th_region(pid, fd, consumer, out) && th_sealed(out->pid, out->fd);
}
