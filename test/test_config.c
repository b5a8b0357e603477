/* SPDX-License-Identifier: Apache-2.0 */
/* procctl-node's configuration: the embedded defaults, the commented
 * example (server/config/procctl-node.conf) which must say exactly the defaults,
 * every key, flags over the file, and an error naming file, line and key
 * for each kind of mistake. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include "config/config.h"
#include "th.h"

#ifndef EXAMPLE_CONF
#error "EXAMPLE_CONF must name server/config/procctl-node.conf"
#endif

#define MS 1000000ull

static char err[512];

static int parse(struct node_cfg *c, const char *text)
{
	node_cfg_defaults(c);
	err[0] = 0;
	return node_cfg_parse(c, text, strlen(text), "t.conf", err, sizeof err);
}

static void defaults_and_example(void **state)
{
	struct node_cfg d, ex;
	(void)state;
	node_cfg_defaults(&d);
	assert_int_equal(d.ngrpc_listen, 1);
	assert_string_equal(d.grpc_listen[0], "unix:/run/procctl/node.sock");
	assert_string_equal(d.http_listen, "127.0.0.1:9464");
	assert_int_equal(d.nconsumers, 0);
	assert_int_equal(d.lease_ns, 10000 * MS);
	assert_int_equal(d.rescan_ns, 60000 * MS);
	assert_string_equal(d.lock_dir, "/run/procctl/locks");
	assert_int_equal(node_cfg_check(&d, err, sizeof err), 0);

	/* The example, as shipped, is the defaults, and every key in it,
	 * uncommented, parses. */
	node_cfg_defaults(&ex);
	assert_int_equal(node_cfg_load(&ex, EXAMPLE_CONF, err, sizeof err), 0);
	assert_memory_equal(&ex, &d, sizeof d);
	{
		static char text[16384];
		FILE *f = fopen(EXAMPLE_CONF, "r");
		char line[512];
		size_t n = 0;
		assert_non_null(f);
		while (fgets(line, sizeof line, f)) {
			/* "# key = value" and "# [arbiter NAME]" lines, uncommented */
			const char *s = line + 2;
			size_t k = strspn(s, "abcdefghijklmnopqrstuvwxyz_");
			if (!strncmp(line, "# ", 2) && (s[0] == '[' || (k && !strncmp(s + k, " =", 2))))
				n += (size_t)snprintf(text + n, sizeof text - n, "%s", s);
		}
		fclose(f);
		assert_int_equal(parse(&ex, text), 0);
		assert_int_equal(ex.narbiters, 1);
		assert_string_equal(ex.arbiters[0].name, "gpu");
		assert_int_equal(ex.arbiters[0].kind, 1);
		assert_int_equal(ex.arbiters[0].resources[0].kind, 1);
		assert_int_equal(ex.arbiters[0].nresources, 1);
		assert_int_equal(ex.arbiters[0].resources[0].id[0], 0x5a);
		assert_int_equal(ex.arbiters[0].resources[0].id[15], 0x6c);
		assert_int_equal(ex.nconsumers, 2);
		assert_int_equal(ex.ndesired, 2);
		assert_string_equal(ex.desired[1].name, "web-canary");
		assert_string_equal(ex.desired[1].pod.ns, "shop");
		assert_string_equal(ex.desired[1].pod.labels, "app=web,!frozen,track in (canary)"); /* canonical: by key */
		assert_string_equal(ex.kube_api, "in-cluster");
		assert_string_equal(ex.desired[0].name, "echo-debug");
		assert_string_equal(ex.desired[0].sel.pod_uid, "8c9b4f3e-1a2b-4c5d-9e8f-0a1b2c3d4e5f");
		assert_int_equal(ex.desired[0].len, 11);
		assert_memory_equal(ex.desired[0].data, "level=debug", 11);
		assert_int_equal(node_cfg_check(&ex, err, sizeof err), 0);
	}
}

