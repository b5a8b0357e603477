/* SPDX-License-Identifier: Apache-2.0 */
/* Desired configs (server/desired/desired.c) against the real store in a scratch
 * directory: precedence, replacement, overlap refusal, selector and
 * payload checks, matching and limits. test_desired_files has the file:
 * persistence, corrupt and old files, a write that fails. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "desired_th.h"
#include "kube/podmeta.h"

static const struct podsel nopod; /* no namespace, no label selector */

/* ---- by the pod's namespace and labels ---- */

static struct podsel pods(const char *ns, const char *labels)
{
	struct podsel ps;
	char err[512] = "";
	if (podsel_from(&ps, ns, labels, err, sizeof err) < 0)
		fail_msg("%s", err);
	return ps;
}

/* A pod of namespace ns with the labels (a JSON object's members), as
 * the API server gives it. */
static const struct podmeta *pod(const char *ns, const char *labels)
{
	static struct podmeta m;
	struct kube_event ev = {.obj = &m};
	char line[600], err[512] = "";
	snprintf(line, sizeof line, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"%s\","
		 "\"uid\":\"" P2 "\",\"resourceVersion\":\"1\",\"labels\":{%s}}}}", ns, labels);
	if (kube_event_parse(&podmeta_kind, line, strlen(line), &ev, err, sizeof err) < 0)
		fail_msg("%s", err);
	return &m;
}

static const struct desired *set_pod(struct desired_store *s, struct selector sel, struct podsel ps, const char *payload)
{
	const struct desired *d = NULL, *other = NULL;
	const char *why = NULL;
	char err[512] = "";
	int rc = desired_set(s, &sel, &ps, payload, strlen(payload), NULL, &d, &other, &why, err, sizeof err);
	if (rc)
		fail_msg("desired_set %s: %d %s %s", payload, rc, why ? why : "", err);
	return d;
}

/* Precedence: pod over a label selector over a namespace over the
 * consumer; of label selectors, the one with a namespace, then more
 * requirements, then the older. Kept in the file, and read back. */
