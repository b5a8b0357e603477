/* SPDX-License-Identifier: Apache-2.0 */
/* Pods as the Kubernetes API server sends them (server/kube/podmeta.c): a
 * watch's events (a pod added, a bookmark, a 410 Gone) and a list's
 * pages, each field
 * checked as Kubernetes validates it, the bounds on what one pod may hold,
 * and a hostile server's bytes refused with the field at fault, escaped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/podmeta.h"
#include "th.h"

#define UID "0b6d7a2e-5c1f-4c1a-9f3e-2d7b8c9a1e4f"
#define ID64 "5f0c9e2b7a1d4c3e8b6f0a9d2c4e7b1a3f5d8c0e2a4b6d8f0c1e3a5b7d9f1e2a"
#define META(fields) "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{" fields "}}}"
#define BASIC "\"name\":\"web-1\",\"namespace\":\"shop\",\"uid\":\"" UID "\",\"resourceVersion\":\"7\""

static struct podmeta pod;
static struct kube_event ev = {.obj = &pod};
static char err[512], big[65536];

static int event(const char *line)
{
	err[0] = 0;
	return kube_event_parse(&podmeta_kind, line, strlen(line), &ev, err, sizeof err);
}

/* The UID of a line event() refused, as the watch forgets its pod. */
static int event_uid(const char *line, size_t len, char *uid)
{
	static struct podmeta m;
	int r = podmeta_kind.forget(line, len, &m);
	memcpy(uid, m.uid, sizeof m.uid);
	return r;
}

static void a_pod(void **state)
{
	struct label ls[PODMETA_LABELS_MAX];
	size_t n;
	(void)state;
	assert_int_equal(event("{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
			       "\"name\":\"web-5d8f7c9b6-x2x4z\",\"namespace\":\"shop\",\"uid\":\"" UID "\","
			       "\"resourceVersion\":\"123456\",\"labels\":{\"app\":\"web\",\"pod-template-hash\":\"5d8f7c9b6\","
			       "\"app.kubernetes.io/part-of\":\"shop\"}},\"spec\":{\"nodeName\":\"node-a\",\"containers\":"
			       "[{\"name\":\"web\",\"image\":\"nginx\"},{\"name\":\"sidecar\"}],\"initContainers\":[{\"name\":"
			       "\"init\"}]},\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"web\","
			       "\"containerID\":\"containerd://" ID64 "\"},{\"name\":\"sidecar\"}],\"initContainerStatuses\":"
			       "[{\"name\":\"init\",\"containerID\":\"cri-o://0a1b\"},{\"name\":\"x\",\"containerID\":\"docker://XY\"}]}}}"),
			 0);
	assert_int_equal(ev.type, KUBE_ADDED);
	assert_string_equal(pod.uid, UID);
	assert_string_equal(pod.ns, "shop");
	assert_string_equal(pod.name, "web-5d8f7c9b6-x2x4z");
	assert_string_equal(ev.rv, "123456");
	assert_int_equal(pod.ncontainers, 3);
	assert_string_equal(pod.text + pod.containers[0], "web");
	assert_string_equal(pod.text + pod.containers[2], "init");
	/* the container by the ID its cgroup names: the runtime's scheme cut;
	 * one not started (no ID) or of an ID that is not hex is not known */
	assert_int_equal(pod.nstatuses, 2);
	assert_string_equal(podmeta_container(&pod, ID64), "web");
	assert_string_equal(podmeta_container(&pod, "0a1b"), "init");
	assert_null(podmeta_container(&pod, "XY"));
	assert_null(podmeta_container(&pod, ""));
	n = podmeta_labels(&pod, ls);
	assert_int_equal(n, 3);
	assert_int_equal(labelsel_match("app=web,app.kubernetes.io/part-of in (shop),!canary", ls, n), 1);
	assert_int_equal(labelsel_match("app=db", ls, n), 0);
	assert_int_equal(podmeta_match(&pod, "app=web,!canary"), 1);
	assert_int_equal(podmeta_match(&pod, "env!=prod"), 1);
	/* deleted: the same object; no labels at all is a pod too */
	assert_int_equal(event("{\"type\":\"DELETED\",\"object\":{\"metadata\":{" BASIC "}}}"), 0);
	assert_int_equal(ev.type, KUBE_DELETED);
	assert_int_equal(pod.nlabels, 0);
	assert_int_equal(pod.labels_over, 0);
	assert_int_equal(event("{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{" BASIC ",\"labels\":null}}}"), 0);
}

