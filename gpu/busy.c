/* SPDX-License-Identifier: Apache-2.0 */
/* gpu-busy - a CUDA program with no procctl and no CUPTI in it: the busy
 * kernel of kernel.cu, launched and waited for again and again on one GPU
 * until SIGTERM or SIGINT (or --seconds), then its context released. For
 * what attaches to programs it was not built with (libprocctl-cupti, by
 * CUDA_INJECTION64_PATH). Lines:
 *
 *   event=started pid=P device=NAME
 *   event=done pid=P kernels=K
 *
 * Usage: gpu-busy [--device N] [--seconds S]   (S 0: until a signal) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int number(const char *s, long max, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || v < 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	struct gpu g;
	char err[256];
	long device = 0, seconds = 0;
	time_t until;
	int i;
	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--device") && number(argv[i + 1], 1024, &device) == 0)
			continue;
		if (!strcmp(argv[i], "--seconds") && number(argv[i + 1], 86400 * 365, &seconds) == 0)
			continue;
		break;
	}
	if (i != argc) {
		fprintf(stderr, "usage: %s [--device N] [--seconds S]\n", argv[0]);
		return 2;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (gpu_open(&g, (int)device, err, sizeof err) < 0) {
		fprintf(stderr, "gpu-busy: %s\n", err);
		return 1;
	}
	printf("event=started pid=%d device=%s\n", (int)getpid(), g.name);
	until = seconds ? time(NULL) + seconds : 0;
	while (!stop && (!until || time(NULL) < until)) {
		CUresult r = gpu_run(&g);
		if (r != CUDA_SUCCESS) {
			const char *name = NULL;
			cuGetErrorName(r, &name);
			fprintf(stderr, "gpu-busy: kernel: %s\n", name ? name : "CUDA_ERROR_?");
			gpu_close(&g);
			return 1;
		}
	}
	printf("event=done pid=%d kernels=%llu\n", (int)getpid(), (unsigned long long)g.kernels);
	gpu_close(&g);
	return 0;
}
