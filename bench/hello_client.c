/* SPDX-License-Identifier: Apache-2.0 */
/* hello_client - bench_hello's new process. With a consumer: procctl_init,
 * then the CLOCK_MONOTONIC times (ns) at which it was called and returned
 * on stdout. With --socket DIR (the peer a user would build instead): a
 * Unix socket bound to DIR/<pid>.sock and listening, then the times (ns)
 * before socket was called and after listen returned on stdout. Either
 * way it then waits to be killed.
 * Usage: hello_client CONSUMER | hello_client --socket DIR */
#define PROCCTL_IMPLEMENTATION
#include "procctl.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Listen on dir/<pid>.sock: 0, or -1. */
static int listen_in(const char *dir)
{
	struct sockaddr_un a;
	long long t0 = now_ns();
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	if (fd < 0 || snprintf(a.sun_path, sizeof a.sun_path, "%s/%d.sock", dir, (int)getpid()) >= (int)sizeof a.sun_path)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 16) < 0)
		return -1;
	printf("%lld %lld\n", t0, now_ns());
	return 0;
}

/* procctl_init for consumer: 0, or -1. */
static int init_for(const char *consumer)
{
	static unsigned char storage[PROCCTL_STATE_STORAGE(0, 16)];
	static procctl_t ctx;
	procctl_config_t cfg;
	long long t0, t1;
	memset(&cfg, 0, sizeof cfg);
	cfg.consumer = consumer;
	cfg.schema_version = 1;
	cfg.payload_capacity = 64;
	cfg.state_capacity = 16;
	cfg.state_storage = storage;
	t0 = now_ns();
	if (procctl_init(&ctx, &cfg) < 0)
		return -1;
	t1 = now_ns();
	printf("%lld %lld\n", t0, t1);
	return 0;
}

int main(int argc, char **argv)
{
	int r;
	if (argc == 3 && !strcmp(argv[1], "--socket"))
		r = listen_in(argv[2]);
	else if (argc == 2)
		r = init_for(argv[1]);
	else
		return 2;
	if (r < 0)
		return 1;
	fflush(stdout);
	for (;;)
		pause();
}
