/* SPDX-License-Identifier: Apache-2.0 */
/* ProcessConfigs as the Kubernetes API server sends them
 * (server/kube/pconfig.c): the selector made kubectl -l's canonical
 * syntax, the payload from base64 or JSON, every spec field checked (one
 * that does not hold keeps the object, without a payload, saying why),
 * and an object that cannot be told refused. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/pconfig.h"
#include "kube/podmeta.h"
#include "th.h"

#define UID "0b6d7a2e-5c1f-4c1a-9f3e-2d7b8c9a1e4f"
#define META "\"metadata\":{\"name\":\"web-tuning\",\"namespace\":\"shop\",\"uid\":\"" UID "\",\"resourceVersion\":\"42\"," \
	     "\"generation\":3,\"creationTimestamp\":\"2026-12-07T03:47:57Z\"}"
#define OBJ(spec) "{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"procctl.io/v1alpha1\",\"kind\":\"ProcessConfig\"," META \
		  ",\"spec\":" spec "}}"
#define SPEC(rest) "{\"consumer\":\"tuner\",\"schemaVersion\":2,\"payload\":{\"data\":\"aGVsbG8=\"}" rest "}"

static struct pconfig pc;
static struct kube_event ev = {.obj = &pc};
static char err[512];

static int event(const char *line)
{
	err[0] = 0;
	return kube_event_parse(&pconfig_kind, line, strlen(line), &ev, err, sizeof err);
}

static void an_object(void **state)
{
	(void)state;
	assert_int_equal(event(OBJ(SPEC(",\"container\":\"app\",\"selector\":{\"matchLabels\":{\"tier\":\"web\","
					"\"app\":\"shop\"},\"matchExpressions\":[{\"key\":\"track\",\"operator\":\"NotIn\","
					"\"values\":[\"canary\",\"beta\"]},{\"key\":\"legacy\",\"operator\":\"DoesNotExist\"},"
					"{\"key\":\"zone\",\"operator\":\"Exists\"}]}"))),
			 0);
	assert_string_equal(pc.why, "");
	assert_string_equal(pc.uid, UID);
	assert_string_equal(pc.ns, "shop");
	assert_string_equal(pc.name, "web-tuning");
	assert_string_equal(pc.rv, "42");
	assert_string_equal(ev.rv, "42");
	assert_int_equal(pc.generation, 3);
	assert_int_equal(pc.created, 1796615277); /* date -d 2026-12-07T03:47:57Z +%s */
	assert_string_equal(pc.consumer, "tuner");
	assert_int_equal(pc.version, 2);
	assert_string_equal(pc.container, "app");
	/* canonical: sorted by key, values sorted */
	assert_string_equal(pc.labels, "app=shop,!legacy,tier=web,track notin (beta,canary),zone");
	assert_int_equal(pc.len, 5);
	assert_memory_equal(pc.payload, "hello", 5);
}

static void json_payload(void **state)
{
	(void)state;
	assert_int_equal(event(OBJ("{\"consumer\":\"tuner\",\"schemaVersion\":1,\"payload\":{\"json\":{\"rate\": 5, "
				   "\"names\": [\"a\", \"b\"], \"nested\": {\"x\": null}}}}")),
			 0);
	assert_string_equal(pc.why, "");
	assert_string_equal(pc.labels, ""); /* no selector: every pod of the namespace */
	assert_string_equal(pc.container, "");
	assert_int_equal(pc.len, strlen("{\"rate\":5,\"names\":[\"a\",\"b\"],\"nested\":{\"x\":null}}"));
	assert_memory_equal(pc.payload, "{\"rate\":5,\"names\":[\"a\",\"b\"],\"nested\":{\"x\":null}}", pc.len);
	assert_int_equal(event(OBJ("{\"consumer\":\"tuner\",\"schemaVersion\":1,\"payload\":{\"json\":\"on\"},\"selector\":{}}")),
			 0);
	assert_string_equal(pc.why, "");
	assert_memory_equal(pc.payload, "\"on\"", 4);
}

/* Each spec that does not hold: the object kept, no payload, why naming
 * the field. */
