/* SPDX-License-Identifier: Apache-2.0 */
/* token client - an exclusive-resource holder (SPEC.md section 9). A
 * control thread of its own runs the holder loop (holder.c), so the
 * resource goes back on time even when the application is idle:
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

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "holder.h"
#include "token_schema.h"

static procctl_t ctx;
static int fork_asked; /* set by the signal handler: an atomic */

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		__atomic_store_n(&fork_asked, 1, __ATOMIC_RELAXED);
	else
		holder_stop();
}

/* In the child of a fork: a region of its own, a control thread of its
 * own; it holds nothing (POSIX locks do not pass to a child either). */
static int become_child(pthread_t *t)
{
	int err = procctl_reinit(&ctx);
	if (err < 0)
		return err;
	holder_child();
	return -pthread_create(t, NULL, holder_control, NULL);
}

int main(int argc, char **argv)
{
	static char storage[PROCCTL_STATE_STORAGE(1, sizeof(struct token_status))];
	procctl_config_t cfg;
	procctl_resource_t key;
	long kind = 1;
	char *end = NULL;
	sigset_t mask, waitmask;
	pthread_t t;
	int i, err, id = 0, witness = -1;

	memset(&cfg, 0, sizeof cfg);
	memset(&key, 0, sizeof key);
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
	holder_init(&ctx, &key, witness, NULL);
	printf("event=started pid=%d\n", (int)getpid());
	fflush(stdout);
	if (pthread_create(&t, NULL, holder_control, NULL) != 0)
		return 1;
	while (!holder_stopping()) {
		sigsuspend(&waitmask);
		if (__atomic_exchange_n(&fork_asked, 0, __ATOMIC_RELAXED)) {
			pid_t pid;
			pid = fork();
			if (pid == 0 && (err = become_child(&t)) < 0) {
				char line[96];
				holder_say(2, line, snprintf(line, sizeof line, "token-client: forked child: %s\n", strerror(-err)));
				_exit(1);
			}
		}
	}
	pthread_join(t, NULL);
	procctl_close(&ctx);
	return 0;
}
