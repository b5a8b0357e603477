/* SPDX-License-Identifier: Apache-2.0 */
/* hellolib_client - a process whose procctl channel comes from a shared
 * library (hellolib.c): it loads the library with dlopen (so its mapping
 * appears after the program started), calls procctl_init through it and
 * waits to be killed. Usage: hellolib-client LIBRARY CONSUMER */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	void *lib;
	int (*start)(const char *);
	int err;
	if (argc != 3) {
		fprintf(stderr, "usage: hellolib-client LIBRARY CONSUMER\n");
		return 2;
	}
	if (!(lib = dlopen(argv[1], RTLD_NOW)) || !(*(void **)&start = dlsym(lib, "hellolib_start"))) {
		fprintf(stderr, "hellolib-client: %s\n", dlerror());
		return 1;
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
