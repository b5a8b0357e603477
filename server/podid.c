/* SPDX-License-Identifier: Apache-2.0 */
/* podid.c - pod UID, container ID and QoS class from /proc/<pid>/cgroup.
 *
 * The shapes (kubelet, container runtimes):
 *   systemd  .../kubepods.slice/kubepods-burstable.slice/
 *                kubepods-burstable-pod<uid, '-' as '_'>.slice/
 *                cri-containerd-<id>.scope  (docker-<id>.scope, crio-<id>.scope)
 *            Guaranteed pods have no QoS slice: kubepods-pod<uid>.slice;
 *            kind and similar nest a kubelet.slice: kubelet-kubepods-...
 *   cgroupfs .../kubepods/burstable/pod<uid>/<id>   (guaranteed: kubepods/pod<uid>)
 * v1 files hold a line per hierarchy ("3:memory:/kubepods/..."), v2 one
 * line ("0::/kubepods.slice/..."); a reader in another cgroup namespace
 * sees paths relative to its root ("/../../kubepods..."), so components
 * are matched wherever they are, the outermost pod first. */
#define _GNU_SOURCE 1
#include "podid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILE_MAX 65536
#define NAME_MAX_ 255

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static char lower(char c)
{
	return c >= 'A' && c <= 'F' ? (char)(c - 'A' + 'a') : c;
}

/* A pod UID: 8-4-4-4-12 hex (with '-', or '_' from a systemd unit name),
 * or 32 hex (a static pod's). Written lowercase with dashes. */
static int pod_uid(const char *s, size_t n, char out[PROCCTL_POD_UID_MAX + 1])
{
	size_t i;
	if (n == 32) {
		for (i = 0; i < n; i++)
			if (!is_hex(s[i]))
				return 0;
	} else if (n == 36) {
		for (i = 0; i < n; i++) {
			int dash = i == 8 || i == 13 || i == 18 || i == 23;
			if (dash ? (s[i] != '-' && s[i] != '_') : !is_hex(s[i]))
				return 0;
		}
	} else {
		return 0;
	}
	for (i = 0; i < n; i++)
		out[i] = s[i] == '_' ? '-' : lower(s[i]);
	out[n] = 0;
	return 1;
}

static int ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n >= k && !memcmp(s + n - k, suffix, k);
}

static int starts_with(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	return n >= k && !memcmp(s, prefix, k);
}

/* A path component that names a pod: "pod<uid>" (cgroupfs) or
 * "<anything>-pod<uid>.slice" (systemd). The QoS class from its name. */
static int pod_component(const char *c, size_t n, char uid[PROCCTL_POD_UID_MAX + 1], enum procctl_qos *qos)
{
	const char *p;
	if (starts_with(c, n, "pod"))
		return pod_uid(c + 3, n - 3, uid);
	if (!ends_with(c, n, ".slice") || n < 6 + 4)
		return 0;
	n -= 6; /* ".slice" */
	for (p = c + n - 4; p >= c; p--) /* the last "-pod" */
		if (!memcmp(p, "-pod", 4))
			break;
	if (p < c || !pod_uid(p + 4, (size_t)(c + n - (p + 4)), uid))
		return 0;
	if (memmem(c, (size_t)(p - c), "-burstable", 10))
		*qos = PROCCTL_QOS_BURSTABLE;
	else if (memmem(c, (size_t)(p - c), "-besteffort", 11))
		*qos = PROCCTL_QOS_BESTEFFORT;
	return 1;
}

/* The component right below the pod: a container. */
static void container_component(const char *c, size_t n, struct procctl_podid *out)
{
	static const struct {
		const char *prefix, *runtime;
	} scopes[] = {{"cri-containerd-", "containerd"}, {"crio-", "crio"}, {"docker-", "docker"}};
	const char *runtime = "";
	size_t i;
	if (ends_with(c, n, ".scope")) {
		n -= 6;
		for (i = 0; i < sizeof scopes / sizeof scopes[0]; i++)
			if (starts_with(c, n, scopes[i].prefix)) {
				c += strlen(scopes[i].prefix);
				n -= strlen(scopes[i].prefix);
				runtime = scopes[i].runtime;
				break;
			}
		if (!*runtime)
			return; /* crio-conmon-<id>.scope and others: not the container */
	}
	if (n == 0 || n > PROCCTL_CONTAINER_ID_MAX)
		return;
	for (i = 0; i < n; i++)
		if (!is_hex(c[i]))
			return;
	for (i = 0; i < n; i++)
		out->container_id[i] = lower(c[i]);
	out->container_id[n] = 0;
	snprintf(out->runtime, sizeof out->runtime, "%s", runtime);
}