static void by_pod(void **state)
{
	struct desired_store s, t;
	struct selector k = key(0, C, 1, "", ""), pk = key(7, C, 1, P2, ""), ppk = key(0, C, 1, P1, ""),
			p2 = key(7, C, 1, P2, "");
	const struct desired *d = NULL, *other = NULL;
	const char *why = NULL;
	char dir[256], err[512] = "";
	(void)state;

	subdir(dir, sizeof dir, "bypod");
	assert_int_equal(desired_load(&s, dir, err, sizeof err), 0);
	set_pod(&s, k, pods("", ""), "consumer");
	set_pod(&s, k, pods("shop", ""), "ns");
	set_pod(&s, k, pods("", "app=web"), "web");
	set_pod(&s, k, pods("shop", "app=web"), "shop-web");
	set_pod(&s, k, pods("", "app=web,tier=a"), "web-a");
	set_pod(&s, k, pods("", "zone=x"), "zone");
	set_pod(&s, ppk, pods("", ""), "pod");
	assert_int_equal(s.v[1].level, DESIRED_NAMESPACE);
	assert_int_equal(s.v[2].level, DESIRED_LABELS);
	assert_int_equal(s.v[3].level, DESIRED_LABELS);

	payload_is(desired_match(&s, &pk, pod("shop", "\"app\":\"web\",\"tier\":\"a\"")), "shop-web"); /* ns first */
	payload_is(desired_match(&s, &pk, pod("other", "\"app\":\"web\",\"tier\":\"a\"")), "web-a"); /* more */
	payload_is(desired_match(&s, &pk, pod("other", "\"app\":\"web\",\"zone\":\"x\"")), "web");   /* older */
	set_pod(&s, k, pods("", "app=web"), "web2"); /* a new payload keeps its place */
	payload_is(desired_match(&s, &pk, pod("other", "\"app\":\"web\",\"zone\":\"x\"")), "web2");
	payload_is(desired_match(&s, &pk, pod("other", "\"app\":\"db\"")), "consumer");
	payload_is(desired_match(&s, &pk, pod("shop", "\"app\":\"db\"")), "ns");
	payload_is(desired_match(&s, &pk, NULL), "consumer"); /* a pod not known: only what names no pod's */
	pk = key(7, C, 1, P1, "");
	payload_is(desired_match(&s, &pk, pod("shop", "\"app\":\"web\"")), "pod");
	assert_int_equal(desired_effective(&s, desired_find(&s, &k, &(struct podsel){.ns = "shop"}), &p2,
					   pod("shop", "")),
			 1);

	/* the same selector replaces; a namespace's twin of one namespace
	 * conflicts, of another not; label selectors never */
	set_pod(&s, k, pods("shop", ""), "ns2");
	assert_int_equal(s.n, 7);
	assert_int_equal(desired_conflict(&k, &(struct podsel){.ns = "shop"}, &k, &(struct podsel){.ns = "shop"}), 1);
	assert_int_equal(desired_conflict(&k, &(struct podsel){.ns = "shop"}, &k, &(struct podsel){.ns = "prod"}), 0);
	assert_int_equal(desired_conflict(&k, &(struct podsel){.labels = "a=1"}, &k, &(struct podsel){.labels = "b=1"}), 0);
	assert_int_equal(desired_conflict(&ppk, &(struct podsel){.labels = "a=1"}, &ppk, &(struct podsel){.labels = "b=1"}), 1);
	assert_int_equal(desired_conflict(&ppk, &(struct podsel){.ns = "a"}, &ppk, &(struct podsel){.ns = "b"}), 0);
	assert_int_equal(desired_set(&s, &ppk, &(struct podsel){.labels = "a=1"}, "x", 1, NULL, &d, &other, &why, err,
				     sizeof err),
			 -EEXIST);
	payload_is(other, "pod");

	/* kept: a new store reads the same, namespaces and selectors with them */
	assert_int_equal(desired_load(&t, dir, err, sizeof err), 0);
	same_store(&s, &t);
	payload_is(desired_match(&t, &p2, pod("shop", "\"app\":\"web\"")), "shop-web");
	assert_int_equal(desired_delete(&t, &k, &(struct podsel){.ns = "shop", .labels = "app=web"}, err, sizeof err), 0);
	payload_is(desired_match(&t, &p2, pod("shop", "\"app\":\"web\"")), "web2");
	desired_free(&t);
	desired_free(&s);
}

/* ---- loading nothing ---- */

