/* SPDX-License-Identifier: Apache-2.0 */
/* test_prom.c - the one writer of /metrics (server/sys/prom.c): its bytes,
 * label values and HELP text escaped as the text format requires (and
 * what a hostile name makes of them accepted by Debian's promtool), and
 * the mistakes it refuses: a family twice, a bad name or unit, a sample
 * with no family of its type. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sys/prom.h"
#include "th.h"

/* p's text, which must finish without a mistake. */
static char *finish(struct prom *p)
{
	char *text, why[160] = "";
	size_t len;
	int err = prom_finish(p, &text, &len, why, sizeof why);
	if (err)
		fail_msg("prom_finish: %d %s", err, why);
	assert_int_equal(strlen(text), len);
	return text;
}

static void bytes(void **state)
{
	static const double bounds[2] = {0.001, 0.25};
	const uint64_t counts[3] = {2, 0, 1};
	struct prom *p = prom_new();
	char *text;
	(void)state;
	assert_non_null(p);
	assert_int_equal(prom_family(p, &(const struct prom_family){"a_total", PROM_COUNTER, NULL, "As."}), 0);
	prom_int(p, PROM_NOLABELS, 7);
	assert_int_equal(prom_family(p, &(const struct prom_family){"b_seconds", PROM_GAUGE, "seconds", "Bs."}), 0);
	prom_real(p, PROM_LABELS({"kind", "gpu"}, {"id", "0"}), 1.5);
	prom_real(p, PROM_LABELS({"kind", "nan"}), NAN);
	prom_real(p, PROM_LABELS({"kind", "inf"}), -INFINITY);
	assert_int_equal(prom_family(p, &(const struct prom_family){"c_seconds", PROM_HISTOGRAM, "seconds", "Cs."}), 0);
	prom_histogram(p, PROM_NOLABELS, bounds, 2, counts, 0.5);
	prom_histogram(p, PROM_LABELS({"op", "x"}), bounds, 2, counts, 0.5);
	prom_one(p, &(const struct prom_family){"d", PROM_GAUGE, NULL, "Ds."}, 3);
	text = finish(p);
	assert_string_equal(text, "# HELP a_total As.\n# TYPE a_total counter\na_total 7\n"
				  "# HELP b_seconds Bs.\n# TYPE b_seconds gauge\n"
				  "b_seconds{kind=\"gpu\",id=\"0\"} 1.500000000\n"
				  "b_seconds{kind=\"nan\"} NaN\nb_seconds{kind=\"inf\"} -Inf\n"
				  "# HELP c_seconds Cs.\n# TYPE c_seconds histogram\n"
				  "c_seconds_bucket{le=\"0.001\"} 2\nc_seconds_bucket{le=\"0.25\"} 2\n"
				  "c_seconds_bucket{le=\"+Inf\"} 3\nc_seconds_sum 0.500000000\nc_seconds_count 3\n"
				  "c_seconds_bucket{op=\"x\",le=\"0.001\"} 2\nc_seconds_bucket{op=\"x\",le=\"0.25\"} 2\n"
				  "c_seconds_bucket{op=\"x\",le=\"+Inf\"} 3\nc_seconds_sum{op=\"x\"} 0.500000000\n"
				  "c_seconds_count{op=\"x\"} 3\n"
				  "# HELP d Ds.\n# TYPE d gauge\nd 3\n");
	free(text);
	assert_int_equal(prom_bucket(bounds, 2, 0.001), 0);
	assert_int_equal(prom_bucket(bounds, 2, 0.0011), 1);
	assert_int_equal(prom_bucket(bounds, 2, 9), 2);
}

/* What a hostile kind, pod or section name could put in a label value. */
static const char *const hostile[] = {
	"back\\slash",      "a\"quote",     "new\nline",      "\"} 1\nfake_total 9\n# x", "\\\\\"\n",
	"caf\xc3\xa9",      "bad\xff\xfe", "cut\xe2\x82",    "esc\x1b[2Jterm",           "",
	"surrogate\xed\xa0\x80", "over\xf4\x90\x80\x80", "long\xc0\xaf",
};

static void write_hostile(struct prom *p)
{
	size_t i;
	char id[8];
	prom_family(p, &(const struct prom_family){"h_total", PROM_COUNTER, NULL,
						  "Help with a \\ backslash,\na newline and \"quotes\"."});
	for (i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
		snprintf(id, sizeof id, "%zu", i);
		prom_int(p, PROM_LABELS({"id", id}, {"value", hostile[i]}), i);
	}
}

static void escaping(void **state)
{
	struct prom *p = prom_new();
	char *text;
	(void)state;
	assert_non_null(p);
	write_hostile(p);
	text = finish(p);
	assert_non_null(strstr(text, "# HELP h_total Help with a \\\\ backslash,\\na newline and \"quotes\".\n"));
	assert_non_null(strstr(text, "h_total{id=\"0\",value=\"back\\\\slash\"} 0\n"));
	assert_non_null(strstr(text, "h_total{id=\"1\",value=\"a\\\"quote\"} 1\n"));
	assert_non_null(strstr(text, "h_total{id=\"2\",value=\"new\\nline\"} 2\n"));
	assert_non_null(strstr(text, "h_total{id=\"3\",value=\"\\\"} 1\\nfake_total 9\\n# x\"} 3\n"));
	assert_non_null(strstr(text, "h_total{id=\"4\",value=\"\\\\\\\\\\\"\\n\"} 4\n"));
	assert_non_null(strstr(text, "h_total{id=\"5\",value=\"caf\xc3\xa9\"} 5\n"));
	assert_non_null(strstr(text, "h_total{id=\"6\",value=\"bad\xef\xbf\xbd\xef\xbf\xbd\"} 6\n"));
	assert_non_null(strstr(text, "h_total{id=\"7\",value=\"cut\xef\xbf\xbd\xef\xbf\xbd\"} 7\n"));
	assert_non_null(strstr(text, "h_total{id=\"9\",value=\"\"} 9\n"));
	assert_null(strstr(text, "\nfake_total"));
	assert_null(strchr(text, '\xff'));
	free(text);
}

