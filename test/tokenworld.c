/* SPDX-License-Identifier: Apache-2.0 */
/* tokenworld.c - what the token tests share (tokenworld.h). */
#include "tokenworld.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "th.h"

/* The witness, in time order. */
int read_witness(const char *path, struct wev *evs)
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

int count_events(const char *witness, char what)
{
	static struct wev evs[MAXEV];
	int n = read_witness(witness, evs), i, k = 0;
	for (i = 0; i < n; i++)
		k += evs[i].what == what;
	return k;
}

/* This test program's own consumer name, so holders and agents of other
 * runs on the node never meet ours. */
char consumer[16];

/* Every process a test started or learned of: killed by teardown, even
 * when the test fails. */
static pid_t tracked[512];
static int ntracked;

void track(pid_t pid)
{
	if (ntracked < 512)
		tracked[ntracked++] = pid;
}

int teardown(void **state)
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
pid_t spawn(const char *path, char *const argv[], const char *out, int both)
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

pid_t holder(const char *witness)
{
	char *argv[] = {"token-client", "--consumer", consumer, "--witness", (char *)witness, NULL};
	return spawn(TOKEN_CLIENT_PATH, argv, "/dev/null", 0);
}


void tokenworld_init(void)
{
	const char *o = getenv("TSAN_OPTIONS");
	char opts[512];
	signal(SIGPIPE, SIG_IGN);
	snprintf(consumer, sizeof consumer, "tok%d", (int)getpid());
	/* Holders fork with their control thread running and start a new one
	 * in the child: ThreadSanitizer must be told to allow that. */
	snprintf(opts, sizeof opts, "%s%sdie_after_fork=0", o ? o : "", o && *o ? ":" : "");
	setenv("TSAN_OPTIONS", opts, 1);
}