static void load_empty(void **state)
{
	struct desired_store s;
	struct stat st;
	char dir[256], file[300], err[512] = "";
	(void)state;

	subdir(dir, sizeof dir, "fresh");
	assert_false(exists(dir));
	assert_int_equal(desired_load(&s, dir, err, sizeof err), 0);
	assert_int_equal(stat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(s.n, 0);
	assert_int_equal(s.revision, 0);
	snprintf(file, sizeof file, "%s/desired.store", dir);
	assert_string_equal(s.path, file);
	assert_false(exists(file)); /* nothing written until a change */
	desired_free(&s);

	/* The directory there already, still no file. */
	assert_int_equal(desired_load(&s, dir, err, sizeof err), 0);
	assert_int_equal(s.n, 0);
	desired_free(&s);

	/* Nothing kept: changes live in memory only. */
	assert_int_equal(desired_load(&s, NULL, err, sizeof err), 0);
	assert_string_equal(s.path, "");
	assert_int_equal(s.n, 0);
	set_ok(&s, key(0, C, 1, "", ""), "in memory");
	assert_int_equal(s.n, 1);
	assert_int_equal(desired_delete(&s, &s.v[0].sel, &nopod, err, sizeof err), 0);
	assert_int_equal(s.n, 0);
	desired_free(&s);
	assert_int_equal(desired_load(&s, "", err, sizeof err), 0);
	assert_string_equal(s.path, "");
	desired_free(&s);

	/* A state_dir that cannot be made. */
	subdir(dir, sizeof dir, "no/such/parent");
	assert_int_equal(desired_load(&s, dir, err, sizeof err), -ENOENT);
	assert_non_null(strstr(err, dir));
	desired_free(&s);
}

/* ---- precedence ---- */

static void precedence(void **state)
{
	struct desired_store s;
	const struct desired *cons, *pod, *ctr, *ctr_any_pod, *pid, *pid_pod, *m;
	char err[512] = "";
	size_t i, j;
	(void)state;

	assert_int_equal(desired_load(&s, NULL, err, sizeof err), 0);
	set_ok(&s, key(0, C, 1, "", ""), "consumer");
	set_ok(&s, key(0, C, 1, P1, ""), "pod");
	set_ok(&s, key(0, C, 1, P1, C1), "container");
	set_ok(&s, key(0, C, 1, "", C3), "container, any pod");
	set_ok(&s, key(42, C, 1, "", ""), "pid");
	set_ok(&s, key(43, C, 1, P2, ""), "pid in a pod");
	assert_int_equal(s.n, 6);
	assert_int_equal(s.revision, 6);
	/* s.v does not move from here on (no more sets) */
	cons = desired_find(&s, &(struct selector){.consumer = C, .version = 1}, &nopod);
	pod = desired_find(&s, &(struct selector){.consumer = C, .version = 1, .pod_uid = P1}, &nopod);
	ctr = desired_find(&s, &(struct selector){.consumer = C, .version = 1, .pod_uid = P1, .container_id = C1}, &nopod);
	ctr_any_pod = desired_find(&s, &(struct selector){.consumer = C, .version = 1, .container_id = C3}, &nopod);
	pid = desired_find(&s, &(struct selector){.pid = 42, .pid_start = START(42), .consumer = C, .version = 1}, &nopod);
	pid_pod = desired_find(&s, &(struct selector){.pid = 43, .pid_start = START(43), .consumer = C, .version = 1, .pod_uid = P2}, &nopod);
	assert_non_null(cons);
	assert_non_null(pod);
	assert_non_null(ctr);
	assert_non_null(ctr_any_pod);
	assert_non_null(pid);
	assert_non_null(pid_pod);
	assert_int_equal(cons->level, DESIRED_CONSUMER);
	assert_int_equal(pod->level, DESIRED_POD);
	assert_int_equal(ctr->level, DESIRED_CONTAINER);
	assert_int_equal(ctr_any_pod->level, DESIRED_CONTAINER);
	assert_int_equal(pid->level, DESIRED_PID);
	assert_int_equal(pid_pod->level, DESIRED_PID); /* a pid is pid level whatever else it names */

	{
		const struct {
			struct selector k;
			const struct desired *want;
		} cases[] = {
			/* every level matches: the pid's wins */
			{key(42, C, 1, P1, C1), pid},
			{key(42, C, 1, "", ""), pid},
			/* another pid in the same container */
			{key(7, C, 1, P1, C1), ctr},
			/* another container of the pod, or the pod's own process */
			{key(7, C, 1, P1, C2), pod},
			{key(7, C, 1, P1, ""), pod},
			/* C1 in another pod: the container config names P1 */
			{key(7, C, 1, P2, C1), cons},
			/* a host process */
			{key(7, C, 1, "", ""), cons},
			/* C3 in any pod, or none */
			{key(8, C, 1, P1, C3), ctr_any_pod},
			{key(8, C, 1, P3, C3), ctr_any_pod},
			{key(8, C, 1, "", C3), ctr_any_pod},
			/* pid 43 gets its config only in pod P2 */
			{key(43, C, 1, P2, C2), pid_pod},
			{key(43, C, 1, P1, C1), ctr},
			{key(43, C, 1, "", ""), cons},
			/* another consumer, another schema version: none */
			{key(42, C, 2, P1, C1), NULL},
			{key(7, C, 2, "", ""), NULL},
			{key(42, "other", 1, P1, C1), NULL},
			{key(7, "other", 1, "", ""), NULL},
		};
		for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
			const struct selector *k = &cases[i].k;
			m = desired_match(&s, k, NULL);
			print_message("pid %d %s v%u pod '%s' ctr '%.8s' -> %.*s\n", k->pid, k->consumer, k->version,
				      k->pod_uid, k->container_id, m ? (int)m->len : 6,
				      m ? (const char *)m->payload : "(none)");
			assert_ptr_equal(m, cases[i].want);
			/* effective for exactly the one that matched */
			for (j = 0; j < s.n; j++)
				assert_int_equal(desired_effective(&s, &s.v[j], k, NULL), &s.v[j] == cases[i].want);
		}
	}
	desired_free(&s);
}


