/* SPDX-License-Identifier: Apache-2.0 */
/* Kubernetes label selectors (server/kube/labelsel.c) as kubectl -l takes
 * them: each form and its canonical text, kubectl's refusals with the
 * token or name at fault (escaped), the bounds, and matching, absent
 * keys included. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kube/labelsel.h"
#include "th.h"

static char canon[LABELSEL_MAX + 1], err[512];

static int check(const char *sel)
{
	canon[0] = err[0] = 0;
	return labelsel_check(sel, strlen(sel), canon, sizeof canon, err, sizeof err);
}

#define CANON(sel, want)                               \
	do {                                           \
		assert_int_equal(check(sel), 0);       \
		assert_string_equal(canon, want);      \
		assert_int_equal(check(want), 0);      \
		assert_string_equal(canon, want);      \
	} while (0)

#define REFUSED(sel, why)                              \
	do {                                           \
		assert_int_equal(check(sel), -EINVAL); \
		assert_string_equal(err, why);         \
	} while (0)

static void forms(void **state)
{
	(void)state;
	CANON("", "");
	CANON("  \t", "");
	CANON("app", "app");
	CANON("!canary", "!canary");
	CANON("app=web", "app=web");
	CANON("app==web", "app=web");
	CANON("app != web", "app!=web");
	CANON("x=", "x=");
	CANON("tier in (b, a ,a)", "tier in (a,b)");
	CANON("tier notin(b,a)", "tier notin (a,b)");
	CANON("x in ()", "x in ()");
	CANON("x in (a,)", "x in (,a)");
	CANON("n<12,n>007", "n>7,n<12"); /* by key, then >, <, in that order */
	CANON("  tier in (b,a), app==web,!canary", "app=web,!canary,tier in (a,b)");
	CANON("in in (in),notin=in", "in in (in),notin=in"); /* words where a key or value stands */
	CANON("example.com/team=a,k8s.io/x_y.z-1=V.1", "example.com/team=a,k8s.io/x_y.z-1=V.1");
	CANON("a=1,a=2", "a=1,a=2"); /* both must hold: nothing matches */
}

static void refusals(void **state)
{
	char big[LABELSEL_MAX + 2];
	char many[2048];
	size_t i, o;
	(void)state;
	REFUSED(",x", "found ',', expected: !, identifier, or 'end of string'");
	REFUSED("x,", "found '', expected: identifier after ','");
	REFUSED("x,,y", "found ',', expected: identifier after ','");
	REFUSED("x=a y=b", "found 'y', expected: ',' or 'end of string'");
	REFUSED("x==a==b", "found '==', expected: ',' or 'end of string'");
	REFUSED("!", "unable to parse requirement: found '', expected: identifier");
	REFUSED("!x=a", "found '=', expected: ',' or 'end of string'");
	REFUSED("x IN (a)", "unable to parse requirement: found 'IN', expected: in, notin, =, ==, !=, >, <");
	REFUSED("x in a", "found 'a', expected: '('");
	REFUSED("x in (a b)", "found 'b', expected: ',' or ')'");
	REFUSED("x in (a", "found '', expected: ',' or ')'");
	REFUSED("x in (=)", "found '=', expected: ',', ')' or identifier");
	REFUSED("x=(", "unable to parse requirement: found '(', expected: identifier");
	REFUSED("x>=1", "unable to parse requirement: found '=', expected: identifier");
	REFUSED("x<a", "for '>' and '<' the value must be a whole number, not \"a\"");
	REFUSED("x>", "for '>' and '<' the value must be a whole number, not \"\"");
	REFUSED("x>99999999999999999999", "for '>' and '<' the value must be a whole number, not \"99999999999999999999\" "
					  "(out of range)");
	REFUSED("x>-1", "invalid label value \"-1\" for key \"x\": at most 63 of [-A-Za-z0-9_.], alphanumeric at both "
			"ends, or empty");
	REFUSED("x=a;b", "invalid label value \"a;b\" for key \"x\": at most 63 of [-A-Za-z0-9_.], alphanumeric at both "
			 "ends, or empty");
	REFUSED("a:", "invalid label key \"a:\": its name must be 1 to 63 of [-A-Za-z0-9_.], alphanumeric at both ends");
	REFUSED("a/", "invalid label key \"a/\": its name must be 1 to 63 of [-A-Za-z0-9_.], alphanumeric at both ends");
	REFUSED("Ex.com/a", "invalid label key \"Ex.com/a\": its prefix must be a DNS subdomain (lowercase [a-z0-9.-], "
			    "alphanumeric at each end, at most 253)");
	REFUSED("a..b/c", "invalid label key \"a..b/c\": its prefix must be a DNS subdomain (lowercase [a-z0-9.-], "
			  "alphanumeric at each end, at most 253)");
	REFUSED("a/b/c", "invalid label key \"a/b/c\": a key has at most one '/' (PREFIX/NAME)");
	/* what a terminal would act on comes back escaped */
	REFUSED("x=\x1b[2J\"", "invalid label value \"\\x1b[2J\\\"\" for key \"x\": at most 63 of [-A-Za-z0-9_.], "
			       "alphanumeric at both ends, or empty");
	/* a name of 64 */
	REFUSED("abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl",
		"invalid label key \"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl\": its name must be 1 "
		"to 63 of [-A-Za-z0-9_.], alphanumeric at both ends");
	/* what is shown of a name is cut at 64 bytes */
	REFUSED("abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrst",
		"invalid label key \"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl...\": its name must "
		"be 1 to 63 of [-A-Za-z0-9_.], alphanumeric at both ends");
	/* bounds: bytes, a NUL, requirements, values */
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = 0;
	REFUSED(big, "longer than 1024 bytes");
	assert_int_equal(labelsel_check("a\0b", 3, canon, sizeof canon, err, sizeof err), -EINVAL);
	assert_string_equal(err, "a NUL byte");
	for (i = o = 0; i < LABELSEL_REQS_MAX + 1; i++)
		o += (size_t)snprintf(many + o, sizeof many - o, "%sk%zu", i ? "," : "", i);
	REFUSED(many, "more than 32 requirements");
	for (i = 0, o = (size_t)snprintf(many, sizeof many, "k in ("); i < LABELSEL_VALUES_MAX + 1; i++)
		o += (size_t)snprintf(many + o, sizeof many - o, "%sv%zu", i ? "," : "", i);
	snprintf(many + o, sizeof many - o, ")");
	REFUSED(many, "more than 64 values in all");
	/* within the bound as written, past it written out: "in(" gains a space */
	for (i = 0, o = 0; o + 75 <= LABELSEL_MAX; i++)
		o += (size_t)snprintf(many + o, sizeof many - o, "%sk%02zu in(%s)", i ? "," : "", i,
				      "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv");
	snprintf(many + o, sizeof many - o, ",z=%.*s", (int)(LABELSEL_MAX - 4 - o), "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv");
	assert_true(strlen(many) <= LABELSEL_MAX && strlen(many) + i > LABELSEL_MAX);
	REFUSED(many, "longer than 1024 bytes written out");
}