static void specs_refused(void **state)
{
	static const struct {
		const char *spec, *why;
	} cases[] = {
		{"{\"schemaVersion\":1,\"payload\":{\"data\":\"aA==\"}}", "spec.consumer"},
		{"{\"consumer\":\"Tuner\",\"schemaVersion\":1,\"payload\":{\"data\":\"aA==\"}}", "spec.consumer"},
		{"{\"consumer\":\"tu\\u0000ner\",\"schemaVersion\":1,\"payload\":{\"data\":\"aA==\"}}", "spec.consumer"},
		{"{\"consumer\":\"a-consumer-name-of-32-characters\",\"schemaVersion\":1,\"payload\":{\"data\":\"aA==\"}}",
		 "spec.consumer"},
		{"{\"consumer\":\"tuner\",\"schemaVersion\":0,\"payload\":{\"data\":\"aA==\"}}", "spec.schemaVersion"},
		{"{\"consumer\":\"tuner\",\"schemaVersion\":4294967296,\"payload\":{\"data\":\"aA==\"}}", "spec.schemaVersion"},
		{"{\"consumer\":\"tuner\",\"schemaVersion\":\"1\",\"payload\":{\"data\":\"aA==\"}}", "spec.schemaVersion"},
		{"{\"consumer\":\"tuner\",\"schemaVersion\":1}", "spec.payload: exactly one"},
		{"{\"consumer\":\"tuner\",\"schemaVersion\":1,\"payload\":{}}", "spec.payload: exactly one"},
		{"{\"consumer\":\"tuner\",\"schemaVersion\":1,\"payload\":{\"data\":\"aA==\",\"json\":1}}", "spec.payload: exactly one"},
		{"{\"consumer\":\"tuner\",\"schemaVersion\":1,\"payload\":{\"data\":\"a!==\"}}", "spec.payload.data: not base64"},
		{"{\"consumer\":\"tuner\",\"schemaVersion\":1,\"payload\":{\"data\":\"\"}}", "spec.payload: empty"},
		{"{\"consumer\":\"tuner\",\"schemaVersion\":1,\"payload\":{\"data\":7}}", "spec.payload.data: not a string"},
		{SPEC(",\"container\":\"App\""), "spec.container"},
		{SPEC(",\"selector\":[]"), "spec.selector: not a label selector"},
		{SPEC(",\"selector\":{\"matchLabels\":{\"a b\":\"x\"}}"), "spec.selector.matchLabels"},
		{SPEC(",\"selector\":{\"matchLabels\":{\"app\":\"x,y\"}}"), "spec.selector.matchLabels"},
		{SPEC(",\"selector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}"),
		 "spec.selector.matchExpressions[0].values: In and NotIn"},
		{SPEC(",\"selector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\",\"values\":[\"x\"]}]}"),
		 "spec.selector.matchExpressions[0].values: Exists"},
		{SPEC(",\"selector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}"),
		 "spec.selector.matchExpressions[0].operator"},
		{SPEC(",\"selector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[\"x)\"]}]}"),
		 "spec.selector.matchExpressions[0].values[0]"},
		{"7", "spec: missing"},
	};
	size_t i;
	char line[1024];
	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(line, sizeof line,
			 "{\"type\":\"MODIFIED\",\"object\":{\"apiVersion\":\"procctl.io/v1alpha1\",\"kind\":\"ProcessConfig\"," META
			 ",\"spec\":%s}}",
			 cases[i].spec);
		if (event(line) != 0 || strncmp(pc.why, cases[i].why, strlen(cases[i].why)) || pc.len) {
			fprintf(stderr, "case %zu: %s\n  why: %s\n  err: %s\n", i, cases[i].spec, pc.why, err);
			fail();
		}
		assert_string_equal(pc.uid, UID); /* the object is told: its status can say why */
	}
}

/* More than a selector may hold: refused as labelsel_check refuses it. */
static void selector_bounds(void **state)
{
	static char line[16384];
	size_t i, at;
	(void)state;
	at = (size_t)snprintf(line, sizeof line,
			      "{\"type\":\"ADDED\",\"object\":{" META ",\"spec\":{\"consumer\":\"tuner\",\"schemaVersion\":2,"
			      "\"payload\":{\"data\":\"aGVsbG8=\"},\"selector\":{\"matchLabels\":{");
	for (i = 0; i < 40; i++)
		at += (size_t)snprintf(line + at, sizeof line - at, "%s\"key-%02zu\":\"v\"", i ? "," : "", i);
	snprintf(line + at, sizeof line - at, "}}}}}");
	assert_int_equal(event(line), 0);
	assert_non_null(strstr(pc.why, "spec.selector:"));
	assert_int_equal(pc.len, 0);
}