/* promtool check metrics on text: its exit status, what it said in out. */
static int promtool(const char *text, char *out, size_t outlen)
{
	char in_path[] = "/tmp/procctl-prom-XXXXXX", cmd[256];
	int fd = mkstemp(in_path), st;
	FILE *f;
	size_t n;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", in_path);
	assert_non_null(f = popen(cmd, "r"));
	n = fread(out, 1, outlen - 1, f);
	out[n] = 0;
	st = pclose(f);
	unlink(in_path);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void promtool_accepts(void **state)
{
	struct prom *p = prom_new();
	char *text, out[4096];
	(void)state;
	if (system("command -v promtool >/dev/null 2>&1") != 0)
		TH_SKIP_OR_FAIL("promtool (Debian's prometheus)");
	assert_non_null(p);
	write_hostile(p);
	prom_family(p, &(const struct prom_family){"r_seconds", PROM_GAUGE, "seconds", "Reals."});
	prom_real(p, PROM_LABELS({"v", "nan"}), NAN);
	prom_real(p, PROM_LABELS({"v", "inf"}), INFINITY);
	text = finish(p);
	assert_int_equal(promtool(text, out, sizeof out), 0);
	assert_string_equal(out, "");
	/* and promtool is no pushover: the same values unescaped fail it */
	assert_true(promtool("# HELP x_total X.\n# TYPE x_total counter\nx_total{v=\"a\"b\"} 1\n", out, sizeof out) != 0);
	free(text);
}

/* p's first mistake, which must be err, said naming what. */
static void refused(struct prom *p, int err, const char *what)
{
	char *text = (char *)"x", why[160];
	size_t len = 1;
	assert_int_equal(prom_finish(p, &text, &len, why, sizeof why), err);
	assert_null(text);
	assert_int_equal(len, 0);
	if (!strstr(why, what))
		fail_msg("the mistake said \"%s\", not naming %s", why, what);
}

static void mistakes(void **state)
{
	const struct prom_family g = {"g", PROM_GAUGE, NULL, "G."};
	const uint64_t counts[1] = {0};
	struct prom *p;
	(void)state;

	assert_non_null(p = prom_new());
	prom_one(p, &g, 1);
	assert_int_equal(prom_family(p, &g), -EEXIST);
	prom_int(p, PROM_NOLABELS, 2); /* the refused family's: no sample of it */
	refused(p, -EEXIST, "family g written twice");

	{
		static const struct prom_family bad[] = {
			{"", PROM_GAUGE, NULL, "."},          {"9a", PROM_GAUGE, NULL, "."},
			{"a-b", PROM_GAUGE, NULL, "."},       {"a", PROM_COUNTER, NULL, "."},
			{"a_total", PROM_GAUGE, NULL, "."},   {"a_bytes", PROM_GAUGE, "seconds", "."},
			{"a_total", PROM_COUNTER, "seconds", "."}, {"a", PROM_GAUGE, NULL, NULL},
			{"a", (enum prom_type)7, NULL, "."},
		};
		size_t i;
		for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			assert_non_null(p = prom_new());
			assert_int_equal(prom_family(p, &bad[i]), -EINVAL);
			refused(p, -EINVAL, "is not right");
		}
	}
	assert_non_null(p = prom_new()); /* a unit it does end with */
	prom_one(p, &(const struct prom_family){"a_seconds_total", PROM_COUNTER, "seconds", "."}, 1);
	free(finish(p));

	assert_non_null(p = prom_new());
	prom_int(p, PROM_NOLABELS, 1);
	refused(p, -EINVAL, "no family");

	assert_non_null(p = prom_new());
	prom_family(p, &g);
	prom_histogram(p, PROM_NOLABELS, NULL, 0, counts, 0);
	refused(p, -EINVAL, "wrong type");

	assert_non_null(p = prom_new());
	prom_family(p, &(const struct prom_family){"h", PROM_HISTOGRAM, NULL, "."});
	prom_int(p, PROM_NOLABELS, 1);
	refused(p, -EINVAL, "wrong type");

	assert_non_null(p = prom_new());
	prom_family(p, &(const struct prom_family){"h", PROM_HISTOGRAM, NULL, "."});
	prom_histogram(p, PROM_LABELS({"le", "1"}), NULL, 0, counts, 0);
	refused(p, -EINVAL, "label");

	{
		static const struct prom_label bad[][2] = {
			{{"__name__", "x"}, {"b", "y"}}, {{"a", "x"}, {"a", "y"}}, {{"a-b", "x"}, {"b", "y"}},
			{{"a", NULL}, {"b", "y"}},       {{"", "x"}, {"b", "y"}},
		};
		size_t i;
		for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			assert_non_null(p = prom_new());
			prom_family(p, &g);
			prom_int(p, bad[i], 2, 1);
			refused(p, -EINVAL, "label");
		}
	}

	/* the first mistake is the one said */
	assert_non_null(p = prom_new());
	prom_one(p, &(const struct prom_family){"first", PROM_COUNTER, NULL, "."}, 1);
	prom_one(p, &g, 1);
	prom_one(p, &g, 1);
	refused(p, -EINVAL, "first");
	prom_free(NULL);
	prom_free(prom_new()); /* a writer given up unfinished */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bytes),
		cmocka_unit_test(escaping),
		cmocka_unit_test(promtool_accepts),
		cmocka_unit_test(mistakes),
	};
	return TH_RUN(tests);
}
