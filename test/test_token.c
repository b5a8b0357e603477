/* The arbiter with real token holders: a registry owns them, the arbiter
 * rotates the resource among them, and the witness log (each holder's own
 * record of when it used the resource) shows no two holders at once, and
 * every holder getting turns. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procctl_arbiter.h"
#include "th.h"

#ifndef TOKEN_CLIENT_PATH
#error "TOKEN_CLIENT_PATH must name the token client"
#endif

#define MS 1000000ull
#define NHOLD 3

struct interval_check {
	int starts[NHOLD];
	pid_t pids[NHOLD];
	int overlaps;
};

/* Read the witness: "S pid ns" / "E pid ns" / "K pid ns" (killed), in
 * time order; a start while someone else holds is an overlap. */
static void check_witness(const char *path, struct interval_check *c)
{
	struct ev {
		char what;
		int pid;
		long long ns;
	} evs[20000];
	int n = 0, i, j;
	int holding[NHOLD] = {0};
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	while (n < 20000 && fscanf(f, " %c %d %lld", &evs[n].what, &evs[n].pid, &evs[n].ns) == 3)
		n++;
	fclose(f);
	/* insertion sort by time: the log is nearly sorted already */
	for (i = 1; i < n; i++) {
		struct ev e = evs[i];
		for (j = i; j > 0 && evs[j - 1].ns > e.ns; j--)
			evs[j] = evs[j - 1];
		evs[j] = e;
	}
	for (i = 0; i < n; i++) {
		int k, who = -1, others = 0;
		for (k = 0; k < NHOLD; k++)
			if (c->pids[k] == evs[i].pid)
				who = k;
		assert_true(who >= 0);
		for (k = 0; k < NHOLD; k++)
			others += k != who && holding[k];
		if (evs[i].what == 'S') {
			c->overlaps += others > 0;
			holding[who] = 1;
			c->starts[who]++;
		} else {
			holding[who] = 0;
		}
	}
}

static pid_t holder(const char *witness)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execl(TOKEN_CLIENT_PATH, "token-client", "--witness", witness, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void rotation_with_real_holders(void **state)
{
	char lockdir[] = "/tmp/procctl-locks.XXXXXX", witness[] = "/tmp/procctl-witness.XXXXXX", cmd[128];
	struct procctl_registry_opts o;
	struct procctl_arbiter_source src;
	struct procctl_arbiter_opts ao;
	struct procctl_arbiter_snapshot snap;
	struct interval_check c;
	procctl_registry_t *r;
	procctl_arbiter_t *a;
	uint64_t end;
	int i, st, fd;
	(void)state;

	assert_non_null(mkdtemp(lockdir));
	fd = mkstemp(witness);
	close(fd);
	memset(&c, 0, sizeof c);
	for (i = 0; i < NHOLD; i++)
		c.pids[i] = holder(witness);

	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.consumer = "token";
	o.lock_dir = lockdir;
	o.lease_ns = 2000 * MS;
	o.rescan_ns = 100 * MS;
	r = procctl_registry_new(&o);
	assert_non_null(r);
	assert_int_equal(procctl_arbiter_registry_source(&src, r, "token", 500 * MS), 0);
	memset(&ao, 0, sizeof ao);
	ao.sz = sizeof ao;
	ao.kind = "gpu";
	ao.hold_ns = 50 * MS;
	a = procctl_arbiter_new(&ao, &src);
	assert_non_null(a);

	end = th_now_ns() + 1500 * MS;
	while (th_now_ns() < end) {
		struct pollfd p = {procctl_registry_fd(r), POLLIN, 0};
		poll(&p, 1, 2);
		assert_int_equal(procctl_registry_dispatch(r), 0);
		assert_int_equal(procctl_arbiter_tick(a), 0);
	}
	assert_int_equal(procctl_arbiter_snapshot(a, &snap, 1), 1);
	for (i = 0; i < NHOLD; i++) {
		kill(c.pids[i], SIGTERM); /* it writes its last E on the way out */
		waitpid(c.pids[i], &st, 0);
	}
	check_witness(witness, &c);
	print_message("turns: %d %d %d; hand-offs %llu; held %llu ms, pending release %llu ms, blocked %llu ms\n",
		      c.starts[0], c.starts[1], c.starts[2], (unsigned long long)snap.handoffs,
		      (unsigned long long)(snap.hold_ns_total / MS), (unsigned long long)(snap.pending_ns / MS),
		      (unsigned long long)(snap.blocked_ns / MS));
	assert_int_equal(c.overlaps, 0);
	for (i = 0; i < NHOLD; i++)
		assert_true(c.starts[i] >= 2);
	assert_true(snap.handoffs >= 5);

	procctl_arbiter_free(a);
	procctl_registry_close(r, 0);
	procctl_arbiter_registry_source_free(&src);
	unlink(witness);
	snprintf(cmd, sizeof cmd, "rm -rf %s", lockdir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rotation_with_real_holders),
	};
	signal(SIGPIPE, SIG_IGN);
	return TH_RUN(tests);
}
