/* SPDX-License-Identifier: Apache-2.0 */
/* An agent built against an installed procctl (pkg-config or CMake's
 * find_package): a child process creates a region with procctl_init, this
 * agent attaches it with a registry, publishes "hello", waits for the
 * child's ack, then uninstalls: the child exits 0 when its config is
 * cleared. Exit 0 when all of that happened.
 * Usage: agent LOCK_DIR */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <procctl.h>
#include <procctl_agent.h>
#include <procctl_arbiter.h> /* installed too: it compiles */

static char consumer[32];
static procctl_client_t *attached;
static pid_t child;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The process side: a region; ack the config "hello", then exit 0 when
 * the agent uninstalls (the config cleared). */
static int process_side(void)
{
	static _Alignas(8) unsigned char state[PROCCTL_STATE_STORAGE(0, 64)];
	procctl_config_t cfg = {.consumer = consumer, .schema_version = 1, .payload_capacity = 64,
				.state_capacity = 64, .state_storage = state};
	procctl_t ctx;
	char buf[64];
	uint64_t gen;
	int i, acked = 0;
	if (procctl_init(&ctx, &cfg) < 0)
		return 1;
	for (i = 0; i < 100; i++) {
		int n = procctl_poll(&ctx, buf, sizeof buf, &gen);
		if (n == 5 && !memcmp(buf, "hello", 5) && procctl_ack(&ctx, gen, 0) == 0)
			acked = 1;
		else if (n == -ENODATA)
			return !acked;
		procctl_wait(&ctx, 100000000);
	}
	return 1;
}

static void on_event(const struct procctl_event *ev, void *arg)
{
	struct procctl_client_info info;
	(void)arg;
	if (ev->type == PROCCTL_EV_ATTACHED && procctl_client_info(ev->client, &info, sizeof info) == 0 && info.pid == child)
		attached = ev->client;
}

int main(int argc, char **argv)
{
	struct procctl_registry_opts o = {.sz = sizeof o, .consumer = consumer, .on_event = on_event,
					  .rescan_ns = 100000000};
	struct procctl_ack ack;
	procctl_registry_t *r;
	int64_t end = now_ns() + 10000000000;
	int64_t gen;
	int status;
	if (argc != 2)
		return 2;
	snprintf(consumer, sizeof consumer, "install%d", (int)getpid());
	o.lock_dir = argv[1];
	if ((child = fork()) == 0)
		_exit(process_side());
	if (!(r = procctl_registry_new(&o))) {
		perror("procctl_registry_new");
		return 1;
	}
	/* Attached, and owned (the node lock taken: until then a write is
	 * -EPERM). */
	gen = -EPERM;
	while (gen == -EPERM && now_ns() < end) {
		struct pollfd p = {.fd = procctl_registry_fd(r), .events = POLLIN};
		poll(&p, 1, 10);
		if (!attached)
			procctl_registry_notify(r, child);
		procctl_registry_dispatch(r);
		if (attached)
			gen = procctl_client_write(attached, "hello", 5);
	}
	if (gen < 0 || procctl_client_wait_ack(attached, (uint64_t)gen, end, &ack) < 0 || ack.status != 0) {
		fprintf(stderr, "agent: no ack from the child\n");
		kill(child, SIGKILL);
		return 1;
	}
	procctl_registry_close(r, PROCCTL_CLOSE_UNINSTALL); /* the child sees its config cleared */
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "agent: the child did not exit 0 after the uninstall\n");
		return 1;
	}
	printf("agent: pid %d acked generation %lld\n", (int)child, (long long)gen);
	return 0;
}