/* ---- replacement and overlap ---- */

static void replace_and_overlap(void **state)
{
	struct desired_store s;
	const struct desired *d, *other;
	uint64_t r1, rev;
	size_t n;
	char err[512] = "";
	(void)state;

	assert_int_equal(desired_load(&s, NULL, err, sizeof err), 0);

	/* the same selector again replaces */
	set_ok(&s, key(0, C, 1, P1, ""), "one");
	r1 = s.v[0].revision;
	set_ok(&s, key(0, C, 1, P1, ""), "second");
	assert_int_equal(s.n, 1);
	assert_true(s.v[0].revision > r1);
	payload_is(&s.v[0], "second");
	assert_int_equal(s.v[0].level, DESIRED_POD);

	/* more specific selectors of the same process are other levels */
	set_ok(&s, key(0, C, 1, P1, C1), "container"); /* a container: container level */
	set_ok(&s, key(0, C, 1, "", ""), "consumer");
	set_ok(&s, key(5, C, 1, P1, C1), "pid"); /* a pid: pid level */

	/* same level, one process could match both: refused, naming the other */
	n = s.n;
	rev = s.revision;
	other = NULL;
	assert_int_equal(set(&s, key(0, C, 1, "", C1), "x", &d, &other), -EEXIST);
	assert_ptr_equal(other, desired_find(&s, &(struct selector){.consumer = C, .version = 1, .pod_uid = P1, .container_id = C1}, &nopod));
	other = NULL;
	assert_int_equal(set(&s, key(5, C, 1, "", ""), "x", &d, &other), -EEXIST);
	assert_ptr_equal(other, desired_find(&s, &(struct selector){.pid = 5, .pid_start = START(5), .consumer = C, .version = 1, .pod_uid = P1,
							 .container_id = C1}, &nopod));
	other = NULL;
	assert_int_equal(set(&s, key(5, C, 1, P1, ""), "x", &d, &other), -EEXIST);
	assert_ptr_equal(other, desired_find(&s, &(struct selector){.pid = 5, .pid_start = START(5), .consumer = C, .version = 1, .pod_uid = P1,
							 .container_id = C1}, &nopod));
	assert_int_equal(s.n, n);
	assert_int_equal(s.revision, rev);
	payload_is(desired_match(&s, &(struct selector){.pid = 5, .pid_start = START(5), .consumer = C, .version = 1, .pod_uid = P1,
						       .container_id = C1}, NULL),
		   "pid");

	/* same level, no process could match both: accepted */
	set_ok(&s, key(0, C, 1, P2, ""), "pod 2");
	set_ok(&s, key(0, C, 1, P2, C1), "C1 in pod 2");
	set_ok(&s, key(0, C, 1, P1, C2), "C2 in pod 1");
	set_ok(&s, key(6, C, 1, "", ""), "pid 6");
	set_ok(&s, key(5, C, 1, P2, ""), "pid 5 in pod 2");
	set_ok(&s, key(0, C, 2, "", ""), "consumer v2");
	set_ok(&s, key(0, "other", 1, "", ""), "other consumer");
	set_ok(&s, key(5, "other", 1, P1, C1), "other consumer's pid 5");
	assert_int_equal(s.n, n + 8);
	assert_int_equal(s.revision, rev + 8);

	/* replacing keeps one entry and its place */
	d = desired_find(&s, &(struct selector){.consumer = C, .version = 1, .pod_uid = P2}, &nopod);
	set_ok(&s, key(0, C, 1, P2, ""), "pod 2 again");
	assert_int_equal(s.n, n + 8);
	assert_ptr_equal(desired_find(&s, &(struct selector){.consumer = C, .version = 1, .pod_uid = P2}, &nopod), d);
	payload_is(d, "pod 2 again");
	assert_int_equal(d->revision, rev + 9);
	payload_is(desired_match(&s, &(struct selector){.pid = 9, .pid_start = START(9), .consumer = C, .version = 1, .pod_uid = P2}, NULL),
		   "pod 2 again");
	payload_is(desired_match(&s, &(struct selector){.pid = 9, .pid_start = START(9), .consumer = C, .version = 1, .pod_uid = P2,
						       .container_id = C1}, NULL),
		   "C1 in pod 2");
	payload_is(desired_match(&s, &(struct selector){.pid = 5, .pid_start = START(5), .consumer = C, .version = 1, .pod_uid = P2,
						       .container_id = C1}, NULL),
		   "pid 5 in pod 2");
	desired_free(&s);
}

