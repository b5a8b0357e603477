/* SPDX-License-Identifier: Apache-2.0 */
/* The arbiter with real token holders, under token-agent processes.
 *
 * random_schedules: token agents in their own processes, holders stopped,
 * continued, killed and forked on a seeded random schedule, and an agent
 * hand-off (graceful or a crash) in each schedule. The kernel is the
 * witness there: a holder uses the resource only under a POSIX lock it
 * must get at once ("X" otherwise), which dies with it. Zero overlaps, and
 * once the schedule ends every holder left gets the resource again.
 * PROCCTL_TEST_SEED=N replays schedules from seed N. Also: a zombie
 * holder, and a holder found by its hello after the agent's first scan.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "th.h"
#include "tokenworld.h"

/* ---- random schedules --------------------------------------------- */

#define MAXH 12     /* holders alive at once, forks included */
#define HOLD_MS 30
#define NSCHED 4
#define SCHED_MS 2000

struct chaos {
	pid_t pid[MAXH];         /* 0: a free slot */
	uint64_t cont_at[MAXH];  /* SIGSTOPped until then; 0: running */
	pid_t known[256];        /* every holder pid ever seen, forks included */
	int nknown;
	uint64_t rng;
	int stops, kills, forks;
	const char *witness;
};

static unsigned rnd(struct chaos *c, unsigned n)
{
	c->rng ^= c->rng << 13; /* xorshift64 */
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	return (unsigned)(c->rng % n);
}

static int add_holder(struct chaos *c, pid_t pid)
{
	int i;
	for (i = 0; i < MAXH && c->pid[i]; i++)
		;
	if (i == MAXH)
		return -1;
	c->pid[i] = pid;
	c->cont_at[i] = 0;
	track(pid);
	if (c->nknown < 256)
		c->known[c->nknown++] = pid;
	return i;
}

static int live_holders(const struct chaos *c)
{
	int i, n = 0;
	for (i = 0; i < MAXH; i++)
		n += c->pid[i] != 0;
	return n;
}

/* A holder's pid, picked at random among the live ones (-1: none). */
static int pick(struct chaos *c)
{
	int n = live_holders(c), k, i;
	if (!n)
		return -1;
	k = (int)rnd(c, (unsigned)n);
	for (i = 0; i < MAXH; i++)
		if (c->pid[i] && k-- == 0)
			return i;
	return -1;
}

/* Forked children announce themselves in the witness ("F pid ns"). */
static void learn_forks(struct chaos *c)
{
	static struct wev evs[MAXEV];
	int n = read_witness(c->witness, evs), i, k;
	for (i = 0; i < n; i++) {
		if (evs[i].what != 'F')
			continue;
		for (k = 0; k < c->nknown && c->known[k] != evs[i].pid; k++)
			;
		if (k == c->nknown)
			add_holder(c, evs[i].pid);
	}
}

/* The last processes reaped, with how they ended: said of a holder that
 * lags (say_holder). */
static struct {
	pid_t pid;
	int status;
} reaped[256];
static unsigned nreaped;

/* Reap whatever died: our children, and orphans we are subreaper for. */
static void reap_any(void)
{
	pid_t pid;
	int status;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		reaped[nreaped % 256].pid = pid;
		reaped[nreaped++ % 256].status = status;
	}
}

/* How pid ended, as reaped: "exited N", "killed by SIGX", or "not reaped". */
static const char *ended(pid_t pid, char *buf, size_t len)
{
	unsigned k;
	for (k = nreaped; k-- > 0 && k + 256 >= nreaped;) {
		if (reaped[k % 256].pid != pid)
			continue;
		if (WIFEXITED(reaped[k % 256].status))
			snprintf(buf, len, "exited %d", WEXITSTATUS(reaped[k % 256].status));
		else
			snprintf(buf, len, "killed by %s", sigabbrev_np(WTERMSIG(reaped[k % 256].status)));
		return buf;
	}
	return "not reaped";
}

/* A token agent that rescans every rescan_ms, with the hello probe or not. */
static pid_t token_agent_every(const char *lockdir, const char *log, const char *rescan_ms, const char *hello)
{
	char *argv[] = {"token-agent", "--consumer", consumer,          "--lock-dir", (char *)lockdir,
			"--hold",      "30",         "--lease",         "400",        "--rescan",
			(char *)rescan_ms, "--hello", (char *)hello, NULL};
	return spawn(TOKEN_AGENT_PATH, argv, log, 1);
}

/* The schedules' agents: rescans every 100 ms find every holder, and no
 * probe is placed. Placing one waits in the kernel while another
 * program's uprobes close, as test_hello_limits' do beside this test in
 * the build types' run; once, on a rehearsal of CI, neither agent of a
 * schedule granted anything in its 20 s (the likely cause, not seen). */
