/* SPDX-License-Identifier: Apache-2.0 */
/* The registry at node scale: 10,000 regions in 2,500 farm processes
 * (test/farm.c, acking), attached by one registry beside a process of
 * another consumer attached first. Every one of the 10,000 doorbells is
 * heard (the 128th and the 10,000th among them: past futex_waitv's 128 a
 * call and past the first thousands); an arbiter's source finds its
 * consumer's one process among them (its targets were the first 1,024 of
 * every consumer's, and the one attached first was not among them), and
 * lists all 10,000 of the farm's (an arbiter sees every target); and
 * the attaches are not a heartbeat of every owned region each. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procctl_arbiter.h"
#include "th.h"

#ifndef FARM_PATH
#error "FARM_PATH must name test/farm"
#endif

#define MS 1000000ull
#define PROCS 2500
#define PER_PROCESS 4
#define REGIONS (PROCS * PER_PROCESS)

struct tally {
	int attached, rang; /* rang: farm regions heard at least once */
	unsigned char *heard; /* by attach order, as the client's data (1-based) */
};

static void on_event(const struct procctl_event *ev, void *arg)
{
	struct tally *t = arg;
	uintptr_t i;
	if (ev->type == PROCCTL_EV_ATTACHED && !strcmp(ev->consumer, "farm")) {
		procctl_client_set_data(ev->client, (void *)(uintptr_t)++t->attached);
	} else if (ev->type == PROCCTL_EV_DOORBELL && (i = (uintptr_t)procctl_client_data(ev->client)) &&
		   i <= REGIONS && !t->heard[i - 1]) {
		t->heard[i - 1] = 1;
		t->rang++;
	}
}

/* The registry's warnings and errors, for a failure's reader. */
static void on_log(enum procctl_log_level level, const char *event, const char *fields, void *arg)
{
	(void)arg;
	if (level <= PROCCTL_LOG_WARN || getenv("SCALE_DEBUG"))
		fprintf(stderr, "%s %s\n", event, fields);
}

/* Dispatch r until *counter reaches want (a NULL counter: until
 * consumer is ready), for s seconds at most. */
static void pump_until(procctl_registry_t *r, const int *counter, int want, unsigned s)
{
	uint64_t end = th_now_ns() + s * 1000 * MS;
	while ((counter ? *counter < want : !procctl_registry_ready(r, "farm")) && th_now_ns() < end) {
		struct pollfd p = {procctl_registry_fd(r), POLLIN, 0};
		poll(&p, 1, 10);
		assert_int_equal(procctl_registry_dispatch(r), 0);
	}
	if (counter ? *counter < want : !procctl_registry_ready(r, "farm"))
		fail_msg("waited %u s for %d, got %d", s, want, counter ? *counter : 0);
}

static void ten_thousand(void **state)
{
	struct procctl_registry_opts o;
	struct procctl_registry_stats st;
	struct procctl_arbiter_source src;
	struct procctl_arb_target tg[4], *all;
	procctl_client_t **cs = calloc(REGIONS + 1, sizeof *cs);
	struct tally t = {0, 0, calloc(REGIONS, 1)};
	struct rlimit rl;
	struct th_agent tok;
	char lockdir[64] = "/tmp/procctl-scale.XXXXXX", cmd[96];
	procctl_registry_t *r;
	uint64_t t0, periods;
	pid_t farm;
	size_t i, n;
	int farm_in;
	(void)state;

	assert_non_null(cs);
	assert_non_null(t.heard);
	/* Two fds a process here, and the farm's 10,000 memfds there. */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = rl.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < REGIONS + 1024)
		TH_SKIP_OR_FAIL("an open-file limit of 11,024 (the farm holds 10,000 memfds)");
	assert_non_null(mkdtemp(lockdir));
	procctl_set_log(on_log, NULL);

	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.lock_dir = lockdir;
	o.rescan_ns = 1000 * MS; /* the farm is found by full scans */
	o.flags = PROCCTL_REGISTRY_DOORBELLS;
	o.max_regions = REGIONS + 16;
	o.on_event = on_event;
	o.arg = &t;
	assert_non_null(r = procctl_registry_new(&o));
	th_procsim_start(&tok);
	th_agent_ok(&tok, "init tok");
	procctl_registry_notify(r, tok.pid);
	t0 = th_now_ns();
	farm = th_farm_start(FARM_PATH, PROCS, PER_PROCESS, "farm", &farm_in);
	pump_until(r, &t.attached, REGIONS, 240);
	assert_int_equal(procctl_registry_clients(r, cs, REGIONS + 1), REGIONS + 1);
	/* A claim beats its own region: the beat thread beats them all only
	 * once a period (a quarter of the 10 s lease), not once a claim. The
	 * bound is the beats those periods, and one more, can make. */
	procctl_registry_stats(r, &st, sizeof st);
	periods = (th_now_ns() - t0) / (2500 * MS) + 2;
	print_message("%llu heartbeats while %d regions attached (at most %llu)\n", (unsigned long long)st.heartbeats,
		      REGIONS, (unsigned long long)(periods * (REGIONS + 1)));
	assert_true(st.heartbeats <= periods * (REGIONS + 1));

	/* The arbiter's targets: the one process of its consumer. */
	assert_int_equal(procctl_arbiter_registry_source(&src, r, "tok", 100 * MS), 0);
	assert_int_equal(src.targets(src.ctx, tg, 4), 1);
	assert_int_equal(tg[0].pid, tok.pid);
	procctl_arbiter_registry_source_free(&src);
	/* The farm's: all 10,000 counted with room for 4, and listed with room for all. */
	assert_int_equal(procctl_arbiter_registry_source(&src, r, "farm", 100 * MS), 0);
	assert_int_equal(src.targets(src.ctx, tg, 4), REGIONS);
	assert_non_null(all = calloc(REGIONS, sizeof *all));
	assert_int_equal(src.targets(src.ctx, all, REGIONS), REGIONS);
	for (i = 0; i < REGIONS; i++)
		assert_true(all[i].pid > 0 && all[i].handle);
	free(all);
	procctl_arbiter_registry_source_free(&src);
	assert_int_equal(procctl_registry_clients_of(r, "farm", cs, REGIONS), REGIONS);

	/* A config to each: each process acks, and every doorbell is heard. */
	pump_until(r, NULL, 0, 60);
	n = procctl_registry_clients_of(r, "farm", cs, REGIONS);
	for (i = 0; i < n; i++)
		assert_true(procctl_client_write(cs[i], "on", 2) > 0);
	pump_until(r, &t.rang, REGIONS, 120);
	assert_true(t.heard[127] && t.heard[REGIONS - 1]);
	print_message("%d regions attached, %d doorbells heard\n", t.attached, t.rang);

	procctl_registry_close(r, 0);
	close(farm_in);
	waitpid(farm, NULL, 0);
	th_agent_kill(&tok);
	snprintf(cmd, sizeof cmd, "rm -rf %s", lockdir);
	assert_int_equal(system(cmd), 0);
	free(t.heard);
	free(cs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ten_thousand),
	};
	return TH_RUN(tests);
}