static void every_key(void **state)
{
	struct node_cfg c;
	(void)state;
	assert_int_equal(parse(&c, "# a comment\n"
				   "\n"
				   "grpc_listen = unix:/tmp/a.sock\n"
				   "grpc_listen = [::1]:7443\n"
				   "  grpc_listen=127.0.0.1:7444   \n"
				   "http_listen = 127.0.0.1:9465\n"
				   "consumers = echo, token,gpu.prof\n"
				   "lease_ms = 2500\n"
				   "rescan_ms = 1000\n"
				   "lock_dir = /tmp/locks\n"
				   "state_dir = /tmp/state\n"
				   "tls_cert = s.crt\n"
				   "tls_key = s.key\n"
				   "tls_client_ca = ca.crt\n"
				   "insecure_tcp = true\n"
				   "insecure_tcp_writes = false\n"
				   "max_regions = 100\n"
				   "max_per_process = 2\n"
				   "max_message_bytes = 65536\n"
				   "max_watchers = 10\n"
				   "watch_history = 128\n"
				   "http_writes = true\n"
				   "http_api_key_file = /etc/procctl/key\n"
				   "log_level = debug\n"
				   "[arbiter gpu]\n"
				   "consumer = gpu.prof\n"
				   "kind = 7\n"
				   "policy = round_robin\n"
				   "hold_ms = 250\n"
				   "process_bound = true\n"
				   "resources = 00112233-4455-6677-8899-aabbccddeeff, GPU-ffffffff-0000-0000-0000-000000000001\n"
				   "[ arbiter fpga ]\n"
				   "kind = 8\n"
				   "consumer = token\n"
				   "hold_ms = 5\n"),
			 0);
	assert_int_equal(c.ngrpc_listen, 3); /* the file's first replaced the default */
	assert_string_equal(c.grpc_listen[1], "[::1]:7443");
	assert_string_equal(c.grpc_listen[2], "127.0.0.1:7444");
	assert_string_equal(c.http_listen, "127.0.0.1:9465");
	assert_int_equal(c.nconsumers, 3);
	assert_string_equal(c.consumers[2], "gpu.prof");
	assert_int_equal(c.lease_ns, 2500 * MS);
	assert_int_equal(c.rescan_ns, 1000 * MS);
	assert_string_equal(c.state_dir, "/tmp/state");
	assert_int_equal(c.insecure_tcp, 1);
	assert_int_equal(c.max_per_process, 2);
	assert_int_equal(c.max_message_bytes, 65536);
	assert_int_equal(c.watch_history, 128);
	assert_int_equal(c.http_writes, 1);
	assert_string_equal(c.http_api_key_file, "/etc/procctl/key");
	assert_int_equal(c.log_debug, 1);
	assert_int_equal(c.narbiters, 2);
	assert_int_equal(c.arbiters[0].hold_ns, 250 * MS);
	assert_int_equal(c.arbiters[0].process_bound, 1);
	assert_int_equal(c.arbiters[0].nresources, 2);
	assert_int_equal(c.arbiters[0].resources[0].id[15], 0xff);
	assert_int_equal(c.arbiters[0].resources[1].id[15], 0x01);
	assert_int_equal(c.arbiters[0].kind, 7);
	assert_int_equal(c.arbiters[0].resources[0].kind, 7); /* given before kind: the kind is the section's */
	assert_int_equal(c.arbiters[0].resources[1].kind, 7);
	assert_string_equal(c.arbiters[0].name, "gpu");
	assert_string_equal(c.arbiters[0].consumer, "gpu.prof");
	assert_string_equal(c.arbiters[1].name, "fpga");
	assert_int_equal(c.arbiters[1].kind, 8);
	assert_int_equal(c.arbiters[1].hold_ns, 5 * MS);
	assert_int_equal(node_cfg_check(&c, err, sizeof err), 0);

	/* Flags come after the file: the first --grpc-listen replaces the
	 * file's listeners, the next adds one. */
	assert_int_equal(node_cfg_set(&c, "grpc_listen", "unix:/tmp/b.sock", err, sizeof err), 0);
	assert_int_equal(node_cfg_set(&c, "grpc_listen", "unix:/tmp/c.sock", err, sizeof err), 0);
	assert_int_equal(c.ngrpc_listen, 2);
	assert_string_equal(c.grpc_listen[0], "unix:/tmp/b.sock");
	assert_int_equal(node_cfg_set(&c, "lease_ms", "20000", err, sizeof err), 0);
	assert_int_equal(c.lease_ns, 20000 * MS);
	assert_int_equal(node_cfg_set(&c, "lease_ms", "x", err, sizeof err), -EINVAL);
	assert_string_equal(err, "--lease-ms: 'x' is not a whole number");
	assert_int_equal(node_cfg_set(&c, "bogus_key", "1", err, sizeof err), -EINVAL);
	assert_string_equal(err, "--bogus-key: no such flag");
	assert_int_equal(node_cfg_set(&c, "bogus_key", NULL, err, sizeof err), -EINVAL);
	assert_string_equal(err, "--bogus-key: no such flag");
	assert_int_equal(node_cfg_set(&c, "lease_ms", NULL, err, sizeof err), -EINVAL);
	assert_string_equal(err, "--lease-ms: needs a value");
}