static void payload_bounds(void **state)
{
	size_t n = PROCCTL_PAYLOAD_MAX + 3, b64 = (n + 2) / 3 * 4, i;
	const char *head = "{\"type\":\"ADDED\",\"object\":{" META ",\"spec\":{\"consumer\":\"c\",\"schemaVersion\":1,"
			   "\"payload\":{\"data\":\"";
	char *line = malloc(strlen(head) + b64 + 16);
	(void)state;
	assert_non_null(line);
	strcpy(line, head);
	for (i = 0; i < b64; i++)
		line[strlen(head) + i] = 'A';
	strcpy(line + strlen(head) + b64, "\"}}}}");
	err[0] = 0;
	assert_int_equal(kube_event_parse(&pconfig_kind, line, strlen(line), &ev, err, sizeof err), 0);
	assert_string_equal(pc.why, "spec.payload.data: over 1 MiB");
	/* exactly 1 MiB holds */
	b64 = (PROCCTL_PAYLOAD_MAX + 2) / 3 * 4;
	strcpy(line + strlen(head) + b64 - 4, "AA==\"}}}}");
	assert_int_equal(kube_event_parse(&pconfig_kind, line, strlen(line), &ev, err, sizeof err), 0);
	assert_string_equal(pc.why, "");
	assert_int_equal(pc.len, PROCCTL_PAYLOAD_MAX);
	assert_int_equal(pconfig_size(&pc), offsetof(struct pconfig, payload) + PROCCTL_PAYLOAD_MAX);
	free(line);
}

/* An object whose metadata is not one's is refused, its field named;
 * one whose UID can be told is forgotten by it. */
static void metadata_refused(void **state)
{
	static const struct {
		const char *meta, *why;
	} cases[] = {
		{"\"name\":\"a\",\"namespace\":\"shop\",\"resourceVersion\":\"1\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"",
		 "metadata.uid"},
		{"\"name\":\"a\",\"namespace\":\"Shop\",\"uid\":\"" UID "\",\"resourceVersion\":\"1\",\"creationTimestamp\":"
		 "\"2026-01-01T00:00:00Z\"",
		 "metadata.namespace"},
		{"\"name\":\"a\",\"namespace\":\"shop\",\"uid\":\"" UID "\",\"resourceVersion\":\"1\",\"creationTimestamp\":\"yesterday\"",
		 "metadata.creationTimestamp \"yesterday\""},
		{"\"name\":\"a\",\"namespace\":\"shop\",\"uid\":\"" UID "\",\"resourceVersion\":\"1\",\"creationTimestamp\":"
		 "\"2026-01-01T00:00:00Z\",\"generation\":-1",
		 "metadata.generation"},
	};
	char line[1024], uid[37];
	size_t i;
	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(line, sizeof line, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{%s},\"spec\":" SPEC("") "}}",
			 cases[i].meta);
		assert_int_equal(event(line), -EINVAL);
		if (strncmp(err, cases[i].why, strlen(cases[i].why))) {
			fprintf(stderr, "case %zu: err %s\n", i, err);
			fail();
		}
		assert_int_equal(pconfig_kind.forget(line, strlen(line), &pc), i == 0 ? -EINVAL : 0);
		memcpy(uid, pc.uid, sizeof uid);
		assert_string_equal(uid, i == 0 ? "" : UID);
	}
	/* an offset, and fractions of a second */
	snprintf(line, sizeof line, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"shop\","
				    "\"uid\":\"" UID "\",\"resourceVersion\":\"1\",\"creationTimestamp\":"
				    "\"2026-12-07T05:47:57.25+02:00\"},\"spec\":" SPEC("") "}}");
	assert_int_equal(event(line), 0);
	assert_int_equal(pc.created, 1796615277);
}

/* A list's page of them: the good, the refused and the bad counted. */
static struct pconfig *listed[4];
static size_t nlisted;

static void keep(void *arg, const void *obj)
{
	(void)arg;
	listed[nlisted++] = pconfig_dup(obj);
}

static void a_list(void **state)
{
	static struct pconfig scratch;
	struct kube_page pg;
	const char *page = "{\"kind\":\"ProcessConfigList\",\"apiVersion\":\"procctl.io/v1alpha1\",\"metadata\":{"
			   "\"resourceVersion\":\"99\"},\"items\":[{\"apiVersion\":\"procctl.io/v1alpha1\",\"kind\":"
			   "\"ProcessConfig\"," META ",\"spec\":" SPEC("") "},{\"metadata\":{\"name\":\"x\"}},{" META
			   ",\"spec\":{\"consumer\":\"c\"}}]}";
	size_t i;
	(void)state;
	assert_int_equal(kube_list_parse(&pconfig_kind, &scratch, page, strlen(page), 1 << 20, &pg, keep, NULL, err,
					 sizeof err),
			 0);
	assert_string_equal(pg.rv, "99");
	assert_int_equal(pg.items, 2);
	assert_int_equal(pg.rejected, 1);
	assert_int_equal(nlisted, 2);
	assert_string_equal(listed[0]->why, "");
	assert_int_equal(listed[0]->len, 5);
	assert_memory_equal(listed[0]->payload, "hello", 5);
	assert_string_equal(listed[1]->why, "spec.schemaVersion: not a whole number of 1 to 4294967295");
	assert_int_equal(listed[1]->len, 0);
	for (i = 0; i < nlisted; i++)
		free(listed[i]);
	/* a PodList is not one */
	assert_int_equal(kube_list_parse(&pconfig_kind, &scratch, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":"
								  "\"1\"},\"items\":[]}",
					 strlen("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[]}"),
					 1 << 20, &pg, keep, NULL, err, sizeof err),
			 -EINVAL);
}