static pid_t token_agent(const char *lockdir, const char *log)
{
	return token_agent_every(lockdir, log, "100", "0");
}

/* 1 when the file at path has what in it. */
static int file_has(const char *path, const char *what)
{
	char buf[8192];
	size_t n;
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, what) != NULL;
}

/* Holder changes an agent logged ("event=holder ... pid=N" with N != 0);
 * fails on a sanitizer's report there. */
static int holder_changes(const char *log)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(log, "r");
	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		n += !strncmp(line, "event=holder ", 13) && !strstr(line, " pid=0 ");
		if (strstr(line, "Sanitizer") || strstr(line, "runtime error"))
			fail_msg("%s: %s", log, line);
	}
	fclose(f);
	return n;
}

struct sched_result {
	int overlaps, starts, changes, lagging;
};

/* One schedule: NHOLD holders, agent A, then B (passive) and A's exit
 * (SIGTERM, or SIGKILL when crash); stops, kills and forks at random
 * moments; then everyone continues, and each holder left must get a turn. */
/* Wake the stopped holders whose stop is over at now. */
static void cont_due(struct chaos *c, uint64_t now)
{
	int i;
	for (i = 0; i < MAXH; i++)
		if (c->pid[i] && c->cont_at[i] && now >= c->cont_at[i]) {
			kill(c->pid[i], SIGCONT);
			c->cont_at[i] = 0;
		}
}

/* Whether pid has its SIGUSR1 handler in place (SigCgt in its status): a
 * holder just spawned is still starting, and the signal's default would
 * kill it. */
static int catches_usr1(pid_t pid)
{
	char path[64], line[128];
	unsigned long long caught = 0;
	FILE *f;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "SigCgt: %llx", &caught) == 1)
			break;
	fclose(f);
	return (caught >> (SIGUSR1 - 1)) & 1;
}

/* One random act against one random holder: stop, kill, fork or leave it. */
static void disturb(struct chaos *c, uint64_t now)
{
	int i = pick(c);
	if (i < 0)
		return;
	switch (rnd(c, 4)) {
	case 0: /* stop it for 50 to 400 ms (holding or not) */
		if (!c->cont_at[i]) {
			kill(c->pid[i], SIGSTOP);
			c->cont_at[i] = now + (50 + rnd(c, 350)) * MS;
			c->stops++;
		}
		break;
	case 1: /* kill it, and a new holder takes its place */
		kill(c->pid[i], SIGKILL);
		c->pid[i] = 0;
		c->kills++;
		add_holder(c, holder(c->witness));
		break;
	case 2: /* fork it: the child is a holder of its own (one just started may not catch the signal yet) */
		if (!c->cont_at[i] && live_holders(c) < MAXH - 1 && catches_usr1(c->pid[i])) {
			kill(c->pid[i], SIGUSR1);
			c->forks++;
		}
		break;
	default: /* leave it alone */
		break;
	}
}

/* What a holder is (its state in /proc) and did (its witness events
 * before and after settle), said when one lags: why it had no turn. */
static void say_holder(pid_t pid, const struct wev *evs, int n, uint64_t settle)
{
	char path[64], stat[256] = "gone", *state, how[32];
	int k, before = 0, after = 0;
	char last = '-';
	FILE *f;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r"))) {
		if (!fgets(stat, sizeof stat, f))
			snprintf(stat, sizeof stat, "unreadable");
		fclose(f);
	}
	if ((state = strrchr(stat, ')')) && state[1])
		state[3] = 0; /* "pid (comm) S ...": the state letter alone */
	for (k = 0; k < n; k++)
		if (evs[k].pid == pid) {
			(uint64_t)evs[k].ns > settle ? after++ : before++;
			last = evs[k].what;
		}
	print_message("holder %d: state %s (%s), witness events %d before the settle, %d after, the last %c\n",
		      (int)pid, state ? state + 2 : stat, ended(pid, how, sizeof how), before, after, last);
}

/* Wait up to 20 s for every holder left to start a turn after now; the
 * number that did not, each said (say_holder). */
static int wait_turns(const struct chaos *c)
{
	static struct wev evs[MAXEV];
	uint64_t settle = th_now_ns(), deadline = settle + 20000 * MS;
	for (;;) {
		int i, n = read_witness(c->witness, evs), lagging = 0;
		int late = th_now_ns() > deadline;
		for (i = 0; i < MAXH; i++) {
			int k, got = 0;
			if (!c->pid[i])
				continue;
			for (k = 0; k < n && !got; k++)
				got = evs[k].what == 'S' && evs[k].pid == c->pid[i] && (uint64_t)evs[k].ns > settle;
			lagging += !got;
			if (!got && late)
				say_holder(c->pid[i], evs, n, settle);
		}
		if (!lagging || late)
			return lagging;
		th_sleep_ms(20);
		reap_any();
	}
}

