/* SPDX-License-Identifier: Apache-2.0 */
/* The arbiter with real token holders.
 *
 * rotation_with_real_holders: a registry owns three holders, the arbiter
 * rotates the resource among them, and the witness log (each holder's own
 * record of when it used the resource) shows no two holders at once, and
 * every holder getting turns.
 *
 * random_schedules: token agents in their own processes, holders stopped,
 * continued, killed and forked on a seeded random schedule, and an agent
 * hand-off (graceful or a crash) in each schedule. The kernel is the
 * witness there: a holder uses the resource only under a POSIX lock it
 * must get at once ("X" otherwise), which dies with it. Zero overlaps, and
 * once the schedule ends every holder left gets the resource again.
 * PROCCTL_TEST_SEED=N replays schedules from seed N.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procctl_arbiter.h"
#include "th.h"

#if !defined(TOKEN_CLIENT_PATH) || !defined(TOKEN_AGENT_PATH)
#error "TOKEN_CLIENT_PATH and TOKEN_AGENT_PATH must name the token programs"
#endif

#define MS 1000000ull
#define NHOLD 3
#define MAXEV 20000

struct wev {
	char what; /* S start, E end, X overlap the kernel saw, F forked (a new holder) */
	int pid;
	long long ns;
};

/* The witness, in time order. */
static int read_witness(const char *path, struct wev *evs)
{
	int n = 0, i, j;
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	while (n < MAXEV && fscanf(f, " %c %d %lld", &evs[n].what, &evs[n].pid, &evs[n].ns) == 3)
		n++;
	fclose(f);
	/* insertion sort by time: the log is nearly sorted already */
	for (i = 1; i < n; i++) {
		struct wev e = evs[i];
		for (j = i; j > 0 && evs[j - 1].ns > e.ns; j--)
			evs[j] = evs[j - 1];
		evs[j] = e;
	}
	return n;
}

struct interval_check {
	int starts[NHOLD];
	pid_t pids[NHOLD];
	int overlaps;
};

/* A start while someone else holds is an overlap; so is an X. */
static void check_witness(const char *path, struct interval_check *c)
{
	static struct wev evs[MAXEV];
	int holding[NHOLD] = {0};
	int n = read_witness(path, evs), i;
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
		} else if (evs[i].what == 'X') {
			c->overlaps++;
		} else {
			holding[who] = 0;
		}
	}
}

static int count_events(const char *witness, char what)
{
	static struct wev evs[MAXEV];
	int n = read_witness(witness, evs), i, k = 0;
	for (i = 0; i < n; i++)
		k += evs[i].what == what;
	return k;
}

/* This test program's own consumer name, so holders and agents of other
 * runs on the node never meet ours. */
static char consumer[16];

/* Every process a test started or learned of: killed by teardown, even
 * when the test fails. */
static pid_t tracked[512];
static int ntracked;

static void track(pid_t pid)
{
	if (ntracked < 512)
		tracked[ntracked++] = pid;
}

static int teardown(void **state)
{
	(void)state;
	int i;
	while (ntracked)
		kill(tracked[--ntracked], SIGKILL);
	for (i = 0; i < 200; i++) { /* reap them all, orphans included: at most 2 s */
		pid_t p = waitpid(-1, NULL, WNOHANG);
		if (p < 0)
			break; /* ECHILD: nobody left */
		if (p == 0)
			th_sleep_ms(10);
	}
	prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
	return 0;
}

/* path with argv, stdout to out; stderr too when both (agents log there;
 * holders keep ours, where a sanitizer would report). */
static pid_t spawn(const char *path, char *const argv[], const char *out, int both)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	track(pid);
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
		dup2(fd, 1);
		if (both)
			dup2(fd, 2);
		execv(path, argv);
		_exit(127);
	}
	return pid;
}