/* ---- refused selectors and payloads ---- */

static void refusals(void **state)
{
	static const struct {
		pid_t pid;
		const char *consumer;
		uint32_t version;
		const char *pod, *ctr;
	} bad[] = {
		{0, "", 1, "", ""},                          /* no consumer */
		{0, C, 0, "", ""},                           /* no schema version */
		{42, C, 0, P1, C1},                          /* no schema version, however specific */
		{0, "Billing", 1, "", ""},                   /* consumer name */
		{0, "bad name", 1, "", ""},
		{0, "bad/name", 1, "", ""},
		{-1, C, 1, "", ""},                          /* negative pid */
		{-42, C, 1, P1, C1},
		{0, C, 1, "0B6D7A2E-5C1F-4C1A-9F3E-2D7B8C9A1E4F", ""}, /* uppercase pod UID */
		{0, C, 1, "pod-one", ""},
		{0, C, 1, "", "xyz123"},                     /* container ID not hex */
		{0, C, 1, "", "3F4E5D6C"},                   /* nor uppercase */
		{0, C, 1, "", "abc-def"},                    /* nor dashes */
		{0, C, 1, P1, "g0"},
	};
	static const struct {
		pid_t pid;
		const char *consumer;
		uint32_t version;
		const char *pod, *ctr;
	} good[] = {
		{0, C, 1, "", ""},
		{0, "a.b_c-9", 4294967295u, "", ""},
		{42, C, 7, P1, C1},
		{0, C, 1, P3, ""},
		{0, C, 1, "", C3},
	};
	struct desired_store s;
	const struct desired *d = NULL, *other = NULL;
	const char *why;
	char err[512] = "";
	uint8_t *big;
	size_t i;
	(void)state;

	assert_int_equal(desired_load(&s, NULL, err, sizeof err), 0);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct selector k = key(bad[i].pid, bad[i].consumer, bad[i].version, bad[i].pod, bad[i].ctr);
		why = NULL;
		assert_int_equal(desired_check(&k, &why), -EINVAL);
		assert_non_null(why);
		assert_true(why[0]);
		print_message("refused %d '%s' v%u '%s' '%s': %s\n", k.pid, k.consumer, k.version, k.pod_uid,
			      k.container_id, why);
		why = NULL;
		assert_int_equal(desired_set(&s, &k, &nopod, "x", 1, NULL, &d, &other, &why, err, sizeof err), -EINVAL);
		assert_non_null(why);
		assert_int_equal(s.n, 0);
		assert_int_equal(s.revision, 0);
	}
	for (i = 0; i < sizeof good / sizeof good[0]; i++) {
		struct selector k = key(good[i].pid, good[i].consumer, good[i].version, good[i].pod, good[i].ctr);
		why = NULL;
		assert_int_equal(desired_check(&k, &why), 0);
	}

	/* payloads: 1 to PROCCTL_PAYLOAD_MAX bytes */
	big = calloc(1, (size_t)PROCCTL_PAYLOAD_MAX + 1);
	assert_non_null(big);
	why = NULL;
	assert_int_equal(desired_set(&s, &(struct selector){.consumer = C, .version = 1}, &nopod, "x", 0, NULL, &d, &other, &why, err,
				     sizeof err),
			 -EINVAL);
	assert_non_null(why);
	print_message("empty payload: %s\n", why);
	why = NULL;
	assert_int_equal(desired_set(&s, &(struct selector){.consumer = C, .version = 1}, &nopod, big,
				     (size_t)PROCCTL_PAYLOAD_MAX + 1, NULL, &d, &other, &why, err, sizeof err),
			 -EINVAL);
	assert_non_null(why);
	assert_int_equal(s.n, 0);
	assert_int_equal(s.revision, 0);
	big[PROCCTL_PAYLOAD_MAX - 1] = 0x5a;
	d = NULL;
	assert_int_equal(desired_set(&s, &(struct selector){.consumer = C, .version = 1}, &nopod, big, PROCCTL_PAYLOAD_MAX, NULL,
				     &d, &other, &why, err, sizeof err),
			 0);
	assert_non_null(d);
	assert_int_equal(d->len, PROCCTL_PAYLOAD_MAX);
	assert_int_equal(d->payload[PROCCTL_PAYLOAD_MAX - 1], 0x5a);
	free(big);
	desired_free(&s);
}