static void one_schedule(uint64_t seed, int crash, struct sched_result *res, struct chaos *c)
{
	char lockdir[] = "/tmp/procctl-locks.XXXXXX", witness[] = "/tmp/procctl-witness.XXXXXX";
	char loga[] = "/tmp/procctl-agentA.XXXXXX", logb[] = "/tmp/procctl-agentB.XXXXXX", cmd[128];
	uint64_t t0, now, b_at, handoff_at;
	pid_t a, b = 0;
	int i, handed = 0;

	assert_non_null(mkdtemp(lockdir));
	close(mkstemp(witness));
	close(mkstemp(loga));
	close(mkstemp(logb));
	memset(c, 0, sizeof *c);
	c->rng = seed * 0x9e3779b97f4a7c15ull + 1;
	c->witness = witness;
	for (i = 0; i < NHOLD; i++)
		add_holder(c, holder(witness));
	a = token_agent(lockdir, loga);
	t0 = th_now_ns();
	b_at = t0 + (300 + rnd(c, 500)) * MS;
	handoff_at = b_at + (200 + rnd(c, 800)) * MS;

	while ((now = th_now_ns()) < t0 + SCHED_MS * MS) {
		th_sleep_ms(20 + rnd(c, 60));
		now = th_now_ns();
		reap_any();
		learn_forks(c);
		cont_due(c, now);
		if (!b && now >= b_at)
			b = token_agent(lockdir, logb);
		if (b && !handed && now >= handoff_at) {
			kill(a, crash ? SIGKILL : SIGTERM);
			handed = 1;
		}
		disturb(c, now);
	}
	if (!handed)
		kill(a, crash ? SIGKILL : SIGTERM);
	if (!b)
		b = token_agent(lockdir, logb);
	cont_due(c, UINT64_MAX);
	th_sleep_ms(50); /* forks asked for late announce themselves */
	learn_forks(c);

	/* Everyone cooperates now: each holder left gets a turn. */
	res->lagging = wait_turns(c);

	for (i = 0; i < MAXH; i++)
		if (c->pid[i])
			kill(c->pid[i], SIGKILL);
	kill(a, SIGKILL);
	kill(b, SIGTERM);
	waitpid(b, NULL, 0);
	th_sleep_ms(20);
	reap_any();

	res->overlaps = count_events(witness, 'X');
	res->starts = count_events(witness, 'S');
	res->changes = holder_changes(loga) + holder_changes(logb);
	unlink(witness);
	unlink(loga);
	unlink(logb);
	snprintf(cmd, sizeof cmd, "rm -rf %s", lockdir);
	assert_int_equal(system(cmd), 0);
}

static void random_schedules(void **state)
{
	const char *env = getenv("PROCCTL_TEST_SEED");
	uint64_t seed0 = env ? strtoull(env, NULL, 10) : 1;
	int s, stops = 0, kills = 0, forks = 0, changes = 0, starts = 0;
	static struct chaos c;
	(void)state;

	/* Orphaned forks come back to us to be reaped. */
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	for (s = 0; s < NSCHED; s++) {
		struct sched_result r;
		uint64_t seed = seed0 + (uint64_t)s;
		int crash = (int)(seed & 1);
		one_schedule(seed, crash, &r, &c);
		print_message("schedule seed=%llu agent %s: %d stops, %d kills, %d forks, %d holders in all; "
			      "%d grants taken up, %d holder changes; overlaps %d, holders never granted after "
			      "the schedule %d\n",
			      (unsigned long long)seed, crash ? "crash" : "hand-off", c.stops, c.kills, c.forks,
			      c.nknown, r.starts, r.changes, r.overlaps, r.lagging);
		stops += c.stops;
		kills += c.kills;
		forks += c.forks;
		changes += r.changes;
		starts += r.starts;
		assert_int_equal(r.overlaps, 0);
		assert_int_equal(r.lagging, 0);
		assert_true(r.starts > 0);
	}
	print_message("%d schedules (seeds %llu..%llu), %d agent hand-offs: %d stops, %d kills, %d forks; "
		      "%d grants taken up, %d holder changes, no overlap\n",
		      NSCHED, (unsigned long long)seed0, (unsigned long long)(seed0 + NSCHED - 1), NSCHED, stops,
		      kills, forks, starts, changes);
}

/* The last witness event of pid, after time after (0: none). */
static char last_event(const char *witness, pid_t pid, long long after)
{
	static struct wev evs[MAXEV];
	int n = read_witness(witness, evs), i;
	char last = 0;
	for (i = 0; i < n; i++)
		if (evs[i].pid == pid && evs[i].ns > after && evs[i].what != 'F')
			last = evs[i].what;
	return last;
}

