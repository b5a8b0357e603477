/* SPDX-License-Identifier: Apache-2.0 */
/* driver - runs a fuzz target without libFuzzer (gcc builds): each file
 * named on the command line, then N pseudo-random inputs from a fixed seed.
 * Usage: fuzz_x [-n N] [FILE...] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	static uint8_t buf[1 << 16];
	unsigned long n = 20000, i;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int a;

	for (a = 1; a < argc; a++) {
		FILE *f;
		size_t len;
		if (!strcmp(argv[a], "-n") && a + 1 < argc) {
			n = strtoul(argv[++a], NULL, 0);
			continue;
		}
		f = fopen(argv[a], "rb");
		if (!f) {
			perror(argv[a]);
			return 1;
		}
		len = fread(buf, 1, sizeof buf, f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, len);
	}
	for (i = 0; i < n; i++) {
		size_t len, k;
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		len = (size_t)(x % 12000u);
		for (k = 0; k < len; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			/* Mostly small numbers and zeros: closer to real fields. */
			buf[k] = (uint8_t)((x & 0x300) ? x & 0x3 : x >> 24);
		}
		LLVMFuzzerTestOneInput(buf, len);
	}
	printf("%lu inputs: 0 crashes\n", n);
	return 0;
}