/* A process key is matched as a process: an event key's "always"
 * (match every filter) does not make it match configs of another consumer
 * or version. */
static void match_ignores_always(void **state)
{
	struct desired_store s;
	struct selector k = key(7, "other", 9, "", "");
	const struct desired *m;
	char err[512] = "";
	int rc;
	(void)state;

	assert_int_equal(desired_load(&s, NULL, err, sizeof err), 0);
	set_ok(&s, key(42, C, 1, "", ""), "billing's pid 42");
	assert_null(desired_match(&s, &k, NULL));
	k.always = 1;
	m = desired_match(&s, &k, NULL);
	rc = desired_effective(&s, &s.v[0], &k, NULL);
	desired_free(&s); /* before the asserts: nothing for ASan to report */
	assert_null(m);
	assert_int_equal(rc, 0);
	assert_int_equal(desired_effective(&s, NULL, &k, NULL), 0);
}

/* A state_dir too long for the file's path is refused, never truncated
 * into another file. */
static void long_state_dir_refused(void **state)
{
	struct desired_store s;
	char dir[400], err[512] = "";
	size_t n;
	(void)state;

	n = (size_t)snprintf(dir, sizeof dir, "%s/%0200d", desired_th_dir, 0);
	assert_int_equal(mkdir(dir, 0700), 0);
	memset(dir + n, 'b', 295 - n); /* dir is 295 bytes */
	dir[n] = '/';
	dir[295] = 0;
	assert_int_equal(desired_load(&s, dir, err, sizeof err), -ENAMETOOLONG);
	assert_non_null(strstr(err, "longer than"));
	desired_free(&s);
}


/* ---- limits ---- */

