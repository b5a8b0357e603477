/* SPDX-License-Identifier: Apache-2.0 */
/* The event socket (SPEC.md 6.6): a process that asked for one
 * (PROCCTL_EVENT_FD) gets a message on it after each write of the agent,
 * so a program waiting in its own epoll_wait applies a publish; a full
 * queue never holds the agent up; an fd that is not the process's own
 * SOCK_SEQPACKET socketpair is refused and the region attached all the
 * same, and so is a negative event_fd, while a 1.0 header's or one with
 * an unknown flag bit is used; a socket shut down is said (-EPIPE), not
 * counted; a forked
 * child's new region has a socket of its own. The
 * processes are real (procsim, echo-client --epoll); the agent is this
 * test. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "th.h"

#ifndef ECHO_CLIENT_PATH
#error "ECHO_CLIENT_PATH must name the echo client"
#endif

#define S 1000000000ll

/* procsim's region at fd, attached and claimed; its info in *info. */
static procctl_client_t *claimed(struct th_agent *p, int fd, struct procctl_client_info *info)
{
	struct procctl_scan_entry e;
	enum procctl_reject why;
	procctl_client_t *c;
	assert_true(th_region(p->pid, fd, "test", &e));
	if (!(c = procctl_client_attach(&e, NULL, &why)))
		fail_msg("attach: %s (%s)", strerror(errno), procctl_reject_name(why));
	assert_int_equal(procctl_client_info(c, info, sizeof *info), 0);
	assert_true(procctl_client_claim(c, 1, 1, 10 * S) > 0);
	return c;
}

/* procsim's poll delivers payload. */
static void delivered(struct th_agent *p, const char *payload)
{
	const char *r = th_agent_ok(p, "poll");
	if (!strstr(r, payload))
		fail_msg("poll: '%s', wanted %s", r, payload);
}

static void a_write_makes_the_socket_readable(void **state)
{
	struct procctl_client_info info;
	struct th_agent p;
	procctl_client_t *c;
	(void)state;
	th_procsim_start(&p);
	c = claimed(&p, atoi(th_agent_ok(&p, "initev test")), &info);
	assert_int_equal(info.hdr.version_minor, 1);
	assert_true(info.hdr.flags & PROCCTL_HDR_EVENT_FD);
	assert_int_equal(info.event_socket, 1);
	assert_true(atoi(th_agent_ok(&p, "evwait 5000")) >= 1); /* the claim's */
	assert_int_equal(strncmp(th_agent_cmd(&p, "evwait 0"), "err 110", 7), 0); /* read: none left */
	assert_true(procctl_client_write(c, "first", 5) > 0);
	assert_int_equal(atoi(th_agent_ok(&p, "evwait 5000")), 1);
	delivered(&p, "first");
	assert_true(procctl_client_clear(c) > 0);
	assert_int_equal(atoi(th_agent_ok(&p, "evwait 5000")), 1);
	procctl_client_close(c);
	th_agent_kill(&p);
}

/* 2,000 writes the process never reads: the queue fills (its socket's
 * buffer: a few hundred messages) and each later send fails at once;
 * every write completes, and once read the queue takes messages again. */
static void a_full_queue_never_blocks_the_agent(void **state)
{
	struct procctl_client_info info;
	struct th_agent p;
	procctl_client_t *c;
	char cfg[16];
	int i, n, total = 0;
	(void)state;
	th_procsim_start(&p);
	c = claimed(&p, atoi(th_agent_ok(&p, "initev test")), &info);
	for (i = 0; i < 2000; i++) {
		snprintf(cfg, sizeof cfg, "cfg%d", i);
		assert_true(procctl_client_write(c, cfg, strlen(cfg)) > 0);
	}
	do
		total += n = atoi(th_agent_ok(&p, "evwait 5000"));
	while (n == 64); /* 64 at most a read */
	print_message("2,001 writes, %d messages queued\n", total);
	assert_true(total >= 1 && total < 2001);
	delivered(&p, "cfg1999");
	assert_true(procctl_client_write(c, "after", 5) > 0);
	assert_int_equal(atoi(th_agent_ok(&p, "evwait 5000")), 1);
	delivered(&p, "after");
	procctl_client_close(c);
	th_agent_kill(&p);
}

/* procsim's header names a socket of kind (procsim evbad): the agent
 * uses it (used) or not, and the region works either way. */
static void header_names(const char *kind, int used)
{
	struct procctl_client_info info;
	struct th_agent p;
	procctl_client_t *c;
	int fd;
	th_procsim_start(&p);
	fd = atoi(th_agent_ok(&p, "init test"));
	th_agent_ok(&p, "evbad %s", kind);
	c = claimed(&p, fd, &info);
	assert_true(info.hdr.flags & PROCCTL_HDR_EVENT_FD);
	if (info.event_socket != used)
		fail_msg("%s: event socket %d, wanted %d", kind, info.event_socket, used);
	assert_true(procctl_client_write(c, "still", 5) > 0);
	delivered(&p, "still");
	procctl_client_close(c);
	th_agent_kill(&p);
}

/* The header names an fd that is not the process's SOCK_SEQPACKET
 * socketpair (a listening socket of its own included): no message goes
 * there, and the region works as a 1.0 one. */
static void bad_sockets_are_refused_the_region_attached(void **state)
{
	static const char *const kinds[] = {"pipe", "file", "dgram", "unconnected", "listening", "closed"};
	size_t k;
	(void)state;
	for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
		header_names(kinds[k], 0);
}

