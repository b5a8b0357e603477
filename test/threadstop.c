/* SPDX-License-Identifier: Apache-2.0 */
/* threadstop.c - threadstop PID NAME: stop the one thread of process PID
 * whose name (/proc/PID/task/TID/comm) is NAME, and only it (ptrace seizes
 * a single thread; SIGSTOP would stop them all), until stdin ends or a
 * line arrives. Prints "stopped TID" once it is stopped, "released" once
 * it runs again. A test holds one part of a daemon still this way (its
 * gRPC thread) while the rest goes on. Exit 0, or 1 with a message. */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

/* The thread of pid named name, or -1. */
static pid_t find(pid_t pid, const char *name)
{
	char path[320], comm[64];
	struct dirent *e;
	pid_t tid = -1;
	DIR *d;
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return -1;
	while (tid < 0 && (e = readdir(d))) {
		FILE *f;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%s/comm", (int)pid, e->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		if (fgets(comm, sizeof comm, f) && (comm[strcspn(comm, "\n")] = 0, !strcmp(comm, name)))
			tid = (pid_t)atoi(e->d_name);
		fclose(f);
	}
	closedir(d);
	return tid;
}

int main(int argc, char **argv)
{
	char line[64];
	pid_t tid;
	int st;
	if (argc != 3) {
		fprintf(stderr, "usage: threadstop PID NAME\n");
		return 1;
	}
	if ((tid = find((pid_t)atoi(argv[1]), argv[2])) < 0) {
		fprintf(stderr, "threadstop: no thread %s in %s\n", argv[2], argv[1]);
		return 1;
	}
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0 || ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0 ||
	    waitpid(tid, &st, __WALL) < 0) {
		fprintf(stderr, "threadstop: %d: %s\n", (int)tid, strerror(errno));
		return 1;
	}
	printf("stopped %d\n", (int)tid);
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin)) {
		/* stdin ended: release it all the same */
	}
	if (ptrace(PTRACE_DETACH, tid, NULL, NULL) < 0) {
		fprintf(stderr, "threadstop: detach %d: %s\n", (int)tid, strerror(errno));
		return 1;
	}
	printf("released\n");
	return 0;
}