static void matching(void **state)
{
	const struct label pod[] = {{"app", "web"}, {"tier", "a"}, {"n", "5"}, {"s", "+7"}, {"example.com/team", "x"}};
	const size_t n = sizeof pod / sizeof pod[0];
	(void)state;
	assert_int_equal(labelsel_match("", pod, n), 1);
	assert_int_equal(labelsel_match("", NULL, 0), 1);
	assert_int_equal(labelsel_match("app", pod, n), 1);
	assert_int_equal(labelsel_match("!app", pod, n), 0);
	assert_int_equal(labelsel_match("!canary", pod, n), 1);
	assert_int_equal(labelsel_match("app=web", pod, n), 1);
	assert_int_equal(labelsel_match("app==web", pod, n), 1);
	assert_int_equal(labelsel_match("app=Web", pod, n), 0);
	assert_int_equal(labelsel_match("app!=web", pod, n), 0);
	assert_int_equal(labelsel_match("canary!=x", pod, n), 1); /* absent: != holds */
	assert_int_equal(labelsel_match("canary=", pod, n), 0);   /* absent is not empty */
	assert_int_equal(labelsel_match("tier in (a,b)", pod, n), 1);
	assert_int_equal(labelsel_match("tier notin (a)", pod, n), 0);
	assert_int_equal(labelsel_match("canary notin (a)", pod, n), 1);
	assert_int_equal(labelsel_match("canary in (a)", pod, n), 0);
	assert_int_equal(labelsel_match("n>4", pod, n), 1);
	assert_int_equal(labelsel_match("n<5", pod, n), 0);
	assert_int_equal(labelsel_match("s>6", pod, n), 1); /* a label's number may carry a sign */
	assert_int_equal(labelsel_match("app>1", pod, n), 0); /* not a number */
	assert_int_equal(labelsel_match("gone<9", pod, n), 0);
	assert_int_equal(labelsel_match("example.com/team=x", pod, n), 1);
	assert_int_equal(labelsel_match("app=web,tier in (a,b),!canary", pod, n), 1);
	assert_int_equal(labelsel_match("app=web,tier=b", pod, n), 0);
	assert_int_equal(labelsel_match("a=1,a=2", pod, n), 0);
	assert_int_equal(labelsel_match("x in (a", pod, n), 0); /* refused: nothing */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(forms),
		cmocka_unit_test(refusals),
		cmocka_unit_test(matching),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