/* What the header check leaves alone (SPEC.md 3.1): a 1.0 header with
 * EVENT_FD, or an unknown flag bit beside it, has its socket used; a
 * negative event_fd is a fetch that fails, the region attached without
 * a socket. */
static void header_fields_left_unchecked(void **state)
{
	(void)state;
	header_names("v10", 1);
	header_names("flags", 1);
	header_names("negative", 0);
}

/* Anyone holding a copy of the agent's end (here this test, by
 * pidfd_getfd as an agent fetches it) may shut it down: the program's
 * end is then readable for good, and procctl_event_read says so
 * (-EPIPE) after the messages queued before, rather than counting the
 * end of file as messages; the region goes on working. */
static void a_shut_socket_is_said_once_read(void **state)
{
	struct procctl_client_info info;
	struct th_agent p;
	procctl_client_t *c;
	int pidfd, end;
	(void)state;
	th_procsim_start(&p);
	c = claimed(&p, atoi(th_agent_ok(&p, "initev test")), &info);
	assert_true((pidfd = (int)syscall(SYS_pidfd_open, p.pid, 0)) >= 0);
	assert_true((end = (int)syscall(SYS_pidfd_getfd, pidfd, info.hdr.event_fd, 0)) >= 0);
	assert_true(procctl_client_write(c, "before", 6) > 0);
	assert_int_equal(shutdown(end, SHUT_RDWR), 0);
	assert_true(atoi(th_agent_ok(&p, "evwait 5000")) >= 1); /* the claim's and the write's */
	assert_string_equal(th_agent_cmd(&p, "evwait 5000"), "err 32"); /* EPIPE */
	assert_string_equal(th_agent_cmd(&p, "evwait 5000"), "err 32");
	assert_true(procctl_client_write(c, "after", 5) > 0);
	delivered(&p, "after");
	close(end);
	close(pidfd);
	procctl_client_close(c);
	th_agent_kill(&p);
}

/* A forked child's procctl_reinit makes a socket of its own: the parent's
 * still gets its messages, the child's its own. */
static void a_child_gets_a_socket_of_its_own(void **state)
{
	struct procctl_client_info info, cinfo;
	struct th_agent p;
	procctl_client_t *c, *cc;
	const char *r;
	pid_t child;
	int cfd;
	(void)state;
	th_procsim_start(&p);
	c = claimed(&p, atoi(th_agent_ok(&p, "initev test")), &info);
	assert_true(atoi(th_agent_ok(&p, "evwait 5000")) >= 1);
	r = th_agent_ok(&p, "forkreinit");
	assert_int_equal(sscanf(r, "%d %d", &child, &cfd), 2);
	{
		struct th_agent ch = p; /* the child's region, found by its pid */
		ch.pid = child;
		cc = claimed(&ch, cfd, &cinfo);
	}
	assert_int_equal(cinfo.event_socket, 1);
	assert_true(procctl_client_write(c, "parent", 6) > 0);
	assert_int_equal(atoi(th_agent_ok(&p, "evwait 5000")), 1);
	delivered(&p, "parent");
	procctl_client_close(cc);
	procctl_client_close(c);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	th_agent_kill(&p);
}

/* echo-client --epoll waits in epoll_wait on its event socket, with a
 * timeout of a second: the config is applied on the socket's wake. */
static void an_epoll_loop_applies_a_publish(void **state)
{
	struct procctl_scan_entry e;
	struct procctl_client_info info;
	enum procctl_reject why;
	procctl_client_t *c;
	char line[512];
	FILE *out;
	int pfd[2], tries = 0, found = 0;
	int64_t g;
	pid_t pid;
	(void)state;
	assert_int_equal(pipe(pfd), 0);
	if ((pid = fork()) == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		execl(ECHO_CLIENT_PATH, "echo-client", "--consumer", "test", "--epoll", (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	assert_non_null(out = fdopen(pfd[0], "r"));
	while (!th_region_made(pid, -1, "test", &e)) {
		assert_true(++tries < 500);
		th_sleep_ms(10);
	}
	if (!(c = procctl_client_attach(&e, NULL, &why)))
		fail_msg("attach: %s (%s)", strerror(errno), procctl_reject_name(why));
	assert_int_equal(procctl_client_info(c, &info, sizeof info), 0);
	assert_int_equal(info.event_socket, 1);
	assert_true(procctl_client_claim(c, 1, 1, 10 * S) > 0);
	for (tries = 0; tries < 3; tries++) { /* a write may land as the loop times out: woken=timeout */
		char data[16];
		snprintf(data, sizeof data, "epoll%d", tries);
		assert_true((g = procctl_client_write(c, data, strlen(data))) > 0);
		while (fgets(line, sizeof line, out) && !strstr(line, "event=applied"))
			;
		if (!strstr(line, data))
			fail_msg("echo-client said '%s', wanted %s applied", line, data);
		if ((found = strstr(line, "woken=event") != NULL))
			break;
	}
	if (!found)
		fail_msg("three publishes applied, none woken by the event socket: %s", line);
	procctl_client_close(c);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fclose(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_write_makes_the_socket_readable),
		cmocka_unit_test(a_full_queue_never_blocks_the_agent),
		cmocka_unit_test(bad_sockets_are_refused_the_region_attached),
		cmocka_unit_test(header_fields_left_unchecked),
		cmocka_unit_test(a_shut_socket_is_said_once_read),
		cmocka_unit_test(a_child_gets_a_socket_of_its_own),
		cmocka_unit_test(an_epoll_loop_applies_a_publish),
	};
	signal(SIGPIPE, SIG_IGN);
	return TH_RUN(tests);
}
