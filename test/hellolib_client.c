/* SPDX-License-Identifier: Apache-2.0 */
/* hellolib_client - a process whose procctl channel comes from a shared
 * library (hellolib.c): it loads the library with dlopen (so its mapping
 * appears after the program started), calls procctl_init through it and
 * waits to be killed; with DELAY_MS, procctl_init comes that long after the
 * library is loaded (a program that initializes late).
 * Usage: hellolib-client LIBRARY CONSUMER [DELAY_MS] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	void *lib;
	int (*start)(const char *);
	int err;
	long delay_ms = argc == 4 ? atol(argv[3]) : 0;
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: hellolib-client LIBRARY CONSUMER [DELAY_MS]\n");
		return 2;
	}
	if (!(lib = dlopen(argv[1], RTLD_NOW)) || !(*(void **)&start = dlsym(lib, "hellolib_start"))) {
		fprintf(stderr, "hellolib-client: %s\n", dlerror());
		return 1;
	}
	if (delay_ms > 0) {
		struct timespec ts = {delay_ms / 1000, delay_ms % 1000 * 1000000};
		while (nanosleep(&ts, &ts) < 0)
			;
	}
	if ((err = start(argv[2])) < 0) {
		fprintf(stderr, "hellolib-client: procctl_init: %d\n", err);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
