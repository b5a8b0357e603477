/* SPDX-License-Identifier: Apache-2.0 */
/* procctl-node's configuration, key by key: every key of the product's own
 * tables (the global part's, as node_cfg_key lists them; the [arbiter]
 * and [desired] sections', as --help lists them) set to a value not its
 * default and read back from where it lands. A key added without a row
 * here fails. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "th.h"

#define MS 1000000ull

static char err[512];

static int parse(struct node_cfg *c, const char *text)
{
	node_cfg_defaults(c);
	err[0] = 0;
	return node_cfg_parse(c, text, strlen(text), "t.conf", err, sizeof err);
}

/* Where a key's value lands, and what it must be: a number of its width,
 * a string, or a list's count (with its first item, a string). REFUSED:
 * a removed key, refused with its reason. ONLY: a key with one value
 * (its default), taken, and any other refused. */
enum land { U32, U64, INT, STR, LIST, REFUSED, ONLY };

struct row {
	const char *key, *value;
	enum land land;
	size_t off;      /* of the value (LIST: of the count) in its section's struct */
	uint64_t want;   /* U32, U64, INT; LIST: the count */
	size_t off_item; /* LIST: of the first item */
	const char *item; /* STR: the string; LIST: the first item */
};

#define CFG(f) offsetof(struct node_cfg, f)
#define ARB(f) offsetof(struct node_arbiter_cfg, f)
#define DES(f) offsetof(struct node_desired_cfg, f)
#define NUM_(k, v, land, off, want) {k, v, land, off, want, 0, NULL}
#define STR_(k, v, off) {k, v, STR, off, 0, 0, v}
#define LIST_(k, v, off, n, off_item, item) {k, v, LIST, off, n, off_item, item}

/* Each key of the file's global part, with a value that is not its
 * default: every key node_cfg_key lists needs a row here. */
