/* SPDX-License-Identifier: Apache-2.0 */
/* procctl_poll under a seq that moves at every look (SPEC.md 6.3): every go
 * back to step 3, from step 5 (nothing new), 6 (a bad slot) or 7 (a buffer
 * too small) as from step 8, counts toward one retry limit, so a hostile
 * agent cannot keep a poll looping. Deterministic: the poller runs traced,
 * with a hardware watchpoint on its seq word, and at each of its reads the
 * tracer (the hostile agent, through a writable mapping of the region)
 * moves seq by 2, so every re-check sees a move. x86-64 only (debug
 * registers through PTRACE_POKEUSER). Where the machine does not trap on
 * them (a virtual machine that does not pass debug registers through:
 * the first load, made to count the traps a load makes, makes none), the
 * tracer single-steps the poller instead and moves seq after every
 * instruction: every look still sees a move, and each poll must give up
 * within STEPS_MAX instructions; only the count of its reads is not
 * known then. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "th.h"

#ifndef PROCCTL_READ_RETRIES
#define PROCCTL_READ_RETRIES 4 /* libprocctl-agent's procctl_impl.c: the default */
#endif
#define MOVES_MAX 1000 /* reads of seq in one poll past which it loops: a failure */
#define STEPS_MAX 1000000 /* ... instructions, when single-stepped */

#if defined(__x86_64__)

/* The traced poller: three polls of a fresh region, each after a stop in
 * which the tracer prepares the slot; results on fd out. */
static void poller(int out)
{
	static unsigned char storage[PROCCTL_STATE_STORAGE(0, 8)];
	procctl_config_t cfg;
	procctl_t ctx;
	char buf[64];
	int r[3], i;
	uintptr_t seq;

	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
		_exit(10);
	memset(&cfg, 0, sizeof cfg);
	cfg.consumer = "seqretry";
	cfg.schema_version = 1;
	cfg.payload_capacity = 64;
	cfg.state_capacity = 8;
	cfg.state_storage = storage;
	if (procctl_init(&ctx, &cfg) < 0)
		_exit(11);
	seq = (uintptr_t)&ctx.ctrl_->seq;
	r[0] = procctl_fd(&ctx);
	if (write(out, r, sizeof r[0]) != sizeof r[0] || write(out, &seq, sizeof seq) != sizeof seq)
		_exit(12);
	raise(SIGSTOP); /* the tracer sets the watchpoint */
	/* One load as the library makes them: how many reads of the word
	 * the machine makes for one (a sanitizer's runtime may make more). */
	r[0] = (int)__atomic_load_n(&ctx.ctrl_->seq, __ATOMIC_ACQUIRE);
	for (i = 0; i < 3; i++) {
		raise(SIGSTOP); /* the tracer sets the slot up */
		r[i] = procctl_poll(&ctx, buf, i == 2 ? 4 : sizeof buf, NULL);
	}
	raise(SIGSTOP); /* watchpoint off */
	if (write(out, r, sizeof r) != sizeof r)
		_exit(13);
	_exit(0);
}

static void watch(pid_t pid, uintptr_t addr, int on)
{
	/* DR7: L0, RW0 = 11 (reads and writes), LEN0 = 11 (4 bytes). */
	unsigned long dr7 = on ? (1ul | (3ul << 16) | (3ul << 18)) : 0;
	if (on)
		assert_int_equal(ptrace(PTRACE_POKEUSER, pid, offsetof(struct user, u_debugreg[0]), addr), 0);
	assert_int_equal(ptrace(PTRACE_POKEUSER, pid, offsetof(struct user, u_debugreg[7]), dr7), 0);
}

/* Run pid to its next stop, moving *seq by 2 at each trap on the way:
 * each watchpoint trap (continued), or, stepping, each instruction
 * (single-stepped). The moves made. */
