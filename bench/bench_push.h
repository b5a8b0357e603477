/* SPDX-License-Identifier: Apache-2.0 */
/* bench_push.h - the peer a user would build instead of procctl (the
 * admin-socket model of HAProxy, Envoy, .NET diagnostics): each process
 * runs a listener thread on a Unix stream socket; the agent writes a
 * config (a 4-byte length, then the bytes); the thread takes it (a copy
 * swapped in with one atomic store, for the main loop to load) and
 * answers one byte, its ack. The honest yardstick for a publish to ack:
 * the fewest hand-offs a push to a process and its answer need. */
#ifndef PROCCTL_BENCH_PUSH_H
#define PROCCTL_BENCH_PUSH_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct bench_push {
	pid_t pid; /* the peer process */
	int fd;    /* the agent's end */
};

/* All of n bytes: 0, or -1. */
static inline int bench_push_io(int fd, void *buf, size_t n, int out)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = out ? write(fd, (char *)buf + done, n - done) : read(fd, (char *)buf + done, n - done);
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

static char *bench_push_config; /* the peer's current config, for its main loop */

static inline void *bench_push_listen(void *arg)
{
	int fd = (int)(intptr_t)arg;
	for (;;) {
		uint32_t len;
		char *cfg, *old, ack = 1;
		if (bench_push_io(fd, &len, sizeof len, 0) < 0 || len > (1u << 20) || !(cfg = malloc(len + 1u)) ||
		    bench_push_io(fd, cfg, len, 0) < 0)
			_exit(0);
		cfg[len] = 0;
		old = __atomic_exchange_n(&bench_push_config, cfg, __ATOMIC_ACQ_REL);
		free(old); /* (a real peer defers this past its readers) */
		if (bench_push_io(fd, &ack, 1, 1) < 0)
			_exit(0);
	}
	return NULL;
}

/* Fork a peer (before the caller has threads): 0, or -1. Its main thread
 * sleeps, as a process blocked in its own work. */
static inline int bench_push_start(struct bench_push *p)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	if ((p->pid = fork()) == 0) {
		pthread_t t;
		close(sv[0]);
		if (pthread_create(&t, NULL, bench_push_listen, (void *)(intptr_t)sv[1]) != 0)
			_exit(1);
		for (;;)
			pause();
	}
	close(sv[1]);
	p->fd = sv[0];
	return p->pid < 0 ? -1 : 0;
}

/* Push len bytes of cfg to p and wait for its ack: 0, or -1. */
static inline int bench_push_publish(const struct bench_push *p, const void *cfg, uint32_t len)
{
	char buf[4 + 4096], ack;
	if (len > 4096)
		return -1;
	memcpy(buf, &len, 4);
	memcpy(buf + 4, cfg, len);
	return bench_push_io(p->fd, buf, 4 + len, 1) < 0 || bench_push_io(p->fd, &ack, 1, 0) < 0 ? -1 : 0;
}

#endif
