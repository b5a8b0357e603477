/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_podid - pod identity from /proc/<pid>/cgroup text, whose deeper
 * cgroup names a process may choose, and a start time, ids and a cgroup
 * path from the /proc/<pid>/stat, status and cgroup texts it influences. Whatever it accepts must be a
 * well-formed pod UID and container ID; what it refuses leaves nothing; a
 * cgroup path, shown in an arbiter's refusal, is printable ASCII there. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "match/admission.h"
#include "sys/podid.h"
#include "sys/procstat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int lower_hex(const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int uid_ok(const char *u)
{
	size_t n = strlen(u), i;
	if (n == 32)
		return lower_hex(u, n);
	if (n != 36)
		return 0;
	for (i = 0; i < n; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? u[i] != '-' : !lower_hex(u + i, 1))
			return 0;
	}
	return 1;
}

/* One parse, with or without a namespace's init: whatever it accepts is
 * well formed; a refusal leaves nothing. */
static int check(const uint8_t *data, size_t size, const char *init)
{
	struct procctl_podid id;
	int rc = procctl_podid_parse((const char *)data, size, init, init ? strlen(init) : 0, &id);
	if (rc == 0) {
		if (!uid_ok(id.pod_uid) || !lower_hex(id.container_id, strlen(id.container_id)) ||
		    (id.runtime[0] && strcmp(id.runtime, "containerd") && strcmp(id.runtime, "crio") &&
		     strcmp(id.runtime, "docker")) ||
		    (id.runtime[0] && !id.container_id[0]) || id.qos > PROCCTL_QOS_BESTEFFORT ||
		    (id.cgroup_version != 1 && id.cgroup_version != 2))
			abort();
	} else if ((rc != -ENOENT && rc != -EINVAL) || id.pod_uid[0] || id.container_id[0] || id.runtime[0] ||
		   id.qos || id.cgroup_version) {
		abort();
	}
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Seen from the cgroup root, a pod is only ever under the kubelet's
	 * own top-level cgroups. */
	if (check(data, size, NULL) == 0 && !memmem(data, size, ":/kubepods", 10) &&
	    !memmem(data, size, ":/kubelet.slice/kubelet-kubepods.slice/", 39))
		abort();
	check(data, size, "0::/../../../../init.scope\n12:memory:/../..\n");
	{ /* as init's file, its hierarchies listed for the log: terminated, in bounds */
		char list[16];
		list[sizeof list - 1] = 'x';
		if (procctl_podid_hierarchies((const char *)data, size, list, sizeof list - 1) < 0 ||
		    list[sizeof list - 1] != 'x' || strlen(list) >= sizeof list - 1)
			abort();
	}
	/* The same bytes as a /proc/<pid>/stat line: a start time only after
	 * the last ')' (comm, the process's own, may hold anything). */
	{
		uint64_t start;
		const uint8_t *rp = NULL;
		size_t i;
		for (i = size; i > 0 && !rp; i--)
			if (data[i - 1] == ')')
				rp = data + i;
		if (procstat_parse_start((const char *)data, size, &start) == 0 && !rp)
			abort();
		if (procstat_parse_image((const char *)data, size, &start) == 0 && !rp)
			abort();
	}
	{ /* as /proc/<pid>/status and /proc/<pid>/cgroup: ids, a v2 path */
		char path[64];
		uid_t u;
		gid_t g;
		if (procstat_parse_ids((const char *)data, size, &u, &g) == 0 && !memmem(data, size, "Uid:", 4))
			abort();
		if (procstat_parse_cgroup2((const char *)data, size, path, sizeof path) == 0 &&
		    (path[0] != '/' || strlen(path) >= sizeof path || !memmem(data, size, "0::/", 4)))
			abort();
	}
	{ /* a path as an arbiter's refusal shows it (the log, the API's strings): printable ASCII */
		char path[ADMIT_PATH_MAX], why[300];
		struct admission a;
		struct admit_who w = {0, 0, "", path};
		size_t i;
		memset(&a, 0, sizeof a);
		a.deny = 1;
		if (procstat_parse_cgroup2((const char *)data, size, path, sizeof path) == 0) {
			if (admission_check(&a, &w, why, sizeof why) != 0)
				abort();
			for (i = 0; why[i]; i++)
				if (why[i] < 0x20 || why[i] > 0x7e)
					abort();
		}
	}
	return 0;
}