static void errors(void **state)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{"bogus = 1\n", "t.conf:1: bogus: no such key"},
		{"\n\nlease_ms = 1000\nlease_ms = 2000\n", "t.conf:4: lease_ms: given twice"},
		{"lease_ms = 5\n", "t.conf:1: lease_ms: 5 is outside 10..3600000"},
		{"lease_ms = -5\n", "t.conf:1: lease_ms: '-5' is not a whole number"},
		{"lease_ms = 10s\n", "t.conf:1: lease_ms: '10s' is not a whole number"},
		{"lease_ms =\n", "t.conf:1: lease_ms: '' is not a whole number"},
		{"insecure_tcp = yes\n", "t.conf:1: insecure_tcp: 'yes' is not true or false"},
		{"grpc_listen = /run/x.sock\n", "t.conf:1: grpc_listen: '/run/x.sock' is neither unix:PATH nor HOST:PORT"},
		{"grpc_listen = unix:x.sock\n", "t.conf:1: grpc_listen: 'unix:x.sock': a unix socket needs an absolute path"},
		{"grpc_listen = localhost:99999\n", "t.conf:1: grpc_listen: 99999 is outside 0..65535"},
		{"grpc_listen = ::1:80\n", "t.conf:1: grpc_listen: '::1:80' is neither unix:PATH nor HOST:PORT"},
		{"grpc_listen = tcp:1.2.3\n",
		 "t.conf:1: grpc_listen: 'tcp:1.2.3' is neither unix:PATH nor HOST:PORT (PORT 0 to 65535)"},
		{"consumers = echo,,token\n", "t.conf:1: consumers: an empty item in 'echo,,token'"},
		{"consumers = Echo\n", "t.conf:1: consumers: 'Echo' is not a consumer name ([a-z0-9_.-], 1 to 31)"},
		{"consumers = echo, echo\n", "t.conf:1: consumers: 'echo' twice"},
		{"lock_dir = run/locks\n", "t.conf:1: lock_dir: 'run/locks' is not an absolute path"},
		{"log_level = trace\n", "t.conf:1: log_level: 'trace' is not info or debug"},
		{"lease_ms 1000\n", "t.conf:1: 'lease_ms 1000' is not key = value"},
		{"= 5\n", "t.conf:1: : a value without a key"},
		{"[server]\n", "t.conf:1: '[server]' is not a section ([arbiter NAME] or [desired NAME])"},
		{"[desired a]\nconsumer = echo\n", "t.conf:1: [desired a]: data or data_base64: missing"},
		{"[desired a]\nconsumer = echo\ndata = x\n[desired b]\ndata = y\n", "t.conf:4: [desired b]: consumer: required"},
		{"[desired a]\nconsumer = echo\ndata = x\ndata_base64 = eA==\n",
		 "t.conf:4: data_base64: give the config once: data or data_base64"},
		{"[desired a]\nconsumer = echo\ndata_base64 = e*A\n", "t.conf:3: data_base64: not base64 of at most 3000 bytes"},
		{"[desired a]\nconsumer = Echo\n", "t.conf:2: consumer: 'Echo' is not a consumer name ([a-z0-9_.-], 1 to 31)"},
		{"[desired a]\nconsumer = echo\ndata = x\n[desired a]\n", "t.conf:4: [desired a] twice"},
		{"[desired A]\n", "t.conf:1: 'A' is not a name for a desired config ([a-z0-9_.-], 1 to 31)"},
		{"[desired a]\npid = 5\n",
		 "t.conf:2: pid: no such key in a [desired] section (consumer, schema, pod, container, namespace, "
		 "label_selector, data, data_base64)"},
		{"[desired a]\nschema = 0\n", "t.conf:2: schema: 0 is outside 1..4294967295"},
		{"[desired a]\nconsumer = echo\nnamespace = Shop\ndata = x\n",
		 "t.conf:1: [desired a]: namespace: not a namespace (a DNS label: [a-z0-9-], at most 63, alphanumeric at "
		 "both ends)"},
		{"[desired a]\nconsumer = echo\nlabel_selector = app=web,,x\ndata = x\n",
		 "t.conf:1: [desired a]: label_selector: found ',', expected: identifier after ','"},
		{"[desired a]\nconsumer = echo\nlabel_selector = app = web\ndata = x\n[desired b]\nconsumer = echo\n"
		 "namespace = shop\nlabel_selector = app=web\ndata = y\n[desired c]\nconsumer = echo\nlabel_selector = app==web\n"
		 "data = z\n",
		 "t.conf:10: [desired c]: the same selector as [desired a] (one process would match both, at the same "
		 "precedence)"},
		{"kubernetes_api = https://127.0.0.1:6443/api?x\n", "t.conf:1: kubernetes_api: 'https://127.0.0.1:6443/api?x': not a "
		 "URL http(s)://HOST[:PORT] of at most 255 bytes, or in-cluster"},
		{"kubernetes_node = -node\n", "t.conf:1: kubernetes_node: '-node' is not a node's name (a DNS subdomain: "
		 "lowercase letters, digits, '-' and '.')"},
		{"[desired a]\nconsumer = echo\ndata =\n", "t.conf:3: data: empty: a desired config has 1 to 3000 bytes"},
		{"[desired a]\nconsumer = echo\ndata_base64 =\n",
		 "t.conf:3: data_base64: empty: a desired config has 1 to 3000 bytes"},
		/* base64 is strict: padding alone, or bits past the last byte */
		{"[desired a]\nconsumer = echo\ndata_base64 = ====\n", "t.conf:3: data_base64: not base64 of at most 3000 bytes"},
		{"[desired a]\nconsumer = echo\ndata_base64 = eB==\n", "t.conf:3: data_base64: not base64 of at most 3000 bytes"},
		{"[desired a]\nconsumer = echo\npod = 8c9b4f3e\ndata = x\n",
		 "t.conf:1: [desired a]: selector.pod_uid: not a pod UID (8-4-4-4-12 hex, or 32 hex)"},
		{"[desired a]\nconsumer = echo\ndata = x\n[desired b]\nconsumer = echo\ndata = y\n",
		 "t.conf:4: [desired b]: the same selector as [desired a] (one process would match both, at the same precedence)"},
		{"[desired a]\nconsumer = echo\ncontainer = ab\ndata = x\n[desired b]\nconsumer = echo\npod = 8c9b4f3e-1a2b-4c5d-9e8f-0a1b2c3d4e5f\ncontainer = ab\ndata = y\n",
		 "t.conf:5: [desired b]: overlaps [desired a] (one process would match both, at the same precedence)"},
		{"[arbiter GPU]\n", "t.conf:1: 'GPU' is not a name for a resource kind (a letter, then [a-z0-9_.-]; 1 to 15)"},
		{"[arbiter 7]\n", "t.conf:1: '7' is not a name for a resource kind (a letter, then [a-z0-9_.-]; 1 to 15)"},
		{"[arbiter gpu]\nkind = 1\nconsumer = t\n[arbiter gpu]\n", "t.conf:4: [arbiter gpu] twice"},
		{"[arbiter gpu]\nkind = 1\nhold_ms = 5\n[desired a]\n",
		 "t.conf:1: [arbiter gpu]: consumer: missing (whose processes it grants to)"},
		{"\n[arbiter gpu]\nkind = 1\nhold_ms = 5\n",
		 "t.conf:2: [arbiter gpu]: consumer: missing (whose processes it grants to)"},
		{"[arbiter gpu]\nconsumer = t\n",
		 "t.conf:1: [arbiter gpu]: kind: missing (the kind's number, as processes report it)"},
		{"[arbiter gpu]\nkind = 0\n", "t.conf:2: kind: 0 is outside 1..4294967295"},
		{"[arbiter gpu]\nkind = 1\nconsumer = t\n[arbiter fpga]\nkind = 1\nconsumer = t\n",
		 "t.conf:4: [arbiter fpga]: kind 1 is [arbiter gpu]'s already"},
		{"[arbiter gpu]\nlease_ms = 5000\n",
		 "t.conf:2: lease_ms: no such key in an [arbiter] section (kind, consumer, policy, hold_ms, process_bound, "
		 "resources, learn_max, admit_default, admit_uids, admit_gids, admit_pods, admit_cgroups)"},
		{"[arbiter gpu]\nhold_ms = 1\nhold_ms = 2\n", "t.conf:3: hold_ms: given twice"},
		{"[arbiter gpu]\npolicy = fifo\n", "t.conf:2: policy: 'fifo': the one policy is round_robin"},
		{"[arbiter gpu]\nresources = GPU-123\n",
		 "t.conf:2: resources: 'GPU-123' is not a resource id (a UUID, or 32 hex digits)"},
		{"[arbiter gpu]\nresources = 00112233445566778899aabbccddeeff00\n",
		 "t.conf:2: resources: '00112233445566778899aabbccddeeff00' is not a resource id (a UUID, or 32 hex digits)"},
		{"max_per_process = 0\n", "t.conf:1: max_per_process: 0 is outside 1..512"},
		{"[arbiter gpu]\nadmit_default = maybe\n", "t.conf:2: admit_default: 'maybe': allow or deny"},
		{"[arbiter gpu]\nadmit_uids = 0, root\n", "t.conf:2: admit_uids: 'root': not a uid or gid (a number)"},
		{"[arbiter gpu]\nadmit_pods = ABC\n",
		 "t.conf:2: admit_pods: 'ABC': not a pod UID (8-4-4-4-12 hex, or 32 hex)"},
		{"[arbiter gpu]\nadmit_cgroups = /a/../b\n",
		 "t.conf:2: admit_cgroups: '/a/../b': not an absolute cgroup path (no '..')"},
		{"[arbiter gpu]\nkind = 1\nconsumer = t\nadmit_uids = 0\n",
		 "t.conf:1: [arbiter gpu]: admit_ lists take effect with admit_default = deny"},
		{"[arbiter gpu]\nkind = 1\nconsumer = t\nadmit_default = deny\n",
		 "t.conf:1: [arbiter gpu]: admit_default = deny with no admit_uids, admit_gids, admit_pods or admit_cgroups "
		 "admits nobody: name who may hold it"},
	};
	struct node_cfg c;
	size_t i;
	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(parse(&c, bad[i].text), -EINVAL);
		if (strcmp(err, bad[i].msg))
			fail_msg("%s: got \"%s\", want \"%s\"", bad[i].text, err, bad[i].msg);
	}
	/* a NUL byte, an over-long line */
	{
		static char text[5000];
		node_cfg_defaults(&c);
		assert_int_equal(node_cfg_parse(&c, "lease_ms = 1\0000\n", 14, "t.conf", err, sizeof err), -EINVAL);
		assert_string_equal(err, "t.conf:1: a NUL byte");
		memset(text, 'a', sizeof text);
		assert_int_equal(node_cfg_parse(&c, text, sizeof text, "t.conf", err, sizeof err), -EINVAL);
		assert_string_equal(err, "t.conf:1: a line over 4095 bytes");
	}
	assert_int_equal(node_cfg_load(&c, "/nonexistent/procctl.conf", err, sizeof err), -ENOENT);
	assert_string_equal(err, "/nonexistent/procctl.conf: No such file or directory");
	assert_int_equal(node_cfg_load(&c, "/", err, sizeof err), -EINVAL); /* a directory, a FIFO, a device */
	assert_string_equal(err, "/: not a regular file");
}

