/* SPDX-License-Identifier: Apache-2.0 */
/* The client against real processes: attach, publish, ack kinds,
 * read_state, clear, exit and exec, a read stalled behind userfaultfd, a
 * passive client. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "th.h"

#ifndef ECHO_CLIENT_PATH
#error "ECHO_CLIENT_PATH must name the echo client"
#endif

static int64_t in_ns(int64_t ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + ns;
}

/* Attach to the region fd (or any, fd -1) of pid, waiting for it to be made (sealed). */
static procctl_client_t *attach(pid_t pid, int fd)
{
	struct procctl_scan_entry e;
	enum procctl_reject why;
	procctl_client_t *c;
	int tries = 0;
	while (!th_region_made(pid, fd, "test", &e) && !th_region_made(pid, fd, "echo", &e)) {
		assert_true(++tries < 500);
		th_sleep_ms(10);
	}
	c = procctl_client_attach(&e, NULL, &why);
	if (!c)
		fail_msg("attach: %s (%s)", strerror(errno), procctl_reject_name(why));
	return c;
}

static void echo_roundtrip(void **state)
{
	static struct procctl_state st;
	struct procctl_client_info info;
	struct procctl_ack ack;
	procctl_client_t *c;
	int64_t g;
	pid_t pid;
	int status;
	(void)state;

	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execl(ECHO_CLIENT_PATH, "echo-client", (char *)NULL);
		_exit(127);
	}
	c = attach(pid, -1);
	assert_int_equal(procctl_client_info(c, &info, sizeof info), 0);
	assert_int_equal(info.pid, pid);
	assert_true(info.nspid_count >= 1);
	assert_int_equal(info.nspid[info.nspid_count - 1], info.hdr.creator_pid);
	assert_string_equal(info.hdr.consumer, "echo");
	assert_int_equal(procctl_client_alive(c), 0);

	/* Passive until claimed: reads work, writes do not. */
	assert_int_equal(procctl_client_write(c, "x", 1), -EPERM);
	assert_int_equal(procctl_client_read_state(c, &st, sizeof st, in_ns(1000000000)), 0);
	assert_true(procctl_client_claim(c, 1, 1, 10000000000ull) > 0);

	assert_int_equal(procctl_client_config_is(c, "hello echo", 10), 0); /* nothing published */
	g = procctl_client_write(c, "hello echo", 10);
	assert_true(g > 0);
	assert_int_equal(procctl_client_config_is(c, "hello echo", 10), 1);
	assert_int_equal(procctl_client_config_is(c, "hello echx", 10), 0);
	assert_int_equal(procctl_client_config_is(c, "hello", 5), 0);
	assert_int_equal(procctl_client_wait_ack(c, (uint64_t)g, in_ns(5000000000), &ack), 0);
	assert_int_equal(ack.kind, PROCCTL_ACK_APPLIED);
	assert_int_equal(ack.acked_gen, (uint64_t)g);
	assert_int_equal(procctl_client_read_state(c, &st, sizeof st, in_ns(1000000000)), 0);
	st.data[st.data_len < sizeof st.data ? st.data_len : 0] = 0;
	assert_non_null(strstr((char *)st.data, "mode=config"));
	assert_int_equal(procctl_client_wait_ack(c, (uint64_t)g + 5, in_ns(1000), &ack), -EINVAL);
	assert_int_equal(procctl_client_write(c, "", 0), -EINVAL);

	g = procctl_client_clear(c);
	assert_true(g > 0);
	assert_int_equal(procctl_client_config_is(c, "hello echo", 10), 0); /* cleared */
	assert_int_equal(procctl_client_wait_ack(c, (uint64_t)g, in_ns(5000000000), &ack), 0);
	assert_int_equal(procctl_client_read_state(c, &st, sizeof st, in_ns(1000000000)), 0);
	st.data[st.data_len < sizeof st.data ? st.data_len : 0] = 0;
	assert_non_null(strstr((char *)st.data, "mode=defaults"));

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	assert_int_equal(procctl_client_alive(c), -ESRCH);
	assert_int_equal(procctl_client_read_state(c, &st, sizeof st, in_ns(1000000000)), -ESRCH);
	procctl_client_close(c);
}

static void ack_kinds(void **state)
{
	struct th_agent p;
	struct procctl_ack ack;
	procctl_client_t *c;
	int64_t g1, g2, g3, g4;
	char cmd[64];
	(void)state;

	th_procsim_start(&p);
	c = attach(p.pid, atoi(th_agent_ok(&p, "init test")));
	assert_true(procctl_client_claim(c, 1, 1, 10000000000ull) > 0);
	g1 = procctl_client_write(c, "one", 3);
	th_agent_ok(&p, "poll");
	snprintf(cmd, sizeof cmd, "nack %lld -22", (long long)g1);
	th_agent_ok(&p, "%s", cmd);
	assert_int_equal(procctl_client_wait_ack(c, (uint64_t)g1, in_ns(5000000000), &ack), 0);
	assert_int_equal(ack.kind, PROCCTL_ACK_REJECTED);
	assert_int_equal(ack.status, -EINVAL);

	g2 = procctl_client_write(c, "two", 3);
	g3 = procctl_client_write(c, "three", 5);
	th_agent_ok(&p, "poll"); /* gets three only */
	th_agent_ok(&p, "ack %lld", (long long)g3);
	assert_int_equal(procctl_client_wait_ack(c, (uint64_t)g2, in_ns(5000000000), &ack), 0);
	assert_int_equal(ack.kind, PROCCTL_ACK_SUPERSEDED);
	assert_int_equal(procctl_client_wait_ack(c, (uint64_t)g3, in_ns(5000000000), &ack), 0);
	assert_int_equal(ack.kind, PROCCTL_ACK_APPLIED);

	g4 = procctl_client_write(c, "four", 4);
	assert_int_equal(procctl_client_wait_ack(c, (uint64_t)g4, in_ns(50000000), &ack), -ETIMEDOUT);
	procctl_client_close(c);
	th_agent_kill(&p);
}