static void limits(void **state)
{
	struct desired_store s, t;
	const struct desired *d = NULL, *other = NULL;
	const char *why = NULL;
	char dir[256], file[300], first[DESIRED_PATH_MAX + 32], err[512] = "";
	static uint8_t big[700];
	(void)state;

	subdir(dir, sizeof dir, "limits");
	assert_int_equal(desired_load(&s, dir, err, sizeof err), 0);
	desired_limits(&s, 2, 1000);
	set_ok(&s, key(0, C, 1, "", ""), "one");
	set_ok(&s, key(0, C, 1, P1, ""), "two");
	/* a third config: refused by count, the store unchanged */
	assert_int_equal(desired_set(&s, &(struct selector){.consumer = C, .version = 1, .pod_uid = P2}, &nopod, "x", 1, NULL, &d,
				     &other, &why, err, sizeof err),
			 -ENOSPC);
	assert_non_null(strstr(err, "desired_max"));
	assert_int_equal(s.n, 2);
	/* replacing one is not a new one; bytes: 700 + 3 fit in 1000, 700 + 700 do not */
	assert_int_equal(desired_set(&s, &(struct selector){.consumer = C, .version = 1}, &nopod, big, sizeof big, NULL, &d, &other,
				     &why, err, sizeof err),
			 0);
	assert_int_equal(desired_bytes(&s), sizeof big + 3);
	assert_int_equal(desired_set(&s, &(struct selector){.consumer = C, .version = 1, .pod_uid = P1}, &nopod, big, sizeof big,
				     NULL, &d, &other, &why, err, sizeof err),
			 -ENOSPC);
	assert_non_null(strstr(err, "desired_bytes_max"));
	payload_is(desired_find(&s, &(struct selector){.consumer = C, .version = 1, .pod_uid = P1}, &nopod), "two");
	/* a delete makes room */
	assert_int_equal(desired_delete(&s, &(struct selector){.consumer = C, .version = 1}, &nopod, err, sizeof err), 0);
	assert_int_equal(desired_set(&s, &(struct selector){.consumer = C, .version = 1, .pod_uid = P1}, &nopod, big, sizeof big,
				     NULL, &d, &other, &why, err, sizeof err),
			 0);
	/* limits lowered under what is kept: it loads, only growth is refused */
	assert_int_equal(desired_load(&t, dir, err, sizeof err), 0);
	desired_limits(&t, 1, 10);
	assert_int_equal(t.n, 1);
	assert_int_equal(desired_set(&t, &(struct selector){.consumer = C, .version = 1, .pod_uid = P1}, &nopod, "small", 5, NULL,
				     &d, &other, &why, err, sizeof err),
			 0); /* smaller: fine */
	assert_int_equal(desired_set(&t, &(struct selector){.consumer = C, .version = 2}, &nopod, "x", 1, NULL, &d, &other, &why,
				     err, sizeof err),
			 -ENOSPC);
	desired_free(&t);
	desired_free(&s);

	/* two damaged files set aside in one second: neither overwrites the other */
	snprintf(file, sizeof file, "%s/desired.store", dir);
	write_file(file, "junk", 4);
	assert_int_equal(desired_load(&s, dir, err, sizeof err), 0);
	snprintf(first, sizeof first, "%s", s.set_aside);
	desired_free(&s);
	write_file(file, "junk", 4);
	assert_int_equal(desired_load(&s, dir, err, sizeof err), 0);
	assert_string_not_equal(s.set_aside, first);
	assert_true(exists(first));
	assert_true(exists(s.set_aside));
	desired_free(&s);
}

/* ---- ProcessConfigs' configs ---- */

/* A pod of namespace ns with the labels, running containers app (C1) and
 * side (C2). */
static const struct podmeta *pod_running(const char *ns, const char *labels)
{
	static struct podmeta m;
	struct kube_event ev = {.obj = &m};
	char line[900], err[512] = "";
	snprintf(line, sizeof line, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"%s\","
		 "\"uid\":\"" P2 "\",\"resourceVersion\":\"1\",\"labels\":{%s}},\"status\":{\"containerStatuses\":["
		 "{\"name\":\"app\",\"containerID\":\"containerd://" C1 "\"},{\"name\":\"side\",\"containerID\":"
		 "\"containerd://" C2 "\"}]}}}", ns, labels);
	if (kube_event_parse(&podmeta_kind, line, strlen(line), &ev, err, sizeof err) < 0)
		fail_msg("%s", err);
	return &m;
}

static const struct desired *kube_set(struct desired_store *s, const char *uid, const char *name, int64_t created,
				      const char *labels, const char *container, const char *payload)
{
	struct desired_kube k = {.created = created};
	struct selector sel = key(0, C, 1, "", "");
	struct podsel ps = pods("shop", labels);
	const struct desired *d = NULL;
	const char *why = "";
	snprintf(k.uid, sizeof k.uid, "%s", uid);
	snprintf(k.ns, sizeof k.ns, "shop");
	snprintf(k.name, sizeof k.name, "%s", name);
	snprintf(ps.container, sizeof ps.container, "%s", container);
	if (desired_kube_set(s, &k, &sel, &ps, payload, strlen(payload), &d, &why) < 0)
		fail_msg("desired_kube_set %s: %s", name, why);
	return d;
}

#define K1 "00000000-0000-4000-8000-000000000001"
#define K2 "00000000-0000-4000-8000-000000000002"
#define K3 "00000000-0000-4000-8000-000000000003"
#define K4 "00000000-0000-4000-8000-000000000004"

/* A ProcessConfig is a label selector's config in its namespace: with a
 * container first, then more requirements, then the node's own, then the
 * older object (creationTimestamp, then name). In memory only: the file
 * never has them, and the API's calls never find or replace them. */
