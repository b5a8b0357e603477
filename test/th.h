/* SPDX-License-Identifier: Apache-2.0 */
/* th.h - test helpers shared by the procctl test programs. */
#ifndef PROCCTL_TH_H
#define PROCCTL_TH_H

#include <stdarg.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "procctl.h"
#include "procctl_agent.h" /* th_region */

/* cmocka needs these before its header. */
#include <setjmp.h>
#include <cmocka.h>

/* Skip when a kernel feature or privilege is missing; a failure when the
 * environment says CI=true (CI must run everything). */
#define TH_SKIP_OR_FAIL(why)                                             \
	do {                                                             \
		if (th_in_ci())                                          \
			fail_msg("required in CI, missing here: %s", why); \
		print_message("SKIP: %s\n", why);                        \
		th_skipped++;                                            \
		skip();                                                  \
	} while (0)
extern int th_skipped; /* tests skipped so far (TH_SKIP_OR_FAIL) */

/* A test program's exit status: its failures' count, else 77 (ctest's
 * SKIP_RETURN_CODE: the program shows as skipped, not passed) when a test
 * skipped, else 0. */
int th_result(int failed);

/* Run a cmocka group; PROCCTL_TEST_FILTER=pattern runs only matching tests. */
#define TH_RUN_WITH(tests, setup, teardown)                                                        \
	(getenv("PROCCTL_TEST_FILTER") ? cmocka_set_test_filter(getenv("PROCCTL_TEST_FILTER")) : (void)0, \
	 th_result(cmocka_run_group_tests(tests, setup, teardown)))
#define TH_RUN(tests) TH_RUN_WITH(tests, NULL, NULL)

int th_in_ci(void);
uint64_t th_now_ns(void);
void th_sleep_ms(unsigned ms);

/* test/farm at path: procs processes of per regions of consumer, acking;
 * returns once they all exist: its pid, and in *in its stdin (it ends its
 * processes when that closes). */
pid_t th_farm_start(const char *path, int procs, int per, const char *consumer, int *in);

/* An agentsim process: a separate agent the test drives line by line. */
struct th_agent {
	pid_t pid;
	int in;  /* we write commands */
	int out; /* we read replies */
	char reply[65536];
};

/* Start a line-driven helper program (agentsim, procsim). */
void th_peer_start(struct th_agent *a, const char *path);
/* Start agentsim and attach it to (pid, fd) with pidfd_getfd. */
void th_agent_start(struct th_agent *a, pid_t pid, int fd);
/* Start procsim (a scriptable process side). */
void th_procsim_start(struct th_agent *a);
/* Send one command (printf format); return the reply after "ok " (or ""),
 * failing the test unless the reply starts with "ok". */
const char *th_agent_ok(struct th_agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Send one command; return the whole reply line, "ok ..." or "err ...". */
const char *th_agent_cmd(struct th_agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int64_t th_agent_gen(struct th_agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The two halves of th_agent_cmd, for commands that answer later: send
 * one command; read one reply line. */
void th_agent_send(struct th_agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *th_agent_reply(struct th_agent *a);
/* Kill it (SIGKILL) and reap it. */
void th_agent_kill(struct th_agent *a);
/* pid's region at fd (any, fd -1) of consumer as a scan sees it: 1 found
 * (*out), 0 not (yet). */
int th_region(pid_t pid, int fd, const char *consumer, struct procctl_scan_entry *out);
/* ... a memfd its creator has sealed, as procctl_init leaves it: a client
 * started by the test has made its region (found before, an attach would
 * refuse it unsealed). */
int th_region_made(pid_t pid, int fd, const char *consumer, struct procctl_scan_entry *out);
/* Ask it to exit and reap it. */
void th_agent_stop(struct th_agent *a);

/* A process side (this test process) with an agentsim attached to it. */
#define TH_NRES 4
#define TH_DATA_CAP 256
struct th_proc {
	procctl_t ctx;
	unsigned char storage[PROCCTL_STATE_STORAGE(TH_NRES, TH_DATA_CAP)];
	struct th_agent a;
};

/* procctl_init with consumer "test", schema 1, 4096 payload bytes,
 * TH_DATA_CAP status bytes, TH_NRES resources and the given lease bounds
 * (0: the defaults); then start an agentsim attached to it. */
void th_proc_start(struct th_proc *p, uint64_t lease_min_ns, uint64_t lease_max_ns);
void th_proc_stop(struct th_proc *p);
/* cmocka fixtures: a th_proc (default lease bounds) whose agentsim has
 * claimed the region with a 10 s lease; and its teardown. */
#define TH_LEASE_NS 10000000000ull
int th_setup_claimed(void **state);
int th_teardown(void **state);

/* The tests' GPU kind, and a resource of it with id byte 0 = id. */
#define TH_GPU 1u
procctl_resource_t th_gpu(uint8_t id);

/* Map ctx's region read/write as an agent would (through /proc/self/fd,
 * no seal check): for tests where this process is its own agent. */
struct procctl_region;
void th_map_own(procctl_t *ctx, struct procctl_region *r);

/* The state block inside p->storage. */
struct procctl_state_hdr *th_state(struct th_proc *p);

/* Wait until thread tid of this process sleeps in the kernel (state S). */
void th_wait_sleeping(pid_t tid);

#endif
