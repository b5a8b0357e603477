/* SPDX-License-Identifier: Apache-2.0 */
/* token client - an exclusive-resource holder (SPEC.md section 9). A
 * control thread of its own runs the holder loop, so the resource goes back
 * on time even when the application is idle:
 *
 *   wait on the futex; read the grant; if it holds and the grant is no
 *   longer usable (revoked, lease expired): stop using it, report RELEASED;
 *   if it does not hold and the grant is usable: report ACQUIRING, start
 *   using it, report HOLDING; otherwise report what it is doing, with the
 *   grant it saw. Always with WANT.
 *
 * Its "resource" is a witness: an append-only file where it writes
 * "S <pid> <ns>" once it uses the resource and reported HOLDING, and
 * "E <pid> <ns>" before it stops using it (CLOCK_MONOTONIC), so a checker
 * can prove that no two holders ever overlapped. Using the resource also means
 * holding a POSIX write lock on the witness's first byte: the kernel
 * drops it only when the holder lets go or dies, and never lets two
 * processes hold it, so a holder that cannot take it at once writes
 * "X <pid> <ns>": an overlap the kernel saw, even across kills.
 *
 * Its config and status bytes are token_schema.h's structs: it applies
 * the agent's struct token_config (acks it; nacks -EINVAL a payload of
 * another size) and reports a struct token_status (turns, time held, the
 * last grant, the announced hold) after every change.
 *
 * SIGUSR1 forks it: the child takes a region of its own (procctl_reinit),
 * writes "F <pid> <ns>" and is a holder too. SIGTERM/SIGINT: release and
 * exit.
 *
 * Usage: token-client [--consumer NAME] [--kind N] [--id BYTE]
 *                     [--witness FILE] [--lease-max MS]
 * The resource is kind N (a number, default 1), id BYTE followed by 15
 * zero bytes (default 0: the all-zero id).
 */
#define PROCCTL_IMPLEMENTATION
#include "procctl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "token_schema.h"

static procctl_t ctx;
static procctl_resource_t key;
static struct token_status status; /* the control thread's */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A new config from the agent: applied and acked, or refused. */
static void take_config(void)
{
	unsigned char buf[64];
	uint64_t gen;
	int n = procctl_poll(&ctx, buf, sizeof buf, &gen);
	if (n == (int)sizeof(struct token_config)) {
		struct token_config tc;
		memcpy(&tc, buf, sizeof tc);
		if (tc.reserved) {
			procctl_nack(&ctx, gen, -EINVAL, 0);
			return;
		}
		status.hold_ns = tc.hold_ns;
		procctl_state_set(&ctx, &status, sizeof status, 0);
		procctl_ack(&ctx, gen, 0);
	} else if (n > 0) {
		procctl_nack(&ctx, gen, -EINVAL, 0); /* not this schema's config */
	} else if (n == -ENODATA) {
		status.hold_ns = 0;
		procctl_state_set(&ctx, &status, sizeof status, 0);
		procctl_ack(&ctx, gen, 0);
	}
}
static int witness = -1;
static int stop, fork_asked; /* set by signal handlers, read by both threads: atomics */

/* Lines go out with write(2), never stdio: a forked child must not find a
 * stream lock its parent's other thread held. */
static void say(int fd, const char *line, int n)
{
	if (fd >= 0 && write(fd, line, (size_t)n) != n)
		abort(); /* a witness that cannot write proves nothing */
}

