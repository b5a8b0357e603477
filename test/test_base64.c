/* SPDX-License-Identifier: Apache-2.0 */
/* base64 (rpc/base64.h), the one encoder and decoder of procctl-node and
 * its clients: RFC 4648's vectors in both alphabets, padded or not; every
 * malformed spelling refused (mixed alphabets, padding in the middle, too
 * much or too little of it, a lone character, bits past the last byte);
 * the output bound kept; and every length round-tripped. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "th.h"

static ssize_t dec(const char *s, uint8_t *out, size_t cap)
{
	return base64_decode(s, strlen(s), out, cap);
}

static void rfc4648_vectors(void **state)
{
	static const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
	static const char *padded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	static const char *bare[] = {"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};
	char enc[16];
	uint8_t out[16];
	(void)state;
	for (size_t i = 0; i < 7; i++) {
		size_t n = strlen(plain[i]);
		assert_int_equal(base64_encode((const uint8_t *)plain[i], n, enc), strlen(padded[i]));
		assert_string_equal(enc, padded[i]);
		assert_int_equal(dec(padded[i], out, sizeof out), n);
		assert_memory_equal(out, plain[i], n);
		assert_int_equal(dec(bare[i], out, sizeof out), n);
		assert_memory_equal(out, plain[i], n);
	}
}

static void both_alphabets(void **state)
{
	static const uint8_t bytes[] = {0xfb, 0xff, 0xbf};
	uint8_t out[8];
	(void)state;
	assert_int_equal(dec("+/+/", out, sizeof out), 3);
	assert_memory_equal(out, bytes, 3);
	assert_int_equal(dec("-_-_", out, sizeof out), 3);
	assert_memory_equal(out, bytes, 3);
	/* One alphabet a string. */
	assert_int_equal(dec("+_-/", out, sizeof out), -EINVAL);
	assert_int_equal(dec("-/", out, sizeof out), -EINVAL);
}

static void malformed_refused(void **state)
{
	static const char *bad[] = {
		"====",      /* padding alone */
		"e===",      /* three of it */
		"eA=",       /* padded, but not to a multiple of four */
		"eA=A",      /* padding inside */
		"Zm9v=",     /* padding where none is due */
		"Zm8==",     /* more than is due */
		"e",         /* a lone character: not even a byte */
		"Zm9vY",     /* ... after whole groups */
		"eB==",      /* bits past the last byte */
		"Zm9=",      /* ... of two bytes */
		"Zm 9v",     /* a space */
		"Zm9v\n",    /* a newline */
		"Zm.v",      /* no base64 character */
	};
	uint8_t out[16];
	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		if (dec(bad[i], out, sizeof out) != -EINVAL)
			fail_msg("'%s' was taken", bad[i]);
	}
	/* A NUL inside is a character like any other: refused. */
	assert_int_equal(base64_decode("Zm\0v", 4, out, sizeof out), -EINVAL);
}

static void bounded_by_cap(void **state)
{
	uint8_t out[8] = {0};
	(void)state;
	assert_int_equal(dec("Zm9vYmFy", out, 6), 6);
	memset(out, 0, sizeof out);
	assert_int_equal(dec("Zm9vYmFy", out, 5), -EMSGSIZE);
	assert_int_equal(out[5], 0); /* nothing written past the bound */
	assert_int_equal(dec("", out, 0), 0);
}

static void every_length_round_trips(void **state)
{
	uint8_t in[300], out[300];
	char enc[BASE64_LEN(300) + 1];
	(void)state;
	srand(1);
	for (size_t n = 0; n <= sizeof in; n++) {
		for (size_t i = 0; i < n; i++)
			in[i] = (uint8_t)rand();
		size_t e = base64_encode(in, n, enc);
		assert_int_equal(e, BASE64_LEN(n));
		assert_int_equal(strlen(enc), e);
		assert_int_equal(base64_decode(enc, e, out, n), n);
		assert_memory_equal(in, out, n);
		while (e && enc[e - 1] == '=')
			e--;
		assert_int_equal(base64_decode(enc, e, out, n), n);
		assert_memory_equal(in, out, n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rfc4648_vectors),
		cmocka_unit_test(both_alphabets),
		cmocka_unit_test(malformed_refused),
		cmocka_unit_test(bounded_by_cap),
		cmocka_unit_test(every_length_round_trips),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
