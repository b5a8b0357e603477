/* SPDX-License-Identifier: Apache-2.0 */
/* gpu-busy - a CUDA program with no procctl and no CUPTI in it: the busy
 * kernel of kernel.cu, launched and waited for again and again on each of
 * its GPUs in turn (once at least) until SIGTERM or SIGINT (or --seconds),
 * then their contexts released. For what attaches to programs it was not built with
 * (libprocctl-cupti, by CUDA_INJECTION64_PATH). Lines:
 *
 *   event=started pid=P device=NAME[,NAME...]
 *   event=done pid=P kernels=K   (on all its GPUs)
 *
 * Usage: gpu-busy [--device N]... [--seconds S]   (up to 8 devices, none:
 * device 0; S 0: until a signal) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"

#define DEVICES_MAX 8

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

/* Close g[0..n), each with its context current (its module and memory
 * are its context's). */
static void close_all(struct gpu *g, int n)
{
	while (n-- > 0) {
		gpu_current(&g[n]);
		gpu_close(&g[n]);
	}
}

int main(int argc, char **argv)
{
	static struct gpu g[DEVICES_MAX];
	long devices[DEVICES_MAX], seconds = 0;
	unsigned long long kernels = 0;
	char err[256];
	time_t until;
	int i, n = 0, k;
	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--device") && n < DEVICES_MAX && number(argv[i + 1], 1024, &devices[n]) == 0) {
			n++;
			continue;
		}
		if (!strcmp(argv[i], "--seconds") && number(argv[i + 1], 86400 * 365, &seconds) == 0)
			continue;
		break;
	}
	if (i != argc) {
		fprintf(stderr, "usage: %s [--device N]... [--seconds S]   (up to %d devices; none: 0)\n", argv[0],
			DEVICES_MAX);
		return 2;
	}
	if (!n)
		devices[n++] = 0;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (k = 0; k < n; k++) {
		if (gpu_open(&g[k], (int)devices[k], err, sizeof err) < 0) {
			fprintf(stderr, "gpu-busy: device %ld: %s\n", devices[k], err);
			close_all(g, k);
			return 1;
		}
	}
	printf("event=started pid=%d device=%s", (int)getpid(), g[0].name);
	for (k = 1; k < n; k++)
		printf(",%s", g[k].name);
	printf("\n");
	until = seconds ? time(NULL) + seconds : 0;
	do {
		for (k = 0; k < n; k++) {
			CUresult r = gpu_current(&g[k]);
			if (r == CUDA_SUCCESS)
				r = gpu_run(&g[k]);
			if (r != CUDA_SUCCESS) {
				const char *name = NULL;
				cuGetErrorName(r, &name);
				fprintf(stderr, "gpu-busy: kernel: %s\n", name ? name : "CUDA_ERROR_?");
				close_all(g, n);
				return 1;
			}
		}
	} while (!stop && (!until || time(NULL) < until));
	for (k = 0; k < n; k++)
		kernels += g[k].kernels;
	printf("event=done pid=%d kernels=%llu\n", (int)getpid(), kernels);
	close_all(g, n);
	return 0;
}