/* One cgroup path: the outermost pod, the QoS it sits in, its container. */
static int parse_path(const char *path, size_t len, struct procctl_podid *out)
{
	enum procctl_qos qos = PROCCTL_QOS_NONE;
	const char *c = path, *end = path + len;
	int found = 0;
	memset(out, 0, sizeof *out);
	while (c < end) {
		const char *slash = memchr(c, '/', (size_t)(end - c));
		size_t n = (size_t)((slash ? slash : end) - c);
		if (n > NAME_MAX_)
			return -EINVAL;
		if (found) {
			container_component(c, n, out);
			break;
		}
		if ((n == 9 && !memcmp(c, "burstable", 9)) || ends_with(c, n, "-burstable.slice"))
			qos = PROCCTL_QOS_BURSTABLE;
		else if ((n == 10 && !memcmp(c, "besteffort", 10)) || ends_with(c, n, "-besteffort.slice"))
			qos = PROCCTL_QOS_BESTEFFORT;
		else if (n && pod_component(c, n, out->pod_uid, &qos))
			found = 1;
		c += n + 1;
	}
	if (!found)
		return 0; /* outside a pod nothing is read: a process may name its own cgroups */
	out->qos = qos == PROCCTL_QOS_NONE ? PROCCTL_QOS_GUARANTEED : qos;
	return 1;
}

int procctl_podid_parse(const char *text, size_t len, struct procctl_podid *out)
{
	const char *line = text, *end = text + len;
	struct procctl_podid best, cur;
	int have = 0;

	memset(out, 0, sizeof *out);
	if (!text || len > FILE_MAX)
		return -EINVAL;
	memset(&best, 0, sizeof best);
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *le = nl ? nl : end, *c1, *c2;
		int v2, r;
		if (le == line) { /* an empty line: only the last one, after the final newline */
			line = le + 1;
			continue;
		}
		/* "ID:controllers:path", the path may hold ':' itself */
		c1 = memchr(line, ':', (size_t)(le - line));
		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
		if (!c1 || !c2 || c1 == line || c2 + 1 >= le || c2[1] != '/')
			return -EINVAL;
		v2 = c1 - line == 1 && line[0] == '0' && c2 == c1 + 1;
		r = parse_path(c2 + 1, (size_t)(le - c2 - 1), &cur);
		if (r < 0)
			return r;
		if (r) {
			cur.cgroup_version = v2 ? 2 : 1;
			if (have && (strcmp(best.pod_uid, cur.pod_uid) ||
				     (best.container_id[0] && cur.container_id[0] &&
				      strcmp(best.container_id, cur.container_id))))
				return -EINVAL; /* two pods or containers: trust neither */
			if (!have || (!best.container_id[0] && cur.container_id[0]))
				best = cur; /* the most complete line */
			have = 1;
		}
		line = le + 1;
	}
	if (!have)
		return -ENOENT;
	*out = best;
	return 0;
}

int procctl_podid_read(const char *proc_root, pid_t pid, struct procctl_podid *out)
{
	char path[512], *buf;
	size_t len = 0;
	ssize_t n = 0;
	int fd, rc;

	memset(out, 0, sizeof *out);
	snprintf(path, sizeof path, "%s/%d/cgroup", proc_root ? proc_root : "/proc", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	buf = malloc(FILE_MAX + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (len <= FILE_MAX && (n = read(fd, buf + len, FILE_MAX + 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (n < 0)
		rc = errno == ESRCH ? -ESRCH : -EIO;
	else if (len > FILE_MAX)
		rc = -EIO;
	else
		rc = procctl_podid_parse(buf, len, out);
	free(buf);
	return rc;
}

const char *procctl_qos_name(enum procctl_qos q)
{
	switch (q) {
	case PROCCTL_QOS_GUARANTEED:
		return "Guaranteed";
	case PROCCTL_QOS_BURSTABLE:
		return "Burstable";
	case PROCCTL_QOS_BESTEFFORT:
		return "BestEffort";
	default:
		return "";
	}
}