/* [desired] sections: text or base64, with their selectors. */
static void desired_sections(void **state)
{
	struct node_cfg c;
	(void)state;
	assert_int_equal(parse(&c, "[desired all]\nconsumer = echo\ndata = level=info\n"
				   "[desired one-pod]\nconsumer = echo\nschema = 2\npod = 8C9B4F3E-1A2B-4C5D-9E8F-0A1B2C3D4E5F\n"
				   "data_base64 = AAECAw==\n"),
			 0);
	assert_int_equal(c.ndesired, 2);
	assert_string_equal(c.desired[0].sel.consumer, "echo");
	assert_int_equal(c.desired[0].sel.version, 1);
	assert_int_equal(c.desired[0].len, 10);
	assert_memory_equal(c.desired[0].data, "level=info", 10);
	assert_int_equal(c.desired[1].sel.version, 2);
	assert_int_equal(c.desired[1].len, 4);
	assert_memory_equal(c.desired[1].data, "\0\1\2\3", 4);

	assert_string_equal(c.desired[1].sel.pod_uid, "8c9b4f3e-1a2b-4c5d-9e8f-0a1b2c3d4e5f"); /* as the API writes it */
	/* base64 of exactly 3000 bytes, padded or not; one byte more refused */
	{
		static char text[4200];
		int k = snprintf(text, sizeof text, "[desired a]\nconsumer = echo\ndata_base64 = ");
		memset(text + k, 'A', 4000);
		text[k + 4000] = '\n';
		text[k + 4001] = 0;
		assert_int_equal(parse(&c, text), 0);
		assert_int_equal(c.desired[0].len, 3000);
		memcpy(text + k + 4000, "AA\n", 4); /* 4002 characters: 3001 bytes */
		assert_int_equal(parse(&c, text), -EINVAL);
		assert_string_equal(err, "t.conf:3: data_base64: not base64 of at most 3000 bytes");
	}
}