static void note(char what)
{
	static const char *const names[] = {"acquired", "released", "overlap", "forked"};
	struct timespec ts;
	char line[80];
	int n;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = snprintf(line, sizeof line, "%c %d %lld\n", what, (int)getpid(),
		     (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec);
	say(witness, line, n);
	n = snprintf(line, sizeof line, "event=%s pid=%d\n", names[strchr("SEXF", what) - "SEXF"], (int)getpid());
	say(1, line, n);
}

/* The kernel's side of the witness: a write lock on byte 0. */
static int witness_lock(short type)
{
	struct flock fl;
	memset(&fl, 0, sizeof fl);
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_len = 1;
	return witness < 0 || fcntl(witness, F_SETLK, &fl) == 0;
}

/* The last report made (valid: one was): a wake that changed nothing (the
 * 100 ms bound, with no write since) reports nothing, since every report
 * rings the agent's doorbell. */
static struct {
	int valid;
	uint32_t state;
	uint64_t grant_id, seen_gen;
} last;

static void report(uint32_t state, const procctl_grant_t *g)
{
	uint64_t id = g ? g->grant_id : 0, seen = g ? g->seen_gen : 0;
	if (last.valid && last.state == state && last.grant_id == id && last.seen_gen == seen)
		return;
	/* Reports come from this thread only: wait for nothing. */
	if (procctl_resource_report(&ctx, key.kind, key.id, state, PROCCTL_RES_F_WANT, g, 0) == 0) {
		last.valid = 1;
		last.state = state;
		last.grant_id = id;
		last.seen_gen = seen;
	}
}

static void *control(void *arg)
{
	int holding = 0;
	uint64_t since = 0;
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		procctl_grant_t g;
		int r, usable;
		procctl_wait(&ctx, 100000000); /* writes wake it; 100 ms bounds a missed lease */
		take_config();
		r = procctl_grant_get(&ctx, key.kind, key.id, &g);
		if (r < 0)
			continue; /* busy or torn: the next write wakes us */
		usable = r == 1 && procctl_grant_usable(&ctx, &g, 0) && !procctl_lease_expired(&ctx, 0);
		if (holding && !usable) {
			witness_lock(F_UNLCK);
			note('E');
			holding = 0;
			status.held_ns += now_ns() - since;
			procctl_state_set(&ctx, &status, sizeof status, 0);
			report(PROCCTL_RES_RELEASED, &g);
		} else if (!holding && usable) {
			if (procctl_resource_report(&ctx, key.kind, key.id, PROCCTL_RES_ACQUIRING, PROCCTL_RES_F_WANT, &g, 0) ==
			    0) {
				if (!witness_lock(F_WRLCK))
					note('X');
				holding = 1;
				since = now_ns();
				status.turns++;
				status.last_grant_id = g.grant_id;
				procctl_state_set(&ctx, &status, sizeof status, 0);
				report(PROCCTL_RES_HOLDING, &g);
				note('S'); /* its time: when HOLDING was reported */
			}
		} else {
			report(holding ? PROCCTL_RES_HOLDING : r == 1 ? PROCCTL_RES_RELEASED : PROCCTL_RES_IDLE, &g);
		}
	}
	if (holding) {
		witness_lock(F_UNLCK);
		note('E');
	}
	return NULL;
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		__atomic_store_n(&fork_asked, 1, __ATOMIC_RELAXED);
	else
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
}

/* In the child of a fork: a region of its own, a control thread of its
 * own; it holds nothing (POSIX locks do not pass to a child either). */
static int become_child(pthread_t *t)
{
	int err = procctl_reinit(&ctx);
	if (err < 0)
		return err;
	note('F');
	memset(&status, 0, sizeof status); /* a new region: its own counts */
	last.valid = 0;                   /* and its own reports */
	report(PROCCTL_RES_IDLE, NULL);
	return -pthread_create(t, NULL, control, NULL);
}

int main(int argc, char **argv)
{
	static char storage[PROCCTL_STATE_STORAGE(1, sizeof(struct token_status))];
	procctl_config_t cfg;
	long kind = 1;
	char *end = NULL;
	sigset_t mask, waitmask;
	pthread_t t;
	int i, err, id = 0;

	memset(&cfg, 0, sizeof cfg);
	cfg.consumer = "token";
	cfg.schema_version = 1;
	cfg.payload_capacity = 64;
	cfg.state_capacity = sizeof(struct token_status);
	cfg.resource_capacity = 1;
	cfg.state_storage = storage;
	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--consumer"))
			cfg.consumer = argv[i + 1];
		else if (!strcmp(argv[i], "--kind"))
			kind = strtol(argv[i + 1], &end, 10);
		else if (!strcmp(argv[i], "--id"))
			id = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--witness"))
			witness = open(argv[i + 1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		else if (!strcmp(argv[i], "--lease-max"))
			cfg.lease_max_ns = strtoull(argv[i + 1], NULL, 10) * 1000000ull;
		else
			break;
	}
	if (i != argc || (end && *end) || kind < 1 || kind > UINT32_MAX) {
		fprintf(stderr, "usage: %s [--consumer NAME] [--kind N] [--id BYTE] [--witness FILE] [--lease-max MS]\n",
			argv[0]);
		return 2;
	}
	key.kind = (uint32_t)kind;
	key.id[0] = (uint8_t)id;
	err = procctl_init(&ctx, &cfg);
	if (err < 0) {
		fprintf(stderr, "token-client: procctl_init: %s\n", strerror(-err));
		return 1;
	}
	/* The signals reach the main thread only, inside sigsuspend: none is
	 * lost between the check and the wait. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &mask, &waitmask);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGUSR1, on_signal);
	procctl_state_set(&ctx, &status, sizeof status, 0);
	report(PROCCTL_RES_IDLE, NULL); /* asks for it at once */
	printf("event=started pid=%d\n", (int)getpid());
	fflush(stdout);
	if (pthread_create(&t, NULL, control, NULL) != 0)
		return 1;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		sigsuspend(&waitmask);
		if (__atomic_exchange_n(&fork_asked, 0, __ATOMIC_RELAXED)) {
			pid_t pid;
			pid = fork();
			if (pid == 0 && (err = become_child(&t)) < 0) {
				char line[96];
				say(2, line, snprintf(line, sizeof line, "token-client: forked child: %s\n", strerror(-err)));
				_exit(1);
			}
		}
	}
	pthread_join(t, NULL);
	procctl_close(&ctx);
	return 0;
}