static const struct row global_rows[] = {
	LIST_("grpc_listen", "unix:/tmp/every.sock", CFG(ngrpc_listen), 1, CFG(grpc_listen), "unix:/tmp/every.sock"),
	STR_("http_listen", "127.0.0.1:9999", CFG(http_listen)),
	STR_("http_api_key_file", "/etc/procctl/every.key", CFG(http_api_key_file)),
	NUM_("http_writes", "true", INT, CFG(http_writes), 1),
	{"http_writes_remote", "true", REFUSED, 0, 0, 0, "removed: off loopback HTTP serves health and /metrics alone"},
	LIST_("consumers", "echo, tok", CFG(nconsumers), 2, CFG(consumers), "echo"),
	NUM_("lease_ms", "2500", U64, CFG(lease_ns), 2500 * MS),
	NUM_("rescan_ms", "1000", U64, CFG(rescan_ns), 1000 * MS),
	NUM_("hello", "false", INT, CFG(hello), 0),
	STR_("socket_group", "root", CFG(socket_group)),
	STR_("lock_dir", "/tmp/every-locks", CFG(lock_dir)),
	STR_("state_dir", "/tmp/every-state", CFG(state_dir)),
	STR_("tls_cert", "every.crt", CFG(tls_cert)),
	STR_("tls_key", "every.key", CFG(tls_key)),
	STR_("tls_client_ca", "every-ca.crt", CFG(tls_client_ca)),
	NUM_("tls_refresh_s", "30", U32, CFG(tls_refresh_s), 30),
	NUM_("insecure_tcp", "true", INT, CFG(insecure_tcp), 1),
	NUM_("insecure_tcp_writes", "true", INT, CFG(insecure_tcp_writes), 1),
	NUM_("max_regions", "100", U32, CFG(max_regions), 100),
	NUM_("max_consumers", "10", U32, CFG(max_consumers), 10),
	NUM_("max_per_process", "2", U32, CFG(max_per_process), 2),
	NUM_("max_message_bytes", "65536", U32, CFG(max_message_bytes), 65536),
	NUM_("grpc_max_streams", "10", U32, CFG(grpc_max_streams), 10),
	NUM_("grpc_max_calls", "128", U32, CFG(grpc_max_calls), 128),
	NUM_("grpc_max_connections", "16", U32, CFG(grpc_max_connections), 16),
	NUM_("grpc_max_connections_per_peer", "4", U32, CFG(grpc_max_connections_per_peer), 4),
	NUM_("grpc_handshake_ms", "500", U32, CFG(grpc_handshake_ms), 500),
	NUM_("grpc_memory_bytes", "33554432", U32, CFG(grpc_memory_bytes), 33554432),
	NUM_("max_watchers", "10", U32, CFG(max_watchers), 10),
	NUM_("max_watchers_per_peer", "5", U32, CFG(max_watchers_per_peer), 5),
	NUM_("watch_history", "128", U32, CFG(watch_history), 128),
	NUM_("max_waits", "100", U32, CFG(max_waits), 100),
	NUM_("max_waits_per_peer", "10", U32, CFG(max_waits_per_peer), 10),
	NUM_("max_wait_ms", "5000", U32, CFG(max_wait_ms), 5000),
	NUM_("desired_max", "10", U32, CFG(desired_max), 10),
	NUM_("desired_bytes_max", "2097152", U32, CFG(desired_bytes_max), 2097152),
	STR_("kubernetes_api", "http://127.0.0.1:8001", CFG(kube_api)),
	STR_("kubernetes_node", "node-a", CFG(kube_node)),
	STR_("kubernetes_token_file", "/tmp/every-token", CFG(kube_token_file)),
	STR_("kubernetes_ca_file", "/tmp/every-ca.crt", CFG(kube_ca_file)),
	NUM_("kubernetes_watch_s", "60", U32, CFG(kube_watch_s), 60),
	NUM_("kubernetes_pods_max", "10", U32, CFG(kube_pods_max), 10),
	NUM_("kubernetes_page_bytes_max", "3000000", U32, CFG(kube_page_bytes_max), 3000000),
	NUM_("kubernetes_event_bytes_max", "100000", U32, CFG(kube_event_bytes_max), 100000),
	NUM_("kubernetes_processconfigs", "true", INT, CFG(kube_pconfigs), 1),
	NUM_("kubernetes_processconfigs_max", "10", U32, CFG(kube_pconfigs_max), 10),
	NUM_("kubernetes_processconfigs_bytes_max", "2097152", U32, CFG(kube_pconfigs_bytes_max), 2097152),
	NUM_("kubernetes_processconfigs_namespace_max", "8", U32, CFG(kube_pconfigs_ns_max), 8),
	NUM_("metrics_namespaces", "4", U32, CFG(metrics_namespaces), 4),
	NUM_("slow_turn_ms", "20", U32, CFG(slow_turn_ms), 20),
	NUM_("health_probe_ms", "1000", U32, CFG(health_probe_ms), 1000),
	NUM_("log_level", "debug", INT, CFG(log_debug), 1),
};

/* ... of an [arbiter NAME] section (kind and consumer are required: the
 * others' rows come with kind = 7 and consumer = tok; an admit_ list takes
 * effect with admit_default = deny, which admits someone: their rows say
 * both). */
static const struct row arbiter_rows[] = {
	NUM_("kind", "9", U32, ARB(kind), 9),
	STR_("consumer", "gpu.prof", ARB(consumer)),
	{"policy", "round_robin", ONLY, 0, 0, 0, "fifo"},
	NUM_("hold_ms", "250", U64, ARB(hold_ns), 250 * MS),
	NUM_("process_bound", "true", INT, ARB(process_bound), 1),
	{"resources", "00112233-4455-6677-8899-aabbccddeeff", LIST, ARB(nresources), 1, 0, NULL},
	NUM_("learn_max", "3", U32, ARB(learn_max), 3),
	NUM_("admit_default", "deny\nadmit_uids = 0", INT, ARB(admit.deny), 1), /* deny admits someone */
	{"admit_uids", "0, 1000\nadmit_default = deny", LIST, ARB(admit.nuids), 2, 0, NULL},
	{"admit_gids", "0\nadmit_default = deny", LIST, ARB(admit.ngids), 1, 0, NULL},
	LIST_("admit_pods", "8c9b4f3e-1a2b-4c5d-9e8f-0a1b2c3d4e5f\nadmit_default = deny", ARB(admit.npods), 1, ARB(admit.pods),
	      "8c9b4f3e-1a2b-4c5d-9e8f-0a1b2c3d4e5f"),
	LIST_("admit_cgroups", "/kubepods.slice\nadmit_default = deny", ARB(admit.ncgroups), 1, ARB(admit.cgroups), "/kubepods.slice"),
};