/* What only the whole configuration can tell. */
static void whole(void **state)
{
	struct node_cfg c;
	(void)state;
	assert_int_equal(parse(&c, "tls_cert = a\ntls_key = b\n"), 0);
	assert_int_equal(node_cfg_check(&c, err, sizeof err), -EINVAL);
	assert_string_equal(err, "tls_cert, tls_key and tls_client_ca go together (mTLS): 2 of 3 given");
	assert_int_equal(parse(&c, "grpc_listen = 0.0.0.0:7443\n"), 0);
	assert_int_equal(node_cfg_check(&c, err, sizeof err), -EINVAL);
	assert_string_equal(err,
			    "grpc_listen 0.0.0.0:7443: TCP needs tls_cert, tls_key and tls_client_ca, or insecure_tcp = true");
	assert_int_equal(parse(&c, "grpc_listen = 0.0.0.0:7443\ninsecure_tcp = true\n"), 0);
	assert_int_equal(node_cfg_check(&c, err, sizeof err), 0);
	assert_int_equal(parse(&c, "insecure_tcp_writes = true\n"), 0);
	assert_int_equal(node_cfg_check(&c, err, sizeof err), -EINVAL);
	assert_string_equal(err, "insecure_tcp_writes needs insecure_tcp");
	/* The streams the connections may hold fit in the gRPC memory quota:
	 * the defaults exactly (256 x 32 x 8 KiB = 64 MiB), one more not. */
	assert_int_equal(parse(&c, "grpc_max_streams = 32\ngrpc_max_connections = 256\n"), 0);
	assert_int_equal(node_cfg_check(&c, err, sizeof err), 0);
	assert_int_equal(parse(&c, "grpc_max_streams = 100\n"), 0);
	assert_int_equal(node_cfg_check(&c, err, sizeof err), -EINVAL);
	assert_string_equal(err, "grpc_max_connections (256) times grpc_max_streams (100) streams, at 8 KiB each, need "
				 "200 MiB: more than grpc_memory_bytes (64 MiB) bounds; lower one of the two or raise "
				 "grpc_memory_bytes");
	assert_int_equal(parse(&c, "grpc_max_streams = 100\ngrpc_memory_bytes = 209715200\n"), 0);
	assert_int_equal(node_cfg_check(&c, err, sizeof err), 0);
	assert_int_equal(parse(&c, "grpc_max_connections = 257\n"), 0);
	assert_int_equal(node_cfg_check(&c, err, sizeof err), -EINVAL);
	assert_int_equal(parse(&c, "http_writes = true\n"), 0);
	assert_int_equal(node_cfg_check(&c, err, sizeof err), -EINVAL);
	assert_string_equal(err, "http_writes needs http_api_key_file (writes are a JSON view)");
	assert_int_equal(parse(&c, "http_writes_remote = true\n"), -EINVAL);
	assert_non_null(strstr(err, "removed: off loopback HTTP serves health and /metrics alone"));
	assert_int_equal(parse(&c, "http_listen = 9466\n"), 0);
	assert_string_equal(c.http_listen, "127.0.0.1:9466");
	assert_int_equal(parse(&c, "http_listen =\n"), 0);
	assert_string_equal(c.http_listen, ""); /* off */
	assert_int_equal(parse(&c, "http_listen = unix:/run/x.sock\n"), -EINVAL);
	assert_string_equal(err, "t.conf:1: http_listen: 'unix:/run/x.sock': HTTP listens on HOST:PORT (a PORT alone: 127.0.0.1)");
	assert_int_equal(parse(&c, "consumers = echo\n[arbiter gpu]\nkind = 1\nconsumer = token\n"), 0);
	assert_int_equal(node_cfg_check(&c, err, sizeof err), -EINVAL);
	assert_string_equal(err, "[arbiter gpu]: consumer token is not one of consumers");
	assert_int_equal(parse(&c, "[desired web]\nconsumer = echo\nnamespace = shop\ndata = x\n"), 0);
	assert_int_equal(node_cfg_check(&c, err, sizeof err), -EINVAL);
	assert_string_equal(err, "[desired web]: namespace and label_selector need kubernetes_api (the pods' namespaces "
				 "and labels come from the Kubernetes API server)");
	assert_int_equal(parse(&c, "kubernetes_api = in-cluster\n"), 0);
	assert_int_equal(node_cfg_check(&c, err, sizeof err), -EINVAL);
	assert_string_equal(err, "kubernetes_api needs kubernetes_node (whose pods to watch)");
	assert_int_equal(parse(&c, "kubernetes_api = http://127.0.0.1:8001\nkubernetes_node = n\n"
				   "kubernetes_token_file = /t\n"), 0);
	assert_int_equal(node_cfg_check(&c, err, sizeof err), -EINVAL);
	assert_string_equal(err, "kubernetes_token_file: a token is sent over https only, not to http://127.0.0.1:8001");
	assert_int_equal(parse(&c, "kubernetes_api = in-cluster\nkubernetes_node = node-1\n[desired web]\nconsumer = echo\n"
				   "namespace = shop\ndata = x\n"), 0);
	assert_int_equal(node_cfg_check(&c, err, sizeof err), 0);
	assert_int_equal(parse(&c, "[arbiter gpu]\nconsumer = Token\n"), -EINVAL);
	assert_string_equal(err, "t.conf:2: consumer: 'Token' is not a consumer name ([a-z0-9_.-], 1 to 31)");
}

