/* SPDX-License-Identifier: Apache-2.0 */
/* tokenworld.h - what the token tests (test_token.c: agents in this
 * process; test_token_agents.c: token-agent processes) share: real
 * token-client holders of this program's own consumer, tracked so a
 * failed test leaves none behind, and their witness log: "S pid ns" when
 * a holder starts using the resource, "E" when it stops, "X" when the
 * kernel's lock saw an overlap, "F" a forked child (a new holder). */
#ifndef PROCCTL_TOKENWORLD_H
#define PROCCTL_TOKENWORLD_H

#include <sys/types.h>

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

/* The witness at path, in time order: how many events (MAXEV at most). */
int read_witness(const char *path, struct wev *evs);
/* How many of the witness's events are what. */
int count_events(const char *witness, char what);
/* This test program's own consumer name, so holders and agents of other
 * runs on the node never meet ours. */
extern char consumer[16];
/* pid killed by teardown, even when the test fails. */
void track(pid_t pid);
/* cmocka teardown: every tracked process killed, every child reaped. */
int teardown(void **state);
/* path with argv, stdout to out (stderr too when both), tracked. */
pid_t spawn(const char *path, char *const argv[], const char *out, int both);
/* A token-client of consumer with witness. */
pid_t holder(const char *witness);
/* main's first call: the consumer's name, SIGPIPE ignored, TSan told that
 * holders start threads in forked children. */
void tokenworld_init(void);

#endif