static pid_t holder(const char *witness)
{
	char *argv[] = {"token-client", "--consumer", consumer, "--witness", (char *)witness, NULL};
	return spawn(TOKEN_CLIENT_PATH, argv, "/dev/null", 0);
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
	o.consumer = consumer;
	o.lock_dir = lockdir;
	o.lease_ns = 2000 * MS;
	o.rescan_ns = 100 * MS;
	r = procctl_registry_new(&o);
	assert_non_null(r);
	assert_int_equal(procctl_arbiter_registry_source(&src, r, consumer, 500 * MS), 0);
	memset(&ao, 0, sizeof ao);
	ao.sz = sizeof ao;
	ao.kind = 1; /* token-client's default kind */
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
	assert_int_equal(procctl_arbiter_snapshot(a, &snap, 1, sizeof snap), 1);
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

/* The control block's seq of pid's region of our consumer, made odd: a
 * write begun that never ends, as an agent that died in one leaves it. */
static void stick_seq_odd(pid_t pid)
{
	char dir[64], path[600], link[256], want[64];
	struct procctl_hdr h;
	struct dirent *e;
	uint32_t *seq = NULL;
	void *m;
	DIR *d;
	int fd = -1;
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	snprintf(want, sizeof want, "/memfd:procctl:%s-v1 (deleted)", consumer);
	assert_non_null(d = opendir(dir));
	while (fd < 0 && (e = readdir(d))) {
		ssize_t n;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if ((n = readlink(path, link, sizeof link - 1)) > 0 && (link[n] = 0, !strcmp(link, want)))
			fd = open(path, O_RDWR);
	}
	closedir(d);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
	m = mmap(NULL, h.ctrl_off + 64, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	seq = (uint32_t *)((char *)m + h.ctrl_off);
	__atomic_fetch_or(seq, 1u, __ATOMIC_SEQ_CST);
	munmap(m, h.ctrl_off + 64);
	close(fd);
}

/* A holder whose agent died in a write: its grant reads say busy from
 * then on, and the hold still ends when the lease does (SPEC.md 9.3). */
static void holder_lets_go_when_its_agent_died_in_a_write(void **state)
{
	char lockdir[] = "/tmp/procctl-locks.XXXXXX", witness[] = "/tmp/procctl-witness.XXXXXX", cmd[128];
	struct procctl_registry_opts o;
	struct procctl_arbiter_source src;
	struct procctl_arbiter_opts ao;
	procctl_registry_t *r;
	procctl_arbiter_t *a;
	uint64_t end;
	pid_t p;
	int fd, st;
	(void)state;

	assert_non_null(mkdtemp(lockdir));
	fd = mkstemp(witness);
	close(fd);
	p = holder(witness);
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.consumer = consumer;
	o.lock_dir = lockdir;
	o.lease_ns = 500 * MS;
	o.rescan_ns = 100 * MS;
	assert_non_null(r = procctl_registry_new(&o));
	assert_int_equal(procctl_arbiter_registry_source(&src, r, consumer, 500 * MS), 0);
	memset(&ao, 0, sizeof ao);
	ao.sz = sizeof ao;
	ao.kind = 1;
	ao.hold_ns = 50 * MS;
	assert_non_null(a = procctl_arbiter_new(&ao, &src));
	end = th_now_ns() + 5000 * MS;
	while (count_events(witness, 'S') == 0 && th_now_ns() < end) {
		struct pollfd pf = {procctl_registry_fd(r), POLLIN, 0};
		poll(&pf, 1, 2);
		assert_int_equal(procctl_registry_dispatch(r), 0);
		assert_int_equal(procctl_arbiter_tick(a), 0);
	}
	assert_int_equal(count_events(witness, 'S'), 1); /* it holds */
	procctl_arbiter_free(a);
	procctl_arbiter_registry_source_free(&src);
	/* The agent goes (its heartbeats stop), and its last write never ends. */
	procctl_registry_close(r, 0);
	stick_seq_odd(p);
	end = th_now_ns() + 5000 * MS;
	while (count_events(witness, 'E') == 0 && th_now_ns() < end)
		th_sleep_ms(20);
	assert_int_equal(count_events(witness, 'E'), 1);
	kill(p, SIGTERM);
	waitpid(p, &st, 0);
	unlink(witness);
	snprintf(cmd, sizeof cmd, "rm -rf %s", lockdir);
	assert_int_equal(system(cmd), 0);
}

/* Every event sets it: the loop below ticks on events and when due only. */
static int news;

static void note_event(const struct procctl_event *ev, void *arg)
{
	(void)ev;
	(void)arg;
	news = 1;
}

/* A loop that ticks the arbiter only on an event or when next_tick says
 * (as procctl-node does), with PROCCTL_ARB_READY_EVENTS, and a process
 * that asked before the agent came and is quiet since: its ask rang no
 * event here, and the registry attaches it before it is ready (younger
 * processes come after it in the first scan). The READY event is what
 * wakes the arbiter to grant. */
static void ready_event_wakes_the_arbiter(void **state)
{
	char lockdir[] = "/tmp/procctl-locks.XXXXXX", cmd[128];
	struct procctl_registry_opts o;
	struct procctl_arbiter_source src;
	struct procctl_arbiter_opts ao;
	struct procctl_arbiter_snapshot snap;
	struct th_agent sim;
	procctl_registry_t *r;
	procctl_arbiter_t *a;
	uint64_t end;
	int i, ticks = 0;
	(void)state;

	assert_non_null(mkdtemp(lockdir));
	th_procsim_start(&sim);
	th_agent_ok(&sim, "init %s", consumer);
	th_agent_ok(&sim, "report 1 0 %u %u", PROCCTL_RES_IDLE, PROCCTL_RES_F_WANT);
	for (i = 0; i < 48; i++) { /* later pids: the scan goes on for steps after the attach */
		pid_t c = fork();
		assert_true(c >= 0);
		if (c == 0)
			for (;;)
				pause();
		track(c);
	}
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.consumer = consumer;
	o.lock_dir = lockdir;
	o.rescan_ns = 3600000 * MS;
	o.flags = PROCCTL_REGISTRY_DOORBELLS;
	o.on_event = note_event;
	assert_non_null(r = procctl_registry_new(&o));
	assert_int_equal(procctl_arbiter_registry_source(&src, r, consumer, 500 * MS), 0);
	memset(&ao, 0, sizeof ao);
	ao.sz = sizeof ao;
	ao.kind = 1;
	ao.hold_ns = 50 * MS;
	ao.flags = PROCCTL_ARB_READY_EVENTS;
	assert_non_null(a = procctl_arbiter_new(&ao, &src));
	news = 1;
	end = th_now_ns() + 3000 * MS;
	while (th_now_ns() < end && (procctl_arbiter_snapshot(a, &snap, 1, sizeof snap), snap.holder_pid != sim.pid)) {
		uint64_t due = procctl_arbiter_next_tick(a), now = th_now_ns();
		struct pollfd p = {procctl_registry_fd(r), POLLIN, 0};
		poll(&p, 1, due == UINT64_MAX ? 100 : due <= now ? 0 : (int)((due - now) / MS + 1));
		assert_int_equal(procctl_registry_dispatch(r), 0);
		if (news || th_now_ns() >= procctl_arbiter_next_tick(a)) {
			news = 0;
			ticks++;
			assert_int_equal(procctl_arbiter_tick(a), 0);
		}
	}
	if (snap.holder_pid != sim.pid)
		fail_msg("no grant in 3 s (%d ticks; next_tick %llu)", ticks,
			 (unsigned long long)procctl_arbiter_next_tick(a));

	procctl_arbiter_free(a);
	procctl_registry_close(r, 0);
	procctl_arbiter_registry_source_free(&src);
	th_agent_kill(&sim);
	snprintf(cmd, sizeof cmd, "rm -rf %s", lockdir);
	assert_int_equal(system(cmd), 0);
}

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

/* Reap whatever died: our children, and orphans we are subreaper for. */
static void reap_any(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static pid_t token_agent_every(const char *lockdir, const char *log, const char *rescan_ms)
{
	char *argv[] = {"token-agent", "--consumer", consumer, "--lock-dir", (char *)lockdir, "--hold", "30",
			"--lease",     "400",        "--rescan", (char *)rescan_ms, NULL};
	return spawn(TOKEN_AGENT_PATH, argv, log, 1);
}

static pid_t token_agent(const char *lockdir, const char *log)
{
	return token_agent_every(lockdir, log, "100");
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
	case 2: /* fork it: the child is a holder of its own */
		if (!c->cont_at[i] && live_holders(c) < MAXH - 1) {
			kill(c->pid[i], SIGUSR1);
			c->forks++;
		}
		break;
	default: /* leave it alone */
		break;
	}
}

/* Wait up to 20 s for every holder left to start a turn after now; the
 * number that did not. */
static int wait_turns(const struct chaos *c)
{
	static struct wev evs[MAXEV];
	uint64_t settle = th_now_ns(), deadline = settle + 20000 * MS;
	for (;;) {
		int i, n = read_witness(c->witness, evs), lagging = 0;
		for (i = 0; i < MAXH; i++) {
			int k, got = 0;
			if (!c->pid[i])
				continue;
			for (k = 0; k < n && !got; k++)
				got = evs[k].what == 'S' && evs[k].pid == c->pid[i] && (uint64_t)evs[k].ns > settle;
			lagging += !got;
		}
		if (!lagging || th_now_ns() > deadline)
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
	agent = token_agent_every(lockdir, log, "3600000");
	for (i = 0; i < 500 && !file_has(log, "event=started"); i++)
		th_sleep_ms(10);
	if (!file_has(log, "hello=1"))
		fail_msg("token-agent has no hello probe here (root, perf uprobes): %s", log);
	th_sleep_ms(200); /* its first scan is over */
	h = holder(witness);
	for (i = 0; i < 1000 && last_event(witness, h, 0) != 'S'; i++)
		th_sleep_ms(10);
	assert_int_equal(last_event(witness, h, 0), 'S');
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
		cmocka_unit_test_teardown(rotation_with_real_holders, teardown),
		cmocka_unit_test_teardown(ready_event_wakes_the_arbiter, teardown),
		cmocka_unit_test_teardown(holder_lets_go_when_its_agent_died_in_a_write, teardown),
		cmocka_unit_test_teardown(zombie_holder_frees, teardown),
		cmocka_unit_test_teardown(late_holder_found_by_hello, teardown),
		cmocka_unit_test_teardown(random_schedules, teardown),
	};
	signal(SIGPIPE, SIG_IGN);
	snprintf(consumer, sizeof consumer, "tok%d", (int)getpid());
	/* Holders fork with their control thread running and start a new one
	 * in the child: ThreadSanitizer must be told to allow that. */
	{
		const char *o = getenv("TSAN_OPTIONS");
		char opts[512];
		snprintf(opts, sizeof opts, "%s%sdie_after_fork=0", o ? o : "", o && *o ? ":" : "");
		setenv("TSAN_OPTIONS", opts, 1);
	}
	return TH_RUN(tests);
}