/* --help lists every key from the parser's own table, each with a line
 * and (where there is one) its default; the example file shows each. */
static void usage_lists_every_key(void **state)
{
	static char example[32768];
	char *text = NULL, *line, *save = NULL;
	size_t len = 0, n, keys = 0;
	FILE *f = open_memstream(&text, &len);
	(void)state;
	assert_non_null(f);
	node_cfg_usage(f);
	fclose(f);
	f = fopen(EXAMPLE_CONF, "r");
	assert_non_null(f);
	n = fread(example, 1, sizeof example - 1, f);
	fclose(f);
	example[n] = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char key[64], want[80];
		size_t k;
		if (sscanf(line, " --%63[a-z0-9-] ", key) == 1 || sscanf(line, " %63[a-z0-9_] = ", key) == 1) {
			for (k = 0; key[k]; k++)
				key[k] = key[k] == '-' ? '_' : key[k];
			snprintf(want, sizeof want, " %s = ", key);
			if (!strstr(example, want))
				fail_msg("%s: in --help, not in the example file", key);
			keys++;
		}
	}
	assert_true(keys >= 35); /* 22 flags, 5 [arbiter] keys, 8 [desired] keys */
	free(text);
	{
		/* the flags' defaults are the embedded ones */
		struct node_cfg d;
		node_cfg_defaults(&d);
		assert_non_null(strstr(example, "# lease_ms = 10000\n"));
		assert_int_equal(d.lease_ns, 10000 * MS);
	}
}