struct seen {
	size_t n;
	char uids[4][37];
};

static void seen_pod(void *arg, const void *obj)
{
	const struct podmeta *m = obj;
	struct seen *s = arg;
	struct podmeta *d = podmeta_dup(m);
	assert_non_null(d);
	assert_string_equal(d->name, m->name); /* the copy holds what its text needs */
	if (m->nlabels)
		assert_string_equal(d->text + d->labels[0].value, m->text + m->labels[0].value);
	if (s->n < 4)
		memcpy(s->uids[s->n], m->uid, 37);
	s->n++;
	free(d);
}

static int page(const char *body, struct kube_page *pg, struct seen *s)
{
	static struct podmeta item;
	memset(s, 0, sizeof *s);
	err[0] = 0;
	return kube_list_parse(&podmeta_kind, &item, body, strlen(body), 1u << 20, pg, seen_pod, s, err, sizeof err);
}

/* A page of a LIST: its pods, its version, the next page's token; a bad
 * item skipped and counted, not the page refused. */
static void lists(void **state)
{
	static struct kube_page pg;
	struct seen s;
	(void)state;
	assert_int_equal(page("{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"42\","
			      "\"continue\":\"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NDJ9\",\"remainingItemCount\":3},\"items\":["
			      "{\"metadata\":{" BASIC ",\"labels\":{\"app\":\"web\"}}},"
			      "{\"metadata\":{\"name\":\"x\",\"namespace\":\"shop\",\"uid\":\"../../etc\",\"resourceVersion\":\"8\"}},"
			      "{\"metadata\":{\"name\":\"db-0\",\"namespace\":\"shop\",\"uid\":\"1b6d7a2e-5c1f-4c1a-9f3e-2d7b8c9a1e4f\","
			      "\"resourceVersion\":\"9\"}}]}", &pg, &s),
			 0);
	assert_string_equal(pg.rv, "42");
	assert_string_equal(pg.cont, "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NDJ9");
	assert_int_equal(pg.items, 2);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.uids[0], UID);
	assert_string_equal(s.uids[1], "1b6d7a2e-5c1f-4c1a-9f3e-2d7b8c9a1e4f");
	assert_int_equal(pg.rejected, 1);
	assert_non_null(strstr(pg.rejected_why, "items[1]: metadata.uid \"../../etc\": not one"));
	/* the last page: no token; an empty node: no items (or null) */
	assert_int_equal(page("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"43\"},\"items\":[]}", &pg, &s), 0);
	assert_string_equal(pg.cont, "");
	assert_int_equal(s.n, 0);
	assert_int_equal(page("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"43\"},\"items\":null}", &pg, &s), 0);
	/* refused: what a page must be */
	assert_int_equal(page("{\"kind\":\"Status\",\"code\":410}", &pg, &s), -EINVAL);
	assert_string_equal(err, "a list whose kind is not PodList");
	assert_int_equal(page("{\"kind\":\"PodList\",\"metadata\":{},\"items\":[]}", &pg, &s), -EINVAL);
	assert_non_null(strstr(err, "a list's resourceVersion: missing"));
	assert_int_equal(page("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":{}}", &pg, &s), -EINVAL);
	assert_int_equal(page("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"1\",\"continue\":\"a b\"},\"items\":[]}",
			      &pg, &s),
			 -EINVAL);
	assert_non_null(strstr(err, "continue token \"a b\""));
	assert_int_equal(page("[1,", &pg, &s), -EINVAL);
	assert_non_null(strstr(err, "a list that is not JSON"));
	/* a token as long as a page may carry, and one byte more */
	memset(big, 0, sizeof big);
	snprintf(big, sizeof big, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"1\",\"continue\":\"%0*d\"},\"items\":[]}",
		 KUBE_CONTINUE_MAX, 7);
	assert_int_equal(page(big, &pg, &s), 0);
	assert_int_equal(strlen(pg.cont), KUBE_CONTINUE_MAX);
	snprintf(big, sizeof big, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"1\",\"continue\":\"%0*d\"},\"items\":[]}",
		 KUBE_CONTINUE_MAX + 1, 7);
	assert_int_equal(page(big, &pg, &s), -EINVAL);
}