/* A list's budget: a group's objects past group_max, and those past
 * cost_max in all, kept without their payload, saying why. */
static struct kube_budget budget;
static struct pconfig *budgeted[8];
static enum kube_verdict verdicts[8];
static size_t nbudgeted;

static void take(void *arg, const void *obj)
{
	(void)arg;
	verdicts[nbudgeted] = kube_budget_take(&budget, (void *)obj);
	budgeted[nbudgeted++] = pconfig_dup(obj);
}

#define ITEM(ns, name, uid, b64) "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"" ns "\",\"uid\":\"" uid "\"," \
				 "\"resourceVersion\":\"1\",\"creationTimestamp\":\"2026-12-07T03:47:57Z\"},\"spec\":" \
				 "{\"consumer\":\"c\",\"schemaVersion\":1,\"payload\":{\"data\":\"" b64 "\"}}}"

/* A list's budget: a group's objects past group_max, and those past
 * cost_max in all, slimmed (kept without their payload, saying why), up
 * to group_max of a group; the rest dropped. */
static void list_budget(void **state)
{
	static struct pconfig scratch;
	struct kube_page pg;
	const char *page = "{\"kind\":\"ProcessConfigList\",\"metadata\":{\"resourceVersion\":\"9\"},\"items\":["
		ITEM("a", "a1", "00000000-0000-4000-8000-000000000001", "AAAA") ","     /* 3 bytes */
		ITEM("a", "a2", "00000000-0000-4000-8000-000000000002", "AAAA") ","
		ITEM("a", "a3", "00000000-0000-4000-8000-000000000003", "AAAA") ","     /* a's third: past group_max */
		ITEM("a", "a4", "00000000-0000-4000-8000-000000000004", "AAAA") ","
		ITEM("a", "a5", "00000000-0000-4000-8000-000000000005", "AAAA") ","     /* group_max slimmed: dropped */
		ITEM("b", "b1", "00000000-0000-4000-8000-000000000006", "AAAAAAAA") "," /* 6: past cost_max (11) */
		ITEM("b", "b2", "00000000-0000-4000-8000-000000000007", "AAAA") "]}";
	static const enum kube_verdict want[] = {KUBE_KEEP, KUBE_KEEP, KUBE_SLIM, KUBE_SLIM, KUBE_DROP, KUBE_SLIM, KUBE_KEEP};
	size_t i;
	(void)state;
	budget = (struct kube_budget){.k = &pconfig_kind, .group_max = 2, .cost_max = 11, .group_key = "ns_max",
				      .cost_key = "bytes_max"};
	assert_int_equal(kube_list_parse(&pconfig_kind, &scratch, page, strlen(page), 1 << 20, &pg, take, NULL, err, sizeof err),
			 0);
	assert_int_equal(nbudgeted, 7);
	for (i = 0; i < nbudgeted; i++)
		assert_int_equal(verdicts[i], want[i]);
	assert_string_equal(budgeted[0]->why, "");
	assert_string_equal(budgeted[2]->why, "ns_max: 2 objects of its group (a) kept");
	assert_int_equal(budgeted[2]->len, 0);
	assert_string_equal(budgeted[5]->why, "bytes_max: 6 bytes kept, 6 more would pass 11");
	assert_string_equal(budgeted[6]->why, ""); /* 9 of 11 */
	assert_int_equal(budget.cost, 9);
	for (i = 0; i < nbudgeted; i++)
		free(budgeted[i]);
	kube_budget_reset(&budget);
	assert_int_equal(budget.cost, 0);
	kube_budget_free(&budget);
	/* a kind without groups: every object kept */
	budget = (struct kube_budget){.k = &podmeta_kind};
	assert_int_equal(kube_budget_take(&budget, &scratch), KUBE_KEEP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(an_object),	    cmocka_unit_test(json_payload), cmocka_unit_test(specs_refused),
		cmocka_unit_test(selector_bounds), cmocka_unit_test(payload_bounds), cmocka_unit_test(metadata_refused),
		cmocka_unit_test(a_list), cmocka_unit_test(list_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