/* Who an arbiter admits: by default everyone; with deny, whom a list
 * names, a cgroup prefix on a component boundary. */
static void admission(void **state)
{
	struct admission a;
	const char *why = NULL;
	char msg[300];
	struct admit_who w = {1000, 1000, "", "/kubepods.slice/kubepods-burstable.slice/x.slice"};
	(void)state;
	memset(&a, 0, sizeof a);
	assert_int_equal(admission_check(&a, &w, msg, sizeof msg), 1);
	a.deny = 1;
	assert_int_equal(admission_check(&a, &w, msg, sizeof msg), 0);
	assert_string_equal(msg, "uid 1000 gid 1000 pod none cgroup /kubepods.slice/kubepods-burstable.slice/x.slice: "
				 "in no admit_ list (admit_default = deny)");
	assert_int_equal(admission_add(&a, ADMIT_CGROUPS, "/kubepods.slice/kubepods-burst", &why), 0);
	assert_int_equal(admission_check(&a, &w, msg, sizeof msg), 0); /* not a component */
	assert_int_equal(admission_add(&a, ADMIT_CGROUPS, "/kubepods.slice/kubepods-burstable.slice/", &why), 0);
	assert_int_equal(admission_check(&a, &w, msg, sizeof msg), 1);
	memset(&a, 0, sizeof a);
	a.deny = 1;
	assert_int_equal(admission_add(&a, ADMIT_GIDS, "1000", &why), 0);
	assert_int_equal(admission_check(&a, &w, msg, sizeof msg), 1);
	w.gid = 0;
	assert_int_equal(admission_check(&a, &w, msg, sizeof msg), 0);
	/* a pod UID as kubectl or a systemd slice writes it: the cgroup's */
	assert_int_equal(admission_add(&a, ADMIT_PODS, "0B6D7A2E_5C1F_4C1A_9F3E_2D7B8C9A1E4F", &why), 0);
	w.pod = "0b6d7a2e-5c1f-4c1a-9f3e-2d7b8c9a1e4f";
	assert_int_equal(admission_check(&a, &w, msg, sizeof msg), 1);
	assert_int_equal(admission_add(&a, ADMIT_PODS, "0b6d7a2e-5c1f-4c1a-9f3e", &why), -EINVAL);
	assert_string_equal(why, "not a pod UID (8-4-4-4-12 hex, or 32 hex)");
	/* an unknown uid (-1, a process read as it went) is nobody's */
	assert_int_equal(admission_add(&a, ADMIT_UIDS, "4294967295", &why), -EINVAL);
	/* Whoever makes a cgroup names it (a delegated subtree): the
	 * refusal, logged and in the API's strings, shows it escaped. */
	w.pod = "";
	w.cgroup = "/user.slice/x\" level=error event=node_lock_lost \x1b[2J\r\xff\\";
	assert_int_equal(admission_check(&a, &w, msg, sizeof msg), 0);
	assert_string_equal(msg, "uid 1000 gid 0 pod none cgroup /user.slice/x\\\" level=error event=node_lock_lost "
				 "\\x1b[2J\\x0d\\xff\\\\: in no admit_ list (admit_default = deny)");
}