/* A refused event's pod, when its UID can be told: what a list would
 * leave out, forgotten. */
static void refused_uid(void **state)
{
	static const char *const bad[] = {"{\"object\":{\"metadata\":{\"uid\":\"../../etc\"}}}", "not json",
					  "{\"object\":{\"metadata\":{\"uid\":7}}}", "{\"object\":[]}"};
	const char *bad_label = META(BASIC ",\"labels\":{\"-x\":\"y\"}");
	char uid[37];
	size_t i;
	(void)state;
	assert_int_equal(event(bad_label), -EINVAL);
	assert_int_equal(event_uid(bad_label, strlen(bad_label), uid), 0);
	assert_string_equal(uid, UID);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(event_uid(bad[i], strlen(bad[i]), uid), -EINVAL);
}

/* A static pod's mirror is known by its manifest's hash, as its cgroup
 * names it; a `kubectl debug` container by its ephemeral status. */
static void mirror_and_ephemeral(void **state)
{
	char uid[37];
	const char *line;
	(void)state;
	line = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{" BASIC ",\"annotations\":{\"kubernetes.io/config.mirror\":"
	       "\"6f1b0c8a9d2e4f7a8b3c5d6e7f809a1b\",\"kubernetes.io/config.source\":\"file\"}},\"spec\":{\"containers\":"
	       "[{\"name\":\"etcd\"}],\"ephemeralContainers\":[{\"name\":\"debugger\"}]},\"status\":{"
	       "\"ephemeralContainerStatuses\":[{\"name\":\"debugger\",\"containerID\":\"containerd://" ID64 "\"}]}}}";
	assert_int_equal(event(line), 0);
	assert_string_equal(pod.uid, "6f1b0c8a9d2e4f7a8b3c5d6e7f809a1b");
	assert_int_equal(pod.ncontainers, 2);
	assert_string_equal(podmeta_container(&pod, ID64), "debugger");
	assert_int_equal(event_uid(line, strlen(line), uid), 0);
	assert_string_equal(uid, "6f1b0c8a9d2e4f7a8b3c5d6e7f809a1b");
	/* a mirror annotation that is no UID: the pod is refused, not taken for another */
	line = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{" BASIC ",\"annotations\":{\"kubernetes.io/config.mirror\":"
	       "\"../../x\"}}}}";
	assert_int_equal(event(line), -EINVAL);
	assert_non_null(strstr(err, "kubernetes.io/config.mirror"));
	assert_int_equal(event_uid(line, strlen(line), uid), -EINVAL);
}

static void bookmarks_and_errors(void **state)
{
	(void)state;
	assert_int_equal(event("{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":"
			       "{\"resourceVersion\":\"12746\",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}"),
			 0);
	assert_int_equal(ev.type, KUBE_BOOKMARK);
	assert_string_equal(ev.rv, "12746");
	assert_int_equal(event("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
			       "\"status\":\"Failure\",\"message\":\"too old resource version: 1 (12746)\",\"reason\":"
			       "\"Expired\",\"code\":410}}"),
			 0);
	assert_int_equal(ev.type, KUBE_ERROR);
	assert_int_equal(ev.code, 410);
	assert_string_equal(ev.reason, "Expired");
	assert_int_equal(event("{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{}}}"), -EINVAL);
	assert_string_equal(err, "a bookmark's resourceVersion: missing, or not a string");
	assert_int_equal(event("{\"type\":\"ERROR\",\"object\":{\"code\":\"x\",\"reason\":\"\\u001b[2J\"}}"), 0);
	assert_int_equal(ev.code, 0);
	assert_string_equal(ev.reason, "\\x1b[2J"); /* printable */
}

static void refused(void **state)
{
	(void)state;
	assert_int_equal(event("{\"type\":\"ADDED\""), -EINVAL);
	assert_int_equal(strncmp(err, "a watch event that is not JSON: ", 32), 0);
	assert_int_equal(event("{\"type\":\"ADDED\",\"type\":\"DELETED\",\"object\":{}}"), -EINVAL); /* duplicate keys */
	assert_int_equal(event("{\"type\":\"RESIZED\",\"object\":{}}"), -EINVAL);
	assert_string_equal(err, "a watch event of type \"RESIZED\"");
	assert_int_equal(event("{\"type\":\"ADDED\",\"object\":[]}"), -EINVAL);
	assert_string_equal(err, "a ADDED event without an object");
	assert_int_equal(event("{\"type\":\"ADDED\",\"object\":{}}"), -EINVAL);
	assert_string_equal(err, "a Pod without metadata");
	assert_int_equal(event(META("\"name\":\"w\",\"namespace\":\"shop\",\"uid\":\"0B6D7A2E-5C1F-4C1A-9F3E-2D7B8C9A1E4F\","
				    "\"resourceVersion\":\"7\"")), -EINVAL);
	assert_string_equal(err, "metadata.uid \"0B6D7A2E-5C1F-4C1A-9F3E-2D7B8C9A1E4F\": not one");
	assert_int_equal(event(META("\"name\":\"w\",\"namespace\":\"\\u001b[2J\",\"uid\":\"" UID "\",\"resourceVersion\":\"7\"")),
			 -EINVAL);
	assert_string_equal(err, "metadata.namespace \"\\x1b[2J\": not one");
	assert_int_equal(event(META("\"name\":\"w\\u0000x\",\"namespace\":\"shop\",\"uid\":\"" UID "\",\"resourceVersion\":\"7\"")),
			 -EINVAL);
	assert_string_equal(err, "metadata.name: holds a NUL (\\u0000)");
	assert_int_equal(event(META("\"namespace\":\"shop\",\"uid\":\"" UID "\",\"resourceVersion\":\"7\"")), -EINVAL);
	assert_string_equal(err, "metadata.name: missing, or not a string");
	assert_int_equal(event(META(BASIC ",\"labels\":{\"a:b\":\"x\"}")), -EINVAL);
	assert_string_equal(err, "metadata.labels: \"a:b\": \"x\": not a label");
	assert_int_equal(event(META(BASIC ",\"labels\":{\"a\":7}")), -EINVAL);
	assert_string_equal(err, "metadata.labels: \"a\": \"(not a string)\": not a label");
	assert_int_equal(event(META(BASIC ",\"labels\":[]")), -EINVAL);
	assert_string_equal(err, "metadata.labels: not an object");
	assert_int_equal(event("{\"type\":\"ADDED\",\"object\":{\"metadata\":{" BASIC "},\"spec\":{\"containers\":{}}}}"),
			 -EINVAL);
	assert_string_equal(err, "spec.containers: not an array");
	assert_int_equal(event("{\"type\":\"ADDED\",\"object\":{\"metadata\":{" BASIC "},\"spec\":{\"containers\":"
			       "[{\"name\":\"Web\"}]}}}"),
			 -EINVAL);
	assert_string_equal(err, "spec.containers[0].name \"Web\": not a container name");
}

static void bounds(void **state)
{
	size_t i, o;
	(void)state;
	/* 65 labels: the pod is kept, without its labels (no selector matches it) */
	o = (size_t)snprintf(big, sizeof big, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{" BASIC ",\"labels\":{");
	for (i = 0; i <= PODMETA_LABELS_MAX; i++)
		o += (size_t)snprintf(big + o, sizeof big - o, "%s\"k%zu\":\"v\"", i ? "," : "", i);
	snprintf(big + o, sizeof big - o, "}}}}");
	assert_int_equal(event(big), 0);
	assert_int_equal(pod.labels_over, 1);
	assert_int_equal(pod.nlabels, 0);
	assert_int_equal(pod.used, 0); /* their bytes freed */
	assert_int_equal(podmeta_match(&pod, "k1=v"), 0);
	assert_int_equal(podmeta_match(&pod, "env!=prod"), 0); /* would hold for a pod without labels */
	assert_int_equal(podmeta_match(&pod, "!canary"), 0);
	assert_int_equal(podmeta_match(&pod, ""), 1);
	/* labels of 63-byte values past the text's bytes: the same */
	o = (size_t)snprintf(big, sizeof big, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{" BASIC ",\"labels\":{");
	for (i = 0; i < 60; i++)
		o += (size_t)snprintf(big + o, sizeof big - o, "%s\"example.com/key-%02zu-%s\":\"%s\"", i ? "," : "", i,
				      "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn",
				      "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv");
	snprintf(big + o, sizeof big - o, "}}}}");
	assert_int_equal(event(big), 0);
	assert_int_equal(pod.labels_over, 1);
	assert_int_equal(pod.nlabels, 0);
	/* 33 containers: the first 32 kept, and said */
	o = (size_t)snprintf(big, sizeof big, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{" BASIC "},\"spec\":{\"containers\":[");
	for (i = 0; i <= PODMETA_CONTAINERS_MAX; i++)
		o += (size_t)snprintf(big + o, sizeof big - o, "%s{\"name\":\"c%zu\"}", i ? "," : "", i);
	snprintf(big + o, sizeof big - o, "]}}}");
	assert_int_equal(event(big), 0);
	assert_int_equal(pod.containers_over, 1);
	assert_int_equal(pod.ncontainers, PODMETA_CONTAINERS_MAX);
	assert_string_equal(pod.text + pod.containers[31], "c31");
}

/* A NUL (\u0000) costs only its object, and only when the daemon reads
 * the string it is in: an annotation's or an argument's (the API server
 * keeps them) is no reason to refuse the pod; a label's is, the pod alone,
 * not the page. */
static void nuls(void **state)
{
	static struct kube_page pg;
	struct seen s;
	(void)state;
	assert_int_equal(page("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"42\"},\"items\":["
			      "{\"metadata\":{" BASIC ",\"annotations\":{\"note\":\"a\\u0000b\"}},"
			      "\"spec\":{\"containers\":[{\"name\":\"app\",\"args\":[\"\\u0000\"]}]}},"
			      "{\"metadata\":{\"name\":\"x\",\"namespace\":\"shop\",\"uid\":\"1b6d7a2e-5c1f-4c1a-9f3e-2d7b8c9a1e4f\","
			      "\"resourceVersion\":\"8\",\"labels\":{\"app\":\"we\\u0000b\"}}}]}",
			      &pg, &s),
			 0);
	assert_int_equal(pg.items, 1);
	assert_string_equal(s.uids[0], UID);
	assert_int_equal(pg.rejected, 1);
	assert_non_null(strstr(pg.rejected_why, "items[1]: metadata.labels: \"app\""));
	/* a watch event: its pod with a NUL in its name, refused; a type
	 * with one is none */
	assert_int_equal(event("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"we\\u0000b\",\"namespace\":\"shop\","
			       "\"uid\":\"" UID "\",\"resourceVersion\":\"8\"}}}"),
			 -EINVAL);
	assert_string_equal(err, "metadata.name: holds a NUL (\\u0000)");
	assert_int_equal(event("{\"type\":\"ADDED\\u0000x\",\"object\":{\"metadata\":{" BASIC "}}}"), -EINVAL);
	assert_non_null(strstr(err, "a watch event of type \"(none)\""));
	assert_int_equal(event("{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{" BASIC ",\"annotations\":{\"n\":\"\\u0000\"}}}}"),
			 0);
	assert_string_equal(pod.uid, UID);
}

/* A page's parts are parsed one at a time: padding of small values
 * around the items costs no tree (it took gigabytes as one); an item of
 * too many values or bytes is refused alone, unparsed; a key twice in an
 * item refuses that item, a part twice the page. */
static void page_bounds(void **state)
{
	static struct kube_page pg;
	enum { PAD = 300000 };
	size_t n = PAD * 2 + 4096, o = 0, i;
	char *big = malloc(n);
	struct seen s;
	(void)state;
	assert_non_null(big);
	o += (size_t)snprintf(big + o, n - o, "{\"pad\":[");
	for (i = 0; i < PAD; i++)
		big[o++] = '0', big[o++] = ',';
	o += (size_t)snprintf(big + o - 1, n - o, "],\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":["
				  "{\"metadata\":{" BASIC "}},{\"metadata\":{" BASIC ",\"x\":1,\"x\":2}}]}") - 1;
	assert_int_equal(page(big, &pg, &s), 0);
	assert_int_equal(pg.items, 1);
	assert_int_equal(pg.rejected, 1);
	assert_non_null(strstr(pg.rejected_why, "items[1]: not JSON: duplicate object key"));

	/* an item of KUBE_VALUES_MAX + 1 values, beside a good one */
	o = (size_t)snprintf(big, n, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[{\"metadata\":{" BASIC
				     "}},{\"metadata\":{" BASIC "},\"x\":[");
	for (i = 0; i < KUBE_VALUES_MAX - 6; i++) /* and the item, metadata, its 4 fields, x */
		big[o++] = '0', big[o++] = ',';
	snprintf(big + o - 1, n - o, "]}]}");
	assert_int_equal(page(big, &pg, &s), 0);
	assert_int_equal(pg.items, 1);
	assert_string_equal(pg.rejected_why, "items[1]: 100001 JSON values (more than 100000)");
	free(big);

	/* over the bound on an item's bytes (1 MiB here) */
	n = (1u << 20) + 4096;
	big = malloc(n);
	assert_non_null(big);
	o = (size_t)snprintf(big, n, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[{\"metadata\":{" BASIC
				     "},\"x\":\"");
	memset(big + o, 'a', 1u << 20);
	snprintf(big + o + (1u << 20), n - o - (1u << 20), "\"}]}");
	assert_int_equal(page(big, &pg, &s), 0);
	assert_int_equal(pg.items, 0);
	assert_non_null(strstr(pg.rejected_why, "items[0]: 1048"));
	assert_non_null(strstr(pg.rejected_why, "(an object of more than 1048576, kubernetes_event_bytes_max)"));
	free(big);

	assert_int_equal(page("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[],\"items\":[]}", &pg, &s),
			 -EINVAL);
	assert_string_equal(err, "a list with two \"items\"");
	assert_int_equal(page("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[]} x", &pg, &s), -EINVAL);
	assert_string_equal(err, "a list that is not JSON (at byte 65)");
	assert_int_equal(page("{\"kind\":\"PodList\",\"items\":[]}", &pg, &s), -EINVAL);
	assert_string_equal(err, "a PodList without metadata");
}

/* A watch event of too many values is refused unparsed, its UID too. */
static void event_bounds(void **state)
{
	size_t n = 2 * KUBE_VALUES_MAX + 4096, o, i;
	char *big = malloc(n), uid[37];
	(void)state;
	assert_non_null(big);
	o = (size_t)snprintf(big, n, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{" BASIC "},\"x\":[");
	for (i = 0; i < KUBE_VALUES_MAX; i++)
		big[o++] = '0', big[o++] = ',';
	o += (size_t)snprintf(big + o - 1, n - o, "]}}") - 1;
	assert_int_equal(event(big), -EINVAL);
	assert_string_equal(err, "a watch event of more than 100000 JSON values");
	assert_int_equal(event_uid(big, o, uid), -EINVAL);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_pod),
		cmocka_unit_test(mirror_and_ephemeral),
		cmocka_unit_test(bookmarks_and_errors),
		cmocka_unit_test(refused),
		cmocka_unit_test(bounds),
		cmocka_unit_test(lists),
		cmocka_unit_test(refused_uid),
		cmocka_unit_test(nuls),
		cmocka_unit_test(page_bounds),
		cmocka_unit_test(event_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