/* Without pidfd_getfd: the O_PATH fallback, checked against the memfd
 * mount and reopened through /proc/self/fd. And a deadline far away
 * (INT64_MAX) is just a long one. */
static void fallback_and_far_deadline(void **state)
{
	static struct procctl_state st;
	struct procctl_attach_opts o = {sizeof o, NULL, PROCCTL_ATTACH_NO_GETFD, NULL};
	struct procctl_scan_entry e;
	struct procctl_ack ack;
	struct th_agent p;
	enum procctl_reject why;
	procctl_client_t *c, *ref;
	int64_t g;
	(void)state;

	th_procsim_start(&p);
	assert_true(th_region(p.pid, atoi(th_agent_ok(&p, "init test")), "test", &e));
	c = procctl_client_attach(&e, &o, &why);
	if (!c)
		fail_msg("fallback attach: %s (%s)", strerror(errno), procctl_reject_name(why));
	assert_true(procctl_client_claim(c, 1, 1, 10000000000ull) > 0);
	g = procctl_client_write(c, "via O_PATH", 10);
	assert_true(g > 0);
	th_agent_ok(&p, "poll");
	th_agent_ok(&p, "ack %lld", (long long)g);
	assert_int_equal(procctl_client_wait_ack(c, (uint64_t)g, INT64_MAX, &ack), 0);
	assert_int_equal(procctl_client_read_state(c, &st, sizeof st, INT64_MAX), 0);
	/* References: the last close frees; the region stays usable until. */
	ref = procctl_client_ref(c);
	procctl_client_close(c);
	assert_int_equal(procctl_client_read_state(ref, &st, sizeof st, INT64_MAX), 0);
	procctl_client_close(ref);
	th_agent_kill(&p);
}

/* exec keeps the pid and the pidfd quiet; the instance is gone. */
static void exec_is_detached(void **state)
{
	struct th_agent p;
	procctl_client_t *c;
	int i;
	(void)state;
	th_procsim_start(&p);
	c = attach(p.pid, atoi(th_agent_ok(&p, "init test")));
	assert_int_equal(procctl_client_alive(c), 0);
	th_agent_ok(&p, "exec");
	for (i = 0; procctl_client_alive(c) == 0 && i < 500; i++)
		th_sleep_ms(10);
	assert_int_equal(procctl_client_alive(c), -ESTALE);
	procctl_client_close(c);
	th_agent_kill(&p);
}

/* A state block behind a page nobody serves: the read misses its deadline,
 * the next one fails at once, writes and heartbeats go on. */
static void stalled_read(void **state)
{
	static struct procctl_state st;
	struct th_agent p;
	procctl_client_t *c;
	int i;
	(void)state;
	th_procsim_start(&p);
	c = attach(p.pid, atoi(th_agent_ok(&p, "init test")));
	assert_true(procctl_client_claim(c, 1, 1, 10000000000ull) > 0);
	if (strncmp(th_agent_cmd(&p, "stall"), "ok", 2)) {
		procctl_client_close(c);
		th_agent_kill(&p);
		TH_SKIP_OR_FAIL("userfaultfd not available");
	}
	assert_int_equal(procctl_client_read_state(c, &st, sizeof st, in_ns(200000000)), -ETIMEDOUT);
	assert_int_equal(procctl_client_read_state(c, &st, sizeof st, in_ns(5000000000)), -ETIMEDOUT);
	procctl_client_heartbeat(c);
	assert_true(procctl_client_write(c, "still", 5) > 0);
	assert_int_equal(th_agent_ok(&p, "poll")[0], '5');
	/* The process dies: the blocked read ends, reads say so. */
	th_agent_kill(&p);
	for (i = 0; procctl_client_read_state(c, &st, sizeof st, in_ns(1000000000)) == -ETIMEDOUT && i < 500; i++)
		th_sleep_ms(10);
	assert_int_equal(procctl_client_read_state(c, &st, sizeof st, in_ns(1000000000)), -ESRCH);
	procctl_client_close(c);
}

/* SPEC.md 7.3 as one function: every case of the table. */
static void ack_decision(void **state)
{
	(void)state;
	assert_int_equal(procctl_ack_decide(5, 9, 0, 0), 0);       /* no ack yet */
	assert_int_equal(procctl_ack_decide(5, 9, 4, 0), 0);       /* an older generation's */
	assert_int_equal(procctl_ack_decide(5, 9, 5, 0), PROCCTL_ACK_APPLIED);
	assert_int_equal(procctl_ack_decide(5, 9, 5, -22), PROCCTL_ACK_REJECTED);
	assert_int_equal(procctl_ack_decide(5, 9, 7, 0), PROCCTL_ACK_SUPERSEDED);
	assert_int_equal(procctl_ack_decide(5, 9, 9, -1), PROCCTL_ACK_SUPERSEDED);
	assert_int_equal(procctl_ack_decide(5, 9, 10, 0), 0);      /* above what was published: ignored */
	assert_int_equal(procctl_ack_decide(5, 5, UINT64_MAX, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(echo_roundtrip),
		cmocka_unit_test(ack_kinds),
		cmocka_unit_test(ack_decision),
		cmocka_unit_test(fallback_and_far_deadline),
		cmocka_unit_test(exec_is_detached),
		cmocka_unit_test(stalled_read),
	};
	signal(SIGPIPE, SIG_IGN);
	return TH_RUN(tests);
}