/* ... of a [desired NAME] section (consumer and data required: the others'
 * rows come with consumer = echo and data = x; the file follows an API
 * server, for namespace and label_selector). */
static const struct row desired_rows[] = {
	STR_("consumer", "tok", DES(sel.consumer)),
	NUM_("schema", "3", U32, DES(sel.version), 3),
	STR_("pod", "8c9b4f3e-1a2b-4c5d-9e8f-0a1b2c3d4e5f", DES(sel.pod_uid)),
	STR_("container", "0123456789ab", DES(sel.container_id)),
	STR_("namespace", "shop", DES(pod.ns)),
	STR_("label_selector", "app=web", DES(pod.labels)),
	LIST_("data", "level=debug", DES(len), 11, DES(data), "level=debug"),
	LIST_("data_base64", "bGV2ZWw9ZGVidWc=", DES(len), 11, DES(data), "level=debug"),
};

static const struct row *row_of(const struct row *rows, size_t n, const char *key)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (!strcmp(rows[i].key, key))
			return &rows[i];
	fail_msg("%s: a key with no row in every_key's table: give it a value and where it lands", key);
	return NULL;
}

/* r's value, read back from obj (a section's struct), differs from the
 * default's (def): it landed where the row says. */
static void read_back(const struct row *r, const void *obj, const void *def)
{
	const char *at = (const char *)obj + r->off, *was = (const char *)def + r->off;
	uint64_t v = 0, d = 0;
	switch (r->land) {
	case U32:
		v = *(const uint32_t *)(const void *)at, d = *(const uint32_t *)(const void *)was;
		break;
	case U64:
		v = *(const uint64_t *)(const void *)at, d = *(const uint64_t *)(const void *)was;
		break;
	case INT:
		v = (uint64_t)*(const int *)(const void *)at, d = (uint64_t)*(const int *)(const void *)was;
		break;
	case LIST:
		v = *(const size_t *)(const void *)at, d = *(const size_t *)(const void *)was;
		if (r->item && strncmp((const char *)obj + r->off_item, r->item, strlen(r->item)))
			fail_msg("%s = %s: its first item reads back as '%.40s'", r->key, r->value,
				 (const char *)obj + r->off_item);
		if (r->item && v == d && strncmp((const char *)def + r->off_item, r->item, strlen(r->item)))
			d = v + 1; /* as many as the default's, another first item: not the default */
		break;
	case STR:
		if (strcmp(at, r->item) || !strcmp(was, r->item))
			fail_msg("%s = %s: reads back as '%s' (the default: '%s')", r->key, r->value, at, was);
		return;
	default:
		return;
	}
	if (v != r->want || v == d)
		fail_msg("%s = %s: reads back as %llu (want %llu; the default: %llu)", r->key, r->value,
			 (unsigned long long)v, (unsigned long long)r->want, (unsigned long long)d);
}

/* Each key of the global part, from node_cfg_key's table: set to a value
 * not its default, in a file and as a flag, and read back from where it
 * lands; a removed key refused with its reason. */
static void every_key_read_back(void **state)
{
	const size_t nrows = sizeof global_rows / sizeof global_rows[0];
	struct node_cfg def, c;
	const char *key, *form;
	char text[256];
	size_t i;
	(void)state;
	node_cfg_defaults(&def);
	for (i = 0; (key = node_cfg_key(i, &form)); i++) {
		const struct row *r = row_of(global_rows, nrows, key);
		snprintf(text, sizeof text, "%s = %s\n", key, r->value);
		if (r->land == REFUSED) {
			assert_int_equal(parse(&c, text), -EINVAL);
			assert_non_null(strstr(err, r->item));
			assert_null(form);
			assert_int_equal(node_cfg_set(&c, key, r->value, err, sizeof err), -EINVAL);
			continue;
		}
		if (parse(&c, text) != 0)
			fail_msg("%s", err);
		read_back(r, &c, &def);
		node_cfg_defaults(&c);
		if (node_cfg_set(&c, key, r->value, err, sizeof err) != 0)
			fail_msg("%s", err);
		read_back(r, &c, &def);
	}
	assert_int_equal(i, nrows); /* and no row names a key that is not there */
}