static void processconfigs(void **state)
{
	struct desired_store s, t;
	struct selector k = key(0, C, 1, "", ""), app = key(7, C, 1, P2, C1), side = key(8, C, 1, P2, C2);
	const struct desired *d = NULL;
	struct podsel ps = pods("shop", "app=web");
	uint64_t rev, changes;
	char dir[256], err[512] = "";
	const char *why = "";
	(void)state;

	subdir(dir, sizeof dir, "processconfigs");
	assert_int_equal(desired_load(&s, dir, err, sizeof err), 0);
	set_pod(&s, k, pods("shop", "app=web"), "api-web");
	set_pod(&s, k, pods("shop", ""), "api-ns");
	kube_set(&s, K1, "b", 100, "app=web", "", "kube-b");
	kube_set(&s, K2, "a", 100, "app=web", "", "kube-a");
	kube_set(&s, K3, "all", 50, "", "", "kube-all");
	kube_set(&s, K4, "app", 200, "app=web", "app", "kube-app");
	assert_int_equal(s.n, 2);
	assert_int_equal(s.kn, 4);
	assert_int_equal(s.kv[2].level, DESIRED_LABELS); /* an empty selector too */

	payload_is(desired_match(&s, &app, pod_running("shop", "\"app\":\"web\"")), "kube-app"); /* its container */
	payload_is(desired_match(&s, &side, pod_running("shop", "\"app\":\"web\"")), "api-web"); /* the node's own */
	payload_is(desired_match(&s, &side, pod_running("shop", "\"app\":\"db\"")), "kube-all"); /* over a namespace's */
	assert_null(desired_match(&s, &side, pod_running("prod", "\"app\":\"web\""))); /* its namespace alone */
	assert_null(desired_match(&s, &side, NULL));
	assert_int_equal(desired_delete(&s, &k, &ps, err, sizeof err), 0);
	payload_is(desired_match(&s, &side, pod_running("shop", "\"app\":\"web\"")), "kube-a"); /* "a" before "b" */
	assert_null(desired_find(&s, &k, &ps)); /* the API's calls find none of them */

	/* the same spec again (a status written, a label changed): nothing changes */
	d = desired_kube_find(&s, K2);
	rev = d->revision;
	changes = s.changes;
	assert_ptr_equal(kube_set(&s, K2, "a", 100, "app=web", "", "kube-a"), d);
	assert_int_equal(d->revision, rev);
	assert_int_equal(s.changes, changes);
	assert_true(kube_set(&s, K2, "a", 100, "app=web", "", "kube-a2")->revision > rev);
	assert_int_equal(desired_kube_delete(&s, K2), 0);
	assert_int_equal(desired_kube_delete(&s, K2), -ENOENT);
	payload_is(desired_match(&s, &side, pod_running("shop", "\"app\":\"web\"")), "kube-b");
	assert_int_equal(desired_by_pod(&s), 1);

	/* never a pid's, a pod's or a container ID's; always a namespace's */
	{
		struct desired_kube kk = {.uid = K1, .ns = "shop", .name = "x"};
		struct podsel none = nopod;
		assert_int_equal(desired_kube_set(&s, &kk, &app, &ps, "x", 1, &d, &why), -EINVAL);
		assert_int_equal(desired_kube_set(&s, &kk, &k, &none, "x", 1, &d, &why), -EINVAL);
		assert_int_equal(desired_kube_set(&s, &kk, &k, &ps, "x", 0, &d, &why), -EINVAL);
	}

	/* the file has the API's alone */
	assert_int_equal(desired_load(&t, dir, err, sizeof err), 0);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.kn, 0);
	payload_is(&t.v[0], "api-ns");
	desired_free(&t);
	desired_free(&s);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(load_empty),
		cmocka_unit_test(precedence),
		cmocka_unit_test(replace_and_overlap),
		cmocka_unit_test(refusals),
		cmocka_unit_test(match_ignores_always),
		cmocka_unit_test(long_state_dir_refused),
		cmocka_unit_test(limits),
		cmocka_unit_test(by_pod),
		cmocka_unit_test(processconfigs),
	};
	return TH_RUN_WITH(tests, desired_th_setup, desired_th_teardown);
}
