/* SPDX-License-Identifier: Apache-2.0 */
/* regworld.h - what the registry tests (test_registry*.c) share: a
 * registry whose events are counted in a struct evlog, pumps that dispatch
 * it, the children a test forks (killed by teardown even when the test
 * fails), echo clients logging to a file, and owners in processes of their
 * own (ownersim). The cmocka setup makes lockdir, a scratch lock directory;
 * teardown removes it. */
#ifndef PROCCTL_TEST_REGWORLD_H
#define PROCCTL_TEST_REGWORLD_H

#include <stdint.h>
#include <sys/types.h>

#include "client.h"
#include "flood.h"
#include "th.h"

#define MS 1000000ull

struct evlog {
	int attached, detached, ownership, lost, last_reason, held, doorbells, ready;
	int unsized; /* events whose sz is not this header's sizeof */
	pid_t last_pid;
	pid_t rang[8]; /* the first doorbells' pids */
};

extern char lockdir[64];

/* Registry options for consumer (NULL: every one) in lockdir, events into log. */
void opts(struct procctl_registry_opts *o, const char *consumer, const char *lockdir, uint64_t lease_ns,
	  uint64_t rescan_ns, struct evlog *log);
procctl_registry_t *registry(const char *consumer, const char *lockdir, uint64_t lease_ns, uint64_t rescan_ns,
			     struct evlog *log);
/* Dispatch until *counter >= want, for at most 10 s. */
void pump_until(procctl_registry_t *r, const int *counter, int want);
/* Times r's fd woke a poll in ms, each dispatched: an idle loop's none. */
int wakeups_in(procctl_registry_t *r, unsigned ms);
void pump_for(procctl_registry_t *r, unsigned ms);
/* A child the test forked (pid > 0), killed at teardown; pid. */
pid_t child(pid_t pid);
void reap(pid_t pid);
int setup(void **state);
int teardown(void **state);
/* An echo client writing its log to path; its pid. */
pid_t echo_client(const char *path);
int log_has(const char *path, const char *what);
/* Until what occurs n times in path (10 s). */
void wait_log(const char *path, const char *what, int n);
/* Until pid has created its region (10 s). */
void wait_region(pid_t pid);
/* An owner in its own process (ownersim) of consumer, lease_ms, mode. */
pid_t owner(const char *consumer, unsigned lease_ms, const char *mode);

#endif