/* socket_group: a name as useradd takes one or a gid, checked as it is
 * read; looked up (getgrnam) only when the sockets are made, so that a
 * file for another host parses here. */
static void socket_group(void **state)
{
	struct node_cfg c;
	gid_t gid = 0;
	(void)state;
	node_cfg_defaults(&c);
	assert_int_equal(node_cfg_socket_gid(&c, &gid, err, sizeof err), 0);
	assert_int_equal(gid, (gid_t)-1); /* none: the daemon's own */
	assert_int_equal(parse(&c, "socket_group = 4242\n"), 0);
	assert_int_equal(node_cfg_socket_gid(&c, &gid, err, sizeof err), 0);
	assert_int_equal(gid, 4242);
	assert_int_equal(parse(&c, "socket_group = root\n"), 0);
	assert_int_equal(node_cfg_socket_gid(&c, &gid, err, sizeof err), 0);
	assert_int_equal(gid, 0);
	assert_int_equal(parse(&c, "socket_group = _no-such.group-9$\n"), 0);
	assert_int_equal(node_cfg_socket_gid(&c, &gid, err, sizeof err), -ENOENT);
	assert_string_equal(err, "socket_group _no-such.group-9$: no such group");
	assert_int_equal(parse(&c, "socket_group = 9lives\n"), -EINVAL);
	assert_string_equal(err, "t.conf:1: socket_group: '9lives' is not a group name or a gid (a name of another form: "
				 "give its gid)");
	assert_int_equal(parse(&c, "socket_group = a b\n"), -EINVAL);
	assert_int_equal(parse(&c, "socket_group = a$b\n"), -EINVAL);
	assert_int_equal(parse(&c, "socket_group = 4294967295\n"), -EINVAL); /* (gid_t)-1: nobody's */
	assert_string_equal(err, "t.conf:1: socket_group: 4294967295 is not a gid");
	assert_int_equal(parse(&c, "socket_group = abcdefghijklmnopqrstuvwxyzabcdefg\n"), -EINVAL); /* 33 */
	assert_int_equal(node_cfg_set(&c, "socket_group", "", err, sizeof err), 0); /* empty: the default again */
	assert_string_equal(c.socket_group, "");
}

/* A group whose entry is larger than the first buffer (a directory's
 * group, thousands of members): found all the same. /etc/group is
 * replaced in a mount namespace of this test's own. */
static void socket_group_large(void **state)
{
	char path[] = "/tmp/procctl-group.XXXXXX";
	struct node_cfg c;
	gid_t gid = 0;
	FILE *f;
	int fd, i;
	(void)state;
	if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		TH_SKIP_OR_FAIL("root, for a mount namespace of its own");
	assert_true((fd = mkstemp(path)) >= 0);
	assert_non_null(f = fdopen(fd, "w"));
	fprintf(f, "root:x:0:\nbig:x:4343:");
	for (i = 0; i < 4000; i++)
		fprintf(f, "%smember%04d", i ? "," : "", i); /* 44 KB: past 16 KiB */
	fprintf(f, "\n");
	fclose(f);
	assert_int_equal(mount(path, "/etc/group", NULL, MS_BIND, NULL), 0);
	unlink(path);
	node_cfg_defaults(&c);
	assert_int_equal(node_cfg_set(&c, "socket_group", "big", err, sizeof err), 0);
	assert_int_equal(node_cfg_socket_gid(&c, &gid, err, sizeof err), 0);
	assert_int_equal(gid, 4343);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_and_example),
		cmocka_unit_test(every_key),
		cmocka_unit_test(errors),
		cmocka_unit_test(desired_sections),
		cmocka_unit_test(whole),
		cmocka_unit_test(usage_lists_every_key),
		cmocka_unit_test(admission),
		cmocka_unit_test(socket_group),
		cmocka_unit_test(socket_group_large),
	};
	return TH_RUN(tests);
}
