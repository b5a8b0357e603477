/* SPDX-License-Identifier: Apache-2.0 */
/* Fork (SPEC.md 10.1): a child sees -ECHILD through the canary, never uses
 * the parent's grants, and gets a region of its own with procctl_reinit;
 * also when it is forked into a new pid namespace where getpid() equals
 * the pid the parent saved. The parent's region is untouched throughout. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "th.h"

/* In a child: report the failing line and exit non-zero. */
#define CK(c)                                                                  \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "child check failed, line %d: %s\n", __LINE__, #c); \
			_exit(1);                                              \
		}                                                              \
	} while (0)

#define SKIP_EXIT 77

static int setup(void **state)
{
	struct th_proc *p;
	th_setup_claimed(state);
	p = *state;
	th_agent_gen(&p->a, "publish parent-config");
	th_agent_gen(&p->a, "grant 1 00 99");
	return 0;
}


/* What every forked child must see, before and after its reinit. */
static void child_checks(procctl_t *ctx, const procctl_grant_t *parent_grant)
{
	procctl_resource_t r = parent_grant->res;
	procctl_grant_t g;
	char buf[64], link[128], path[64];
	uint64_t parent_id = procctl_instance_id(ctx);
	ssize_t n;

	CK(procctl_poll(ctx, buf, sizeof buf, NULL) == -ECHILD);
	CK(procctl_state_set(ctx, "x", 1, 0) == -ECHILD);
	CK(procctl_state_set(ctx, NULL, 1u << 30, 0) == -ECHILD); /* before argument checks */
	CK(procctl_nack(ctx, 1, 5, 0) == -ECHILD);
	CK(procctl_grant_get(ctx, 0, NULL, &g) == -ECHILD);
	CK(procctl_ack(ctx, 1, 0) == -ECHILD);
	CK(procctl_nack(ctx, 1, -EIO, 0) == -ECHILD);
	CK(procctl_resource_report(ctx, r.kind, r.id, PROCCTL_RES_IDLE, 0, NULL, 0) == -ECHILD);
	CK(procctl_resource_report(ctx, r.kind, r.id, PROCCTL_RES_HOLDING, 0, parent_grant, 0) == -ECHILD);
	CK(procctl_grant_get(ctx, r.kind, r.id, &g) == -ECHILD);
	CK(procctl_grant_usable(ctx, parent_grant, 0) == 0);
	CK(procctl_lease_expired(ctx, 0) == 1);
	CK(procctl_agent_attached(ctx) == 0);
	CK(procctl_wait(ctx, 1000) == -ECHILD);

	CK(procctl_reinit(ctx) == 0);
	CK(procctl_instance_id(ctx) != parent_id);
	snprintf(path, sizeof path, "/proc/self/fd/%d", procctl_fd(ctx));
	n = readlink(path, link, sizeof link - 1);
	CK(n > 0);
	link[n] = 0;
	CK(strcmp(link, "/memfd:procctl:test-v1 (deleted)") == 0);
	CK(procctl_poll(ctx, buf, sizeof buf, NULL) == 0);
	CK(procctl_state_set(ctx, "child", 5, 0) == 0);
	CK(procctl_grant_get(ctx, r.kind, r.id, &g) == 0);
	CK(procctl_grant_usable(ctx, parent_grant, 0) == 0);
	CK(procctl_lease_expired(ctx, 0) == 1); /* nobody attached to it yet */
}

static void plain_fork(void **state)
{
	struct th_proc *p = *state;
	procctl_resource_t r;
	procctl_grant_t g;
	char buf[64], want[64];
	int go[2], ready[2], st;
	pid_t pid;

	memset(&r, 0, sizeof r);
	r.kind = TH_GPU;
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, NULL), 13);
	assert_int_equal(procctl_grant_get(&p->ctx, r.kind, r.id, &g), 1);
	assert_int_equal(procctl_grant_usable(&p->ctx, &g, 0), 1);
	assert_int_equal(procctl_state_set(&p->ctx, "parent", 6, 0), 0);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;
		/* The agent looks at this child's memory first. */
		CK(write(ready[1], "r", 1) == 1);
		CK(read(go[0], &c, 1) == 1);
		child_checks(&p->ctx, &g);
		_exit(0);
	}
	{
		char c;
		assert_int_equal(read(ready[0], &c, 1), 1);
	}
	/* The child's copy of the state block is byte-identical to the
	 * parent's; only the canary tells them apart. */
	snprintf(want, sizeof want, "err %d state_canary_mismatch", EPROTO);
	assert_string_equal(th_agent_cmd(&p->a, "readstate %d", (int)pid), want);
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);

	/* The parent goes on as before. */
	assert_non_null(strstr(th_agent_ok(&p->a, "readstate"), "data=706172656e74 "));
	th_agent_gen(&p->a, "publish next");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, NULL), 4);
	assert_int_equal(procctl_grant_usable(&p->ctx, &g, 0), 1);
	close(go[0]);
	close(go[1]);
	close(ready[0]);
	close(ready[1]);
}

/* Waits for child and exits with its status (or 2 if it died). */
static void exit_with(pid_t child)
{
	int st;
	if (waitpid(child, &st, 0) != child || !WIFEXITED(st))
		_exit(2);
	_exit(WEXITSTATUS(st));
}

/* A process that is pid 1 of a pid namespace initialises, then forks into
 * a nested pid namespace: the child is pid 1 too, so only the canary can
 * tell it forked. */
static void fork_into_pid_namespace(void **state)
{
	int st;
	pid_t h;
	(void)state;
	h = fork();

	assert_true(h >= 0);
	if (h == 0) {
		pid_t g;
		if (unshare(CLONE_NEWPID) < 0)
			_exit(SKIP_EXIT);
		g = fork();
		if (g == 0) {
			static unsigned char storage[PROCCTL_STATE_STORAGE(1, 16)];
			procctl_config_t cfg;
			procctl_t ctx;
			procctl_grant_t none;
			pid_t gg;

			CK(getpid() == 1);
			memset(&cfg, 0, sizeof cfg);
			cfg.consumer = "test";
			cfg.schema_version = 1;
			cfg.payload_capacity = 64;
			cfg.state_capacity = 16;
			cfg.resource_capacity = 1;
			cfg.state_storage = storage;
			CK(procctl_init(&ctx, &cfg) == 0);
			CK(procctl_state_set(&ctx, "init", 4, 0) == 0);
			memset(&none, 0, sizeof none);
			none.res.kind = TH_GPU;
			if (unshare(CLONE_NEWPID) < 0)
				_exit(SKIP_EXIT);
			gg = fork();
			if (gg == 0) {
				CK(getpid() == 1); /* the pid procctl_init saved */
				child_checks(&ctx, &none);
				_exit(0);
			}
			CK(gg > 0);
			exit_with(gg);
		}
		if (g < 0)
			_exit(3);
		exit_with(g);
	}
	assert_int_equal(waitpid(h, &st, 0), h);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == SKIP_EXIT)
		TH_SKIP_OR_FAIL("unshare(CLONE_NEWPID) not permitted");
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(plain_fork, setup, th_teardown),
		cmocka_unit_test_setup_teardown(fork_into_pid_namespace, setup, th_teardown),
	};
	return TH_RUN(tests);
}