/* The keys --help lists under the heading that starts with head, up to
 * the next blank line, into keys (at most max): their count. */
static size_t usage_keys(const char *head, char keys[][32], size_t max)
{
	char *text = NULL, *line, *save = NULL;
	size_t len = 0, n = 0;
	int in = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	node_cfg_usage(f);
	fclose(f);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, head, strlen(head)))
			in = 1;
		else if (in && line[0] != ' ')
			break;
		else if (in && n < max && sscanf(line, "  %31[a-z0-9_] = ", keys[n]) == 1)
			n++;
	}
	free(text);
	return n;
}

/* need ("KEY = VALUE") sets the value key sets: the same key, or data
 * and data_base64 (a desired config's one payload). */
static int same_value(const char *need, const char *key)
{
	size_t n = strcspn(need, " ");
	if (!strncmp(need, key, n) && !key[n])
		return 1;
	return !strncmp(need, "data", 4) && !strncmp(key, "data", 4);
}

/* A section's keys, as --help lists them: each set in a section of a file
 * (with the keys it needs, given the row's own value when it is one of
 * them) and read back. */
static void section_keys(const char *head, const struct row *rows, size_t nrows, const char *global,
			 const char *section, const char *needs[2])
{
	char keys[32][32], text[1024];
	size_t i, n = usage_keys(head, keys, 32);
	struct node_cfg c;
	assert_int_equal(n, nrows);
	for (i = 0; i < n; i++) {
		const struct row *r = row_of(rows, nrows, keys[i]);
		size_t k, at;
		at = (size_t)snprintf(text, sizeof text, "%s[%s x]\n", global, section);
		for (k = 0; k < 2; k++) /* the required keys, but for the one under test */
			if (!same_value(needs[k], r->key))
				at += (size_t)snprintf(text + at, sizeof text - at, "%s\n", needs[k]);
		snprintf(text + at, sizeof text - at, "%s = %s\n", r->key, r->value);
		if (parse(&c, text) != 0)
			fail_msg("%s", err);
		if (r->land == ONLY) {
			snprintf(text + at, sizeof text - at, "%s = %s\n", r->key, r->item);
			assert_int_equal(parse(&c, text), -EINVAL);
			continue;
		}
		{
			static struct node_cfg d;
			const void *obj, *def;
			/* The default: the section with what it needs alone. */
			at = (size_t)snprintf(text, sizeof text, "%s[%s x]\n%s\n%s\n", global, section, needs[0], needs[1]);
			assert_int_equal(parse(&d, text), 0);
			obj = section[0] == 'a' ? (const void *)&c.arbiters[0] : (const void *)&c.desired[0];
			def = section[0] == 'a' ? (const void *)&d.arbiters[0] : (const void *)&d.desired[0];
			read_back(r, obj, def);
		}
	}
}

static void every_section_key_read_back(void **state)
{
	const char *arb[2] = {"kind = 7", "consumer = tok"};
	const char *des[2] = {"consumer = echo", "data = x"};
	(void)state;
	section_keys("In the config file only: one [arbiter NAME]", arbiter_rows,
		     sizeof arbiter_rows / sizeof arbiter_rows[0], "", "arbiter", arb);
	section_keys("... and one [desired NAME]", desired_rows, sizeof desired_rows / sizeof desired_rows[0],
		     "kubernetes_api = http://127.0.0.1:8001\nkubernetes_node = node-a\n", "desired", des);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_key_read_back),
		cmocka_unit_test(every_section_key_read_back),
	};
	return TH_RUN(tests);
}