static int run_moving(pid_t pid, uint32_t *seq, int stepping)
{
	int st, moves = 0, max = stepping ? STEPS_MAX : MOVES_MAX;
	for (;;) {
		assert_int_equal(ptrace(stepping ? PTRACE_SINGLESTEP : PTRACE_CONT, pid, NULL, NULL), 0);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFSTOPPED(st));
		if (WSTOPSIG(st) != SIGTRAP)
			return moves; /* its own SIGSTOP: the poll returned */
		__atomic_fetch_add(seq, 2u, __ATOMIC_RELEASE);
		if (++moves > max) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("a poll %s %d times under a moving seq: it does not give up",
				 stepping ? "ran instructions" : "read seq", moves);
		}
	}
}

static void every_look_moved(void **state)
{
	int p[2], st, fd, r[3], moves[3], i, per_load, stepping;
	uintptr_t seq_addr;
	struct procctl_hdr h;
	struct procctl_slot *sl;
	unsigned char *map;
	uint32_t *seq;
	pid_t pid;
	(void)state;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		poller(p[1]);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &fd, sizeof fd), sizeof fd);
	assert_int_equal(read(p[0], &seq_addr, sizeof seq_addr), sizeof seq_addr);
	assert_int_equal(waitpid(pid, &st, 0), pid); /* its first SIGSTOP */
	assert_true(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
	{
		int pfd = (int)syscall(SYS_pidfd_open, pid, 0), rfd;
		assert_true(pfd >= 0);
		rfd = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
		assert_true(rfd >= 0);
		assert_int_equal(pread(rfd, &h, sizeof h, 0), sizeof h);
		map = mmap(NULL, h.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
		assert_true(map != MAP_FAILED);
		close(rfd);
		close(pfd);
	}
	seq = (uint32_t *)(void *)(map + h.ctrl_off);
	sl = (struct procctl_slot *)(void *)(map + h.slot_off[((struct procctl_ctrl *)(void *)seq)->active & 1u]);
	watch(pid, seq_addr, 1);
	per_load = run_moving(pid, seq, 0);
	stepping = per_load == 0; /* the watchpoint never traps here */
	if (stepping)
		watch(pid, 0, 0);
	/* 1: gen 0, nothing new (step 5). */
	moves[0] = run_moving(pid, seq, stepping);
	/* 2: a new generation whose slot is not consistent (step 6). */
	sl->gen = sl->config_gen = 1;
	sl->length = 1u << 30;
	moves[1] = run_moving(pid, seq, stepping);
	/* 3: a consistent one of 8 bytes, polled into 4 (step 7). */
	sl->length = 8;
	moves[2] = run_moving(pid, seq, stepping);
	if (!stepping)
		watch(pid, 0, 0);
	assert_int_equal(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
	assert_int_equal(read(p[0], r, sizeof r), sizeof r);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(p[0]);
	munmap(map, h.region_size);
	if (stepping)
		print_message("no watchpoint trap on this machine: single-stepped, seq moved after each of %d, %d, %d "
			      "instructions; polls returned %d, %d, %d\n", moves[0], moves[1], moves[2], r[0], r[1], r[2]);
	else
		print_message("seq read and moved %d, %d, %d times (%d a load); polls returned %d, %d, %d\n", moves[0],
			      moves[1], moves[2], per_load, r[0], r[1], r[2]);
	for (i = 0; i < 3; i++) {
		assert_int_equal(r[i], -EAGAIN);
		if (stepping)
			continue; /* bounded by STEPS_MAX; the reads are not counted */
		/* At most PROCCTL_READ_RETRIES + 1 passes, each loading seq
		 * at most twice (its load, its re-check). */
		assert_true(moves[i] >= 2 * per_load && moves[i] <= 2 * (PROCCTL_READ_RETRIES + 1) * per_load);
	}
}

#else

static void every_look_moved(void **state)
{
	(void)state;
	TH_SKIP_OR_FAIL("the watchpoint is set through x86-64 debug registers");
}

#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_look_moved),
	};
	return TH_RUN(tests);
}
