/* SPDX-License-Identifier: Apache-2.0 */
/* echo agent - a complete agent on libprocctl-agent alone. It attaches to
 * every echo client, and while it holds the node lock publishes a config
 * to each, waits for the ack and prints the client's state. A second
 * instance waits passive and takes over when the first goes.
 *
 * Usage: echo-agent [--lock-dir DIR] [--config TEXT] [--lease MS]
 *                   [--rescan MS] [--uninstall-on-exit]
 * SIGTERM/SIGINT: hand off (RELEASED) and exit, or uninstall with
 * --uninstall-on-exit.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "procctl_agent.h"

static procctl_registry_t *reg;
static const char *config_text;
static char default_config[64];

static void on_signal(int sig)
{
	(void)sig;
	procctl_registry_stop(reg);
}

static void show_state(procctl_client_t *c, pid_t pid)
{
	static struct procctl_state st;
	int err = procctl_client_read_state(c, &st, sizeof st, procctl_now_ns() + 1000000000);
	if (err)
		printf("event=state pid=%d error=%s\n", (int)pid, strerror(-err));
	else
		printf("event=state pid=%d acked=%llu status=%d data=%.*s\n", (int)pid,
		       (unsigned long long)st.acked_gen, st.ack_status, (int)st.data_len, st.data);
}

static void publish(procctl_client_t *c, pid_t pid)
{
	static const char *kinds[] = {"", "applied", "rejected", "superseded"};
	const char *text = config_text ? config_text : default_config;
	struct procctl_ack ack;
	int64_t gen = procctl_client_write(c, text, strlen(text));
	int err;

	if (gen < 0) {
		printf("event=publish pid=%d error=%s\n", (int)pid, strerror((int)-gen));
		return;
	}
	err = procctl_client_wait_ack(c, (uint64_t)gen, procctl_now_ns() + 2000000000, &ack);
	if (err)
		printf("event=publish pid=%d gen=%lld ack_error=%s\n", (int)pid, (long long)gen, strerror(-err));
	else
		printf("event=publish pid=%d gen=%lld ack=%s status=%d\n", (int)pid, (long long)gen, kinds[ack.kind],
		       ack.status);
	show_state(c, pid);
}

static void on_event(const struct procctl_event *ev, void *arg)
{
	(void)arg;
	switch (ev->type) {
	case PROCCTL_EV_ATTACHED:
		printf("event=attached pid=%d consumer=%s owner=%d\n", (int)ev->pid, ev->consumer,
		       procctl_registry_owner(reg, ev->consumer));
		if (procctl_registry_owner(reg, ev->consumer))
			publish(ev->client, ev->pid);
		else
			show_state(ev->client, ev->pid);
		break;
	case PROCCTL_EV_DETACHED:
		printf("event=detached pid=%d reason=%s\n", (int)ev->pid,
		       ev->reason == -ESRCH ? "exited" : ev->reason == -ESTALE ? "exec" : "closed");
		break;
	case PROCCTL_EV_OWNERSHIP: {
		procctl_client_t *cs[256];
		size_t i, n = procctl_registry_clients(reg, cs, 256);
		printf("event=ownership consumer=%s held=%d\n", ev->consumer, ev->held);
		for (i = 0; ev->held && i < n && i < 256; i++) {
			struct procctl_client_info info;
			procctl_client_info(cs[i], &info, sizeof info);
			publish(cs[i], info.pid);
		}
		break;
	}
	case PROCCTL_EV_DOORBELL: /* not asked for: wait_ack listens itself */
	case PROCCTL_EV_READY:    /* no arbiter here waits for it */
		break;
	}
}

static void on_log(enum procctl_log_level level, const char *event, const char *fields, void *arg)
{
	static const char *names[] = {"error", "warn", "info", "debug"};
	(void)arg;
	if (level <= PROCCTL_LOG_INFO)
		fprintf(stderr, "level=%s event=%s %s\n", names[level], event, fields);
}

int main(int argc, char **argv)
{
	struct procctl_registry_opts o;
	unsigned close_flags = 0;
	int i, err;

	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.consumer = "echo";
	o.on_event = on_event;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--lock-dir") && i + 1 < argc)
			o.lock_dir = argv[++i];
		else if (!strcmp(argv[i], "--config") && i + 1 < argc)
			config_text = argv[++i];
		else if (!strcmp(argv[i], "--lease") && i + 1 < argc)
			o.lease_ns = strtoull(argv[++i], NULL, 10) * 1000000ull;
		else if (!strcmp(argv[i], "--rescan") && i + 1 < argc)
			o.rescan_ns = strtoull(argv[++i], NULL, 10) * 1000000ull;
		else if (!strcmp(argv[i], "--uninstall-on-exit"))
			close_flags = PROCCTL_CLOSE_UNINSTALL;
		else {
			fprintf(stderr,
				"usage: %s [--lock-dir DIR] [--config TEXT] [--lease MS] [--rescan MS] "
				"[--uninstall-on-exit]\n",
				argv[0]);
			return 2;
		}
	}
	snprintf(default_config, sizeof default_config, "hello from echo-agent %d", (int)getpid());
	setvbuf(stdout, NULL, _IOLBF, 0);
	procctl_set_log(on_log, NULL);
	reg = procctl_registry_new(&o);
	if (!reg) {
		fprintf(stderr, "echo-agent: %s\n", strerror(errno));
		return 1;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	printf("event=started pid=%d\n", (int)getpid());
	err = procctl_registry_run(reg);
	printf("event=stopping mode=%s\n", close_flags ? "uninstall" : "hand-off");
	procctl_registry_close(reg, close_flags);
	return err ? 1 : 0;
}