static pid_t forked_child(const char *witness)
{
	static struct wev evs[MAXEV];
	int n = read_witness(witness, evs), i;
	for (i = 0; i < n; i++)
		if (evs[i].what == 'F')
			return evs[i].pid;
	return 0;
}

static char proc_state(pid_t pid)
{
	char path[32], buf[512], *rp;
	FILE *f;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	buf[fread(buf, 1, sizeof buf - 1, f)] = 0;
	fclose(f);
	rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' ? rp[2] : 0;
}

/* A holder killed while its parent does not reap it (a zombie) has
 * exited: the resource moves on without waiting for the reap. */
static void zombie_holder_frees(void **state)
{
	char lockdir[] = "/tmp/procctl-locks.XXXXXX", witness[] = "/tmp/procctl-witness.XXXXXX", cmd[128];
	pid_t parent, child = 0, agent;
	long long killed_at;
	int i;
	(void)state;

	assert_non_null(mkdtemp(lockdir));
	close(mkstemp(witness));
	parent = holder(witness);
	agent = token_agent(lockdir, "/dev/null");
	for (i = 0; i < 500 && last_event(witness, parent, 0) != 'S'; i++)
		th_sleep_ms(10);
	assert_int_equal(last_event(witness, parent, 0), 'S');
	kill(parent, SIGUSR1);
	for (i = 0; i < 500 && !(child = forked_child(witness)); i++)
		th_sleep_ms(10);
	assert_true(child > 0);
	track(child);
	/* Stop the child while it holds: then it holds for sure. */
	for (i = 0; i < 2000; i++) {
		if (last_event(witness, child, 0) == 'S') {
			kill(child, SIGSTOP);
			if (last_event(witness, child, 0) == 'S')
				break;
			kill(child, SIGCONT);
		}
		th_sleep_ms(1);
	}
	assert_int_equal(last_event(witness, child, 0), 'S');
	killed_at = (long long)th_now_ns();
	kill(child, SIGKILL);
	for (i = 0; i < 500 && last_event(witness, parent, killed_at) != 'S'; i++)
		th_sleep_ms(10);
	assert_int_equal(proc_state(child), 'Z'); /* its parent never reaped it */
	assert_int_equal(last_event(witness, parent, killed_at), 'S');
	assert_int_equal(count_events(witness, 'X'), 0);

	kill(parent, SIGKILL);
	waitpid(parent, NULL, 0);
	kill(agent, SIGTERM);
	waitpid(agent, NULL, 0);
	unlink(witness);
	snprintf(cmd, sizeof cmd, "rm -rf %s", lockdir);
	assert_int_equal(system(cmd), 0);
}

/* A holder that starts after the agent's first scan, with rescans an
 * hour apart: the agent's hello probe finds it, and it gets its turn.
 * Before, token-agent found such a holder at its next rescan alone. */
static void late_holder_found_by_hello(void **state)
{
	char lockdir[] = "/tmp/procctl-locks.XXXXXX", witness[] = "/tmp/procctl-witness.XXXXXX";
	char log[] = "/tmp/procctl-agentH.XXXXXX", cmd[128];
	pid_t agent, h;
	int i;
	(void)state;

	assert_non_null(mkdtemp(lockdir));
	close(mkstemp(witness));
	close(mkstemp(log));
	agent = token_agent_every(lockdir, log, "3600000", "1");
	for (i = 0; i < 500 && !file_has(log, "event=started"); i++)
		th_sleep_ms(10);
	if (!file_has(log, "hello=1"))
		fail_msg("token-agent has no hello probe here (root, perf uprobes): %s", log);
	for (i = 0; i < 1000 && !file_has(log, "event=scanned"); i++)
		th_sleep_ms(10);
	if (!file_has(log, "event=scanned"))
		fail_msg("token-agent's first scan did not end in 10 s: %s", log);
	/* Its scans are an hour apart now: only the hello can find h. */
	h = holder(witness);
	for (i = 0; i < 1000 && last_event(witness, h, 0) != 'S'; i++)
		th_sleep_ms(10);
	assert_int_equal(last_event(witness, h, 0), 'S');
	/* The agent logs the grant after its tick wrote it: h may use it first. */
	for (i = 0; i < 500 && holder_changes(log) < 1; i++)
		th_sleep_ms(10);
	assert_true(holder_changes(log) >= 1);

	kill(h, SIGKILL);
	waitpid(h, NULL, 0);
	kill(agent, SIGTERM);
	waitpid(agent, NULL, 0);
	unlink(witness);
	unlink(log);
	snprintf(cmd, sizeof cmd, "rm -rf %s", lockdir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(zombie_holder_frees, teardown),
		cmocka_unit_test_teardown(late_holder_found_by_hello, teardown),
		cmocka_unit_test_teardown(random_schedules, teardown),
	};
	tokenworld_init();
	return TH_RUN(tests);
}
