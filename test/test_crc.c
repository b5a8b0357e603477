/* SPDX-License-Identifier: Apache-2.0 */
/* CRC32C: known vectors, and the SSE4.2 path against the portable one on
 * every length and alignment, plain and shared (copying) variants. */
#define PROCCTL_STATIC
#define PROCCTL_IMPLEMENTATION
#include "procctl.h"

#include <stdlib.h>

#include "th.h"

static void vectors(void **state)
{
	unsigned char buf[32];
	int i;
	(void)state;
	/* RFC 3720 B.4 and the CRC catalogue check value. */
	assert_int_equal(procctl_crc32c(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(procctl_crc32c(0, "", 0), 0);
	memset(buf, 0, sizeof buf);
	assert_int_equal(procctl_crc32c(0, buf, 32), 0x8a9136aau);
	memset(buf, 0xff, sizeof buf);
	assert_int_equal(procctl_crc32c(0, buf, 32), 0x62a8ab43u);
	for (i = 0; i < 32; i++)
		buf[i] = (unsigned char)i;
	assert_int_equal(procctl_crc32c(0, buf, 32), 0x46dd794eu);
	for (i = 0; i < 32; i++)
		buf[i] = (unsigned char)(31 - i);
	assert_int_equal(procctl_crc32c(0, buf, 32), 0x113fdb5cu);
	/* Chaining equals one pass. */
	assert_int_equal(procctl_crc32c(procctl_crc32c(0, "12345", 5), "6789", 4), 0xe3069283u);
}

static uint32_t sw(const unsigned char *p, size_t n)
{
	return ~procctl__crc_sw(~0u, NULL, p, n, 0);
}

static void hw_matches_sw(void **state)
{
	static uint64_t src64[(8192 + 64) / 8], dst64[(8192 + 64) / 8];
	unsigned char *src = (unsigned char *)src64, *dst = (unsigned char *)dst64;
	size_t n, off;
	(void)state;
#ifndef PROCCTL__HW_CRC
	TH_SKIP_OR_FAIL("no SSE4.2 CRC32C path on this architecture");
#else
	if (!procctl__have_hw_crc())
		TH_SKIP_OR_FAIL("CPU without SSE4.2 and PCLMULQDQ");
#endif
	srand(7);
	for (n = 0; n < 8192 + 64; n++)
		src[n] = (unsigned char)rand();
	/* Every length up to 3 KiB covers all block sizes and tails; then
	 * larger strides. Every unaligned start for the plain variant. */
	for (n = 0; n <= 8192; n += n < 3100 ? 1 : 61) {
		for (off = 0; off < (n < 600 ? 8u : 1u); off++) {
			uint32_t want = sw(src + off, n);
			assert_int_equal(procctl_crc32c(0, src + off, n), want);
		}
		/* The shared variant reads 8-byte aligned memory and copies. */
		memset(dst, 0, n);
		assert_int_equal(~procctl__crc_shared(~0u, dst, src, n), sw(src, n));
		assert_memory_equal(dst, src, n);
		assert_int_equal(~procctl__crc_shared(~0u, NULL, src, n), sw(src, n));
		/* And the portable copying path. */
		memset(dst, 0, n);
		assert_int_equal(~procctl__crc_sw(~0u, dst, src, n, 1), sw(src, n));
		assert_memory_equal(dst, src, n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(vectors),
		cmocka_unit_test(hw_matches_sw),
	};
	return TH_RUN(tests);
}
